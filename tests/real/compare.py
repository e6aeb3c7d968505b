#!/usr/bin/env python3
"""tests/suites/90-real.sh: one recording's stacks, dstack's against perf 7.2's,
sample for sample.

  compare.py LABEL PERF_SCRIPT DSTACK_SCRIPT MMAPS [ROOT] [NOMERGE]

PERF_SCRIPT and DSTACK_SCRIPT: `script -F +dsoff` of the same file by perf
7.2 and by dstack (--no-inline both, or neither).  MMAPS: dstack's
`script --show-mmap-events --show-task-events` lines of that file (the
maps, to read a frame's code from its file; the forks that give a child its
parent's, the execs that end them; paths under ROOT when given: the guest's
binaries).
NOMERGE: dstack's --no-merge-callchains script of a deferred recording.

Each sample is one of:
  equal      the same frames: addresses, symbols (with offsets) and objects
  deeper     perf's frames are a prefix of dstack's (perf stopped, dstack
             walked on); every frame dstack adds is checked: it lies in an
             executable mapping, and where its code is in a file, the bytes
             before its address are a call instruction (a return address:
             what a CFI or frame-pointer step yields, not a value the walk
             made up), or it is the first instruction of one of V8's
             builtins (its deoptimizer makes a frame whose return address
             is its continuation's start, Builtins_InterpreterEnterAtBytecode,
             which no call precedes), or a signal trampoline's (a handler's
             return address: glibc's __restore_rt, the code of rt_sigreturn;
             the frame after it, the code the signal interrupted, is any
             instruction of mapped code, as the leaf is);
             a JIT frame (a perf map's or anonymous code) must be
             named by the map.  A frame failing that makes the sample
             "deeper-bad", which fails.  "deeper-stitched": a deferred
             sample perf left with its bare cookie whose record came before
             it (the documented difference: dstack stitches it, perf 7.2
             does not), dstack's user frames the record's own.
  vdso       the same addresses; perf names a vDSO frame [unknown] (perf 7.2
             reading with --symfs finds no image of the recording machine's
             vDSO) or from its own machine's vDSO (/tmp/perf-vdso.so-XXXXXX,
             another kernel's image), dstack names it as the recording
             kernel's image's symbol table does ($REAL_VDSO_DIR: the
             build-id cache dstack record kept it in)
  perf-unmapped  diverging where perf's frame is an address in no mapping
             of the process ([unknown] object, e.g. fffffffffffffffb: a value
             perf's walk made up) and each of dstack's frames from there
             passes the deeper check; or shorter where every frame perf
             has beyond dstack's is such an address
  perf-nosym the same addresses; perf printed [unknown] for a frame in an
             object it names elsewhere in the same output and says it
             failed to load (PERF_SCRIPT.err, perf script -v: "Failed to
             open OBJ, continuing without symbols"), and dstack's
             name SYM+0xOFF is a FUNC symbol of that object's symbol table
             that starts OFF bytes before the frame's address and covers it.
             perf 7.2's first symbol load of such an object fails, the
             lookup that asked gets [unknown], later ones names (rustc 1.95's
             146 MB librustc_driver: perf script and perf report of one file
             leave different samples unnamed); or perf printed its
             placeholder offset_0xOFF@plt for a .plt.got entry that jumps
             through the GOT slot of dstack's NAME@plt (.rela.dyn): perf
             looks the slot up by its file offset among the relocations'
             addresses, which fails in a non-PIE binary (cc1plus)
  alias      KNOWN, not matched yet: the same addresses; where names
             differ, perf's and dstack's are two FUNC symbols starting at
             the same address (identical code folded, rustc's
             Arc<..>::drop_slow instances), at the same offset: perf's
             choice among aliases is not dstack's there.  Counted, listed
             by the suite, not failed
  perf-pageoff  diverging at frame i where frame i-1 (the frame whose
             unwind rules give frame i) lies in an executable segment not at
             its file offset (PT_LOAD p_vaddr != p_offset: lld puts text a
             page past it, rustc, rust-lld): perf's libdw module is a page off
             there, looks up another function's CFI and reads a wrong slot
             (docs/unwinding.md); each of dstack's frames from i passes the
             deeper check
  perf-plt   diverging at frame i where frame i-1 lies in a PLT section
             that no FDE of its object's .eh_frame_hdr covers (lld, mold):
             perf's libdw walk takes the frame pointer there and skips the
             stub's caller, dstack's rule is the stub's own code (the
             return address at the stack pointer, a word deeper for each
             push the stub ran: docs/unwinding.md); each of dstack's frames
             from i passes the deeper check
  fp-tail    perf printed no user frame (its libdw walks of a task print
             nothing after one failed: docs/unwinding.md); dstack's frames
             pass the deeper check up to a frame in code no CFI covers
             (no FDE in its .eh_frame_hdr, no .debug_frame: hand-written
             assembly such as BLAKE3's AVX-512 code in libLLVM), and every
             frame after it is in no mapping: the frame-pointer chain's
             values, which dstack reports as perf's libdw fallback does
             where perf's walk runs (a 0 as ffffffffffffffff).  Counted,
             not failed
  names      the same addresses, another symbol or object name somewhere
  shorter    dstack's frames are a prefix of perf's
  diverging  the first differing frame has another address
Prints one line "LABEL N equal deeper ... " (counts), then up to 3 examples
of each failing class; exit 1 if any sample is names/shorter/diverging/
deeper-bad or the two outputs hold other samples.
"""
import bisect
import os
import re
import subprocess
import sys
from collections import Counter

