#!/usr/bin/env python3
"""Checks of tests/suites/83-unwind.sh on the guest's dwarf-mode recordings:
dstack's unwound stacks against perf 7.2's, sample for sample.

  check.py OUT SYMFS DSTACK PERF7

Prints "ok ..." / "bad ..." lines (and notes).  Stacks are compared as each
frame's address and DSO (--no-inline: perf and dstack name some inlined
frames differently, which is the symbols' business, not the unwinder's).
"""
import collections
import re
import subprocess
import sys

import os
out, symfs, dstack, perf7 = [os.path.abspath(a) if i < 3 else a for i, a in enumerate(sys.argv[1:5])]
ks = out + "/kallsyms"


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return p.returncode, p.stdout, p.stderr


def samples(text):
    """[(header, [(ip, sym, dso)...])] from perf/dstack script text."""
    res, head, frames = [], None, []
    for line in text.split("\n"):
        if not line:
            if head is not None:
                res.append((head, frames))
            head, frames = None, []
        elif not line[0].isspace():
            head = " ".join(line.split()[:3])
        else:
            f = line.split()
            frames.append((int(f[0], 16), f[1] if len(f) > 2 else "", f[-1]))
    if head is not None:
        res.append((head, frames))
    return res


def perf_args(name):
    """perf7 runs in the guest's root: absolute host paths under /host"""
    return ["script", "--no-inline", "--kallsyms", "/host" + ks, "-i", "/host" + out + "/" + name + ".data",
            "--symfs", "/host" + symfs]


def scripts(name):
    args = ["script", "--no-inline", "--kallsyms", ks, "-i", out + "/" + name + ".data"]
    rc1, p, perr = run([perf7] + perf_args(name))
    rc2, d, derr = run([dstack] + args + ["--symfs", symfs])
    if rc2 != 0:
        print("bad %s: dstack script exit %d: %s" % (name, rc2, derr.strip()[-200:]))
        return None, None
    if rc1 != 0:
        print("bad %s: perf 7.2 script exit %d: %s" % (name, rc1, perr.strip()[-200:]))
        return None, None
    return samples(p), samples(d)


def key(sample):
    """what the unwinder decides: each frame's address and DSO (the names
    are the symbols' business, checked by the conformance suite)"""
    return (sample[0], [(f[0], f[2]) for f in sample[1]])


def user(frames):
    return [f for f in frames if not f[2].startswith("([kernel")]


_tables = {}


def stub_tables(path):
    """(is ET_EXEC, its PLT sections, the pc ranges its FDEs cover) of a
    binary, from binutils' readelf; None if it cannot be read."""
    if path not in _tables:
        rc, head, _ = run(["readelf", "-hSW", path])
        rc2, frames, _ = run(["readelf", "-wf", path])
        if rc or rc2:
            _tables[path] = None
        else:
            plts = [(int(m.group(2), 16), int(m.group(2), 16) + int(m.group(3), 16))
                    for m in re.finditer(r"\]\s+(\.plt\S*|\.iplt)\s+PROGBITS\s+([0-9a-f]+) [0-9a-f]+ ([0-9a-f]+)", head)]
            fdes = [(int(a, 16), int(b, 16)) for a, b in re.findall(r"FDE cie=\S+ pc=([0-9a-f]+)\.\.([0-9a-f]+)", frames)]
            _tables[path] = (re.search(r"Type:\s+EXEC", head) is not None, plts, fdes)
    return _tables[path]


def perf_stops_in_bare_stub(a, b):
    """perf's walk (a) ended in a PLT stub that no CFI covers, where
    dstack's (b) walked on by the stub's own rule (the return address at
    the stack pointer, a word on per push the stub made): perf's libdw
    finds no CFI there and falls back to the frame pointer, which the
    stub's caller need not keep (glibc's startup code uses %rbp as a
    general register).  Such a sample's kernel frames are equal and
    perf's user frames are the first of dstack's.  The binary's sections
    and FDEs say where its stubs lie and what its CFI covers; only a
    position-dependent executable is read (its addresses are the file's)."""
    ua, ub = user(a[1]), user(b[1])
    if (a[0] != b[0] or not ua or len(ub) <= len(ua) or [f for f in a[1] if f not in ua] != [f for f in b[1] if f not in ub]
            or [(f[0], f[2]) for f in ub[:len(ua)]] != [(f[0], f[2]) for f in ua]):
        return False
    pc, dso = ua[-1][0], ua[-1][2]
    t = stub_tables(symfs + dso.strip("()"))
    return (t is not None and t[0] and any(s <= pc < e for s, e in t[1]) and
            not any(s <= pc < e for s, e in t[2]))


