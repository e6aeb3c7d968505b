#!/usr/bin/env python3
"""Checks the guest job's output (tests/vm/record-job.sh): prints "ok ..." / "bad ..." lines
and "info ..." numbers.  usage: record-check.py OUTDIR DSTACK"""
import os, re, subprocess, sys

out, dstack = sys.argv[1], sys.argv[2]


def stat(name):
    path = os.path.join(out, name + '.data')
    if not os.path.exists(path):
        return None
    r = subprocess.run([dstack, 'stat', '-i', path], capture_output=True, text=True)
    d = {}
    for line in r.stdout.splitlines():
        parts = line.split(None, 1)
        if len(parts) == 2:
            d[parts[0]] = parts[1]
    d['_size'] = os.path.getsize(path)
    return d


def num(d, k):
    try:
        return int(d.get(k, '0').split()[0])
    except ValueError:
        return 0


def samples(path):
    """[(header, [frame addresses])] of a perf script output"""
    res, cur = [], None
    for line in open(path, errors='replace'):
        line = line.rstrip('\n')
        if not line:
            cur = None
        elif not line[0].isspace():
            cur = (line.rstrip(), [])
            res.append(cur)
        elif cur is not None:
            cur[1].append(line.split()[0])   # the address: naming symbols is script's job
    return res


def is_cookie(frames):
    """the last frame is a bare cookie: (counter << 32) | (cpu + 1), not an address,
    right after the kernel's frames (a user chain's last frame, a stale frame
    pointer, can look like one: CI once read 7f8100000005 after 7f81a19a3f70)"""
    if not frames:
        return False
    try:
        v = int(frames[-1], 16)
        before = int(frames[-2], 16) if len(frames) > 1 else None
    except ValueError:
        return False
    return ((1 << 32) <= v < (1 << 47) and (v & 0xffffffff) <= 4096 and
            (before is None or before >= 0xffff800000000000))


PERIOD_S = 100000e-9   # the job's -c 100000 on cpu-clock (ns)


def cpu_seconds(name):
    """user + system CPU seconds of the workload (the second line of `times`)"""
    try:
        lines = open(os.path.join(out, name + '.cpu')).read().splitlines()
        return sum(int(m) * 60 + float(s) for m, s in re.findall(r'(\d+)m([\d.]+)s', lines[1]))
    except (OSError, IndexError, ValueError):
        return 0.0


times = {}
if os.path.exists(os.path.join(out, 'times')):
    for line in open(os.path.join(out, 'times')):
        name, key, val = line.split()
        times[(name, key)] = int(val)

st = {n: stat(n) for n in ('d_fork', 'p_fork', 'd_tail', 'p_tail', 'd_cpu', 'p_cpu', 'd_pipe')}
for n in ('d_fork', 'd_tail', 'd_cpu'):
    d = st[n]
    if not d or times.get((n, 'rc')) != 0:
        print(f'bad {n}: dstack record failed (rc {times.get((n, "rc"))}): ' +
              open(os.path.join(out, n + '.log')).read()[-300:].replace('\n', ' '))
        continue
    recs = num(d, 'records.CALLCHAIN_DEFERRED')
    outs = [v for k, v in d.items() if k.startswith('event.') and 'defer_output' in v]
    if recs > 0 and len(outs) == 1 and num(d, 'records.bad') == 0:
        print(f'ok {n}: {num(d, "samples")} samples, {recs} CALLCHAIN_DEFERRED records, defer_output on one event')
    else:
        print(f'bad {n}: {recs} deferred records, defer_output on {len(outs)} events, {num(d, "records.bad")} bad')

# the same samples in perf script 7.x and dstack script
for n in ('d_fork', 'd_tail'):
    pp, dp = os.path.join(out, n + '.pscript'), os.path.join(out, n + '.dscript')
    if not (os.path.exists(pp) and os.path.exists(dp)):
        print(f'bad {n}: no script outputs'); continue
    # perf prints a sample held for its deferred record later than dstack does:
    # compare in (header) order, which holds the time
    # and perf 7.2 names a task ":TID" when a deferred record comes after the
    # task's EXIT (records only dstack keeps): compare from the tid on
    def key(x):
        m = re.match(r'^(.*?)\s+(\d+\s+(?:\[\d+\]\s+)?\d+\.\d+:.*)$', x[0])
        return m.group(2) if m else x[0]
    ps = sorted(((key(x), x[1]) for x in samples(pp)), key=lambda x: x[0])
    ds = sorted(((key(x), x[1]) for x in samples(dp)), key=lambda x: x[0])
    same = stitched_more = differ = 0
    for (ph, pf), (dh, df) in zip(ps, ds):
        if ph != dh:
            differ += 1
        elif pf == df:
            same += 1
        elif is_cookie(pf) and not is_cookie(df):
            stitched_more += 1   # perf 7.2 leaves a record-before-sample cookie unstitched
        else:
            differ += 1
    if len(ps) == len(ds) and len(ps) > 0 and differ == 0:
        print(f'ok {n}: perf script 7.x and dstack script print the same {len(ps)} samples '
              f'({same} identical, {stitched_more} stitched by dstack only)')
    else:
        print(f'bad {n}: perf script {len(ps)} samples, dstack script {len(ds)}, {differ} differ')