HEAD = re.compile(r'^(\S.*?)\s+(\d+)(?:/(\d+))?\s+(?:\[\d+\]\s+)?(\d+\.\d+):')
FRAME = re.compile(r'^\s+([0-9a-f]+) (.*) \((.*?)\)$')
DSOFF = re.compile(r'^(.*)\+0x([0-9a-f]+)$')
EXEC = re.compile(r'PERF_RECORD_COMM exec: .*:(\d+)/\d+$')
INF = float('inf')
LINE_TIME = re.compile(r'\s(\d+\.\d+): PERF_RECORD_')
FORK = re.compile(r'PERF_RECORD_FORK\((\d+):\d+\):\((\d+):\d+\)')
MMAP = re.compile(r' (\d+)/(\d+): \[0x([0-9a-f]+)\((0x[0-9a-f]+)\) @ (0x[0-9a-f]+|0)[^\]]*\]: (\S+) (.*)$')


def read(path):
    with open(path, errors='replace') as f:
        return f.read()


def samples(text):
    """[(head, tid, time, [(addr, sym, dso, off)])]: sym as printed, dso
    without the +0xOFF of dsoff, off that offset (None for inlined and
    unknown objects)"""
    res = []
    for block in text.split('\n\n'):
        lines = [l for l in block.split('\n') if l.strip()]
        if not lines:
            continue
        m = HEAD.match(lines[0])
        if not m or 'PERF_RECORD_' in lines[0]:
            continue
        tid = m.group(3) or m.group(2)
        frames = []
        for l in lines[1:]:
            f = FRAME.match(l)
            if not f:
                frames.append((None, l.strip(), '', None))
                continue
            dso, off = f.group(3), None
            d = DSOFF.match(dso)
            if d and not dso.startswith('['):
                dso, off = d.group(1), int(d.group(2), 16)
            frames.append((int(f.group(1), 16), f.group(2), dso, off))
        res.append((lines[0].split(':')[0].strip(), tid, m.group(4), lines[0], frames))
    return res


class Maps:
    """each pid's executable mappings from the MMAP/MMAP2 lines, each with
    the time it holds from and to: a FORK line of a new process gives the
    child what its parent has mapped then (a forked child runs in them until
    it execs, and no MMAP of its own says so), an exec's COMM line ends the
    process's.  find() looks at the mappings of time `at` when it is set
    (the sample being checked), at every one the process had otherwise."""

    def __init__(self, text, root):
        self.by_pid = {}
        self.root = root
        self.files = {}
        self.at = None
        for line in text.split('\n'):
            t = LINE_TIME.search(line)
            t = float(t.group(1)) if t else 0.0
            f = FORK.search(line)
            if f:
                child, parent = int(f.group(1)), int(f.group(2))
                if child != parent:
                    self.by_pid.setdefault(child, []).extend(
                        (s, e, pg, path, t, INF) for s, e, pg, path, _, end in self.by_pid.get(parent, []) if end == INF)
                continue
            e = EXEC.search(line)
            if e:
                pid = int(e.group(1))
                self.by_pid[pid] = [m[:5] + (min(m[5], t),) for m in self.by_pid.get(pid, [])]
                continue
            m = MMAP.search(line)
            if not m:
                continue
            pid, start, size = int(m.group(1)), int(m.group(3), 16), int(m.group(4), 16)
            pgoff, prot, path = int(m.group(5), 16), m.group(6), m.group(7).strip()
            if 'x' not in prot and 'PERF_RECORD_MMAP ' not in line:
                continue
            self.by_pid.setdefault(pid, []).append((start, start + size, pgoff, path, t, INF))
        for v in self.by_pid.values():
            v.sort()

    def find(self, pid, addr):
        v = self.by_pid.get(pid, [])
        i = bisect.bisect_right(v, (addr, INF)) - 1
        # the mapping that holds addr, of the latest start (a later mmap
        # inside an older one)
        best = None
        for s, e, pg, path, t0, t1 in v[max(0, i - 64):i + 1]:
            if s <= addr < e and (self.at is None or t0 <= self.at < t1):
                best = (s, e, pg, path)
        return best

    def code_before(self, path, off, n=8):
        """the n bytes of path's file before offset off (None: not readable)"""
        full = (self.root or '') + path
        if full not in self.files:
            try:
                self.files[full] = open(full, 'rb')
            except OSError:
                self.files[full] = None
        f = self.files[full]
        if f is None or off < n:
            return None
        f.seek(off - n)
        b = f.read(n)
        return b if len(b) == n else None


