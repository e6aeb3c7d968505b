#!/usr/bin/env python3
"""Checks of tests/suites/82-tracepoints.sh on the guest's recordings.
usage: trace-check.py OUTDIR   (OUTDIR/NAME.ds: dstack script, NAME.perf7: perf 7.2's)
Prints "ok ..." / "bad ..." lines.

A sample is its header line and the callchain lines below it.  The two
outputs must hold the same samples, sample for sample, with:
  - the event name's padding removed (perf 7.2 pads event names to the
    longest one; dstack script does not yet: another change);
  - samples compared as a multiset: perf 7.2 prints a sample whose user
    stack is deferred when its record arrives, dstack in time order;
  - a comm perf prints as ":TID" (perf drops a thread at its EXIT and names
    the samples after it by tid; dstack keeps the name) counted and shown,
    not failed; any other comm difference fails;
  - in pipe mode only the header lines (perf 7.2 prints a pipe's frames
    without symbol offsets and DSOs);
  - a sample perf leaves with its cookie as last frame (the deferred record
    came before it: taken on the way out of the kernel) that dstack prints
    stitched, with the same frames before the cookie (README: an intended
    difference), counted and shown."""
import collections, os, re, sys

out = sys.argv[1]
HDR = re.compile(r'^( *)(\S.*?) +(\d+) +(\[\d{3}\] +\d+\.\d{6}:) +(\S+:\S+:)(.*)$')


def samples(path, header_only):
    res, cur = [], None
    for line in open(path, errors='replace').read().split('\n'):
        if not line:
            continue
        if line.startswith('\t'):
            if cur is not None and not header_only:
                cur[1].append(line)
            continue
        m = HDR.match(line)
        if not m:
            cur = (('?', line), [])
        else:
            cur = ((m.group(2), '%s %s %s%s' % (m.group(3), m.group(4), m.group(5), m.group(6))), [])
        res.append(cur)
    return res


def compare(name, header_only=False, optional=False):
    d, p = samples(os.path.join(out, name + '.ds'), header_only), samples(os.path.join(out, name + '.perf7'), header_only)
    if not p:
        if optional:   # block:* in a guest with no block device: nothing fires
            print('SKIPPED %s: *** no %s event fired in the guest: untested ***' % (name, name))
        else:
            print('bad %s: perf 7.2 printed no sample' % name)
        return
    key = lambda s: s[0][1] + '\n' + '\n'.join(s[1])
    dc, pc = collections.Counter(map(key, d)), collections.Counter(map(key, p))
    only_d, only_p = dc - pc, pc - dc
    # perf's unstitched "record before" samples against dstack's stitched ones
    cookie = re.compile(r'^\t +[0-9a-f]+ \[unknown\] \(\[unknown\]\)$')
    stitched = 0
    for k in list(only_p.elements()):
        lines = k.split('\n')
        if len(lines) < 2 or not cookie.match(lines[-1]):
            continue
        head = '\n'.join(lines[:-1]) + '\n'
        for dk in only_d:
            if only_d[dk] and dk.startswith(head) and len(dk.split('\n')) > len(lines) - 1:
                only_d[dk] -= 1
                only_p[k] -= 1
                stitched += 1
                break
    only_d, only_p = +only_d, +only_p
    comms_d = collections.defaultdict(collections.Counter)
    for s in d:
        comms_d[key(s)][s[0][0]] += 1
    tid_named = other = 0
    for s in p:
        c = s[0][0]
        if key(s) not in comms_d or c in comms_d[key(s)]:
            continue   # a sample without its twin is counted above
        if re.fullmatch(r':\d+', c):
            tid_named += 1
        else:
            other += 1
    note = ', %d samples perf names ":TID" after the thread exited' % tid_named if tid_named else ''
    if stitched:
        note += ', %d samples stitched where perf prints the cookie (record before the sample)' % stitched
    if only_d or only_p or other:
        print('bad %s: %d samples only in dstack, %d only in perf, %d comm differences%s' %
              (name, sum(only_d.values()), sum(only_p.values()), other, note))
        for k in list(only_d)[:2]:
            print('  dstack: ' + k.replace('\n', '\n          ')[:600])
        for k in list(only_p)[:2]:
            print('  perf:   ' + k.replace('\n', '\n          ')[:600])
    else:
        print('ok %s: script equals perf 7.2 on %d samples%s (tracepoint text and callchains)' %
              (name, len(p), ' (headers: pipe mode)' if header_only else '') + note)


# NAME (whole samples), NAME+ (headers only: pipe mode), NAME? (may record nothing)
for n in sys.argv[2:]:
    compare(n.rstrip('+?'), n.endswith('+'), n.endswith('?'))
