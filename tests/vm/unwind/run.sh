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
r sf3 ./sf3 40
r sf3x ./sf3x 60
r sf2 ./sf2 40
r sf2x ./sf2x 60
if [ -x ./dstack ]; then
	./dstack record $ev -o /out/d_c.data -- ./uw all 6 >/out/d_c.log 2>&1; echo "d_c rc $?" >>/out/rc
fi
ls -l /out >/out/ls.txt
