# shellcheck shell=bash
# Live conformance: recordings dstack has never seen, made by perf 7.2 in
# the Linux 7.2 guest (one boot, tests/vm/conformance-job.sh) and by the
# host's perf 6.1, read by dstack and by perf 7.2 ($KVM_PERF7, same --symfs
# and --kallsyms).  Every command's output is compared with perf's
# (tests/check_conformance.py) and a table "shape x command -> perf lines
# dstack printed the same / perf's lines" is printed.  Each differing
# command is a FAIL, but for the documented one (conf_known_class: report
# commands on a recording where dstack stitched samples perf leaves with a
# bare cookie), counted and printed, and report call graphs that differ
# only in the order of siblings of equal weight ("~" in the table: perf's
# order there is its rb-tree's, not followed yet), counted and printed.
#   DSTACK_CONF_DATA=DIR  reuse a guest output directory (developers: iterate
#                         without booting); the guest is booted otherwise.

conf_work=$WORK/out/conformance

# conf_build DIR: the workloads, built here (the guest runs host binaries).
conf_build() {
	local d=$1 f=(-O2 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer)
	mkdir -p "$d"
	cp "$ROOT/tests/vm/conformance-job.sh" "$d/run.sh"
	cp "$ROOT/tests/vm/conformance-py.py" "$d/wl.py"
	cc "${f[@]}" -pthread -o "$d/wl" "$ROOT/tests/corpus/wl.c" &&
	c++ "${f[@]}" -o "$d/wlxx" "$ROOT/tests/corpus/wlxx.cc" &&
	c++ "${f[@]}" -o "$d/cxxc" "$ROOT/tests/vm/conformance-cxxc.cc" &&
	cc "${f[@]}" -o "$d/jit" "$ROOT/tests/vm/conformance-jit.c" &&
	cp "$d/wl" "$d/wlstrip" && strip "$d/wlstrip" || return 1
	# without frame pointers (the nofp shapes), as most distributions build
	cc -O2 -g -fomit-frame-pointer -pthread -o "$d/wlnofp" "$ROOT/tests/corpus/wl.c" &&
	c++ -O2 -g -fomit-frame-pointer -o "$d/wlxxnofp" "$ROOT/tests/corpus/wlxx.cc" || return 1
	# main in .dynsym alone (-rdynamic, then stripped from .symtab): perf
	# reads .dynsym after .symtab (the dyn shape)
	cc "${f[@]}" -rdynamic -pthread -o "$d/wldyn" "$ROOT/tests/corpus/wl.c" &&
	objcopy --strip-symbol=main "$d/wldyn" || return 1
	# static glibc (its aliases and IFUNCs), a position-dependent main,
	# threads that rename themselves, libraries opened and closed in turn
	cc "${f[@]}" -static -pthread -o "$d/wlstatic" "$ROOT/tests/corpus/wl.c" &&
	cc "${f[@]}" -no-pie -fno-pie -pthread -o "$d/wlnopie" "$ROOT/tests/corpus/wl.c" &&
	cc "${f[@]}" -pthread -o "$d/wlname" "$ROOT/tests/vm/conformance-name.c" &&
	cc "${f[@]}" -o "$d/wldl" "$ROOT/tests/vm/conformance-dl.c" -ldl &&
	cc "${f[@]}" -shared -fPIC -DPLUG=3 -DPLUG_FN=plug_one -o "$d/libplug1.so" "$ROOT/tests/vm/conformance-dl.c" &&
	cc "${f[@]}" -shared -fPIC -DPLUG=5 -DPLUG_FN=plug_two -o "$d/libplug2.so" "$ROOT/tests/vm/conformance-dl.c" || return 1
	# two local functions of one name in one binary (the dup shape)
	cc "${f[@]}" -DDUP_PART=1 -DDUP_ENTRY=part_one -c -o "$d/dup1.o" "$ROOT/tests/vm/conformance-dup.c" &&
	cc "${f[@]}" -DDUP_PART=2 -DDUP_ENTRY=part_two -c -o "$d/dup2.o" "$ROOT/tests/vm/conformance-dup.c" &&
	cc "${f[@]}" -o "$d/wldup" "$ROOT/tests/vm/conformance-dup.c" "$d/dup1.o" "$d/dup2.o" || return 1
	conf_old_perf "$d/oldperf"
	# 32-bit static: Debian sid's multilib gcc if its root is built (never
	# built from here: that needs the network and minutes), else the
	# corpus's wl32 (the same wl.c, built that way)
	# (sid-cc runs in a chroot: paths relative to the job directory)
	cp "$ROOT/tests/corpus/wl.c" "$d/wl.c"
	if [ ! -f "${KVM_CACHE:-/var/tmp/kernel-vm}/tc/ready" ] || ! (cd "$d" && "$KVM_SIDCC" -m32 -static "${f[@]}" -pthread -o wl32 wl.c) 2>/dev/null; then
		cp "$(cd "$ROOT/.." && pwd)/shared/corpus/symfs/job/wl32" "$d/wl32" 2>/dev/null ||
			zstd -q -dc "$ROOT/tests/corpus/symfs.tar.zst" | tar -xO symfs/job/wl32 >"$d/wl32" 2>/dev/null
		chmod +x "$d/wl32"
	fi
	[ -s "$d/wl32" ] || return 1
	# 32-bit without frame pointers (perf's 8-byte reads of its stack)
	rm -f "$d/wl32nofp"
	[ ! -f "${KVM_CACHE:-/var/tmp/kernel-vm}/tc/ready" ] ||
		(cd "$d" && "$KVM_SIDCC" -m32 -static -O2 -g -fomit-frame-pointer -pthread -o wl32nofp wl.c) 2>/dev/null ||
		rm -f "$d/wl32nofp"
	# Rust (the rs shapes), where a rustc is here: names of both manglings
	local rustc
	rustc=$(command -v rustc || ls "$HOME/.cargo/bin/rustc" 2>/dev/null) || rustc=
	if [ -n "$rustc" ]; then
		"$rustc" -O -g -C force-frame-pointers=yes -o "$d/rs" "$ROOT/tests/vm/conformance-rs.rs" 2>/dev/null &&
		"$rustc" -O -g -C force-frame-pointers=yes -C symbol-mangling-version=v0 -o "$d/rsv0" \
			"$ROOT/tests/vm/conformance-rs.rs" 2>/dev/null || rm -f "$d/rs" "$d/rsv0"
	fi
	# C and C++ by clang (the clc, clxx shapes): no .debug_aranges, inlined
	# instances in pieces (DW_FORM_rnglistx ranges), kilobyte template names
	if command -v clang >/dev/null && command -v clang++ >/dev/null; then
		clang "${f[@]}" -pthread -o "$d/wlclang" "$ROOT/tests/corpus/wl.c" 2>/dev/null &&
		clang++ "${f[@]}" -o "$d/wlxxclang" "$ROOT/tests/corpus/wlxx.cc" 2>/dev/null ||
			rm -f "$d/wlclang" "$d/wlxxclang"
	fi
	# Go (the go shapes), where a go toolchain is here
	if command -v go >/dev/null; then
		GOCACHE=$(dirname "$d")/gocache GOFLAGS= go build -o "$d/gowl" "$ROOT/tests/vm/conformance-go.go" 2>/dev/null || rm -f "$d/gowl"
	fi
	return 0
}