def equal(name, what):
    p, d = scripts(name)
    if p is None:
        return
    same = sum(1 for a, b in zip(p, d) if key(a) == key(b))
    stub = sum(1 for a, b in zip(p, d) if key(a) != key(b) and perf_stops_in_bare_stub(a, b))
    deep = sum(len(user(b[1])) for b in d)
    if len(p) == len(d) and same + stub == len(p) and deep > len(p):
        print("ok %s: %d samples, %d user frames: every stack equal to perf 7.2's%s (%s)" %
              (name, len(p), deep, "" if not stub else
               " but %d where perf's walk stops in a PLT stub no CFI covers and dstack's walks on" % stub, what))
    else:
        bad = [(a, b) for a, b in zip(p, d) if key(a) != key(b) and not perf_stops_in_bare_stub(a, b)][:2]
        print("bad %s: %d/%d samples equal (perf %d, dstack %d): first %s" % (name, same, len(p), len(p), len(d), bad[:1]))


def i386(name, what):
    """As equal(), but perf 7.2's libdw walk of a 32-bit task can fail for
    good: a return address in the binary's data segment (a frame whose CFI
    misses its pushes, glibc's i386 memcpy) makes perf report the binary a
    second time at another base, and from then on its walks of that task
    end in an error, which drops their every user frame.  dstack's frames
    must equal perf's wherever perf printed some; the samples perf emptied
    (their kernel frames equal) are counted, with the first of them."""
    p, d = scripts(name)
    if p is None:
        return
    same = emptied = other = 0
    failed_at = None
    for i, (a, b) in enumerate(zip(p, d)):
        if key(a) == key(b):
            same += 1
            continue
        ua, ub = user(a[1]), user(b[1])
        if not ua and ub and [f for f in a[1] if f not in ua] == [f for f in b[1] if f not in ub]:
            failed_at = i if failed_at is None else failed_at
            emptied += 1
        else:
            other += 1
    deep = sum(len(user(b[1])) for b in d)
    if len(p) == len(d) and not other and deep > len(p):
        print("ok %s: %d samples, %d user frames: %d stacks equal to perf 7.2's, %d that perf's libdw walk emptied "
              "after its failure at sample %s (%s)" % (name, len(p), deep, same, emptied,
                                                     "none" if failed_at is None else failed_at, what))
    else:
        bad = [(a, b) for a, b in zip(p, d) if key(a) != key(b)][:1]
        print("bad %s: %d/%d samples equal, %d emptied by perf, %d other (perf %d, dstack %d): first %s" %
              (name, same, len(p), emptied, other, len(p), len(d), bad))


# The leaf offsets in badcfi.c's `lying` where its CFI is wrong: after its
# push of the .bss pointer, before the add that pops it (the mov and the
# loop; the instruction encodings of its hand-written asm, which
# `objdump -d` of the binaries shows).  A sample at the entry (before the
# push) or at the add or ret has right CFI and a whole walk, as perf's.
BAD_CFI = {"bc32": (0x5, 0xc), "bc64": (0x8, 0x10)}


def in_bad_cfi(name, frames):
    """Does a stack (user frames) start where `lying`'s CFI is wrong?"""
    if not frames or not frames[0][1].startswith("lying+0x"):
        return False
    off = int(frames[0][1][len("lying+"):], 16)
    return BAD_CFI[name][0] <= off < BAD_CFI[name][1]


