#!/usr/bin/env bash
# dstack test suite: unit tests, every corpus recording against perf 7.2's
# oracle output, pipe mode, and damaged inputs under ASan/UBSan.
# usage: tests/run.sh BUILD_DIR [ASAN_BUILD_DIR]
set -u
BUILD=${1:-build}
ASAN=${2:-}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CORPUS=$ROOT/tests/corpus
WORK=$ROOT/$BUILD/testdata
DSTACK=$ROOT/$BUILD/dstack
# a debuginfod server named in the environment turns dstack's lookups on, as perf's
# (Debian's profile.d sets one): the suites ask only the servers they start
unset DEBUGINFOD_URLS DEBUGINFOD_TIMEOUT
# the guest tools (kvm_ready, KVM_RUN, KVM_PERF7, KVM_SIDCC)
. "$ROOT/tests/lib/kvm.sh"
pass=0 fail=0

ok()   { pass=$((pass + 1)); echo "ok   $*"; }
# Every FAIL line is repeated at the end: a CI log cut in the middle still
# names each failure in its tail.
failures=()
bad()  { fail=$((fail + 1)); echo "FAIL $*"; failures+=("$(printf '%s' "$*" | head -c 600 | head -3)"); }

unpack_corpus() {
	"$ROOT/tests/unpack-corpus.sh" "$WORK"
}

