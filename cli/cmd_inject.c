// SPDX-License-Identifier: MIT
/*
 * dstack inject --merge: rewrite a recording with deferred callchains as a
 * classic one that any perf (6.1 included) reads: every stitched sample
 * carries its merged chain (kernel ips, PERF_CONTEXT_USER, user ips) in
 * place of PERF_CONTEXT_USER_DEFERRED + cookie, CALLCHAIN_DEFERRED records
 * are dropped, and the attrs lose their defer_* bits.
 *
 * Samples whose deferred record is not in the input (unresolved) keep
 * their kernel chain only: the cookie is stripped, because readers that do
 * not know PERF_CONTEXT_USER_DEFERRED throw away a chain holding it.
 *
 * Output is what an older perf knows: records in time order (the
 * stitcher's order, with a FINISHED_ROUND every ROUND_RECORDS records
 * while times only grow), kernel record types up to AUX_OUTPUT_HW_ID,
 * attrs at the smallest ABI size that holds their fields, the header
 * features dstack reads (hostname, os release, version, arch, nrcpus,
 * cpudesc, cpuid, total memory, cmdline, event names, sample times,
 * build-ids), never compressed.  perf-tool records of the input
 * (TIME_CONV, ID_INDEX, THREAD_MAP, CPU_MAP, EVENT_UPDATE, ...) are not
 * copied: the attrs carry the ids and EVENT_DESC the names.
 *
 * Samples with a user stack copy (--call-graph dwarf, or fp,defer's
 * --stack-snapshot) are unwound (threads and maps tracked, binaries under
 * --symfs): their chain becomes kernel ips, PERF_CONTEXT_USER, the
 * unwound frames, and the copy and the user registers are dropped, with
 * REGS_USER/STACK_USER and exclude_callchain_user cleared in the attrs, so
 * readers without DWARF unwinding get full stacks from a far smaller file.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include "cli.h"
#include "dstack/log.h"
#include "dstack/event.h"
#include "dstack/jitdump.h"
#include "dstack/session.h"
#include "dstack/writer.h"
#include "util/outbuf.h"
#include "samples.h"

#define ROUND_RECORDS 65536
#define MAX_RECORD_SIZE 65528u  /* largest 8-byte multiple a u16 size holds */

struct inject {
	char run_msg[640];              /* why the session's run failed (ds_errmsg() then) */
	struct ds_reader *r;
	struct ds_writer *w;
	bool set_up;
	size_t nr_attrs;               /* evsels given to the writer */
	size_t nr_build_ids;           /* build-ids of the input given to the writer */
	uint64_t last_time;
	bool time_went_back;           /* then no more FINISHED_ROUND: perf could reorder */
	uint64_t since_round;
	uint8_t rec[65536];            /* a rebuilt sample */
	struct progress progress;
	/* unwinding the stack copies (when an event has them) */
	bool unwind;
	struct ds_symbols *syms;
	struct ds_machine *machine;
	struct ds_user_unwind *uu;
	/* --jit: the jitdumps' code as perf inject --jit writes it */
	bool jit;
	const char *symfs;
	struct {
		uint64_t dumps, codes, elf_failed;
	} jit_n;
	struct {
		uint64_t samples, stitched, unresolved, truncated, unwound;
		uint64_t deferred_dropped, other_dropped, unknown_evsel;
	} n;
};

/* ---- header ------------------------------------------------------------- */

static int copy_cmdline(struct ds_writer *w, const char *cmdline)
{
	char *copy = strdup(cmdline), *save = NULL;
	const char **words = calloc(strlen(cmdline) / 2 + 2, sizeof(*words));
	int n = 0, err = -ENOMEM;

	if (copy && words) {
		for (char *t = strtok_r(copy, " ", &save); t; t = strtok_r(NULL, " ", &save))
			words[n++] = t;
		err = ds_writer__feature_cmdline(w, n, words);
	}
	free(words);
	free(copy);
	return err;
}

