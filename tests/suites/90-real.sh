# shellcheck shell=bash
# Real programs, recorded fresh on every run: binaries no one here built
# (pyenv's CPython, node with its perf map, gcc's cc1 and g++'s cc1plus
# compiling real sources, the Go toolchain, rustc), a -O2 program built
# without frame pointers (tests/real/nofp.c) and one calling through a PLT
# without CFI (tests/real/plt.c, gold), recorded by this machine's
# perf (its own kernel, no deferral) with --call-graph dwarf and with -g
# (tests/real/record.sh); and, in the Linux 7.x guest, Debian's python3
# with -X perf under --call-graph fp,defer (tests/real/guest-job.sh).
# Each sample's stack is compared with perf 7.2's (tests/real/compare.py:
# equal, deeper, names, shorter, diverging; deeper frames checked one by
# one), a table "program x mode x class" is printed, and report --children
# is compared line for line on every recording whose stacks are all equal.
# node is compared with --no-inline on both sides: perf 7.2 asks binutils'
# addr2line about inlined frames in node's 95 MB binary for ~60 s a run.
# The ASan pass reads the release pass's recordings again with the ASan
# build and checks it prints what the release build printed.

real_work=$WORK/out/real
REAL_ROOT=${KVM_CACHE:-/var/tmp/kernel-vm}/root

# real_perf7_ok: perf 7.2 can be run (the guest's root, its perf)
real_perf7_ok() { [ -x "$KVM_PERF7_REAL" ] && [ -x "$REAL_ROOT/usr/bin/perf" ]; }

real_header() {
	printf '%-8s %-6s %7s %7s %7s %7s %8s %5s %8s %10s %12s %7s %7s %9s %10s %6s %8s %7s  %s\n' program mode samples equal deeper '(empty)' stitched \
		vdso perf-wild perf-nosym perf-pageoff names shorter diverging deeper-bad alias perf-plt fp-tail report
}