run_units() {
	local dir=$1
	for t in "$dir"/tests/*; do
		[ -x "$t" ] || continue
		local name; name=$(basename "$t")
		if out=$("$t" "$WORK/symfs-root/symfs" "$WORK/kallsyms" 2>&1); then
			ok "unit $name ($(echo "$out" | tail -1))"
		else
			bad "unit $name"; echo "$out" | tail -20
		fi
	done
}

kallsyms_for() {
	if [ "$1" = threads2.defer ]; then echo "$WORK/data/threads2.defer.kallsyms"; else echo "$WORK/kallsyms"; fi
}

check_recording() {
	local name=$1 ks; ks=$(kallsyms_for "$name")
	local opts=(--symfs "$WORK/symfs-root/symfs" --kallsyms "$ks" -i "$WORK/data/$name.data")
	local o="$WORK/out/$name"
	zstd -q -dc "$CORPUS/oracle/$name.script.zst" >"$o.perf.script"
	zstd -q -dc "$CORPUS/oracle/$name.nomerge.script.zst" >"$o.perf.nomerge"
	if ! "$DSTACK" script "${opts[@]}" >"$o.script" 2>"$o.err"; then
		bad "script $name: exit $? $(tail -3 "$o.err")"; return
	fi
	"$DSTACK" script --no-merge-callchains "${opts[@]}" >"$o.nomerge" 2>>"$o.err"
	if res=$(python3 "$ROOT/tests/check_script.py" "$o.perf.script" "$o.perf.nomerge" "$o.script" "$o.nomerge"); then
		ok "script $name: $res"
	else
		bad "script $name: $res"
	fi
	# the unresolved count equals the samples whose record is not in the file
	want=$(python3 "$ROOT/tests/check_script.py" --unresolved "$o.perf.nomerge")
	got=$("$DSTACK" stat -i "$WORK/data/$name.data" | awk '$1 == "unresolved" {print $2}')
	if [ "${got:-x}" = "$want" ]; then ok "stat $name: unresolved $got = samples without a record in the file"
	else bad "stat $name: unresolved ${got:-?}, expected $want"; fi
}

check_pipe() {
	local f="$WORK/data/mix.defer.data" o="$WORK/out/pipe"
	local opts=(--symfs "$WORK/symfs-root/symfs" --kallsyms "$WORK/kallsyms")
	cat "$f" | "$DSTACK" script "${opts[@]}" -i - >"$o.pipe" 2>"$o.pipe.err"
	rc=$?
	if [ $rc -eq 1 ] && grep -q "cannot be read from a pipe" "$o.pipe.err"; then
		ok "pipe: a file-mode recording on stdin is refused with a clear error"
	else bad "pipe: file-mode recording on stdin: exit $rc, $(cat "$o.pipe.err")"; fi
	if cat "$WORK/data/pipe.defer.data" | "$DSTACK" script "${opts[@]}" -i - >"$o.pp" 2>/dev/null &&
	   "$DSTACK" script "${opts[@]}" -i "$WORK/data/pipe.defer.data" | cmp -s - "$o.pp"; then
		ok "pipe: a pipe-mode recording reads the same from a pipe and from a file"
	else bad "pipe: pipe-mode recording differs between pipe and file"; fi
}

# dstack keeps nothing across runs: a report with HOME and XDG_CACHE_HOME
# in a fresh directory leaves it empty, and prints what it prints elsewhere.
check_no_cache() {
	local o="$WORK/out/nocache" h="$WORK/out/nocache-home"
	local args=(report --stdio --symfs "$WORK/symfs-root/symfs" --kallsyms "$WORK/kallsyms" -i "$WORK/data/mix.fp.data")
	rm -rf "$h" "$o".*
	mkdir -p "$h"
	"$DSTACK" "${args[@]}" >"$o.here" 2>&1
	env -u DSTACK_CACHE_DIR HOME="$h" XDG_CACHE_HOME="$h/cache" "$DSTACK" "${args[@]}" >"$o.home" 2>&1
	if [ -s "$o.here" ] && cmp -s "$o.here" "$o.home" && [ -z "$(ls -A "$h")" ]; then
		ok "no cache: report mix.fp writes nothing under HOME or XDG_CACHE_HOME, same output"
	else
		bad "no cache: outputs differ or files written: $(find "$h" | head -3)"
	fi
}

check_corrupt() {
	local bin=$1
	for name in cpu.defer pipe.defer mixz.defer; do
		if res=$(python3 "$ROOT/tests/corrupt.py" "$bin" "$WORK/data/$name.data" "$WORK/out"); then
			ok "$(echo "$res" | tail -1) [$bin]"
		else
			bad "corrupt $name [$bin]"; echo "$res" | tail -15
		fi
	done
}

# Free disk space where the tests write, printed at the start and after each
# suite: a full disk makes writes fail, and those failures would otherwise
# read as differences.  With it, the seconds since the run started: CI
# stops a run at 90 minutes, and this says which suites took them.
disk_free_mb() { df -Pm "$WORK" 2>/dev/null | awk 'NR == 2 {print $4}'; }
disk_note() {
	local mb; mb=$(disk_free_mb)
	echo "info disk: ${mb:-?} MB free under $WORK ($1; ${SECONDS} s into the run)"
	[ "${mb:-9999}" -ge 1024 ] || echo "WARNING: *** less than 1 GB of disk free under $WORK: writes may fail ***"
}

unpack_corpus
mkdir -p "$WORK/out"
disk_note "start"
# DSTACK_ONLY="40 70" (developers): just those suites, after the unit tests
if [ -z "${DSTACK_ONLY:-}" ]; then
run_units "$ROOT/$BUILD"
for f in "$CORPUS"/oracle/*.nomerge.script.zst; do
	n=$(basename "$f" .nomerge.script.zst)
	check_recording "$n"
done
check_pipe
check_no_cache
check_corrupt "$DSTACK"
if [ -n "$ASAN" ]; then
	run_units "$ROOT/$ASAN"
	check_corrupt "$ROOT/$ASAN/dstack"
	for n in mix.defer pipe.defer mixz.defer threads2.defer; do
		ks=$(kallsyms_for "$n")
		if ASAN_OPTIONS=exitcode=86 UBSAN_OPTIONS=halt_on_error=1:exitcode=87 "$ROOT/$ASAN/dstack" script \
			--symfs "$WORK/symfs-root/symfs" --kallsyms "$ks" -i "$WORK/data/$n.data" >"$WORK/out/$n.asan" 2>"$WORK/out/$n.asan.err" &&
		   cmp -s "$WORK/out/$n.asan" "$WORK/out/$n.script"; then
			ok "asan script $n: clean, same output"
		else
			bad "asan script $n: $(tail -5 "$WORK/out/$n.asan.err")"
		fi
	done
fi
fi
# Suites of the other commands: each file uses ok/bad, $DSTACK, $WORK, $ROOT, $ASAN.
for suite in "$ROOT"/tests/suites/*.sh; do
	[ -f "$suite" ] || continue
	if [ -n "${DSTACK_ONLY:-}" ]; then
		case " $DSTACK_ONLY " in *" $(basename "$suite" | cut -d- -f1) "*) ;; *) continue ;; esac
	fi
	# shellcheck source=/dev/null
	. "$suite"
	disk_note "after $(basename "$suite")"
done

# The command suites once more on the ASan+UBSan build.  Every sanitizer
# report (a leak included) goes to a log file, so one is caught even where
# a check looks only at the output.  The guest, fuzzing (sanitized already),
# the hostile catalogue (runs both builds itself) and the bench check stay out.
asan_suites() {
	local logs="$WORK/out/asan-logs" suite release=$DSTACK
	rm -rf "$logs"; mkdir -p "$logs"
	if ! lsan_works "$logs"; then
		echo "SKIPPED asan suites: *** LeakSanitizer does not work here (ptrace?): leaks unchecked ***"
	fi
	DSTACK=$ROOT/$ASAN/dstack
	export ASAN_OPTIONS="detect_leaks=1:exitcode=86:log_path=$logs/report"
	export UBSAN_OPTIONS="halt_on_error=1:exitcode=87:print_stacktrace=1:log_path=$logs/report"
	for suite in "$ROOT"/tests/suites/*.sh; do
		case $(basename "$suite") in 50-*|60-*|61-*) continue ;; esac
		if [ -n "${DSTACK_ONLY:-}" ]; then
			case " $DSTACK_ONLY " in *" $(basename "$suite" | cut -d- -f1) "*) ;; *) continue ;; esac
		fi
		echo "== $(basename "$suite") on the ASan+UBSan build"
		# shellcheck source=/dev/null
		DSTACK_NO_VM="on the ASan pass (the release pass ran the guest)" . "$suite"
		disk_note "after $(basename "$suite"), ASan"
	done
	unset ASAN_OPTIONS UBSAN_OPTIONS
	DSTACK=$release
	if ls "$logs"/report.* >/dev/null 2>&1; then
		bad "asan suites: sanitizer reports: $(ls "$logs" | head -5 | tr '\n' ' ')"; head -30 "$logs"/report.* | head -60
	else
		ok "asan suites: no sanitizer report (leaks included) from any command above"
	fi
}

# LeakSanitizer must really run here for "no leak" to mean anything: a
# program that leaks on purpose has to be reported.
lsan_works() {
	local d=$1
	printf '#include <stdlib.h>\nvoid *p;\nint main(void) { p = malloc(64); p = 0; return 0; }\n' >"$d/leak.c"
	cc -fsanitize=address -g -o "$d/leak" "$d/leak.c" 2>/dev/null || return 1
	ASAN_OPTIONS=detect_leaks=1 "$d/leak" 2>"$d/leak.err"
	local rc=$?
	rm -f "$d/leak" "$d/leak.c"
	if [ $rc -ne 0 ] && grep -q "detected memory leaks" "$d/leak.err"; then
		ok "LeakSanitizer works here (a deliberate leak is reported)"; rm -f "$d/leak.err"; return 0
	fi
	return 1
}

if [ -n "$ASAN" ] && [ -x "$ROOT/$ASAN/dstack" ]; then
	asan_suites
fi
echo
for f in "${failures[@]}"; do echo "failed: $f"; done
echo "tests: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
