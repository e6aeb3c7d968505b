#!/usr/bin/env python3
"""A developer's check of dwarf-mode unwinding on this machine's own programs:
perf 7.2 (kernel-vm's perf7, reading the host's files under /host) against
dstack script, sample for sample.  A sample's stacks are equal (addresses;
names compared too), dstack deeper (perf's frames a prefix of dstack's),
shorter, or diverging; a few examples of each are printed.

usage: compare_host.py DATA [EXAMPLES [SCRIPT-OPTIONS...]]
  run from the directory holding DATA (perf7 takes relative paths), e.g.
  perf record -F 999 --call-graph dwarf -o x.data -- PROG; compare_host.py x.data
  DS=dstack binary (default: the checkout's build/dstack), PERF7=its wrapper."""
import subprocess, sys, os, re, collections, shutil, tempfile
data = sys.argv[1]; nex = int(sys.argv[2]) if len(sys.argv) > 2 else 3
DS = os.environ.get('DS', os.path.join(os.path.dirname(os.path.abspath(__file__)), '../../../build/dstack'))
PERF7 = os.environ.get('PERF7', os.path.join(os.path.dirname(os.path.abspath(__file__)), '../../../../shared/kernel-vm/perf7'))
def blocks(txt):
    out = []; cur = None
    for line in txt.split('\n'):
        if not line.strip():
            if cur: out.append(cur); cur = None
            continue
        if not line[0].isspace():
            if cur: out.append(cur)
            cur = (line, [])
        elif cur:
            m = re.match(r'\s+([0-9a-f]+) (.*) \((.*)\)$', line)
            if m: cur[1].append((m.group(1), re.sub(r'\+0x[0-9a-f]+$', '', m.group(2)), m.group(3)))
            else: cur[1].append((line.strip(), '', ''))
    if cur: out.append(cur)
    return out
# perf7 runs chrooted: it reads kallsyms from a copy here, not /host/proc
ks = tempfile.NamedTemporaryFile(dir='.', prefix='.kallsyms.', delete=False)
with open('/proc/kallsyms', 'rb') as f:
    shutil.copyfileobj(f, ks)
ks.close()
try:
    p = subprocess.run([PERF7, 'script', '--symfs', '/host', '--kallsyms', os.path.basename(ks.name), '-i', data] + sys.argv[3:],
                       capture_output=True, text=True, errors='replace').stdout
finally:
    os.unlink(ks.name)
d = subprocess.run([DS, 'script', '-i', data] + sys.argv[3:], capture_output=True, text=True, errors='replace').stdout
pb, db = blocks(p), blocks(d)
cnt = collections.Counter(); ex = collections.defaultdict(list)
if len(pb) != len(db): print('sample counts differ: perf %d dstack %d' % (len(pb), len(db)))
for (ph, pf), (dh, df) in zip(pb, db):
    if ph.split()[:3] != dh.split()[:3]: cnt['misaligned'] += 1; continue
    pa = [f[0] for f in pf]; da = [f[0] for f in df]
    if pa == da:
        c = 'equal' if [f[1:] for f in pf] == [f[1:] for f in df] else 'equal-addr-names-differ'
    elif da[:len(pa)] == pa: c = 'deeper'
    elif pa[:len(da)] == da: c = 'shorter'
    else: c = 'diverging'
    cnt[c] += 1
    if c != 'equal' and len(ex[c]) < nex: ex[c].append((ph, pf, df))
print('%s: %d samples: ' % (data, sum(cnt.values())) + ', '.join('%s %d' % (k, cnt[k]) for k in ['equal', 'equal-addr-names-differ', 'deeper', 'shorter', 'diverging', 'misaligned'] if cnt[k]))
for c in ex:
    for ph, pf, df in ex[c]:
        print('--- %s: %s' % (c, ph))
        n = max(len(pf), len(df))
        for i in range(n):
            a = pf[i] if i < len(pf) else ('', '', ''); b = df[i] if i < len(df) else ('', '', '')
            mark = ' ' if a == b else '*'
            print('%s %2d perf %-14s %-40.40s %-20.20s | ds %-14s %-40.40s %.20s' % (mark, i, a[0], a[1], os.path.basename(a[2]), b[0], b[1], os.path.basename(b[2])))
