# Fuzz smoke (make fuzz-smoke): every libFuzzer target for FUZZ_TIME seconds
# (default 10: a smoke run, on the seeds; the 30-minute runs are made by
# hand) on its seeds, then every regression input in tests/regress/.
# Needs clang with libFuzzer (Debian: clang-14 + libclang-rt-14-dev);
# DSTACK_NO_FUZZ=1 skips it.
fuzz_smoke_suite() {
	local probe="$WORK/out/fuzz-probe" log="$WORK/out/fuzz-smoke.log"
	if [ -n "${DSTACK_NO_FUZZ:-}" ]; then
		echo "SKIPPED fuzz smoke: DSTACK_NO_FUZZ is set"; return
	fi
	mkdir -p "$WORK/out"
	printf '#include <stdint.h>\n#include <stddef.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { return 0; }\n' >"$probe.c"
	if ! clang -fsanitize=fuzzer,address,undefined -o "$probe" "$probe.c" >/dev/null 2>&1 ||
	   ! "$probe" -runs=1 >/dev/null 2>&1; then
		echo "SKIPPED fuzz smoke: clang with libFuzzer is not available (install clang and libclang-rt-14-dev) <<<<<<<<"
		return
	fi
	if make -C "$ROOT" --no-print-directory fuzz-smoke FUZZ_TIME="${FUZZ_TIME:-10}" >"$log" 2>&1; then
		ok "fuzz smoke: $(grep -c '^fuzz [a-z]*: ' "$log") targets x ${FUZZ_TIME:-10}s clean, $(grep '^regression inputs' "$log")"
	else
		bad "fuzz smoke (log: $log)"; grep -v '^clang\|^ar ' "$log" | tail -25
	fi
}
fuzz_smoke_suite