def modrm_len(modrm, sib):
    """length of an instruction of opcode byte, ModRM (and SIB), no immediate"""
    mod, rm = modrm >> 6, modrm & 7
    n = 2
    if mod == 3:
        return n
    if rm == 4:
        n += 1
        if mod == 0 and (sib & 7) == 5:
            n += 4
    elif mod == 0 and rm == 5:
        n += 4
    return n + (1 if mod == 1 else 4 if mod == 2 else 0)


def after_call(b):
    """Do the bytes b end with a call instruction (e8 rel32, or ff /2 with
    any ModRM form, x86_64 and i386)?"""
    if b[-5] == 0xe8:
        return True
    for k in range(2, 8):
        if b[-k] == 0xff and (b[-k + 1] >> 3) & 7 == 2:
            sib = b[-k + 2] if k > 2 else 0
            if modrm_len(b[-k + 1], sib) == k:
                return True
    return False


def check_extra(frame, pid, maps, leaf):
    """None if frame is a return address in mapped code (leaf: the
    sample's own user address, which is no return address, only mapped),
    else why not"""
    addr, sym, dso, _ = frame
    if addr is None:
        return 'a frame without an address'
    m = maps.find(pid, addr)
    if m is None:
        return '%x in no executable mapping' % addr
    start, _, pgoff, path = m
    if path.startswith('//anon') or path.startswith('[') or path.startswith('/tmp/perf-') or path == '':
        # JIT or anonymous code: no file to read; a perf map must name it
        if path.startswith('[vdso'):
            return None
        return None if not sym.startswith('[unknown]') else '%x in anonymous code no perf map names' % addr
    if path.startswith('/memfd:') or path.endswith('(deleted)'):
        return None if not sym.startswith('[unknown]') else '%x in unnamed code of %s' % (addr, path)
    if leaf:
        return None
    # perf prints a caller's frame of a dwarf-mode walk at its return
    # address - 1 (libdw's pc of a frame that is no activation), dstack too
    b = maps.code_before(path, addr - start + pgoff + RA_BIAS)
    if b is None:
        return '%x: %s unreadable' % (addr, path)
    off = addr - start + pgoff
    if not after_call(b) and not at_v8_builtin(path, off + RA_BIAS) and not at_sigreturn(maps, path, off):
        return '%x (%s %s+0x%x) follows no call instruction (%s)' % (addr, sym, path, addr - start + pgoff, b.hex())
    return None


# the signal trampolines (sa_restorer, the vDSO's): rt_sigreturn (15) or,
# i386, rt_sigreturn (173) and sigreturn (119)
SIGRETURN = (bytes.fromhex('48c7c00f0000000f05'), bytes.fromhex('b80f0000000f05'),
             bytes.fromhex('b8ad000000cd80'), bytes.fromhex('58b877000000cd80'))


def at_sigreturn(maps, path, off):
    """Is file offset off (or off + 1: the frame printed a byte before its
    return address) a signal trampoline's first instruction?  A handler's
    return address is its sa_restorer (glibc's __restore_rt), which the
    kernel wrote in the signal frame: no call precedes it, and past it the
    walk goes on in the interrupted code (the sigcontext's registers)."""
    for o in (off, off + 1):
        for pat in SIGRETURN:
            b = maps.code_before(path, o + len(pat), len(pat))
            if b is not None and b == pat:
                return True
    return False


def interrupted(frames, i, pid, maps):
    """Is frames[i] (and those inlined at its address) the code a signal
    interrupted: the frame after a signal trampoline's, from the signal
    frame's saved registers (any instruction, as a sample's own address)?"""
    j = i - 1
    while j >= 0 and frames[j][0] == frames[i][0]:
        j -= 1
    if j < 0 or frames[j][0] is None or not is_user(frames[j]):
        return False
    m = maps.find(pid, frames[j][0])
    # (an object with no file, [vdso] or //anon, reads as None: no trampoline)
    return m is not None and at_sigreturn(maps, m[3], frames[j][0] - m[0] + m[2])


def at_v8_builtin(path, off):
    """Is file offset off the first instruction of one of V8's builtins
    (a Builtins_* symbol)?  V8's deoptimizer builds an interpreter frame
    whose return address is its continuation's start
    (Builtins_InterpreterEnterAtBytecode), which no call precedes."""
    secs, _ = elf_funcs(path)
    vaddr = next((a + off - o for o, a, n in secs if o <= off < o + n), None)
    return vaddr is not None and vaddr in v8_builtins(path)


