#!/usr/bin/env python3
"""Every command on every class of damaged input, file and pipe mode.

usage: mutate_all.py [--alternate] DSTACK TESTDATA OUTDIR [SEED]
  --alternate: each input in one mode only, file and pipe by turns (half
  the runs: the sanitizer build's pass)

Damaged copies of small real recordings (cpu.defer: file mode; pipe.defer:
a pipe-mode stream; mixz.defer: zstd-compressed), one or more per class:
truncation, bit flips, 8-byte fields set to 0 / all-ones / a huge value,
corrupted header fields, record sizes, callchain and deferred-record
lengths, duplicate records, many tids sharing one cookie, corrupted zstd
payloads, and branch stacks (cpu.defer given them by tests/reshape.py:
report's branch view) with bad counts and entries.  Each runs through script, stat, dump, report, folded,
flamegraph, pprof, speedscope and inject, reading the file (-i FILE) and
the same bytes from a pipe (-i -), under a timeout, and must:
  * not crash: exit 0 or 1 only (the sanitizers' exit codes are 86/87, a
    signal is negative);
  * not hang (60 s);
  * not fail silently: exit 1 says why on stderr;
  * leave a valid output where it exits 0 or 1 with an output file: pprof
    a whole gzip stream, speedscope parseable JSON, flamegraph a closed
    <svg>, inject a perf.data that `dstack stat` reads (exit 0).
Prints a line per failure, then a table of counts per command and
'N runs, M failed'.
"""
import gzip
import json
import os
import random
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hostile import PerfFile  # noqa: E402
import reshape  # noqa: E402

env = dict(os.environ,
           ASAN_OPTIONS='exitcode=86:detect_leaks=1',
           UBSAN_OPTIONS='halt_on_error=1:exitcode=87:print_stacktrace=1')
SAMPLE, DEFERRED, COMPRESSED, COMPRESSED2 = 9, 22, 81, 83
USER_DEFERRED = 0xfffffffffffffd80
COMMANDS = ['script', 'stat', 'dump', 'report', 'folded', 'flamegraph', 'pprof', 'speedscope', 'inject']


