#!/usr/bin/env python3
"""Compare `dstack script` output with perf 7.2's oracle for one recording.

usage: check_script.py ORACLE_MERGED ORACLE_NOMERGE OURS_MERGED OURS_NOMERGE
       check_script.py --unresolved ORACLE_NOMERGE   (prints the count below)

Rules (from the issue):
  * --no-merge-callchains output is identical to perf's, text for text;
  * every sample perf stitched is printed identically;
  * every sample perf left unstitched although its deferred record (same tid
    and cookie) is in the file gets that record's user chain;
  * the samples left unresolved are exactly those whose record is absent;
  * our merged output is in time order, but for the events perf's nomerge
    output prints late too (the file holds them out of order);
  * the frames of a deferred record of a tracepoint event, which perf's
    nomerge output prints empty, are those perf printed for a sample it
    stitched with that record, where there is one.
Expectations come from perf's own output (the nomerge oracle lists every
DEFERRED CALLCHAIN record with its frames), never from ours.
Prints one summary line and the first differences; exit 1 on any mismatch.
"""
import re
import sys

HDR = re.compile(r'^\s*(?P<comm>.*?)\s+(?P<tid>-?\d+)\s+(?:\[(?P<cpu>\d+)\]\s+)?(?P<time>\d+\.\d+):\s(?P<rest>.*)$')
MAX_STACK = 127
# a sample's last frame where its deferred user chain was not stitched
COOKIE_LINE = re.compile(r'^\t\s*([0-9a-f]+) \(cookie\) \(\[unknown\]\)$')


def blocks(path):
    """The printed events, each its header line and its frame lines.  perf
    prints the frames of a DEFERRED CALLCHAIN record of a tracepoint event
    as empty lines, or " (inlined)" for an inlined one (its fields print
    no ip or sym), so a header starts a block, and the lines after a
    record's header, but the empty one that ends it, are its frames."""
    with open(path, errors='replace') as f:
        lines = f.read().split('\n')
    out, cur = [], None
    for line in lines:
        if line and not line.startswith('\t') and line != ' (inlined)':
            if cur is not None:
                out.append(cur)
            cur = [line]
        elif cur is not None:
            cur.append(line)
    if cur is not None:
        out.append(cur)
    for b in out:
        if 'DEFERRED CALLCHAIN' in b[0]:
            if len(b) > 1 and not b[-1]:
                b.pop()   # the line that ends the block
        else:
            while len(b) > 1 and not b[-1]:
                b.pop()
    return out


def parse(lines):
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


def printed_empty(frames):
    """A deferred record's frames as perf prints them for a tracepoint
    event: there are some, and none shows an address."""
    return bool(frames) and all(not ip_of(l) for l in frames)


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


def unresolved(path):
    """The samples of a --no-merge-callchains text whose last frame is a
    cookie no DEFERRED CALLCHAIN record of the same thread carries: what
    `dstack stat` must count as unresolved."""
    bl = blocks(path)
    bs = [parse(b)[0] for b in bl]
    recs = set()
    for m in bs:
        c = re.match(r'DEFERRED CALLCHAIN \[cookie: (\w+)\]', m.group('rest'))
        if c:
            recs.add((m.group('tid'), c.group(1)))
    n = 0
    for m, b in zip(bs, bl):
        c = COOKIE_LINE.match(b[-1])
        if c and (m.group('tid'), c.group(1)) not in recs:
            n += 1
    return n


def main():
    if sys.argv[1:2] == ['--unresolved']:
        print(unresolved(sys.argv[2]))
        return
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

    # deferred records from perf's nomerge output: (tid, cookie) -> frames;
    # the samples that carry a cookie there; the events it prints late (the
    # file holds them out of order: no reader can put them in time order)
    records, carries, late, last_time = {}, {}, set(), -1.0
    for b in blocks(o_nomerge):
        m, lines = parse(b)
        t = float(m.group('time'))
        if t < last_time:
            late.add(key_of(m))
        last_time = t
        c = re.match(r'DEFERRED CALLCHAIN \[cookie: ([0-9a-f]+)\]', m.group('rest'))
        if c:
            records.setdefault((m.group('tid'), c.group(1)), lines[1:])
            continue
        cookie = COOKIE_LINE.match(lines[-1]) if len(lines) > 1 else None
        if cookie:
            carries.setdefault(key_of(m), []).append((cookie.group(1), len(lines) - 2))

    # 2. merged: index perf's samples by header (sans comm)
    perf_samples = {}
    for b in blocks(o_merged):
        m, lines = parse(b)
        perf_samples.setdefault(key_of(m), []).append(lines[1:])

    # a record of a tracepoint event prints its frames empty (blocks): its
    # user chain is the one perf printed for a sample it stitched with it
    for key, cands in perf_samples.items():
        for frames, (cookie, nkernel) in zip(cands, carries.get(key, [])):
            rec = records.get((key[0], cookie))
            user = frames[nkernel:]
            if printed_empty(rec) and len(user) == len(rec) and ip_of(user[-1]) != cookie:
                records[(key[0], cookie)] = user

    stats = dict(identical=0, recovered=0, unprinted=0, unresolved=0, plain=0)
    last_time = -1.0
    for b in blocks(d_merged):
        m, lines = parse(b)
        t = float(m.group('time'))
        if t < last_time and key_of(m) not in late:
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
        cookie_line = COOKIE_LINE.match(last)
        if cookie_line or cookie_unknown:
            cookie = (cookie_line or cookie_unknown).group(1)
            rec = records.get((m.group('tid'), cookie))
            if printed_empty(rec):
                # frames perf printed empty and stitched to no sample: their
                # number and the kernel part are what can be checked
                expect = truncate(perf_frames[:-1] + rec)
                n = len(perf_frames) - 1
                if len(ours) == len(expect) and ours[:n] == expect[:n] and all(ip_of(l) for l in ours[n:]):
                    expect = ours
                kind = 'unprinted'
            elif rec is not None:
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
    unprinted = (', %d more of frames perf printed empty (their number checked)' % stats['unprinted']
                 if stats['unprinted'] else '')
    print('samples %d: identical %d, recovered %d (perf left them unstitched)%s, '
          'unresolved %d (no record in file), no callchain %d; problems %d'
          % (total, stats['identical'], stats['recovered'], unprinted, stats['unresolved'],
             stats['plain'], len(problems)))
    for p in problems[:10]:
        print('  ' + p)
    sys.exit(1 if problems else 0)


if __name__ == '__main__':
    main()
