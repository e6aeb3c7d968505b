// SPDX-License-Identifier: MIT
/*
 * perf's text forms of sample fields and side-band records
 * (dstack/perf_text.h), as perf script 7.2 prints them.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include "dstack/perf_text.h"
#include "dstack/unwind.h"

/* snprintf's rule over several calls: the text as far as @cap holds it, the whole length counted */
struct text {
	char *p;
	size_t cap, len;
};

__attribute__((format(printf, 2, 3)))
static void text_printf(struct text *t, const char *fmt, ...)
{
	va_list ap;
	size_t room = t->len < t->cap ? t->cap - t->len : 0;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(room ? t->p + t->len : NULL, room, fmt, ap);
	va_end(ap);
	if (n > 0)
		t->len += (size_t)n;
}

static void text_start(struct text *t, char *buf, size_t cap)
{
	*t = (struct text){ buf, cap, 0 };
	if (cap)
		buf[0] = 0;
}

/*
 * perf's decoding of a data source (union perf_mem_data_src, in
 * linux/perf_event.h; the words are perf's, tools/perf/util/mem-events.c
 * read as a reference).
 */
struct strbuf {
	char *p;
	size_t n, cap;
};

static void sb_add(struct strbuf *b, const char *s)
{
	size_t l = strlen(s);

	if (b->n + l >= b->cap)
		l = b->cap - 1 - b->n;
	memcpy(b->p + b->n, s, l);
	b->n += l;
	b->p[b->n] = 0;
}

/* the names of the set bits of @m, from bit 0, joined by " or " */
static bool sb_bits(struct strbuf *b, uint64_t m, const char *const *names, size_t nr, size_t *printed)
{
	for (size_t i = 0; m && i < nr; i++, m >>= 1) {
		if (!(m & 1))
			continue;
		if ((*printed)++)
			sb_add(b, " or ");
		sb_add(b, names[i]);
	}
	return *printed != 0;
}

#define BITS(v, lo, n) (((v) >> (lo)) & ((1ULL << (n)) - 1))

static void decode_op(struct strbuf *b, uint64_t op)
{
	sb_add(b, op & 1 ? "N/A" : op & 2 ? "LOAD" : op & 4 ? "STORE" : op & 8 ? "PFETCH" : op & 16 ? "EXEC" : "No");
}

static void decode_lvl(struct strbuf *b, uint64_t v)
{
	static const char *const lvl[] = { "N/A", "HIT", "MISS", "L1", "LFB/MAB", "L2", "L3", "Local RAM",
					   "Remote RAM (1 hop)", "Remote RAM (2 hops)", "Remote Cache (1 hop)",
					   "Remote Cache (2 hops)", "I/O", "Uncached" };
	static const char *const lvlnum[16] = { [1] = "L1", [2] = "L2", [3] = "L3", [4] = "L4", [5] = "L2 MHB",
						[6] = "Memory-side Cache", [7] = "Uncached", [9] = "CXL",
						[10] = "I/O", [11] = "Any cache", [12] = "LFB/MAB", [13] = "RAM",
						[14] = "PMEM", [15] = "N/A" };
	static const char *const hops[] = { "N/A", "core, same node", "node, same socket", "socket, same board",
					    "board", "", "", "" };
	uint64_t m = BITS(v, 5, 14), num = BITS(v, 33, 4);
	const char *hit_miss = m & 2 ? "hit" : m & 4 ? "miss" : "";
	size_t printed = 0;

	if (num && num != 15) {
		if (BITS(v, 37, 1))
			sb_add(b, "Remote ");
		if (BITS(v, 43, 3)) {
			sb_add(b, hops[BITS(v, 43, 3)]);
			sb_add(b, " ");
		}
		if (lvlnum[num]) {
			sb_add(b, lvlnum[num]);
		} else {
			char u[32];

			snprintf(u, sizeof(u), "Unknown level %u", (unsigned)num);
			sb_add(b, u);
		}
		sb_add(b, " ");
		sb_add(b, hit_miss);
		return;
	}
	m &= ~7ULL;
	if (m && sb_bits(b, m, lvl, sizeof(lvl) / sizeof(*lvl), &printed)) {
		sb_add(b, " ");
		sb_add(b, hit_miss);
		return;
	}
	sb_add(b, "N/A");
}

