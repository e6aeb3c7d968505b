#!/bin/sh
# Guest job (tests/suites/82-tracepoints.sh, kernel-vm): perf 7.2 records
# tracepoint events on workloads with known waits (tests/vm/offcpu-wl.c) and
# on the common subsystems; the host compares `dstack script` with perf's.
cd /job
uname -r >/out/uname.txt
sw="-e sched:sched_switch,sched:sched_wakeup --call-graph fp,defer"
r() { # NAME PERF-RECORD-ARGS...: one recording, its log and exit status
	name=$1; shift
	perf record -q -o /out/$name.data "$@" >/out/$name.log 2>&1
	echo "$name rc $?" >>/out/rcs
}
# off-CPU: known waits, deferred user stacks (20 ms each)
r sleep $sw -- ./owl sleep 10 20
r pipe $sw -- ./owl pipe 10 20
r mutex $sw -- ./owl mutex 10 20
r hog $sw -- ./owl hog 300
# the same sleeps with classic callchains: the cost of a switch, deferred against classic
r sleepfp -e sched:sched_switch,sched:sched_wakeup --call-graph fp -- ./owl sleep 10 20
# the common tracepoints
r rawsys -e 'raw_syscalls:*' -- ./owl sleep 3 5
r openat -e syscalls:sys_enter_openat,syscalls:sys_exit_openat -- cat /etc/passwd /etc/hostname
r irq -e 'irq:*' -a -- sleep 0.3
r timer -e 'timer:*' -a -- sleep 0.2
r kmem -e kmem:kmalloc,kmem:kfree,kmem:kmem_cache_alloc,kmem:mm_page_alloc,kmem:rss_stat -- ls -l /
r block -e 'block:*' -a -- sh -c 'dd if=/dev/zero of=/tmp/z bs=64k count=8 2>/dev/null; sync'
r schedall -e 'sched:*' -a -- ./owl sleep 3 10
# kernel functions printed by name (%ps/%pS: workqueue, ipi, csd, percpu,
# skb) and tasks past their exit (tid -1: rcu_utilization)
r kfuncs -e 'rcu:rcu_utilization,workqueue:*,ipi:*,csd:*,percpu:*,skb:*' -a -- sh -c 'ls -l /proc/self/ >/dev/null; sleep 0.1; ls / >/dev/null' 
# two tracepoints with deferred callchains, system wide: perf prints the
# frames of their deferred records empty, and the file holds a few events
# out of order (tests/check_script.py)
r tpw -e sched:sched_switch -e syscalls:sys_enter_write --call-graph fp,defer -a -- ./owl pipe 10 10
# pipe mode: the tracing data as a HEADER_TRACING_DATA record
perf record -q -o - $sw -- ./owl sleep 3 10 >/out/pipemode.data 2>/out/pipemode.log
echo "pipemode rc $?" >>/out/rcs
# dstack record --off-cpu: deferred and classic, a command and -p PID (stopped by SIGINT)
./dstack record --off-cpu -e cpu-clock --call-graph fp,defer -o /out/dsleep.data -- ./owl sleep 10 20 \
	>/out/dsleep.log 2>/out/dsleep.err
echo "dsleep rc $?" >>/out/rcs
./dstack record --off-cpu -e cpu-clock --call-graph fp -o /out/dsleepfp.data -- ./owl sleep 10 20 \
	>/out/dsleepfp.log 2>/out/dsleepfp.err
echo "dsleepfp rc $?" >>/out/rcs
./dstack record --off-cpu -a -e cpu-clock --call-graph fp,defer -o /out/dall.data -- ./owl sleep 5 20 \
	>/out/dall.log 2>/out/dall.err
echo "dall rc $?" >>/out/rcs
./owl sleep 60 20 >/out/dpid.owl & w=$!
sleep 0.3
./dstack record --off-cpu -e cpu-clock --call-graph fp,defer -p $w -o /out/dpid.data >/out/dpid.log 2>&1 & d=$!
sleep 0.6
kill -INT $d; wait $d
echo "dpid rc $?" >>/out/rcs
wait $w
ls -l /out >/out/ls.txt
