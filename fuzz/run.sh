#!/usr/bin/env bash
# Run the libFuzzer targets built by `make fuzz`.
# usage: fuzz/run.sh smoke|long SECONDS [TARGET...]   fuzz each target, then the regressions
#        fuzz/run.sh regress                          only the regression inputs
# One fuzzer at a time, niced, bounded in time and memory.  New corpus
# entries go to build-fuzz/corpus/TARGET, crashes to build-fuzz/crash/TARGET.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
F=$ROOT/build-fuzz
mode=${1:-smoke} secs=${2:-20}
shift $(( $# < 2 ? $# : 2 ))
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(script pipe zstd elf kallsyms tracepoint export report cli sframe unwind demangle jitdump)
status=0

if [ "$mode" != regress ]; then
	for t in "${targets[@]}"; do
		mkdir -p "$F/corpus/$t" "$F/crash/$t"
		log=$F/crash/$t/last.log
		echo "fuzz $t: ${secs}s"
		if ! nice -n 10 "$F/fuzz_$t" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 \
			-artifact_prefix="$F/crash/$t/" -print_final_stats=1 \
			"$F/corpus/$t" "$F/seeds/$t" >"$log" 2>&1; then
			echo "FUZZ FAILURE in $t (log: $log):"; grep -a -m5 -A15 'ERROR\|runtime error' "$log"
			status=1
		fi
		grep -aE '^stat::number_of_executed_units|^stat::new_units_added' "$log" | tr '\n' ' '; echo
	done
fi

# every file under tests/regress/TARGET/ once through its target, with the
# fuzzing runs' limits (a finding was an allocation past 2 GiB, or 10 s)
n=0
for d in "$ROOT"/tests/regress/*/; do
	t=$(basename "$d")
	for f in "$d"*; do
		[ -f "$f" ] || continue
		n=$((n + 1))
		if ! out=$(timeout 60 "$F/fuzz_$t" -rss_limit_mb=2048 -timeout=10 "$f" 2>&1); then
			echo "REGRESSION FAILURE: $t $(basename "$f")"; echo "$out" | tail -20
			status=1
		fi
	done
done
echo "regression inputs: $n"
exit $status
