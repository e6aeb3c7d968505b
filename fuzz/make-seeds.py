#!/usr/bin/env python3
"""Seed corpora for the fuzz targets, from the unpacked test corpus.
usage: make-seeds.py TESTDATA_DIR SEEDS_DIR
Recordings are cut to their first 64 KiB (plus two small ones whole) so the
fuzzers stay fast; a cut file is a useful seed in itself (truncation)."""
import os, struct, sys

src, dst = sys.argv[1], sys.argv[2]
data = os.path.join(src, 'data')
CUT = 64 * 1024

def put(target, name, blob):
    d = os.path.join(dst, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), 'wb') as f:
        f.write(blob)

def records(buf, off):
    """(offset, type, bytes) of each record from @off while they frame."""
    while off + 8 <= len(buf):
        typ, misc, size = struct.unpack_from('<IHH', buf, off)
        if size < 8 or off + size > len(buf):
            break
        yield off, typ, buf[off:off + size]
        off += size

for f in sorted(os.listdir(data)):
    if not f.endswith('.data'):
        continue
    blob = open(os.path.join(data, f), 'rb').read()
    name = f[:-5]
    put('script', name + '.cut', blob[:CUT])
    if len(blob) <= 200 * 1024:
        put('script', name, blob)
    # the export target: the last byte picks the model, folded, flame graph, (3: folded text), pprof, speedscope, diff
    for pick in (0, 1, 2, 4, 5, 6):
        put('export', '%s.cut.%d' % (name, pick), blob[:CUT] + bytes([pick]))
    # the report target: the last two bytes pick the options (sort keys, --children, -g, filters, --stats)
    for opt in (b'\x00\x00', b'\x00\x11', b'\x09\x32', b'\x81\x45', b'\x00\xf4', b'\xc0\xc3', b'\x26\x07'):
        put('report', '%s.cut.%s' % (name, opt.hex()), blob[:CUT] + opt)
    # the cli target: the last byte picks the command (5 of them)
    for pick in range(5):
        put('cli', '%s.cut.%d' % (name, pick), blob[:CUT] + bytes([pick]))
    if struct.unpack_from('<Q', blob, 8)[0] == 16:   # pipe mode
        recs = list(records(blob, 16))
        put('pipe', name, blob[16:CUT])
        # zstd target: plain header records as the prefix, the rest compressed here
        head = b''.join(r for _, t, r in recs if t >= 64 and t != 68)
        body = b''.join(r for _, t, r in recs if t < 64)[:CUT]
        for mode, chunk in ((1, 255), (3, 15), (1, 0)):
            put('zstd', '%s.m%d.c%d' % (name, mode, chunk),
                bytes([mode, chunk]) + struct.pack('<H', len(head)) + head + body)
        # and a raw zstd stream (mode 0): the decoder's own input
        import subprocess
        z = subprocess.run(['zstd', '-q', '-c', '-1'], input=body, stdout=subprocess.PIPE, check=True).stdout
        put('zstd', name + '.m0.c63', bytes([0, 63]) + struct.pack('<H', len(head)) + head + z)

# a recording with branch stacks (tests/reshape.py): report's branch view
# (cli pick 5, report --children) and the branch stack parser
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'tests'))
import reshape  # noqa: E402
r = reshape.branch_stack(open(os.path.join(data, 'cpu.defer.data'), 'rb').read())
if r:
    put('cli', 'cpu.branches.5', bytes(r[0][:4 * CUT]) + bytes([5]))
    put('script', 'cpu.branches', bytes(r[0][:4 * CUT]))

symfs = os.path.join(src, 'symfs-root', 'symfs')
for root, _, files in os.walk(symfs):
    for f in files:
        p = os.path.join(root, f)
        if os.path.getsize(p) <= 300 * 1024:
            put('elf', f, open(p, 'rb').read())

