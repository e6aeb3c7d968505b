#!/bin/sh
# Guest job (tests/suites/83-unwind.sh): perf 7.2 records each workload with
# --call-graph dwarf (a copy of the user stack and registers per sample).
cd /job
ev="-e cpu-clock -c 500000 --call-graph dwarf"
uname -r >/out/uname.txt
r() { name=$1; shift; perf record $ev -o /out/$name.data -- "$@" >/out/$name.log 2>&1; echo "$name rc $?" >>/out/rc; }
r c ./uw all 6
r cxx ./uwxx 3
r c32 ./uw32 all 3
r sf3 ./sf3 4
r sf3x ./sf3x 4
r sf2 ./sf2 4
r sf2x ./sf2x 4
ls -l /out >/out/ls.txt
