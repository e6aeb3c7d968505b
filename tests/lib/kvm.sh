# shellcheck shell=bash
# The guest tools (../shared/kernel-vm beside the checkout, as the README
# says), found in one place for the tests and the bench.  Source it with
# ROOT set to the checkout.
#   DSTACK_KERNEL_VM  another kernel-vm directory
#   KVM_CACHE         the guest's cache, as the kernel-vm scripts read it
KVM_DIR=${DSTACK_KERNEL_VM:-$(cd "$ROOT/.." && pwd)/shared/kernel-vm}
KVM_RUN=${KVM_RUN:-$KVM_DIR/run}
KVM_PERF7=$KVM_DIR/perf7
KVM_SIDCC=$KVM_DIR/sid-cc

# kvm_ready: the guest is prepared (the kernel-vm's setup wrote its ready
# mark, the one its run script checks) and its scripts are there.
kvm_ready() {
	[ -x "$KVM_RUN" ] && [ -x "$KVM_PERF7" ] && [ -f "${KVM_CACHE:-/var/tmp/kernel-vm}/ready" ]
}
