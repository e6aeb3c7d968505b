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

# go tool pprof (Debian's golang-go) reading dstack's files, as Pyroscope, Parca and
# Grafana read them: per event, -top's total equals report's event count and sample count,
# and its flat shares report's flat profile; -raw shows the main binary first and the
# build-ids and ranges of the file mappings; time and duration come from the recording.
# A recording with two events (made here by the host's perf, when it may record) gives
# a sample type pair per event, and --per-event a file per event.
pprof_go_check() { # NAME PB REPORT_ARGS...: compares every event of PB (ONLY_EVENT: that one) with dstack report
	local name=$1 pb=$2; shift 2
	local o="$pb.go" res
	"$DSTACK" report --stdio --no-children --sort dso,sym -g none "$@" >"$o.report" 2>/dev/null
	HOME=$WORK/out go tool pprof -raw "$pb" >"$o.raw" 2>"$o.err" || { bad "go pprof $name: -raw failed: $(tail -2 "$o.err")"; return; }
	local types; types=$(sed -n '/^Samples:/{n;p;q}' "$o.raw")
	local i=0 n; n=$(echo "$types" | wc -w)
	: >"$o.tops"
	while [ "$i" -lt "$n" ]; do
		echo "== $i" >>"$o.tops"
		HOME=$WORK/out go tool pprof -top -noinlines -unit=ns -nodefraction=0 -nodecount=100000 -sample_index=$i "$pb" >>"$o.tops" 2>>"$o.err" ||
			{ bad "go pprof $name: -top -sample_index=$i failed: $(tail -2 "$o.err")"; return; }
		i=$((i + 1))
	done
	if res=$(python3 - "$o.raw" "$o.tops" "$o.report" "$name" "${ONLY_EVENT:-}" <<'PY'
import re, sys
raw, tops, rep, name = open(sys.argv[1]).read(), open(sys.argv[2]).read(), open(sys.argv[3]).read(), sys.argv[4]
errs = []
types = raw.split('Samples:\n', 1)[1].split('\n', 1)[0].split()
# report: per event, samples, event count, and flat rows
events = {}
for blk in re.split(r'\n(?=# Samples: )', rep)[1:]:
    m = re.match(r"# Samples: (\S+) +of event '(.*)'\n# Event count \(approx\.\): (\d+)", blk)
    rows = re.findall(r'^\s+(\d+\.\d+)%\s+\S+\s+\[.\] (.*?)\s*$', blk, re.M)
    events[m.group(2)] = (m.group(1), int(m.group(3)), rows)
if sys.argv[5]: events = {sys.argv[5]: events[sys.argv[5]]}
# pprof shows names shortened (argument and template lists, " const", ".constprop.0",
# "[clone .isra.0]" cut, " const" kept): the report's names are compared shortened the same way
def short(n):
    n = re.sub(r' \[clone [^]]*\]', '', n)
    n = re.sub(r'\((?!anonymous namespace\))[^()]*(\([^()]*\)[^()]*)*\)', '', n)
    while re.search(r'<[^<>]*>', n): n = re.sub(r'<[^<>]*>', '', n)
    n = re.sub(r'(\.(constprop|isra|part|cold|lto_priv)\.\d+)+$', '', n)
    return n.strip()
def top(i):
    t = tops.split('== %d\n' % i, 1)[1].split('\n== ', 1)[0]
    total = int(re.search(r'of (\d+)(?:ns)? total', t).group(1)) if 'total' in t else 0
    flat = {}
    for l in t.split('\n'):
        f = l.split(None, 5)
        if len(f) == 6 and f[1].endswith('%'):
            k = re.sub(r' \(partial-inline\)$', '', f[5])
            flat[k] = None if k in flat else f[1]   # two functions shown alike: not compared
    return total, flat
if len(events) == 1:
    ev = list(events)[0]
    pairs = [(ev, 0, 1)]
    if types[:1] != ['samples/count']: errs.append('types %s' % types)
else:
    pairs = [(ev, types.index(ev + '_samples/count'), [i for i, t in enumerate(types) if t.rsplit('/', 1)[0] == ev][0]) for ev in events]
checked, aliased = 0, []
for ev, si, vi in pairs:
    samples, count, rows = events[ev]
    ns, _ = top(si)
    total, flat = top(vi)
    if total != count: errs.append('%s: pprof total %d, report event count %d' % (ev, total, count))
    want_s = samples if not samples[-1].isalpha() else None
    if want_s and ns != int(want_s): errs.append('%s: pprof samples %d, report %s' % (ev, ns, samples))
    shorts = [short(sym) for pct, sym in rows]
    for pct, sym in rows[:15]:
        sym = short(sym)
        # a name in several DSOs (strcmp in ld.so and libc's alias) is not compared
        if sym.startswith('0x') or shorts.count(sym) > 1: continue
        if sym not in flat:
            # the host's libc has aliases at one address, and report picks its name its own
            # way: a small row may be named otherwise; a big one must be there
            if float(pct) >= 5: errs.append('%s: %s not in pprof -top' % (ev, sym))
            else: aliased.append(sym)
            continue
        if flat[sym] is None: continue
        if abs(float(flat[sym][:-1]) - float(pct)) > 0.011: errs.append('%s: %s flat %s, report %s%%' % (ev, sym, flat[sym], pct))
        checked += 1
maps = re.findall(r'^(\d+): (0x[0-9a-f]+)/(0x[0-9a-f]+)/(0x[0-9a-f]+) (\S+) ?(\S*)', raw.split('Mappings\n', 1)[1], re.M)
files = [m for m in maps if m[4].startswith('/')]
if not files: errs.append('no file mappings')
elif files != maps[:len(files)] and maps[0][4].startswith('['): errs.append('first mapping %s' % maps[0][4])
bids = [m for m in files if re.fullmatch(r'[0-9a-f]{40}', m[5])]
if len(bids) != len(files): errs.append('%d of %d file mappings with a build-id' % (len(bids), len(files)))
if any(int(m[1], 16) >= int(m[2], 16) for m in maps): errs.append('an empty range')
main = {'cpu': '/usr/local/bin/wl', 'mix': '/usr/local/bin/wl', 'cxx': '/usr/local/bin/wlxx'}.get(name.split('.')[0])
if main and maps[0][4] != main: errs.append('first mapping %s, want %s' % (maps[0][4], main))
dur = re.search(r'^Duration: (\S+)', raw, re.M)
if not re.search(r'^Time: 20\d\d-', raw, re.M) or not dur or float(dur.group(1)) <= 0: errs.append('no time or duration')
print('; '.join(errs[:4]) or '%d event(s), totals equal report (%s), %d flat rows equal%s, first mapping %s, %d file mappings with build-ids, duration %s' %
      (len(pairs), ', '.join('%s %d' % (ev, events[ev][1]) for ev in events), checked,
       ' (%d small ones named by another alias)' % len(aliased) if aliased else '', maps[0][4], len(files), dur.group(1)))
sys.exit(1 if errs else 0)
PY
); then ok "go pprof $name: $res"; else bad "go pprof $name: $res"; fi
}