static int copy_features(struct ds_writer *w, const struct ds_header_info *in)
{
	static const int strings[] = { DS_FEAT_HOSTNAME, DS_FEAT_OSRELEASE, DS_FEAT_VERSION,
				       DS_FEAT_ARCH, DS_FEAT_CPUDESC, DS_FEAT_CPUID };
	const char *values[] = { in->hostname, in->osrelease, in->version,
				 in->arch, in->cpudesc, in->cpuid };
	int err = 0;

	for (size_t i = 0; !err && i < sizeof(strings) / sizeof(*strings); i++)
		if (values[i])
			err = ds_writer__feature_string(w, strings[i], values[i]);
	if (!err && ds_header_info__has_feature(in, DS_FEAT_NRCPUS))
		err = ds_writer__feature_nrcpus(w, in->nr_cpus_avail, in->nr_cpus_online);
	if (!err && ds_header_info__has_feature(in, DS_FEAT_TOTAL_MEM))
		err = ds_writer__feature_u64(w, DS_FEAT_TOTAL_MEM, in->total_mem);
	if (!err && ds_header_info__has_feature(in, DS_FEAT_SAMPLE_TIME))
		err = ds_writer__feature_sample_time(w, in->first_sample_time, in->last_sample_time);
	if (!err && in->cmdline)
		err = copy_cmdline(w, in->cmdline);
	return err;
}

/* Build-ids of the input not yet given (pipe inputs may bring more at the end). */
static int copy_build_ids(struct inject *inj)
{
	const struct ds_header_info *in = ds_reader__info(inj->r);
	int err = 0;

	for (; !err && inj->nr_build_ids < in->nr_build_ids; inj->nr_build_ids++) {
		const struct ds_build_id_entry *b = &in->build_ids[inj->nr_build_ids];

		if (b->size)
			err = ds_writer__add_build_id(inj->w, b->pid, b->misc, b->data, b->size, b->filename);
	}
	return err;
}

/* Attrs without the defer bits, at the smallest size an older perf accepts. */
static int set_up(struct inject *inj)
{
	size_t n = ds_reader__nr_evsels(inj->r);
	int err = 0;

	inj->set_up = true;
	for (size_t i = 0; !err && i < n; i++) {
		const struct ds_evsel *e = ds_reader__evsel(inj->r, i);
		struct ds_attr a = e->attr;

		a.flags &= ~((1ULL << DS_ATTR_DEFER_CALLCHAIN) | (1ULL << DS_ATTR_DEFER_OUTPUT));
		if (inj->unwind && (a.sample_type & DS_SAMPLE_REGS_USER) && (a.sample_type & DS_SAMPLE_STACK_USER)) {
			/* the copies become classic chains: the user part is in the chain */
			a.sample_type &= ~(uint64_t)(DS_SAMPLE_REGS_USER | DS_SAMPLE_STACK_USER);
			a.sample_type |= DS_SAMPLE_CALLCHAIN;
			a.sample_regs_user = 0;
			a.sample_stack_user = 0;
			a.flags &= ~(1ULL << DS_ATTR_EXCLUDE_CALLCHAIN_USER);
		}
		a.size = 0;
		err = ds_writer__add_attr(inj->w, &a, ds_attr__min_size(&a), e->ids, e->nr_ids, e->name);
	}
	inj->nr_attrs = n;
	if (!err)
		err = copy_features(inj->w, ds_reader__info(inj->r));
	if (!err)
		err = copy_build_ids(inj);
	return err;
}

/* ---- records ------------------------------------------------------------ */

/*
 * The sample with @ips in place of its recorded callchain: the bytes
 * before the chain, the new chain, the bytes after.  Too long a chain for
 * one record loses its outermost frames.
 */
static int write_sample(struct inject *inj, const struct ds_event *ev, const uint64_t *ips, uint64_t nr)
{
	const uint8_t *rec = (const uint8_t *)ev->hdr;
	struct ds_sample orig;
	const char *why;

	if (ds_sample__parse(ev->evsel, ev->hdr, &orig, &why) || !orig.callchain)
		return -EINVAL; /* cannot happen: the session parsed it already */
	size_t before = (size_t)((const uint8_t *)orig.callchain - rec) - 8;
	size_t after = before + 8 + (size_t)orig.callchain_nr * 8;
	size_t tail = ev->hdr->size - after;
	size_t room = (MAX_RECORD_SIZE - before - 8 - tail) / 8;

	if (nr > room) {
		nr = room;
		inj->n.truncated++;
	}
	size_t size = before + 8 + (size_t)nr * 8 + tail;
	struct ds_event_header h = *ev->hdr;

	memcpy(inj->rec, rec, before);
	memcpy(inj->rec + before, &nr, 8);
	if (nr)   /* an empty chain's ips may be NULL */
		memcpy(inj->rec + before + 8, ips, (size_t)nr * 8);
	memcpy(inj->rec + before + 8 + nr * 8, rec + after, tail);
	h.size = (uint16_t)size;
	memcpy(inj->rec, &h, sizeof(h));
	return ds_writer__write(inj->w, inj->rec, size);
}

