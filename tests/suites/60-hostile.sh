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

# Damaged header features (the unit test's files: tests/unit/test_features.c
# writes them): --header-only prints what came before the damage and warns
# with the feature's name and the exact offset; the whole header still
# prints, exit 0 (the data is whole).
header_features_suite() {
	local bin dir=$WORK/out/hostile-features out err rc
	[ -x "$ROOT/$BUILD/tests/test_features" ] || { bad "damaged header features: no $BUILD/tests/test_features (make unit)"; return; }
	rm -rf "$dir"
	"$ROOT/$BUILD/tests/test_features" "$dir" >/dev/null || { bad "damaged header features: the unit test failed"; return; }
	for bin in "$DSTACK" ${ASAN:+"$ROOT/$ASAN/dstack"}; do
		out=$("$bin" script --header-only -i "$dir/cmdline.data" 2>"$dir/err"); rc=$?
		err=$(cat "$dir/err")
		if [ $rc -eq 0 ] && echo "$out" | grep -qx '# cmdline : dstack ' && echo "$out" | grep -q '^# missing features:' &&
			echo "$err" | grep -q 'header feature CMDLINE at offset 0x[0-9a-f]*: word of 4000 bytes past the section'; then
			ok "damaged header features [$bin]: the words before the damage printed, then: ${err#dstack: }"
		else
			bad "damaged header features [$bin]: exit $rc, stderr '$err'"
		fi
	done
}
header_features_suite
