#!/usr/bin/env python3
"""pprof_samples.py FILE.pb.gz: the sum of the samples' first value (the
sample count) of a pprof profile, read with a minimal protobuf walk (the
bench's sanity check; tests/js/check_pprof.js decodes with an independent
library)."""
import gzip
import sys


def varint(b, i):
    v = shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return v, i


def fields(b):
    """(field number, wire type, value or bytes) of one message."""
    i = 0
    while i < len(b):
        key, i = varint(b, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(b, i)
        elif wt == 2:
            n, i = varint(b, i)
            v, i = b[i:i + n], i + n
        elif wt == 1:
            v, i = b[i:i + 8], i + 8
        elif wt == 5:
            v, i = b[i:i + 4], i + 4
        else:
            raise ValueError("wire type %d" % wt)
        yield num, wt, v


def first_value(sample):
    for num, wt, v in fields(sample):
        if num != 2:
            continue
        if wt == 0:
            return v
        return varint(v, 0)[0]   # packed: the first
    return 0


total = 0
for num, wt, v in fields(gzip.decompress(open(sys.argv[1], "rb").read())):
    if num == 2 and wt == 2:
        total += first_value(v)
print(total)
