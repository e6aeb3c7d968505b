#!/bin/sh
# Guest job (tests/suites/83-unwind.sh): perf 7.2 records each workload with
# --call-graph dwarf (a copy of the user stack and registers per sample);
# dstack record does too when the job holds ./dstack.
cd /job
ev="-e cpu-clock -c 500000 --call-graph dwarf"
uname -r >/out/uname.txt
r() { name=$1; shift; perf record $ev -o /out/$name.data -- "$@" >/out/$name.log 2>&1; echo "$name rc $?" >>/out/rc; }
r c ./uw all 40
r cxx ./uwxx 10
r c32 ./uw32 all 20
r bc32 ./bc32
r bc64 ./bc64
r sf3 ./sf3 40
r sf3x ./sf3x 60
r sf2 ./sf2 40
r sf2x ./sf2x 60
# The vDSO, read where it was recorded: perf 7.2 takes its own process's
# image for a recording's [vdso] maps; dstack must print the same
r vd ./vd
perf script --no-inline -i /out/vd.data >/out/vd.guest.script 2>/out/vd.guest.err
[ ! -x ./dstack ] || ./dstack script --no-inline -i /out/vd.data >/out/vd.dstack.script 2>/out/vd.dstack.err
if [ -x ./dstack ]; then
	# dstack's own dwarf-mode recording (perf 7.2 must read it)
	./dstack record $ev -o /out/d_c.data -- ./uw all 10 >/out/d_c.log 2>&1; echo "d_c rc $?" >>/out/rc
	# an i386 task in the vDSO: dstack record keeps the [vdso32] image in
	# its build-id cache (perf's helper for it needs an i386 C library,
	# which the guest lacks), and unwinds through it
	PERF_BUILDID_DIR=/out/dcache ./dstack record $ev -o /out/d_vd32.data -- ./vd32 >/out/d_vd32.log 2>&1
	echo "d_vd32 rc $?" >>/out/rc
	PERF_BUILDID_DIR=/out/dcache perf script --no-inline -i /out/d_vd32.data >/out/d_vd32.guest.script 2>/out/d_vd32.guest.err
	PERF_BUILDID_DIR=/out/dcache ./dstack script --no-inline -i /out/d_vd32.data >/out/d_vd32.dstack.script \
		2>/out/d_vd32.dstack.err
	# The hybrid, unprivileged: perf_event_paranoid 1 (own tasks, kernel
	# included, no system-wide tracking event), as user nobody.  wl fork:
	# each child exits inside the kernel, where its deferred record is
	# lost.  Each run's CPU ticks (recorder + workload: /proc stat of the
	# waiting shell) against the workload alone (h_none).
	echo 1 >/proc/sys/kernel/perf_event_paranoid
	mkdir -p /tmp/h && chmod 777 /tmp/h
	h() {
		name=$1; shift
		setpriv --reuid=65534 --regid=65534 --clear-groups sh -c '"$@" >"$0.log" 2>&1; echo $?; cat /proc/$$/stat' \
			/tmp/h/$name "$@" >/out/$name.t
		echo "$name rc $(head -1 /out/$name.t) ticks $(tail -1 /out/$name.t | awk '{print $16+$17}')" >>/out/hybrid
		cp /tmp/h/$name.* /out/ 2>/dev/null
	}
	r="./dstack record -e cpu-clock -c 100000"
	h h_none ./wl fork 40
	h h_defer $r --call-graph fp,defer -o /tmp/h/h_defer.data -- ./wl fork 40
	h h_snap512 $r --call-graph fp,defer --stack-snapshot 512 -o /tmp/h/h_snap512.data -- ./wl fork 40
	h h_snap2048 $r --call-graph fp,defer --stack-snapshot 2048 -o /tmp/h/h_snap2048.data -- ./wl fork 40
	h h_dwarf $r --call-graph dwarf -o /tmp/h/h_dwarf.data -- ./wl fork 40
	echo -1 >/proc/sys/kernel/perf_event_paranoid
fi
ls -l /out >/out/ls.txt
