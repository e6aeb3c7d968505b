# dstack inject --merge: every corpus recording rewritten with classic
# callchains must show the same stacks as the original, read by dstack and
# by Debian's perf 6.1 (which knows nothing of deferred callchains), in file
# and pipe mode.  Differences the checker accepts, and counts:
#   cookie_stripped   unresolved samples lose their cookie line (kernel chain only)
#   exec_window       a sample taken inside execve whose user stack (the new
#                     image's entry point) was unwound when exec returned: a
#                     classic file resolves it with the maps at sample time,
#                     before the new image was mapped -> [unknown] ([unknown])
#   user_ip_relative  perf 6.1 prints user ips map-relative (7.2 and dstack: absolute)
#   plt_or_cxx_name   perf 6.1 names PLT entries and C++ functions differently

inject_checker() {
	cat >"$WORK/out/inject_check.py" <<'PY'
import re, sys
# inject_check.py REF OTHER MODE: REF = dstack script of the original,
# OTHER = dstack script (MODE dstack) or perf 6.1 script (MODE perf61) of the injected file.
from functools import lru_cache
hdr = re.compile(r'^\s*(.*?)\s+(\d+)\s+(?:\[\d+\]\s+)?(\d+\.\d+):')
COOKIE = '(cookie) ([unknown])'
def blocks(path):
    out = []
    for b in open(path, errors='replace').read().split('\n\n'):
        b = b.strip('\n')
        if b:
            head, _, frames = b.partition('\n')
            m = hdr.match(head)
            out.append(((m.group(2), m.group(3)) if m else head, frames))
    return out
def parse(f):
    ip, rest = f.strip().split(' ', 1)
    m = re.match(r'^(.*) \((.*)\)$', rest)
    return int(ip, 16), m.group(1), m.group(2)
def cxx_same(a, b):
    """perf 6.1 demangles without parameters, return type, const, [clone]."""
    def norm(sym):
        name, _, off = sym.rpartition('+')
        out, depth = '', 0
        for c in name:
            depth += c in '(['
            if not depth: out += c
            depth -= c in ')]' and depth > 0
        return out.replace(' const', '').strip(), off
    (na, oa), (nb, ob) = norm(a), norm(b)
    return oa == ob and nb != '' and na.endswith(nb)
mode = sys.argv[3]
# dstack script of the original prints deferred samples in perf 7.2's order
# (when their task's record came); the injected file has none: compare the
# samples in time order
def by_time(bl):
    return sorted(bl, key=lambda b: (float(b[0][1]), int(b[0][0])) if isinstance(b[0], tuple) else (0.0, 0))
ref, oth = by_time(blocks(sys.argv[1])), by_time(blocks(sys.argv[2]))
st = dict(samples=0, identical=0, cookie_stripped=0, exec_window=0, user_ip_relative=0, plt_or_cxx_name=0, bad=0)
if len(ref) != len(oth):
    print('sample count differs: %d vs %d' % (len(ref), len(oth))); sys.exit(1)
@lru_cache(maxsize=None)
def frame_kind(a, b, exec_sample):
    (ia, sa, da), (ib, sb, db) = parse(a), parse(b)
    if ia == ib and (sb, db) == ('[unknown]', '[unknown]') and da != '[kernel.kallsyms]' and exec_sample:
        return 'exec_window'   # resolved with the maps of exec's return in the original
    if mode != 'perf61' or da != db:
        return 'bad'
    kinds = set()
    if ia != ib:
        if not (ib < ia and (ia - ib) % 4096 == 0 and da != '[kernel.kallsyms]'):
            return 'bad'
        kinds.add('user_ip_relative')
    if sa != sb:
        if 'plt' in sa or cxx_same(sa, sb):
            kinds.add('plt_or_cxx_name')
        else:
            return 'bad'
    return 'plt_or_cxx_name' if 'plt_or_cxx_name' in kinds else 'user_ip_relative'
rank = ['identical', 'user_ip_relative', 'plt_or_cxx_name', 'exec_window', 'bad']
@lru_cache(maxsize=None)
def block_kind(fr, fo):
    if fr == fo:
        return 'identical'
    la, lb = fr.split('\n'), fo.split('\n')
    if len(la) != len(lb):
        return 'bad'
    # a new image's entry point: the only user frame, unwound when exec returned
    ex = sum(not f.endswith('([kernel.kallsyms])') for f in la) == 1
    kind = 'identical'
    for a, b in zip(la, lb):
        if a != b:
            k = frame_kind(a, b, ex)
            if rank.index(k) > rank.index(kind): kind = k
    return kind
for (kr, fr), (ko, fo) in zip(ref, oth):
    st['samples'] += 1
    if fr.endswith(COOKIE):
        fr = fr[:fr.rfind('\n') + 1].rstrip('\n'); st['cookie_stripped'] += 1
    kind = block_kind(fr, fo) if kr == ko else 'bad'
    st[kind] += 1
    if kind == 'bad' and st['bad'] <= 3:
        print('differs:', kr, ko); [print('   %s | %s' % (x, y)) for x, y in zip(fr.split('\n'), fo.split('\n')) if x != y]
print(' '.join('%s=%d' % kv for kv in st.items()))
sys.exit(1 if st['bad'] or not st['samples'] else 0)
PY
}

