#!/bin/sh
# Guest job (tests/suites/64-record-faults.sh, kernel-vm): `dstack record
# --call-graph fp,defer` under faults.  Each scenario NAME leaves in /out:
# NAME.data (the recording), NAME.rc and NAME.err (the recorder's status
# and messages), NAME.prc (`perf script` 7.x's status on the file) and
# NAME.stat + NAME.src (`dstack stat` and its status).  A few seconds of
# work each: this is emulation.
cd /job
ev="-e cpu-clock --call-graph fp,defer"
# a pause of 0.2-1.7 s, different each run (random moments to stop at)
pause() { sleep "$(od -An -N1 -tu1 /dev/urandom | awk '{printf "%.2f", 0.2 + $1 / 170}')"; }
readback() { # NAME: the file through perf 7.x and dstack
	perf script -i /out/$1.data >/dev/null 2>/out/$1.perr; echo $? >/out/$1.prc
	./dstack stat -i /out/$1.data >/out/$1.stat 2>/out/$1.serr; echo $? >/out/$1.src
}
# SIGINT, SIGTERM at a random moment while a workload runs
for sig in INT TERM; do
	./dstack record $ev -F 1000 -o /out/sig$sig.data -- ./wl mix 100000 >/dev/null 2>/out/sig$sig.err &
	r=$!
	pause
	kill -$sig $r
	wait $r; echo $? >/out/sig$sig.rc
	readback sig$sig
done
# the target crashes (SIGSEGV), the target execs
./dstack record $ev -F 1000 -o /out/segv.data -- sh -c './wl cpu 300 >/dev/null; kill -SEGV $$' 2>/out/segv.err
echo $? >/out/segv.rc; readback segv
./dstack record $ev -F 1000 -o /out/exec.data -- sh -c 'exec ./wl cpu 300' >/dev/null 2>/out/exec.err
echo $? >/out/exec.rc; readback exec
# -p of a process that exits while recorded
# (the pid sleeps while the recorder attaches, then execs the workload and exits)
sh -c 'sleep 1; exec ./wl cpu 300' >/dev/null & w=$!
sleep 0.3
./dstack record $ev -F 1000 -p $w -o /out/pexit.data 2>/out/pexit.err
echo $? >/out/pexit.rc; wait $w; readback pexit
# -F max, two 5-thread workloads on the guest's CPUs, a 2-page ring: LOST records
# (again, 3 tries at most, until the recorder reports an overrun)
for try in 1 2 3; do
	./wl threads 4000 >/dev/null & w1=$!
	./wl threads 4000 >/dev/null & w2=$!
	./dstack record $ev -F max -m 2 -a -o /out/lost.data -- sleep 2 2>/out/lost.err
	echo $? >/out/lost.rc
	kill $w1 $w2 2>/dev/null; wait $w1 $w2 2>/dev/null
	grep -q "LOST records" /out/lost.err && break
done
echo $try >/out/lost.tries
readback lost
# the output pipe closed by its reader: exits at once, says so, ends the command
start=$(date +%s)
( ./dstack record $ev -F 1000 -o - -- ./wl mix 100000 2>/out/pipe.err; echo $? >/out/pipe.rc ) | (sleep 1; exit 0)
end=$(date +%s)
echo $((end - start)) >/out/pipe.secs
sleep 0.5
for p in /proc/[0-9]*; do [ "$(cat $p/comm 2>/dev/null)" = wl ] && echo "${p#/proc/}"; done >/out/pipe.leftover
cp /proc/sys/kernel/perf_event_max_sample_rate /out/max_rate
ls -l /out >/out/ls.txt