/*
 * The sample with @ips as its chain and without its user registers and
 * stack copy (dropped with their attr bits).  Only RAW may lie between the
 * chain and the registers here (a branch stack: the sample is kept as it
 * came, by the caller).
 */
static int write_unwound(struct inject *inj, const struct ds_event *ev, const uint64_t *ips, uint64_t nr)
{
	const uint8_t *rec = (const uint8_t *)ev->hdr;
	const struct ds_sample *s = &ev->sample;
	size_t before = (size_t)((const uint8_t *)s->callchain - rec) - 8;
	size_t after = before + 8 + (size_t)s->callchain_nr * 8, regs, rest;

	regs = s->raw ? (size_t)(((const uint8_t *)s->raw - rec) + s->raw_size + 7) / 8 * 8 : after;
	rest = regs + 8 + (s->regs_user_abi ? (size_t)ev->evsel->nr_regs_user * 8 : 0);
	rest += 8 + (s->stack_user_size ? (size_t)s->stack_user_size + 8 : 0);
	if (rest > ev->hdr->size || regs < after)
		return -EINVAL;   /* cannot be: the session parsed it */
	size_t mid = regs - after, tail = ev->hdr->size - rest;
	size_t room = (MAX_RECORD_SIZE - before - 8 - mid - tail) / 8;

	if (nr > room) {
		nr = room;
		inj->n.truncated++;
	}
	size_t size = before + 8 + (size_t)nr * 8 + mid + tail;
	struct ds_event_header h = *ev->hdr;
	uint8_t *o = inj->rec;

	memcpy(o, rec, before);
	memcpy(o + before, &nr, 8);
	memcpy(o + before + 8, ips, (size_t)nr * 8);
	memcpy(o + before + 8 + nr * 8, rec + after, mid);
	memcpy(o + before + 8 + nr * 8 + mid, rec + rest, tail);
	h.size = (uint16_t)size;
	memcpy(o, &h, sizeof(h));
	return ds_writer__write(inj->w, o, size);
}

static bool has_copy(const struct ds_evsel *e)
{
	uint64_t t = e->attr.sample_type;

	return (t & DS_SAMPLE_REGS_USER) && (t & DS_SAMPLE_STACK_USER);
}

/*
 * The entries of unwound chain @ips a kernel chain can hold: up to its
 * first unwound address that reads as a context marker (perf's
 * ffffffffffffffff frame of a 0 return address), which a reader of the
 * written chain would take for a bad marker and drop the chain for.
 */
static uint64_t unwound_entries(const uint64_t *ips, uint64_t nr)
{
	uint64_t i = 0;

	while (i < nr && ips[i] != DS_CONTEXT_USER)
		i++;
	for (i++; i < nr; i++)
		if (ips[i] >= DS_CONTEXT_MAX)
			return i;
	return nr;
}