def mutations(td, rnd):
    """(name, bytes) for every class."""
    cpu = open(os.path.join(td, 'data', 'cpu.defer.data'), 'rb').read()
    pipe = open(os.path.join(td, 'data', 'pipe.defer.data'), 'rb').read()
    mixz = open(os.path.join(td, 'data', 'mixz.defer.data'), 'rb').read()
    out = []

    def mod(raw, fn):
        f = PerfFile(raw)
        fn(f)
        return bytes(f.raw)

    for base, raw in (('file', cpu), ('pipe', pipe)):
        f0 = PerfFile(raw)
        recs = f0.records
        # truncation: in the header, mid-data, mid-record
        for cut in (100, recs[len(recs) // 2][0] + 5):
            out.append(('%s-truncated-%d' % (base, cut), raw[:cut]))
        # bit flips
        for i in range(1):
            b = bytearray(raw)
            for _ in range(8):
                b[rnd.randrange(f0.data_off, len(b))] ^= 1 << rnd.randrange(8)
            out.append(('%s-bitflips-%d' % (base, i), bytes(b)))
        # 8-byte fields inside records set to 0, all-ones, huge
        for what, v in (('zero', 0), ('ones', (1 << 64) - 1), ('huge', 1 << 62)):
            b = bytearray(raw)
            for _ in range(6):
                off, _, size = recs[rnd.randrange(len(recs))]
                if size >= 16:
                    struct.pack_into('<Q', b, off + 8 + 8 * rnd.randrange((size - 8) // 8), v)
            out.append(('%s-fields-%s' % (base, what), bytes(b)))
        # record sizes
        s = f0.of_type(SAMPLE)[3]
        for v in (4, 0xfff8):
            out.append(('%s-record-size-%d' % (base, v), mod(raw, lambda f, v=v: f.put(s[0] + 6, '<H', v))))
        # callchain lengths: a sample's and a deferred record's
        nr_at = f0.sample_field(s[0], 'CALLCHAIN')
        out.append(('%s-callchain-nr-huge' % base, mod(raw, lambda f: f.put(nr_at, '<Q', (1 << 61) + 3))))
        out.append(('%s-callchain-nr-plus1' % base,
                    mod(raw, lambda f: f.put(nr_at, '<Q', struct.unpack_from('<Q', raw, nr_at)[0] + 1))))
        d = f0.of_type(DEFERRED)[2]
        out.append(('%s-deferred-nr-huge' % base, mod(raw, lambda f: f.put(d[0] + 16, '<Q', 1 << 40))))
        out.append(('%s-deferred-nr-zero' % base, mod(raw, lambda f: f.put(d[0] + 16, '<Q', 0))))
        # many tids sharing one cookie: every deferred sample's and record's
        def one_cookie(f):
            for off, typ, size in f.records:
                if typ == DEFERRED:
                    f.put(off + 8, '<Q', 0x5eed)
                elif typ == SAMPLE:
                    at = f.sample_field(off, 'CALLCHAIN')
                    nr, = struct.unpack_from('<Q', f.raw, at)
                    if 2 <= nr and at + 8 + nr * 8 <= off + size and \
                       struct.unpack_from('<Q', f.raw, at + 8 + (nr - 2) * 8)[0] == USER_DEFERRED:
                        f.put(at + 8 + (nr - 1) * 8, '<Q', 0x5eed)
        out.append(('%s-one-cookie' % base, mod(raw, one_cookie)))
        # duplicate records: a stretch with samples and deferred records, twice
        a, z = recs[len(recs) // 3][0], recs[len(recs) // 3 + 40][0]
        dup = raw[:z] + raw[a:z] + raw[z:]
        if not f0.pipe:   # the features are dropped: their offsets moved
            dup = bytearray(dup[:f0.data_end + (z - a)])
            struct.pack_into('<Q', dup, 48, f0.data_end - f0.data_off + (z - a))
            dup[72:104] = bytes(32)
            dup = bytes(dup)
        out.append(('%s-duplicates' % base, dup))
    # branch stacks: a count past the record, entries of all-ones and of
    # zero addresses, bit flips over the samples
    br = reshape.branch_stack(cpu)
    if br:
        braw = bytes(br[0])
        fb = PerfFile(braw)
        with_br = []
        for off, typ, size in fb.of_type(SAMPLE):
            at, nr = reshape.chain_of(fb, off)
            if struct.unpack_from('<Q', braw, at + 8 * nr)[0]:
                with_br.append(at + 8 * nr)   # the branch count, entries after it
        if with_br:
            out.append(('branch-nr-huge', mod(braw, lambda f: f.put(with_br[3], '<Q', (1 << 40) + 1))))

            def entries(f, v):
                for at in with_br[::7]:
                    f.put(at + 8, '<QQQ', v, v, v)
            out.append(('branch-entries-ones', mod(braw, lambda f: entries(f, (1 << 64) - 1))))
            out.append(('branch-entries-zero', mod(braw, lambda f: entries(f, 0))))
            b = bytearray(braw)
            for _ in range(16):
                at = with_br[rnd.randrange(len(with_br))]
                b[at + rnd.randrange(32)] ^= 1 << rnd.randrange(8)
            out.append(('branch-bitflips', bytes(b)))
    # corrupted header fields (file mode)
    f0 = PerfFile(cpu)
    out.append(('header-attr-size', mod(cpu, lambda f: f.put(16, '<Q', 7))))
    out.append(('header-attrs-offset', mod(cpu, lambda f: f.put(24, '<Q', (1 << 63) + 8))))
    out.append(('header-data-size-ones', mod(cpu, lambda f: f.put(48, '<Q', (1 << 64) - 1))))
    out.append(('header-features-ones', mod(cpu, lambda f: f.put(72, '<QQQQ', *([(1 << 64) - 1] * 4)))))
    feat = f0.data_end
    out.append(('header-feature-section', mod(cpu, lambda f: f.put(feat, '<QQ', 1 << 62, 1 << 62))))
    # corrupted zstd payloads
    fz = PerfFile(mixz)
    comp = [r for r in fz.records if r[1] in (COMPRESSED, COMPRESSED2)]
    for i, (off, typ, size) in enumerate(comp[:2]):
        b = bytearray(mixz)
        start = off + (16 if typ == COMPRESSED2 else 8)
        for k in range(start + 8, off + size, 97):
            b[k] ^= 0x5a
        out.append(('zstd-payload-%d' % i, bytes(b)))
    return out


def argv_for(dstack, cmd, src, outfile):
    a = {'report': ['report', '--stdio'], 'inject': ['inject', '--merge', '-o', outfile],
         'flamegraph': ['flamegraph', '-o', outfile], 'pprof': ['pprof', '-o', outfile],
         'speedscope': ['speedscope', '-o', outfile]}.get(cmd, [cmd])
    return [dstack] + a + ['-i', src]


def valid_output(dstack, cmd, path):
    """None if the output file is whole, else why not."""
    try:
        if cmd == 'pprof':
            gzip.decompress(open(path, 'rb').read())
        elif cmd == 'speedscope':
            json.load(open(path))
        elif cmd == 'flamegraph':
            if not open(path, 'rb').read().rstrip().endswith(b'</svg>'):
                return 'no closing </svg>'
        elif cmd == 'inject':
            p = subprocess.run([dstack, 'stat', '-i', path], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, env=env, timeout=60)
            if p.returncode != 0:
                return 'dstack stat of it: exit %d %s' % (p.returncode, p.stderr.decode(errors='replace')[-200:])
    except Exception as e:   # noqa: BLE001 - any failure to read it is the finding
        return '%s: %s' % (type(e).__name__, e)
    return None


def main():
    args = sys.argv[1:]
    alternate = args[0] == '--alternate'
    if alternate:
        args = args[1:]
    dstack, td, out = args[:3]
    seed = int(args[3]) if len(args) > 3 else 1
    os.makedirs(out, exist_ok=True)
    rnd = random.Random(seed)
    cases = mutations(td, rnd)
    counts = {c: dict(runs=0, exit0=0, exit1=0, crash=0, hang=0, silent=0, badout=0) for c in COMMANDS}
    failed = 0
    for i, (name, raw) in enumerate(cases):
        path = os.path.join(out, 'm-' + name + '.data')
        open(path, 'wb').write(raw)
        for k, cmd in enumerate(COMMANDS):
            for mode in (('file', 'pipe')[(i + k) % 2],) if alternate else ('file', 'pipe'):
                of = os.path.join(out, 'm-out.' + cmd)
                if os.path.exists(of):
                    os.unlink(of)
                c = counts[cmd]
                c['runs'] += 1
                argv = argv_for(dstack, cmd, '-' if mode == 'pipe' else path, of)
                what = '%s %s (%s)' % (cmd, name, mode)
                try:
                    with open(path, 'rb') as stdin:
                        p = subprocess.run(argv, stdin=stdin if mode == 'pipe' else subprocess.DEVNULL,
                                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, timeout=60)
                except subprocess.TimeoutExpired:
                    c['hang'] += 1
                    failed += 1
                    print('FAIL %s: hangs (60 s)' % what)
                    continue
                err = p.stderr.decode(errors='replace')
                if p.returncode not in (0, 1):
                    c['crash'] += 1
                    failed += 1
                    print('FAIL %s: exit %d %s' % (what, p.returncode, err[-600:]))
                    continue
                c['exit%d' % p.returncode] += 1
                if p.returncode == 1 and not err.strip():
                    c['silent'] += 1
                    failed += 1
                    print('FAIL %s: exit 1 and nothing on stderr' % what)
                if os.path.exists(of):
                    why = valid_output(dstack, cmd, of)
                    if why and cmd == 'inject' and p.returncode == 1 and 'file has no events' in why:
                        why = None   # the input ended before its first attr: nothing to write but a header
                    if why:
                        c['badout'] += 1
                        failed += 1
                        print('FAIL %s: exit %d, output not whole: %s' % (what, p.returncode, why))
        os.unlink(path)
    print('%-11s %5s %5s %5s %5s %5s %6s %6s' % ('command', 'runs', 'exit0', 'exit1', 'crash', 'hang', 'silent', 'badout'))
    for cmd in COMMANDS:
        c = counts[cmd]
        print('%-11s %5d %5d %5d %5d %5d %6d %6d' % (cmd, c['runs'], c['exit0'], c['exit1'], c['crash'], c['hang'],
                                                     c['silent'], c['badout']))
    total = sum(c['runs'] for c in counts.values())
    # a class: the name's first word after file-/pipe- (truncated, fields, ...) or before it (header, zstd, branch)
    classes = {n.split('-')[1] if n.split('-')[0] in ('file', 'pipe') else n.split('-')[0] for n, _ in cases}
    print('%d inputs (%d classes), %d runs, %d failed' % (len(cases), len(classes), total, failed))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