static void decode_snoop(struct strbuf *b, uint64_t v)
{
	static const char *const snoop[] = { "N/A", "None", "Hit", "Miss", "HitM" };
	static const char *const snoopx[] = { "Fwd", "Peer" };
	size_t printed = 0;

	sb_bits(b, BITS(v, 19, 5), snoop, 5, &printed);
	sb_bits(b, BITS(v, 38, 2), snoopx, 2, &printed);
	if (!printed)
		sb_add(b, "N/A");
}

static void decode_tlb(struct strbuf *b, uint64_t v)
{
	static const char *const tlb[] = { "N/A", "HIT", "MISS", "L1", "L2", "Walker", "Fault" };
	uint64_t m = BITS(v, 26, 7);
	size_t printed = 0;

	sb_bits(b, m & ~6ULL, tlb, 7, &printed);
	if (!printed)
		sb_add(b, "N/A");
	if (m & 2)
		sb_add(b, " hit");
	if (m & 4)
		sb_add(b, " miss");
}

static void decode_blk(struct strbuf *b, uint64_t v)
{
	uint64_t m = BITS(v, 40, 3);

	if (!m || (m & 1)) {
		sb_add(b, " N/A");
		return;
	}
	if (m & 2)
		sb_add(b, " Data");
	if (m & 4)
		sb_add(b, " Addr");
}

size_t ds_data_src__text(uint64_t v, char *out, size_t cap)
{
	struct strbuf b = { out, 0, cap };
	uint64_t lock = BITS(v, 24, 2);

	if (!cap)
		return 0;
	out[0] = 0;
	sb_add(&b, "|OP ");
	decode_op(&b, BITS(v, 0, 5));
	sb_add(&b, "|LVL ");
	decode_lvl(&b, v);
	sb_add(&b, "|SNP ");
	decode_snoop(&b, v);
	sb_add(&b, "|TLB ");
	decode_tlb(&b, v);
	sb_add(&b, "|LCK ");
	sb_add(&b, lock & 1 ? "N/A" : lock & 2 ? "Yes" : "No");
	sb_add(&b, "|BLK ");
	decode_blk(&b, v);
	return b.n;
}


size_t ds_branch_flags__text(uint64_t fl, char *buf, size_t cap)
{
	/* perf's names of PERF_BR_* (0, unknown: none) and of PERF_BR_NEW_* (type 15, EXTEND_ABI) */
	static const char *const types[15] = { "", "COND", "UNCOND", "IND", "CALL", "IND_CALL", "RET", "SYSCALL",
					       "SYSRET", "COND_CALL", "COND_RET", "ERET", "IRQ", "SERROR", "NO_TX" };
	static const char *const new_types[8] = { "FAULT_ALGN", "FAULT_DATA", "FAULT_INST", "ARCH_1", "ARCH_2",
						  "ARCH_3", "ARCH_4", "ARCH_5" };
	static const char *const spec[4] = { "-", "SPEC_WRONG_PATH", "NON_SPEC_CORRECT_PATH", "SPEC_CORRECT_PATH" };
	/* perf_branch_entry's bits: mispred 0, predicted 1, in_tx 2, abort 3, cycles 4-19, type 20-23,
	 * spec 24-25, new_type 26-29; perf's not_taken 33 */
	unsigned type = fl >> 20 & 15, new_type = fl >> 26 & 15;
	bool mispred = fl & 1, predicted = fl >> 1 & 1, not_taken = fl >> 33 & 1;
	struct text t;

	text_start(&t, buf, cap);
	text_printf(&t, "/%s/%c/%c/%u/%s/%s ",
		    !(mispred || predicted || not_taken) ? "-" : not_taken ? (predicted ? "PN" : "MN") : predicted ? "P" : "M",
		    fl >> 2 & 1 ? 'X' : '-', fl >> 3 & 1 ? 'A' : '-', (unsigned)(fl >> 4 & 0xffff),
		    type < 15 ? types[type] : new_type < 8 ? new_types[new_type] : "(null)", spec[fl >> 24 & 3]);
	return t.len;
}

