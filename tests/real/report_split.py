#!/usr/bin/env python3
"""tests/suites/90-real.sh: is a report --children that differs from perf
7.2's only perf naming one frame two ways?

  report_split.py PERF_REPORT DSTACK_REPORT PERF_SCRIPT

In an entry whose call graph perf prints partly by raw address (its
children's chains past an inlined frame), perf 7.2 sometimes keeps one
frame as two sibling branches: one under the frame's address (0xADDR),
one under its name ("encoder_encode_key_value (inlined)"), each holding
some of the samples (its child search compares an inlined frame by name
and another by address, so a sample whose node was made the other way
misses it).  dstack prints one branch with their sum.

This says yes (exit 0, "N entries, M branches named by address merged")
only when, entry by entry, the two graphs become the same tree after:
  - a branch printed as 0xADDR is renamed to a sibling's name where
    perf's own script prints a frame of that name at ADDR (the same frame,
    by perf's own word: never a guess from dstack's output), in both
    reports (dstack prints perf's splits it models as perf does);
  - siblings of the same name are merged, their shares added (equal
    within 0.01% per branch merged: each share is rounded to 0.01%);
and every other entry and line is equal.  Else exit 1 with the first
difference.  Equal-weight sibling order is ignored (siblings compared by
name): that is check_conformance.py's exit 3 class.
"""
import re
import sys
from collections import defaultdict

sys.path.insert(0, __file__.rsplit('/', 2)[0])
from check_conformance import BRANCH, split_entries  # noqa: E402

FRAME = re.compile(r'^\s+([0-9a-f]+) (.+?)(?:\+0x[0-9a-f]+)? \((inlined|[^()]*)\)$')
RAW = re.compile(r'^0x([0-9a-f]+)$')


def script_names(path):
    """address -> the names perf's script gives frames there, as its report
    prints them ("NAME" or "NAME (inlined)")."""
    names = defaultdict(set)
    with open(path, errors='replace') as f:
        for line in f:
            m = FRAME.match(line.rstrip('\n'))
            if m:
                name = m.group(2) + (' (inlined)' if m.group(3) == 'inlined' else '')
                names[int(m.group(1), 16)].add(name)
    return names


class Node:
    __slots__ = ('name', 'pct', 'kids', 'merged')

    def __init__(self, name, pct):
        self.name, self.pct, self.kids, self.merged = name, pct, [], 0


def parse(lines):
    """One entry's graph as a tree: a branch line ("--P%--NAME") is a child
    of the nearest open branch to its left; a plain line continues the
    chain of the branch it is under (a child with the same share)."""
    root = Node('', 100.0)
    stack = [(-1, root)]   # (column, node); the chain's last node is where plain lines go
    tails = {id(root): root}
    for line in lines:
        m = BRANCH.search(line)
        if m or line.lstrip(' |').startswith('---'):
            if m:
                col, name, pct = m.start(), line[m.end():].strip(), float(m.group(1).rstrip('%'))
            else:
                col, name, pct = line.index('---'), line[line.index('---') + 3:].strip(), None
            while len(stack) > 1 and stack[-1][0] >= col:
                stack.pop()
            parent = tails[id(stack[-1][1])]
            node = Node(name, parent.pct if pct is None else pct)
            parent.kids.append(node)
            stack.append((col, node))
            tails[id(node)] = node
            continue
        text = line.lstrip(' |')
        if not text.strip():
            continue
        col = len(line) - len(text)
        while len(stack) > 1 and stack[-1][0] >= col:
            stack.pop()
        head = stack[-1][1]
        tail = tails[id(head)]
        node = Node(text.strip(), tail.pct)
        tail.kids.append(node)
        tails[id(head)] = node
    return root


def normalize(node, names, counts):
    """Rename perf's raw-address siblings (perf's script's word), merge
    same-named siblings; children sorted by name.  counts[0]: branches
    merged."""
    if names is not None:
        sib = {k.name for k in node.kids}
        for k in node.kids:
            m = RAW.match(k.name)
            if m:
                known = names.get(int(m.group(1), 16), set()) & sib
                if len(known) == 1:
                    k.name = known.pop()
    merged = {}
    for k in node.kids:
        if k.name in merged:
            into = merged[k.name]
            into.pct += k.pct
            into.kids.extend(k.kids)
            into.merged += 1 + k.merged
            counts[0] += 1
        else:
            merged[k.name] = k
    node.kids = sorted(merged.values(), key=lambda k: k.name)
    for k in node.kids:
        normalize(k, names, counts)


def same(a, b, path):
    if a.name != b.name:
        return '%s: %r / %r' % (' > '.join(path), a.name, b.name)
    # a merged share is a sum of shares rounded to 0.01%: 0.01% slack per
    # branch merged into it
    if abs(a.pct - b.pct) > 0.005 + 0.01 * max(a.merged, b.merged):
        return '%s: %.2f%% / %.2f%%' % (' > '.join(path + [a.name]), a.pct, b.pct)
    if len(a.kids) != len(b.kids):
        return '%s: %d / %d children' % (' > '.join(path + [a.name]), len(a.kids), len(b.kids))
    for x, y in zip(a.kids, b.kids):
        why = same(x, y, path + [a.name])
        if why:
            return why
    return None


def main():
    ptext, dtext = (open(p, errors='replace').read() for p in sys.argv[1:3])
    names = script_names(sys.argv[3])
    pe, de = split_entries(ptext), split_entries(dtext)
    if len(pe) != len(de):
        print('entries: %d / %d' % (len(pe), len(de)))
        return 1
    entries = branches = 0
    for (ph, pg), (dh, dg) in zip(pe, de):
        if ph != dh:
            print('entry %r / %r' % (ph.strip(), dh.strip()))
            return 1
        if pg == dg:
            continue
        pt, dt = parse(pg), parse(dg)
        pc, dc = [0], [0]
        normalize(pt, names, pc)
        normalize(dt, names, dc)
        why = same(pt, dt, [ph.strip()[:60]])
        if why:
            print(why)
            return 1
        if pc[0] > dc[0]:
            entries += 1
            branches += pc[0] - dc[0]
    print('%d entries, %d branches named by address merged' % (entries, branches))
    return 0 if entries else 1


if __name__ == '__main__':
    sys.exit(main())