V8_BUILTINS = {}


def v8_builtins(path):
    """The addresses of path's Builtins_* symbols (readelf, cached)"""
    if path not in V8_BUILTINS:
        out = subprocess.run(['readelf', '-sW', path], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True).stdout
        V8_BUILTINS[path] = {int(f[1], 16) for f in (line.split() for line in out.split('\n'))
                             if len(f) >= 8 and f[7].startswith('Builtins_') and f[6] != 'UND'}
    return V8_BUILTINS[path]


def perf_went_wild(p, d, pid, maps):
    """perf's first differing frame is an address in no executable mapping
    of the process, in no object ([unknown]: a value perf's walk made up,
    kernel frames being [kernel.kallsyms]'s), and dstack's frames from there
    each pass check_extra"""
    n = min(len(p), len(d))
    i = next((i for i in range(n) if p[i][0] != d[i][0]), n)
    if i == 0 or i >= n:
        return False
    f = p[i]
    if f[0] is None or f[2] != '[unknown]' or maps.find(pid, f[0]) is not None:
        return False
    return check_rest(d[i:], pid, maps)


def perf_tail_wild(p, d, pid, maps):
    """every frame perf has beyond dstack's is in no object and no mapping"""
    return all(f[0] is not None and f[2] == '[unknown]' and maps.find(pid, f[0]) is None for f in p[len(d):])


def check_rest(frames, pid, maps):
    return all(check_extra(f, pid, maps, False) is None for f in frames if is_user(f))


def key(f):
    return (f[0], f[1], f[2])


def is_user(f):
    return f[0] is not None and f[0] < 0x800000000000


def deferred_records(text):
    """{(tid, cookie): [frames]} from dstack's --no-merge-callchains script"""
    recs = {}
    for head, tid, time, line, frames in samples(text):
        pass
    for block in text.split('\n\n'):
        lines = [l for l in block.split('\n') if l.strip()]
        if not lines:
            continue
        m = re.search(r'\s(\d+)\s+(?:\[\d+\]\s+)?\d+\.\d+: DEFERRED CALLCHAIN \[cookie: ([0-9a-f]+)\]', lines[0])
        if m:
            recs[(m.group(1), m.group(2))] = [FRAME.match(l).group(1) for l in lines[1:] if FRAME.match(l)]
    return recs


def vdso_symbols():
    """[(start, size, name)] of the vDSO images under $REAL_VDSO_DIR
    (a build-id cache dstack record kept them in)"""
    res = []
    base = os.environ.get('REAL_VDSO_DIR')
    images = []
    for kind in ('[vdso]', '[vdso32]', '[vdsox32]'):
        if base and os.path.isdir(base + '/' + kind):
            images += [(kind, base + '/' + kind + '/' + bid + '/vdso') for bid in os.listdir(base + '/' + kind)]
    for kind, image in images:
        out = subprocess.run(['readelf', '-sW', image], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True).stdout
        for line in out.split('\n'):
            f = line.split()
            if len(f) >= 8 and f[3] == 'FUNC':
                res.append((kind, int(f[1], 16), int(f[2]), f[7].split('@')[0]))
    return res


VDSO = None


def vdso_named_right(pf, df):
    """perf printed [unknown] for a vDSO frame (perf 7.2 with --symfs finds
    no image of the recording machine's vDSO), dstack named it: right if a
    function symbol of the vDSO image covers the frame's offset"""
    global VDSO
    # perf: no name (no image), or a name from the image of the machine
    # reading the file (its own vDSO, copied to /tmp/perf-vdso.so-XXXXXX),
    # which is not the recording kernel's
    perf_vdso = (df[2] == pf[2] and pf[1] == '[unknown]') or pf[2].startswith('/tmp/perf-vdso.so-')
    if not (df[2].startswith('[vdso') and perf_vdso):
        return False
    m = re.match(r'^(\[vdso(?:32|x32)?\])\+0x([0-9a-f]+)$', df[2])
    if m and df[1] == '[unknown]' and pf[2].startswith('/tmp/perf-vdso.so-'):
        # dstack has no image of the recording kernel's vDSO for this
        # recording (docs/unwinding.md) and says so; perf's name, if any,
        # is from another kernel's image
        return True
    n = re.match(r'^(.*)\+0x([0-9a-f]+)$', df[1])
    if not m or not n:
        return False
    if VDSO is None:
        VDSO = vdso_symbols()
    kind, off = m.group(1), int(m.group(2), 16)
    return any(k == kind and s <= off < s + z and name == n.group(1) and off - s == int(n.group(2), 16)
               for k, s, z, name in VDSO)


ELF_FUNCS = {}


