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
