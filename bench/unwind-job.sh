#!/bin/sh
# Guest job (bench/run.sh, bench_dwarf): a dwarf-mode recording of at least
# 10,000 samples of tests/vm/unwind/uw.c (libc qsort callbacks, threads, a
# signal handler; no frame pointers), by perf 7.2.
cd /job
perf record -e cpu-clock -c 100000 --call-graph dwarf -o /out/dwarf.data -- ./uw all 450 >/out/dwarf.log 2>&1
echo "rc $?" >>/out/dwarf.log