def bad_cfi(name, fails):
    """badcfi.c: in `lying`, whose CFI reads the pushed .bss pointer as its
    return address.  fails (i386): perf's walk cannot report the binary's
    data segment there: its first such sample keeps `lying` alone, and
    after it perf empties the task's every walk (as in i386()); dstack
    ends each walk at `lying`.  Else (x86-64, a data segment at its file
    offsets): perf prints the .bss frame and stops, and so does dstack."""
    p, d = scripts(name)
    if p is None:
        return
    same = emptied = stub = through = other = 0
    first = None
    for i, (a, b) in enumerate(zip(p, d)):
        ua, ub = user(a[1]), user(b[1])
        if key(a) == key(b):
            same += 1
            if first is None and in_bad_cfi(name, ua):
                first = (i, [f[1] for f in ua])
        elif fails and first is not None and not ua and ub:
            emptied += 1
        elif perf_stops_in_bare_stub(a, b):
            stub += 1
            through += ub[-1][1].startswith("_start+")
        else:
            other += 1
    lying = [[f[1] for f in user(b[1])] for b in d if in_bad_cfi(name, user(b[1]))]
    want = 1 if fails else 2
    ends = sum(1 for u in lying if len(u) == want and (fails or u[1].startswith("buf+")))
    # x86-64's strlen loop: samples in its stub, each walked on to _start
    stubs_ok = fails or (stub > 0 and through == stub)
    if (len(p) == len(d) and not other and first and len(first[1]) == want and len(lying) > 50 and
            ends == len(lying) and stubs_ok):
        print("ok %s: %d samples, %d where lying's CFI is wrong: every walk ends as perf 7.2's first does (%s), "
              "%d equal, %d that perf emptied after, %d where perf's walk stops in a PLT stub no CFI covers and "
              "dstack's walks on to _start" % (name, len(p), len(lying), " <- ".join(first[1]), same, emptied, stub))
    else:
        bad = [(a, b) for a, b in zip(p, d) if key(a) != key(b) and not perf_stops_in_bare_stub(a, b)][:1]
        print("bad %s: %d/%d samples equal, %d emptied by perf, %d in PLT stubs (%d walked to _start), %d other, "
              "%d/%d where lying's CFI is wrong end as perf's first (%s): first difference %s" %
              (name, same, len(p), emptied, stub, through, other, ends, len(lying), first, bad))


def sframe_only(name, binary):
    """The copy has no .eh_frame/.eh_frame_hdr/.debug_frame: perf stops in
    it, dstack must reach _start from .sframe."""
    rc, d, err = run([dstack, "script", "--no-inline", "--symfs", symfs, "--kallsyms", ks, "-i", out + "/" + name + ".data"])
    rc1, p, err1 = run([perf7] + perf_args(name))
    rc2, st, err2 = run([dstack, "stat", "--symfs", symfs, "--kallsyms", ks, "-i", out + "/" + name + ".data"])
    if rc or rc1 or rc2:
        print("bad %s: exit %d/%d/%d" % (name, rc, rc1, rc2))
        return

    def reach(text):
        n = ok_ = 0
        for h, fr in samples(text):
            u = user(fr)
            # the assembler's startup code (crti's _init/_fini) and PLT stubs
            # have no .sframe entry: a sample there has nothing to unwind by
            if u and re.match(r"(_init|_fini)\+|.*@plt\+", u[0][1]):
                continue
            if any(f[2] == "(/job/%s)" % binary for f in u):
                n += 1
                ok_ += u[-1][1].split("+")[0] == "_start"
        return n, ok_
    n, k = reach(d)
    pn, pk = reach(p)
    m = re.search(r"unwind.method.sframe\s+(\d+) samples, (\d+) frames", st)
    sf = int(m.group(2)) if m else 0
    if n >= 20 and k >= 0.99 * n and sf > 0:
        print("ok %s: %d/%d user samples in %s reach _start from .sframe alone (%d SFrame steps); "
              "perf 7.2: %d/%d" % (name, k, n, binary, sf, pk, pn))
    else:
        print("bad %s: %d/%d reach _start, %d SFrame steps (perf %d/%d)" % (name, k, n, sf, pk, pn))