inject_one() {
	local name=$1 ks; ks=$(kallsyms_for "$name")
	local in="$WORK/data/$name.data" o="$WORK/out/$name.inj" res
	local sym=(--symfs "$WORK/symfs-root/symfs" --kallsyms "$ks")
	if ! "$DSTACK" inject --merge -i "$in" -o "$o.data" 2>"$o.err"; then
		bad "inject $name: exit $? $(tail -2 "$o.err")"; return
	fi
	# the stitcher's counts are what inject reports
	local want; want=$("$DSTACK" stat -i "$in" | awk '$1 == "stitched" {s = $2} $1 == "unresolved" {u = $2} END {print s + 0, u + 0}')
	if grep -q "$(echo "$want" | awk '{print $1 " stitched, " $2 " unresolved"}')" "$o.err"; then
		ok "inject $name: $(sed -n 's/.*wrote [^:]*: //p' "$o.err")"
	else bad "inject $name: summary '$(head -1 "$o.err")' does not match stat's stitched/unresolved $want"; fi
	# the output has no deferred parts left
	if "$DSTACK" stat -i "$o.data" | awk '$1 ~ /^(samples.deferred|deferred.records|records.CALLCHAIN_DEFERRED)$/ && $2 != 0 {b = 1}
	     $1 == "event.0" && / defer_/ {b = 1} END {exit b}'; then
		ok "inject $name: no deferred records, cookies or defer bits left"
	else bad "inject $name: deferred parts left in the output"; fi
	# dstack reads the same stacks back
	[ -s "$WORK/out/$name.script" ] || "$DSTACK" script "${sym[@]}" -i "$in" >"$WORK/out/$name.script" 2>/dev/null
	"$DSTACK" script "${sym[@]}" -i "$o.data" >"$o.script" 2>/dev/null
	if res=$(python3 "$WORK/out/inject_check.py" "$WORK/out/$name.script" "$o.script" dstack); then
		ok "inject $name: dstack script matches the original: $res"
	else bad "inject $name: dstack script differs: $res"; fi
	# and so does perf 6.1 (no inline frames: 6.1 gets them from addr2line, slowly and differently)
	if [ -x /usr/bin/perf ]; then
		"$DSTACK" script --no-inline "${sym[@]}" -i "$in" >"$o.ref-noinline" 2>/dev/null
		if ! /usr/bin/perf script --no-inline "${sym[@]}" -i "$o.data" >"$o.perf61" 2>"$o.perf61.err"; then
			bad "inject $name: perf 6.1 script failed: $(tail -2 "$o.perf61.err")"
		elif res=$(python3 "$WORK/out/inject_check.py" "$o.ref-noinline" "$o.perf61" perf61); then
			ok "inject $name: perf 6.1 script shows the same stacks: $res"
		else bad "inject $name: perf 6.1 script differs: $res"; fi
	fi
}

