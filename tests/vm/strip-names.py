#!/usr/bin/env python3
"""strip-names.py IN OUT: a pipe-mode perf.data without its EVENT_UPDATE
records (type 78), so that readers derive the event names from the attrs
(what an older perf's pipe gave).  Used by tests/suites/81-script-fields.sh."""
import struct
import sys

d = open(sys.argv[1], 'rb').read()
out = bytearray(d[:16])
off = 16
while off + 8 <= len(d):
    typ, misc, size = struct.unpack_from('<IHH', d, off)
    if size < 8:
        sys.exit(f'{sys.argv[1]}: bad record size {size} at offset {off:#x}')
    extra = struct.unpack_from('<Q', d, off + 8)[0] if typ == 71 and size >= 16 else 0  # AUXTRACE payload
    if typ != 78:
        out += d[off:off + size + extra]
    off += size + extra
open(sys.argv[2], 'wb').write(out)
