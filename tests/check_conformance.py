#!/usr/bin/env python3
"""Compare one dstack output with perf 7.2's output of the same command.

usage: check_conformance.py PERF_OUT DSTACK_OUT [--blocks]

Prints "EQUAL/TOTAL" (perf's lines that dstack printed the same) then,
after a tab, a short note: the lines excused and the first differences.  Exit 0
when every line of both outputs is accounted for (equal or excused),
else 1.

--blocks (script outputs): the outputs are compared as samples, blocks
separated by blank lines, as multisets (dstack prints samples in time
order; perf 7.2 prints a deferred sample when its task's record comes).
With --order too (script --perf-order), the order of the samples (tid
and time) must be perf's as well.  The one documented
difference is excused: a sample perf printed with a bare deferred cookie
as its last frame ("(cookie)" or "[unknown] ([unknown])") that dstack
printed with the same lines before it and a user callchain in place of
the cookie (dstack stitches samples whose record came before them,
perf 7.2 does not).  Its lines count as excused, not equal.  With
CONF_SELF=PERF_FULL_SCRIPT (a filtered script: --time, --comm), a sample
that perf printed otherwise than in its own unfiltered script, where
dstack printed the unfiltered block, is perf disagreeing with itself:
counted ("perf self-inconsistent"), not failed.

Without --blocks the outputs are compared line by line in order (difflib):
a report's order is part of its meaning.  One difference there is told
apart, exit 3: the same entries in the same order, each call graph the
same branches with the same percentages, dstack's siblings in descending
weight, and only siblings of equal weight in another order.  dstack
builds perf's rb-trees of children as perf does (cmd_report.c, child_at),
misses and all, but their comparison orders DSOs by the addresses of
perf's DSO objects in its heap, which dstack estimates by the order perf
makes them in; where perf's heap reuses memory (a -z recording) the
estimate can be wrong (issue 18).  Exit 3 as well, in a period-valued
graph (-g ...,period), for perf printing one frame as several sibling
branches of the same samples where dstack prints one (a miss of perf's
search under another DSO order, split_branches).
"""
import difflib
import os
import re
import sys
from collections import Counter

TIP = re.compile(r'\n# \((?:Tip: |Cannot load tips\.txt)[^\n]*\n#\n$')
COOKIE = re.compile(r'^\s*[0-9a-f]+ (\(cookie\) \(\[unknown\]\)|\[unknown\] \(\[unknown\]\))$')


def read(path):
    with open(path, errors='replace') as f:
        return f.read()


HEAD_TIME = re.compile(r'\s\d+\.\d{6,9}:(\s|$)')


def split_blocks(text):
    """Samples, and each side-band line (--show-*-events: ": PERF_RECORD_")
    on its own: such a line has no blank line after it.  Samples printed
    without a callchain have no blank line between them either: a line
    with a time ("12.345678:") that is not a frame starts the next."""
    out = []
    for b in text.split('\n\n'):
        lines = b.strip('\n').split('\n') if b.strip('\n') else []
        while lines and ': PERF_RECORD_' in lines[0] and not lines[0].startswith('\t'):
            out.append(lines.pop(0))
        cur = []
        for line in lines:
            if cur and not line.startswith('\t') and HEAD_TIME.search(line):
                out.append('\n'.join(cur))
                cur = []
            cur.append(line)
        if cur:
            out.append('\n'.join(cur))
    return out


def nlines(block):
    return block.strip('\n').count('\n') + 1


def rest_of_head(line):
    """A sample's first line without its comm (the first word): the tid and time tell samples apart."""
    return line.lstrip().split(' ', 1)[-1].lstrip()


def excusable(p, d):
    pl, dl = p.strip('\n').split('\n'), d.strip('\n').split('\n')
    # perf holds a sample it leaves with its cookie and prints it later: if
    # its thread exited meanwhile, perf names it ":TID"
    if pl[0] != dl[0]:
        if not pl[0].lstrip().startswith(':') or rest_of_head(pl[0]) != rest_of_head(dl[0]):
            return False
        dl = [pl[0]] + dl[1:]
    # ours continues where perf's cookie stands (its last frame may itself be
    # an unknown stack address, "[unknown] ([unknown])", so a chain of the
    # same length must not end in a cookie: ours would be the same value, or
    # "(cookie)"; a user stack of one unknown address is another value)
    return (len(pl) >= 2 and COOKIE.match(pl[-1]) is not None and len(dl) >= len(pl)
            and dl[:len(pl) - 1] == pl[:-1] and dl[len(pl) - 1] != pl[-1]
            and (len(dl) > len(pl) or not COOKIE.match(dl[-1]) or
                 ('(cookie)' not in dl[-1] and dl[-1].split()[0] != pl[-1].split()[0])))


