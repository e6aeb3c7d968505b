#!/bin/sh
# Guest job of tests/suites/90-real.sh (kernel-vm, Linux 7.x): Debian's own
# python3 with its perf trampolines (-X perf writes /tmp/perf-PID.map),
# recorded by perf 7.x with deferred user callchains (fp,defer).  The
# guest's vDSO images (64- and 32-bit) come back in /out/buildid, kept
# there by dstack record (/job/dstack), to check the names of vDSO frames.
cd /job
py=$(ls /usr/bin/python3.[0-9]* 2>/dev/null | grep -E 'python3\.[0-9]+$' | sort -V | tail -1)
echo "$py" >/out/python
perf record -e cpu-clock -F 250 --call-graph fp,defer -o /out/py.data -- "$py" -X perf /job/work.py small \
	>/out/py.log 2>&1
echo "py rc $?" >/out/rc
cp /tmp/perf-*.map /out/ 2>/dev/null
# a 32-bit static binary of gcc 16 (sid-cc -m32 -static -O2 -g), when the
# suite could build one: fp,defer and dwarf
if [ -x /job/wl32s ]; then
	perf record -e cpu-clock -c 100000 --call-graph fp,defer -o /out/w32.defer.data -- /job/wl32s mix 30 \
		>/out/w32.defer.log 2>&1
	echo "w32.defer rc $?" >>/out/rc
	perf record -e cpu-clock -c 100000 --call-graph dwarf -o /out/w32.dwarf.data -- /job/wl32s mix 20 \
		>/out/w32.dwarf.log 2>&1
	echo "w32.dwarf rc $?" >>/out/rc
fi
if [ -x /job/dstack ]; then
	PERF_BUILDID_DIR=/out/buildid /job/dstack record -q --call-graph dwarf -o /tmp/v.data -- true >/dev/null 2>&1
	[ ! -x /job/wl32s ] ||
		PERF_BUILDID_DIR=/out/buildid /job/dstack record -q --call-graph dwarf -o /tmp/v.data -- /job/wl32s mix 1 >/dev/null 2>&1
fi
exit 0
