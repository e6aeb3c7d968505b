# dstack record: on the host kernel (classic callchains; deferred ones fall back
# with one line), then in the kernel-vm guest (Linux >= 6.19) against perf record.

record_workload_src() {
	cat <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#define NOIPA __attribute__((noinline, noipa))
NOIPA static double leaf(int n) { volatile double s = 0; for (int i = 0; i < n; i++) s += i * 0.5; return s; }
NOIPA static double middle(int n) { return leaf(n) + 1; }
NOIPA static double top(int n) { return middle(n) * 2; }
int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 100;
	double s = 0;
	for (int i = 0; i < n * 10; i++)
		s += top(100000);
	printf("%d\n", s > 0);
	return 0;
}
EOF
}

# Per sample with a frame in leaf(): the workload frames from the callee up,
# function names only (perf 6.1 and dstack differ in offsets and inline marks).
record_stacks() {
	awk '
	function flush() { if (st != "") print st; st = ""; in_s = 0 }
	/^[^ \t]/ { flush(); in_s = 1; next }
	/^$/ { flush(); next }
	in_s && /recwl\)$/ {
		s = $2; sub(/\+0x[0-9a-f]+$/, "", s); sub(/\..*$/, "", s)
		st = st (st == "" ? "" : ";") s
	}
	END { flush() }' "$1" | grep '^leaf;'
}

# A file perf 6.1 and dstack both read without complaint: "SAMPLES BAD".
record_readable() {
	local f=$1 n t="$WORK/out/record/$(basename "$1")"   # not beside it: it may sit on a full disk
	"$DSTACK" stat -i "$f" >"$t.stat" 2>&1 || { echo "dstack stat failed: $(tail -1 "$t.stat")"; return 1; }
	n=$(awk '$1 == "samples" { print $2 }' "$t.stat")
	grep -q '^records.bad  *0$' "$t.stat" || { echo "bad records: $(grep '^records.bad' "$t.stat")"; return 1; }
	if [ -x /usr/bin/perf ] && ! /usr/bin/perf script -i "$f" >/dev/null 2>"$t.perf.err"; then
		echo "perf 6.1 refuses it: $(tail -1 "$t.perf.err")"; return 1
	fi
	echo "${n:-0}"
}