# conf_old_perf DIR: the host's perf, when older than 7 (Debian bookworm's
# 6.1), with the shared libraries it runs with, for the guest to record
# with (the old shapes: what older perfs write, read by perf 7.2 and dstack)
conf_old_perf() {
	local d=$1 perf v lib
	rm -rf "$d"
	perf=$(command -v perf) || return 0
	v=$(perf --version 2>/dev/null | awk '{print $3}')
	case $v in [1-6].*) ;; *) return 0 ;; esac
	mkdir -p "$d"
	cp "$(readlink -f "$perf")" "$d/perf" || { rm -rf "$d"; return 0; }
	for lib in $(ldd "$d/perf" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\/.*ld-linux/ {print $1}'); do
		cp -L "$lib" "$d/" || { rm -rf "$d"; return 0; }
	done
	[ -f "$d/ld-linux-x86-64.so.2" ] || rm -rf "$d"
}

# conf_cmds: NAME|ARGS lines, the commands compared on each recording.
# @TID@, @PID@, @COMM@, @TIME@ are filled from the recording.  "{DS}X"
# is an argument for dstack only (perf does that by default).
conf_cmds() {
	cat <<'EOF'
script|script
porder|script {DS}--perf-order
nomerge|script --no-merge-callchains
F1|script -F comm,tid,time,event,ip,sym,dso
F2|script -F +period,-cpu
F3|script -F pid,tid,time,period,event,ip,sym,symoff,dso
F4|script -F +srcline
F5|script --show-task-events --show-mmap-events --show-switch-events --show-lost-events
report|report --stdio --no-children
children|report --stdio --children
flat|report --stdio --no-children -g none --sort dso,sym
sortpid|report --stdio --no-children -g none --sort pid,comm
comm|script --comm @COMM@
time|script --time @TIME@
r-comm|report --stdio --no-children --comm @COMM@
r-pid|report --stdio --no-children -g none --pid @PID@
r-tid|report --stdio --no-children -g none --sort comm,dso --tid @TID@
r-cpu|report --stdio --no-children -g none -C 0
r-time|report --stdio --no-children --time @TIME@
r-sort|report --stdio --no-children -g caller --sort cpu,symbol
plain|report --stdio -n -g caller,1
fract|report --stdio --no-children -g fractal,0.5,callee,function,period
fold|report --stdio --no-children -g folded,0,caller,period
quiet|report --stdio -q --no-children -g none --sort sym,pid
hdr|report --header-only
stats|report --stats
EOF
}