# kallsyms: a cut of the real one (sorted), the same lines shuffled, odd
# lines (0x prefix, modules, short addresses, tabs), and a JIT perf map
ks = open(os.path.join(src, 'kallsyms'), 'rb').read()[:CUT]
ks = ks[:ks.rfind(b'\n') + 1]
put('kallsyms', 'head', ks)
lines = ks.split(b'\n')[:400]
put('kallsyms', 'reversed', b'\n'.join(reversed(lines)))
put('kallsyms', 'odd', b'0xffffffff81000000 T _text\nffffffff81000010 t a\t[mod]\n1 W w\n'
    b'ffffffff81000020  T  spaced\nffffffff81000020 T same_addr\nffffffff81000030 D $x\n'
    b'ffffffffc0000000 t m\t[module]\nzzzz T bad\nffffffff81000040 T last')
# the samples of a cache file (fuzz_cache): four, at line starts of its
# sorted kallsyms ("%016llx T s%d\n": 22 bytes a line for i < 10), the last past the window
put('kallsyms', 'cache', b''.join(struct.pack('<QQ', 0xffffffff81000000 + 64 * i, o)
                                  for i, o in ((0, 0), (1, 22), (2, 44), (63, 22 * 10 + 23 * 53))))
put('kallsyms', 'perfmap', b'7f0000001000 40 jit_one\n7f0000001040 0 jit_zero\n0x7f0000002000 10 hex\n'
    b'garbage line\n7f0000003000 20 name with spaces\n')