# Recorder faults (issue 6): each leaves a readable file or a clear error.
record_faults() {
	local o=$1 wl=$2 rc n p lost
	# SIGTERM, like SIGINT, ends the recording with a finished file
	"$DSTACK" record -g -o "$o/term.data" -- "$wl" 100000 >/dev/null 2>"$o/term.err" &
	p=$!
	sleep 1
	kill -TERM $p
	wait $p; rc=$?
	if n=$(record_readable "$o/term.data") && [ $rc -eq 0 ] && [ "$n" -gt 0 ]
	then ok "record: SIGTERM stops with a file perf 6.1 and dstack read ($n samples)"
	else bad "record: SIGTERM: exit $rc: $n"; fi
	# a command that exits at once: a valid file, maybe without samples
	"$DSTACK" record -g -o "$o/true.data" -- true >/dev/null 2>"$o/true.err"; rc=$?
	if n=$(record_readable "$o/true.data") && [ $rc -eq 0 ] && grep -q 'Captured and wrote' "$o/true.err"
	then ok "record: a command that exits at once leaves a valid file ($n samples)"
	else bad "record: -- true: exit $rc: $n $(tail -2 "$o/true.err")"; fi
	# the command's own exit status does not make the recording fail (as perf)
	"$DSTACK" record -g -o "$o/false.data" -- false >/dev/null 2>"$o/false.err"; rc=$?
	if [ $rc -eq 0 ] && n=$(record_readable "$o/false.data")
	then ok "record: a failing command still leaves a valid file, exit 0"
	else bad "record: -- false: exit $rc: $(tail -2 "$o/false.err")"; fi
	# -p of a process that does not exist
	"$DSTACK" record -p 999999999 -o "$o/nopid.data" >/dev/null 2>"$o/nopid.err"; rc=$?
	if [ $rc -ne 0 ] && grep -q 'no such process: 999999999' "$o/nopid.err" && [ ! -e "$o/nopid.data" ]
	then ok "record: -p of a missing process: '$(head -1 "$o/nopid.err")', no file"
	else bad "record: -p missing: exit $rc: $(head -2 "$o/nopid.err")"; fi
	# disk full: a 64 KiB tmpfs
	local full=$o/full
	mkdir -p "$full"
	if [ "$(id -u)" = 0 ] && mount -t tmpfs -o size=64k dstack-test "$full" 2>/dev/null; then
		"$DSTACK" record -g -o "$full/x.data" -- "$wl" 200 >/dev/null 2>"$o/full.err"; rc=$?
		if [ $rc -eq 3 ] && grep -q "writing $full/x.data: No space left on device" "$o/full.err" &&
		   n=$(record_readable "$full/x.data") && [ "$n" -gt 0 ]
		then ok "record: disk full: exit 3, '$(grep 'No space' "$o/full.err")', the $n samples written are readable"
		else bad "record: disk full: exit $rc: $(head -3 "$o/full.err") $n"; fi
		umount "$full"
	else
		echo "SKIPPED record: *** disk-full test needs root to mount a small tmpfs ***"
	fi
	# lost records: a one-page buffer at 50 kHz
	"$DSTACK" record -g -F 50000 -m 1 -o "$o/lost.data" -- "$wl" 200 >/dev/null 2>"$o/lost.err"; rc=$?
	lost=$("$DSTACK" stat -i "$o/lost.data" 2>/dev/null | awk '$1 == "lost.events" { print $2 }')
	if [ "${lost:-0}" = 0 ]; then
		echo "SKIPPED record: *** no events lost with -m 1 at 50 kHz here: LOST reporting untested ***"
	elif [ $rc -eq 0 ] && grep -q "lost $lost events in [0-9]* LOST records: raise -m" "$o/lost.err" &&
	     n=$(record_readable "$o/lost.data")
	then ok "record: lost events reported ('$(grep 'raise -m' "$o/lost.err")'), file readable ($n samples)"
	else bad "record: lost: exit $rc, stat lost $lost: $(grep -i lost "$o/lost.err")"; fi
}

