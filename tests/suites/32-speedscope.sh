# dstack speedscope: every corpus recording validates against speedscope's own
# file-format schema (from the npm package speedscope, checked with ajv; test-only,
# under build/js); sample counts equal `dstack stat`, weights `dstack folded --period`;
# one profile per thread.
js_tools() { # installs tests/js's locked packages into build/js once; 0 when usable
	local d="$ROOT/build/js"
	if [ -d "$d/node_modules/pprof-format" ] && cmp -s "$ROOT/tests/js/package-lock.json" "$d/package-lock.json"; then return 0; fi
	command -v npm >/dev/null || return 1
	mkdir -p "$d" && cp "$ROOT/tests/js/package.json" "$ROOT/tests/js/package-lock.json" "$d/" &&
		(cd "$d" && npm ci --ignore-scripts --no-audit --no-fund) >"$d/npm.log" 2>&1
}

speedscope_suite() {
	if ! command -v node >/dev/null || ! js_tools; then
		echo "SKIPPED: speedscope validation: node/npm or the npm packages are unavailable (see build/js/npm.log)"
		return
	fi
	local f n ks o want sum res threads
	local check=(env NODE_PATH="$ROOT/build/js/node_modules" node "$ROOT/tests/js/check_speedscope.js")
	for f in "$ROOT"/tests/corpus/oracle/*.report.zst; do
		n=$(basename "$f" .report.zst)
		ks=$(kallsyms_for "$n")
		o="$WORK/out/$n.speedscope.json"
		if ! "$DSTACK" speedscope --symfs "$WORK/symfs-root/symfs" --kallsyms "$ks" -i "$WORK/data/$n.data" -o "$o" 2>"$o.err"; then
			bad "speedscope $n: exit status $?: $(tail -3 "$o.err")"; continue
		fi
		want=$("$DSTACK" stat -i "$WORK/data/$n.data" | awk '$1 == "samples" { print $2 }')
		sum=$("$DSTACK" folded --period --symfs "$WORK/symfs-root/symfs" --kallsyms "$ks" -i "$WORK/data/$n.data" |
			awk '{ s += $NF } END { printf "%.0f\n", s }')
		threads=$("$DSTACK" script --symfs "$WORK/symfs-root/symfs" --kallsyms "$ks" -i "$WORK/data/$n.data" 2>/dev/null |
			awk '/^[^ \t].* [0-9]+ .*[0-9]+\.[0-9]+: +[0-9]+ / { for (i = 2; i <= NF; i++) if ($i ~ /^[0-9]+$/) { print $i; break } }' | sort -u | wc -l)
		res=$("${check[@]}" "$o" 2>&1)
		if python3 - "$res" "$want" "$sum" "$threads" <<'PY'
import json, sys
try: r = json.loads(sys.argv[1])
except ValueError: print(sys.argv[1][:300]); sys.exit(1)
errs = list(r['errors'])
if not r['valid']: errs.append('not valid against the schema')
if str(r['samples']) != sys.argv[2]: errs.append('samples %s, stat %s' % (r['samples'], sys.argv[2]))
if r['weight'] != sys.argv[3]: errs.append('weights %s, folded --period %s' % (r['weight'], sys.argv[3]))
if str(r['profiles']) != sys.argv[4]: errs.append('%s profiles, script shows %s threads' % (r['profiles'], sys.argv[4]))
sys.exit(1 if errs else 0)
PY
		then ok "speedscope $n: valid; $want samples, $sum ns, $threads thread profiles"
		else bad "speedscope $n: $(echo "$res" | head -c 300)"; fi
	done
	local opts=(--symfs "$WORK/symfs-root/symfs" --kallsyms "$WORK/kallsyms" -i "$WORK/data/tail.defer.data")
	o="$WORK/out/speedscope-det"
	"$DSTACK" speedscope "${opts[@]}" -o "$o.a"
	"$DSTACK" speedscope "${opts[@]}" -o - >"$o.b"
	if [ -s "$o.a" ] && cmp -s "$o.a" "$o.b"; then ok "speedscope: same bytes twice (-o FILE and -o -)"
	else bad "speedscope: output differs between runs"; fi
	# the schema check is not blind: a profile without its unit is refused
	python3 -c "import json,sys; d=json.load(open(sys.argv[1])); del d['profiles'][0]['unit']; json.dump(d, open(sys.argv[2],'w'))" "$o.a" "$o.bad"
	if "${check[@]}" "$o.bad" | grep -q '"valid":false'; then ok "speedscope: the schema check refuses a profile without a unit"
	else bad "speedscope: the schema check accepted a broken file"; fi
}
speedscope_suite
