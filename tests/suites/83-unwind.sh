# Unwinding stack snapshots (--call-graph dwarf): workloads built without
# frame pointers by real toolchains (sid's gcc 16/binutils 2.47, trixie's
# binutils 2.44), recorded by perf 7.2 in the kernel-vm guest (one boot);
# dstack's stacks against perf 7.2's sample for sample, and SFrame-only
# copies unwound to _start (tests/vm/unwind/check.py says what is checked).
# The ASan pass checks the same recordings again, without a second boot.

unwind_suite() {
	local d="$WORK/out/unwind" job out symfs libs lib
	job=$d/job out=$d/out symfs=$d/symfs
	if [ -n "${DSTACK_NO_VM:-}" ]; then
		if [ -s "$out/c.data" ] && [ -d "$symfs" ]; then
			unwind_check "$out" "$symfs"
		else
			echo "SKIPPED unwind (guest): *** DSTACK_NO_VM=${DSTACK_NO_VM}, no recordings from a release pass ***"
		fi
		return
	fi
	if ! kvm_ready || [ ! -x "$KVM_SIDCC" ]; then
		echo "SKIPPED unwind (guest): *** no kernel-vm at $KVM_DIR (not set up): dwarf-mode unwinding untested against perf 7.2 ***"
		return
	fi
	rm -rf "$d"; mkdir -p "$job" "$out" "$symfs/job"
	if ! DSTACK=$DSTACK "$ROOT/tests/vm/unwind/build.sh" "$KVM_SIDCC" "$job" >"$d/build.log" 2>&1; then
		bad "unwind: cannot build the workloads: $(tail -3 "$d/build.log")"; return
	fi
	if ! kvm_run_job 600 "$job" "$out" "$d/run.log"; then
		bad "unwind (guest): the guest job failed: $(tail -3 "$d/run.log")"; return
	fi
	if grep -v ' rc 0$' "$out/rc" >/dev/null 2>&1 || [ ! -s "$out/rc" ]; then
		bad "unwind (guest): a recording failed: $(grep -v ' rc 0$' "$out/rc" | head -3)"; return
	fi
	# the guest's binaries where the recordings name them
	cp "$job"/uw "$job"/uwxx "$job"/uw32 "$job"/bc32 "$job"/bc64 "$job"/vd "$job"/vd32 "$job"/sf2 "$job"/sf2x "$job"/sf3 "$job"/sf3x "$job"/wl "$symfs/job/"
	libs=${KVM_CACHE:-/var/tmp/kernel-vm}/root/usr/lib/x86_64-linux-gnu
	mkdir -p "$symfs/usr/lib/x86_64-linux-gnu"
	for lib in libc.so.6 ld-linux-x86-64.so.2 libstdc++.so.6 libgcc_s.so.1 libm.so.6; do
		cp -L "$libs/$lib" "$symfs/usr/lib/x86_64-linux-gnu/" 2>/dev/null
	done
	cp -L "$libs/libstdc++.so.6" "$symfs/usr/lib/x86_64-linux-gnu/$(readlink "$libs/libstdc++.so.6")" 2>/dev/null
	unwind_check "$out" "$symfs"
}

unwind_check() {
	local out=$1 symfs=$2 line
	python3 "$ROOT/tests/vm/unwind/check.py" "$out" "$symfs" "$DSTACK" "$KVM_PERF7" >"$out.check" 2>&1
	while IFS= read -r line; do
		case $line in
		"ok "*) ok "unwind: ${line#ok }" ;;
		"bad "*) bad "unwind: ${line#bad }" ;;
		*) echo "$line" ;;
		esac
	done <"$out.check"
	grep -qE '^(ok|bad) ' "$out.check" || bad "unwind: the checks printed nothing: $(tail -3 "$out.check")"
}