inject_pipe() {
	local o="$WORK/out/inject-pipe" res
	local sym=(--symfs "$WORK/symfs-root/symfs" --kallsyms "$WORK/kallsyms")
	# pipe-mode output (-o -), from a pipe-mode input on stdin and a compressed file
	for name in pipe.defer mixz.defer; do
		if [ $name = pipe.defer ]; then
			cat "$WORK/data/$name.data" | "$DSTACK" inject --merge -i - -o - >"$o.$name.data" 2>"$o.err"
		else
			"$DSTACK" inject --merge -i "$WORK/data/$name.data" -o - 2>"$o.err" | cat >"$o.$name.data"
		fi
		if [ "${PIPESTATUS[0]}${PIPESTATUS[1]}" != 00 ]; then
			bad "inject pipe $name: $(tail -2 "$o.err")"; continue
		fi
		"$DSTACK" script "${sym[@]}" -i - <"$o.$name.data" >"$o.$name.script" 2>/dev/null
		if "$DSTACK" stat -i "$o.$name.data" | grep -q '^file.mode *pipe$' &&
		   cmp -s "$o.$name.script" "$WORK/out/$name.inj.script"; then
			ok "inject pipe $name: pipe-mode output reads the same as the file output"
		else bad "inject pipe $name: pipe-mode output differs from the file output"; fi
		if [ -x /usr/bin/perf ]; then
			if /usr/bin/perf script --no-inline "${sym[@]}" -i - <"$o.$name.data" >"$o.$name.perf61" 2>"$o.err" &&
			   res=$(python3 "$WORK/out/inject_check.py" "$WORK/out/$name.inj.ref-noinline" "$o.$name.perf61" perf61); then
				ok "inject pipe $name: perf 6.1 reads the pipe-mode output: $res"
			else bad "inject pipe $name: perf 6.1 on the pipe-mode output: $res $(tail -2 "$o.err")"; fi
		fi
	done
}

inject_usage() {
	local in="$WORK/data/cpu.defer.data" rc
	"$DSTACK" inject -i "$in" -o "$WORK/out/x.data" 2>/dev/null; rc=$?
	[ $rc -eq 2 ] && ok "inject without --merge: usage error" || bad "inject without --merge: exit $rc"
	cp "$in" "$WORK/out/same.data"
	"$DSTACK" inject --merge -i "$WORK/out/same.data" -o "$WORK/out/same.data" 2>/dev/null; rc=$?
	if [ $rc -eq 2 ] && cmp -s "$in" "$WORK/out/same.data"; then ok "inject onto its own input: refused, input intact"
	else bad "inject onto its own input: exit $rc"; fi
	# a truncated input: what was read is written and readable, exit 1
	head -c 100000 "$in" >"$WORK/out/trunc.data"
	"$DSTACK" inject --merge -i "$WORK/out/trunc.data" -o "$WORK/out/trunc.inj.data" 2>"$WORK/out/trunc.err"; rc=$?
	local n; n=$("$DSTACK" stat -i "$WORK/out/trunc.inj.data" 2>/dev/null | awk '$1 == "samples" {print $2}')
	if [ $rc -eq 1 ] && grep -q "offset" "$WORK/out/trunc.err" && [ "${n:-0}" -gt 0 ]; then
		ok "inject of a truncated input: exit 1 naming the offset, $n samples written"
	else bad "inject of a truncated input: exit $rc, ${n:-no} samples: $(head -2 "$WORK/out/trunc.err")"; fi
}

inject_checker
[ -x /usr/bin/perf ] || echo "SKIPPED: /usr/bin/perf (Debian perf 6.1) is missing: inject output not checked against perf 6.1 ***"
for f in "$WORK"/data/*.data; do
	inject_one "$(basename "$f" .data)"
done
inject_pipe
inject_usage
