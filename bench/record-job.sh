#!/bin/sh
# Guest job of `make bench` (kernel-vm): the recorders' own cost.  The same
# system-wide recording (-a, deferred callchains, 10 kHz per CPU) of a
# CPU-bound and a kernel-heavy workload, dstack and perf record alternately,
# ROUNDS times.  Per run: CPU ticks of the recorder alone (the workload runs
# outside it), file size and sample count.
cd /job
ev="-e cpu-clock -c 100000 --call-graph fp,defer"
run() { # NAME RECORDER...: one recording of `sleep 2`, system wide
	name=$1; shift
	sh -c '"$@" >/dev/null 2>&1; cat /proc/$$/stat' sh "$@" -a $ev -o /out/$name.data -- sleep 2 >/out/$name.t
	echo "$name $(awk '{print $16+$17}' /out/$name.t) $(stat -c %s /out/$name.data)" >>/out/bench
}
for wl in cpu kernel; do
	./wl $wl 100000000 >/dev/null & w=$!
	sleep 0.5
	for i in $(seq ${ROUNDS:-3}); do
		run d_${wl}_$i ./dstack record
		./dstack stat -i /out/d_${wl}_$i.data | awk -v n=d_${wl}_$i '$1 == "samples" { print n, $2 }' >>/out/samples
		run p_${wl}_$i perf record
		./dstack stat -i /out/p_${wl}_$i.data | awk -v n=p_${wl}_$i '$1 == "samples" { print n, $2 }' >>/out/samples
		rm -f /out/*_$i.data
	done
	kill $w; wait $w 2>/dev/null || true
done
exit 0
