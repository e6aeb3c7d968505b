#!/bin/sh
# Guest job (tests/suites/80-conformance.sh, kernel-vm): records one perf.data
# per shape with the guest's perf 7.2 into /out, which the suite then reads
# with dstack and with perf 7.2 on the host.  Every workload is a few tenths
# of a second of guest CPU.  Each shape's exit status goes to /out/rc.
#
# A guest kernel that crashes while perf records loses /out (a tmpfs): so
# after each shape /out is written to /dev/vda as the init's final tar would
# be, and the host keeps the shapes done before a crash.  The console names
# the shape in progress.  /job/only, if present, lists the shapes to record
# (the host's second boot after a crash).
cd /job || exit 1
mkdir -p /out
# the guest's shared libraries the workloads ran with, for --symfs
for f in /lib64/ld-linux-x86-64.so.2 /lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 \
	/usr/lib/x86_64-linux-gnu/libc.so.6 /usr/lib/x86_64-linux-gnu/libm.so.6 \
	/usr/lib/x86_64-linux-gnu/libstdc++.so.6 /usr/lib/x86_64-linux-gnu/libgcc_s.so.1; do
	r=$(readlink -f "$f") || continue
	for p in "$f" "$r"; do
		mkdir -p "/out/symfs$(dirname "$p")"
		cp "$r" "/out/symfs$p"
	done
done
want() { [ ! -f /job/only ] || grep -qx "$1" /job/only; }
start() { echo "conformance-job: recording $1" >/dev/console; }
done_shape() { # NAME STATUS
	echo "$1 $2" >>/out/rc
	cp /tmp/perf-*.map /out/ 2>/dev/null
	tar cf /dev/vda -C /out . 2>/dev/null && sync
}
rec() { # NAME PERF-RECORD-ARGS...: /out/NAME.data, its log /out/NAME.log
	name=$1; shift
	want "$name" || return 0
	start "$name"
	perf record -o "/out/$name.data" "$@" >"/out/$name.log" 2>&1
	done_shape "$name" $?
}
# no callchains at all
rec nocg -e cpu-clock -c 100000 -- ./wl mix 20
# several events: types, periods (-c, -F, a per-event period) and :u / :k
rec multi -g -c 100000 -e cpu-clock -e task-clock:u -e page-faults:k -- ./wl mix 20
rec multif -F 2000 -e cpu-clock:u -e page-faults/period=1/ -e cpu-clock/period=300000/k -- ./wl mix 20
# classic and deferred frame-pointer callchains
rec fp -e cpu-clock -c 100000 --call-graph fp -- ./wl mix 20
rec defer -e cpu-clock -c 100000 --call-graph fp,defer -- ./wl mix 20
# 32-bit static binary (vdso32, glibc's aliased symbols), classic and deferred
rec w32 -e cpu-clock -c 100000 -g -- ./wl32 mix 20
rec w32d -e cpu-clock -c 100000 --call-graph fp,defer -- ./wl32 mix 20
# exec (samples at the exec's COMM), fork, threads
rec exec -e cpu-clock -c 100000 -g -- ./wl exec 6
rec fork -e cpu-clock -c 100000 --call-graph fp,defer -- ./wl fork 8
rec threads -e cpu-clock -c 100000 --call-graph fp,defer -- ./wl threads 40
# C++
rec cxx -e cpu-clock -c 100000 --call-graph fp,defer -- ./wlxx 15
# C++ functions without a linkage name (main, extern "C", their inlined
# instances): addr2line names them after the ELF symbol at first
rec cxxc -e cpu-clock -c 100000 -g -- ./cxxc 800
rec cxxcd -e cpu-clock -c 100000 --call-graph fp,defer -- ./cxxc 800
# a JIT perf map (the map files come back with the recording)
rec jit -e cpu-clock -c 100000 -g -- ./jit 20
# pipe mode and zstd-compressed records
if want pipe; then
	start pipe
	perf record -e cpu-clock -c 100000 --call-graph fp,defer -o - -- ./wl mix 15 >/out/pipe.data 2>/out/pipe.log
	done_shape pipe $?
