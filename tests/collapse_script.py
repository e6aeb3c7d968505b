#!/usr/bin/env python3
"""Collapse `perf script` text into folded stacks with the naming rules of
FlameGraph's stackcollapse-perf.pl (--kernel), to check `dstack folded`
against an independent reading of `dstack script` output.

usage: collapse_script.py SCRIPT_OUTPUT   -> folded lines on stdout
"""
import re
import sys
from collections import Counter

HEAD = re.compile(r'^(\S.+?)\s+(\d+)/*(\d+)*\s+')
FRAME = re.compile(r'^\s*(\w+)\s*(.+) \((.*)\)')


def name(func, mod):
    func = re.sub(r'\+0x[\da-f]+$', '', func)
    if func.startswith('('):
        return None
    if func == '[unknown]':
        func = '[unknown]' if mod == '[unknown]' else '[' + re.sub(r'.*/', '', mod) + ']'
    func = func.replace(';', ':')
    if not re.search(r'\.\(.*\)\.', func):
        func = re.sub(r'\((?!anonymous namespace\)).*', '', func)
    func = func.replace('"', '').replace("'", '')
    # kernel: the script's rule (module in brackets or vmlinux), except [vdso]
    if re.search(r'(^\[|vmlinux$)', mod) and 'unknown' not in mod and mod != '[vdso]':
        func += '_[k]'
    return func


def main():
    stacks, stack, pname = Counter(), [], None
    for line in open(sys.argv[1], errors='replace'):
        line = line.rstrip('\n')
        if not line:
            if pname is not None:
                stacks[';'.join([pname] + stack)] += 1
            stack, pname = [], None
            continue
        if pname is None:
            m = HEAD.match(line)
            pname = m.group(1).replace(' ', '_') if m else ''
            continue
        m = FRAME.match(line)
        if m:
            f = name(m.group(2), m.group(3))
            if f is not None:
                stack.insert(0, f)
    for k in sorted(stacks):
        print(k, stacks[k])


if __name__ == '__main__':
    main()