# counts in line with perf record; unresolved: dstack ~0, perf loses them
f_d, f_p = st['d_fork'], st['p_fork']
if f_d and f_p:
    a, b = num(f_d, 'samples'), num(f_p, 'samples')
    print(f'info fork: samples dstack {a} perf {b}; unresolved dstack {num(f_d, "unresolved")} perf {num(f_p, "unresolved")}')
    # The task records are exact.  A sample count follows the workload's CPU
    # time, which the emulation's pace (host load) stretches by tens of percent
    # between two runs of the same work (CI once read 27670 samples against
    # perf's 17842): compared is the share of that CPU time each recorder
    # sampled (samples x period / the workload's CPU time, from `times`).
    # Samples per deferred record (per kernel entry) follow the pace too: four
    # runs of the same dstack measured 12.7, 13.2, 14.7 and 18.3 against perf's
    # 14.6, 13.6, 14.3 and 12.8, so within a factor of two is "in line" (records
    # lost outright show as unresolved samples, checked just below).
    tasks_d = (num(f_d, 'records.FORK'), num(f_d, 'records.EXIT'))
    tasks_p = (num(f_p, 'records.FORK'), num(f_p, 'records.EXIT'))
    # one FORK per task but the shell, one EXIT per task (record-job.sh);
    # perf record's file held an EXIT more than its tasks once in CI
    # (61 FORK, 63 EXIT), in none of eight runs of the job here: dstack's
    # must be the workload's own count (or perf's, should the kernel have
    # written that record more to both)
    kids = times.get(('fork', 'children'))
    tasks = (kids + 1, kids + 2) if kids is not None else None
    if tasks_p != tasks:
        print(f'info fork: perf record\'s FORK/EXIT {tasks_p} are not the workload\'s {tasks}')
    rd, rp = num(f_d, 'records.CALLCHAIN_DEFERRED'), num(f_p, 'records.CALLCHAIN_DEFERRED')
    cd, cp = cpu_seconds('d_fork'), cpu_seconds('p_fork')
    shd = a * PERIOD_S / cd if cd else 0
    shp = b * PERIOD_S / cp if cp else 0
    print(f'info fork: workload CPU time dstack {cd:.2f} s perf {cp:.2f} s; sampled share dstack '
          f'{shd:.3f} perf {shp:.3f}; THROTTLE records dstack {num(f_d, "records.THROTTLE")} '
          f'perf {num(f_p, "records.THROTTLE")}')
    # (the share itself swings with the host's load: 27% against perf's 38%
    # in a run beside a CI run, 42% against 46% alone, 40% against 61% in a
    # CI-style run on a loaded machine; so within 2x either way, as the
    # samples per record: samples lost outright show as unresolved, below)
    if (shp and 0.5 <= shd / shp <= 2.0 and tasks_d in (tasks, tasks_p) and rd and rp and
            0.5 <= (a / rd) / (b / rp) <= 2.0):
        print(f'ok fork: {a} samples ({shd:.0%} of the workload\'s CPU time), {rd} deferred records, '
              f'FORK/EXIT {tasks_d}: in line with perf record\'s {b} ({shp:.0%}), {rp}, {tasks_p}')
    else:
        print(f'bad fork: {a} samples ({shd:.0%} of the workload\'s CPU time), {rd} deferred records, '
              f'FORK/EXIT {tasks_d}; perf record {b} ({shp:.0%}), {rp}, {tasks_p}')
    if num(f_d, 'unresolved') <= num(f_p, 'unresolved'):
        print(f'ok fork: unresolved {num(f_d, "unresolved")} (perf record: {num(f_p, "unresolved")})')
    else:
        # what dstack record said (lost events, pending stacks, its receiver
        # of deferred records) and how its file lost them
        said = [l.strip() for l in open(os.path.join(out, 'd_fork.log'), errors='replace')
                if l.startswith('dstack record:')] if os.path.exists(os.path.join(out, 'd_fork.log')) else []
        print(f'bad fork: unresolved {num(f_d, "unresolved")} > perf record\'s {num(f_p, "unresolved")} '
              f'(LOST records {num(f_d, "records.LOST")}; it said: {" | ".join(said) or "nothing"})')
t_d, t_p = st['d_tail'], st['p_tail']
if t_d and t_p:
    ud, up, sd = num(t_d, 'unresolved'), num(t_p, 'unresolved'), num(t_d, 'samples')
    print(f'info tail: samples dstack {sd} perf {num(t_p, "samples")}; unresolved dstack {ud} perf {up}; '
          f'{times.get(("tail", "tries"))} tries')
    if up > 100 and ud * 100 <= sd:
        print(f'ok tail: end of profile: dstack leaves {ud} of {sd} samples unresolved, perf record {up}')
    else:
        print(f'bad tail: unresolved dstack {ud} of {sd}, perf record {up}')
for n in ('cpu', 'fork', 'tail'):
    d, p = st.get('d_' + n), st.get('p_' + n)
    if d and p and num(d, 'samples') and num(p, 'samples'):
        print(f'info overhead {n}: recorder CPU ticks dstack {times.get(("d_" + n, "ticks"))} '
              f'perf {times.get(("p_" + n, "ticks"))}; bytes/sample dstack '
              f'{d["_size"] / num(d, "samples"):.0f} perf {p["_size"] / num(p, "samples"):.0f}')
d = st['d_pipe']
if d and d.get('file.mode') == 'pipe' and num(d, 'samples') > 0:
    print(f'ok pipe: -o - wrote a pipe-mode file with {num(d, "samples")} samples')
else:
    print(f'bad pipe: {d and d.get("file.mode")}, {d and num(d, "samples")} samples')
