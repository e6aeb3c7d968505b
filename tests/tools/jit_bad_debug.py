#!/usr/bin/env python3
"""jit_bad_debug.py DUMP... SRCLINE... (the arguments ending in .dump are dumps): drop, in each `script -F ip,sym,dso,srcline`
output, the srcline lines of frames in JIT loads whose debug-info record is
damaged (read as perf reads it, each name to its first NUL, an entry lies
outside the load's code); print how many loads and lines.  node has written
such records (the first bytes of a name overwritten, a NUL among them):
perf 7.2 and dstack then give different wrong lines, and neither is the
source's."""
import re, struct, sys

def bad_loads(path):
    d = open(path, 'rb').read()
    hsz = struct.unpack_from('<I', d, 8)[0]
    off, pend, bad = hsz, None, set()
    while off + 16 <= len(d):
        rid, tsz = struct.unpack_from('<II', d, off)
        if tsz < 16:
            break
        b = d[off + 16:off + tsz]
        if rid == 2 and len(b) >= 16:
            pend = b
        elif rid == 0 and len(b) >= 40:
            _, _, _, ca, cs, idx = struct.unpack_from('<IIQQQQ', b, 0)
            if pend:
                nr = struct.unpack_from('<Q', pend, 8)[0]
                q = 16
                for _ in range(nr):
                    if q + 16 > len(pend):
                        break
                    a = struct.unpack_from('<Q', pend, q)[0]
                    e = pend.find(b'\0', q + 16)
                    q = (e if e >= 0 else len(pend)) + 1
                    if a < ca or a - ca > cs:
                        bad.add(idx)
                        break
            pend = None
        off += tsz
    return bad

dumps = [a for a in sys.argv[1:] if a.endswith('.dump')]
bad = set().union(*(bad_loads(d) for d in dumps)) if dumps else set()
dropped = 0
for path in (a for a in sys.argv[1:] if not a.endswith('.dump')):
    lines = open(path, 'rb').read().split(b'\n')
    out, skip = [], False
    for l in lines:
        # a frame's srcline: the lines up to the next frame or sample (a
        # damaged name may hold a newline)
        if skip and l and not l.startswith(b'\t'):
            dropped += 1
            continue
        m = re.search(rb'jitted-\d+-(\d+)\.so\)$', l)
        skip = bool(m) and int(m.group(1)) in bad
        out.append(l)
    open(path, 'wb').write(b'\n'.join(out))
print(len(bad), dropped)
