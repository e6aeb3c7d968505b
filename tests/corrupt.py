#!/usr/bin/env python3
"""Corrupt-input tests: truncate and bit-flip a recording, run dstack on it.

usage: corrupt.py DSTACK DATAFILE WORKDIR [SEED]

Checks, for every damaged copy:
  * no crash, no hang, no sanitizer report: exit status 0 or 1 only
    (run with ASAN_OPTIONS/UBSAN_OPTIONS exit codes other than 1);
  * a truncated data section gives exit 1 and an error naming the offset;
  * output produced before the damage is kept: every sample block printed
    for a truncated file is a block of the intact file's output, in order.
Prints 'N passed, M failed'.
"""
import os
import random
import subprocess
import sys

env = dict(os.environ,
           ASAN_OPTIONS='exitcode=86:detect_leaks=1',
           UBSAN_OPTIONS='halt_on_error=1:exitcode=87:print_stacktrace=1')


def run(dstack, path):
    p = subprocess.run([dstack, 'script', '--no-merge-callchains', '-i', path],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, timeout=120)
    return p.returncode, p.stdout.decode(errors='replace'), p.stderr.decode(errors='replace')


def is_subsequence(small, big):
    it = iter(big)
    return all(any(x == y for y in it) for x in small)


def main():
    dstack, data, work = sys.argv[1:4]
    seed = int(sys.argv[4]) if len(sys.argv) > 4 else 1
    rnd = random.Random(seed)
    raw = open(data, 'rb').read()
    rc, full, err = run(dstack, data)
    passed = failed = 0

    def check(ok, what):
        nonlocal passed, failed
        if ok:
            passed += 1
        else:
            failed += 1
            print('FAIL %s: %s' % (os.path.basename(data), what))

    check(rc == 0, 'intact file exits 0 (got %d: %s)' % (rc, err[-300:]))
    full_blocks = full.split('\n\n')
    pipe = raw[8:16] == (16).to_bytes(8, 'little')
    data_off = 16 if pipe else int.from_bytes(raw[40:48], 'little')
    data_end = len(raw) if pipe else data_off + int.from_bytes(raw[48:56], 'little')
    cuts = sorted(set([1, 8, 15, 16, 64, 100, data_off, data_off + 4] +
                      [rnd.randrange(data_off, len(raw)) for _ in range(24)]))
    tmp = os.path.join(work, 'damaged.data')
    for cut in cuts:
        with open(tmp, 'wb') as f:
            f.write(raw[:cut])
        rc, out, err = run(dstack, tmp)
        check(rc in (0, 1), 'truncated at %d: exit %d %s' % (cut, rc, err[-500:]))
        if data_off < cut < data_end:
            check(rc == 1 and 'offset 0x' in err, 'truncated at %d: error names an offset (%r)' % (cut, err[-200:]))
            blocks = out.split('\n\n')[:-1]   # the last may be cut by the error
            check(is_subsequence(blocks, full_blocks), 'truncated at %d: output is a part of the intact output' % cut)
    for i in range(40):
        buf = bytearray(raw)
        for _ in range(rnd.choice([1, 4, 16])):
            pos = rnd.randrange(0, len(buf))
            buf[pos] ^= 1 << rnd.randrange(8)
        with open(tmp, 'wb') as f:
            f.write(buf)
        rc, out, err = run(dstack, tmp)
        check(rc in (0, 1), 'flipped copy %d: exit %d %s' % (i, rc, err[-500:]))
    os.unlink(tmp)
    print('corrupt %s: %d passed, %d failed' % (os.path.basename(data), passed, failed))
    sys.exit(1 if failed else 0)


if __name__ == '__main__':
    main()