equal("c", "calls through libc's qsort, threads, a signal handler")
equal("cxx", "C++: exceptions, std::sort, virtual calls")
equal("sf3", "SFrame v3 binary, with its .eh_frame")
equal("sf2", "SFrame v2 binary, with its .eh_frame")
i386("c32", "a 32-bit static binary, its stack read in perf's 8-byte words: a realigned main's CFA points nowhere, as perf's libdw finds")
bad_cfi("bc32", True)
bad_cfi("bc64", False)
sframe_only("sf3x", "sf3x")
sframe_only("sf2x", "sf2x")


def read_guest(name, who):
    try:
        with open("%s/%s.%s.script" % (out, name, who)) as f:
            return samples(f.read())
    except OSError as e:
        print("bad %s: no %s output from the guest: %s" % (name, who, e))
        return None


def vdso_in_guest():
    """perf 7.2 and dstack both read vd.data in the guest that recorded it
    (run.sh): perf takes its own process's vDSO image for the recording's
    [vdso] maps, dstack its own when the recording's kernel release is the
    running one.  Whole lines compared: names, addresses and DSOs."""
    p, d = read_guest("vd", "guest"), read_guest("vd", "dstack")
    if p is None or d is None:
        return
    same = sum(1 for a, b in zip(p, d) if a == b)
    vd = [fr for h, fr in p if any(f[2] == "([vdso])" for f in fr)]
    through = sum(1 for fr in vd if user(fr)[-1][1].startswith("_start+"))
    if len(p) == len(d) and same == len(p) and len(vd) >= 20 and through >= 0.9 * len(vd):
        print("ok vd: read in the guest, %d samples equal to perf 7.2's, %d of them in the vDSO (%d unwound through "
              "it to _start), symbols from the running kernel's image" % (len(p), len(vd), through))
    else:
        bad = [(a, b) for a, b in zip(p, d) if a != b][:1]
        print("bad vd: %d/%d samples equal (dstack %d), %d in the vDSO, %d through it: first %s" %
              (same, len(p), len(d), len(vd), through, bad))


def vdso32():
    """dstack record of an i386 task in the vDSO: the [vdso32] image is
    kept, and every sample whose stack starts there unwinds through it to
    main, or to _start from outside main (not past main: main realigns
    its stack, and perf's 8-byte reads of a 32-bit stack, which dstack's
    walk reads as perf does, lose its CFA: see i386()).  perf 7.2 reads the file (its own image of an i386 vDSO
    comes from a helper that cannot run in the guest: its stacks of these
    samples are empty)."""
    d, p = read_guest("d_vd32", "dstack"), read_guest("d_vd32", "guest")
    if p is None or d is None:
        return
    kept = [os.path.join(r, f) for r, _, fs in os.walk(out + "/dcache/[vdso32]") for f in fs if f == "vdso"]
    elf32 = bool(kept) and open(kept[0], "rb").read(5) == b"\x7fELF\x01"
    starts = [user(fr) for h, fr in d if user(fr) and user(fr)[0][2] == "([vdso32])"]
    # (a sample of the start-up or the exit, a syscall outside main, goes
    # through the vDSO to _start, the outermost frame)
    through = sum(1 for u in starts if any(f[1].startswith("main+") for f in u) or u[-1][1].startswith("_start+"))
    pv = sum(1 for h, fr in p if any(f[2] == "([vdso32])" for f in fr))
    if elf32 and len(p) == len(d) and len(starts) >= 20 and through >= 0.99 * len(starts):
        print("ok d_vd32: the i386 vDSO image kept (%s); %d/%d samples that start in [vdso32] unwound through it to "
              "main or _start; perf 7.2 reads all %d samples (%d with a [vdso32] frame)" %
              (kept[0][len(out) + 1:], through, len(starts), len(p), pv))
    else:
        print("bad d_vd32: image kept: %s (ELF32: %s); %d/%d samples from [vdso32] reach main or _start; perf %d samples, "
              "dstack %d" % (kept[:1], elf32, through, len(starts), len(p), len(d)))


vdso_in_guest()


def dstack_record():
    """dstack record --call-graph dwarf in the guest: perf 7.2 reads the file
    and unwinds it as dstack does."""
    p, d = scripts("d_c")
    if p is None:
        return
    same = sum(1 for a, b in zip(p, d) if key(a) == key(b))
    deep = sum(len(user(b[1])) for b in d)
    if len(p) == len(d) and same == len(p) and len(p) >= 20 and deep > len(p):
        print("ok d_c: dstack record --call-graph dwarf: perf 7.2 reads its %d samples; every stack equal" % len(p))
    else:
        print("bad d_c: dstack's dwarf recording: %d/%d samples equal to perf 7.2's reading (dstack %d)" %
              (same, len(p), len(d)))


