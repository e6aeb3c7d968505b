#!/usr/bin/env python3
"""Real recordings reshaped into forms the kernel writes only now and then,
for tests/suites/80-conformance.sh to read with perf 7.2 and with dstack.
Every change keeps each record's size, so a file-mode recording stays whole.

usage: reshape.py bad-context IN OUT
  every 25th sample whose callchain has 3 entries or more gets the value
  0xfffffffffffffffe as its third: what a frame-pointer walk of a freed
  stack reads (a modsys recording had 126 of them after one frame); no
  kernel context has that value, and perf discards such a chain whole.
usage: reshape.py early-exit IN OUT
  the EXIT record of the process with the most samples moves to just
  before its 30th last sample of the same round: the samples after it are
  those of a thread perf script has forgotten (a system-wide recording
  has a few, taken in do_exit while the mm is still there).
usage: reshape.py pmus IN OUT
  a machine the guest cannot be: the first sampling software event becomes
  a hybrid machine's cycles on its core PMU (type HARDWARE, config
  0x400000000: the PMU's type in the upper half), and the header gets the
  PMU features of real machines (perf 6.x on Intel hybrid and AMD): the
  PMU mappings (with ibs_op), the core PMU's capabilities (max_precise=0:
  perf's AMD note) and other PMUs' (PMU_CAPS), and BPF programs with
  their BTF (named by BTF, by the program, subprograms).  The dummy tracking event
  (no CPU field) is then the only software event: perf prunes none of its
  default fields, and side-band records print a CPU of -1.
usage: reshape.py kbuildids IN OUT
  the build-id table as an older perf record wrote it after a system-wide
  profile (the binaries samples hit, the kernel's among them): the kernel
  image listed first by the path of a vmlinux perf found
  (/lib/modules/RELEASE/build/vmlinux: "[kernel.vmlinux]" in perf's
  report), then every kernel module a kernel MMAP names, by its module
  path (a "[name]" MMAP by a made-up one).  perf names the kernel's and
  the modules' objects by these paths.
usage: reshape.py branch-stack IN OUT
  the recording as if taken with -b (branch stacks, as on a machine with
  LBR, which the guest and this host lack): every event samples
  PERF_SAMPLE_BRANCH_STACK (any branch, no hw_index), and every sample
  gets a stack of up to 4 branches made of its callchain's returns
  (caller <- callee, a few cycles each); the header gets the BRANCH_STACK
  feature, which is what makes perf report show its branch view.
  Records grow, the data section and the features after it move; the
  samples stay what they were.
Prints what it changed on stdout; exits 1 when the recording has no place
for the change.
"""
import struct
import sys
import os

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hostile import PerfFile, ST, SAMPLE  # noqa: E402

EXIT, FINISHED_ROUND = 4, 3
BAD = 0xfffffffffffffffe


def same_sample_type(f):
    """One sample layout for every event (the only one PerfFile reads)."""
    if f.pipe:
        return True
    n = f.attrs_size // f.attr_size
    return all(struct.unpack_from('<Q', f.raw, f.attrs_off + i * f.attr_size + 24)[0] == f.sample_type
               for i in range(n))


def chain_of(f, off):
    at = f.sample_field(off, 'CALLCHAIN')
    nr = struct.unpack_from('<Q', f.raw, at)[0]
    return at + 8, nr


def bad_context(f):
    if not f.sample_type & ST['CALLCHAIN'] or f.sample_type & ST['READ']:
        return 0
    seen = changed = 0
    for off, _, size in f.of_type(SAMPLE):
        at, nr = chain_of(f, off)
        if nr < 3 or at + 8 * nr > off + size:
            continue
        seen += 1
        if seen % 25 == 0:
            f.put(at + 16, '<Q', BAD)
            changed += 1
    return changed


def sample_tid(f, off):
    return struct.unpack_from('<II', f.raw, f.sample_field(off, 'TID'))


