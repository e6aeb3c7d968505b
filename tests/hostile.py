#!/usr/bin/env python3
"""Hostile-input catalogue: damaged copies of small real recordings, each with
the exit status and error text dstack must give.

usage: hostile.py DSTACK TESTDATA OUTDIR
  TESTDATA: the unpacked corpus (data/, symfs-root/symfs, kallsyms)
For every case, `dstack script` (and `dstack stat`) is run with a timeout and
checked for: the exit status; a message naming the byte offset and what was
wrong; no sanitizer report; and for cases that stop mid-file, that the
samples printed before the damage are kept (a prefix of the intact output).
Prints one line per check and 'N passed, M failed'.
"""
import os
import re
import shutil
import struct
import subprocess
import sys

env = dict(os.environ,
           ASAN_OPTIONS='exitcode=86:detect_leaks=1',
           UBSAN_OPTIONS='halt_on_error=1:exitcode=87:print_stacktrace=1')
SAMPLE, DEFERRED, COMPRESSED, COMPRESSED2 = 9, 22, 81, 83
ST = dict(IP=1 << 0, TID=1 << 1, TIME=1 << 2, ADDR=1 << 3, READ=1 << 4, CALLCHAIN=1 << 5,
          ID=1 << 6, CPU=1 << 7, PERIOD=1 << 8, STREAM_ID=1 << 9, IDENTIFIER=1 << 16)


class PerfFile:
    """The parts of a file-mode or pipe-mode perf.data the cases poke at."""

    def __init__(self, raw):
        self.raw = bytearray(raw)
        self.pipe = struct.unpack_from('<Q', raw, 8)[0] == 16
        if self.pipe:
            self.data_off, self.data_end = 16, len(raw)
            self.sample_type = None   # from the first HEADER_ATTR record
        else:
            self.attr_size, self.attrs_off, self.attrs_size, self.data_off, self.data_size = \
                struct.unpack_from('<QQQQQ', raw, 16)
            self.data_end = self.data_off + self.data_size
            self.sample_type = struct.unpack_from('<Q', raw, self.attrs_off + 24)[0]
        self.records = []
        off = self.data_off
        while off + 8 <= self.data_end:
            typ, misc, size = struct.unpack_from('<IHH', raw, off)
            if size < 8:
                break
            if typ == 64 and self.sample_type is None:
                self.sample_type = struct.unpack_from('<Q', raw, off + 8 + 24)[0]
            self.records.append((off, typ, size))
            off += size

    def of_type(self, typ):
        return [r for r in self.records if r[1] == typ]

    def sample_field(self, off, name):
        """Offset of field @name in the SAMPLE record at @off."""
        o = off + 8
        for f in ('IDENTIFIER', 'IP', 'TID', 'TIME', 'ADDR', 'ID', 'STREAM_ID', 'CPU', 'PERIOD'):
            if f == name:
                return o
            if self.sample_type & ST[f]:
                o += 8
        assert name == 'CALLCHAIN' and not self.sample_type & ST['READ']
        return o

    def id_tid(self, off, size):
        """Offset of the sample_id_all pid/tid at the end of a non-sample record."""
        n = sum(1 for f in ('TID', 'TIME', 'ID', 'STREAM_ID', 'CPU', 'IDENTIFIER') if self.sample_type & ST[f])
        return off + size - 8 * n

    def put(self, off, fmt, *v):
        struct.pack_into(fmt, self.raw, off, *v)


