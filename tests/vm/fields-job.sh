#!/bin/sh
# Guest job (tests/suites/81-script-fields.sh, kernel-vm): records, with the
# guest's perf 7.x, the shapes `dstack script` must print as perf does:
# no callchains, several events, modifiers, pipe mode, system wide, sample
# types with addresses and weights, group reads.  Each run is a fraction of
# a second of the static workload (./wl); files go to /out.
cd /job
r() { # NAME OPTS...: perf record OPTS -- ./wl mix 6, into /out/NAME.data
	name=$1; shift
	perf record "$@" -o /out/$name.data -- ./wl mix 6 >/out/$name.log 2>&1
	echo "$name rc $?" >>/out/rcs
}
r nocg -e cpu-clock -c 100000
r multi -e cpu-clock,task-clock -c 100000
r multig -g -e cpu-clock,task-clock -c 200000
r multif -e cpu-clock:u,page-faults -F 999
r mods -e cpu-clock:k,task-clock:u,page-faults:uk -c 100000
r addr -d -W --phys-data -e page-faults -c 1
r group -e '{cpu-clock,task-clock}:S' -c 100000
# pipe mode: the names come from the attrs (perf derives them, with modifiers)
perf record -e cpu-clock:u,task-clock -c 100000 -o - -- ./wl mix 6 >/out/pipe.data 2>/out/pipe.log
echo "pipe rc $?" >>/out/rcs
perf record -g -e cpu-clock:k -c 100000 -o - -- ./wl mix 6 >/out/pipeg.data 2>/out/pipeg.log
echo "pipeg rc $?" >>/out/rcs
# modifiers perf spells out when a pipe carries no names (the suite strips them)
perf record -e cpu-clock:uh,task-clock:kH,page-faults:uG -c 100000 -o - -- ./wl mix 6 >/out/pipemods.data 2>/out/pipemods.log
echo "pipemods rc $?" >>/out/rcs
# system wide, no callchains
./wl cpu 100000 >/dev/null 2>&1 & w=$!
perf record -a -e cpu-clock -c 100000 -o /out/sys.data -- sleep 0.3 >/out/sys.log 2>&1
echo "sys rc $?" >>/out/rcs
kill $w; wait $w 2>/dev/null
ls -l /out >/out/ls.txt