def stat_of(name):
    rc, st, err = run([dstack, "stat", "--symfs", symfs, "--kallsyms", ks, "-i", out + "/" + name + ".data"])
    vals = {}
    for line in st.split("\n"):
        f = line.split()
        if len(f) >= 2 and f[1].isdigit():
            vals[f[0]] = int(f[1])
    return rc, vals


def exec_samples(name):
    """Samples of @name whose kernel callchain runs through an execve's image load."""
    rc, txt, err = run([dstack, "script", "--symfs", symfs, "--kallsyms", ks, "-i", out + "/" + name + ".data"])
    return sum(1 for b in txt.split("\n\n") if " load_elf_binary+" in b or " bprm_execve+" in b)


def orphan_samples(name):
    """Samples of threads the recording never introduced (no FORK, COMM or MMAP: lost)."""
    rc, txt, err = run([dstack, "dump", "-i", out + "/" + name + ".data"])
    known, per_tid = set(), collections.Counter()
    for line in txt.split("\n"):
        m = re.search(r"PERF_RECORD_(FORK|COMM|MMAP2?) .*?(\d+)/(\d+)|PERF_RECORD_FORK \((\d+):(\d+)\)", line)
        if m:
            known.add(m.group(3) or m.group(5))
            continue
        m = re.search(r"PERF_RECORD_SAMPLE .* tid (\d+) ", line)
        if m:
            per_tid[m.group(1)] += 1
    return sum(n for tid, n in per_tid.items() if tid not in known) if "PERF_RECORD_LOST" in txt else 0


def hybrid():
    """fp,defer with a stack snapshot, unprivileged: the samples whose
    deferred record is lost (children exiting in the kernel) are unwound
    from their snapshot.  Prints the measurement: stacks recovered, bytes
    per sample, recorder CPU ticks over the workload's own."""
    try:
        lines = open(out + "/hybrid").read().split("\n")
    except OSError:
        print("bad hybrid: the guest job wrote no /out/hybrid")
        return
    ticks = {}
    for line in lines:
        f = line.split()
        if len(f) >= 5:
            ticks[f[0]] = (int(f[2]), int(f[4]))
    base = ticks.get("h_none", (1, 0))[1]
    rows = []
    for name in ("h_defer", "h_snap512", "h_snap2048", "h_dwarf"):
        if name not in ticks or ticks[name][0] != 0:
            print("bad hybrid: %s failed in the guest: %s" % (name, open(out + "/" + name + ".log").read()[-300:]
                                                             if name in ticks else "not run"))
            return
        rc, v = stat_of(name)
        if rc:
            print("bad hybrid: dstack stat %s exit %d" % (name, rc))
            return
        size = os.path.getsize(out + "/" + name + ".data")
        rows.append((name, v, size, ticks[name][1] - base))
    for name, v, size, t in rows:
        n = v.get("samples", 0)
        print("  %-11s samples %5d  unresolved %4d  unwound %4d (to the outermost frame %4d)  "
              "%6.0f bytes/sample  recorder+%d ticks" %
              (name, n, v.get("unresolved", 0), v.get("unwind.samples", 0), v.get("unwind.end.outermost", 0),
               size / max(n, 1), t))
    d = rows[0][1]
    ok_, why = True, []
    for name, v, size, t in rows[1:3]:
        # samples with no user stack left to unwind: a thread whose FORK the
        # kernel lost (a LOST record: the recorder fell behind) has no maps;
        # a sample taken inside an execve, past its point of no return, has
        # only the old image's stack, whose maps are gone
        # (their walks end anywhere: perf's walk, which dstack's follows,
        # goes on by the frame pointer from an address in no map)
        # only samples that did not reach the outermost frame are excused
        short = max(v.get("unresolved", 0) - v.get("unwind.end.outermost", 0), 0)
        orphans = min(orphan_samples(name), short)
        execs = min(exec_samples(name), short - orphans)
        if orphans:
            print("  %-11s %d unresolved samples are of threads whose FORK was lost (%d events lost)" %
                  (name, orphans, v.get("lost.events", 0)))
        if execs:
            print("  %-11s %d unresolved samples were taken inside an execve (no user stack to unwind)" % (name, execs))
        # a run that lost records (the recorder fell behind) lost deferred
        # records of samples anywhere in their stacks, not only at an exit:
        # those deeper than the snapshot end where the copy ends (left-stack)
        deep = min(v.get("unwind.end.left-stack", 0), short - orphans - execs) if v.get("lost.events", 0) else 0
        if deep:
            print("  %-11s %d unresolved samples of a run that lost %d events ended where their %s-byte snapshot "
                  "ends (left-stack)" % (name, deep, v.get("lost.events", 0), name[len("h_snap"):]))
        gone = orphans + execs + deep
        want = v.get("unresolved", 0) - gone
        if want > 0 and v.get("unwind.end.outermost", 0) < 0.9 * want:
            ok_ = False
            why.append("%s: %d unresolved, %d lost events, unwinding ended %s" % (
                name, v.get("unresolved", 0), v.get("lost.events", 0),
                ", ".join("%s %d" % (k[len("unwind.end."):], n) for k, n in sorted(v.items())
                          if k.startswith("unwind.end.") and n)))
    lost = sum(r[1].get("unresolved", 0) for r in rows[1:3])
    if not d.get("unresolved", 0) and not lost:
        print("SKIPPED hybrid: *** no deferred record was lost this run (no child exited inside the kernel while "
              "sampled): the fallback went unexercised ***")
    elif ok_:
        print("ok hybrid: fp,defer alone left %d samples with a bare cookie; with a snapshot every run unwound "
              ">= 90%% of its unresolved samples to the outermost frame (but those with no user stack left, and "
              "those deeper than the snapshot in a run that lost records)" % d.get("unresolved", 0))
    else:
        print("bad hybrid: the snapshot runs did not recover their unresolved samples (%s)" % "; ".join(why))


