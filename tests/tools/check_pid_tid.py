#!/usr/bin/env python3
"""Every line of `script -F pid,tid,time` on stdin as perf prints it:
"%7d/%-7d " then the time ("%5lu.%06lu: ").  Prints "LINES lines BAD
misaligned"; exit 1 if any is."""
import sys, re
bad = n = 0
for l in sys.stdin:
    if not l.strip() or l.startswith('\t'):   # callchain lines (a pipe's samples print theirs)
        continue
    n += 1
    s = l.find('/')
    seg, rest = l[s + 1:s + 9], l[s + 9:]
    secs = rest.split('.')[0]
    if s < 0 or not re.match(r'^-?\d+ +$', seg) or not re.match(r'^ *\d+\.\d{6}: ', rest) or len(secs) != max(5, len(secs.strip())):
        bad += 1
print(n, 'lines', bad, 'misaligned')
sys.exit(1 if bad else 0)
