#!/bin/sh
# Guest job (tests/suites/85-debuginfod.sh, kernel-vm): perf record 7.x, as it records by
# default (build-ids in the MMAP2 records, no build-id table in the header), of two
# stripped static binaries: prog, whose debug file the test's debuginfod server has, and
# other, whose it has not.
cd /job
perf record -e cpu-clock:u -c 100000 -g -o /out/mmap2.data -- sh -c './prog base 12; ./other base 6' \
	>/out/rec.log 2>&1
echo "rc $?" >/out/rc