/* perf's name of x86 register @r: the general ones, XMM0-15 (two slots each), else "unknown" */
static const char *reg_name(unsigned r, char buf[8])
{
	const char *n = ds_x86_reg__name(r);

	if (n)
		return n;
	if (r >= 32 && r < 64 && !(r & 1)) {
		snprintf(buf, 8, "XMM%u", (r - 32) / 2);
		return buf;
	}
	return "unknown";
}

size_t ds_regs__text(uint64_t abi, const uint64_t *regs, uint64_t mask, char *buf, size_t cap)
{
	unsigned i = 0;
	char name[8];
	struct text t;

	text_start(&t, buf, cap);
	if (!regs)
		return 0;
	text_printf(&t, " ABI:%llu ", (unsigned long long)abi);
	for (unsigned r = 0; r < 64; r++)
		if (mask >> r & 1)
			text_printf(&t, "%5s:0x%llx ", reg_name(r, name), (unsigned long long)regs[i++]);
	return t.len;
}

size_t ds_page_size__text(uint64_t size, char *buf, size_t cap)
{
	static const char unit[] = "BKMG";
	int i = 0;
	struct text t;

	text_start(&t, buf, cap);
	if (!size) {
		text_printf(&t, "N/A");
		return t.len;
	}
	while (size / 1024 > 1 && i < 3) {
		size /= 1024;
		i++;
	}
	text_printf(&t, "%llu%c", (unsigned long long)size, unit[i]);
	return t.len;
}

/* The text of a MMAP or MMAP2 record @m after "PERF_RECORD_MMAP[2]", as perf_event__fprintf_mmap[2]. */
static void mmap_text(struct text *t, const struct ds_event *ev, const struct ds_mmap_event *m)
{
	text_printf(t, " %d/%d: [%#llx(%#llx) @ %#llx", (int)m->pid, (int)m->tid, (unsigned long long)m->start,
		    (unsigned long long)m->len, (unsigned long long)m->pgoff);
	if (ev->hdr->type == DS_REC_MMAP) {
		text_printf(t, "]: %c %s\n", (ev->hdr->misc & DS_MISC_MMAP_DATA) ? 'r' : 'x', m->filename);
		return;
	}
	if (m->has_build_id) {
		text_printf(t, " <");
		for (unsigned i = 0; i < m->build_id_size; i++)
			text_printf(t, "%02x", m->build_id[i]);
		text_printf(t, ">");
	} else {
		text_printf(t, " %02x:%02x %llu %llu", m->maj, m->min, (unsigned long long)m->ino,
			    (unsigned long long)m->ino_generation);
	}
	text_printf(t, "]: %c%c%c%c %s\n", (m->prot & PROT_READ) ? 'r' : '-', (m->prot & PROT_WRITE) ? 'w' : '-',
		    (m->prot & PROT_EXEC) ? 'x' : '-', (m->flags & MAP_SHARED) ? 's' : 'p', m->filename);
}

/* A SWITCH record's text after its name, as perf_event__fprintf_switch. */
static void switch_text(struct text *t, const struct ds_event *ev)
{
	bool out = ev->hdr->misc & DS_MISC_SWITCH_OUT;
	const char *in_out = !out ? "IN         " : !(ev->hdr->misc & DS_MISC_SWITCH_OUT_PREEMPT) ? "OUT        " :
										       "OUT preempt";
	uint32_t pid_tid[2] = { 0, 0 };

	if (ev->hdr->type == DS_REC_SWITCH) {
		text_printf(t, " %s\n", in_out);
		return;
	}
	if (ev->hdr->size >= sizeof(*ev->hdr) + sizeof(pid_tid))
		memcpy(pid_tid, (const char *)ev->hdr + sizeof(*ev->hdr), sizeof(pid_tid));
	text_printf(t, " %s  %s pid/tid: %5d/%-5d\n", in_out, out ? "next" : "prev", (int)pid_tid[0], (int)pid_tid[1]);
}