dstack_record()
vdso32()
hybrid()


def inject(name):
    """inject --merge: the unwound chains as classic callchains, the stack
    copies dropped.  perf 7.2 must print the same stacks from the small file
    as it unwinds from the dwarf-mode one, and perf 6.1 must read it."""
    src = out + "/" + name + ".data"
    dst = out + "/" + name + ".injected.data"
    rc, o, err = run([dstack, "inject", "--merge", "--symfs", symfs, "-i", src, "-o", dst])
    if rc:
        print("bad inject %s: exit %d: %s" % (name, rc, err.strip()[-200:]))
        return
    p, d = scripts(name)
    rc1, pi, err1 = run([perf7, "script", "--no-inline", "--kallsyms", "/host" + ks, "-i", "/host" + dst,
                         "--symfs", "/host" + symfs])
    if p is None or rc1:
        print("bad inject %s: perf 7.2 cannot read the result: %s" % (name, err1.strip()[-200:]))
        return
    pi = samples(pi)
    same = sum(1 for a, b in zip(p, pi) if key(a) == key(b))
    old = ""
    if os.path.exists("/usr/bin/perf"):
        rc2, p61, err2 = run(["/usr/bin/perf", "script", "--no-inline", "--kallsyms", ks, "-i", dst, "--symfs", symfs])
        n61 = [len(f) for h, f in samples(p61)]
        if rc2 or n61 != [len(f) for h, f in pi]:
            print("bad inject %s: perf 6.1: exit %d, %d samples" % (name, rc2, len(n61)))
            return
        old = ", and perf 6.1 reads every frame of it"
    a, b = os.path.getsize(src), os.path.getsize(dst)
    if len(p) == len(pi) and same == len(p):
        print("ok inject %s: %d -> %d bytes (%.0fx smaller); perf 7.2 prints the same %d stacks from it as it "
              "unwinds from the dwarf-mode file%s" % (name, a, b, a / b, len(p), old))
    else:
        print("bad inject %s: %d/%d samples equal" % (name, same, len(p)))


inject("c")
inject("cxx")
