#!/usr/bin/env python3
"""`go tool pprof -traces` output (stdin) as "N traces MD5": its samples
(each a block: values, labels, stack) as a multiset, whatever their order
in the file.  Nothing printed when there are none."""
import hashlib
import sys

RULE = '-----------+-------------------------------------------------------'
blocks = sys.stdin.read().split(RULE)[1:]
blocks = [b for b in blocks if b.strip()]
if blocks:
    print('%d traces %s' % (len(blocks), hashlib.md5(''.join(sorted(blocks)).encode()).hexdigest()))
