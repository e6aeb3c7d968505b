# shellcheck shell=bash
# The guest tools (../shared/kernel-vm beside the checkout, as the README
# says), found in one place for the tests and the bench.  Source it with
# ROOT set to the checkout.
#   DSTACK_KERNEL_VM  another kernel-vm directory
#   KVM_CACHE         the guest's cache, as the kernel-vm scripts read it
KVM_DIR=${DSTACK_KERNEL_VM:-$(cd "$ROOT/.." && pwd)/shared/kernel-vm}
KVM_RUN=${KVM_RUN:-$KVM_DIR/run}
# perf 7.2 on the host, through tests/lib/perf7 (its configuration)
export KVM_PERF7_REAL=$KVM_DIR/perf7
KVM_PERF7=$(cd "$ROOT" && pwd)/tests/lib/perf7
KVM_SIDCC=$KVM_DIR/sid-cc

# kvm_ready: the guest is prepared (the kernel-vm's setup wrote its ready
# mark, the one its run script checks) and its scripts are there.
kvm_ready() {
	[ -x "$KVM_RUN" ] && [ -x "$KVM_PERF7_REAL" ] && [ -f "${KVM_CACHE:-/var/tmp/kernel-vm}/ready" ]
}

# kvm_run_job SECONDS JOB OUT LOG: JOB run in the guest (niced), what it
# wrote in OUT, run's own messages in LOG.  TCG emulation now and then
# trips the guest kernel's own text patching (an int3 oops, at boot or in
# perf_event_open's static-key enabling): the emulated kernel's panic, not
# a result.  Then the job runs again, up to twice, after a note with the
# kernel's words (the tracepoint job, which enables many static keys, met
# two panics in a row once in ten CI runs).  Status: the last run's (0:
# the job ran and exited 0).
kvm_run_job() {
	local secs=$1 job=$2 out=$3 log=$4 tries=0
	while ! nice "$KVM_RUN" -t "$secs" "$job" "$out" >"$log" 2>&1; do
		grep -aq "Kernel panic" "$out/console.log" 2>/dev/null && [ $tries -lt 2 ] || return 1
		tries=$((tries + 1))
		echo "note: the guest kernel panicked ($(grep -a -m1 -o -E '(Oops|BUG): [^[]*' "$out/console.log")$(grep -a -m1 -o 'RIP: [^ ]*' "$out/console.log")); running the guest job again"
		rm -rf "$out"; mkdir -p "$out"
	done
}