def elf_funcs(path):
    """(sections [(sh_offset, sh_addr, size)], {st_value: [st_size]}) of
    path's FUNC symbols (.symtab and .dynsym; readelf, cached per file)"""
    if path not in ELF_FUNCS:
        secs, funcs = [], {}
        out = subprocess.run(['readelf', '-SW', path], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True).stdout
        for m in re.finditer(r'\]\s+\S+\s+(PROGBITS)\s+([0-9a-f]+) ([0-9a-f]+) ([0-9a-f]+) [0-9a-f]+\s+(\S*)', out):
            if 'X' in m.group(5):
                secs.append((int(m.group(3), 16), int(m.group(2), 16), int(m.group(4), 16)))
        out = subprocess.run(['readelf', '-sW', path], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True).stdout
        for line in out.split('\n'):
            f = line.split()
            if len(f) >= 8 and f[3] in ('FUNC', 'IFUNC') and f[6] != 'UND':
                size = int(f[2], 16) if f[2].startswith('0x') else int(f[2])
                funcs.setdefault(int(f[1], 16), []).append(size)
        ELF_FUNCS[path] = (secs, funcs)
    return ELF_FUNCS[path]


def perf_left_unnamed(pf, df, root, perf_named):
    """perf printed [unknown] in an object it names elsewhere
    (perf_named), dstack SYM+0xOFF: right if a FUNC symbol of the object
    starts OFF bytes before the frame's file offset and covers it"""
    if pf[1] != '[unknown]' or df[2] != pf[2] or df[3] is None or pf[2] not in perf_named or pf[2] not in PERF_FAILED:
        return False
    n = re.match(r'^(.*)\+0x([0-9a-f]+)$', df[1])
    if not n or n.group(1) == '[unknown]' or pf[2].startswith('['):
        return False
    secs, funcs = elf_funcs((root or '') + pf[2])
    sec = next((s for s in secs if s[0] <= df[3] < s[0] + s[2]), None)
    if sec is None:
        return False
    vaddr, off = df[3] - sec[0] + sec[1], int(n.group(2), 16)
    return any(size > off for size in funcs.get(vaddr - off, []))


def other_alias(pf, df, root):
    """perf and dstack name one address by two FUNC symbols that start at
    the same address (identical code folded: rustc's Arc<..>::drop_slow
    instances), at the same offset: perf's choice among them is not
    dstack's.  Known, not matched yet (issue 35's follow-up): counted and
    listed, not failed."""
    m = re.match(r'^(.*)\+0x([0-9a-f]+)$', pf[1])
    n = re.match(r'^(.*)\+0x([0-9a-f]+)$', df[1])
    if (not m or not n or m.group(2) != n.group(2) or m.group(1) == n.group(1) or '[unknown]' in (m.group(1), n.group(1))
            or pf[2] != df[2] or df[3] is None or pf[2].startswith('[')):
        return False
    secs, funcs = elf_funcs((root or '') + pf[2])
    sec = next((x for x in secs if x[0] <= df[3] < x[0] + x[2]), None)
    return sec is not None and len(funcs.get(df[3] - sec[0] + sec[1] - int(n.group(2), 16), [])) >= 2


RELOCS = {}


def perf_plt_got_placeholder(pf, df, root):
    """perf named a .plt.got entry offset_0xOFF@plt, dstack NAME@plt: right
    if the entry at file offset OFF jumps through a GOT slot whose .rela.dyn
    relocation is NAME's.  perf looks the slot up by its file offset among
    .rela.dyn's addresses (symbol-elf.c, get_plt_got_name), which finds it
    only where the two are equal (not in a non-PIE binary)."""
    m = re.match(r'^offset_0x([0-9a-f]+)@plt(\+0x[0-9a-f]+)$', pf[1])
    n = re.match(r'^(.+)@plt(\+0x[0-9a-f]+)$', df[1])
    if not m or not n or m.group(2) != n.group(2) or pf[2] != df[2] or pf[2].startswith('['):
        return False
    path, off = (root or '') + pf[2], int(m.group(1), 16)
    try:
        with open(path, 'rb') as f:
            f.seek(off)
            code = f.read(16)
    except OSError:
        return False
    i = 4 if code[:4] == bytes.fromhex('f30f1efa') else 0
    i += 1 if code[i:i + 1] == b'\xf2' else 0
    if code[i:i + 2] != b'\xff\x25':
        return False
    secs, _ = elf_funcs(path)
    vaddr = next((a + off - o for o, a, sz in secs if o <= off < o + sz), None)
    if vaddr is None:
        return False
    slot = vaddr + i + 6 + int.from_bytes(code[i + 2:i + 6], 'little', signed=True)
    if path not in RELOCS:
        out = subprocess.run(['readelf', '-rW', path], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True).stdout
        RELOCS[path] = {int(r.group(1), 16): r.group(2).split('@')[0]
                        for r in re.finditer(r'^([0-9a-f]+)\s+[0-9a-f]+\s+R_X86_64_\w+\s+[0-9a-f]+\s+(\S+)', out, re.M)}
    return RELOCS[path].get(slot) == n.group(1)


