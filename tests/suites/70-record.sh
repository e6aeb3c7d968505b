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

record_host_suite() {
	local o="$WORK/out/record" wl rc line n
	mkdir -p "$o"
	wl="$o/recwl"
	if ! record_workload_src | cc -O2 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -x c -o "$wl" - 2>"$o/cc.err"; then
		echo "SKIPPED record: cannot build the test workload: $(head -2 "$o/cc.err")"; return
	fi
	if "$DSTACK" record -o "$o/probe.data" -- true 2>&1 | grep -q "no perf.data writer"; then
		echo "SKIPPED record: *** this build has no lib/writer.c yet: dstack record cannot write files ***"; return
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
	n=$(grep -c '^leaf;middle;top;main$' "$o/g.dstacks")
	if [ "$n" -gt 20 ] && [ "$n" = "$(wc -l <"$o/g.dstacks")" ]
	then ok "record -g: dstack script shows $n samples in leaf(), every one with leaf;middle;top;main"
	else bad "record -g: $n of $(wc -l <"$o/g.dstacks") leaf() samples have the full user stack (dstack script)"; fi
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
	"$DSTACK" record -g -o - -- "$wl" 20 2>"$o/pipe.err" | "$DSTACK" stat -i - >"$o/pipe.stat" 2>&1
	n=$(awk '$1 == "samples" { print $2 }' "$o/pipe.stat")
	if grep -q '^file.mode  *pipe$' "$o/pipe.stat" && [ "${n:-0}" -gt 0 ]
	then ok "record -o -: pipe mode, $n samples read back from stdin"
	else bad "record -o -: $(head -3 "$o/pipe.stat") $(head -2 "$o/pipe.err")"; fi
}

# In the guest: dstack record vs perf record 7.x on the corpus workloads.
record_guest_suite() {
	local kvm=${KVM_RUN:-/work/shared/kernel-vm/run} job="$WORK/out/record-vm/job" out="$WORK/out/record-vm/out"
	if [ -n "${DSTACK_NO_VM:-}" ]; then
		echo "SKIPPED record (guest): *** DSTACK_NO_VM is set ***"; return
	fi
	if [ ! -e /var/tmp/kernel-vm/ready ] || [ ! -x "$kvm" ]; then
		echo "SKIPPED record (guest): *** no kernel-vm (/var/tmp/kernel-vm/ready): deferred recording untested ***"; return
	fi
	rm -rf "$job" "$out"; mkdir -p "$job" "$out"
	cp "$ROOT/tests/vm/record-job.sh" "$job/run.sh"
	cp "$DSTACK" "$job/dstack"
	if ! cc -O2 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -o "$job/wl" "$ROOT/tests/corpus/wl.c" -lpthread 2>"$out.cc.err"; then
		bad "record (guest): cannot build wl: $(head -2 "$out.cc.err")"; return
	fi
	if ! nice "$kvm" -t 500 "$job" "$out" >"$out.log" 2>&1; then
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