def set_exit_time(f, exit_off, when):
    f.put(exit_off + 24, '<Q', when)   # the EXIT's own time (after pid, ppid, tid, ptid)
    id_at = f.id_tid(exit_off, struct.unpack_from('<H', f.raw, exit_off + 6)[0])
    f.put(id_at + 8, '<Q', when)       # its sample_id_all time, after pid/tid


def early_exit(f):
    """The EXIT of the process leader with the most samples moved before its
    30th last sample: (tid, time, samples after)."""
    if not f.sample_type & ST['TIME'] or not f.sample_type & ST['TID']:
        return None
    exits = {}
    for off, typ, size in f.records:
        if typ == EXIT:
            pid, ppid, tid, ptid = struct.unpack_from('<IIII', f.raw, off + 8)
            exits[(pid, tid)] = off
    samples = {}
    for off, _, _ in f.of_type(SAMPLE):
        pid, tid = sample_tid(f, off)
        time = struct.unpack_from('<Q', f.raw, f.sample_field(off, 'TIME'))[0]
        samples.setdefault((pid, tid), []).append((off, time))
    keys = [k for k in exits if k in samples and k[0] == k[1]]
    key = max(keys, key=lambda k: len(samples[k]), default=None)
    if key is None or len(samples[key]) < 31:
        return None
    moved = [exits[key]]
    rounds = [off for off, typ, _ in f.records if typ == FINISHED_ROUND]
    # the sample to be after the EXITs: in their round, so that every
    # reader that orders a round's records by time puts the EXITs first
    cands = [(off, t) for off, t in samples[key][:-30]
             if not any(min(off, e) < r < max(off, e) for r in rounds for e in moved)]
    if not cands:
        return None
    off, time = cands[-1]
    when = time - 1
    for e in moved:
        set_exit_time(f, e, when)
    later = sum(1 for _, t in samples[key] if t > when)
    return key[1], when, later


EVENT_DESC, PMU_MAPPINGS, BPF_PROG_INFO, BPF_BTF, CPU_PMU_CAPS, PMU_CAPS = 12, 16, 25, 26, 28, 31


def btf_blob(names):
    """A BTF blob as clang -target bpf -g writes one for C functions "int NAME(int x)": type 1
    int, then per name a FUNC_PROTO and a global FUNC (the i-th name's FUNC is type 3 + 2i)"""
    strs = b'\0int\0x\0'
    types = struct.pack('<IIII', 1, 1 << 24, 4, 1 << 24 | 32)     # INT "int", 4 bytes, signed, 32 bits
    for i, n in enumerate(names):
        types += struct.pack('<IIIII', 0, 13 << 24 | 1, 1, 5, 1)  # FUNC_PROTO (int x) -> int
        types += struct.pack('<III', len(strs), 12 << 24 | 1, 2 + 2 * i)   # FUNC NAME, global
        strs += n.encode() + b'\0'
    return struct.pack('<HBBIIIII', 0xeB9F, 1, 0, 24, 0, len(types), len(types), len(strs)) + types + strs


def bpf_prog(pid, tag, name, subs, btf_id):
    """perf's record of one program: info_len, data_len, arrays, bpf_prog_info, then its arrays
    (the info's pointers as offsets into them); @subs: (address, size, BTF type id) per (sub)program"""
    n = len(subs)
    data = b''.join(struct.pack('<Q', a) for a, _, _ in subs)                       # jited_ksyms at 0
    lens_at = len(data)
    data += b''.join(struct.pack('<I', l) for _, l, _ in subs)
    data += b'\0' * (-len(data) % 8)
    tags_at = len(data)
    data += b''.join(bytes([tag + i] * 8) for i in range(n))
    finfo_at = len(data)
    data += b''.join(struct.pack('<II', 0, t) for _, _, t in subs)
    info = bytearray(192)
    struct.pack_into('<I', info, 4, pid)
    info[64:64 + len(name)] = name.encode()
    struct.pack_into('<IIQQ', info, 104, n, n, 0, lens_at)
    struct.pack_into('<IIQ', info, 128, btf_id, 8, finfo_at)
    struct.pack_into('<IQ', info, 180, n, tags_at)
    arrays = 1 << 3 | 1 << 4 | 1 << 5 | 1 << 8    # perf's PERF_BPIL_ bits: ksyms, func lens, func info, tags
    return struct.pack('<IIQ', len(info), len(data), arrays) + bytes(info) + data


