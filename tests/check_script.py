#!/usr/bin/env python3
"""Compare `dstack script` output with perf 7.2's oracle for one recording.

usage: check_script.py ORACLE_MERGED ORACLE_NOMERGE OURS_MERGED OURS_NOMERGE

Rules (from the issue):
  * --no-merge-callchains output is identical to perf's, text for text;
  * every sample perf stitched is printed identically;
  * every sample perf left unstitched although its deferred record (same tid
    and cookie) is in the file gets that record's user chain;
  * the samples left unresolved are exactly those whose record is absent;
  * our merged output is in time order.
Expectations come from perf's own output (the nomerge oracle lists every
DEFERRED CALLCHAIN record with its frames), never from ours.
Prints one summary line and the first differences; exit 1 on any mismatch.
"""
import re
import sys

HDR = re.compile(r'^\s*(?P<comm>.*?)\s+(?P<tid>-?\d+)\s+(?:\[(?P<cpu>\d+)\]\s+)?(?P<time>\d+\.\d+):\s(?P<rest>.*)$')
MAX_STACK = 127


def blocks(path):
    with open(path, errors='replace') as f:
        text = f.read()
    return [b for b in text.split('\n\n') if b.strip()]


def parse(block):
    lines = block.split('\n')
    m = HDR.match(lines[0])
    if not m:
        raise SystemExit('unparsable header: %r' % lines[0])
    return m, lines


def key_of(m):
    # comm is left out: perf prints ":TID" for samples it flushed after the
    # thread exited; dstack prints them in time order with the real comm.
    return (m.group('tid'), m.group('cpu'), m.group('time'), m.group('rest'))


def ip_of(line):
    return line.split()[0] if line.strip() else ''


def truncate(lines):
    """perf's --max-stack counts callchain entries, not printed lines: an
    entry prints its inlined frames (same ip) then its symbol; an entry may
    print only inlined frames when DWARF names its function differently."""
    out, n = [], 0
    for i, l in enumerate(lines):
        if n == MAX_STACK:
            break
        out.append(l)
        nxt = lines[i + 1] if i + 1 < len(lines) else None
        if not l.endswith('(inlined)') or nxt is None or ip_of(nxt) != ip_of(l):
            n += 1
    return out


def main():
    o_merged, o_nomerge, d_merged, d_nomerge = sys.argv[1:5]
    problems = []

    # 1. nomerge: identical text
    on, dn = open(o_nomerge).read(), open(d_nomerge).read()
    if on != dn:
        ol, dl = on.split('\n'), dn.split('\n')
        for i, (a, b) in enumerate(zip(ol, dl)):
            if a != b:
                problems.append('nomerge line %d: perf %r dstack %r' % (i + 1, a, b))
                break
        else:
            problems.append('nomerge: perf has %d lines, dstack %d' % (len(ol), len(dl)))

    # deferred records from perf's nomerge output: (tid, cookie) -> frames
    records = {}
    for b in blocks(o_nomerge):
        m, lines = parse(b)
        c = re.match(r'DEFERRED CALLCHAIN \[cookie: ([0-9a-f]+)\]', m.group('rest'))
        if c:
            records.setdefault((m.group('tid'), c.group(1)), lines[1:])

    # 2. merged: index perf's samples by header (sans comm)
    perf_samples = {}
    for b in blocks(o_merged):
        m, lines = parse(b)
        perf_samples.setdefault(key_of(m), []).append(lines[1:])

    stats = dict(identical=0, recovered=0, unresolved=0, plain=0)
    last_time = -1.0
    for b in blocks(d_merged):
        m, lines = parse(b)
        t = float(m.group('time'))
        if t < last_time:
            problems.append('dstack output not in time order at %s' % lines[0])
        last_time = t
        cands = perf_samples.get(key_of(m))
        if not cands:
            problems.append('sample not in perf output: %s' % lines[0])
            continue
        perf_frames = cands.pop(0)
        ours = lines[1:]
        last = perf_frames[-1] if perf_frames else ''
        cookie_unknown = re.match(r'^\t\s*([0-9a-f]+) \[unknown\] \(\[unknown\]\)$', last)
        cookie_line = re.match(r'^\t\s*([0-9a-f]+) \(cookie\) \(\[unknown\]\)$', last)
        if cookie_line or cookie_unknown:
            cookie = (cookie_line or cookie_unknown).group(1)
            rec = records.get((m.group('tid'), cookie))
            if rec is not None:
                expect = truncate(perf_frames[:-1] + rec)
                kind = 'recovered'
            elif cookie_line:
                expect = perf_frames
                kind = 'unresolved'
            else:
                expect = perf_frames   # an ordinary unknown user frame
                kind = 'identical'
        else:
            expect, kind = perf_frames, ('identical' if len(perf_frames) else 'plain')
        if ours != expect:
            problems.append('%s sample %s differs:\n  perf/expected: %r\n  dstack:        %r'
                            % (kind, lines[0], expect[-3:], ours[-3:]))
            continue
        stats[kind] += 1
    left = sum(len(v) for v in perf_samples.values())
    if left:
        problems.append('%d perf samples missing from dstack output' % left)
    total = sum(stats.values())
    print('samples %d: identical %d, recovered %d (perf left them unstitched), '
          'unresolved %d (no record in file), no callchain %d; problems %d'
          % (total, stats['identical'], stats['recovered'], stats['unresolved'],
             stats['plain'], len(problems)))
    for p in problems[:10]:
        print('  ' + p)
    sys.exit(1 if problems else 0)


if __name__ == '__main__':
    main()
