#!/bin/sh
# Guest job (tests/suites/84-diff.sh, kernel-vm): the same workload recorded twice by
# perf record 7.x with deferred callchains, once as it was (base) and once with one
# known change (new: leaf_a does twice the work, new_func is new), and the base once
# more (base2: what moves between two runs of the same work, the noise).
cd /job
# user-mode samples only (:u): the emulated kernel's share (its deferred unwinds at the
# return to user space, timer interrupts) moves by points with the host's load
ev="-e cpu-clock:u -c 100000 --call-graph fp,defer"
perf record $ev -o /out/base.data -- ./diff-wl base 200 >/out/base.log 2>&1; echo "base rc $?" >>/out/rc
perf record $ev -o /out/new.data -- ./diff-wl new 200 >/out/new.log 2>&1; echo "new rc $?" >>/out/rc
perf record $ev -o /out/base2.data -- ./diff-wl base 200 >/out/base2.log 2>&1; echo "base2 rc $?" >>/out/rc