def bpf_features():
    """Three programs as systemd loads them, two named by their info, one of two subprograms
    ("F"), listed out of id order (perf's tree prints them in it), and a BTF blob.  The
    programs name no BTF: perf 7.2's libbpf refuses this hand-made blob (why was not found);
    names from BTF were compared by hand on users' recordings"""
    progs = [bpf_prog(9, 0x6d, 'sd_fw_egress', [(0xffffffffc02bd4fc, 54, 0)], 0),
             bpf_prog(3, 0x36, 'sd_devices', [(0xffffffffc02bbe90, 309, 3)], 0),
             bpf_prog(12, 0x11, 'multi', [(0xffffffffc0300000, 80, 3), (0xffffffffc0300100, 20, 5)], 0)]
    btf = btf_blob(['sd_devices_restricted', 'helper'])
    return (struct.pack('<I', len(progs)) + b''.join(progs),
            struct.pack('<III', 1, 7, len(btf)) + btf)


def perf_string(s):
    """do_write_string: length (NUL included, aligned to 64), then the padded bytes"""
    b = s.encode() + b'\0'
    b += b'\0' * (-len(b) % 64)
    return struct.pack('<I', len(b)) + b


def caps(pairs):
    return struct.pack('<I', len(pairs)) + b''.join(perf_string(k) + perf_string(v) for k, v in pairs)


def pmus(raw):
    """The pmus form on the file's bytes: (new bytes, what changed) or None."""
    attr_size, attrs_off, attrs_size, data_off, data_size = struct.unpack_from('<QQQQQ', raw, 16)
    for at in range(attrs_off, attrs_off + attrs_size, attr_size + 16):
        typ, config = struct.unpack_from('<I', raw, at)[0], struct.unpack_from('<Q', raw, at + 8)[0]
        if typ == 1 and config != 9:
            break
    else:
        return None
    struct.pack_into('<IIQ', raw, at, 0, struct.unpack_from('<I', raw, at + 4)[0], 0x400000000)
    attr_at = at
    bodies = features(raw)
    if EVENT_DESC in bodies:   # its copy of the attrs (what perf prints in the header)
        desc = bytearray(bodies[EVENT_DESC])
        nr, size = struct.unpack_from('<II', desc, 0)
        o = 8
        for i in range(nr):
            if i == (attr_at - attrs_off) // (attr_size + 16):
                struct.pack_into('<I', desc, o, 0)
                struct.pack_into('<Q', desc, o + 8, 0x400000000)
            nids = struct.unpack_from('<I', desc, o + size)[0]
            nlen = struct.unpack_from('<I', desc, o + size + 4)[0]
            o += size + 8 + nlen + 8 * nids
        bodies[EVENT_DESC] = bytes(desc)
    bodies[PMU_MAPPINGS] = struct.pack('<I', 5) + b''.join(
        struct.pack('<I', t) + perf_string(n) for t, n in
        ((4, 'cpu_core'), (10, 'cpu_atom'), (1, 'software'), (2, 'tracepoint'), (11, 'ibs_op')))
    bodies[CPU_PMU_CAPS] = caps([('branches', '32'), ('max_precise', '0')])
    bodies[PMU_CAPS] = struct.pack('<I', 2) + \
        caps([('branches', '32'), ('max_precise', '3'), ('pmu_name', 'alderlake_hybrid')]) + perf_string('cpu_atom') + \
        caps([('zen4_ibs_extensions', '1')]) + perf_string('ibs_op')
    bodies[BPF_PROG_INFO], bodies[BPF_BTF] = bpf_features()
    return with_features(raw, bodies), 'event at %#x: cycles of a hybrid core PMU; PMU and BPF features added' % attr_at