int ds_side_band__text(const struct ds_event *ev, int32_t *pid, int32_t *tid, char *buf, size_t cap)
{
	static const char *const names[] = { [DS_REC_MMAP] = "MMAP", [DS_REC_COMM] = "COMM", [DS_REC_EXIT] = "EXIT",
					     [DS_REC_FORK] = "FORK", [DS_REC_MMAP2] = "MMAP2", [DS_REC_SWITCH] = "SWITCH",
					     [DS_REC_SWITCH_CPU_WIDE] = "SWITCH_CPU_WIDE", [DS_REC_LOST] = "LOST" };
	uint32_t type = ev->hdr->type;
	struct ds_comm_event c;
	struct ds_task_event k;
	struct ds_mmap_event m;
	const char *why;
	struct text t;

	if (type >= sizeof(names) / sizeof(*names) || !names[type])
		return -EINVAL;
	*pid = (int32_t)ev->sample.pid;
	*tid = (int32_t)ev->sample.tid;
	/* the task a record names; a record that does not parse is not printed */
	switch (type) {
	case DS_REC_COMM:
		if (ds_comm__parse(ev->evsel, ev->hdr, &c, &why))
			return -EINVAL;
		*pid = (int32_t)c.pid, *tid = (int32_t)c.tid;
		break;
	case DS_REC_FORK: case DS_REC_EXIT:
		if (ds_task__parse(ev->evsel, ev->hdr, &k, &why))
			return -EINVAL;
		*pid = (int32_t)k.pid, *tid = (int32_t)k.tid;
		break;
	case DS_REC_MMAP: case DS_REC_MMAP2:
		if (ds_mmap__parse(ev->evsel, ev->hdr, &m, &why))
			return -EINVAL;
		*pid = (int32_t)m.pid, *tid = (int32_t)m.tid;
		break;
	}
	text_start(&t, buf, cap);
	text_printf(&t, "PERF_RECORD_%s", names[type]);
	switch (type) {
	case DS_REC_COMM:
		text_printf(&t, "%s: %s:%d/%d\n", c.exec ? " exec" : "", c.comm, (int)c.pid, (int)c.tid);
		break;
	case DS_REC_FORK: case DS_REC_EXIT:
		text_printf(&t, "(%d:%d):(%d:%d)\n", (int)k.pid, (int)k.tid, (int)k.ppid, (int)k.ptid);
		break;
	case DS_REC_MMAP: case DS_REC_MMAP2:
		mmap_text(&t, ev, &m);
		break;
	case DS_REC_LOST:
		text_printf(&t, " lost %llu\n", (unsigned long long)ds_record__lost(ev->hdr));
		break;
	default:
		switch_text(&t, ev);
		break;
	}
	return (int)t.len;
}

/* ---- dstack dump: a record and its parsed fields (the role of perf report -D, not its text) ---- */

static const char *context_name(uint64_t ip)
{
	switch (ip) {
	case DS_CONTEXT_HV: return "PERF_CONTEXT_HV";
	case DS_CONTEXT_KERNEL: return "PERF_CONTEXT_KERNEL";
	case DS_CONTEXT_USER: return "PERF_CONTEXT_USER";
	case DS_CONTEXT_USER_DEFERRED: return "PERF_CONTEXT_USER_DEFERRED";
	case DS_CONTEXT_GUEST: return "PERF_CONTEXT_GUEST";
	case DS_CONTEXT_GUEST_KERNEL: return "PERF_CONTEXT_GUEST_KERNEL";
	case DS_CONTEXT_GUEST_USER: return "PERF_CONTEXT_GUEST_USER";
	default: return NULL;
	}
}