PAGE_OFF = {}


def in_page_off_segment(f, root):
    """frame f (its file offset f[3]) is in an executable PT_LOAD of its
    object whose p_vaddr differs from p_offset"""
    if f[0] is None or f[3] is None or f[2].startswith('['):
        return False
    path = (root or '') + f[2]
    if path not in PAGE_OFF:
        out = subprocess.run(['readelf', '-lW', path], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True).stdout
        PAGE_OFF[path] = [(int(m.group(1), 16), int(m.group(3), 16))
                          for m in re.finditer(r'^\s+LOAD\s+(0x[0-9a-f]+) (0x[0-9a-f]+) 0x[0-9a-f]+ (0x[0-9a-f]+) 0x[0-9a-f]+ [ R]*E', out, re.M)
                          if int(m.group(1), 16) != int(m.group(2), 16)]
    return any(off <= f[3] < off + size for off, size in PAGE_OFF[path])


def perf_wrong_slot(p, d, pid, maps):
    """perf's walk diverged after a frame in a page-off executable segment,
    dstack's frames from there each pass check_extra"""
    n = min(len(p), len(d))
    i = next((i for i in range(n) if p[i][0] != d[i][0]), n)
    if i == 0 or i >= n or not is_user(d[i - 1]) or not in_page_off_segment(d[i - 1], maps.root):
        return False
    return check_rest(d[i:], pid, maps)


PLT_SECS = {}
PLT_NAMES = ('.plt', '.plt.sec', '.plt.got', '.plt.bnd', '.iplt')


def sections(path):
    """{name: (sh_offset, sh_addr, size)} of path's sections (readelf, cached)"""
    if path not in PLT_SECS:
        out = subprocess.run(['readelf', '-SW', path], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True).stdout
        PLT_SECS[path] = {m.group(1): (int(m.group(4), 16), int(m.group(3), 16), int(m.group(5), 16))
                          for m in re.finditer(r'\]\s+(\S+)\s+(\S+)\s+([0-9a-f]+) ([0-9a-f]+) ([0-9a-f]+) ', out)}
    return PLT_SECS[path]


