#!/bin/sh
# Guest job (tests/suites/70-record.sh, kernel-vm): records the corpus workloads with
# `dstack record --call-graph fp,defer` and with the guest's `perf record`, same
# options, into /out; timings of the recorders go to /out/times.
cd /job
# the guest's perf reads the tests' configuration (tests/lib/perfconfig)
export PERF_CONFIG=/job/perfconfig
ev="-e cpu-clock -c 100000 --call-graph fp,defer"
t() { # NAME CMD...: CPU ticks (user+sys) of CMD and its children, in a shell of its
	# own so that a background workload reaped meanwhile is not counted
	name=$1; shift
	sh -c '"$@" >"$0" 2>&1; echo $?; cat /proc/$$/stat' "/out/$name.log" "$@" >/out/$name.t
	echo "$name rc $(head -1 /out/$name.t)" >>/out/times
	echo "$name ticks $(tail -1 /out/$name.t | awk '{print $16+$17}')" >>/out/times
}
uname -r >/out/uname.txt
# command targets: fork + exit per iteration (tasks exit inside the kernel).  The
# workload's own CPU time (a shell's `times`: its waited children) goes to
# /out/NAME.cpu: the samples a recorder took are checked against it, since the
# emulation's pace (host load) changes the CPU time of the same work run to run.
# Buffers of 2 MB: the check counts stacks lost at task exit, and a recorder
# starved by the host's load long enough to overflow 512 KB (LOST records:
# 3501 events once beside a CPU hog) loses others too
# The tasks: the shell, wl and its children, each with an EXIT record, and
# a FORK record each but the shell (forked before the recording starts).
children=60
echo "fork children $children" >>/out/times
t d_fork ./dstack record -v -m 512 $ev -o /out/d_fork.data -- sh -c "./wl fork $children; times >/out/d_fork.cpu"
t p_fork perf record -m 512 $ev -o /out/p_fork.data -- sh -c "./wl fork $children; times >/out/p_fork.cpu"
# end of profile: `wl tail` sits in a long read() when `-a -- sleep 2` stops; dstack
# waits (--defer-grace) for the records the kernel writes when the read returns.
# The workload runs in a loop (a short mix, then a long read, again) so that the
# stop finds it in the read whatever the emulation's pace; the loop is stopped
# after the recorder, and the wl in its read finishes by itself.  Should the stop
# still miss the read, the pair runs again (3 tries at most) until perf record's
# file shows the loss under test (over 100 samples unresolved); the check reads
# the last pair, and the tries go to /out/times.
tail_loop() { while :; do ./wl tail 5; done >/dev/null 2>&1; }
for try in 1 2 3; do
	tail_loop & w=$!
	sleep 1
	t d_tail ./dstack record -a $ev --defer-grace 60000 -o /out/d_tail.data -- sleep 2
	kill $w; wait $w 2>/dev/null
	tail_loop & w=$!
	sleep 1
	t p_tail perf record -a $ev -o /out/p_tail.data -- sleep 2
	kill $w; wait $w 2>/dev/null
	lost=$(./dstack stat -i /out/p_tail.data 2>/dev/null | awk '$1 == "unresolved" {print $2}')
	[ "${lost:-0}" -gt 100 ] && break
done
echo "tail tries $try" >>/out/times
# overhead: system wide, a CPU-bound workload, the recorder's own CPU time
./wl cpu 100000 >/dev/null & w=$!
sleep 0.5
t d_cpu ./dstack record -a $ev -o /out/d_cpu.data -- sleep 2
t p_cpu perf record -a $ev -o /out/p_cpu.data -- sleep 2
kill $w 2>/dev/null; wait $w 2>/dev/null
# pipe mode
./dstack record $ev -o - -- ./wl cpu 100 >/out/d_pipe.data 2>/out/d_pipe.log; echo "d_pipe rc $?" >>/out/times
# the same files through the guest's perf script and dstack script (same binaries)
for f in d_fork d_tail; do
	perf script -i /out/$f.data >/out/$f.pscript 2>/out/$f.pscript.err
	./dstack script -i /out/$f.data >/out/$f.dscript 2>/out/$f.dscript.err
done
ls -l /out >/out/ls.txt
