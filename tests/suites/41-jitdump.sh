# JIT code from jitdump files, read directly (no inject step), and dstack
# inject --jit, against perf 7.2's perf inject --jit, on recordings made
# fresh every run:
#  - node --perf-prof recorded on this machine (its perf, -k mono -g): node
#    writes jit-PID.dump in its working directory, here a directory under
#    /tmp that perf7's chroot sees through a link in the guest root's /tmp;
#  - CPython 3.14 -X perf_jit recorded in the guest (its perf, -k mono
#    --call-graph dwarf): the dump is /tmp/jit-PID.dump there, copied to
#    the guest root's /tmp for perf7 (and removed after) and to a symfs of
#    our own for dstack; and that dump rewritten with TSC timestamps, which
#    perf and dstack convert with the recording's TIME_CONV.
# Checked: dstack script on the raw file prints what perf 7.2 script prints
# on perf inject --jit's file (every line; a vDSO frame perf7's chroot
# cannot name aside), so does dstack on perf's injected file, perf 7.2
# reads dstack inject --jit's file the same way, and damaged dumps (cut inside a record, a record size past the end,
# code outside any process's addresses, the other byte order) give one line
# naming the file and the offset and keep every sample and address.
# node's frames are compared without inline expansion (perf's addr2line
# takes minutes over node's DWARF; the JIT frames are the point here).
# The ASan pass reads the same recordings again (no guest, no recording).

jitdump_suite() {
	local o="$WORK/out/jitdump" groot=${KVM_CACHE:-/var/tmp/kernel-vm}/root
	local tag nd
	tag=$(printf '%s' "$ROOT" | cksum | cut -d' ' -f1)
	nd=/tmp/dstack-jitdump-$(id -u)-$tag
	if [ -n "${DSTACK_NO_VM:-}" ]; then
		if [ -s "$o/node/ds.txt" ] && [ -s "$nd/node.data" ]; then
			jitdump_node_checks "$o/node" "$nd" "asan: "
			[ -s "$o/py/ds.txt" ] && jitdump_py_raw "$o/py" "asan: "
		else
			echo "SKIPPED jitdump: *** DSTACK_NO_VM=${DSTACK_NO_VM}, no recordings from a release pass ***"
		fi
		return
	fi
	rm -rf "$o"; mkdir -p "$o/node" "$o/py"
	jitdump_node "$o/node" "$nd" "$groot"
	jitdump_py "$o/py" "$groot"
}

