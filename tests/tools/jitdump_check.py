#!/usr/bin/env python3
"""Checks of suite 41 (jitdump read directly, dstack inject --jit).

  jitdump_check.py same REF OTHER        perf 7.2's script text against dstack's: equal line for
                                         line, but a vDSO frame perf7's chroot cannot name
                                         ("[unknown] ([vdso])"), and a walk dstack ends where
                                         perf's goes on through a vDSO frame (no image of the
                                         recording's); prints the counts
  jitdump_check.py mutate KIND IN OUT    a damaged copy of dump IN: trunc (cut inside the middle
                                         code load), size (that record's size past the end),
                                         addr (its code in the kernel's half), swap (the whole
                                         dump in the other byte order); prints the record's offset
  jitdump_check.py kept GOOD BAD         BAD's samples are GOOD's, every frame at the same address,
                                         every frame outside JIT code the same line
  jitdump_check.py tsc IN OUT DATA DOUT  dump IN as a writer of TSC timestamps writes it (the flag
                                         JITDUMP_FLAGS_ARCH_TIMESTAMP, every time the counter value
                                         perf.data file DATA's TIME_CONV converts back to it); DOUT:
                                         DATA, with a TIME_CONV record added if it has none
  jitdump_check.py damaged DUMP... -- SRCLINE...
                                         drop, in each `script -F ip,sym,dso,srcline` output, the
                                         srcline lines of frames in JIT loads whose debug-info record
                                         is damaged (read as perf reads it, each name to its first
                                         NUL, an entry lies outside the load's code); prints how many
                                         loads and lines.  node has written such records (a name's
                                         first bytes overwritten, a NUL among them): perf 7.2 and
                                         dstack then give different wrong lines, neither the source's
"""
import re
import struct
import sys

FRAME = re.compile(r'^\s*([0-9a-f]+) (.*) \((.*)\)$')


def blocks(path):
    return [b.strip('\n') for b in open(path, errors='replace').read().split('\n\n') if b.strip('\n')]


def vdso_norm(line):
    m = FRAME.match(line)
    if m and m.group(3) == '[vdso]':
        return '%s ([vdso])' % m.group(1)
    return line


def same(ref, oth):
    a, b = blocks(ref), blocks(oth)
    if len(a) != len(b):
        print('samples differ: %d vs %d' % (len(a), len(b)))
        return 1
    frames = jitted = vdso = vdso_stop = 0
    for x, y in zip(a, b):
        xl, yl = x.split('\n'), y.split('\n')
        if len(yl) < len(xl) and xl[:len(yl)] == yl and vdso_norm(xl[len(yl)]).endswith(' ([vdso])'):
            # dstack's walk ends at a vDSO frame: a recording of another kernel whose header names
            # no vDSO image (perf 7.2's build-id mmaps), where perf7 unwinds with its own process's
            # image (docs/unwinding.md); nothing of JIT code
            vdso_stop += 1
            xl = yl
        if len(xl) != len(yl):
            print('a stack differs in depth:\n%s\n---\n%s' % (x, y))
            return 1
        for p, q in zip(xl, yl):
            if p != q:
                if vdso_norm(p) != vdso_norm(q):
                    print('differs:\n  %s\n  %s\nin\n%s' % (p, q, x))
                    return 1
                vdso += 1
        frames += len(xl) - 1
        jitted += sum('/jitted-' in l for l in xl[1:])
    if not jitted:
        print('no JIT frame at all: nothing was checked')
        return 1
    print('%d samples, %d frames, %d in JIT code, equal (%d vDSO frames perf7 cannot name, '
          '%d walks dstack ends at a vDSO it has no image of)' % (len(a), frames, jitted, vdso, vdso_stop))
    return 0


def records(d):
    swap = d[:4] == b'DTiJ' and False
    e = '<' if struct.unpack('<I', d[:4])[0] == 0x4A695444 else '>'
    off = struct.unpack(e + 'I', d[8:12])[0]
    out = []
    while off + 16 <= len(d):
        i, sz, _ = struct.unpack(e + 'IIQ', d[off:off + 16])
        if sz < 16:
            break
        out.append((off, i, sz))
        off += sz
    return e, out


