#!/usr/bin/env python3
"""Copy a perf.data file with its FINISHED_ROUND records turned into a
record type no reader knows (same size, so every offset stays valid): a
reader then orders the whole file as one round.

usage: no_rounds.py IN OUT   (prints how many records were changed)"""
import struct
import sys

FINISHED_ROUND = 68
UNKNOWN = 200


def main():
    src, dst = sys.argv[1], sys.argv[2]
    data = bytearray(open(src, 'rb').read())
    if data[:8] != b'PERFILE2':
        sys.exit('%s: not a perf.data file' % src)
    off, size = struct.unpack_from('<QQ', data, 40)
    pos, end, changed = off, off + size, 0
    while pos + 8 <= end:
        typ, _misc, rsize = struct.unpack_from('<IHH', data, pos)
        if rsize < 8:
            sys.exit('%s: bad record size at %#x' % (src, pos))
        if typ == FINISHED_ROUND:
            struct.pack_into('<I', data, pos, UNKNOWN)
            changed += 1
        pos += rsize
    open(dst, 'wb').write(data)
    print(changed)


if __name__ == '__main__':
    main()
