// SPDX-License-Identifier: MIT
/*
 * dstack dump: every record in file order with its offset, type, size and
 * parsed fields (the role of `perf report -D`, not its text).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "util/outbuf.h"
#include "dstack/log.h"
#include "dstack/event.h"
#include "dstack/reader.h"
#include "dstack/unwind.h"

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

static void dump_chain(const uint64_t *ips, uint64_t nr)
{
	printf(" ... chain: nr:%llu\n", (unsigned long long)nr);
	for (uint64_t i = 0; i < nr; i++) {
		const char *c = context_name(ips[i]);

		if (c)
			printf(" .....  %llu: %016llx %s\n", (unsigned long long)i, (unsigned long long)ips[i], c);
		else
			printf(" .....  %llu: %016llx%s\n", (unsigned long long)i, (unsigned long long)ips[i],
			       i && ips[i - 1] == DS_CONTEXT_USER_DEFERRED ? " (cookie)" : "");
	}
}

/* As perf report -D: the ABI, then each register of the attr's mask by name. */
static void dump_regs(const char *type, uint64_t mask, uint64_t abi, const uint64_t *regs)
{
	static const char *const abi_name[] = { "none", "32-bit", "64-bit" };
	unsigned k = 0;

	printf("... %s regs: mask %#llx ABI %s\n", type, (unsigned long long)mask, abi_name[abi]);
	for (unsigned b = 0; b < 64; b++) {
		const char *name;

		if (!(mask & (1ull << b)))
			continue;
		name = ds_x86_reg__name(b);
		if (name)
			printf(".... %-5s 0x%016llx\n", name, (unsigned long long)regs[k]);
		else
			printf(".... r%-4u 0x%016llx\n", b, (unsigned long long)regs[k]);
		k++;
	}
}

/* The user stack copy: perf's "size" is what the kernel could copy (dyn_size). */
static void dump_stack(const struct ds_event_header *h, const struct ds_sample *s)
{
	size_t off = s->stack_user ? (size_t)((const char *)s->stack_user - (const char *)h) - 8 : 0;

	printf("... ustack: size %llu, offset %#zx (copy of %llu bytes)\n", (unsigned long long)s->stack_user_dyn,
	       off, (unsigned long long)s->stack_user_size);
}

static void dump_id(const struct ds_sample *s)
{
	if (s->has_tid)
		printf(" pid %d tid %d", (int)s->pid, (int)s->tid);
	if (s->has_cpu)
		printf(" cpu %u", s->cpu);
	if (s->time != DS_NO_TIME)
		printf(" time %llu", (unsigned long long)s->time);
}

/* A SAMPLE record: event, ip, period, id fields, then its callchain, registers and stack copy. */
static void dump_sample(const struct ds_evsel *e, const struct ds_event_header *h)
{
	struct ds_sample s;
	const char *why = NULL;

	if (ds_sample__parse(e, h, &s, &why)) {
		printf(" BAD: %s\n", why);
		return;
	}
	printf(" %s ip %#llx period %llu", e->name, (unsigned long long)s.ip, (unsigned long long)s.period);
	dump_id(&s);
	printf("\n");
	if (s.callchain)
		dump_chain(s.callchain, s.callchain_nr);
	if (s.regs_user)
		dump_regs("user", e->attr.sample_regs_user, s.regs_user_abi, s.regs_user);
	if (s.regs_intr)
		dump_regs("intr", e->attr.sample_regs_intr, s.regs_intr_abi, s.regs_intr);
	if ((e->attr.sample_type & DS_SAMPLE_STACK_USER) && s.stack_user)
		dump_stack(h, &s);
}

/* An MMAP or MMAP2 record's body: pid/tid [start(len) @ pgoff <build id>]: file.  *why when malformed. */
static void dump_mmap(const struct ds_evsel *e, const struct ds_event_header *h, const char **why)
{
	struct ds_mmap_event m;

	if (ds_mmap__parse(e, h, &m, why))
		return;
	printf(" %d/%d [%#llx(%#llx) @ %#llx", (int)m.pid, (int)m.tid, (unsigned long long)m.start,
	       (unsigned long long)m.len, (unsigned long long)m.pgoff);
	if (m.has_build_id) {
		printf(" <");
		for (int i = 0; i < m.build_id_size; i++)
			printf("%02x", m.build_id[i]);
		printf(">");
	}
	printf("]: %s", m.filename);
}

