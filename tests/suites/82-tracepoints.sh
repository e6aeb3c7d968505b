# Tracepoint events (issue 22): perf 7.2 records in the Linux 7.2 guest
# (tests/vm/trace-job.sh, one boot): sched_switch/sched_wakeup with deferred
# and classic callchains on workloads with known waits (tests/vm/offcpu-wl.c),
# raw_syscalls, syscalls openat, irq, timer, kmem, block, sched:* system wide,
# and pipe mode; `dstack script` must print what perf 7.2's script prints for
# the same files, sample for sample (tests/vm/trace-check.py says how the
# two are compared).  `dstack folded --off-cpu` on the known waits must give
# the time the workload measured itself, within 5%, on stitched stacks; the
# records and bytes a switch costs, deferred against classic, are printed.

trace_guest_suite() {
	local job="$WORK/out/trace-vm/job" out="$WORK/out/trace-vm/out" f n
	if [ -n "${DSTACK_NO_VM:-}" ]; then
		echo "SKIPPED tracepoints (guest): *** DSTACK_NO_VM=${DSTACK_NO_VM} ***"; return
	fi
	if ! kvm_ready; then
		echo "SKIPPED tracepoints (guest): *** no kernel-vm at $KVM_DIR (not set up): tracepoint output untested ***"; return
	fi
	rm -rf "$job" "$out"; mkdir -p "$job" "$out"
	cp "$ROOT/tests/vm/trace-job.sh" "$job/run.sh"
	cp "$DSTACK" "$job/dstack"
	if ! cc -O2 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -o "$job/owl" "$ROOT/tests/vm/offcpu-wl.c" -lpthread 2>"$out.cc.err"; then
		bad "tracepoints (guest): cannot build the workload: $(head -2 "$out.cc.err")"; return
	fi
	if ! kvm_run_job 500 "$job" "$out" "$out.log"; then
		bad "tracepoints (guest): the guest job failed: $(tail -3 "$out.log")"; return
	fi
	if grep -qv ' rc 0$' "$out/rcs"; then
		bad "tracepoints (guest): a recording failed: $(grep -v ' rc 0$' "$out/rcs" | tr '\n' ' ')"
	fi
	mkdir -p "$out/symfs/job" "$out/symfs/usr/lib/x86_64-linux-gnu" && cp "$job/owl" "$out/symfs/job/owl"
	# the guest's own libc and ld.so: what perf 7.2 reads from its root anyway, and
	# what a file without build-ids (dstack record -p) must not be resolved against the host's
	cp "${KVM_CACHE:-/var/tmp/kernel-vm}/root/usr/lib/x86_64-linux-gnu/libc.so.6" \
	   "${KVM_CACHE:-/var/tmp/kernel-vm}/root/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2" \
	   "$out/symfs/usr/lib/x86_64-linux-gnu/" 2>/dev/null ||
		echo "note: the guest's libc is not at ${KVM_CACHE:-/var/tmp/kernel-vm}/root: libc frames may differ"
	for f in "$out"/*.data; do
		n=$(basename "$f" .data)
		(cd "$out" && "$KVM_PERF7" script -i "$n.data" --kallsyms kallsyms --symfs symfs >"$n.perf7" 2>"$n.perf7.err")
		if ! "$DSTACK" script -i "$f" --kallsyms "$out/kallsyms" --symfs "$out/symfs" >"$out/$n.ds" 2>"$out/$n.ds.err"; then
			bad "tracepoints (guest): dstack script $n failed: $(tail -2 "$out/$n.ds.err")"
		fi
	done
	# the pipe-mode stream through a real pipe (the tracing data follows its record)
	if "$DSTACK" script -i - --kallsyms "$out/kallsyms" --symfs "$out/symfs" <"$out/pipemode.data" >"$out/pipemode.stdin" 2>/dev/null &&
	   [ -s "$out/pipemode.stdin" ] && cmp -s "$out/pipemode.stdin" "$out/pipemode.ds"; then
		ok "tracepoints (guest): pipe mode read from stdin prints what the file does ($(grep -c ': sched:' "$out/pipemode.stdin") samples)"
	else
		bad "tracepoints (guest): pipe mode read from stdin differs from the file's output"
	fi
	# tracepoints with deferred callchains, system wide: perf 7.2's rules, sample for sample
	(cd "$out" && "$KVM_PERF7" script --no-merge-callchains -i tpw.data --kallsyms kallsyms --symfs symfs >tpw.perf7.nomerge 2>/dev/null)
	"$DSTACK" script --no-merge-callchains -i "$out/tpw.data" --kallsyms "$out/kallsyms" --symfs "$out/symfs" >"$out/tpw.ds.nomerge" 2>/dev/null
	if ! grep -A1 'DEFERRED CALLCHAIN' "$out/tpw.perf7.nomerge" | grep -qx ''; then
		bad "tracepoints (guest): tpw: perf printed no deferred record with empty frames (the shape this checks)"
	elif res=$(python3 "$ROOT/tests/check_script.py" "$out/tpw.perf7" "$out/tpw.perf7.nomerge" "$out/tpw.ds" "$out/tpw.ds.nomerge"); then
		ok "tracepoints (guest): tpw (sched_switch and sys_enter_write, deferred, -a): $res"
	else
		bad "tracepoints (guest): tpw: $res"
	fi
	want=$(python3 "$ROOT/tests/check_script.py" --unresolved "$out/tpw.perf7.nomerge")
	got=$("$DSTACK" stat -i "$out/tpw.data" 2>/dev/null | awk '$1 == "unresolved" {print $2}')
	if [ -n "$want" ] && [ "${got:-x}" = "$want" ]; then
		ok "tracepoints (guest): tpw: stat's unresolved $got = the samples whose record is not in the file"
	else
		bad "tracepoints (guest): tpw: stat's unresolved ${got:-?}, expected ${want:-?}"
	fi
	# off-CPU time of the known waits, and what a switch costs in the file
	for n in sleep pipe mutex hog dsleep dsleepfp dall dpid; do
		"$DSTACK" folded --off-cpu -i "$out/$n.data" --kallsyms "$out/kallsyms" --symfs "$out/symfs" \
			>"$out/$n.offcpu" 2>"$out/$n.offcpu.err" || bad "tracepoints (guest): folded --off-cpu $n failed: $(tail -2 "$out/$n.offcpu.err")"
	done
	for n in sleep sleepfp dsleep dsleepfp; do
		"$DSTACK" dump -i "$out/$n.data" >"$out/$n.dump" 2>/dev/null
	done
	python3 "$ROOT/tests/vm/trace-check.py" "$out" sleep sleepfp pipe mutex hog rawsys openat irq timer kmem schedall kfuncs \
		'block?' 'pipemode+' dsleep dsleepfp dall dpid --offcpu >"$out.check" 2>&1
	while IFS= read -r line; do
		case $line in
		"ok "*) ok "tracepoints (guest): ${line#ok }" ;;
		"bad "*) bad "tracepoints (guest): ${line#bad }" ;;
		*) echo "$line" ;;
		esac
	done <"$out.check"
}

trace_guest_suite