# tracepoint: event format files as the kernel writes them, and a
# tracing-data blob (magic, version, header sections, one system) around them
SCHED_SWITCH = 'name: sched_switch\nID: 372\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n\tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;\n\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;\n\tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;\n\tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;\n\tfield:int next_prio;\toffset:60;\tsize:4;\tsigned:1;\n\nprint fmt: "prev_comm=%s prev_pid=%d prev_prio=%d prev_state=%s%s ==> next_comm=%s next_pid=%d next_prio=%d", REC->prev_comm, REC->prev_pid, REC->prev_prio, (REC->prev_state & ((((0x00000000 | 0x00000001 | 0x00000002 | 0x00000004 | 0x00000008 | 0x00000010 | 0x00000020 | 0x00000040) + 1) << 1) - 1)) ? __print_flags(REC->prev_state & ((((0x00000000 | 0x00000001 | 0x00000002 | 0x00000004 | 0x00000008 | 0x00000010 | 0x00000020 | 0x00000040) + 1) << 1) - 1), "|", { 0x00000001, "S" }, { 0x00000002, "D" }, { 0x00000004, "T" }, { 0x00000008, "t" }, { 0x00000010, "X" }, { 0x00000020, "Z" }, { 0x00000040, "P" }, { 0x00000080, "I" }) : "R", REC->prev_state & (((0x00000000 | 0x00000001 | 0x00000002 | 0x00000004 | 0x00000008 | 0x00000010 | 0x00000020 | 0x00000040) + 1) << 1) ? "+" : "", REC->next_comm, REC->next_pid, REC->next_prio\n'
BLOCK_RQ_ISSUE = 'name: block_rq_issue\nID: 2104\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\tfield:dev_t dev;\toffset:8;\tsize:4;\tsigned:0;\n\tfield:sector_t sector;\toffset:16;\tsize:8;\tsigned:0;\n\tfield:unsigned int nr_sector;\toffset:24;\tsize:4;\tsigned:0;\n\tfield:unsigned int bytes;\toffset:28;\tsize:4;\tsigned:0;\n\tfield:unsigned short ioprio;\toffset:32;\tsize:2;\tsigned:0;\n\tfield:char rwbs[10];\toffset:34;\tsize:10;\tsigned:0;\n\tfield:char comm[16];\toffset:44;\tsize:16;\tsigned:0;\n\tfield:__data_loc char[] cmd;\toffset:60;\tsize:4;\tsigned:0;\n\nprint fmt: "%d,%d %s %u (%s) %llu + %u %s,%u,%u [%s]", ((unsigned int) ((REC->dev) >> 20)), ((unsigned int) ((REC->dev) & ((1U << 20) - 1))), REC->rwbs, REC->bytes, __get_str(cmd), (unsigned long long)REC->sector, REC->nr_sector, __print_symbolic((((REC->ioprio) >> 13) & (8 - 1)), { IOPRIO_CLASS_NONE, "none" }, { IOPRIO_CLASS_RT, "rt" }, { IOPRIO_CLASS_BE, "be" }, { IOPRIO_CLASS_IDLE, "idle" }, { IOPRIO_CLASS_INVALID, "invalid"}), (((REC->ioprio) >> 3) & ((1 << 10) - 1)), ((REC->ioprio) & ((1 << 3) - 1)), REC->comm\n'
TIMER_START = 'name: timer_start\nID: 466\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\tfield:void * timer;\toffset:8;\tsize:8;\tsigned:0;\n\tfield:void * function;\toffset:16;\tsize:8;\tsigned:0;\n\tfield:unsigned long expires;\toffset:24;\tsize:8;\tsigned:0;\n\tfield:unsigned long bucket_expiry;\toffset:32;\tsize:8;\tsigned:0;\n\tfield:unsigned long now;\toffset:40;\tsize:8;\tsigned:0;\n\tfield:unsigned int flags;\toffset:48;\tsize:4;\tsigned:0;\n\nprint fmt: "timer=%p function=%ps expires=%lu [timeout=%ld] bucket_expiry=%lu cpu=%u idx=%u flags=%s", REC->timer, REC->function, REC->expires, (long)REC->expires - REC->now, REC->bucket_expiry, REC->flags & 0x0003FFFF, REC->flags >> 22, __print_flags(REC->flags & (0x00040000 | 0x00080000 | 0x00100000 | 0x00200000), "|", { 0x00040000, "M" }, { 0x00080000, "D" }, { 0x00100000, "P" }, { 0x00200000, "I" })\n'
put('tracepoint', 'sched_switch', SCHED_SWITCH.encode())
put('tracepoint', 'block_rq_issue', BLOCK_RQ_ISSUE.encode())
put('tracepoint', 'timer_start', TIMER_START.encode())
def tracing_blob(system, formats):
    b = b'\x17\x08\x44tracing0.6\x00' + bytes([0, 8]) + struct.pack('<I', 4096)
    for name in (b'header_page', b'header_event'):
        b += name + b'\x00' + struct.pack('<Q', 0)
    b += struct.pack('<I', 0) + struct.pack('<I', 1) + system + b'\x00' + struct.pack('<I', len(formats))
    for f in formats:
        b += struct.pack('<Q', len(f)) + f
    printk = b'ffffffff8281a424 : "Start context switch"\n'
    return b + struct.pack('<I', 0) + struct.pack('<I', len(printk)) + printk
put('tracepoint', 'blob', tracing_blob(b'sched', [SCHED_SWITCH.encode().replace(b'ID: ', b'ID: 1'),
                                                   TIMER_START.encode()]))
# unwind: the real SFrame sections of tests/unit/data; for the walker, small
# corpus binaries with registers pointing into their text and a stack of
# return-address-like words
import glob
here = os.path.dirname(os.path.abspath(__file__))
for p in sorted(glob.glob(os.path.join(here, '..', 'tests', 'unit', 'data', 'sframe-v*.bin'))):
    put('sframe', os.path.basename(p), open(p, 'rb').read())
for root, _, files in os.walk(symfs):
    for f in files:
        p = os.path.join(root, f)
        if os.path.getsize(p) <= 300 * 1024:
            elf = open(p, 'rb').read()
            stack = b''.join(struct.pack('<Q', 0x401000 + 37 * i) for i in range(64))
            regs = struct.pack('<QQQQ', 0x401130, 0x7ffc0000, 0x7ffc0040, 0)
            put('unwind', f, struct.pack('<I', len(elf)) + elf + b'\0' + regs + stack)