# node on this machine: perf7 inject --jit and script against dstack script of the raw file
jitdump_node() {
	local o=$1 nd=$2 groot=$3 link
	if ! command -v node >/dev/null || ! command -v perf >/dev/null; then
		echo "SKIPPED jitdump node: *** no node or perf on this machine ***"; return
	fi
	rm -rf "$nd"; mkdir -p "$nd"
	cat >"$nd/work.js" <<'JS'
function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
function mul(a, b) { let s = 0; for (let i = 0; i < a.length; i++) s += a[i] * b[i % b.length]; return s; }
let arr = []; for (let i = 0; i < 1000; i++) arr.push(i * 1.5);
let t = Date.now(), acc = 0;
while (Date.now() - t < 1000) { acc += fib(18); acc += mul(arr, [1, 2, 3]); }
console.log(acc > 0);
JS
	if ! (cd "$nd" && perf record -q -k mono -g -o node.data node --perf-prof --interpreted-frames-native-stack work.js) \
		>"$o/record.log" 2>&1 || ! ls "$nd"/jit-*.dump >/dev/null 2>&1; then
		bad "jitdump node: perf record of node --perf-prof failed: $(tail -3 "$o/record.log")"; return
	fi
	cp /proc/kallsyms "$nd/kallsyms"
	"$DSTACK" script --no-inline --kallsyms "$nd/kallsyms" -i "$nd/node.data" >"$o/ds.txt" 2>"$o/ds.err"
	if ! kvm_ready; then
		echo "SKIPPED jitdump node against perf 7.2: *** no kernel-vm at $KVM_DIR: its perf7 missing ***"
	else
		link=$groot/tmp/${nd##*/}
		ln -sfn "/host$nd" "$link"
		(cd "$nd" && "$KVM_PERF7" inject --jit -i node.data -o node.p7inj.data) >"$o/p7inject.log" 2>&1
		(cd "$nd" && "$KVM_PERF7" script --no-inline --symfs /host --kallsyms kallsyms -i node.p7inj.data) >"$o/p7.txt" 2>"$o/p7.err"
		if jitdump_same "node: dstack script of the raw file vs perf 7.2 script of perf inject --jit's" "$o/p7.txt" "$o/ds.txt"; then
			"$DSTACK" script --no-inline --kallsyms "$nd/kallsyms" -i "$nd/node.p7inj.data" >"$o/dsp7.txt" 2>"$o/dsp7.err"
			jitdump_same "node: dstack script of perf inject --jit's file (perf's jitted files) vs perf 7.2's" \
				"$o/p7.txt" "$o/dsp7.txt"
			# the report's keys: the DSO is the jitted file's, the symbol the dump's
			(cd "$nd" && "$KVM_PERF7" report --stdio --no-children --sort dso,sym -g none --symfs /host \
				--kallsyms kallsyms -i node.p7inj.data) 2>/dev/null | grep -v '^#' | grep . >"$o/p7.report"
			"$DSTACK" report --stdio --no-children --sort dso,sym -g none --kallsyms "$nd/kallsyms" \
				-i "$nd/node.data" 2>/dev/null | grep -v '^#' | grep . >"$o/ds.report"
			# (the JIT code's entries: the others are suite 80's, and perf7 names no vDSO symbol)
			grep ' jitted-' "$o/p7.report" >"$o/p7.report.jit"
			grep ' jitted-' "$o/ds.report" >"$o/ds.report.jit"
			if [ -s "$o/ds.report.jit" ] && cmp -s "$o/p7.report.jit" "$o/ds.report.jit"; then
				ok "jitdump node: report --sort dso,sym of the raw file: its $(wc -l <"$o/ds.report.jit") entries of JIT code as perf 7.2's of perf inject --jit's (same order, same shares)"
			else
				bad "jitdump node: report --sort dso,sym's JIT entries differ from perf 7.2's: $(diff "$o/p7.report.jit" "$o/ds.report.jit" | head -6)"
			fi
			jitdump_node_srcline "$o" "$nd"
			rm -f "$nd"/jitted-*.so
			if "$DSTACK" inject --jit -i "$nd/node.data" -o "$nd/node.dsinj.data" 2>"$o/dsinject.err"; then
				(cd "$nd" && "$KVM_PERF7" script --no-inline --symfs /host --kallsyms kallsyms -i node.dsinj.data) >"$o/p7ds.txt" 2>"$o/p7ds.err"
				jitdump_same "node: perf 7.2 script of dstack inject --jit's file vs dstack script of the raw file" \
					"$o/p7ds.txt" "$o/ds.txt"
				jitdump_node_srcline_inject "$o" "$nd"
			else
				bad "jitdump node: dstack inject --jit failed: $(tail -3 "$o/dsinject.err")"
			fi
		fi
		rm -f "$link"
	fi
	jitdump_node_checks "$o" "$nd" ""
}

# Source lines of JIT code: perf 7.2 reads them from the .debug_line perf
# inject --jit writes of a load's debug-info record, dstack from the
# record.  The symfs holds only the dump's directory: node's own frames get
# the same "node[addr]" on both sides (perf's addr2line over node's DWARF
# would take minutes), the JIT frames their lines.
jitdump_node_srcline() {
	local o=$1 nd=$2 s=$1/jit-symfs n
	rm -rf "$s"; mkdir -p "$s${nd%/*}"
	ln -s "$nd" "$s$nd"
	(cd "$nd" && "$KVM_PERF7" script -F ip,sym,dso,srcline --no-inline --symfs "/host$s" --kallsyms kallsyms \
		-i node.p7inj.data) >"$o/p7.srcline" 2>/dev/null
	"$DSTACK" script -F ip,sym,dso,srcline --no-inline --symfs "$s" --kallsyms "$nd/kallsyms" -i "$nd/node.data" \
		>"$o/ds.srcline" 2>/dev/null
	n=$(grep -c '^ *work\.js:[1-9]' "$o/ds.srcline")
	# (a vDSO frame's name aside: perf7's chroot has no image of this kernel's vDSO)
	sed -E -i 's/^([[:space:]]+[0-9a-f]+) .* \(\[vdso\]\)$/\1 VDSO ([vdso])/' "$o/p7.srcline" "$o/ds.srcline"
	# (and the lines of loads whose debug record node wrote damaged: jitdump_check.py damaged)
	local damaged
	damaged=$(python3 "$ROOT/tests/tools/jitdump_check.py" damaged "$nd"/jit-*.dump -- "$o/p7.srcline" "$o/ds.srcline")
	if [ "$n" -gt 0 ] && [ -n "$damaged" ] && cmp -s "$o/p7.srcline" "$o/ds.srcline"; then
		ok "jitdump node: script -F +srcline of the raw file as perf 7.2's of perf inject --jit's ($(wc -l <"$o/ds.srcline") lines, $n JIT frames at a line of work.js from the dump's debug info; loads with a damaged debug record and their srcline lines left out: ${damaged})"
	else
		bad "jitdump node: srcline of JIT code differs from perf 7.2's ($n at work.js lines): $(diff "$o/p7.srcline" "$o/ds.srcline" | head -6)"
	fi
}

# perf 7.2's lines of dstack inject --jit's files (their .debug_line) as of perf inject's
jitdump_node_srcline_inject() {
	local o=$1 nd=$2 s=$1/jit-symfs
	(cd "$nd" && "$KVM_PERF7" script -F ip,sym,dso,srcline --no-inline --symfs "/host$s" --kallsyms kallsyms \
		-i node.dsinj.data) >"$o/p7ds.srcline" 2>/dev/null
	sed -E -i 's/^([[:space:]]+[0-9a-f]+) .* \(\[vdso\]\)$/\1 VDSO ([vdso])/' "$o/p7ds.srcline"
	# (p7.srcline is without the damaged loads' lines: jitdump_node_srcline)
	python3 "$ROOT/tests/tools/jitdump_check.py" damaged "$nd"/jit-*.dump -- "$o/p7ds.srcline" >/dev/null
	if [ -s "$o/p7.srcline" ] && cmp -s "$o/p7.srcline" "$o/p7ds.srcline"; then
		ok "jitdump node: perf 7.2's script -F +srcline of dstack inject --jit's file as of perf inject --jit's (the .debug_line of its jitted files)"
	else
		bad "jitdump node: perf 7.2's srcline of dstack inject --jit's file differs: $(diff "$o/p7.srcline" "$o/p7ds.srcline" | head -6)"
	fi
}

# jitdump_same WHAT REF OTHER: equal (tests/tools/jitdump_check.py same)
jitdump_same() {
	local r
	if r=$(python3 "$ROOT/tests/tools/jitdump_check.py" same "$2" "$3" 2>&1); then
		ok "jitdump $1: $r"
	else
		bad "jitdump $1: $(printf '%s' "$r" | head -8)"
	fi
}

# Damaged dumps in place of the node recording's (restored after each), read by $DSTACK.
jitdump_node_checks() {
	local o=$1 nd=$2 pre=$3 dump kind off err lines
	dump=$(ls "$nd"/jit-*.dump | head -1)
	cp "$dump" "$o/good.dump"
	if [ -n "$pre" ]; then
		"$DSTACK" script --no-inline --kallsyms "$nd/kallsyms" -i "$nd/node.data" >"$o/asan.txt" 2>"$o/asan.err"
		if cmp -s "$o/asan.txt" "$o/ds.txt"; then
			ok "jitdump ${pre}node: the raw file's output as the release build's ($(grep -c /jitted- "$o/ds.txt") JIT frames)"
		else
			bad "jitdump ${pre}node: output differs from the release build's: $(diff "$o/ds.txt" "$o/asan.txt" | head -4) $(tail -2 "$o/asan.err")"
		fi
	fi
	for kind in trunc size addr swap; do
		off=$(python3 "$ROOT/tests/tools/jitdump_check.py" mutate "$kind" "$o/good.dump" "$dump")
		"$DSTACK" script --no-inline --kallsyms "$nd/kallsyms" -i "$nd/node.data" >"$o/$kind.txt" 2>"$o/$kind.err"
		local rc=$?
		cp "$o/good.dump" "$dump"
		lines=$(grep -c jitdump "$o/$kind.err")
		if [ "$kind" = swap ]; then
			if [ $rc -eq 0 ] && cmp -s "$o/$kind.txt" "$o/ds.txt" && [ "$lines" -eq 0 ]; then
				ok "jitdump ${pre}node: the dump in the other byte order reads the same (every line)"
			else
				bad "jitdump ${pre}node: the byte-swapped dump: rc $rc, $(diff "$o/ds.txt" "$o/$kind.txt" | head -4) $(head -2 "$o/$kind.err")"
			fi
			continue
		fi
		err=$(grep jitdump "$o/$kind.err")
		if [ $rc -ne 0 ] || [ "$lines" -ne 1 ] || ! printf '%s' "$err" | grep -q "jitdump $dump: offset $off: "; then
			bad "jitdump ${pre}node: damaged dump ($kind at $off): rc $rc, want one line naming $dump and offset $off: $(head -3 "$o/$kind.err")"
		elif r=$(python3 "$ROOT/tests/tools/jitdump_check.py" kept "$o/ds.txt" "$o/$kind.txt" 2>&1); then
			ok "jitdump ${pre}node: damaged dump ($kind): \"${err#dstack: }\"; $r"
		else
			bad "jitdump ${pre}node: damaged dump ($kind): $r"
		fi
	done
	# inject --jit of a damaged dump: the line, and what could be read
	python3 "$ROOT/tests/tools/jitdump_check.py" mutate trunc "$o/good.dump" "$dump" >/dev/null
	if "$DSTACK" inject --jit -i "$nd/node.data" -o "$o/trunc.inj.data" 2>"$o/trunc.inj.err" &&
	   [ "$(grep -c "jitdump $dump: offset" "$o/trunc.inj.err")" -eq 1 ] && grep -q "code records mapped" "$o/trunc.inj.err"; then
		ok "jitdump ${pre}node: inject --jit of a damaged dump: one line, $(grep -o '[0-9]* code records' "$o/trunc.inj.err") written"
	else
		bad "jitdump ${pre}node: inject --jit of a damaged dump: $(head -3 "$o/trunc.inj.err")"
	fi
	cp "$o/good.dump" "$dump"
	rm -f "$nd"/jitted-*.so "$o/trunc.inj.data"
}

# CPython 3.14 -X perf_jit in the guest
jitdump_py() {
	local o=$1 groot=$2 job=$1/job out=$1/out dump name pid
	if ! kvm_ready; then
		echo "SKIPPED jitdump CPython (guest): *** no kernel-vm at $KVM_DIR (not set up) ***"; return
	fi
	if [ ! -x "$groot/usr/bin/python3.14" ]; then
		echo "SKIPPED jitdump CPython (guest): *** the guest has no python3.14 ***"; return
	fi
	mkdir -p "$job" "$out"
	cat >"$job/work.py" <<'PY'
import time
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
def inner(xs):
    return sum(x * x for x in xs)
def main():
    t = time.time()
    acc = 0
    while time.time() - t < 1.0:
        acc += fib(12)
        acc += inner(range(200))
    print(acc > 0)
main()
PY
	cat >"$job/run.sh" <<'SH'
#!/bin/sh
perf record -q -F 999 -k mono --call-graph dwarf -o /out/py.data python3.14 -X perf_jit /job/work.py
mkdir -p /out/tmp && cp /tmp/jit-*.dump /out/tmp/
SH
	chmod +x "$job/run.sh"
	if ! kvm_run_job 300 "$job" "$out" "$o/run.log" || [ ! -s "$out/py.data" ] || ! ls "$out"/tmp/jit-*.dump >/dev/null 2>&1; then
		bad "jitdump CPython (guest): the guest job failed: $(tail -3 "$o/run.log") $(tail -3 "$out/job.log" 2>/dev/null)"; return
	fi
	dump=$(ls "$out"/tmp/jit-*.dump | head -1); name=${dump##*/}
	pid=${name#jit-}; pid=${pid%.dump}
	# dstack's symfs: the guest's /usr, the dump where it was recorded
	mkdir -p "$o/symfs/tmp"
	ln -sfn "$groot/usr" "$o/symfs/usr"
	cp "$dump" "$o/symfs/tmp/"
	jitdump_py_raw "$o" ""
	# perf7 inject --jit in the guest root: the dump at /tmp, its jitted files written there
	cp "$dump" "$groot/tmp/$name"
	(cd "$out" && "$KVM_PERF7" inject --jit -i py.data -o py.p7inj.data) >"$o/p7inject.log" 2>&1
	(cd "$out" && "$KVM_PERF7" script --kallsyms kallsyms -i py.p7inj.data) >"$o/p7.txt" 2>"$o/p7.err"
	cp "$groot/tmp/jitted-$pid-"*.so "$o/symfs/tmp/" 2>/dev/null
	rm -f "$groot/tmp/$name" "$groot/tmp/jitted-$pid-"*.so
	"$DSTACK" script --symfs "$o/symfs" --kallsyms "$out/kallsyms" -i "$out/py.p7inj.data" >"$o/dsp7.txt" 2>"$o/dsp7.err"
	rm -f "$o/symfs/tmp/jitted-"*.so
	jitdump_same "CPython 3.14 -X perf_jit (dwarf): dstack script of the raw file vs perf 7.2 script of perf inject --jit's" \
		"$o/p7.txt" "$o/ds.txt"
	jitdump_same "CPython 3.14 -X perf_jit (dwarf): dstack script of perf inject --jit's file (perf's jitted files) vs perf 7.2's" \
		"$o/p7.txt" "$o/dsp7.txt"
	if "$DSTACK" inject --jit --symfs "$o/symfs" -i "$out/py.data" -o "$out/py.dsinj.data" 2>"$o/dsinject.err"; then
		cp "$o/symfs/tmp/jitted-$pid-"*.so "$groot/tmp/"
		(cd "$out" && "$KVM_PERF7" script --kallsyms kallsyms -i py.dsinj.data) >"$o/p7ds.txt" 2>"$o/p7ds.err"
		rm -f "$groot/tmp/jitted-$pid-"*.so
		jitdump_same "CPython 3.14 -X perf_jit (dwarf): perf 7.2 script of dstack inject --jit's file vs dstack script of the raw file" \
			"$o/p7ds.txt" "$o/ds.txt"
	else
		bad "jitdump CPython: dstack inject --jit failed: $(tail -3 "$o/dsinject.err")"
	fi
	rm -f "$o/symfs/tmp/jitted-"*.so
	jitdump_py_tsc "$o" "$groot" "$dump" "$name" "$pid"
}

# The same dump as a writer of TSC timestamps writes it (Java's agent with
# JITDUMP_USE_ARCH_TIMESTAMP=1), each time the counter value the
# recording's TIME_CONV converts back to it.  The recording is -k mono's,
# which has none (the kernel gives cap_user_time_zero only for its own
# clock): py.tsc.data is py.data with the guest's conversion added first.
# dstack reads it as it read py.data, and perf 7.2 reads both injections
# (perf's, dstack's) the same.
jitdump_py_tsc() {
	local o=$1 groot=$2 dump=$3 name=$4 pid=$5 r
	if ! r=$(python3 "$ROOT/tests/tools/jitdump_check.py" tsc "$dump" "$o/symfs/tmp/$name" "$o/out/py.data" \
		"$o/out/py.tsc.data" 2>&1); then
		bad "jitdump CPython TSC: the dump's times as TSC: $r"; cp "$dump" "$o/symfs/tmp/$name"; return
	fi
	"$DSTACK" script --symfs "$o/symfs" --kallsyms "$o/out/kallsyms" -i "$o/out/py.tsc.data" >"$o/tsc.txt" 2>"$o/tsc.err"
	if cmp -s "$o/ds.txt" "$o/tsc.txt" && ! grep -q jitdump "$o/tsc.err"; then
		ok "jitdump CPython TSC: a dump of TSC times ($r) reads as the CLOCK_MONOTONIC one, every line ($(grep -c /jitted- "$o/tsc.txt") JIT frames)"
	else
		bad "jitdump CPython TSC: the TSC dump's output differs: $(diff "$o/ds.txt" "$o/tsc.txt" | head -4) $(head -2 "$o/tsc.err")"
	fi
	cp "$o/symfs/tmp/$name" "$groot/tmp/$name"
	(cd "$o/out" && "$KVM_PERF7" inject --jit -i py.tsc.data -o py.p7tsc.data) >"$o/p7tsc.log" 2>&1
	(cd "$o/out" && "$KVM_PERF7" script --kallsyms kallsyms -i py.p7tsc.data) >"$o/p7tsc.txt" 2>"$o/p7tsc.err"
	rm -f "$groot/tmp/jitted-$pid-"*.so
	jitdump_same "CPython TSC: dstack script of the raw file vs perf 7.2 script of perf inject --jit's" "$o/p7tsc.txt" "$o/tsc.txt"
	if "$DSTACK" inject --jit --symfs "$o/symfs" -i "$o/out/py.tsc.data" -o "$o/out/py.dstsc.data" 2>"$o/dstsc.err"; then
		cp "$o/symfs/tmp/jitted-$pid-"*.so "$groot/tmp/"
		(cd "$o/out" && "$KVM_PERF7" script --kallsyms kallsyms -i py.dstsc.data) >"$o/p7dstsc.txt" 2>"$o/p7dstsc.err"
		jitdump_same "CPython TSC: perf 7.2 script of dstack inject --jit's file vs dstack script of the raw file" \
			"$o/p7dstsc.txt" "$o/tsc.txt"
	else
		bad "jitdump CPython TSC: dstack inject --jit failed: $(tail -3 "$o/dstsc.err")"
	fi
	rm -f "$groot/tmp/$name" "$groot/tmp/jitted-$pid-"*.so "$o/symfs/tmp/jitted-"*.so "$o/out/py.p7tsc.data" "$o/out/py.dstsc.data" \
		"$o/out/py.tsc.data"
	cp "$dump" "$o/symfs/tmp/$name"
}

# dstack script of the CPython recording (the ASan pass: against the release build's)
jitdump_py_raw() {
	local o=$1 pre=$2 f=ds.txt
	[ -n "$pre" ] && f=asan.txt
	if ! "$DSTACK" script --symfs "$o/symfs" --kallsyms "$o/out/kallsyms" -i "$o/out/py.data" >"$o/$f" 2>"$o/$f.err"; then
		bad "jitdump ${pre}CPython: dstack script failed: $(tail -3 "$o/$f.err")"
	elif [ -n "$pre" ]; then
		if cmp -s "$o/ds.txt" "$o/$f"; then
			ok "jitdump ${pre}CPython: the raw file's output as the release build's ($(grep -c /jitted- "$o/ds.txt") JIT frames)"
		else
			bad "jitdump ${pre}CPython: output differs from the release build's: $(diff "$o/ds.txt" "$o/$f" | head -4)"
		fi
	fi
}

jitdump_suite
