#!/usr/bin/env python3
"""add-auxtrace.py IN OUT: a pipe-mode perf.data with a made-up
PERF_RECORD_AUXTRACE record (type 71: size, offset, reference, idx, tid,
cpu, then SIZE bytes of trace data outside its header's size) before its
first kernel record, as Intel PT recordings carry them.  dstack does not
decode AUX data and must say what it skipped.  Used by
tests/suites/81-script-fields.sh."""
import struct
import sys

d = open(sys.argv[1], 'rb').read()
payload = bytes(range(256)) * 16          # 4096 bytes of "trace"
aux = struct.pack('<IHH', 71, 0, 48) + struct.pack('<QQQIIII', len(payload), 0, 0x1234, 0, 0, 0, 0)[:40] + payload
out = bytearray(d[:16])
off, done = 16, False
while off + 8 <= len(d):
    typ, misc, size = struct.unpack_from('<IHH', d, off)
    if size < 8:
        sys.exit(f'{sys.argv[1]}: bad record size at {off:#x}')
    if typ < 64 and not done:
        out += aux
        done = True
    out += d[off:off + size]
    off += size
open(sys.argv[2], 'wb').write(out)