# real_compare LABEL DATA SYMFS KALLSYMS NOINLINE DEFER: dstack's and perf 7.2's
# script of DATA, sample for sample, and their report --children; one row.
real_compare() {
	local label=$1 data=$2 symfs=$3 ks=$4 noinl=$5 defer=$6 o=$real_work/cmp/$1 res rc rep
	mkdir -p "$o"
	local dargs=(--kallsyms "$ks" -i "$data") pargs=(--kallsyms "/host$ks" -i "/host$data")
	if [ -n "$symfs" ]; then dargs+=(--symfs "$symfs"); pargs+=(--symfs "$([ "$symfs" = "$REAL_ROOT" ] && echo / || echo "/host$symfs")")
	else pargs+=(--symfs /host); fi
	[ -z "$noinl" ] || { dargs+=(--no-inline); pargs+=(--no-inline); }
	# -v: perf says on stderr which objects' symbols it failed to load
	# (compare.py's perf-nosym class reads it); stdout is the same
	"$KVM_PERF7" script -v -F +pid,+dsoff "${pargs[@]}" >"$o/perf" 2>"$o/perf.err"
	if ! "$DSTACK" script -F +pid,+dsoff "${dargs[@]}" >"$o/dstack" 2>"$o/dstack.err"; then
		bad "real $label: dstack script failed: $(tail -2 "$o/dstack.err")"; return
	fi
	"$DSTACK" script --show-mmap-events --show-task-events "${dargs[@]}" 2>/dev/null | grep -E 'PERF_RECORD_(MMAP|FORK|COMM exec)' >"$o/mmaps"
	local extra=()
	[ -z "$defer" ] || { "$DSTACK" script --no-merge-callchains "${dargs[@]}" >"$o/nomerge" 2>/dev/null; extra=("$o/nomerge"); }
	res=$(python3 "$ROOT/tests/real/compare.py" "$label" "$o/perf" "$o/dstack" "$o/mmaps" \
		"$symfs" "${extra[@]}")
	rc=$?
	# report --children, line for line, where every stack is equal
	rep=-
	local first; first=$(echo "$res" | head -1)
	set -- $first
	if [ $# -ge 14 ] && [ "$2" -gt 0 ] && [ "$2" = "$3" ]; then
		"$KVM_PERF7" report --stdio --children "${pargs[@]}" 2>/dev/null | grep -v '^#' >"$o/report.perf"
		"$DSTACK" report --stdio --children "${dargs[@]}" 2>/dev/null | grep -v '^#' >"$o/report.dstack"
		rep=$(python3 "$ROOT/tests/check_conformance.py" "$o/report.perf" "$o/report.dstack")
		case $? in
		0) ok "real $label: report --children equal to perf 7.2's line for line (${rep%%$'\t'*})"; rep=${rep%%$'\t'*} ;;
		3) echo "info real $label: report --children: only siblings of equal weight in another order: ${rep#*$'\t'}"; rep="~${rep%%$'\t'*}" ;;
		*)	local nosym split; nosym=$(real_report_nosym "$o")
			if split=$(python3 "$ROOT/tests/real/report_split.py" "$o/report.perf" "$o/report.dstack" "$o/perf"); then
				echo "info real $label: report --children: perf 7.2 printed one frame as two sibling branches, one by its address and one by its name (its own script names that address so), where dstack prints their sum: $split; otherwise equal: ${rep#*$'\t'}"
				rep="split:${rep%%$'\t'*}"
			elif [ -n "$nosym" ]; then
				echo "info real $label: report --children not compared: perf 7.2 failed its first symbol load of $nosym (its script -v: 'Failed to open ..., continuing without symbols'; its report has an [.] 0xADDR entry in that object): ${rep#*$'\t'}"
				rep="nosym:${rep%%$'\t'*}"
			else
				bad "real $label: report --children differs from perf 7.2's: ${rep#*$'\t'}"; rep="!${rep%%$'\t'*}"
			fi ;;
		esac
	fi
	real_rows+=("$(printf '%-8s %-6s %7s %7s %7s %7s %8s %5s %8s %10s %12s %7s %7s %9s %10s %6s %8s %7s  %s' "${label%.*}" "${label##*.}" \
		"${2:-?}" "${3:-?}" "${4:-?}" "${5:-?}" "${6:-?}" "${7:-?}" "${8:-?}" "${9:-?}" "${10:-?}" "${11:-?}" "${12:-?}" "${13:-?}" "${14:-?}" "${15:-?}" "${16:-?}" "${17:-?}" "$rep")")
	if [ $rc -eq 0 ] && [ $# -ge 14 ] && [ "$2" -gt 0 ]; then
		ok "real $label: $2 samples: $3 equal to perf 7.2's, $4 deeper (each added frame a return address in mapped code; $5 where perf printed no user frame), $6 stitched, $7 vDSO frames perf left unnamed, $8 where perf walked to an unmapped address, $9 where perf left a frame of an object it names elsewhere [unknown] and a FUNC symbol covers it, ${10} where perf read a wrong slot after a frame in a page-off segment, ${16:-0} where perf took the frame pointer at a PLT stub no CFI covers, ${17:-0} where perf printed no user frame and dstack's walk ends as libdw's does after code no CFI covers (the frame pointer's values, in no mapping); KNOWN, not matched: ${15:-0} where perf names a frame by another of the FUNC symbols that start at its symbol's address (identical code folded), listed below"
		[ "${15:-0}" = 0 ] || echo "$res" | grep -A2 '^  alias:' | head -9 | sed 's/^/info real '"$label"' /'
		# the PLT workload must have met its stubs: else the rule went untested
		if [ "$label" = plt.dwarf ]; then
			if [ "${16:-0}" -gt 0 ]; then
				ok "real plt.dwarf: ${16} samples walked on from a PLT stub without CFI (gold's) by the stub's code, to the caller perf's frame-pointer step skips"
			else
				bad "real plt.dwarf: no sample walked on from a PLT stub by its code (perf-plt 0 of $2)"
			fi
		fi
	elif [ $# -ge 14 ] && [ "$2" -eq 0 ]; then
		bad "real $label: no samples ($(tail -1 "$o/perf.err"))"
	else
		bad "real $label: $(echo "$res" | head -7)"
	fi
}

# real_report_nosym DIR: the objects perf 7.2 said it failed to load the
# symbols of (DIR/perf.err of script -v) of which its report (DIR/report.perf)
# has an entry with no symbol ([.] 0xADDR): that report cannot be equal to
# dstack's, which names the address (perf names it too once its next load
# of the object succeeds: compare.py's perf-nosym)
real_report_nosym() {
	local obj
	sed -n 's/^Failed to open \(.*\), continuing without symbols$/\1/p' "$1/perf.err" | while read -r obj; do
		grep -qE "[[:space:]]$(basename "$obj" | sed 's/[.]/[.]/g')[[:space:]]+\[\.\] 0x[0-9a-f]+$" "$1/report.perf" && echo "$obj"
	done
}

real_row_print() { real_header; local r; for r in "${real_rows[@]}"; do echo "$r"; done; }

# the JIT maps where perf 7.2 reads them (its root's /tmp; dstack reads
# them under --symfs or /tmp): a file already there is kept aside
real_place_maps() {
	local m t
	for m in "$@"; do
		[ -f "$m" ] || continue
		t=$REAL_ROOT/tmp/$(basename "$m")
		[ ! -e "$t" ] || [ -e "$real_work/$(basename "$m").aside" ] || mv "$t" "$real_work/$(basename "$m").aside"
		cp "$m" "$t" && real_placed+=("$t")
		[ "$(dirname "$m")" = /tmp ] || [ -e "/tmp/$(basename "$m")" ] || { cp "$m" /tmp/ && real_placed+=("/tmp/$(basename "$m")"); }
	done
}

real_unplace_maps() {
	local t
	for t in "${real_placed[@]}"; do
		rm -f "$t"
		[ ! -e "$real_work/$(basename "$t").aside" ] || mv "$real_work/$(basename "$t").aside" "$t"
	done
	real_placed=()
}

real_host() {
	local d=$real_work/host f label prog mode
	rm -rf "$d"; mkdir -p "$d"
	if ! command -v perf >/dev/null || ! perf record -q -o "$d/probe.data" -- true >"$d/probe.err" 2>&1; then
		echo "SKIPPED real programs (host): *** this machine's perf cannot record: $(head -1 "$d/probe.err" 2>/dev/null) ***"
		return
	fi
	if ! nice "$ROOT/tests/real/record.sh" "$d" "$ROOT" >"$d/record.log" 2>&1; then
		bad "real: recording failed: $(tail -3 "$d/record.log")"; return
	fi
	[ ! -s "$d/missing" ] || echo "SKIPPED real programs (host): *** not on this machine: $(tr '\n' ' ' <"$d/missing") ***"
	while read -r label _ rc; do
		[ "$rc" = 0 ] || bad "real $label: perf record exit $rc: $(tail -2 "$d/$label.log")"
	done <"$d/rc"
	cp /proc/kallsyms "$d/kallsyms"
	# this kernel's vDSO image, kept in a build-id cache by dstack record
	# (the dwarf mode keeps it): the names of vDSO frames are checked with it
	PERF_BUILDID_DIR=$d/buildid "$DSTACK" record -q --call-graph dwarf -e cpu-clock -c 1000000 -o "$d/vdso.rec" -- true \
		>/dev/null 2>&1
	real_place_maps "$d"/tmp/perf-*.map
	for f in "$d"/*.data; do
		label=$(basename "$f" .data)
		[ "$label" != probe ] || continue
		grep -q "^$label rc 0$" "$d/rc" || continue
		REAL_VDSO_DIR=$d/buildid real_compare "$label" "$f" "" "$d/kallsyms" "$([ "${label%%.*}" = node ] && echo 1)" ""
	done
	real_unplace_maps
}

real_guest() {
	local d=$real_work/guest job out
	job=$d/job out=$d/out
	if ! kvm_ready; then
		echo "SKIPPED real programs (guest): *** no kernel-vm at $KVM_DIR (not set up): Debian's python3 -X perf under fp,defer untested ***"
		return
	fi
	rm -rf "$d"; mkdir -p "$job" "$out"
	cp "$ROOT/tests/real/guest-job.sh" "$job/run.sh"
	cp "$ROOT/tests/real/work.py" "$job/"
	cp "$DSTACK" "$job/dstack"
	# gcc 16's 32-bit static build (issue 35's class 6: inline names there),
	# when Debian sid's toolchain root is built (never built from here)
	cp "$ROOT/tests/corpus/wl.c" "$job/"
	if [ ! -f "${KVM_CACHE:-/var/tmp/kernel-vm}/tc/ready" ] ||
	   ! (cd "$job" && "$KVM_SIDCC" -m32 -static -O2 -g -o wl32s wl.c) >"$d/sidcc.log" 2>&1; then
		rm -f "$job/wl32s"
		echo "SKIPPED real programs (guest, 32-bit static): *** no sid toolchain ($KVM_SIDCC): gcc 16 -m32 -static untested here ***"
	fi
	if ! kvm_run_job 300 "$job" "$out" "$d/run.log"; then
		bad "real (guest): the guest job failed: $(tail -3 "$d/run.log")"; return
	fi
	if ! grep -q '^py rc 0$' "$out/rc" 2>/dev/null; then
		bad "real (guest): perf record failed: $(cat "$out/rc" 2>/dev/null) $(tail -2 "$out/py.log")"; return
	fi
	if [ -x "$job/wl32s" ] && [ "$(grep -c '^w32\.[a-z]* rc 0$' "$out/rc")" != 2 ]; then
		bad "real (guest): perf record of wl32s failed: $(grep '^w32' "$out/rc" | tr '\n' ' ')"
	fi
	mkdir -p "$d/symfs/job"
	[ ! -x "$job/wl32s" ] || cp "$job/wl32s" "$d/symfs/job/"
	real_guest_compare
}

real_guest_compare() {
	local out=$real_work/guest/out
	real_place_maps "$out"/perf-*.map
	REAL_VDSO_DIR=$out/buildid PERF_BUILDID_DIR=$out/buildid \
		real_compare "$(basename "$(cat "$out/python")").defer" "$out/py.data" "$REAL_ROOT" "$out/kallsyms" "" 1
	real_unplace_maps
	local m
	for m in defer dwarf; do
		[ ! -s "$out/w32.$m.data" ] || REAL_VDSO_DIR=$out/buildid PERF_BUILDID_DIR=$out/buildid \
			real_compare "wl32s.$m" "$out/w32.$m.data" "$real_work/guest/symfs" "$out/kallsyms" "" "$([ $m = defer ] && echo 1)"
	done
}

# C++ names as perf 7.2 prints them: every "_Z" symbol of this machine's
# C++ programs (cc1plus, node, rustc's libLLVM) demangled by dstack's C++
# demangler and by the __cxa_demangle of the guest root's libstdc++ (GCC
# 16's, the one perf 7.2 calls), run there
real_demangle() {
	local d=$real_work/demangle f objs=() n diff
	mkdir -p "$d"
	for f in "$(gcc -print-prog-name=cc1plus 2>/dev/null)" "$(command -v node)" \
		"$(rustc --print sysroot 2>/dev/null)"/lib/libLLVM*; do
		[ -f "$f" ] && objs+=("$f")
	done
	if [ ${#objs[@]} -eq 0 ]; then
		echo "SKIPPED real demangling: *** no C++ program here (cc1plus, node, libLLVM) ***"; return
	fi
	for f in "${objs[@]}"; do nm "$f" 2>/dev/null; nm -D "$f" 2>/dev/null; done |
		awk '{print $NF}' | sed -n 's/^\(_Z[^@]*\).*/\1/p' | sort -u >"$d/names"
	if ! cc -O2 -I"$ROOT/include" -I"$ROOT" -I"$ROOT/lib" -o "$d/ours" "$ROOT/tests/real/demangle.c" "$ROOT/$BUILD/libdstack.a" \
		-lelf -ldw -lzstd -lz -liberty -lm 2>"$d/cc.err" ||
	   ! cc -O2 -DORACLE -o "$REAL_ROOT/tmp/dstack-demangle-oracle" "$ROOT/tests/real/demangle.c" -lstdc++ 2>>"$d/cc.err"; then
		bad "real demangling: cannot build the helpers: $(tail -2 "$d/cc.err")"; return
	fi
	cp "$d/names" "$REAL_ROOT/tmp/dstack-demangle-names"
	chroot "$REAL_ROOT" sh -c '/tmp/dstack-demangle-oracle </tmp/dstack-demangle-names' >"$d/perf" 2>"$d/perf.err"
	rm -f "$REAL_ROOT/tmp/dstack-demangle-oracle" "$REAL_ROOT/tmp/dstack-demangle-names"
	"$d/ours" <"$d/names" >"$d/dstack"
	n=$(wc -l <"$d/names")
	if [ "$n" -gt 0 ] && [ "$(wc -l <"$d/perf")" = "$n" ] && cmp -s "$d/perf" "$d/dstack"; then
		ok "real demangling: $n C++ names of ${#objs[@]} programs demangled as the guest's libstdc++ (perf 7.2's) demangles them"
	else
		diff=$(paste -d'\t' "$d/names" "$d/perf" "$d/dstack" | awk -F'\t' '$2 != $3' | head -2 | cut -c1-400)
		bad "real demangling: $(paste "$d/perf" "$d/dstack" | awk -F'\t' '$1 != $2' | wc -l) of $n names differ from perf 7.2's libstdc++ ($(tail -1 "$d/perf.err")): $diff"
	fi
}

# The ASan pass: the release pass's recordings (a few) read again by the
# ASan build; its script output must be the release build's, byte for byte.
real_asan() {
	local f o n=0 label
	for f in "$real_work"/host/nofp.dwarf.data "$real_work"/host/python.dwarf.data "$real_work"/host/gcc.fp.data \
		"$real_work"/host/node.dwarf.data "$real_work"/guest/out/py.data; do
		[ -s "$f" ] || continue
		label=$(basename "$f" .data)
		case $f in */guest/*) label=$(basename "$(cat "$real_work/guest/out/python")").defer ;; esac
		o=$real_work/cmp/$label
		[ -s "$o/dstack" ] || continue
		local args=(--kallsyms "$(dirname "$f")/kallsyms" -i "$f") bid=
		case $f in */guest/*) args+=(--symfs "$REAL_ROOT") bid=$(dirname "$f")/buildid ;; esac
		case $label in node.*) args+=(--no-inline) ;; esac
		real_place_maps "$(dirname "$f")"/tmp/perf-*.map "$(dirname "$f")"/perf-*.map
		if env ${bid:+PERF_BUILDID_DIR=$bid} "$DSTACK" script -F +pid,+dsoff "${args[@]}" >"$o/dstack.asan" 2>"$o/dstack.asan.err" &&
		   cmp -s "$o/dstack" "$o/dstack.asan"; then
			n=$((n + 1))
		else
			bad "real $label (ASan build): script differs from the release build's or failed: $(tail -2 "$o/dstack.asan.err")"
		fi
		real_unplace_maps
	done
	if [ $n -gt 0 ]; then ok "real: the ASan build prints the release build's stacks on $n of the release pass's recordings"
	else echo "SKIPPED real programs (ASan): *** no recordings from a release pass ***"; fi
}

real_rows=() real_placed=()
if [ -n "${DSTACK_NO_VM:-}" ]; then
	real_asan
elif ! real_perf7_ok; then
	echo "SKIPPED real programs: *** perf 7.2 (the kernel-vm's root at $REAL_ROOT) not set up: nothing to compare with ***"
else
	mkdir -p "$real_work"
	real_demangle
	real_host
	real_guest
	echo "real programs: dstack's stacks against perf 7.2's, sample for sample (report: report --children, perf's lines equal)"
	real_row_print
fi