# demangle: Rust v0 (paths, impls, closures, generics, back references), legacy, C++
for i, name in enumerate([
        b'_RNvXs_Cs6GmmlP4bgsG_1rNtB4_1ANtB4_4Work4work',
        b'_RNCNvNtNtNtCsjrHSEGnQ3l9_3std3sys3env4unix6getenv0B9_',
        b'_RINvNtCsgEmfK2I1SDS_4core3ptr13drop_in_placeINtNtB4_6result6ResultINtNtNtNtCsjrHSEGnQ3l9_3std4sync'
        b'6poison5mutex10MutexGuarduEINtB17_11PoisonErrorB12_EEEB1b_',
        b'_RINvNtNtCsjrHSEGnQ3l9_3std3sys9backtrace28___rust_begin_short_backtraceFEuuECs6GmmlP4bgsG_1r',
        b'_RNvMNtCs1_1aINtB2_1SAhj4_KcE1f', b'_RNvYDNtCs1_1a1TpNtB4_1UuEL_NtB4_1V1f',
        b'_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17ha86af84d9cc65291E.llvm.1352',
        b'_ZN4shop6BasketIdE4fillEi']):
    put('demangle', 'name%d' % i, name)

# jitdump: a header, then (as CPython's -X perf_jit writes them) unwinding
# info before each code load, a debug-info record, a move and a close, in
# both byte orders; and a cut one
def jitdump(e):
    def rec(rid, ts, body):
        return struct.pack(e + 'IIQ', rid, 16 + len(body), ts) + body
    # a CIE and an FDE for push %rbp; mov %rsp,%rbp; ... (x86_64), then a 20-byte .eh_frame_hdr
    eh = bytes.fromhex('1400000000000000017a5200017810011b0c070890010000'
                       '1c0000001c000000d0ffffff0c00000000440e108602430d06430c070800000000')
    hdr = b'\x01\x1b\x03\x3b' + struct.pack(e + 'iIii', -60, 1, -72, -32)
    unw = struct.pack(e + 'QQQ', len(eh) + len(hdr), len(hdr), len(eh) + len(hdr)) + eh + hdr
    code = bytes([0x55, 0x48, 0x89, 0xe5, 0xff, 0xd1, 0x5d, 0xc3, 0x90, 0x90, 0x90, 0x90])
    out = struct.pack(e + 'IIIIIIQQ', 0x4A695444, 1, 40, 62, 0, 4242, 123, 0)
    for i in range(3):
        addr = 0x7f0000001000 + 0x20 * i
        out += rec(4, 1000 + 10 * i, unw)
        if i == 2:   # the last load takes a debug-info record (its lines: srcline)
            out += rec(2, 1020, struct.pack(e + 'QQ', addr, 3) + struct.pack(e + 'Qii', addr, 3, 0) + b'/x.py\0'
                       + struct.pack(e + 'Qii', addr + 4, 4, 0) + b'\xff\0'
                       + struct.pack(e + 'Qii', addr + 8, 2, 0) + b'node:internal/y\0')
        out += rec(0, 1001 + 10 * i, struct.pack(e + 'IIQQQQ', 4242, 4242, addr, addr, len(code), i)
                   + b'py::f%d:/x.py\0' % i + code)
    dbg = struct.pack(e + 'QQ', 0x7f0000001000, 2) + struct.pack(e + 'Qii', 0x7f0000001000, 3, 0) + b'/x.py\0' \
        + struct.pack(e + 'Qii', 0x7f0000001004, 4, 0) + b'\xff\0'
    out += rec(2, 1040, dbg)
    out += rec(1, 1050, struct.pack(e + 'IIQQQQQ', 4242, 4242, 0, 0x7f0000001000, 0x7f0000009000, len(code), 0))
    out += rec(3, 1060, b'')
    return out
put('jitdump', 'cpython-le', jitdump('<'))
put('jitdump', 'cpython-be', jitdump('>'))
put('jitdump', 'cut', jitdump('<')[:150])