static void dump_chain(struct text *t, const uint64_t *ips, uint64_t nr)
{
	text_printf(t, " ... chain: nr:%llu\n", (unsigned long long)nr);
	for (uint64_t i = 0; i < nr; i++) {
		const char *c = context_name(ips[i]);

		if (c)
			text_printf(t, " .....  %llu: %016llx %s\n", (unsigned long long)i, (unsigned long long)ips[i], c);
		else
			text_printf(t, " .....  %llu: %016llx%s\n", (unsigned long long)i, (unsigned long long)ips[i],
			       i && ips[i - 1] == DS_CONTEXT_USER_DEFERRED ? " (cookie)" : "");
	}
}

/* As perf report -D: the ABI, then each register of the attr's mask by name. */
static void dump_regs(struct text *t, const char *type, uint64_t mask, uint64_t abi, const uint64_t *regs)
{
	static const char *const abi_name[] = { "none", "32-bit", "64-bit" };
	unsigned k = 0;

	text_printf(t, "... %s regs: mask %#llx ABI %s\n", type, (unsigned long long)mask, abi_name[abi]);
	for (unsigned b = 0; b < 64; b++) {
		const char *name;

		if (!(mask & (1ull << b)))
			continue;
		name = ds_x86_reg__name(b);
		if (name)
			text_printf(t, ".... %-5s 0x%016llx\n", name, (unsigned long long)regs[k]);
		else
			text_printf(t, ".... r%-4u 0x%016llx\n", b, (unsigned long long)regs[k]);
		k++;
	}
}

/* The user stack copy: perf's "size" is what the kernel could copy (dyn_size). */
static void dump_stack(struct text *t, const struct ds_event_header *h, const struct ds_sample *s)
{
	size_t off = s->stack_user ? (size_t)((const char *)s->stack_user - (const char *)h) - 8 : 0;

	text_printf(t, "... ustack: size %llu, offset %#zx (copy of %llu bytes)\n", (unsigned long long)s->stack_user_dyn,
	       off, (unsigned long long)s->stack_user_size);
}

static void dump_id(struct text *t, const struct ds_sample *s)
{
	if (s->has_tid)
		text_printf(t, " pid %d tid %d", (int)s->pid, (int)s->tid);
	if (s->has_cpu)
		text_printf(t, " cpu %u", s->cpu);
	if (s->time != DS_NO_TIME)
		text_printf(t, " time %llu", (unsigned long long)s->time);
}

/* A SAMPLE record: event, ip, period, id fields, then its callchain, registers and stack copy. */
static void dump_sample(struct text *t, const struct ds_evsel *e, const struct ds_event_header *h)
{
	struct ds_sample s;
	const char *why = NULL;

	if (ds_sample__parse(e, h, &s, &why)) {
		text_printf(t, " BAD: %s\n", why);
		return;
	}
	text_printf(t, " %s ip %#llx period %llu", e->name, (unsigned long long)s.ip, (unsigned long long)s.period);
	dump_id(t, &s);
	text_printf(t, "\n");
	if (s.callchain)
		dump_chain(t, s.callchain, s.callchain_nr);
	if (s.regs_user)
		dump_regs(t, "user", e->attr.sample_regs_user, s.regs_user_abi, s.regs_user);
	if (s.regs_intr)
		dump_regs(t, "intr", e->attr.sample_regs_intr, s.regs_intr_abi, s.regs_intr);
	if ((e->attr.sample_type & DS_SAMPLE_STACK_USER) && s.stack_user)
		dump_stack(t, h, &s);
}