def swapped(d):
    """The dump as a writer of the other byte order writes it."""
    e, recs = records(d)
    o = '>' if e == '<' else '<'
    b = bytearray(d)
    def conv(off, fmt):
        vals = struct.unpack_from(e + fmt, d, off)
        struct.pack_into(o + fmt, b, off, *vals)
    conv(0, 'IIIIIIQQ')
    for off, i, sz in recs:
        conv(off, 'IIQ')
        if i == 0:
            conv(off + 16, 'IIQQQQ')
        elif i == 1:
            conv(off + 16, 'IIQQQQQ')
        elif i == 4:
            conv(off + 16, 'QQQ')
        elif i == 2:
            conv(off + 16, 'QQ')
            n = struct.unpack_from(e + 'Q', d, off + 24)[0]
            p = off + 32
            for _ in range(n):
                if p + 16 > off + sz:
                    break
                conv(p, 'Qii')
                p = d.index(b'\0', p + 16) + 1
    return bytes(b)


def mutate(kind, src, dst):
    d = open(src, 'rb').read()
    e, recs = records(d)
    loads = [r for r in recs if r[1] == 0]
    off = loads[len(loads) // 2][0]
    if kind == 'trunc':
        out = d[:off + 30]
    elif kind == 'size':
        b = bytearray(d)
        struct.pack_into(e + 'I', b, off + 4, 0x7fffffff)
        out = bytes(b)
    elif kind == 'addr':
        b = bytearray(d)
        struct.pack_into(e + 'Q', b, off + 32, 0xffffffffffff0000)
        out = bytes(b)
    elif kind == 'swap':
        out = swapped(d)
    else:
        raise SystemExit('unknown mutation ' + kind)
    open(dst, 'wb').write(out)
    print('%#x' % off)
    return 0


def time_conv(data):
    """The (last) TIME_CONV record of perf.data file @data: shift, mult, zero, cycles, mask, short; None if none."""
    d = open(data, 'rb').read()
    if d[:8] != b'PERFILE2':
        raise SystemExit('%s: not a perf.data file' % data)
    off, size = struct.unpack_from('<QQ', d, 40)
    end, tc = off + size, None
    while off + 8 <= end:
        typ, _, sz = struct.unpack_from('<IHH', d, off)
        if sz < 8:
            break
        if typ == 79 and sz >= 32:
            shift, mult, zero = struct.unpack_from('<QQQ', d, off + 8)
            cyc, mask, short = 0, 0, 0
            if sz >= 50:
                cyc, mask = struct.unpack_from('<QQ', d, off + 32)
                short = d[off + 49]
            tc = (shift, mult, zero, cyc, mask, short)
        off += sz
    return tc


def perf_time(tc, cyc):
    """perf's tsc_to_perf_time, modulo 2^64 as perf computes it."""
    shift, mult, zero, cycles, mask, short = tc
    m = (1 << 64) - 1
    if short:
        cyc = (cycles + ((cyc - cycles) & mask)) & m
    quot, rem = cyc >> shift, cyc & ((1 << shift) - 1)
    return (zero + quot * mult + ((rem * mult) >> shift)) & m


def to_tsc(tc, t):
    """The TSC value perf converts to exactly @t (a counter of under 1 ns a cycle has one)."""
    shift, mult, zero = tc[:3]
    cyc = (((t - zero) & ((1 << 64) - 1)) << shift) // mult
    for _ in range(64):   # (the estimate is off by a cycle or two: rounding)
        if perf_time(tc, cyc) < t:
            cyc += 1
        elif cyc and perf_time(tc, cyc) > t:
            cyc -= 1
    if perf_time(tc, cyc) != t:
        raise SystemExit('no TSC value converts to %d (%d ns a cycle or more)' % (t, mult >> shift))
    return cyc


# A Linux 7.2 guest's conversion (0.385 ns a cycle), from time 0
GUEST_TC = (31, 827195406, 0, 0, 0, 0)


def with_time_conv(data, out, tc):
    """perf.data file @data with a TIME_CONV record of @tc first in its data section, written to @out.

    The feature sections after the data move by the record's size (the
    feature table at the data's end gives their offsets)."""
    d = bytearray(open(data, 'rb').read())
    off, size = struct.unpack_from('<QQ', d, 40)
    feats = bin(int.from_bytes(d[72:104], 'little')).count('1')
    table = off + size
    rec = struct.pack('<IHHQQQQQBB6x', 79, 0, 56, tc[0], tc[1], tc[2], tc[3], tc[4], 1, tc[5])
    for k in range(feats):
        fo, fs = struct.unpack_from('<QQ', d, table + 16 * k)
        struct.pack_into('<QQ', d, table + 16 * k, fo + len(rec), fs)
    struct.pack_into('<QQ', d, 40, off, size + len(rec))
    open(out, 'wb').write(bytes(d[:off]) + rec + bytes(d[off:]))


def tsc(src, dst, data, data_out):
    """@src rewritten as a writer of TSC timestamps writes it (JITDUMP_FLAGS_ARCH_TIMESTAMP), for @data's TIME_CONV.

    A recording without one (perf record -k mono writes none: the kernel
    gives cap_user_time_zero only for its own clock) gets the guest's, as
    @data_out; with one, @data_out is a copy."""
    tc = time_conv(data)
    if not tc or not tc[1]:
        tc = GUEST_TC
        with_time_conv(data, data_out, tc)
    else:
        open(data_out, 'wb').write(open(data, 'rb').read())
    d = open(src, 'rb').read()
    e, recs = records(d)
    b = bytearray(d)
    struct.pack_into(e + 'Q', b, 24, to_tsc(tc, struct.unpack_from(e + 'Q', d, 24)[0]))
    struct.pack_into(e + 'Q', b, 32, struct.unpack_from(e + 'Q', d, 32)[0] | 1)
    for off, _, _ in recs:
        struct.pack_into(e + 'Q', b, off + 8, to_tsc(tc, struct.unpack_from(e + 'Q', d, off + 8)[0]))
    open(dst, 'wb').write(bytes(b))
    print('%d records, shift %d mult %d' % (len(recs), tc[0], tc[1]))
    return 0


def kept(good, bad):
    a, b = blocks(good), blocks(bad)
    if len(a) != len(b):
        print('samples differ: %d vs %d' % (len(a), len(b)))
        return 1
    ja = jb = 0
    for x, y in zip(a, b):
        xl, yl = x.split('\n'), y.split('\n')
        if xl[0] != yl[0] or len(xl) != len(yl):
            print('a sample changed:\n%s\n---\n%s' % (x, y))
            return 1
        for p, q in zip(xl[1:], yl[1:]):
            if p.split()[0] != q.split()[0]:
                print('an address changed: %s / %s' % (p, q))
                return 1
            if '/jitted-' not in p and p != q:
                print('a frame outside JIT code changed: %s / %s' % (p, q))
                return 1
        ja += sum('/jitted-' in l for l in xl)
        jb += sum('/jitted-' in l for l in yl)
    print('%d samples kept, every address kept; %d of %d JIT frames still named' % (len(a), jb, ja))
    return 0


def damaged_loads(path):
    """code_index of each load whose debug-info record has an entry outside its code"""
    d = open(path, 'rb').read()
    e, recs = records(d)
    bad, pend = set(), None
    for off, i, sz in recs:
        body = d[off + 16:off + sz]
        if i == 2 and len(body) >= 16:      # JIT_CODE_DEBUG_INFO: goes with the next load
            pend = body
        elif i == 0 and len(body) >= 40:    # JIT_CODE_LOAD
            _, _, _, addr, size, idx = struct.unpack_from(e + 'IIQQQQ', body, 0)
            q = 16
            for _ in range(struct.unpack_from(e + 'Q', pend, 8)[0] if pend else 0):
                if q + 16 > len(pend):
                    break
                at = struct.unpack_from(e + 'Q', pend, q)[0]
                end = pend.find(b'\0', q + 16)
                q = (end if end >= 0 else len(pend)) + 1
                if at < addr or at - addr > size:
                    bad.add(idx)
                    break
            pend = None
    return bad


def damaged(args):
    dumps, outs = args[:args.index('--')], args[args.index('--') + 1:]
    bad = set().union(*(damaged_loads(p) for p in dumps))
    frame = re.compile(rb'jitted-\d+-(\d+)\.so\)$')
    dropped = 0
    for path in outs:
        out, skip = [], False
        for line in open(path, 'rb').read().split(b'\n'):
            # a frame's srcline: the lines up to the next frame or sample (a damaged name may hold a newline)
            if skip and line and not line.startswith(b'\t'):
                dropped += 1
                continue
            m = frame.search(line)
            skip = bool(m) and int(m.group(1)) in bad
            out.append(line)
        open(path, 'wb').write(b'\n'.join(out))
    print(len(bad), dropped)
    return 0


if __name__ == '__main__':
    cmd = sys.argv[1]
    if cmd == 'same':
        sys.exit(same(sys.argv[2], sys.argv[3]))
    if cmd == 'mutate':
        sys.exit(mutate(sys.argv[2], sys.argv[3], sys.argv[4]))
    if cmd == 'tsc':
        sys.exit(tsc(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]))
    if cmd == 'kept':
        sys.exit(kept(sys.argv[2], sys.argv[3]))
    if cmd == 'damaged':
        sys.exit(damaged(sys.argv[2:]))
    raise SystemExit(__doc__)