# perf record's -q, -v, --no-inherit and -C, as perf takes them
record_options() {
	local o=$1 wl=$2 rc n k
	"$DSTACK" record -q -g -o "$o/q.data" -- "$wl" 5 >/dev/null 2>"$o/q.err"; rc=$?
	n=$("$DSTACK" stat -i "$o/q.data" 2>/dev/null | awk '$1 == "samples" { print $2 }')
	if [ $rc -eq 0 ] && [ ! -s "$o/q.err" ] && [ "${n:-0}" -gt 0 ]; then ok "record -q: nothing on stderr, $n samples"
	else bad "record -q: exit $rc, samples ${n:-none}, said: $(head -2 "$o/q.err")"; fi
	"$DSTACK" record -v -g -e cpu-clock -o "$o/v.data" -- true >/dev/null 2>"$o/v.err"; rc=$?
	if [ $rc -eq 0 ] && grep -q '^dstack record: event cpu-clock: type 1 config 0, ' "$o/v.err"
	then ok "record -v: the events as opened ($(grep -c ': event ' "$o/v.err") lines)"
	else bad "record -v: exit $rc: $(head -3 "$o/v.err")"; fi
	# a shell whose children do the work: --no-inherit samples the shell alone
	for k in inherit no-inherit; do
		"$DSTACK" record $([ $k = no-inherit ] && echo --no-inherit) -e cpu-clock -c 100000 -o "$o/$k.data" -- \
			sh -c "$wl 3; $wl 3; i=0; while [ \$i -lt 20000 ]; do i=\$((i+1)); done" >/dev/null 2>"$o/$k.err"
		"$DSTACK" script -F comm -i "$o/$k.data" 2>/dev/null | awk '{ print $1 }' | sort | uniq -c >"$o/$k.comms"
	done
	if grep -q ' recwl$' "$o/inherit.comms" && ! grep -q ' recwl$' "$o/no-inherit.comms" && grep -q ' sh$' "$o/no-inherit.comms"
	then ok "record --no-inherit: the shell's samples only ($(tr -s ' ' <"$o/no-inherit.comms" | tr '\n' ' ')), its children's with inherit"
	else bad "record --no-inherit: $(tr '\n' ' ' <"$o/no-inherit.comms") against $(tr '\n' ' ' <"$o/inherit.comms")"; fi
	if [ "$(nproc)" -ge 2 ]; then
		# work pinned to CPU 1 (an idle CPU may give no cpu-clock sample at all: seen once in CI)
		local busy=(sh -c 'i=0; while [ $i -lt 40000 ]; do i=$((i+1)); done')
		command -v taskset >/dev/null && busy=(taskset -c 1 "${busy[@]}")
		"$DSTACK" record -C 1 -e cpu-clock -c 200000 -o "$o/c1.data" -- "${busy[@]}" >/dev/null 2>"$o/c1.err"; rc=$?
		"$DSTACK" script -F cpu -i "$o/c1.data" 2>/dev/null | sort | uniq -c >"$o/c1.cpus"
		if [ $rc -eq 0 ] && [ "$(wc -l <"$o/c1.cpus")" = 1 ] && grep -q ' \[001\]' "$o/c1.cpus"
		then ok "record -C 1: every task on CPU 1 and no other CPU ($(tr -s ' ' <"$o/c1.cpus"))"
		else bad "record -C 1: exit $rc, $(tr '\n' ' ' <"$o/c1.cpus") $(head -2 "$o/c1.err")"; fi
	fi
	"$DSTACK" record -C 1-0 -o "$o/x.data" -- true >/dev/null 2>"$o/x.err"; rc=$?
	if [ $rc -ne 0 ] && grep -q -- '-C 1-0: not a list of CPUs' "$o/x.err"; then ok "record -C: a bad list is named"
	else bad "record -C 1-0: exit $rc: $(head -2 "$o/x.err")"; fi
}