def cases(td, out):
    """(name, file, args, want_rc, [regex that stderr must match], prefix_check)"""
    cpu = open(os.path.join(td, 'data', 'cpu.defer.data'), 'rb').read()
    pipe = open(os.path.join(td, 'data', 'pipe.defer.data'), 'rb').read()
    mixz = open(os.path.join(td, 'data', 'mixz.defer.data'), 'rb').read()
    size = len(cpu)
    L = []

    def add(name, raw, rc, errs, prefix=False, args=(), stdin=False, same=False):
        path = os.path.join(out, 'hostile-' + name + '.data')
        open(path, 'wb').write(bytes(raw))
        L.append((name, path, list(args), rc, errs, 'same' if same else prefix, stdin))

    def mod(fn):
        f = PerfFile(cpu)
        fn(f)
        return f.raw

    f0 = PerfFile(cpu)
    add('truncated-header', cpu[:50], 1, [r'header|truncated|too small|short'])
    # another byte order, or perf.data's first format: said as such, not "bad magic"
    add('big-endian-magic', b'2ELIFREP' + cpu[8:], 1, [r'offset 0: a big-endian perf.data'])
    add('version-1-magic', b'PERFFILE' + cpu[8:], 1, [r'offset 0: a perf.data of format version 1'])
    add('attr-size-0', mod(lambda f: f.put(16, '<Q', 0)), 1, [r'offset 0x10\b', r'attr size 0'])
    add('attr-size-huge', mod(lambda f: f.put(16, '<Q', 1 << 40)), 1, [r'offset 0x10\b', r'attr size'])
    add('attrs-past-end', mod(lambda f: f.put(24, '<Q', size + 64)), 1,
        [r'offset 0x%x: attr 0 lies past the end' % (size + 64)])
    # the section runs on into the data: the first attr read from there is garbage
    add('attrs-size-past-end', mod(lambda f: f.put(32, '<Q', (size // f0.attr_size + 2) * f0.attr_size)), 1,
        [r'offset 0x[0-9a-f]+: attr \d+ '])
    add('data-past-end', mod(lambda f: f.put(40, '<Q', size + 4096)), 1, [r'offset 0x28\b', r'data'])
    # a data size past the end: the records up to the end of the file are read, and the
    # feature table (now inside the 'data') is the first thing that does not frame
    add('data-size-past-end', mod(lambda f: f.put(48, '<Q', size * 4)), 1,
        [r'feature section table past end', r'offset 0x%x\b' % f0.data_end])
    # the feature section sits right after the data: point its first entry outside the file
    feat = f0.data_end
    add('feature-past-end', mod(lambda f: f.put(feat, '<QQ', size + 100, 64)), 0,
        [r'offset 0x%x\b' % (size + 100), r'feature \d+ \(size 64\) is outside the file'])

    # framing errors in the middle of the data: stop there, keep what came before
    mid = [r for r in f0.records if r[0] > f0.data_off + (f0.data_end - f0.data_off) // 2 and r[1] == SAMPLE][0]
    m = mid[0]
    add('record-size-0', mod(lambda f: f.put(m + 6, '<H', 0)), 1, [r'offset 0x%x\b' % m, r'size 0'], True)
    add('record-size-4', mod(lambda f: f.put(m + 6, '<H', 4)), 1, [r'offset 0x%x\b' % m, r'size 4'], True)
    last = f0.of_type(SAMPLE)[-1][0]
    add('record-past-end', mod(lambda f: f.put(last + 6, '<H', 0xfff8)), 1,
        [r'offset 0x%x\b' % last, r'past|beyond|exceeds|truncat'], True)
    # a field that does not parse: the record is skipped with a warning, reading goes on
    nr_at = f0.sample_field(m, 'CALLCHAIN')
    add('callchain-nr-past-record', mod(lambda f: f.put(nr_at, '<Q', 1 << 20)), 1,
        [r'offset 0x%x\b' % m, r'callchain nr'])
    add('callchain-nr-huge', mod(lambda f: f.put(nr_at, '<Q', (1 << 61) + 1)), 1,
        [r'offset 0x%x\b' % m, r'callchain nr'])
    # sample_type bits this reader does not know: the layout cannot be trusted
    add('sample-type-unknown-bits', mod(lambda f: f.put(f.attrs_off + 24, '<Q', f.sample_type | 1 << 40)), 1,
        [r'sample_type'])
    # unknown record types: skipped and counted, exit 0
    unk = [r[0] for r in f0.of_type(SAMPLE)][5:8]

    def unknown(f):
        for o in unk:
            f.put(o, '<I', 200)
    L.append(('unknown-types', _w(out, 'unknown-types', mod(unknown)), [], 0, [], False, False))

    # deferred records: one cookie twice; a cookie reused by another tid
    defs = f0.of_type(DEFERRED)
    d0, d1 = defs[10], defs[11]
    c0 = struct.unpack_from('<Q', cpu, d0[0] + 8)[0]
    add('deferred-duplicate-cookie', mod(lambda f: f.put(d1[0] + 8, '<Q', c0)), 0, [])

    def other_tid(f):
        t = f.id_tid(d1[0], d1[2])
        f.put(d1[0] + 8, '<Q', c0)
        f.put(t, '<II', 77777, 77777)
    add('deferred-cookie-other-tid', mod(other_tid), 0, [])
    s5 = f0.of_type(SAMPLE)[5][0]
    add('sample-unknown-tid', mod(lambda f: f.put(f.sample_field(s5, 'TID'), '<II', 424242, 424243)), 0, [])

    # a corrupt zstd frame
    fz = PerfFile(mixz)
    comp = [r for r in fz.records if r[1] in (COMPRESSED, COMPRESSED2)][1]
    z = bytearray(mixz)
    hdr = 16 if comp[1] == COMPRESSED2 else 8
    for i in range(hdr, min(comp[2], hdr + 64)):
        z[comp[0] + i] ^= 0x5a
    add('zstd-corrupt', z, 1, [r'offset 0x%x\b' % comp[0], r'zstd'], True)

    # a pipe cut mid-record, read from stdin
    fp = PerfFile(pipe)
    cut = [r for r in fp.records if r[0] > len(pipe) // 2 and r[2] >= 32][0]
    add('pipe-cut-mid-record', pipe[:cut[0] + cut[2] // 2], 1,
        [r'offset 0x%x\b' % cut[0], r'truncat|ends|short|past'], True, stdin=True)

    # not hostile, but once fatal (fuzz_zstd): attrs inside a compressed block.  The whole
    # pipe stream compressed must print exactly what the plain stream prints.
    z = subprocess.run(['zstd', '-q', '-c', '-1'], input=pipe[16:], stdout=subprocess.PIPE, check=True).stdout
    comp = bytearray(pipe[:16])
    for o in range(0, len(z), 60000):
        comp += struct.pack('<IHH', COMPRESSED, 0, 8 + len(z[o:o + 60000])) + z[o:o + 60000]
    add('pipe-attrs-compressed', comp, 0, [], same=True)

    # a flood of MMAP records after the samples, each below the last (a JIT's, or hostile):
    # one sorted array of maps moved every map for each new one, quadratic (300,000 took
    # 38 s, 400,000 over a minute); the samples before them print as in the intact file
    f = PerfFile(cpu)
    off, typ, rsize = [r for r in f.records if r[1] == 10 and struct.unpack_from('<I', cpu, r[0] + 8)[0] != 0xffffffff][-1]
    tmpl = bytearray(cpu[off:off + rsize])
    flood = bytearray()
    for i in range(400000, 0, -1):
        struct.pack_into('<QQ', tmpl, 16, 0x100000000000 + i * 0x10000, 0x1000)
        flood += tmpl
    raw = bytearray(cpu[:f.data_end]) + flood + cpu[f.data_end:]
    struct.pack_into('<Q', raw, 48, f.data_size + len(flood))
    nfeat = sum(bin(b).count('1') for b in cpu[72:104])
    for k in range(nfeat):   # the feature sections moved by the flood: their table's offsets too
        at = f.data_end + len(flood) + 16 * k
        struct.pack_into('<Q', raw, at, struct.unpack_from('<Q', raw, at)[0] + len(flood))
    add('mmap-flood-descending', raw, 0, [], same=True)

    # ELF files with broken section headers / symbol table, through --symfs
    for what in ('shoff', 'symtab'):
        root = os.path.join(out, 'hostile-symfs-' + what)
        shutil.rmtree(root, ignore_errors=True)
        shutil.copytree(os.path.join(td, 'symfs-root', 'symfs'), root)
        for dirpath, _, files in os.walk(root):
            for name in files:
                p = os.path.join(dirpath, name)
                os.chmod(p, 0o644)
                b = bytearray(open(p, 'rb').read())
                if b[:4] != b'\x7fELF':
                    continue
                shoff, = struct.unpack_from('<Q', b, 0x28)
                shentsize, shnum = struct.unpack_from('<HH', b, 0x3a)
                if what == 'shoff':
                    struct.pack_into('<Q', b, 0x28, len(b) + 12345)
                else:
                    for i in range(shnum):
                        sh = shoff + i * shentsize
                        if sh + 64 > len(b):
                            break
                        if struct.unpack_from('<I', b, sh + 4)[0] in (2, 11):   # SYMTAB, DYNSYM
                            struct.pack_into('<QQ', b, sh + 24, len(b) - 8, 1 << 40)  # offset, size
                open(p, 'wb').write(b)
        L.append(('elf-' + what, os.path.join(td, 'data', 'cpu.defer.data'),
                  ['--symfs', root, '--kallsyms', os.path.join(td, 'kallsyms')], 0,
                  [r'corrupt or unreadable ELF'], False, False))
    return L, unk


def _w(out, name, raw):
    path = os.path.join(out, 'hostile-' + name + '.data')
    open(path, 'wb').write(bytes(raw))
    return path


def run(dstack, cmd, path, args, stdin):
    argv = [dstack, cmd] + (['--no-merge-callchains'] if cmd == 'script' else []) + args
    argv += ['-i', '-' if stdin else path]
    with open(path, 'rb') as f:
        p = subprocess.run(argv, stdin=f if stdin else subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, env=env, timeout=60)
    return p.returncode, p.stdout.decode(errors='replace'), p.stderr.decode(errors='replace')


def stat_values(text):
    return {m.group(1): int(m.group(2)) for m in re.finditer(r'^(\S+)\s+(\d+)$', text, re.M)}


def blocks(text):
    return [b for b in text.split('\n\n') if b.strip()]


def main():
    dstack, td, out = sys.argv[1:4]
    os.makedirs(out, exist_ok=True)
    L, unk = cases(td, out)
    intact = {}
    passed = failed = 0

    def check(ok, what):
        nonlocal passed, failed
        passed += bool(ok)
        failed += not ok
        print('%s %s' % ('ok  ' if ok else 'FAIL', what))

    for name, path, args, want, errs, prefix, stdin in L:
        for cmd in ('script', 'stat'):
            try:
                rc, so, se = run(dstack, cmd, path, args, stdin)
            except subprocess.TimeoutExpired:
                check(False, '%s %s: hangs (60 s)' % (cmd, name))
                continue
            first = (se.strip().splitlines() or [''])[0]
            check(rc == want, '%s %s: exit %d (want %d) %s' % (cmd, name, rc, want, first[:150]))
            for e in errs if cmd == 'script' or not name.startswith('elf') else []:  # stat reads no ELF
                check(re.search(e, se), '%s %s: stderr matches /%s/' % (cmd, name, e))
            if cmd == 'stat' and name == 'unknown-types':
                got = re.search(r'^records\.unknown\s+(\d+)', so, re.M)
                check(got and int(got.group(1)) == len(unk),
                      'stat %s: records.unknown = %s (want %d)' % (name, got and got.group(1), len(unk)))
            if cmd == 'stat' and name.startswith('deferred-'):
                # the samples waiting for the re-cookied record stay unresolved, none is
                # stitched to another record's chain, and every deferred sample is accounted
                if 'stat' not in intact:
                    intact['stat'] = stat_values(run(dstack, 'stat', os.path.join(td, 'data', 'cpu.defer.data'),
                                                     [], False)[1])
                v, i0 = stat_values(so), intact['stat']
                check(v.get('unresolved', 0) > i0.get('unresolved', 0) and
                      v.get('stitched', 0) + v.get('unresolved', 0) == v.get('samples.deferred', -1),
                      'stat %s: unresolved %s (intact %s), stitched %s of %s deferred samples' %
                      (name, v.get('unresolved'), i0.get('unresolved'), v.get('stitched'), v.get('samples.deferred')))
            if cmd == 'script' and name == 'sample-unknown-tid':
                check(':424243' in so, 'script %s: unknown tid printed as :TID' % name)
            if cmd == 'script' and prefix:
                src = 'pipe.defer' if stdin or 'pipe' in name else 'mixz.defer' if 'zstd' in name else 'cpu.defer'
                if src not in intact:
                    intact[src] = blocks(run(dstack, 'script', os.path.join(td, 'data', src + '.data'), [],
                                             False)[1])
                got = blocks(so)
                full = intact[src]
                if prefix == 'same':
                    check(got == full, 'script %s: the same %d blocks as the intact file (got %d)' %
                          (name, len(full), len(got)))
                    continue
                check(got and got == full[:len(got)] and len(got) < len(full),
                      'script %s: %d of %d blocks printed before the damage, all intact' %
                      (name, len(got), len(full)))
    print('%d passed, %d failed' % (passed, failed))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