/* An MMAP or MMAP2 record's body: pid/tid [start(len) @ pgoff <build id>]: file.  *why when malformed. */
static void dump_mmap(struct text *t, const struct ds_evsel *e, const struct ds_event_header *h, const char **why)
{
	struct ds_mmap_event m;

	if (ds_mmap__parse(e, h, &m, why))
		return;
	text_printf(t, " %d/%d [%#llx(%#llx) @ %#llx", (int)m.pid, (int)m.tid, (unsigned long long)m.start,
	       (unsigned long long)m.len, (unsigned long long)m.pgoff);
	if (m.has_build_id) {
		text_printf(t, " <");
		for (int i = 0; i < m.build_id_size; i++)
			text_printf(t, "%02x", m.build_id[i]);
		text_printf(t, ">");
	}
	text_printf(t, "]: %s", m.filename);
}

/* A COMM, FORK or EXIT record's body.  *why when malformed. */
static void dump_task_record(struct text *t, const struct ds_evsel *e, const struct ds_event_header *h,
			     const char **why)
{
	struct ds_comm_event c;
	struct ds_task_event k;

	if (h->type == DS_REC_COMM) {
		if (ds_comm__parse(e, h, &c, why) == 0)
			text_printf(t, " %s%s: %d/%d", c.exec ? "exec " : "", c.comm, (int)c.pid, (int)c.tid);
	} else if (ds_task__parse(e, h, &k, why) == 0) {
		text_printf(t, " (%d:%d):(%d:%d)", (int)k.pid, (int)k.tid, (int)k.ppid, (int)k.ptid);
	}
}

/*
 * A CALLCHAIN_DEFERRED record: its cookie, id fields and user chain, whole
 * lines.  False (nothing printed, *why set) when it is malformed.
 */
static bool dump_deferred(struct text *t, const struct ds_evsel *e, const struct ds_event_header *h,
			  const struct ds_sample *s, const char **why)
{
	struct ds_deferred_event d;

	if (ds_deferred__parse(e, h, &d, why))
		return false;
	text_printf(t, " cookie %#llx", (unsigned long long)d.cookie);
	dump_id(t, s);
	text_printf(t, "\n");
	dump_chain(t, d.ips, d.nr);
	return true;
}

/* A kernel record of an event of the file: its fields after the header line's start, ending the line. */
static void dump_kernel_record(struct text *t, const struct ds_reader *r, const struct ds_event_header *h)
{
	struct ds_evsel *e = ds_reader__evsel_of(r, h);
	struct ds_sample s;
	const char *why = NULL;

	if (!e) {
		text_printf(t, " (sample id matches no event)\n");
		return;
	}
	if (h->type == DS_REC_SAMPLE) {
		dump_sample(t, e, h);
		return;
	}
	ds_sample_id__parse(e, h, &s, &why);
	switch (h->type) {
	case DS_REC_MMAP:
	case DS_REC_MMAP2:
		dump_mmap(t, e, h, &why);
		break;
	case DS_REC_COMM:
	case DS_REC_FORK:
	case DS_REC_EXIT:
		dump_task_record(t, e, h, &why);
		break;
	case DS_REC_CALLCHAIN_DEFERRED:
		if (dump_deferred(t, e, h, &s, &why))
			return;
		break;
	default:
		break;
	}
	if (why)
		text_printf(t, " BAD: %s", why);
	dump_id(t, &s);
	text_printf(t, "\n");
}


size_t ds_record__dump_text(const struct ds_reader *r, const struct ds_record *rec, char *buf, size_t cap)
{
	const char *name = ds_record_type__name(rec->hdr->type);
	uint64_t off = rec->offset;
	struct text t;

	text_start(&t, buf, cap);
	ds_reader__locate(r, &off);
	text_printf(&t, "%#llx%s [%#x]: PERF_RECORD_%s", (unsigned long long)off,
		    rec->decompressed ? " (decompressed)" : "", rec->hdr->size, name ? name : "UNKNOWN");
	if (!name)
		text_printf(&t, " type %u", rec->hdr->type);
	if (rec->hdr->type < DS_REC_KERNEL_MAX && name)
		dump_kernel_record(&t, r, rec->hdr);
	else
		text_printf(&t, "\n");
	return t.len;
}
