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
  procs    rounds kept, every pid and tid of each copy (samples, COMM, FORK,
           EXIT, MMAP, the ids of every other record) moved past the last
           copy's: a long recording of countless processes that come, map,
           sample and exit, each with its records (the kernel's pid -1 and
           the idle task's 0 kept)
  maps     the recording once, then its last task MMAP2 record again and again,
           each copy a page below the last, until SIZE MiB: a flood of maps in
           one process (a JIT's, or hostile)

usage: bigfile.py rounds|pending|tids|procs|maps IN OUT SIZE_MIB   (prints the copies made)
"""
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hostile import PerfFile  # noqa: E402

FINISHED_ROUND, DEFERRED, SAMPLE, UNKNOWN = 68, 22, 9, 200
MMAP, COMM, EXIT, FORK, MMAP2 = 1, 3, 4, 7, 10
TID = 1 << 1
USER_DEFERRED = 0xfffffffffffffd80   # PERF_CONTEXT_USER_DEFERRED


def procs_ids(f):
    """Offsets of every pid and tid field of the data but the kernel's (-1) and idle's (0)."""
    at = []
    for off, typ, size in f.records:
        if typ == SAMPLE:
            o = f.sample_field(off, 'TID')
            at += [o, o + 4]
            continue
        if typ in (MMAP, MMAP2, COMM):
            at += [off + 8, off + 12]
        elif typ in (EXIT, FORK):
            at += [off + 8 + 4 * i for i in range(4)]
        if typ < 64 and f.sample_type & TID:   # the sample_id_all trailer (kernel records)
            o = f.id_tid(off, size)
            at += [o, o + 4]
    return [o for o in at if struct.unpack_from('<I', f.raw, o)[0] not in (0, 0xffffffff)]


def maps_flood(f, dst, mib):
    raw = f.raw
    off, typ, size = [r for r in f.records if r[1] == MMAP2 and
                      struct.unpack_from('<I', raw, r[0] + 8)[0] not in (0, 0xffffffff)][-1]
    rec = bytearray(raw[off:off + size])
    n = max(1, ((mib << 20) - f.data_end) // size)
    flood = bytearray()
    for i in range(n, 0, -1):
        struct.pack_into('<QQ', rec, 16, 0x100000000000 + i * 0x2000, 0x1000)
        flood += rec
    hdr = bytearray(raw[:f.data_off])
    struct.pack_into('<Q', hdr, 48, f.data_end - f.data_off + len(flood))
    hdr[72:104] = bytes(32)                                # no features
    with open(dst, 'wb') as out:
        out.write(hdr + raw[f.data_off:f.data_end] + flood)
    print(n)


def main():
    how, src, dst, mib = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    f = PerfFile(open(src, 'rb').read())
    assert not f.pipe
    raw = f.raw
    if how == 'maps':
        return maps_flood(f, dst, mib)
    tid_at = [f.sample_field(off, 'TID') for off, typ, size in f.records if typ == SAMPLE] if how == 'tids' else []
    ids_at = procs_ids(f) if how == 'procs' else []
    for off, typ, size in f.records:
        if how in ('tids', 'procs'):
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
    orig = {at: struct.unpack_from('<I', data, at - f.data_off)[0] for at in ids_at}
    with open(dst, 'wb') as out:
        out.write(hdr)
        for k in range(copies):
            for at in tid_at:
                struct.pack_into('<II', data, at - f.data_off, tid, tid)
                tid += 1
            for at, v in orig.items():
                struct.pack_into('<I', data, at - f.data_off, v + (k + 1) * 100000)
            out.write(data)
    print(copies)


if __name__ == '__main__':
    main()
