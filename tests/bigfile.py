#!/usr/bin/env python3
"""Large hostile recordings for the memory bound (tests/suites/65-memory.sh,
and by hand for the 1+ GB measurements): the data section of a real
recording repeated until the file has SIZE MiB, its features dropped (the
header says none: they would lie inside the copies), in one of two ways:

  rounds   FINISHED_ROUND records turned into an unknown type: a reader
           must order the whole file as one round
  pending  the same, and every CALLCHAIN_DEFERRED record too, and every
           deferred sample's cookie set to one value: every sample waits
           for a record that never comes (a task's samples with one cookie
           are one kernel entry, so nothing ever releases them early)
  tids     rounds kept, every sample's pid and tid set to a value no other
           record has: a task per sample that no record introduced (and
           whose deferred records, of the old tids, never come)

usage: bigfile.py rounds|pending|tids IN OUT SIZE_MIB   (prints the copies made)
"""
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hostile import PerfFile  # noqa: E402

FINISHED_ROUND, DEFERRED, SAMPLE, UNKNOWN = 68, 22, 9, 200
USER_DEFERRED = 0xfffffffffffffd80   # PERF_CONTEXT_USER_DEFERRED


def main():
    how, src, dst, mib = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    f = PerfFile(open(src, 'rb').read())
    assert not f.pipe
    raw = f.raw
    tid_at = [f.sample_field(off, 'TID') for off, typ, size in f.records if typ == SAMPLE] if how == 'tids' else []
    for off, typ, size in f.records:
        if how == 'tids':
            continue
        if typ == FINISHED_ROUND or (how == 'pending' and typ == DEFERRED):
            struct.pack_into('<I', raw, off, UNKNOWN)
        elif how == 'pending' and typ == SAMPLE:
            nr_at = f.sample_field(off, 'CALLCHAIN')
            nr, = struct.unpack_from('<Q', raw, nr_at)
            if nr >= 2 and nr_at + 8 + nr * 8 <= off + size and \
               struct.unpack_from('<Q', raw, nr_at + 8 + (nr - 2) * 8)[0] == USER_DEFERRED:
                struct.pack_into('<Q', raw, nr_at + 8 + (nr - 1) * 8, 0x5eed)
    data = bytes(raw[f.data_off:f.data_end])
    copies = max(1, (mib << 20) // len(data))
    hdr = bytearray(raw[:f.data_off])
    struct.pack_into('<Q', hdr, 48, len(data) * copies)   # data size
    hdr[72:104] = bytes(32)                                # no features
    data = bytearray(data)
    tid = 1 << 20
    with open(dst, 'wb') as out:
        out.write(hdr)
        for _ in range(copies):
            for at in tid_at:
                struct.pack_into('<II', data, at - f.data_off, tid, tid)
                tid += 1
            out.write(data)
    print(copies)


if __name__ == '__main__':
    main()