static int inject_sample(struct inject *inj, const struct ds_event *ev)
{
	const struct ds_sample *s = &ev->sample;
	long m;

	inj->n.samples++;
	if (inj->unwind && has_copy(ev->evsel) && s->callchain && !(ev->evsel->attr.sample_type & DS_SAMPLE_BRANCH_STACK)) {
		struct ds_thread *t = ds_machine__thread(inj->machine, (int32_t)s->pid, (int32_t)s->tid);
		uint64_t nr = 0;
		const uint64_t *ips = t ? ds_user_unwind__chain(inj->uu, t, ev, 127, &nr) : NULL;

		if (ips) {
			nr = unwound_entries(ips, nr);
			inj->n.unwound++;
			if (ev->stitch != DS_STITCH_BEFORE && ev->stitch != DS_STITCH_AFTER &&
			    ds_callchain__deferred_marker(s->callchain, s->callchain_nr) >= 0)
				inj->n.unresolved++;
			return write_unwound(inj, ev, ips, nr);
		}
		if (ev->stitch == DS_STITCH_BEFORE || ev->stitch == DS_STITCH_AFTER) {
			inj->n.stitched++;
			return write_unwound(inj, ev, s->callchain, s->callchain_nr);
		}
		m = ds_callchain__deferred_marker(s->callchain, s->callchain_nr);
		if (m >= 0)
			inj->n.unresolved++;
		return write_unwound(inj, ev, s->callchain, m >= 0 ? (uint64_t)m : s->callchain_nr);
	}
	if (ev->stitch == DS_STITCH_BEFORE || ev->stitch == DS_STITCH_AFTER) {
		inj->n.stitched++;
		return write_sample(inj, ev, s->callchain, s->callchain_nr);
	}
	m = s->callchain ? ds_callchain__deferred_marker(s->callchain, s->callchain_nr) : -1;
	if (m < 0)
		return ds_writer__write(inj->w, ev->hdr, ev->hdr->size);
	/* unresolved: the kernel part only, without the marker and cookie */
	inj->n.unresolved++;
	if ((uint64_t)m + 2 == s->callchain_nr)
		return write_sample(inj, ev, s->callchain, (uint64_t)m);
	uint64_t ips[s->callchain_nr];
	uint64_t k = (uint64_t)m;

	memcpy(ips, s->callchain, k * 8);
	memcpy(ips + k, s->callchain + m + 2, (s->callchain_nr - k - 2) * 8);
	return write_sample(inj, ev, ips, s->callchain_nr - 2);
}

/* ---- --jit ---------------------------------------------------------------- */

/*
 * The sample_id_all trailer of a record of @ev's event for pid/tid at
 * @time, into @out: @ev's own fields (its event's id, cpu) but those.
 * Its size.
 */
static size_t jit_sample_id(const struct ds_event *ev, uint32_t pid, uint32_t tid, uint64_t time, uint8_t *out)
{
	uint64_t t = ev->evsel->attr.sample_type;
	const struct ds_sample *s = &ev->sample;
	size_t n = 0;

	if (!DS_ATTR_FLAG(&ev->evsel->attr, DS_ATTR_SAMPLE_ID_ALL))
		return 0;
	if (t & DS_SAMPLE_TID) {
		memcpy(out + n, &pid, 4);
		memcpy(out + n + 4, &tid, 4);
		n += 8;
	}
	if (t & DS_SAMPLE_TIME) {
		memcpy(out + n, &time, 8);
		n += 8;
	}
	if (t & DS_SAMPLE_ID) {
		memcpy(out + n, &s->id, 8);
		n += 8;
	}
	if (t & DS_SAMPLE_STREAM_ID) {
		memcpy(out + n, &s->stream_id, 8);
		n += 8;
	}
	if (t & DS_SAMPLE_CPU) {
		uint32_t cpu[2] = { s->has_cpu ? s->cpu : 0, 0 };

		memcpy(out + n, cpu, 8);
		n += 8;
	}
	if (t & DS_SAMPLE_IDENTIFIER) {
		memcpy(out + n, &s->id, 8);
		n += 8;
	}
	return n;
}

/*
 * The MMAP2 record perf inject --jit writes for code @c, its ELF file
 * @file (as the output names it; @written, where it lies here): user
 * misc, pgoff DS_JIT_TEXT_OFFSET, the file's device and inode, its mode
 * as prot and MAP_SHARED (perf's fields), at the code's timestamp.
 */
static int jit_write_mmap2(struct inject *inj, const struct ds_event *ev, uint32_t pid, const struct ds_jit_code *c,
			   const char *file, const char *written)
{
	uint8_t *r = inj->rec;
	size_t name = strlen(file) + 1, name_pad = (name + 7) & ~(size_t)7, size = 8 + 64 + name_pad;
	uint32_t tid = c->pid == pid ? c->tid : pid;
	struct stat st;

	if (size + 64 > MAX_RECORD_SIZE)
		return 0;   /* a name no record holds: (cannot be: the dump's directory is a recorded path) */
	if (stat(written, &st))
		memset(&st, 0, sizeof(st));
	memset(r, 0, size);
	uint32_t u32[2] = { pid, tid };
	uint64_t u64[3] = { c->addr, c->map_len, DS_JIT_TEXT_OFFSET };
	uint32_t dev[2] = { major(st.st_dev), minor(st.st_dev) };
	uint64_t ino[2] = { st.st_ino, 1 };
	uint32_t prot[2] = { st.st_mode, MAP_SHARED };

	memcpy(r + 8, u32, 8);
	memcpy(r + 16, u64, 24);
	memcpy(r + 40, dev, 8);
	memcpy(r + 48, ino, 16);
	memcpy(r + 64, prot, 8);
	memcpy(r + 72, file, name);
	size += jit_sample_id(ev, pid, tid, c->time, r + size);
	struct ds_event_header h = { .type = DS_REC_MMAP2, .misc = DS_MISC_USER, .size = (uint16_t)size };

	memcpy(r, &h, sizeof(h));
	return ds_writer__write(inj->w, r, size);
}