held = set()      # samples perf held and printed as ":TID" (CONF_HELD_OUT)
held_in = set()   # the same, from the unfiltered script comparison (CONF_HELD_IN)


def compare_blocks(ptext, dtext):
    pb, db = split_blocks(ptext), split_blocks(dtext)
    pc, dc = Counter(pb), Counter(db)
    common = pc & dc
    equal = sum(nlines(b) * n for b, n in common.items())
    p_left = list((pc - common).elements())
    d_left = list((dc - common).elements())
    # excuse stitched samples: perf's block with a cookie, ours with its chain
    by_head = {}
    for b in d_left:
        by_head.setdefault(rest_of_head(b.strip('\n').split('\n')[0]), []).append(b)
    excused, p_rest = 0, []
    for b in p_left:
        cands = by_head.get(rest_of_head(b.strip('\n').split('\n')[0]), [])
        hit = next((i for i, d in enumerate(cands) if excusable(b, d)), None)
        if hit is None:
            p_rest.append(b)
            continue
        excused += nlines(b)
        d = cands.pop(hit)
        if b.lstrip().startswith(':') and not d.lstrip().startswith(':'):
            held.add(rest_of_head(b.strip('\n').split('\n')[0]))
    d_rest = [b for v in by_head.values() for b in v]
    # perf printed those held samples as ":TID", so a --comm filter left
    # them out there: ours (named at the sample's time) may pass it
    kept = [b for b in d_rest if rest_of_head(b.strip('\n').split('\n')[0]) in held_in]
    d_rest = [b for b in d_rest if b not in kept]
    excused += sum(nlines(b) for b in kept)
    # and the other way: perf's filter may take such a sample (by the
    # thread's comm when the sample came) and print it as ":TID" where ours
    # leaves it out
    held_p = [b for b in p_rest if b.lstrip().startswith(':') and
              rest_of_head(b.strip('\n').split('\n')[0]) in held_in]
    p_rest = [b for b in p_rest if b not in held_p]
    excused += sum(nlines(b) for b in held_p)
    # perf against itself (CONF_SELF: perf's unfiltered script of the same
    # file): a filtered run's sample that perf prints otherwise than in its
    # full run, where dstack prints the full run's block (perf's dwarf
    # unwinder keeps per-thread state, so skipping samples can change the
    # chain it gives a later one)
    self_inc = 0
    if os.environ.get('CONF_SELF') and os.path.exists(os.environ['CONF_SELF']):
        full = {}
        for b in split_blocks(read(os.environ['CONF_SELF'])):
            full.setdefault(rest_of_head(b.strip('\n').split('\n')[0]), set()).add(b)
        keep = []
        for b in p_rest:
            h = rest_of_head(b.strip('\n').split('\n')[0])
            fb = full.get(h, set())
            d = next((d for d in d_rest if d in fb and b not in fb and
                      rest_of_head(d.strip('\n').split('\n')[0]) == h), None)
            if d is None:
                keep.append(b)
                continue
            d_rest.remove(d)
            self_inc += 1
        p_rest = keep
    total = sum(nlines(b) for b in pb)
    notes = []
    # the order: each side's samples by tid and time, as printed
    pk = [rest_of_head(b.strip('\n').split('\n')[0]) for b in pb]
    dk = [rest_of_head(b.strip('\n').split('\n')[0]) for b in db]
    in_order = pk == dk or '--order' not in sys.argv
    if not in_order and len(pk) == len(dk):
        i = next(i for i, (a, b) in enumerate(zip(pk, dk)) if a != b)
        notes.append('samples in another order from the %dth: perf %r, dstack %r' % (i + 1, pk[i], dk[i]))
    if self_inc:
        notes.append('%d perf self-inconsistent (perf\'s unfiltered script printed dstack\'s block)' % self_inc)
    if excused:
        notes.append('%d excused (stitched)' % excused)
    if p_rest or d_rest:
        notes.append('%d perf samples unmatched, %d dstack' % (len(p_rest), len(d_rest)))
        for b in p_rest[:2]:
            notes.append('perf: ' + ' | '.join(b.strip('\n').split('\n')[:4]))
        for b in d_rest[:2]:
            notes.append('dstack: ' + ' | '.join(b.strip('\n').split('\n')[:4]))
    return equal, total, excused, not p_rest and not d_rest and in_order, notes