# conf_fill FILE ARGS: the filter values from perf's own output of FILE
# (the busiest thread, its process and comm, the middle half of the time).
conf_fill() {
	local s=$1; shift
	local v
	v=$(python3 - "$s" <<'PY'
import re, sys, collections
hdr = re.compile(r'^\s*(.*?)\s+(\d+)/(\d+)\s+(?:\[\d+\]\s+)?(\d+\.\d+):')
tids, times = collections.Counter(), []
info = {}
for line in open(sys.argv[1], errors='replace'):
    m = hdr.match(line)
    # a ":TID" name is perf's for a sample it printed after its thread's exit: not a comm to filter by
    if m and not m.group(1).startswith(':'):
        tids[m.group(3)] += 1
        info[m.group(3)] = (m.group(1), m.group(2))
        times.append(float(m.group(4)))
if not tids:
    print('x 1 1 0,1'); sys.exit()
tid = tids.most_common(1)[0][0]
comm, pid = info[tid]
times.sort()
a, b = times[len(times) // 4], times[3 * len(times) // 4]
print('%s %s %s %.6f,%.6f' % (comm.replace(' ', '_'), pid, tid, a, b))
PY
)
	echo "$v"
}

# conf_compare NAME DATA SYMFS KALLSYMS [ARGS...]: every command of conf_cmds on
# DATA by perf 7.2 and by dstack (ARGS added to each); one table row.  Sets
# conf_row, conf_fail, conf_known.
conf_compare() {
	local name=$1 data=$2 symfs=$3 ks=$4
	shift 4
	local o="$conf_work/$name"
	mkdir -p "$o"
	local common=(--kallsyms "$ks" -i "$data" "$@")
	[ -n "$symfs" ] && common=(--symfs "$symfs" "${common[@]}")
	# perf 7.2 takes host paths as /host/PATH; it needs pid/tid/comm shown
	local pcommon=() a
	for a in "${common[@]}"; do case $a in /*) pcommon+=("/host$a") ;; *) pcommon+=("$a") ;; esac; done
	"$KVM_PERF7" script -F comm,pid,tid,time "${pcommon[@]}" >"$o/ids" 2>/dev/null
	local comm pid tid time
	read -r comm pid tid time <<<"$(conf_fill "$o/ids")"
	conf_row=$(printf '%-8s' "$name") conf_fail=0 conf_known=0 conf_known_cc=0 conf_stitched=0 conf_ties=0 conf_selfinc=0 conf_timeouts=0
	local cname args res rc prc script_equal=0
	while IFS='|' read -r cname args; do
		args=${args//@COMM@/$comm}; args=${args//@PID@/$pid}; args=${args//@TID@/$tid}; args=${args//@TIME@/$time}
		local w pargs=()
		# shellcheck disable=SC2086
		for w in $args; do [[ $w == '{DS}'* ]] || pargs+=("$w"); done
		# perf 7.2 itself can run on and on (its report --children of a group
		# with call graphs ran 18 min once, where it takes seconds): bounded,
		# and such a command is said loudly and not compared
		timeout -k 10 600 "$KVM_PERF7" "${pargs[@]}" "${pcommon[@]}" >"$o/$cname.perf" 2>"$o/$cname.perf.err"
		prc=$?
		if [ $prc = 124 ] || [ $prc = 137 ]; then
			conf_row+=$(printf ' %13s' 'perf-timeout')
			echo "info conformance $name $cname: *** perf 7.2 did not finish in 600 s: not compared ***"
			echo "  $name $cname: perf 7.2 did not finish in 600 s, not compared" >>"$conf_work/all-diffs"
			conf_timeouts=$((conf_timeouts + 1))
			continue
		fi
		# shellcheck disable=SC2086
		"$DSTACK" ${args//\{DS\}/} "${common[@]}" >"$o/$cname.dstack" 2>"$o/$cname.dstack.err"
		rc=$?
		# perf refuses (-C on a file without CPUs, or a pipe-mode one; -g on
		# one without callchains: it says so, but exits 0): so must dstack
		if [ $prc -ne 0 ] || grep -q 'failed to set cpu bitmap\|^Selected -g or --branch-history' "$o/$cname.perf.err"; then
			if [ $rc -ne 0 ]; then conf_row+=$(printf ' %13s' refused); continue; fi
			res="0/0"$'\t'"perf refused: $(tail -1 "$o/$cname.perf.err")"
			false
		else
			local mode=--blocks
			case $args in report*) mode= ;; *--perf-order*) mode="--blocks --order" ;; esac
			# the samples perf held and named ":TID" in the unfiltered script (first command)
			res=$(if [ "$cname" = script ]; then export CONF_HELD_OUT="$o/held"; rm -f "$o/held"
			      else export CONF_HELD_IN="$o/held"; fi
			      case $cname in comm|time) export CONF_SELF="$o/script.perf" ;; esac
			      python3 "$ROOT/tests/check_conformance.py" "$o/$cname.perf" "$o/$cname.dstack" $mode)
		fi
		local crc=$?
		if [ $crc -eq 3 ] && [ $rc -eq 0 ]; then
			# the same graphs but for siblings of equal weight (check_conformance.py)
			conf_row+=$(printf ' %13s' "~${res%%$'\t'*}")
			conf_ties=$((conf_ties + 1))
			echo "  $name $cname (exit $rc): ${res#*$'\t'}" >>"$conf_work/all-diffs"
		elif [ $crc -eq 0 ] && [ $rc -eq 0 ]; then
			conf_row+=$(printf ' %13s' "${res%%$'\t'*}")
			# equal outputs are not kept: 26 commands on 40 shapes held 5 GB
			# of disk (script's is read again by comm and time)
			if [ "$cname" = script ]; then script_equal=1; else rm -f "$o/$cname.perf" "$o/$cname.dstack"; fi
			if [ "$cname" = script ] && [[ $res =~ ([0-9]+)\ excused\ \(stitched\) ]]; then
				conf_stitched=${BASH_REMATCH[1]}
			fi
			if [ "$cname" = time ] && [[ $res =~ ([0-9]+)\ perf\ self-inconsistent ]]; then
				conf_selfinc=${BASH_REMATCH[1]}
				echo "  $name $cname: ${res#*$'\t'}" >>"$conf_work/all-diffs"
				echo "info conformance $name time: ${res#*$'\t'}"
			fi
		else
			conf_row+=$(printf ' %13s' "*${res%%$'\t'*}")
			if conf_known_class "$cname" || conf_go_first_line "$name" "$cname" "$o" ||
			   conf_go_blind_inline "$name" "$cname" "$o"; then
				conf_known=$((conf_known + 1))
				case $cname in children|plain) [ "$conf_stitched" -gt 0 ] || conf_known_cc=$((conf_known_cc + 1)) ;; esac
			else
				conf_fail=$((conf_fail + 1))
				echo "  $name $cname (exit $rc): ${res#*$'\t'}" >>"$conf_work/diffs"
			fi
			echo "  $name $cname (exit $rc): ${res#*$'\t'}" >>"$conf_work/all-diffs"
		fi
	done < <(conf_cmds)
	# a shape none of whose commands perf 7.2 finished was not compared at all
	if [ "$conf_timeouts" -gt 0 ] && [ "$conf_timeouts" -eq "$(conf_cmds | wc -l)" ]; then
		conf_fail=$((conf_fail + 1))
		echo "  $name (all commands): perf 7.2 finished none in 600 s: nothing compared" >>"$conf_work/diffs"
	fi
	if [ $script_equal = 1 ]; then rm -f "$o/script.perf" "$o/script.dstack" "$o/ids"; fi
}

# The documented difference: dstack stitches the samples whose deferred
# record came before them, which perf 7.2 leaves with a bare cookie (script
# shows them as "excused (stitched)").  Their user frames then count in
# dstack's call graphs and --children totals, so a report command that
# differs on such a recording is counted as that difference (listed in
# all-diffs, printed in the ok line), not failed; on a recording where
# nothing was stitched every difference fails.
#
# `report --children` is measured, not asserted, on the other recordings:
# its entries and tie orders follow perf's (its tree of entries and its
# trees of call-graph children searched as perf's, duplicates and their
# collapse included), but perf orders DSOs in those searches by its
# objects' heap addresses, which dstack estimates (a -z recording's heap
# differs), perf resolves some chains against the maps as they are when
# it prints (a task around its exec), and a second event's Symbol column
# can be a character narrower (all open in issue 18); each such
# difference is printed and listed.
conf_known_class() {
	case $1 in children|plain) return 0 ;; esac   # --children (perf's default): measured, not asserted
	# perf's --time window disagreed with its own unfiltered script (its dwarf
	# unwinder's per-thread state: check_conformance.py CONF_SELF), so the
	# report of that window is measured, not asserted
	[ "$1" = r-time ] && [ "$conf_selfinc" -gt 0 ] && return 0
	[ "$conf_stitched" -gt 0 ] || return 1
	case $1 in report|sortpid|r-*|fract|fold) return 0 ;; esac
	return 1
}

# Go's first source line: binutils' addr2line (perf 7.2's srcline and
# inline lookup, in the guest's root) answers the first address it is asked
# about a Go binary blind for most of its compile units ("go.go:?", no
# inline frames), and correctly for a few (measured on two binaries: the
# first two to four units of .debug_info and the last one to four; the rule
# is not known), and perf keeps that answer.  On the go shapes, a srcline
# command (F4) whose only differences are lines "go.go:0" in perf's output
# is that quirk: counted as known and listed, not failed.
conf_go_first_line() {
	local name=$1 cname=$2 o=$3
	case $name:$cname in go:F4|godw:F4) ;; *) return 1 ;; esac
	diff "$o/$cname.perf" "$o/$cname.dstack" | grep '^<' | grep -qv '^<   go\.go:0$' && return 1
	echo "info conformance $name $cname: perf's only other lines are go.go:0, addr2line's blind first answer about a Go binary"
}

# Go's blind inline answer: perf 7.2 takes a frame's inlined functions from
# binutils' addr2line, whose first answer about most units of a Go binary
# has no inline frames (conf_go_first_line), and dstack's model of which
# units is not exact: an address of such a unit whose inlined function
# addr2line names by the function it is in prints, in dstack, a second
# frame equal to the first.  On the go shapes, a command whose only
# differences are lines of dstack that repeat the line next to them is
# that quirk: counted as known and listed, not failed.
conf_go_blind_inline() {
	local name=$1 cname=$2 o=$3 n
	case $name in go|godw) ;; *) return 1 ;; esac
	n=$(python3 - "$o/$cname.perf" "$o/$cname.dstack" <<'PY'
import difflib, re, sys
# (the headers and perf's closing tip aside: a frame's line, in a chain or a graph, by its text)
p = [l for l in open(sys.argv[1], errors='replace').read().split('\n') if not l.startswith('#')]
d = [l for l in open(sys.argv[2], errors='replace').read().split('\n') if not l.startswith('#')]
# (a graph's first line of a child, "--12.34%--" or "--200000--", and an
# entry's "---", name the frame after their marks)
key = lambda l: re.sub(r'^-+(?:[0-9.]+%?-+)?', '', l.lstrip(' |\t'))
n = 0
for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, p, d, autojunk=False).get_opcodes():
    if tag == 'equal':
        continue
    if tag != 'insert':
        sys.exit(1)
    for j in range(j1, j2):
        if not key(d[j]) or '--' in d[j] or not ((j > 0 and key(d[j - 1]) == key(d[j])) or
                                                 (j + 1 < len(d) and key(d[j + 1]) == key(d[j]))):
            sys.exit(1)
        n += 1
sys.exit(1) if not n else print(n)
PY
) || return 1
	echo "info conformance $name $cname: dstack's only other lines ($n) repeat the frame next to them: an inlined frame perf's addr2line leaves out (its blind answer about a Go binary)"
}

conf_known_note() {
	[ "$conf_timeouts" -eq 0 ] || echo -n " (*** $conf_timeouts commands not compared: perf 7.2 ran past 600 s ***)"
	[ "$conf_ties" -eq 0 ] || echo -n " (~: $conf_ties commands print call-graph siblings of equal weight in another order, issue 18)"
	[ "$conf_known" -eq 0 ] && return
	if [ "$conf_stitched" -gt 0 ]; then
		echo " but for the documented difference: $conf_stitched script lines of samples dstack stitched where perf 7.2 printed a bare cookie, so $conf_known report commands differ"
	elif [ "$conf_known_cc" -gt 0 ]; then
		echo " but report --children (measured, not asserted: *** differs, see $conf_work/all-diffs ***)"
	else
		echo " but for $conf_known known differences (listed in $conf_work/all-diffs)"
	fi
}

# conf_shape_diffs SHAPE: its failing commands' first differences, for the
# FAIL line itself (a long log may be cut before the list at the end)
conf_shape_diffs() {
	grep "^  $1 " "$conf_work/diffs" 2>/dev/null | head -3 | cut -c -700
}

conf_header() {
	local h cname args
	h=$(printf '%-8s' shape)
	while IFS='|' read -r cname args; do h+=$(printf ' %13s' "$cname"); done < <(conf_cmds)
	echo "$h"
}

# conf_crash_note OUT: what the console of a guest that did not finish says:
# the shape in progress and the kernel's own words (panic, oops, OOM)
conf_crash_note() {
	local c=$1/console.log shape
	shape=$(grep -a -o 'conformance-job: recording [a-z0-9]*' "$c" 2>/dev/null | tail -1 | cut -d' ' -f3)
	local when="before any shape was recorded"
	[ -z "$shape" ] || when="while perf recorded $shape"
	printf '%s; console: %s' "$when" \
		"$(grep -a -E 'Kernel panic|BUG:|Oops|RIP:|general protection|Out of memory|Killed process|watchdog|Call Trace|^\[ *[0-9.]+\]  [a-z_]+\+0x' "$c" 2>/dev/null |
			head -12 | tr -d '\r' | tr '\n' '|' | cut -c -900)"
}

# conf_missing DIR...: the shapes no boot finished (in none of the DIR/rc)
conf_missing() {
	local shape
	for shape in $CONF_ALL_SHAPES; do
		cat "${@/%//rc}" 2>/dev/null | grep -q "^$shape " || echo "$shape"
	done
}

# The guest's recordings: one boot, every shape.  The job saves /out after
# each shape, so a guest kernel that crashes under perf record (never under
# dstack: this job runs only perf; TCG now and then trips the kernel's own
# text patching, at boot too) costs the shape in progress: another boot
# records the shapes no boot finished, and says why loudly, up to
# CONF_BOOTS boots in all.  conf_boots: the boots' output directories;
# conf_dir[SHAPE]: the one holding SHAPE (its own kallsyms).
CONF_BOOTS=4
declare -A conf_dir
conf_boots=()
conf_guest_record() {
	local job=$1 base=$2 out missing n
	for n in $(seq 1 $CONF_BOOTS); do
		out=$base$([ "$n" = 1 ] || echo ".$n")
		conf_boots+=("$out")
		if "$KVM_RUN" -t 900 "$job" "$out" >"$conf_work/run$n.log" 2>&1; then return 0; fi
		missing=$(conf_missing "${conf_boots[@]}")
		if grep -aq KERNEL_VM_DONE "$out/console.log" 2>/dev/null || [ -z "$missing" ]; then
			bad "conformance: the guest job failed: $(tail -3 "$conf_work/run$n.log"); $(conf_crash_note "$out")"
			return 1
		fi
		echo "info conformance: boot $n: the guest's kernel did not finish the job $(conf_crash_note "$out")"
		[ "$n" -lt $CONF_BOOTS ] || break
		echo "info conformance: boot $((n + 1)) records the $(echo $missing | wc -w) shapes no boot finished: $(echo $missing)"
		echo "$missing" >"$job/only"
	done
	bad "conformance: the guest went down in each of $CONF_BOOTS boots, the last time $(conf_crash_note "$out"); $(tail -2 "$conf_work/run$n.log")"
	return 1
}

# conf_needs FILE SHAPES WHAT WHY: without the executable FILE, SHAPES are
# dropped from the run, said loudly
conf_needs() {
	local shape
	[ ! -x "$1" ] || return 0
	echo "SKIPPED conformance $2 ($3): *** $4 ***"
	for shape in $2; do
		CONF_ALL_SHAPES=$(echo " $CONF_ALL_SHAPES " | sed "s/ $shape / /")
	done
}

# Shapes are compared CONF_JOBS at a time (default 2: the two cores of the
# machine CI runs on; perf 7.2 and the checks are one process each), each
# conf_compare in a subshell of its own whose lines and results wait in
# $conf_work/NAME.out and NAME.state: conf_finish_one prints them, and the
# shape's verdict, in the order the shapes were started.
conf_jobs=()
conf_start() { # LABEL NAME DATA SYMFS KALLSYMS [ARGS...]: conf_compare NAME, LABEL its verdict's note
	local label=$1 name=$2
	shift
	(
		conf_compare "$@" >"$conf_work/$name.out" 2>&1
		printf 'conf_row=%q conf_fail=%q conf_known=%q conf_known_cc=%q conf_stitched=%q conf_ties=%q conf_selfinc=%q conf_timeouts=%q\n' \
			"$conf_row" "$conf_fail" "$conf_known" "$conf_known_cc" "$conf_stitched" "$conf_ties" "$conf_selfinc" \
			"$conf_timeouts" >"$conf_work/$name.state"
	) &
	conf_jobs+=("$!|$name|$label")
	[ "${#conf_jobs[@]}" -lt "${CONF_JOBS:-2}" ] || conf_finish_one
}

conf_finish_one() { # the oldest comparison started: its lines, its row, its verdict
	local pid name label rc
	IFS='|' read -r pid name label <<<"${conf_jobs[0]}"
	conf_jobs=("${conf_jobs[@]:1}")
	wait "$pid"; rc=$?
	cat "$conf_work/$name.out" 2>/dev/null
	if [ ! -s "$conf_work/$name.state" ]; then
		bad "conformance $name$label: the comparison ended before its results (exit $rc)"; return
	fi
	eval "$(cat "$conf_work/$name.state")"
	rm -f "$conf_work/$name.out" "$conf_work/$name.state"
	echo "$conf_row"
	if [ "$conf_fail" -eq 0 ]; then ok "conformance $name$label: dstack prints what perf 7.2 prints$(conf_known_note)"
	else bad "conformance $name$label: $conf_fail commands differ from perf 7.2: $(conf_shape_diffs "$name")"; fi
}

conf_finish_all() { while [ "${#conf_jobs[@]}" -gt 0 ]; do conf_finish_one; done; }

conf_guest() {
	local job=$conf_work/job d shape
	CONF_ALL_SHAPES=${CONF_SHAPES:-nocg multi multif fp defer w32 w32d exec fork threads cxx cxxc cxxcd jit pipe zstd sysw modsys modsysd attach tidt noinh kcc ucc swev tpdw tpraw evmix swtd lost sysc thrg asw clk grp grpg thrd zthr strip evcg kptr notsd swev1 delay rs rsv0 go godw clc clxx nofpg nofpd nofpdw nofpxx n32dw n32g dyn static nopied named dup dld sched sampall udk addr kcore injd py pydw old61g old61dw old61m old61tp old61p}
	conf_boots=()
	if [ -n "${DSTACK_CONF_DATA:-}" ]; then
		conf_boots=("$DSTACK_CONF_DATA")
	else
		rm -rf "$job" "$conf_work"/guest "$conf_work"/guest.*
		if ! conf_build "$job"; then bad "conformance: the workloads do not build"; return; fi
		conf_needs "$job/rs" "rs rsv0" "Rust names" "no rustc here, or it failed"
		conf_needs "$job/wlclang" "clc clxx" "C and C++ built by clang" "no clang here, or it failed"
		conf_needs "$job/gowl" "go godw" "Go" "no go toolchain here, or it failed"
		conf_needs "$job/wl32nofp" "n32dw n32g" "32-bit without frame pointers" "no sid toolchain (kernel-vm/sid-cc) here"
		conf_needs "$job/oldperf/perf" "old61g old61dw old61m old61tp old61p" "recorded by an older perf" \
			"no perf older than 7 on this host"
		# CONF_SHAPES (developers): the guest records those alone
		[ -z "${CONF_SHAPES:-}" ] || echo "$CONF_ALL_SHAPES" | tr ' ' '\n' | grep . >"$job/only"
		conf_guest_record "$job" "$conf_work/guest"
		for d in "${conf_boots[@]}"; do
			[ -d "$d" ] || continue
			mkdir -p "$d/symfs/job"
			cp "$job"/wl "$job"/wl32 "$job"/wlxx "$job"/cxxc "$job"/jit "$job"/wlstrip "$d/symfs/job/"
			[ ! -x "$job/rs" ] || cp "$job"/rs "$job"/rsv0 "$d/symfs/job/"
			[ ! -x "$job/gowl" ] || cp "$job"/gowl "$d/symfs/job/"
			[ ! -x "$job/wlclang" ] || cp "$job"/wlclang "$job"/wlxxclang "$d/symfs/job/"
			cp "$job"/wlnofp "$job"/wlxxnofp "$job"/wldyn "$d/symfs/job/"
			cp "$job"/wlstatic "$job"/wlnopie "$job"/wlname "$job"/wldup "$job"/wldl "$job"/libplug[12].so "$d/symfs/job/"
			[ ! -x "$job/wl32nofp" ] || cp "$job"/wl32nofp "$d/symfs/job/"
		done
	fi
	local any=
	for shape in $CONF_ALL_SHAPES; do
		conf_dir[$shape]=${conf_boots[0]}
		for d in "${conf_boots[@]}"; do
			[ ! -s "$d/$shape.data" ] || conf_dir[$shape]=$d
		done
	done
	for d in "${conf_boots[@]}"; do [ ! -s "$d/kallsyms" ] || any=1; done
	[ -n "$any" ] || return
	local failed
	failed=$(cat "${conf_boots[@]/%//rc}" 2>/dev/null | awk '$2 != 0')
	[ -z "$failed" ] || bad "conformance: perf record failed in the guest: $failed"
	# perf 7.2 reads a JIT map from its own /tmp (perf ignores --symfs for
	# them, dstack looks under it): the map goes there for the comparison
	# (a file already there, e.g. left by an interrupted run, is kept aside
	# and put back after)
	local root=${KVM_CACHE:-/var/tmp/kernel-vm}/root m t placed=()
	for m in $(for d in "${conf_boots[@]}"; do ls "$d"/perf-*.map 2>/dev/null; done); do
		mkdir -p "$(dirname "$m")/symfs/tmp"
		cp "$m" "$(dirname "$m")/symfs/tmp/"
		t=$root/tmp/$(basename "$m")
		[ ! -e "$t" ] || mv "$t" "$conf_work/$(basename "$m").aside"
		cp "$m" "$t" && placed+=("$t")
	done
	conf_header
	for shape in $CONF_ALL_SHAPES; do
		d=${conf_dir[$shape]}
		if [ ! -s "$d/$shape.data" ]; then bad "conformance: $shape: no recording"; continue; fi
		conf_start "" "$shape" "$d/$shape.data" "$d/symfs" "$d/kallsyms"
	done
	conf_finish_all
	for t in "${placed[@]}"; do
		rm -f "$t"
		[ ! -e "$conf_work/$(basename "$t").aside" ] || mv "$conf_work/$(basename "$t").aside" "$t"
	done
	conf_reshaped
	conf_modules
}

# Report widths of kernel module symbols (perf counts "name\t[module]",
# its kallsyms line's rest, where it prints "name"): the system-wide
# shapes' samples in bracketed objects (modules, [vdso]) alone (--dsos), so
# that no longer symbol of the kernel's decides the Symbol column (and a
# --dsos list keeps the object column of unresolved entries narrow).
conf_modules() {
	local shape d mods o n=0 res
	for shape in modsys modsysd sysw; do
		d=${conf_dir[$shape]:-}
		[ -n "$d" ] && [ -s "$d/$shape.data" ] || continue
		mods=$("$DSTACK" report --stdio --no-children -g none --sort dso -i "$d/$shape.data" --kallsyms "$d/kallsyms" \
			--symfs "$d/symfs" 2>/dev/null | awk '$2 ~ /^\[/ && $2 != "[kernel.kallsyms]" && $2 != "[unknown]" {print $2}' | paste -sd,)
		[ -n "$mods" ] || continue
		o=$conf_work/$shape-modules
		"$KVM_PERF7" report --stdio --no-children -g none --dsos "$mods" -i "/host$d/$shape.data" \
			--kallsyms "/host$d/kallsyms" --symfs "/host$d/symfs" >"$o.perf" 2>/dev/null
		"$DSTACK" report --stdio --no-children -g none --dsos "$mods" -i "$d/$shape.data" \
			--kallsyms "$d/kallsyms" --symfs "$d/symfs" >"$o.dstack" 2>/dev/null
		n=$((n + 1))
		if res=$(python3 "$ROOT/tests/check_conformance.py" "$o.perf" "$o.dstack"); then
			ok "conformance $shape: report of the module samples alone (--dsos $mods): ${res%%$'\t'*} lines as perf 7.2's"
		else
			bad "conformance $shape: report of the module samples alone (--dsos $mods) differs from perf 7.2's: ${res#*$'\t'}"
		fi
	done
	[ "$n" -gt 0 ] || echo "info conformance: no sample in a kernel module in the system-wide shapes: module symbol widths not compared"
}

# Recordings reshaped (tests/reshape.py) into what the kernel writes only
# now and then, so that every run meets it: callchains with a value no
# context has (perf discards them whole); samples after their process's
# EXIT (perf script has forgotten the thread: ":TID", no maps); a hybrid
# machine's PMUs; a build-id table naming the kernel by a vmlinux path.
# And a system-wide recording read with an empty kallsyms file (no kernel
# symbols: perf keeps the kernel map's recorded end, so init text past it
# is in no map).
conf_reshaped() {
	local pair shape form d said ks
	for pair in fp:bad-context fp:early-exit delay:pmus modsys:kbuildids sysw:nokallsyms; do
		shape=${pair%%:*} form=${pair#*:}
		d=${conf_dir[$shape]:-}
		[ -n "$d" ] && [ -s "$d/$shape.data" ] || continue
		ks=$d/kallsyms
		if [ "$form" = nokallsyms ]; then
			ks=$conf_work/empty.kallsyms
			: >"$ks"
			cp "$d/$shape.data" "$conf_work/$shape-$form.data"
			said="an empty kallsyms"
		elif ! said=$(python3 "$ROOT/tests/reshape.py" "$form" "$d/$shape.data" "$conf_work/$shape-$form.data" 2>&1); then
			bad "conformance $shape-$form: the recording could not be reshaped: $said"
			continue
		fi
		conf_start " ($said)" "$shape-$form" "$conf_work/$shape-$form.data" "$d/symfs" "$ks"
	done
	conf_finish_all
}

# The host's perf 6.1 (an older perf's files): no callchains, -g, C++
# functions without linkage names, several events, a perf.data directory
# (--threads), a group sampled by its leader, per-thread samples without
# a time, system wide.  Needs root (perf_event_paranoid) and perf7 only.
conf_host() {
	local d=$conf_work/host
	local wl=$d/wl
	if [ ! -x /usr/bin/perf ] || [ "$(id -u)" != 0 ]; then
		echo "SKIPPED conformance on perf 6.1 recordings: *** no host perf or not root ***"; return
	fi
	mkdir -p "$d"
	cc -O2 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -pthread -o "$wl" "$ROOT/tests/corpus/wl.c" || {
		bad "conformance: host workload does not build"; return; }
	c++ -O2 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -o "$d/cxxc" "$ROOT/tests/vm/conformance-cxxc.cc" || {
		bad "conformance: host C++ workload does not build"; return; }
	cp /proc/kallsyms "$d/kallsyms"
	local ev="-e cpu-clock -c 200000"
	/usr/bin/perf record -q -o "$d/h_nocg.data" $ev -- "$wl" mix 150 >/dev/null 2>&1
	/usr/bin/perf record -q -o "$d/h_g.data" $ev -g -- "$wl" mix 150 >/dev/null 2>&1
	/usr/bin/perf record -q -o "$d/h_cxxc.data" $ev -g -- "$d/cxxc" 800 >/dev/null 2>&1
	/usr/bin/perf record -q -o "$d/h_multi.data" -c 200000 -e cpu-clock -e task-clock:u -e page-faults:k -g -- "$wl" mix 150 >/dev/null 2>&1
	# a perf.data directory (one data.N file per recording thread)
	/usr/bin/perf record -q -o "$d/h_thr.data" --threads -e cpu-clock -c 200000 -g -- "$wl" threads 10 >/dev/null 2>&1
	# an event group with callchains, sampled by its leader (members' samples from the counter reads)
	/usr/bin/perf record -q -o "$d/h_lead.data" -e '{cpu-clock,task-clock}:S' -c 200000 -g -- "$wl" mix 100 >/dev/null 2>&1
	# per-thread mmaps: samples without a time (a --time filter takes none of them)
	/usr/bin/perf record -q -o "$d/h_pthr.data" --per-thread -e cpu-clock -c 200000 -g -- "$wl" threads 10 >/dev/null 2>&1
	"$wl" cpu 100000 >/dev/null 2>&1 & local w=$!
	/usr/bin/perf record -q -o "$d/h_sysw.data" -a -g -e cpu-clock -c 1000000 -- sleep 0.5 >/dev/null 2>&1
	kill $w; wait $w 2>/dev/null
	conf_header
	local shape
	for shape in h_nocg h_g h_cxxc h_multi h_thr h_lead h_pthr h_sysw; do
		if [ ! -s "$d/$shape.data" ] && [ ! -s "$d/$shape.data/data" ]; then bad "conformance: perf 6.1 did not record $shape"; continue; fi
		# the host's binaries at their own paths: symfs "/" for both
		# system wide, this machine runs other work too: binaries rebuilt
		# between the recording and the reading resolve differently by
		# build-id, so only the workload, the recorder and the idle tasks
		local only=()
		[ "$shape" = h_sysw ] && only=(--comm "wl,sleep,perf,swapper")
		conf_start " (perf 6.1 file)" "$shape" "$d/$shape.data" / "$d/kallsyms" "${only[@]}"
	done
	conf_finish_all
}

mkdir -p "$conf_work"
rm -f "$conf_work/diffs" "$conf_work/all-diffs"
if [ -n "${DSTACK_NO_VM:-}" ]; then
	echo "SKIPPED conformance in the guest: *** $DSTACK_NO_VM ***"
elif ! kvm_ready; then
	echo "SKIPPED conformance in the guest: *** the kernel-vm guest is not set up (../shared/kernel-vm/setup) ***"
else
	echo "== conformance: perf lines dstack printed the same / perf's lines (* = differs; ~ = only call-graph siblings of equal weight in another order)"
	conf_guest
	[ -n "${CONF_SHAPES:-}" ] || conf_host   # CONF_SHAPES (developers): those guest shapes only
	[ ! -s "$conf_work/all-diffs" ] || { echo "== differences:"; cat "$conf_work/all-diffs"; }
fi