record_host_suite() {
	local o="$WORK/out/record" wl rc line n
	mkdir -p "$o"
	wl="$o/recwl"
	if ! record_workload_src | cc -O2 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -x c -o "$wl" - 2>"$o/cc.err"; then
		echo "SKIPPED record: cannot build the test workload: $(head -2 "$o/cc.err")"; return
	fi
	if ! "$DSTACK" record -e cpu-clock -o "$o/probe.data" -- true >/dev/null 2>"$o/probe.err" &&
	   grep -q perf_event_paranoid "$o/probe.err"; then
		echo "SKIPPED record: *** no permission to open perf events here: $(head -1 "$o/probe.err") ***"; return
	fi

	# -g: full user stacks, the same in perf 6.1's and dstack's reading
	"$DSTACK" record -g -o "$o/g.data" -- "$wl" 50 >/dev/null 2>"$o/g.err"; rc=$?
	if [ $rc -eq 0 ] && grep -q '^\[ perf record: Captured and wrote .* MB .*g.data ([0-9]* samples) \]$' "$o/g.err"
	then ok "record -g: exit 0, perf's summary line"
	else bad "record -g: exit $rc: $(tail -3 "$o/g.err")"; fi
	"$DSTACK" script -i "$o/g.data" >"$o/g.dscript" 2>"$o/g.dscript.err"
	record_stacks "$o/g.dscript" >"$o/g.dstacks"
	# a frame-pointer walk from leaf()'s first instruction (before its push
	# of %rbp) or its ret (after the pop) skips its caller: leaf;top;main,
	# in perf's reading too (compared below); rare, and it still reaches main
	n=$(grep -c '^leaf;middle;top;main$' "$o/g.dstacks")
	local all edge
	all=$(wc -l <"$o/g.dstacks")
	edge=$(grep -c '^leaf;top;main$' "$o/g.dstacks")
	if [ "$n" -gt 20 ] && [ $((n + edge)) = "$all" ] && [ $((edge * 100)) -le "$all" ]
	then ok "record -g: dstack script shows $all samples in leaf(), $n with leaf;middle;top;main, $edge at leaf's entry or exit (leaf;top;main)"
	else bad "record -g: $n of $all leaf() samples have the full user stack, $edge leaf;top;main (dstack script): $(grep -v '^leaf;middle;top;main$' "$o/g.dstacks" | sort | uniq -c | head -3 | tr '\n' ' ')"; fi
	if [ -x /usr/bin/perf ]; then
		/usr/bin/perf script -i "$o/g.data" >"$o/g.pscript" 2>"$o/g.pscript.err"
		record_stacks "$o/g.pscript" >"$o/g.pstacks"
		if [ -s "$o/g.pstacks" ] && cmp -s "$o/g.pstacks" "$o/g.dstacks"
		then ok "record -g: perf $(/usr/bin/perf --version | awk '{print $3}') script reads the file, same $(wc -l <"$o/g.pstacks") workload stacks as dstack script"
		else bad "record -g: perf script and dstack script differ: $(diff "$o/g.pstacks" "$o/g.dstacks" | head -3; tail -2 "$o/g.pscript.err")"; fi
	else
		echo "SKIPPED record: no /usr/bin/perf to cross-check"
	fi
	"$DSTACK" stat -i "$o/g.data" >"$o/g.stat" 2>&1
	if grep -q '^records.FINISHED_ROUND' "$o/g.stat" && grep -q '^records.COMM' "$o/g.stat" &&
	   grep -q '^records.MMAP2' "$o/g.stat" && grep -q '^records.bad  *0$' "$o/g.stat"
	then ok "record -g: COMM, MMAP2, FINISHED_ROUND records, none bad"
	else bad "record -g: stat: $(grep -E '^records' "$o/g.stat" | tr '\n' ' ')"; fi

	# --call-graph fp,defer: deferred on 6.19+, else one line saying why
	"$DSTACK" record --call-graph fp,defer -o "$o/defer.data" -- "$wl" 10 >/dev/null 2>"$o/defer.err"; rc=$?
	n=$(grep -c 'does not support deferred callchains' "$o/defer.err")
	if "$DSTACK" stat -i "$o/defer.data" | grep -q 'defer_callchain'; then
		if [ "$n" = 0 ] && [ $rc -eq 0 ]; then ok "record fp,defer: deferred callchains on this kernel"
		else bad "record fp,defer: deferred but said: $(head -2 "$o/defer.err")"; fi
	elif [ $rc -eq 0 ] && [ "$n" = 1 ] && grep 'does not support' "$o/defer.err" | grep -q "($(uname -r))"; then
		ok "record fp,defer: falls back on $(uname -r) with one line"
	else
		bad "record fp,defer: exit $rc, $n explanation lines: $(head -3 "$o/defer.err")"
	fi

	# errors: command not found (127), unknown event, bad options
	"$DSTACK" record -o "$o/x.data" -- "$o/no-such-command" >/dev/null 2>"$o/x.err"; rc=$?
	if [ $rc -eq 127 ] && grep -q 'no-such-command' "$o/x.err"; then ok "record: command not found exits 127"
	else bad "record: command not found: exit $rc: $(head -2 "$o/x.err")"; fi
	"$DSTACK" record -e no-such-event -o "$o/x.data" -- true >/dev/null 2>"$o/x.err"; rc=$?
	if [ $rc -ne 0 ] && grep -q "unknown event 'no-such-event'" "$o/x.err"; then ok "record: unknown event named"
	else bad "record: unknown event: exit $rc: $(head -2 "$o/x.err")"; fi
	"$DSTACK" record -c 10 -F 99 -- true >/dev/null 2>&1; rc=$?
	if [ $rc -eq 2 ]; then ok "record: -c with -F is a usage error"; else bad "record: -c -F exit $rc"; fi

	# no permission: an unprivileged user, -a, perf_event_paranoid >= 1
	line=$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null)
	if [ "$(id -u)" = 0 ] && [ "${line:-0}" -ge 1 ] && command -v setpriv >/dev/null; then
		setpriv --reuid=65534 --regid=65534 --clear-groups "$DSTACK" record -a -o /dev/null -- true >/dev/null 2>"$o/perm.err"; rc=$?
		if [ $rc -ne 0 ] && grep -q "perf_event_paranoid is $line" "$o/perm.err"; then ok "record: no permission names perf_event_paranoid ($line)"
		else bad "record: no permission: exit $rc: $(head -2 "$o/perm.err")"; fi
	else
		echo "SKIPPED record: permission error test needs root, perf_event_paranoid >= 1 and setpriv"
	fi

	# Ctrl-C leaves a valid file; -o - writes pipe mode
	"$DSTACK" record -g -o "$o/int.data" -- "$wl" 100000 >/dev/null 2>"$o/int.err" &
	local p=$!
	sleep 1
	kill -INT $p
	wait $p; rc=$?
	"$DSTACK" stat -i "$o/int.data" >"$o/int.stat" 2>&1
	n=$(awk '$1 == "samples" { print $2 }' "$o/int.stat")
	if [ $rc -eq 0 ] && [ "${n:-0}" -gt 0 ] && grep -q '^records.bad  *0$' "$o/int.stat"
	then ok "record: SIGINT stops with a valid file ($n samples)"
	else bad "record: SIGINT: exit $rc, stat: $(head -3 "$o/int.stat")"; fi
	record_faults "$o" "$wl"
	record_options "$o" "$wl"
	"$DSTACK" record -g -o - -- "$wl" 20 2>"$o/pipe.err" | "$DSTACK" stat -i - >"$o/pipe.stat" 2>&1
	n=$(awk '$1 == "samples" { print $2 }' "$o/pipe.stat")
	if grep -q '^file.mode  *pipe$' "$o/pipe.stat" && [ "${n:-0}" -gt 0 ]
	then ok "record -o -: pipe mode, $n samples read back from stdin"
	else bad "record -o -: $(head -3 "$o/pipe.stat") $(head -2 "$o/pipe.err")"; fi
}