def features(raw):
    """{feature number: its section's bytes} of a file-mode recording"""
    data_off, data_size = struct.unpack_from('<QQ', raw, 40)
    feat_off = data_off + data_size
    bits = int.from_bytes(raw[72:104], 'little')
    bodies = {}
    k = 0
    for feat in range(256):
        if bits >> feat & 1:
            o, n = struct.unpack_from('<QQ', raw, feat_off + 16 * k)
            bodies[feat] = bytes(raw[o:o + n])
            k += 1
    return bodies


def with_features(raw, bodies):
    """The file with its feature sections (after the data) made @bodies"""
    data_off, data_size = struct.unpack_from('<QQ', raw, 40)
    feat_off = data_off + data_size
    out = bytearray(raw[:feat_off])
    at = feat_off + 16 * len(bodies)
    index, blob = b'', b''
    for feat in sorted(bodies):
        index += struct.pack('<QQ', at + len(blob), len(bodies[feat]))
        blob += bodies[feat]
    bits = sum(1 << feat for feat in bodies)
    out[72:104] = bits.to_bytes(32, 'little')
    return out + index + blob


def kernel_mmaps(raw):
    """The file names of the data's kernel MMAP and MMAP2 records, in order"""
    data_off, data_size = struct.unpack_from('<QQ', raw, 40)
    names, at = [], data_off
    while at + 8 <= data_off + data_size:
        typ, misc, size = struct.unpack_from('<IHH', raw, at)
        if size < 8:
            break
        if typ in (1, 10) and misc & 7 == 1:
            name_at = at + 8 + (32 if typ == 1 else 64)
            names.append(bytes(raw[name_at:at + size]).split(b'\0')[0].decode(errors='replace'))
        at += size
    return names


def build_id_entry(misc, name, bid):
    """A perf_record_header_build_id of the host (pid -1), its name padded to 64 bytes"""
    b = name.encode() + b'\0'
    b += b'\0' * (-len(b) % 64)
    return struct.pack('<IHHi20sB3x', 0, misc | 1 << 15, 36 + len(b), -1, bid, 20) + b


def kbuildids(raw):
    """The kbuildids form: (new bytes, what changed) or None"""
    bodies = features(raw)
    release = 'unknown'
    if 4 in bodies:   # OSRELEASE: a perf string
        n = struct.unpack_from('<I', bodies[4])[0]
        release = bodies[4][4:4 + n].split(b'\0')[0].decode()
    mods = []
    for name in kernel_mmaps(raw)[1:]:
        if name.startswith('/'):
            mods.append(name)
        elif name.startswith('[') and not name.startswith('[kernel.kallsyms]'):
            mods.append('/lib/modules/%s/kernel/drivers/%s.ko.xz' % (release, name[1:-1].replace('_', '-')))
    if not mods:
        return None
    vmlinux = '/lib/modules/%s/build/vmlinux' % release
    listed = b''.join(build_id_entry(1, n, bytes([i + 1] * 20)) for i, n in enumerate([vmlinux] + mods))
    bodies[2] = listed + bodies.get(2, b'')
    return with_features(raw, bodies), 'build-id table: %s and %d modules (%s)' % (vmlinux, len(mods), mods[0])




BRANCH_STACK, RAW, SAMPLE_READ = 1 << 11, 1 << 10, 1 << 4
BRANCH_ANY, BRANCH_USER, BRANCH_KERNEL = 1 << 3, 1 << 0, 1 << 1
BRANCH_STACK_FEATURE, EVENT_DESC = 15, 12   # HEADER_BRANCH_STACK, HEADER_EVENT_DESC
CONTEXT_MARKERS = (1 << 64) - 4095  # PERF_CONTEXT_* values: no address