/*
 * The mmap @me of a jitdump, as perf inject --jit takes it: each code load
 * written as DIR/jitted-PID-INDEX.so (DIR the dump's directory: as
 * recorded in the records, under --symfs for the files) and mapped by an
 * MMAP2 at its time; a move maps its load's file anew.  The dump's own
 * mmap is not copied.  1 done, 0 not a dump that can be read (the record
 * is copied), or -errno of a failed write.
 */
static int jit_inject_dump(struct inject *inj, const struct ds_event *ev, const struct ds_mmap_event *me)
{
	char *path = NULL, file[4200], written[4200];
	struct ds_jitdump *jd;
	const char *slash = strrchr(me->filename, '/');
	int dir_len = slash ? (int)(slash - me->filename) : 1, wdir_len, err = 0;
	const char *dir = slash ? me->filename : ".";

	if (asprintf(&path, "%s%s", inj->symfs && slash ? inj->symfs : "", me->filename) < 0)
		return -ENOMEM;
	jd = ds_jitdump__open(path);
	if (!jd) {
		free(path);
		return -ENOMEM;
	}
	if (ds_jitdump__status(jd) && !inj->machine)   /* (a machine reading it says it itself) */
		fprintf(stderr, "dstack inject: %s\n", ds_errmsg());
	if (!ds_jitdump__nr_codes(jd)) {
		ds_jitdump__close(jd);
		free(path);
		return 0;
	}
	const char *wslash = strrchr(path, '/');

	wdir_len = wslash ? (int)(wslash - path) : 1;
	inj->jit_n.dumps++;
	for (size_t i = 0; !err && i < ds_jitdump__nr_codes(jd); i++) {
		const struct ds_jit_code *c = ds_jitdump__code(jd, i);
		uint8_t bid[20];

		snprintf(file, sizeof(file), "%.*s/jitted-%u-%llu.so", dir_len, dir, c->pid, (unsigned long long)c->index);
		snprintf(written, sizeof(written), "%.*s/jitted-%u-%llu.so", wdir_len, wslash ? path : ".", c->pid,
			 (unsigned long long)c->index);
		if (!c->move) {
			int werr = ds_jitdump__write_elf(jd, i, written, bid);

			if (werr) {
				if (!inj->jit_n.elf_failed++)
					fprintf(stderr, "dstack inject: %s: %s: its code keeps no symbol\n", written,
						strerror(-werr));
				continue;
			}
			err = ds_writer__add_build_id(inj->w, (int32_t)me->pid, DS_MISC_USER, bid, 20, file);
		}
		if (!err)
			err = jit_write_mmap2(inj, ev, me->pid, c, file, written);
		inj->jit_n.codes++;
	}
	ds_jitdump__close(jd);
	free(path);
	return err ? err : 1;
}

/* An MMAP/MMAP2 of a jitdump under --jit: injected (1), else 0, or -errno. */
static int jit_maybe(struct inject *inj, const struct ds_event *ev)
{
	struct ds_mmap_event me;
	const char *why;

	if ((ev->hdr->misc & DS_MISC_CPUMODE_MASK) != DS_MISC_USER || ds_mmap__parse(ev->evsel, ev->hdr, &me, &why) ||
	    !ds_jitdump__is_marker(me.filename, me.pid))
		return 0;
	return jit_inject_dump(inj, ev, &me);
}

/* A FINISHED_ROUND now and then lets perf flush its queue; only while times grow. */
static int maybe_round(struct inject *inj, const struct ds_event *ev)
{
	static const struct ds_event_header round = { .type = DS_REC_FINISHED_ROUND, .size = 8 };
	uint64_t t = ev->sample.time;

	if (t != DS_NO_TIME) {
		if (t < inj->last_time)
			inj->time_went_back = true;
		inj->last_time = t;
	}
	if (++inj->since_round < ROUND_RECORDS || inj->time_went_back)
		return 0;
	inj->since_round = 0;
	return ds_writer__write(inj->w, &round, sizeof(round));
}