# On this host's kernel (no deferral needed): dstack record --call-graph
# dwarf of a workload built here without frame pointers; perf 6.1 reads
# the file, and dstack unwinds every sample in the workload to main.
unwind_host() {
	local d="$WORK/out/unwind-host" n
	rm -rf "$d"; mkdir -p "$d"
	if ! cc -O2 -g -fomit-frame-pointer -o "$d/sf" "$ROOT/tests/vm/unwind/sf.c" 2>"$d/cc.err"; then
		echo "SKIPPED unwind (host): cannot build the workload: $(head -1 "$d/cc.err")"; return
	fi
	if ! "$DSTACK" record -e cpu-clock -c 200000 --call-graph dwarf,8192 --user-regs ip,sp,bp,bx \
		-o "$d/r.data" -- "$d/sf" 30 >"$d/rec.out" 2>"$d/rec.err"; then
		if grep -qi "permission\|paranoid\|not permitted" "$d/rec.err"; then
			echo "SKIPPED unwind (host): *** no permission to open perf events here: $(head -1 "$d/rec.err") ***"
		else
			bad "unwind (host): record --call-graph dwarf failed: $(tail -2 "$d/rec.err")"
		fi
		return
	fi
	"$DSTACK" script -i "$d/r.data" >"$d/r.script" 2>"$d/r.err"
	n=$(python3 - "$d/r.script" <<'PY'
import sys
n = ok = 0
head, frames = None, []
def done():
    global n, ok
    names = [f.split()[1].split("+")[0] for f in frames if "(" in f and "/sf)" in f]
    if names and names[0] != "_start":
        n += 1
        ok += "main" in names
for line in open(sys.argv[1]).read().split("\n") + [""]:
    if not line:
        if head: done()
        head, frames = None, []
    elif not line[0].isspace():
        head = line
    else:
        frames.append(line.strip())
print(n, ok)
PY
)
	set -- $n
	if [ "${1:-0}" -ge 20 ] && [ "$2" -ge $(( $1 * 99 / 100 )) ]; then
		ok "unwind (host): record --call-graph dwarf,8192 --user-regs ip,sp,bp,bx: $2/$1 samples in the workload unwind to main"
	else
		bad "unwind (host): ${2:-0}/${1:-0} samples in the workload reach main ($(head -2 "$d/r.err"))"
	fi
	if [ -x /usr/bin/perf ]; then
		if /usr/bin/perf script -i "$d/r.data" >"$d/p61.script" 2>"$d/p61.err" &&
		   [ "$(grep -c cpu-clock "$d/p61.script")" = "$(grep -c cpu-clock "$d/r.script")" ]; then
			ok "unwind (host): perf 6.1 reads dstack's dwarf-mode file ($(grep -c cpu-clock "$d/p61.script") samples)"
		else
			bad "unwind (host): perf 6.1 on dstack's dwarf-mode file: $(tail -1 "$d/p61.err")"
		fi
	fi
}

# The vDSO lies in no file: dstack record keeps its image in perf's build-id
# cache ($PERF_BUILDID_DIR) and names it in the header; with it, walks from
# clock_gettime go through the vDSO to the outermost frame.  Without the
# cache, read on the kernel that recorded, this process's own image is the
# one the header names, and serves (perf takes its own too).  A header
# naming an image neither has (its build-id altered in a copy): the walks
# stop at the vDSO and say so.
unwind_vdso() {
	local d="$WORK/out/unwind-vdso" with own other bid
	rm -rf "$d"; mkdir -p "$d"
	if ! cc -O2 -g -fomit-frame-pointer -o "$d/vd" "$ROOT/tests/vm/unwind/vdso.c" 2>"$d/cc.err"; then
		echo "SKIPPED unwind (vDSO): cannot build the workload: $(head -1 "$d/cc.err")"; return
	fi
	if ! PERF_BUILDID_DIR="$d/cache" "$DSTACK" record -e cpu-clock -c 200000 --call-graph dwarf \
		-o "$d/r.data" -- "$d/vd" >"$d/rec.out" 2>"$d/rec.err"; then
		echo "SKIPPED unwind (vDSO): *** cannot record here: $(tail -1 "$d/rec.err") ***"; return
	fi
	vdso_ends() {
		PERF_BUILDID_DIR="$1" "$DSTACK" stat -i "$2" |
			awk '$1 == "unwind.samples" {n = $2} $1 == "unwind.end.outermost" {o = $2} $1 == "unwind.end.no-vdso" {v = $2} END {print n + 0, o + 0, v + 0}'
	}
	with=$(vdso_ends "$d/cache" "$d/r.data")
	own=$(vdso_ends "$d/none" "$d/r.data")
	bid=$(ls "$d"/cache/\[vdso\]/ 2>/dev/null | head -1)
	python3 - "$d/r.data" "$d/other.data" "$bid" <<'PY'
import sys
data, bid = open(sys.argv[1], "rb").read(), bytes.fromhex(sys.argv[3])
assert bid and data.count(bid) == 1, "the vDSO's build-id once in the file"
open(sys.argv[2], "wb").write(data.replace(bid, bytes(b ^ 0xff for b in bid)))
PY
	other=$(vdso_ends "$d/cache" "$d/other.data")
	set -- $with $own $other
	if [ -n "$bid" ] && [ "$1" -ge 20 ] && [ "$3" -eq 0 ] && [ "$2" -ge $(( $1 * 99 / 100 )) ] &&
	   [ "$5" = "$2" ] && [ "$6" -eq 0 ] && [ "$9" -ge $(( $1 / 2 )) ]; then
		ok "unwind (vDSO): the image kept in the build-id cache: $2/$1 samples unwound to the outermost frame; without the cache, this kernel's own image: $5; a header naming another image: $9 stop at the vDSO (no-vdso)"
	else
		bad "unwind (vDSO): samples/outermost/no-vdso with the image: $with; own image: $own; another image named: $other ($(tail -1 "$d/rec.err"))"
	fi
}

unwind_host
unwind_vdso
unwind_suite