def fde_covers(path, secs, vaddr):
    """Does an FDE found through path's .eh_frame_hdr cover vaddr?  None
    where the table is in a form this reader does not know (no proof either way)"""
    if '.eh_frame_hdr' not in secs:
        return False
    off, addr, size = secs['.eh_frame_hdr']
    with open(path, 'rb') as fh:
        fh.seek(off)
        hdr = fh.read(size)
        # version 1, eh_frame_ptr pcrel sdata4, fde_count udata4, table datarel sdata4
        if len(hdr) < 12 or hdr[0] != 1 or hdr[1] != 0x1b or hdr[2] != 0x03 or hdr[3] != 0x3b:
            return None
        count = int.from_bytes(hdr[8:12], 'little')
        table = [(int.from_bytes(hdr[12 + 8 * i:16 + 8 * i], 'little', signed=True) + addr,
                  int.from_bytes(hdr[16 + 8 * i:20 + 8 * i], 'little', signed=True) + addr)
                 for i in range(min(count, (len(hdr) - 12) // 8))]
        i = bisect.bisect_right([t[0] for t in table], vaddr) - 1
        if i < 0:
            return False
        start, fde = table[i]
        eh = secs.get('.eh_frame')
        if eh is None or not eh[1] <= fde < eh[1] + eh[2]:
            return None
        fh.seek(fde - eh[1] + eh[0])
        b = fh.read(16)
        # the FDE's pc_begin (pcrel sdata4, as ld and lld write it) must be the table's
        if len(b) < 16 or int.from_bytes(b[8:12], 'little', signed=True) + fde + 8 != start:
            return None
        return vaddr < start + int.from_bytes(b[12:16], 'little')


def in_plt_without_cfi(f, root):
    """frame f (its file offset f[3]) lies in a PLT section of its object
    that no FDE covers (lld's, mold's): dstack's rule there is the stub's
    own code (its pushes; the return address at the stack pointer), where
    perf's libdw walk takes the frame pointer and skips the stub's caller"""
    if f[0] is None or f[3] is None or f[2].startswith('['):
        return False
    path = (root or '') + f[2]
    secs = sections(path)
    for name in PLT_NAMES:
        if name in secs and secs[name][0] <= f[3] < secs[name][0] + secs[name][2]:
            return fde_covers(path, secs, f[3] - secs[name][0] + secs[name][1]) is False
    return False


def without_cfi(f, root):
    """frame f (file offset f[3]) lies in code of its object that no FDE
    of its .eh_frame_hdr covers, and the object has no .debug_frame"""
    if f[0] is None or f[3] is None or f[2].startswith('['):
        return False
    path = (root or '') + f[2]
    secs = sections(path)
    if '.debug_frame' in secs:
        return False
    for off, addr, size in secs.values():
        if off <= f[3] < off + size and addr:
            return fde_covers(path, secs, f[3] - off + addr) is False
    return False


def fp_tail(d, i, pid, maps):
    """dstack's frames from i are all in no mapping ([unknown] objects), and
    the frame before them is in code no CFI covers: the frame-pointer
    chain's values there, which libdw's x86_64 fallback reports as frames
    (a 0 as ffffffffffffffff) and perf prints where its walk runs"""
    if i == 0 or not is_user(d[i - 1]) or not without_cfi(d[i - 1], maps.root):
        return False
    return all(f[0] is not None and f[2] == '[unknown]' and maps.find(pid, f[0]) is None for f in d[i:])


def perf_fp_at_plt(p, d, pid, maps):
    """perf's walk diverged (or stopped) after a frame in a PLT stub no CFI
    covers, dstack's frames from there each pass check_extra"""
    n = min(len(p), len(d))
    i = next((i for i in range(n) if p[i][0] != d[i][0]), n)
    if i == 0 or i >= len(d) or not is_user(d[i - 1]) or not in_plt_without_cfi(d[i - 1], maps.root):
        return False
    return check_rest(d[i:], pid, maps)


def classify(p, d, maps, recs):
    """(class, note) of one sample: p perf's frames, d dstack's"""
    pa = [f[0] for f in p]
    da = [f[0] for f in d]
    if pa == da:
        if [key(f) for f in p] == [key(f) for f in d]:
            return 'equal', None
        diff = [i for i in range(len(p)) if key(p[i]) != key(d[i])]
        if all(vdso_named_right(p[i], d[i]) for i in diff):
            return 'vdso', None
        if all(vdso_named_right(p[i], d[i]) or perf_left_unnamed(p[i], d[i], maps.root, PERF_NAMED) or
               perf_plt_got_placeholder(p[i], d[i], maps.root) for i in diff):
            return 'perf-nosym', None
        if all(vdso_named_right(p[i], d[i]) or perf_left_unnamed(p[i], d[i], maps.root, PERF_NAMED) or
               perf_plt_got_placeholder(p[i], d[i], maps.root) or other_alias(p[i], d[i], maps.root) for i in diff):
            i = next(i for i in diff if other_alias(p[i], d[i], maps.root))
            return 'alias', 'frame %d: perf %s, dstack %s' % (i, p[i][1:3], d[i][1:3])
        i = diff[0]
        return 'names', 'frame %d: perf %s, dstack %s' % (i, p[i][1:3], d[i][1:3])
    n = min(len(pa), len(da))
    i = next((i for i in range(n) if pa[i] != da[i]), n)
    # a deferred sample perf left with its cookie: the frames before the
    # cookie equal, dstack's user frames those of the record with that cookie
    if recs is not None and p and p[-1][1].startswith('[unknown]') and p[-1][2] == '[unknown]' and i == len(p) - 1:
        return 'stitched', '%x' % p[-1][0]
    if i == len(pa):
        return 'deeper', i
    if i == len(da):
        return 'shorter', 'perf goes on at frame %d: %x %s' % (i, pa[i], p[i][1])
    return 'diverging', 'frame %d: perf %x %s (%s), dstack %x %s (%s)' % (
        i, pa[i] or 0, p[i][1], p[i][2], da[i] or 0, d[i][1], d[i][2])


RA_BIAS = 0
PERF_NAMED = set()
PERF_FAILED = set()


def main():
    global RA_BIAS
    label, perf_path, ds_path, mmaps = sys.argv[1:5]
    RA_BIAS = 1 if label.endswith('.dwarf') else 0
    root = sys.argv[5] if len(sys.argv) > 5 and sys.argv[5] else None
    recs = deferred_records(read(sys.argv[6])) if len(sys.argv) > 6 else None
    P, D = samples(read(perf_path)), samples(read(ds_path))
    maps = Maps(read(mmaps), root)
    # the objects perf says it failed to load symbols of (-v), and those it
    # named a frame of (it could read their symbols after all)
    if os.path.exists(perf_path + '.err'):
        PERF_FAILED.update(re.findall(r'^Failed to open (.*), continuing without symbols$', read(perf_path + '.err'), re.M))
    PERF_NAMED.update(f[2] for s in P for f in s[4] if f[0] is not None and not f[1].startswith('[unknown]'))
    counts = Counter()
    examples = {}
    unverified = 0
    extra_frames = 0
    if [(s[1], s[2]) for s in P] != [(s[1], s[2]) for s in D]:
        # perf 7.2 prints a deferred sample when its task's record comes,
        # dstack in time order: the same samples, paired by (tid, time, n-th)
        P, D = sorted(P, key=sample_key(P)), sorted(D, key=sample_key(D))
    if [(s[1], s[2]) for s in P] != [(s[1], s[2]) for s in D]:
        pk, dk = Counter((s[1], s[2]) for s in P), Counter((s[1], s[2]) for s in D)
        print('%s: the outputs hold other samples: perf %d, dstack %d, only perf\'s: %s, only dstack\'s: %s' % (
            label, len(P), len(D), list((pk - dk).items())[:2], list((dk - pk).items())[:2]))
        sys.exit(1)
    for ps, ds in zip(P, D):
        maps.at = float(ds[2])
        cls, note = classify(ps[4], ds[4], maps, recs)
        pid = pid_of(ds[3])
        if cls == 'deeper':
            why = None
            user = [i for i, f in enumerate(ds[4]) if is_user(f)]
            leaf_addr = ds[4][user[0]][0] if user else None
            for i, f in enumerate(ds[4][note:], note):
                extra_frames += 1
                # the leaf, and the frames inlined at its address
                leaf = user and f[0] == leaf_addr and all(g[0] == leaf_addr for g in ds[4][user[0]:i + 1])
                why = check_extra(f, pid, maps, leaf or interrupted(ds[4], i, pid, maps))
                if why:
                    break
            perf_empty = not ps[4] or not any(is_user(f) for f in ps[4])
            if why and perf_empty and fp_tail(ds[4], i, pid, maps):
                # perf printed no user frame: dstack's tail is its libdw walk's
                cls, note = 'fp-tail', None
            elif why:
                cls, note = 'deeper-bad', why
            else:
                if perf_empty:
                    counts['deeper-from-empty'] += 1
                note = None
        elif cls == 'shorter' and perf_tail_wild(ps[4], ds[4], pid, maps):
            # dstack stopped where perf went on only with made-up values
            cls, note = 'perf-unmapped', None
        elif cls == 'diverging' and perf_went_wild(ps[4], ds[4], pid, maps):
            # perf's walk produced a return address in no mapping (e.g.
            # fffffffffffffffb), dstack's frames from there are checked
            cls, note = 'perf-unmapped', None
        elif cls == 'diverging' and perf_wrong_slot(ps[4], ds[4], pid, maps):
            # perf read a wrong slot after a frame its libdw module has a
            # page off (docs/unwinding.md); dstack's frames are checked
            cls, note = 'perf-pageoff', None
        elif cls == 'diverging' and perf_fp_at_plt(ps[4], ds[4], pid, maps):
            # perf took the frame pointer at a PLT stub no CFI covers
            # (docs/unwinding.md); dstack's frames are checked
            cls, note = 'perf-plt', None
        elif cls == 'stitched':
            want = recs.get((ds[1], note))
            got = ['%x' % f[0] for f in ds[4] if is_user(f)]
            if want is None or [w.lstrip('0') or '0' for w in want] != got:
                cls, note = 'diverging', 'perf left cookie %s, dstack\'s user frames are not its record\'s (%s)' % (
                    note, 'no record' if want is None else 'record %s' % want[:3])
            else:
                note = None
        counts[cls] += 1
        if note is not None and len(examples.setdefault(cls, [])) < 3:
            examples[cls].append('%s tid %s time %s: %s\n      perf:   %s\n      dstack: %s' % (
                ds[0], ds[1], ds[2], note, frames_text(ps[4]), frames_text(ds[4])))
    fails = sum(counts[c] for c in ('names', 'shorter', 'diverging', 'deeper-bad'))
    print('%s %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d' % (label, len(P), counts['equal'], counts['deeper'],
                                                   counts['deeper-from-empty'], counts['stitched'], counts['vdso'],
                                                   counts['perf-unmapped'], counts['perf-nosym'], counts['perf-pageoff'],
                                                   counts['names'],
                                                   counts['shorter'], counts['diverging'], counts['deeper-bad'],
                                                   counts['alias'], counts['perf-plt'], counts['fp-tail']))
    for cls, ex in examples.items():
        for e in ex:
            print('  %s: %s' % (cls, e))
    sys.exit(1 if fails else 0)


def sample_key(samples_):
    """a sort key of a sample list: (tid, time, its rank among equal ones)"""
    rank, seen = {}, Counter()
    for s in samples_:
        seen[(s[1], s[2])] += 1
        rank[id(s)] = seen[(s[1], s[2])]
    return lambda s: (int(s[1]), s[2], rank[id(s)])


def pid_of(head):
    m = HEAD.match(head)
    return int(m.group(2)) if m else -1


def frames_text(frames):
    return ' | '.join('%x %s (%s)' % (f[0] or 0, f[1], f[2]) for f in frames[:14]) + (' ...' if len(frames) > 14 else '')


if __name__ == '__main__':
    main()
