#!/bin/sh
# Guest job (tests/suites/70-record.sh, kernel-vm): records the corpus workloads with
# `dstack record --call-graph fp,defer` and with the guest's `perf record`, same
# options, into /out; timings of the recorders go to /out/times.
cd /job
ev="-e cpu-clock -c 100000 --call-graph fp,defer"
t() { # NAME CMD...: CPU ticks (user+sys) of CMD and its children, in a shell of its
	# own so that a background workload reaped meanwhile is not counted
	name=$1; shift
	sh -c '"$@" >"$0" 2>&1; echo $?; cat /proc/$$/stat' "/out/$name.log" "$@" >/out/$name.t
	echo "$name rc $(head -1 /out/$name.t)" >>/out/times
	echo "$name ticks $(tail -1 /out/$name.t | awk '{print $16+$17}')" >>/out/times
}
uname -r >/out/uname.txt
# command targets: fork + exit per iteration (tasks exit inside the kernel)
t d_fork ./dstack record $ev -o /out/d_fork.data -- ./wl fork 60
t p_fork perf record $ev -o /out/p_fork.data -- ./wl fork 60
# end of profile: wl tail sits in a long read() when `-a -- sleep 2` stops; dstack
# waits (--defer-grace) for the records the kernel writes when the read returns
./wl tail 50 >/dev/null & w=$!
sleep 1
t d_tail ./dstack record -a $ev --defer-grace 60000 -o /out/d_tail.data -- sleep 2
wait $w
./wl tail 50 >/dev/null & w=$!
sleep 1
t p_tail perf record -a $ev -o /out/p_tail.data -- sleep 2
wait $w
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