def branch_stack(raw):
    """The branch-stack form: (new bytes, what changed) or None"""
    f = PerfFile(raw)
    if f.pipe or not same_sample_type(f) or not f.sample_type & ST['CALLCHAIN'] or \
            f.sample_type & (RAW | SAMPLE_READ | BRANCH_STACK):
        return None
    raw = bytearray(raw)
    bodies = features(raw)
    for i in range(f.attrs_size // f.attr_size):
        at = f.attrs_off + i * f.attr_size
        struct.pack_into('<Q', raw, at + 24, f.sample_type | BRANCH_STACK)
        struct.pack_into('<Q', raw, at + 72, BRANCH_ANY | BRANCH_USER | BRANCH_KERNEL)
    data, samples, branches = bytearray(), 0, 0
    for off, typ, size in f.records:
        rec = bytes(f.raw[off:off + size])
        if typ == SAMPLE:
            at, nr = chain_of(f, off)
            ips = [ip for ip in struct.unpack_from('<%dQ' % nr, f.raw, at) if ip < CONTEXT_MARKERS]
            pairs = list(zip(ips[1:], ips[:-1]))[:4]
            stack = struct.pack('<Q', len(pairs)) + b''.join(
                struct.pack('<QQQ', src, dst, (3 + k) << 4) for k, (src, dst) in enumerate(pairs))
            end = at + 8 * nr - off
            rec = rec[:end] + stack + rec[end:]
            if len(rec) >= 1 << 16:
                return None
            rec = rec[:6] + struct.pack('<H', len(rec)) + rec[8:]
            samples += 1
            branches += len(pairs)
        data += rec
    out = raw[:f.data_off] + data
    struct.pack_into('<Q', out, 48, len(data))
    bodies[BRANCH_STACK_FEATURE] = b''
    if EVENT_DESC in bodies:   # its copies of the attrs, which perf's header prints
        desc = bytearray(bodies[EVENT_DESC])
        nr, size = struct.unpack_from('<II', desc, 0)
        at = 8
        for _ in range(nr):
            if at + size + 8 > len(desc):
                break
            st = struct.unpack_from('<Q', desc, at + 24)[0]
            struct.pack_into('<Q', desc, at + 24, st | BRANCH_STACK)
            struct.pack_into('<Q', desc, at + 72, BRANCH_ANY | BRANCH_USER | BRANCH_KERNEL)
            at += size
            nr_ids, slen = struct.unpack_from('<II', desc, at)
            at += 8 + slen + 8 * nr_ids
        bodies[EVENT_DESC] = bytes(desc)
    return with_features(out, bodies), '%d samples given %d branches' % (samples, branches)


def main():
    what, src, dst = sys.argv[1:4]
    if what == 'branch-stack':
        r = branch_stack(open(src, 'rb').read())
        if not r:
            sys.exit('%s: not a file-mode recording of one sample layout with callchains, without raw data or reads' % src)
        open(dst, 'wb').write(r[0])
        print(r[1])
        return
    if what in ('pmus', 'kbuildids'):
        raw = bytearray(open(src, 'rb').read())
        if raw[8:16] == struct.pack('<Q', 16):
            sys.exit('%s: a pipe has no feature section' % src)
        r = pmus(raw) if what == 'pmus' else kbuildids(raw)
        if not r:
            sys.exit('%s: %s' % (src, 'no sampling software event' if what == 'pmus' else 'no kernel module map'))
        open(dst, 'wb').write(r[0])
        print(r[1])
        return
    f = PerfFile(open(src, 'rb').read())
    if not same_sample_type(f):
        sys.exit('%s: events of several sample layouts' % src)
    if what == 'bad-context':
        n = bad_context(f)
        if not n:
            sys.exit('%s: no callchain of 3 entries or more' % src)
        print('%d callchains given a bad context value' % n)
    elif what == 'early-exit':
        r = early_exit(f)
        if not r:
            sys.exit('%s: no process with an EXIT and 31 samples in its round' % src)
        print('pid %d exits at %d, before %d of its samples' % r)
    else:
        sys.exit('unknown: ' + what)
    open(dst, 'wb').write(f.raw)


if __name__ == '__main__':
    main()
