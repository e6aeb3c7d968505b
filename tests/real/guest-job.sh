#!/bin/sh
# Guest job of tests/suites/90-real.sh (kernel-vm, Linux 7.x): Debian's own
# python3 with its perf trampolines (-X perf writes /tmp/perf-PID.map),
# recorded by perf 7.x with deferred user callchains (fp,defer); its
# build-id cache (the vDSO's image among the binaries) comes back in /out.
cd /job
py=$(ls /usr/bin/python3.[0-9]* 2>/dev/null | grep -E 'python3\.[0-9]+$' | sort -V | tail -1)
echo "$py" >/out/python
PERF_BUILDID_DIR=/out/buildid perf record -e cpu-clock -F 250 --call-graph fp,defer -o /out/py.data -- "$py" -X perf /job/work.py small \
	>/out/py.log 2>&1
echo "py rc $?" >/out/rc
cp /tmp/perf-*.map /out/ 2>/dev/null
exit 0
