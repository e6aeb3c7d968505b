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
    difference), counted and shown; perf prints the cookie as "(cookie)"
    when no later record of the task came to give the sample up (the
    task's last kernel entry)."""
import collections, os, re, sys

out = sys.argv[1]
# comm, tid, [cpu] time, period (not for tracepoints), event, the rest
HDR = re.compile(r'^( *)(\S.*?) +(\d+) +((?:\[\d{3}\] +)?\d+\.\d{6}:)( +\d+)? +(\S+:)( .*|)$')


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
            cur = ((m.group(2), '%s %s%s %s%s' % (m.group(3), m.group(4), m.group(5) or '', m.group(6), m.group(7))), [])
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
    # (as a plain address when a later record of its task gave it up, as
    # "(cookie)" when perf still held it at the end: the task's last sample)
    cookie = re.compile(r'^\t +[0-9a-f]+ (\[unknown\]|\(cookie\)) \(\[unknown\]\)$')
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
    tid_comms = collections.defaultdict(set)   # every comm dstack prints for a tid
    for s in d:
        tid_comms[s[0][1].split()[0]].add(s[0][0])
    tid_named = later = other = 0
    for s in p:
        c = s[0][0]
        if key(s) not in comms_d or c in comms_d[key(s)]:
            continue   # a sample without its twin is counted above
        if re.fullmatch(r':\d+', c):
            tid_named += 1
        elif c in tid_comms[s[0][1].split()[0]]:
            later += 1   # perf held it for its deferred stack past an exec: the new name
        else:
            other += 1
    note = ', %d samples perf names ":TID" after the thread exited' % tid_named if tid_named else ''
    if later:
        note += ', %d samples perf names by the comm the thread took after them (held for a deferred stack across an exec)' % later
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




def folded(name):
    """(stack, ns) of OUT/NAME.offcpu (dstack folded --off-cpu)"""
    res = []
    for line in open(os.path.join(out, name + '.offcpu')):
        stack, _, n = line.rstrip('\n').rpartition(' ')
        res.append((';'.join(f[:-4] if f.endswith('_[k]') else f for f in stack.split(';')), int(n)))
    return res


def measured(name, what):
    for line in open(os.path.join(out, name + '.log')):
        if line.startswith(what + ' '):
            return int(line.split()[1])
    return None


def offcpu(name, what, leaf, frames, user, whole=False, upper='wall'):
    """The off-CPU ns of the stacks ending in @leaf that hold every one of
    @frames and a @user frame (stitched: the user part above the kernel's)
    must lie between the workload's off-CPU time in its waits and their wall
    time (its @upper, "wall" unless said, when it prints one), each widened by 5%, and be 90% of
    all such stacks' time (libc has no frame pointers: a wait inside it that
    the workload does not measure, pthread_join's say, stops at libc).  The
    profile's wait runs from the switch-out sample to the thread's next
    record, both inside the workload's wait and around its time off CPU.
    With @whole, the workload measures all of that time (a preemption,
    wherever it hits): all such stacks' time is compared with it."""
    ref = measured(name, what)
    if not ref:
        print('bad off-cpu %s: the workload printed no "%s"' % (name, what))
        return
    wall = max(measured(name, upper) or ref, ref)
    got = stitched = 0
    for stack, ns in folded(name):
        fr = stack.split(';')
        if fr[0] != 'owl' or fr[-1] != leaf or not all(f in fr for f in frames):
            continue   # the workload's stacks only (a system-wide file has others)
        got += ns
        if any(u in fr for u in user):
            stitched += ns
    shown = got if whole else stitched
    dev = (shown - ref) / ref * 100
    msg = '%s: %.1f ms off CPU in %s stacks under %s, the workload measured %.1f ms off CPU (%+.1f%%) in %.1f ms of %s; %.1f ms more in stacks cut short in libc' % (
        name, stitched / 1e6, '/'.join(frames) or leaf, '/'.join(user), ref / 1e6, dev, wall / 1e6,
        'waits' if upper == 'wall' else upper + ' time', (got - stitched) / 1e6)
    ok = 0.95 * ref <= shown <= 1.05 * wall and stitched >= 0.9 * got
    print(('ok off-cpu ' if ok else 'bad off-cpu ') + msg)


def pid_waits():
    """record --off-cpu -p: the sleeps of a running task, 20 ms each: off-CPU time
    in do_nanosleep stacks, stitched to main, over 80% of the recorded span"""
    got = sum(ns for st, ns in folded('dpid') if st.split(';')[-1] == '[off-cpu: sleeping]' and
              'do_nanosleep' in st.split(';') and 'main' in st.split(';'))
    span = None
    for line in open(os.path.join(out, 'dpid.ds'), errors='replace'):
        m = HDR.match(line)
        if m:
            t = float(m.group(4).split()[-1].rstrip(':'))
            span = (span[0], t) if span else (t, t)
    if not span or not got:
        print('bad off-cpu dpid: no off-CPU time in do_nanosleep stacks of record -p')
        return
    frac = got / 1e9 / max(span[1] - span[0], 1e-9)
    msg = 'dpid (record --off-cpu -p): %.1f ms off CPU in do_nanosleep stacks over %.1f ms of switches' % (
        got / 1e6, (span[1] - span[0]) * 1e3)
    print(('ok off-cpu ' if frac > 0.8 else 'bad off-cpu ') + msg)


def cost(name):
    """(switches, records, bytes) of the sched_switch samples of OUT/NAME.dump and
    of the deferred callchain records they point to (each once)"""
    switches = nbytes = 0
    wanted, deferred = set(), {}
    cur = None
    for line in open(os.path.join(out, name + '.dump'), errors='replace'):
        m = re.match(r'^0x[0-9a-f]+ \[0x([0-9a-f]+)\]: PERF_RECORD_(\w+)(.*)', line)
        if m:
            size, kind, rest = int(m.group(1), 16), m.group(2), m.group(3)
            tid = re.search(r' tid (\d+)', rest)
            cur = None
            if kind == 'SAMPLE' and ' sched:sched_switch ' in rest:
                switches += 1
                nbytes += size
                cur = tid.group(1) if tid else '?'
            elif kind == 'CALLCHAIN_DEFERRED':
                ck = re.search(r'cookie (0x[0-9a-f]+)', rest)
                if ck and tid:
                    deferred[(tid.group(1), int(ck.group(1), 16))] = size
            continue
        m = re.match(r'^ \.+ +\d+: ([0-9a-f]+) \(cookie\)', line)
        if m and cur:
            wanted.add((cur, int(m.group(1), 16)))
    used = [deferred[k] for k in wanted if k in deferred]
    return switches, switches + len(used), nbytes + sum(used)


def costs(deferred, classic):
    (sd, rd, bd), (sc, rc, bc) = cost(deferred), cost(classic)
    if not sd or not sc:
        print('bad cost: no sched_switch sample in %s or %s' % (deferred, classic))
        return
    print('ok cost of a switch (its sched_switch sample and the deferred records they point to, per switch): '
          'deferred %.2f records, %.0f bytes; classic %.2f records, %.0f bytes (%d and %d switches)' %
          (rd / sd, bd / sd, rc / sc, bc / sc, sd, sc))


# NAME (whole samples), NAME+ (headers only: pipe mode), NAME? (may record nothing);
# --offcpu: the off-CPU checks of the known waits and the cost of a switch
for n in sys.argv[2:]:
    if n == '--offcpu':
        offcpu('sleep', 'waited', '[off-cpu: sleeping]', ['do_nanosleep'], ['main'])
        offcpu('pipe', 'waited', '[off-cpu: sleeping]', ['anon_pipe_read'], ['main'])
        offcpu('mutex', 'waited', '[off-cpu: sleeping]', ['futex_wait'], ['main'])
        # preempted by the timer tick, mostly, or on the way out of the
        # clock_gettime syscall hog_account makes (then cut short in libc);
        # at most the threads' whole time on a run queue: a preemption the
        # spin does not measure (CI saw +5.2% in a slow guest) is in it
        offcpu('hog', 'preempted', '[off-cpu: preempted]', [], ['main', 'hog_spin'], whole=True,
               upper='queued')
        costs('sleep', 'sleepfp')
        # dstack record --off-cpu
        offcpu('dsleep', 'waited', '[off-cpu: sleeping]', ['do_nanosleep'], ['main'])
        offcpu('dsleepfp', 'waited', '[off-cpu: sleeping]', ['do_nanosleep'], ['main'])
        costs('dsleep', 'dsleepfp')
        offcpu('dall', 'waited', '[off-cpu: sleeping]', ['do_nanosleep'], ['main'])
        pid_waits()
    else:
        compare(n.rstrip('+?'), n.endswith('+'), n.endswith('?'))