fi
rec zstd -z -e cpu-clock -c 100000 --call-graph fp,defer -- ./wl mix 15
# system wide, with a task that was running before the recording started
./wl cpu 100000 >/dev/null 2>&1 & w=$!
sleep 0.5
rec sysw -a -e cpu-clock -c 200000 -g -- sleep 0.5
# kernel module code (virtio_blk: its symbols come from kallsyms' module
# lines) in system-wide profiles, classic and deferred (perf delivers the
# deferred samples when their task's record comes, the others at once);
# the deferred one with the build-id table older perfs write, which lists
# the module by its path (perf names the module's object by it)
rec modsys -a -g -e cpu-clock -c 100000 -- dd if=/dev/vda of=/dev/null bs=64k count=1500
rec modsysd -a --call-graph fp,defer --no-buildid-mmap -e cpu-clock -c 100000 -- dd if=/dev/vda of=/dev/null bs=64k count=1500 skip=1500
# attach to a running process (-p), then stop it
rec attach -e cpu-clock -c 100000 --call-graph fp,defer -p $w -- sleep 0.5
kill $w; wait $w 2>/dev/null
# one thread of a running process (-t): perf synthesizes the thread's COMM
# before its process's, whose maps the thread shares
if want tidt; then
	./wlname 1 forever >/dev/null 2>&1 & w=$!
	sleep 0.5
	rec tidt -e cpu-clock -c 100000 --call-graph fp,defer -t "$(ls /proc/$w/task | sort -n | tail -1)" -- sleep 0.5
	kill $w; wait $w 2>/dev/null
fi
# chains of one side only: the kernel's (a user sample's chain is empty),
# the user's (a kernel sample's chain lacks its own ip)
rec kcc -e cpu-clock -c 200000 --call-graph fp --kernel-callchains -- ./wl mix 5
rec ucc -e cpu-clock -c 200000 --call-graph fp,defer --user-callchains -- ./wl mix 5
# context-switch records (perf report's Latency columns), threads
rec swev --switch-events -e cpu-clock -c 500000 -g -- ./wl threads 3
# tracepoints only (perf report sorts by their text), with dwarf stacks
rec tpdw -e sched:sched_switch --call-graph dwarf,4096 -- ./wl fork 4
rec tpraw -e raw_syscalls:sys_enter,raw_syscalls:sys_exit -- ./wl fork 2
# a sampling event beside tracepoints, which sample the CPU where it does
# not: -C is refused (perf asks it of each type's first event)
rec evmix -e cpu-clock -c 200000 -g -e sched:sched_process_fork -e sched:sched_process_exit -- ./wl fork 4
# a tracepoint with deferred callchains, system wide: the records come on a
# dummy event, the only one of its type (perf prints their frames bare)
rec swtd -a -e sched:sched_switch --call-graph fp,defer -- ./wl threads 10
# deferred records lost (one-page buffers, a high rate): perf gives a held
# sample up when a record of another cookie of its task comes
rec lost -m 1 -e cpu-clock -c 10000 --call-graph fp,defer -- ./wl threads 8
# every syscall's entry tracepoint with callchains (Linux 7.2's read the
# user buffers of some: __print_dynamic_array in their print fmt)
rec sysc -e 'syscalls:sys_enter_*' -g -- ./wl fork 4
# threads with classic callchains, and system wide with context switches
# (a thread's samples after its own and its leader's EXIT, now and then)
rec thrg -e cpu-clock -c 100000 -g -- ./wl threads 10
rec asw -a --switch-events -e cpu-clock -c 100000 -g -- ./wl threads 4
# an event group: perf report's group view (a column per member)
rec grp -e '{cpu-clock,task-clock}' -c 200000 -- ./wl mix 5
# an event group with callchains: perf's group view with the leader's call graphs
rec grpg -e '{cpu-clock,task-clock}' -c 200000 -g -- ./wl mix 5
# a perf.data directory (--threads: a data.N file per recording thread), deferred; and compressed
# (each file its own zstd stream)
rec thrd --threads -e cpu-clock -c 100000 --call-graph fp,defer -- ./wl threads 4
rec zthr -z --threads -e cpu-clock -c 100000 -g -- ./wl threads 4
# a stripped binary (its PLT stubs stay unnamed: its .dynsym names no function)
rec strip -e cpu-clock -c 100000 --call-graph fp,defer -- ./wlstrip mix 8
# per-event call-graph terms: dwarf for one event, frame pointers for the other
rec evcg -e cpu-clock/call-graph=dwarf/ -e task-clock/call-graph=fp/ -c 200000 -- ./wl mix 5
# perf's own clock (-k): the header's clockid and reference time
rec clk -k mono -e cpu-clock -c 200000 -- ./wl mix 5
# no inheritance: the children of fork are not followed
rec noinh --no-inherit -e cpu-clock -c 100000 -g -- ./wl fork 8
# kernel addresses hidden (kptr_restrict, as for most users not root): no kernel map recorded
if want kptr; then
	old=$(cat /proc/sys/kernel/kptr_restrict)
	echo 2 >/proc/sys/kernel/kptr_restrict
	rec kptr -e cpu-clock -c 100000 --call-graph fp,defer -- ./wl fork 3
	echo "$old" >/proc/sys/kernel/kptr_restrict