# In the guest: dstack record vs perf record 7.x on the corpus workloads.
record_guest_suite() {
	local job="$WORK/out/record-vm/job" out="$WORK/out/record-vm/out"
	if [ -n "${DSTACK_NO_VM:-}" ]; then
		echo "SKIPPED record (guest): *** DSTACK_NO_VM=${DSTACK_NO_VM} ***"; return
	fi
	if ! kvm_ready; then
		echo "SKIPPED record (guest): *** no kernel-vm at $KVM_DIR (not set up): deferred recording untested ***"; return
	fi
	rm -rf "$job" "$out"; mkdir -p "$job" "$out"
	cp "$ROOT/tests/vm/record-job.sh" "$job/run.sh"
	cp "$ROOT/tests/lib/perfconfig" "$DSTACK" "$job/"
	if ! cc -O2 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -o "$job/wl" "$ROOT/tests/corpus/wl.c" -lpthread 2>"$out.cc.err"; then
		bad "record (guest): cannot build wl: $(head -2 "$out.cc.err")"; return
	fi
	if ! kvm_run_job 500 "$job" "$out" "$out.log"; then
		bad "record (guest): the guest job failed: $(tail -3 "$out.log")"; return
	fi
	python3 "$ROOT/tests/vm/record-check.py" "$out" "$DSTACK" >"$out.check" 2>&1
	while IFS= read -r line; do
		case $line in
		"ok "*) ok "record (guest): ${line#ok }" ;;
		"bad "*) bad "record (guest): ${line#bad }" ;;
		*) echo "$line" ;;
		esac
	done <"$out.check"
}

record_host_suite
record_guest_suite
