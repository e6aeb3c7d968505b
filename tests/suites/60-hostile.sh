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
