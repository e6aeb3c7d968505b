# Hostile inputs (tests/hostile.py): damaged copies of small real recordings
# (bad header fields, record framing, callchains, sample_type, unknown types,
# corrupt zstd, a cut pipe, duplicate/colliding cookies, unknown tids, broken
# ELF files via --symfs), each with its expected exit status and error text;
# `script` and `stat`, under a timeout; the ASan build too when there is one.
hostile_suite() {
	local bin res
	for bin in "$DSTACK" ${ASAN:+"$ROOT/$ASAN/dstack"}; do
		if res=$(python3 "$ROOT/tests/hostile.py" "$bin" "$WORK" "$WORK/out/hostile" 2>&1); then
			ok "hostile inputs [$bin]: $(echo "$res" | tail -1)"
		else
			bad "hostile inputs [$bin]: $(echo "$res" | tail -1)"
			echo "$res" | grep -v '^ok' | tail -20
		fi
	done
}
hostile_suite

# Every command (script, stat, dump, report, folded, flamegraph, pprof,
# speedscope, inject) on every mutation class (tests/mutate_all.py), reading
# the file and the same bytes from a pipe: no crash, no hang, no silent
# failure, whole output files.  The ASan+UBSan build runs each input in one
# mode per command, by turns (half the runs, for CI time).
mutate_all_suite() {
	local bin res mode
	for bin in "$DSTACK" ${ASAN:+"$ROOT/$ASAN/dstack"}; do
		mode=; [ "$bin" = "$DSTACK" ] || mode=--alternate
		if res=$(python3 "$ROOT/tests/mutate_all.py" $mode "$bin" "$WORK" "$WORK/out/mutate-all" 2>&1); then
			ok "every command on mutated inputs [$bin]: $(echo "$res" | tail -1)"
		else
			bad "every command on mutated inputs [$bin]: $(echo "$res" | tail -1)"
			echo "$res" | grep '^FAIL' | head -20
		fi
		echo "$res" | sed -n '/^command /,/^[0-9]* inputs/p' | sed 's/^/     /'
	done
}
mutate_all_suite