# perf's fractal graphs name what the threshold hid "[...]" through a symbol
# it mallocs and never clears: its inlined flag is whatever the heap held,
# so "[...] (inlined)" comes and goes between runs of perf on one file
REM_INLINED = re.compile(r'(--\S+--)\[\.\.\.\] \(inlined\)$')


def compare_lines(ptext, dtext):
    pl, dl = ptext.split('\n'), dtext.split('\n')
    sm = difflib.SequenceMatcher(None, pl, dl, autojunk=False)
    equal, notes = 0, []
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == 'equal':
            equal += i2 - i1
        elif len(notes) < 4:
            notes.append('perf %d: %r / dstack %d: %r' % (i1 + 1, pl[i1] if i1 < i2 else '',
                                                         j1 + 1, dl[j1] if j1 < j2 else ''))
    return equal, len(pl), 0, equal == len(pl) == len(dl), notes


BRANCH = re.compile(r'--(\d+\.\d+%|\d+)--')   # a share, or a period (-g ...,period)
ENTRY = re.compile(r'^\s+\d+\.\d+%')


def graph_paths(lines):
    """The branches of one entry's call graph as a Counter of root-to-branch
    paths ((percent, frame), ...), and whether every parent lists its
    children in non-increasing percent."""
    stack, paths, sorted_ok = [], Counter(), True   # stack: [name column, path, last child's percent]
    for line in lines:
        m = BRANCH.search(line)
        if m or line.lstrip(' |').startswith('---'):
            # a branch's column is where its "--" starts: its value's width varies
            if m:
                col, name, pct = m.start(), line[m.end():].strip(), float(m.group(1).rstrip('%'))
            else:
                col, name, pct = line.index('---'), line[line.index('---') + 3:].strip(), None
            while stack and stack[-1][0] >= col:
                paths[tuple(stack.pop()[1])] += 1
            # (fractal's "[...]", what the threshold hid, comes last whatever its weight)
            if stack and pct is not None and name != '[...]':
                if stack[-1][2] is not None and pct > stack[-1][2]:
                    sorted_ok = False
                stack[-1][2] = pct
            parent = stack[-1][1] if stack else []
            stack.append([col, parent + [(pct, name)], None])
            continue
        text = line.lstrip(' |')
        if not text:
            continue
        col = len(line) - len(text)
        while stack and stack[-1][0] >= col:
            paths[tuple(stack.pop()[1])] += 1
        if stack:
            stack[-1][1].append((None, text.strip()))
        else:   # a line of no graph (a --stats count, say): itself, so that it is compared too
            paths[((None, line),)] += 1
    while stack:
        paths[tuple(stack.pop()[1])] += 1
    return paths, sorted_ok


def split_entries(text):
    """A report as [(header lines, graph lines)]: an entry's header is its
    percent line, its graph the indented lines up to the next entry."""
    out, cur = [], None
    for line in text.split('\n'):
        if ENTRY.match(line) or line.startswith('#') or not line.strip():
            cur = (line, [])
            out.append(cur)
        elif cur is not None:
            cur[1].append(line)
        else:
            out.append((line, []))
    return out


def only_tie_order(ptext, dtext):
    """perf's and dstack's reports differ only in the order of call-graph
    siblings of equal weight (see the usage)."""
    pe, de = split_entries(ptext), split_entries(dtext)
    if len(pe) != len(de):
        return False
    for (ph, pg), (dh, dg) in zip(pe, de):
        if ph != dh:
            return False
        if pg == dg:
            continue
        (pp, _), (dp, dsorted) = graph_paths(pg), graph_paths(dg)
        if pp != dp or not dsorted:
            return False
    return True


