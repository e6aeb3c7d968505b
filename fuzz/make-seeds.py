#!/usr/bin/env python3
"""Seed corpora for the fuzz targets, from the unpacked test corpus.
usage: make-seeds.py TESTDATA_DIR SEEDS_DIR
Recordings are cut to their first 64 KiB (plus two small ones whole) so the
fuzzers stay fast; a cut file is a useful seed in itself (truncation)."""
import os, struct, sys

src, dst = sys.argv[1], sys.argv[2]
data = os.path.join(src, 'data')
CUT = 64 * 1024

def put(target, name, blob):
    d = os.path.join(dst, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), 'wb') as f:
        f.write(blob)

def records(buf, off):
    """(offset, type, bytes) of each record from @off while they frame."""
    while off + 8 <= len(buf):
        typ, misc, size = struct.unpack_from('<IHH', buf, off)
        if size < 8 or off + size > len(buf):
            break
        yield off, typ, buf[off:off + size]
        off += size

for f in sorted(os.listdir(data)):
    if not f.endswith('.data'):
        continue
    blob = open(os.path.join(data, f), 'rb').read()
    name = f[:-5]
    put('script', name + '.cut', blob[:CUT])
    if len(blob) <= 200 * 1024:
        put('script', name, blob)
    if struct.unpack_from('<Q', blob, 8)[0] == 16:   # pipe mode
        recs = list(records(blob, 16))
        put('pipe', name, blob[16:CUT])
        # zstd target: plain header records as the prefix, the rest compressed here
        head = b''.join(r for _, t, r in recs if t >= 64 and t != 68)
        body = b''.join(r for _, t, r in recs if t < 64)[:CUT]
        for mode, chunk in ((1, 255), (3, 15), (1, 0)):
            put('zstd', '%s.m%d.c%d' % (name, mode, chunk),
                bytes([mode, chunk]) + struct.pack('<H', len(head)) + head + body)
        # and a raw zstd stream (mode 0): the decoder's own input
        import subprocess
        z = subprocess.run(['zstd', '-q', '-c', '-1'], input=body, stdout=subprocess.PIPE, check=True).stdout
        put('zstd', name + '.m0.c63', bytes([0, 63]) + struct.pack('<H', len(head)) + head + z)

symfs = os.path.join(src, 'symfs-root', 'symfs')
for root, _, files in os.walk(symfs):
    for f in files:
        p = os.path.join(root, f)
        if os.path.getsize(p) <= 300 * 1024:
            put('elf', f, open(p, 'rb').read())

# kallsyms: a cut of the real one (sorted), the same lines shuffled, odd
# lines (0x prefix, modules, short addresses, tabs), and a JIT perf map
ks = open(os.path.join(src, 'kallsyms'), 'rb').read()[:CUT]
ks = ks[:ks.rfind(b'\n') + 1]
put('kallsyms', 'head', ks)
lines = ks.split(b'\n')[:400]
put('kallsyms', 'reversed', b'\n'.join(reversed(lines)))
put('kallsyms', 'odd', b'0xffffffff81000000 T _text\nffffffff81000010 t a\t[mod]\n1 W w\n'
    b'ffffffff81000020  T  spaced\nffffffff81000020 T same_addr\nffffffff81000030 D $x\n'
    b'ffffffffc0000000 t m\t[module]\nzzzz T bad\nffffffff81000040 T last')
# the samples of a cache file (fuzz_cache): four, at line starts of its
# sorted kallsyms ("%016llx T s%d\n": 22 bytes a line for i < 10), the last past the window
put('kallsyms', 'cache', b''.join(struct.pack('<QQ', 0xffffffff81000000 + 64 * i, o)
                                  for i, o in ((0, 0), (1, 22), (2, 44), (63, 22 * 10 + 23 * 53))))
put('kallsyms', 'perfmap', b'7f0000001000 40 jit_one\n7f0000001040 0 jit_zero\n0x7f0000002000 10 hex\n'
    b'garbage line\n7f0000003000 20 name with spaces\n')

# unwind: the real SFrame sections of tests/unit/data; for the walker, small
# corpus binaries with registers pointing into their text and a stack of
# return-address-like words
import glob
here = os.path.dirname(os.path.abspath(__file__))
for p in sorted(glob.glob(os.path.join(here, '..', 'tests', 'unit', 'data', 'sframe-v*.bin'))):
    put('sframe', os.path.basename(p), open(p, 'rb').read())
for root, _, files in os.walk(symfs):
    for f in files:
        p = os.path.join(root, f)
        if os.path.getsize(p) <= 300 * 1024:
            elf = open(p, 'rb').read()
            stack = b''.join(struct.pack('<Q', 0x401000 + 37 * i) for i in range(64))
            regs = struct.pack('<QQQQ', 0x401130, 0x7ffc0000, 0x7ffc0040, 0)
            put('unwind', f, struct.pack('<I', len(elf)) + elf + b'\0' + regs + stack)