/* A COMM, FORK or EXIT record's body.  *why when malformed. */
static void dump_task_record(const struct ds_evsel *e, const struct ds_event_header *h, const char **why)
{
	struct ds_comm_event c;
	struct ds_task_event t;

	if (h->type == DS_REC_COMM) {
		if (ds_comm__parse(e, h, &c, why) == 0)
			printf(" %s%s: %d/%d", c.exec ? "exec " : "", c.comm, (int)c.pid, (int)c.tid);
	} else if (ds_task__parse(e, h, &t, why) == 0) {
		printf(" (%d:%d):(%d:%d)", (int)t.pid, (int)t.tid, (int)t.ppid, (int)t.ptid);
	}
}

/*
 * A CALLCHAIN_DEFERRED record: its cookie, id fields and user chain, whole
 * lines.  False (nothing printed, *why set) when it is malformed.
 */
static bool dump_deferred(const struct ds_evsel *e, const struct ds_event_header *h, const struct ds_sample *s,
			  const char **why)
{
	struct ds_deferred_event d;

	if (ds_deferred__parse(e, h, &d, why))
		return false;
	printf(" cookie %#llx", (unsigned long long)d.cookie);
	dump_id(s);
	printf("\n");
	dump_chain(d.ips, d.nr);
	return true;
}

/* A kernel record of an event of the file: its fields after the header line's start, ending the line. */
static void dump_kernel_record(const struct ds_reader *r, const struct ds_event_header *h)
{
	struct ds_evsel *e = ds_reader__evsel_of(r, h);
	struct ds_sample s;
	const char *why = NULL;

	if (!e) {
		printf(" (sample id matches no event)\n");
		return;
	}
	if (h->type == DS_REC_SAMPLE) {
		dump_sample(e, h);
		return;
	}
	ds_sample_id__parse(e, h, &s, &why);
	switch (h->type) {
	case DS_REC_MMAP:
	case DS_REC_MMAP2:
		dump_mmap(e, h, &why);
		break;
	case DS_REC_COMM:
	case DS_REC_FORK:
	case DS_REC_EXIT:
		dump_task_record(e, h, &why);
		break;
	case DS_REC_CALLCHAIN_DEFERRED:
		if (dump_deferred(e, h, &s, &why))
			return;
		break;
	default:
		break;
	}
	if (why)
		printf(" BAD: %s", why);
	dump_id(&s);
	printf("\n");
}

int cmd_dump(int argc, char **argv)
{
	struct common_opts co = { .input = "perf.data" };
	struct ds_record rec;
	int ret;

	for (int i = 1; i < argc; i++) {
		if (common_opt(&co, argc, argv, &i))
			continue;
		usage_error("dump", "unknown option '%s' (usage: dstack dump [-i FILE])", argv[i]);
		return EXIT_USAGE;
	}
	struct ds_reader *r = ds_reader__open(co.input);
	const char *last_file = NULL;

	if (!r) {
		fprintf(stderr, "dstack dump: %s\n", ds_errmsg());
		return EXIT_INPUT;
	}
	for (size_t i = 0; i < ds_reader__nr_evsels(r); i++) {
		struct ds_evsel *e = ds_reader__evsel(r, i);

		printf("# event %zu: type %u config %#llx sample_type %#llx flags %#llx ids %zu\n", i,
		       e->attr.type, (unsigned long long)e->attr.config, (unsigned long long)e->attr.sample_type,
		       (unsigned long long)e->attr.flags, e->nr_ids);
	}
	while ((ret = ds_reader__next(r, &rec)) == 1) {
		const char *name = ds_record_type__name(rec.hdr->type);
		uint64_t off = rec.offset;
		const char *file = ds_reader__locate(r, &off);

		if (file != last_file && ds_reader__info(r)->dir)   /* a directory's records: each file's own offsets */
			printf("# %s\n", file);
		last_file = file;
		printf("%#llx%s [%#x]: PERF_RECORD_%s", (unsigned long long)off,
		       rec.decompressed ? " (decompressed)" : "", rec.hdr->size, name ? name : "UNKNOWN");
		if (!name)
			printf(" type %u", rec.hdr->type);
		if (rec.hdr->type < DS_REC_KERNEL_MAX && name)
			dump_kernel_record(r, rec.hdr);
		else
			printf("\n");
		if (ferror(stdout)) {   /* a full disk or closed pipe: stop, do not read on for nothing */
			output_failed("stdout", errno);
			break;
		}
	}
	if (fflush(stdout))
		output_failed("stdout", errno);
	if (ret < 0)
		fprintf(stderr, "dstack dump: %s\n", ds_errmsg());   /* the reader's: nothing failed since */
	ds_reader__close(r);
	return ret < 0 ? EXIT_INPUT : EXIT_OK;
}