static int on_event(void *ctx, const struct ds_event *ev)
{
	struct inject *inj = ctx;
	uint32_t type = ev->hdr->type;
	int err;

	if (!inj->set_up && (err = set_up(inj)))
		return err;
	progress_input_event(&inj->progress, ev);
	if (type == DS_REC_CALLCHAIN_DEFERRED) {
		inj->n.deferred_dropped++;
		return 0;
	}
	if (type > DS_REC_AUX_OUTPUT_HW_ID) { /* unknown to older perf */
		inj->n.other_dropped++;
		return 0;
	}
	if (!ev->evsel || (size_t)ev->evsel->idx >= inj->nr_attrs) {
		inj->n.unknown_evsel++;
		return 0;
	}
	/* (samples too: a jitdump's code is mapped at the first record of its time) */
	if (inj->machine && (err = ds_machine__process(inj->machine, ev)))
		return err;
	if (inj->jit && (type == DS_REC_MMAP || type == DS_REC_MMAP2) && (err = jit_maybe(inj, ev)))
		return err < 0 ? err : maybe_round(inj, ev);
	err = type == DS_REC_SAMPLE ? inject_sample(inj, ev)
				    : ds_writer__write(inj->w, ev->hdr, ev->hdr->size);
	return err ? err : maybe_round(inj, ev);
}

/* ---- command ------------------------------------------------------------ */

static bool same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	if (!strcmp(a, "-") || !strcmp(b, "-") || stat(a, &sa) || stat(b, &sb))
		return false;
	return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

static void print_summary(const struct inject *inj, const char *out)
{
	fprintf(stderr, "dstack inject: wrote %s: %llu samples, %llu stitched, %llu unresolved (kernel callchain only), "
		"%llu deferred records dropped\n", strcmp(out, "-") ? out : "stdout",
		(unsigned long long)inj->n.samples, (unsigned long long)inj->n.stitched,
		(unsigned long long)inj->n.unresolved, (unsigned long long)inj->n.deferred_dropped);
	if (inj->n.other_dropped)
		fprintf(stderr, "dstack inject: %llu records of types older perf does not know dropped\n",
			(unsigned long long)inj->n.other_dropped);
	if (inj->n.unknown_evsel)
		fprintf(stderr, "dstack inject: %llu records of events that appeared after the data dropped\n",
			(unsigned long long)inj->n.unknown_evsel);
	if (inj->n.truncated)
		fprintf(stderr, "dstack inject: %llu merged callchains too long for one record lost their outermost frames\n",
			(unsigned long long)inj->n.truncated);
}

static void inject_free(struct inject *inj)
{
	ds_user_unwind__delete(inj->uu);
	ds_machine__delete(inj->machine);
	ds_symbols__delete(inj->syms);
	free(inj);
}

/* Inputs with stack copies are unwound: the symbols, machine and user unwinder for it.  False when out of memory. */
static bool setup_unwinding(struct inject *inj, const struct common_opts *co)
{
	struct ds_symbols_opts so = { .symfs = co->symfs, .kallsyms = co->kallsyms, .no_inline = true };

	inj->syms = ds_symbols__new(&so);
	inj->machine = inj->syms ? ds_machine__new(inj->syms) : NULL;
	if (inj->machine)
		inj->uu = ds_user_unwind__new(inj->machine, inj->syms, ds_reader__info(inj->r), cli_buildid_dir());
	return inj->uu != NULL;
}

/*
 * After the session (@ret its result): what was read is written, even
 * when the input ended badly; errors said once (the writer's first: it
 * stopped the session), then the summary unless a write failed.  The exit
 * code.
 */
