# dstack pprof: every corpus recording decoded by an independent decoder (the npm
# package pprof-format, test-only, installed under build/js from tests/js's lock file):
# sample counts equal `dstack stat`, values equal `dstack folded --period`, the
# references hold together (tests/js/check_pprof.js), known functions are there.
js_tools() { # installs tests/js's locked packages into build/js once; 0 when usable
	local d="$ROOT/build/js"
	if [ -d "$d/node_modules/pprof-format" ] && cmp -s "$ROOT/tests/js/package-lock.json" "$d/package-lock.json"; then return 0; fi
	command -v npm >/dev/null || return 1
	mkdir -p "$d" && cp "$ROOT/tests/js/package.json" "$ROOT/tests/js/package-lock.json" "$d/" &&
		(cd "$d" && npm ci --ignore-scripts --no-audit --no-fund) >"$d/npm.log" 2>&1
}

pprof_suite() {
	if ! command -v node >/dev/null || ! js_tools; then
		echo "SKIPPED: pprof decoding: node/npm or the npm packages are unavailable (see build/js/npm.log)"
		return
	fi
	local f n ks o want sum res
	for f in "$ROOT"/tests/corpus/oracle/*.report.zst; do
		n=$(basename "$f" .report.zst)
		ks=$(kallsyms_for "$n")
		o="$WORK/out/$n.pb.gz"
		if ! "$DSTACK" pprof --symfs "$WORK/symfs-root/symfs" --kallsyms "$ks" -i "$WORK/data/$n.data" -o "$o" 2>"$o.err"; then
			bad "pprof $n: exit status $?: $(tail -3 "$o.err")"; continue
		fi
		want=$("$DSTACK" stat -i "$WORK/data/$n.data" | awk '$1 == "samples" { print $2 }')
		sum=$("$DSTACK" folded --period --symfs "$WORK/symfs-root/symfs" --kallsyms "$ks" -i "$WORK/data/$n.data" |
			awk '{ s += $NF } END { printf "%.0f\n", s }')
		res=$(NODE_PATH="$ROOT/build/js/node_modules" node "$ROOT/tests/js/check_pprof.js" "$o" 2>&1)
		if python3 - "$res" "$want" "$sum" "$n" <<'PY'
import json, sys
try: r = json.loads(sys.argv[1])
except ValueError: print(sys.argv[1][:300]); sys.exit(1)
want, total, name = sys.argv[2], sys.argv[3], sys.argv[4]
errs = list(r['errors'])
if r['samples'] != want: errs.append('samples %s, stat %s' % (r['samples'], want))
if r['total'] != total: errs.append('values %s, folded --period %s' % (r['total'], total))
if r['types'] != 'samples/count,cpu/nanoseconds' or r['period_type'] != 'cpu/nanoseconds': errs.append('types ' + r['types'])
if int(r['duration']) <= 0 or int(r['time']) <= 0: errs.append('no time span')
must = {'cpu': ['main', 'recurse_b'], 'cxx': ['main', 'shop::Register::checkout(int)']}.get(name.split('.')[0], [])
missing = [m for m in must if m not in r['names']]
# every recording here has build-ids (MMAP2 or the header): each file mapping must carry one
if r['file_mappings'] == 0 or r['build_ids'] != r['file_mappings']:
    errs.append('file mappings %d, with build-id %d' % (r['file_mappings'], r['build_ids']))
if missing: errs.append('missing functions ' + ', '.join(missing))
# equal samples are one, with their count: fewer messages than samples
if r['nr_samples'] >= int(r['samples']) and int(r['samples']) > 100:
    errs.append('%d sample messages for %s samples: not merged' % (r['nr_samples'], r['samples']))
print('; '.join(errs) or '%s samples, %s ns, %d locations (%d with inlined lines), %d functions, %d mappings' %
      (r['samples'], r['total'], r['locations'], r['inlined_locations'], r['functions'], r['mappings']))
sys.exit(1 if errs else 0)
PY
		then ok "pprof $n: $(python3 - "$res" "$want" "$sum" "$n" 2>/dev/null <<'PY'
import json, sys
r = json.loads(sys.argv[1])
print('%s samples in %d messages, %s ns, %d locations (%d with inlined lines), %d functions, %d mappings (%d files, all with build-ids)' % (r['samples'], r['nr_samples'], r['total'], r['locations'], r['inlined_locations'], r['functions'], r['mappings'], r['file_mappings']))
PY
)"
		else bad "pprof $n: $(echo "$res" | head -c 300)"; fi
	done
	local opts=(--symfs "$WORK/symfs-root/symfs" --kallsyms "$WORK/kallsyms" -i "$WORK/data/cxx.defer.data")
	o="$WORK/out/pprof-det"
	"$DSTACK" pprof "${opts[@]}" -o "$o.a"
	"$DSTACK" pprof "${opts[@]}" -o - >"$o.b"
	if [ -s "$o.a" ] && cmp -s "$o.a" "$o.b"; then ok "pprof: same bytes twice (-o FILE and -o -)"
	else bad "pprof: output differs between runs"; fi
	# a decoder must notice damage: the check is not blind
	python3 -c "import gzip,sys; d=gzip.open(sys.argv[1]).read(); open(sys.argv[2],'wb').write(gzip.compress(d[:len(d)//2]))" "$o.a" "$o.cut"
	if NODE_PATH="$ROOT/build/js/node_modules" node "$ROOT/tests/js/check_pprof.js" "$o.cut" >"$o.cut.out" 2>&1 &&
		! grep -q '"errors":\[\]' "$o.cut.out"; then ok "pprof: a truncated profile is caught by the checker"
	elif ! NODE_PATH="$ROOT/build/js/node_modules" node "$ROOT/tests/js/check_pprof.js" "$o.cut" >/dev/null 2>&1; then
		ok "pprof: a truncated profile is refused by the decoder"
	else bad "pprof: a truncated profile passed the checker"; fi
}
pprof_suite
