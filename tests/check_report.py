#!/usr/bin/env python3
"""Compare `dstack report --stdio` output with perf's.

usage: check_report.py PERF_REPORT DSTACK_REPORT [--trees]

Flat lines are matched by (command, shared object, symbol); every line
perf prints must be in dstack's output with the same percentages (to
0.01).  With --trees the call-graph text under each matched entry is
compared too and the number of identical trees is reported (not a failure:
dstack stitches samples perf leaves unstitched).
Exit 1 on a flat-profile mismatch.
"""
import re
import sys

LINE = re.compile(r'^\s+((?:\d+\.\d+%\s+)+)(\S.*?)\s{2,}(\S.*?)\s{2,}(\[.\] .*)$')


def parse(path):
    entries, order, cur = {}, [], None
    for raw in open(path, errors='replace'):
        line = raw.rstrip('\n')
        if line.startswith('#'):
            cur = None
            continue
        m = LINE.match(line)
        if m:
            pcts = tuple(float(x.rstrip('%')) for x in m.group(1).split())
            key = (m.group(2).strip(), m.group(3).strip(), m.group(4)[4:].strip())
            cur = key
            if key in entries:  # the same text twice (e.g. two DSOs with one basename): sum
                old = entries[key]
                entries[key] = (tuple(a + b for a, b in zip(old[0], pcts)), old[1])
            else:
                entries[key] = (pcts, [])
                order.append(key)
        elif cur is not None and line.strip():
            entries[cur][1].append(line.rstrip())
    return entries, order


def known_quirk(key, pcts, extras, mine):
    """The dstack line for a perf line that differs only in how it is named:
    - perf cuts a command to its column width when the entries that widened
      the column print as 0.00% ("perf-ex" for "perf-exec");
    - a sample ip whose DWARF inline chain has only the inlined function:
      perf names the ELF symbol ("f.constprop.0"), dstack the function
      ("f"; the library does not hand the ELF name over yet);
    - a sample inside exec (perf_event_exec) is counted under the new
      command by perf, under the old one by dstack.
    The percentages must still agree."""
    comm, dso, sym = key
    for k in extras:
        if k[1] != dso or max(abs(a - b) for a, b in zip(pcts, mine[k][0])) > 0.0100001:
            continue
        if k[2] == sym and k[0].startswith(comm) and k[0] != comm:
            return k
        clone = r'(\.(constprop|isra|part|cold|lto_priv)\.\d+)+|( \[clone \.\w+(\.\d+)?\])+'
        if k[0] == comm and sym.startswith(k[2]) and re.fullmatch(clone, sym[len(k[2]):]):
            return k
        if k[2] == sym == 'perf_event_exec' and k[0] != comm:
            return k
    return None


def main():
    perf, _ = parse(sys.argv[1])
    mine, _ = parse(sys.argv[2])
    trees = '--trees' in sys.argv
    matched, maxdiff, missing, bad = 0, 0.0, [], []
    same_tree = with_tree = 0
    extras = [k for k in mine if k not in perf]
    quirks = 0
    for key, (pcts, tree) in perf.items():
        if key not in mine:
            alt = known_quirk(key, pcts, extras, mine)
            if alt is None:
                missing.append(key)
                continue
            quirks += 1
            extras.remove(alt)
            key, mine[key] = alt, mine[alt]
        matched += 1
        d = max(abs(a - b) for a, b in zip(pcts, mine[key][0]))
        maxdiff = max(maxdiff, d)
        if d > 0.0100001:
            bad.append((key, pcts, mine[key][0]))
        if tree:
            with_tree += 1
            same_tree += tree == mine[key][1]
    msg = (f'{matched}/{len(perf)} perf lines matched ({quirks} by a known naming difference), '
           f'max diff {maxdiff:.2f}, {len(missing)} missing, {len(extras)} extra')
    if trees:
        msg += f'; call graphs identical {same_tree}/{with_tree}'
    print(msg)
    for key in missing[:5]:
        print('  missing:', key, perf[key][0])
    for key, a, b in bad[:5]:
        print('  differs:', key, 'perf', a, 'dstack', b)
    sys.exit(1 if missing or bad else 0)


if __name__ == '__main__':
    main()