pprof_go_suite() {
	if ! command -v go >/dev/null; then
		echo "SKIPPED go tool pprof: *** go (Debian's golang-go) is not installed: pprof unchecked by pprof itself ***"; return
	fi
	local n ks o
	for n in cpu.defer cxx.defer mix.fp kernel.defer; do
		ks=$(kallsyms_for "$n")
		o="$WORK/out/$n.go.pb.gz"
		"$DSTACK" pprof --symfs "$WORK/symfs-root/symfs" --kallsyms "$ks" -i "$WORK/data/$n.data" -o "$o" 2>/dev/null ||
			{ bad "go pprof $n: dstack pprof failed"; continue; }
		pprof_go_check "$n" "$o" --symfs "$WORK/symfs-root/symfs" --kallsyms "$ks" -i "$WORK/data/$n.data"
	done
	# two events: recorded here by the host's perf (root, perf_event_paranoid allowing)
	o="$WORK/out/two-events"
	local wl="$WORK/out/diff-wl-host"
	if ! command -v perf >/dev/null || ! cc -O2 -g -fno-omit-frame-pointer -o "$wl" "$ROOT/tests/vm/diff-wl.c" 2>/dev/null ||
	   ! perf record -q -e cpu-clock/period=100000/ -e page-faults/period=1/ -g -o "$o.data" -- "$wl" new 40 >/dev/null 2>"$o.err"; then
		echo "SKIPPED go tool pprof, two events: *** the host's perf cannot record here: $(tail -1 "$o.err" 2>/dev/null) ***"; return
	fi
	"$DSTACK" pprof -i "$o.data" -o "$o.pb.gz" 2>/dev/null && pprof_go_check two-events "$o.pb.gz" -i "$o.data"
	rm -f "$o".*.pb.gz
	if "$DSTACK" pprof --per-event -i "$o.data" -o "$o.pb.gz" 2>"$o.per.err" && [ ! -e "$o.pb.gz" ]; then
		local f k=0
		for f in "$o".*.pb.gz; do
			k=$((k + 1))
			ONLY_EVENT=$(sed -n "s|.*$(basename "$f"): event ||p" "$o.per.err") \
				pprof_go_check "per-event $(basename "$f")" "$f" -i "$o.data"
		done
		[ "$k" = 2 ] && ok "pprof --per-event: two files: $(ls "$o".*.pb.gz | xargs -n1 basename | tr '\n' ' ')" ||
			bad "pprof --per-event: $k files"
	else bad "pprof --per-event: $(cat "$o.per.err")"; fi
}
pprof_go_suite