fi
# no timestamps, deferred: no time order (perf's order of held samples and side-band records)
rec notsd --no-timestamp -e cpu-clock -c 100000 --call-graph fp,defer -- ./wl mix 10
# context switches of one thread: perf shows no latency column (no parallelism above 1)
rec swev1 --switch-events -e cpu-clock -c 500000 -g -- ./wl mix 5
# a start delay: perf adds a dummy tracking event (no CPU field) before the sampling one;
# reshaped by the suite into a hybrid machine's hardware event (tests/reshape.py pmus)
rec delay -D 20 -e cpu-clock -c 100000 -g -- ./wl mix 10
# Rust (when the host built it): legacy names of the crate and v0 ones of
# std, classic; v0 throughout, deferred
if [ -x ./rs ]; then
	rec rs -e cpu-clock -c 200000 -g -- ./rs 4
	rec rsv0 -e cpu-clock -c 200000 --call-graph fp,defer -- ./rsv0 4
fi
# C and C++ built by clang (when the host has it): no .debug_aranges
if [ -x ./wlclang ]; then
	rec clc -e cpu-clock -c 100000 -g -- ./wlclang mix 20
	rec clxx -e cpu-clock -c 100000 --call-graph fp,defer -- ./wlxxclang 20
fi
# Go (when the host built it): no .debug_aranges, functions without
# linkage names, frame pointers; and the same through stack copies
if [ -x ./gowl ]; then
	rec go -e cpu-clock -c 200000 -g -- ./gowl 4
	rec godw -e cpu-clock -c 500000 --call-graph dwarf -- ./gowl 2
fi
# without frame pointers: the kernel's frame-pointer walk (classic and
# deferred) goes astray as perf prints it; stack copies unwound by CFI;
# 32-bit ones read as perf's libdw reads them (8-byte words)
rec nofpg -e cpu-clock -c 100000 -g -- ./wlnofp mix 20
rec nofpd -e cpu-clock -c 100000 --call-graph fp,defer -- ./wlnofp mix 20
rec nofpdw -e cpu-clock -c 200000 --call-graph dwarf -- ./wlnofp mix 10
rec nofpxx -e cpu-clock -c 200000 --call-graph dwarf -- ./wlxxnofp 10
if [ -x ./wl32nofp ]; then
	rec n32dw -e cpu-clock -c 200000 --call-graph dwarf -- ./wl32nofp mix 10
	rec n32g -e cpu-clock -c 100000 -g -- ./wl32nofp mix 20