def graph_chains(lines):
    """A period-valued call graph (-g ...,period) as its samples: {(frame, ...): period},
    each chain from the graph's top to where its weight ends (a node's value less its
    branches'), and whether some parent has two branches of one frame (perf's misses)."""
    chains, dup = Counter(), False
    stack = []   # [column, frames, value, children's sum, names of the branches below]
    def close(upto):
        while stack and stack[-1][0] >= upto:
            col, frames, value, below, _ = stack.pop()
            if value is not None and value > below:
                chains[tuple(frames)] += value - below
    for line in lines:
        m = BRANCH.search(line)
        if m and '%' not in m.group(1):
            col, name, value = m.start(), line[m.end():].strip(), int(m.group(1))
            close(col)
            if stack:
                dup |= name in stack[-1][4]
                stack[-1][4].add(name)
                stack[-1][3] += value
            stack.append([col, (stack[-1][1] if stack else []) + [name], value, 0, set()])
            continue
        text = line.lstrip(' |')
        if text.startswith('---'):   # the graph's top: the parent of its first branches
            close(line.index('---'))
            stack.append([line.index('---'), [text[3:].strip()], None, 0, set()])
            continue
        if not text.strip():
            continue
        col = len(line) - len(text)
        close(col + 1) if stack and stack[-1][0] > col else None
        if stack:
            stack[-1][1] = stack[-1][1] + [text.strip()]
    close(-1)
    return chains, dup


def split_branches(ptext, dtext):
    """The number of call graphs in which perf printed one frame as several sibling
    branches where dstack prints one, with the same samples (the others the same but
    for the order of siblings of equal weight), or -1 if the reports differ otherwise.
    perf finds a parent's child by walking a red-black tree whose comparisons are no
    order (symbol starts here, addresses there): a walk that misses the equal child
    adds another (modelled, but under dstack's estimate of perf's DSO order).  Period-valued graphs (-g ...,period) only."""
    pe, de = split_entries(ptext), split_entries(dtext)
    if len(pe) != len(de):
        return -1
    n = 0
    for (ph, pg), (dh, dg) in zip(pe, de):
        if ph != dh:
            return -1
        if pg == dg:
            continue
        (pp, _), (dp, dsorted) = graph_paths(pg), graph_paths(dg)
        if pp == dp and dsorted:
            continue
        (pc, pdup), (dc, _) = graph_chains(pg), graph_chains(dg)
        if not pdup or pc != dc or not pc:
            return -1
        n += 1
    return n


def main():
    args = [a for a in sys.argv[1:] if not a.startswith('--')]
    if len(args) != 2:
        raise SystemExit(__doc__)
    ptext, dtext = read(args[0]), read(args[1])
    # perf's report ends with a tip picked at random (or a note that it has
    # none): dstack prints none
    ptext = TIP.sub('\n', ptext)
    ptext = '\n'.join(REM_INLINED.sub(r'\1[...]', line) for line in ptext.split('\n'))
    if os.environ.get('CONF_HELD_IN') and os.path.exists(os.environ['CONF_HELD_IN']):
        held_in.update(l.rstrip('\n') for l in open(os.environ['CONF_HELD_IN']) if l.strip())
    if '--blocks' in sys.argv:
        equal, total, excused, same, notes = compare_blocks(ptext, dtext)
        if os.environ.get('CONF_HELD_OUT'):
            with open(os.environ['CONF_HELD_OUT'], 'w') as f:
                f.writelines(h + '\n' for h in sorted(held))
    else:
        equal, total, excused, same, notes = compare_lines(ptext, dtext)
        if not same and only_tie_order(ptext, dtext):
            notes.insert(0, 'only call-graph siblings of equal weight in another order')
            print('%d/%d\t%s' % (equal, total, '; '.join(notes)))
            sys.exit(3)
        split = split_branches(ptext, dtext) if not same else -1
        if split > 0:
            notes.insert(0, 'the same samples; in %d call graphs perf printed a frame as several sibling '
                            'branches where dstack prints one (perf\'s tree misses)' % split)
            print('%d/%d\t%s' % (equal, total, '; '.join(notes)))
            sys.exit(3)
    print('%d/%d\t%s' % (equal, total, '; '.join(notes)))
    sys.exit(0 if same else 1)


if __name__ == '__main__':
    main()