static int finish_output(struct inject *inj, struct ds_session *s, const char *out, int ret)
{
	bool failed, werr;
	int cret;

	if (!inj->set_up)
		set_up(inj);
	copy_build_ids(inj);
	werr = ds_writer__status(inj->w) < 0;   /* a write failed (it stopped the session) */
	if (inj->run_msg[0] && !werr)
		fprintf(stderr, "dstack inject: %s\n", inj->run_msg);
	failed = ret || ds_session__stats(s)->bad_records;
	if (werr)
		output_failed_as(ds_errmsg());   /* the writer's: it names the file and the error */
	cret = ds_writer__close(inj->w);
	inj->w = NULL;
	if (cret && !werr)
		output_failed(strcmp(out, "-") ? out : "stdout", -cret);
	if (werr || cret)
		return EXIT_OUTPUT;   /* no success line after a failed write */
	print_summary(inj, out);
	if (inj->jit)
		fprintf(stderr, "dstack inject: %llu jitdumps, %llu code records mapped by jitted ELF files\n",
			(unsigned long long)inj->jit_n.dumps, (unsigned long long)inj->jit_n.codes);
	if (inj->unwind)
		fprintf(stderr, "dstack inject: %llu samples unwound from their stack copies, the copies dropped\n",
			(unsigned long long)inj->n.unwound);
	return failed ? EXIT_INPUT : EXIT_OK;
}

static int run(struct ds_session *s, const char *out, const struct common_opts *co, bool jit)
{
	struct inject *inj = calloc(1, sizeof(*inj));
	struct ds_session_opts so = { 0 };
	int ret;

	if (!inj) {
		fprintf(stderr, "dstack inject: out of memory\n");
		return EXIT_INPUT;
	}
	inj->r = ds_session__reader(s);
	inj->jit = jit;
	inj->symfs = co->symfs;
	for (size_t i = 0; i < ds_reader__nr_evsels(inj->r); i++)
		inj->unwind |= has_copy(ds_reader__evsel(inj->r, i));
	if (inj->unwind && !setup_unwinding(inj, co)) {
		fprintf(stderr, "dstack inject: out of memory\n");
		inject_free(inj);
		return EXIT_INPUT;
	}
	inj->w = ds_writer__open(out, false);
	if (!inj->w) {
		fprintf(stderr, "dstack inject: %s\n", ds_errmsg());
		inject_free(inj);
		return EXIT_INPUT;
	}
	so.memory_budget = cli_memory_budget();
	progress_init_input(&inj->progress, "inject", inj->r);
	ret = ds_session__run(s, &so, on_event, inj);
	if (ret < 0)
		snprintf(inj->run_msg, sizeof(inj->run_msg), "%s", ds_errmsg());
	progress_done(&inj->progress);
	ret = finish_output(inj, s, out, ret);
	inject_free(inj);
	return ret;
}

int cmd_inject(int argc, char **argv)
{
	struct common_opts co = { .input = "-" };
	const char *out = "-", *v;
	bool merge = false, jit = false;

	for (int i = 1; i < argc; i++) {
		int c = common_opt(&co, argc, argv, &i);

		if (c < 0) {
			usage_error("inject", "option '%s' needs a value", argv[i]);
			return EXIT_USAGE;
		}
		if (c)
			continue;
		if ((v = opt_value("-o", argc, argv, &i)) || (v = opt_value("--output", argc, argv, &i))) {
			out = v;
			continue;
		}
		if (!strcmp(argv[i], "--merge")) {
			merge = true;
			continue;
		}
		if (!strcmp(argv[i], "--jit") || !strcmp(argv[i], "-j")) {
			jit = true;
			continue;
		}
		usage_error("inject", "unknown option '%s' (usage: dstack inject --merge|--jit [-i IN] [-o OUT])", argv[i]);
		return EXIT_USAGE;
	}
	if (!merge && !jit) {
		usage_error("inject", "nothing to do: give --merge or --jit (usage: dstack inject --merge|--jit [-i IN] [-o OUT])");
		return EXIT_USAGE;
	}
	if (!strcmp(out, "-") && isatty(STDOUT_FILENO)) {
		usage_error("inject", "will not write a perf.data stream to a terminal: give -o FILE or redirect stdout");
		return EXIT_USAGE;
	}
	if (same_file(co.input, out)) {
		usage_error("inject", "the output %s is the input: write to another file", out);
		return EXIT_USAGE;
	}
	struct ds_session *s = ds_session__open(co.input);

	if (!s) {
		fprintf(stderr, "dstack inject: %s\n", ds_errmsg());
		return EXIT_INPUT;
	}
	int ret = run(s, out, &co, jit);

	ds_session__close(s);
	return ret;
}
