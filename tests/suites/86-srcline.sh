# Source lines from DWARF: `dstack report --sort dso,srcline` (and srcline alone) equals
# perf 7.2's own on every corpus recording: "file:line" from the line table, "??:0" and
# "crtstuff.c:0" where binutils' addr2line says so, "sym+offset" for PLT entries and
# the kernel, "dso[address]" with no symbol.
srcline_suite() {
	local f n ks o keys
	if ! kvm_ready; then
		echo "SKIPPED srcline vs perf 7.2: *** no kernel-vm at $KVM_DIR (perf7 unavailable): report --sort srcline unchecked against perf ***"; return
	fi
	for f in "$ROOT"/tests/corpus/oracle/*.report.zst; do
		n=$(basename "$f" .report.zst)
		ks=$(kallsyms_for "$n")
		o="$WORK/out/$n.srcline"
		keys=dso,srcline
		case $n in cpu.defer|cxx.defer) keys=srcline ;; esac
		# paths relative to $WORK: perf7 takes absolute ones only under /host
		local args=(report --stdio --no-children --sort $keys -g none --symfs symfs-root/symfs --kallsyms "${ks#"$WORK"/}" -i "data/$n.data")
		(cd "$WORK" && "$DSTACK" "${args[@]}") >"$o.ours" 2>"$o.err" || { bad "srcline $n: exit status $?: $(tail -2 "$o.err")"; continue; }
		# perf's tip of the day (it cannot find its tips file here) and the '#' after it
		(cd "$WORK" && timeout 300 "$KVM_PERF7" "${args[@]}" 2>/dev/null) |
			sed '/Cannot load tips.txt/{N;d}' >"$o.perf"
		if [ ! -s "$o.perf" ]; then bad "srcline $n: perf7 gave nothing"; continue; fi
		if cmp -s "$o.perf" "$o.ours"; then
			ok "srcline $n: report --sort $keys equals perf 7.2's ($(grep -c '^ ' "$o.ours") entries, $(grep -c '\.[ch]c*:[0-9]' "$o.ours") with a source line)"
		else bad "srcline $n: differs from perf 7.2: $(diff "$o.perf" "$o.ours" | head -4 | tr '\n' ' ')"; fi
	done
}
srcline_suite

# The same lines in the exports: go tool pprof -lines gives each source line the share
# report --sort srcline gives it; -list shows the source; the flame graph's tooltip.
srcline_exports_suite() {
	local n ks o res
	for n in cpu.defer cxx.defer mix.defer; do
		ks=$(kallsyms_for "$n")
		o="$WORK/out/$n.lines"
		local opts=(--symfs "$WORK/symfs-root/symfs" --kallsyms "$ks" -i "$WORK/data/$n.data")
		"$DSTACK" report --stdio --no-children --sort srcline -g none "${opts[@]}" >"$o.report" 2>/dev/null
		"$DSTACK" flamegraph "${opts[@]}" -o "$o.svg" 2>/dev/null
		if ! command -v go >/dev/null; then
			echo "SKIPPED srcline pprof $n: *** go (golang-go) is not installed ***"
		elif "$DSTACK" pprof "${opts[@]}" -o "$o.pb.gz" 2>/dev/null &&
		     HOME=$WORK/out go tool pprof -top -lines -nodefraction=0 -nodecount=100000 "$o.pb.gz" >"$o.top" 2>"$o.err" &&
		     res=$(python3 - "$o.top" "$o.report" <<'PY'
import re, sys
go = {}
for l in open(sys.argv[1]):
    f = l.split()
    if len(f) >= 7 and f[1].endswith('%') and re.search(r':\d+$', f[-1]):
        k = f[-1].rsplit('/', 1)[-1]
        go[k] = go.get(k, 0) + float(f[1][:-1])
rows = re.findall(r'^\s+(\d+\.\d+)%\s+(\S+\.c\w*:\d+)\s*$', open(sys.argv[2]).read(), re.M)
errs = []
for pct, line in rows:
    if line.endswith(':0'): continue
    if abs(go.get(line, 0) - float(pct)) > 0.011 * (1 + sum(1 for r in rows if r[1] == line)):
        errs.append('%s: pprof %.2f%%, report %s%%' % (line, go.get(line, 0), pct))
if not rows: errs.append('no source lines in the report')
print('; '.join(errs[:4]) or '%d source lines, each with the share report --sort srcline gives it (top %s %s%%)' % (len(rows), rows[0][1], rows[0][0]))
sys.exit(1 if errs else 0)
PY
); then ok "srcline pprof $n: go tool pprof -lines: $res"
		else bad "srcline pprof $n: ${res:-$(tail -2 "$o.err")}"; fi
		# the tooltip of the hottest user frame names its line as the report's top line does
		local top; top=$(awk '$2 ~ /\.c[a-z]*:[0-9]+$/ { print $2; exit }' "$o.report")
		if [ -n "$top" ] && grep -q "<title>[^<]* $top [0-9]* samples" "$o.svg"; then
			ok "srcline flamegraph $n: a tooltip names $top, the report's hottest line"
		else bad "srcline flamegraph $n: no tooltip with ${top:-a line}: $(grep -o '<title>[^<]*\.c[a-z]*:[0-9]*[^<]*' "$o.svg" | head -2)"; fi
	done
	if command -v go >/dev/null && HOME=$WORK/out go tool pprof -list 'spin' -trim_path /tmp/corpus-src -source_path "$ROOT/tests/corpus" \
		"$WORK/out/cpu.defer.lines.pb.gz" >"$WORK/out/cpu.defer.list" 2>&1 &&
	   grep -q "ROUTINE.*spin" "$WORK/out/cpu.defer.list" && grep -Eq '^ +[0-9.]+m?s +[0-9.]+m?s +15:' "$WORK/out/cpu.defer.list"; then
		ok "srcline pprof: go tool pprof -list spin shows wl.c with its samples on line 15: $(grep -E '^ +[0-9.]+m?s +[0-9.]+m?s +15:' "$WORK/out/cpu.defer.list" | tr -s ' ' | head -1)"
	elif command -v go >/dev/null; then bad "srcline pprof -list: $(head -5 "$WORK/out/cpu.defer.list")"; fi
}
srcline_exports_suite