fi
# main named by .dynsym alone
rec dyn -e cpu-clock -c 100000 -g -- ./wldyn mix 10
# static glibc; a position-dependent main, deferred; COMM records of threads
# renaming themselves; libraries mapped, unmapped and mapped again
rec static -e cpu-clock -c 100000 -g -- ./wlstatic mix 10
rec nopied -e cpu-clock -c 100000 --call-graph fp,defer -- ./wlnopie mix 10
rec named -e cpu-clock -c 100000 --call-graph fp,defer -- ./wlname 3
# two local functions of one name in one binary: two report entries
rec dup -e cpu-clock -c 100000 -g -- ./wldup 20
rec dld -e cpu-clock -c 100000 --call-graph fp,defer -- ./wldl 4
# Python (the guest's) with its perf trampolines: -X perf names each Python
# function in a JIT map; deferred, and through stack copies.  The
# interpreter and its libraries go to the symfs.
if command -v python3 >/dev/null && { want py || want pydw; }; then
	py=$(readlink -f "$(command -v python3)")
	for f in "$py" $(ldd "$py" | awk '$2 == "=>" && $3 ~ /^\// {print $3}'); do
		r=$(readlink -f "$f")
		for p in "$f" "$r"; do
			mkdir -p "/out/symfs$(dirname "$p")"
			cp "$r" "/out/symfs$p"
		done
	done
	rec py -e cpu-clock -c 200000 --call-graph fp,defer -- python3 -X perf ./wl.py 6
	rec pydw -e cpu-clock -c 400000 --call-graph dwarf,8192 -- python3 -X perf ./wl.py 3
fi
# perf sched's tracepoints (system wide) and the raw fields perf's own
# commands record: -R -T -I, the CPU column
if want sched; then
	start sched
	perf sched record -o /out/sched.data -- ./wl fork 4 >/out/sched.log 2>&1
	done_shape sched $?
fi
rec sampall --sample-cpu -R -T -I -e cpu-clock -c 200000 -- ./wl mix 5
# deferred callchains of user-only and kernel-only events side by side, and
# with the fields -d, --phys-data, --data-page-size, --code-page-size and -W
# add to every sample between its callchain's neighbours
rec udk -e cpu-clock:u -e cpu-clock:k -c 100000 --call-graph fp,defer -- ./wl mix 10
rec addr -d --phys-data --data-page-size --code-page-size -W -e cpu-clock -c 100000 --call-graph fp,defer -- ./wl mix 10
# a perf.data directory with no part but its "data" (--kcore; the kcore
# copy itself is dropped: 19 MB to carry back, and the kallsyms beside it
# serves); perf inject's output of a deferred recording (perf 7.2's inject
# drops the deferred records: every cookie stays bare)
rec kcore --kcore -a -e cpu-clock -c 200000 -g -- ./wl mix 3
rm -f /out/kcore.data/kcore_dir/kcore
if want injd; then
	start injd
	perf record -e cpu-clock -c 100000 --call-graph fp,defer -o /tmp/pre.data -- ./wl mix 5 >/out/injd.log 2>&1 &&
		perf inject --buildid-all -i /tmp/pre.data -o /out/injd.data >>/out/injd.log 2>&1
	done_shape injd $?
fi
# recorded by an older perf (the host's, with its libraries): its headers,
# build-id table and event descriptions
if [ -x ./oldperf/perf ]; then
	old() { # NAME PERF-RECORD-ARGS...
		name=$1; shift
		want "$name" || return 0
		start "$name"
		/job/oldperf/ld-linux-x86-64.so.2 --library-path /job/oldperf /job/oldperf/perf record \
			-o "/out/$name.data" "$@" >"/out/$name.log" 2>&1
		done_shape "$name" $?
	}
	old old61g -e cpu-clock -c 100000 -g -- ./wl mix 20
	old old61dw -e cpu-clock -c 200000 --call-graph dwarf -- ./wlnofp mix 10
	old old61m -c 100000 -e cpu-clock -e task-clock:u -e page-faults:k -- ./wl fork 6
	old old61tp -e sched:sched_switch -g -- ./wl fork 4
	if want old61p; then
		start old61p
		/job/oldperf/ld-linux-x86-64.so.2 --library-path /job/oldperf /job/oldperf/perf record \
			-e cpu-clock -c 100000 -g -o - -- ./wl exec 4 >/out/old61p.data 2>/out/old61p.log
		done_shape old61p $?
	fi
fi
ls -l /out >/out/ls.txt
