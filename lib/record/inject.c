// SPDX-License-Identifier: MIT
/*
 * A recording rewritten for older perf (dstack/inject.h): the header
 * (attrs without the defer bits, at their smallest size; the features
 * dstack reads), samples with their merged or unwound chains in place of
 * the recorded one, jitdumps' code written as ELF files and mapped, a
 * FINISHED_ROUND now and then; everything through the caller's writer.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include "dstack/inject.h"
#include "dstack/jitdump.h"
#include "dstack/log.h"
#include "dstack/profile.h"
#include "util/error.h"

#define ROUND_RECORDS 65536
#define MAX_RECORD_SIZE 65528u  /* largest 8-byte multiple a u16 size holds */

struct ds_inject {
	const struct ds_reader *r;
	struct ds_writer *w;
	struct ds_inject_opts opts;
	bool set_up;
	size_t nr_attrs;               /* evsels given to the writer */
	size_t nr_build_ids;           /* build-ids of the input given to the writer */
	uint64_t last_time;
	bool time_went_back;           /* then no more FINISHED_ROUND: perf could reorder */
	uint64_t since_round;
	/* unwinding the stack copies (when an event has them) */
	struct ds_symbols *syms;
	struct ds_machine *machine;
	struct ds_user_unwind *uu;
	struct ds_inject_stats n;
	uint8_t rec[65536];            /* a rebuilt record */
};

static void warn(const struct ds_inject *inj, const char *msg)
{
	if (inj->opts.warn)
		inj->opts.warn(inj->opts.warn_ctx, msg);
	else
		ds_warn("%s", msg);
}

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
static int copy_build_ids(struct ds_inject *inj)
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
static int set_up(struct ds_inject *inj)
{
	size_t n = ds_reader__nr_evsels(inj->r);
	int err = 0;

	inj->set_up = true;
	for (size_t i = 0; !err && i < n; i++) {
		const struct ds_evsel *e = ds_reader__evsel(inj->r, i);
		struct ds_attr a = e->attr;

		a.flags &= ~((1ULL << DS_ATTR_DEFER_CALLCHAIN) | (1ULL << DS_ATTR_DEFER_OUTPUT));
		if (inj->n.unwinding && (a.sample_type & DS_SAMPLE_REGS_USER) && (a.sample_type & DS_SAMPLE_STACK_USER)) {
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
static int write_sample(struct ds_inject *inj, const struct ds_event *ev, const uint64_t *ips, uint64_t nr)
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
static int write_unwound(struct ds_inject *inj, const struct ds_event *ev, const uint64_t *ips, uint64_t nr)
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

static int inject_sample(struct ds_inject *inj, const struct ds_event *ev)
{
	const struct ds_sample *s = &ev->sample;
	long m;

	inj->n.samples++;
	if (inj->n.unwinding && has_copy(ev->evsel) && s->callchain && !(ev->evsel->attr.sample_type & DS_SAMPLE_BRANCH_STACK)) {
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
static int jit_write_mmap2(struct ds_inject *inj, const struct ds_event *ev, uint32_t pid, const struct ds_jit_code *c,
			   uint64_t time, const char *file, const char *written)
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
	size += jit_sample_id(ev, pid, tid, time, r + size);
	struct ds_event_header h = { .type = DS_REC_MMAP2, .misc = DS_MISC_USER, .size = (uint16_t)size };

	memcpy(r, &h, sizeof(h));
	return ds_writer__write(inj->w, r, size);
}

/*
 * The mmap @me of a jitdump, as perf inject --jit takes it: each code load
 * written as DIR/jitted-PID-INDEX.so (DIR the dump's directory: as
 * recorded in the records, under --symfs for the files) and mapped by an
 * MMAP2 at its time; a move maps its load's file anew.  TSC times are
 * converted by the recording's TIME_CONV; without one (where perf inject
 * injects nothing of the dump) they are the dump's mmap's, said once, as
 * ds_machine maps them.  The dump's own mmap is not copied.  1 done, 0
 * not a dump that can be read (the record is copied), or -errno of a
 * failed write.
 */
static int jit_inject_dump(struct ds_inject *inj, const struct ds_event *ev, const struct ds_mmap_event *me)
{
	char *path = NULL, file[4200], written[4200];
	struct ds_jitdump *jd;
	const char *slash = strrchr(me->filename, '/');
	int dir_len = slash ? (int)(slash - me->filename) : 1, wdir_len, err = 0;
	const char *dir = slash ? me->filename : ".";

	if (asprintf(&path, "%s%s", inj->opts.symfs && slash ? inj->opts.symfs : "", me->filename) < 0)
		return -ENOMEM;
	jd = ds_jitdump__open(path);
	if (!jd) {
		free(path);
		return -ENOMEM;
	}
	if (ds_jitdump__status(jd) && !inj->machine)   /* (a machine reading it says it itself) */
		warn(inj, ds_errmsg());
	if (!ds_jitdump__nr_codes(jd)) {
		ds_jitdump__close(jd);
		free(path);
		return 0;
	}
	const char *wslash = strrchr(path, '/');

	wdir_len = wslash ? (int)(wslash - path) : 1;
	inj->n.jit_dumps++;
	const struct ds_time_conv *tc = &ds_reader__info(inj->r)->time_conv;

	if (ds_jitdump__code_time(jd, 0, tc) == DS_NO_TIME && !inj->machine) {
		char msg[4400];

		snprintf(msg, sizeof(msg), "jitdump %s: its timestamps are the CPU's (TSC) and the recording has no TIME_CONV "
			 "to convert them: its code mapped from the dump's mmap on", path);
		warn(inj, msg);
	}
	for (size_t i = 0; !err && i < ds_jitdump__nr_codes(jd); i++) {
		const struct ds_jit_code *c = ds_jitdump__code(jd, i);
		uint64_t time = ds_jitdump__code_time(jd, i, tc);
		uint8_t bid[20];

		snprintf(file, sizeof(file), "%.*s/jitted-%u-%llu.so", dir_len, dir, c->pid, (unsigned long long)c->index);
		snprintf(written, sizeof(written), "%.*s/jitted-%u-%llu.so", wdir_len, wslash ? path : ".", c->pid,
			 (unsigned long long)c->index);
		if (!c->move) {
			int werr = ds_jitdump__write_elf(jd, i, written, bid);

			if (werr) {
				if (!inj->n.jit_elf_failed++) {
					char msg[4400];

					snprintf(msg, sizeof(msg), "%s: %s: its code keeps no symbol", written, strerror(-werr));
					warn(inj, msg);
				}
				continue;
			}
			err = ds_writer__add_build_id(inj->w, (int32_t)me->pid, DS_MISC_USER, bid, 20, file);
		}
		if (!err)
			err = jit_write_mmap2(inj, ev, me->pid, c, time == DS_NO_TIME ? ev->sample.time : time, file, written);
		inj->n.jit_codes++;
	}
	ds_jitdump__close(jd);
	free(path);
	return err ? err : 1;
}

/* An MMAP/MMAP2 of a jitdump under --jit: injected (1), else 0, or -errno. */
static int jit_maybe(struct ds_inject *inj, const struct ds_event *ev)
{
	struct ds_mmap_event me;
	const char *why;

	if ((ev->hdr->misc & DS_MISC_CPUMODE_MASK) != DS_MISC_USER || ds_mmap__parse(ev->evsel, ev->hdr, &me, &why) ||
	    !ds_jitdump__is_marker(me.filename, me.pid))
		return 0;
	return jit_inject_dump(inj, ev, &me);
}

/* A FINISHED_ROUND now and then lets perf flush its queue; only while times grow. */
static int maybe_round(struct ds_inject *inj, const struct ds_event *ev)
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

int ds_inject__event(struct ds_inject *inj, const struct ds_event *ev)
{
	uint32_t type = ev->hdr->type;
	int err;

	if (!inj->set_up && (err = set_up(inj)))
		return err;
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
	if (inj->opts.jit && (type == DS_REC_MMAP || type == DS_REC_MMAP2) && (err = jit_maybe(inj, ev)))
		return err < 0 ? err : maybe_round(inj, ev);
	err = type == DS_REC_SAMPLE ? inject_sample(inj, ev)
				    : ds_writer__write(inj->w, ev->hdr, ev->hdr->size);
	return err ? err : maybe_round(inj, ev);
}

void ds_inject__delete(struct ds_inject *inj)
{
	if (!inj)
		return;
	ds_user_unwind__delete(inj->uu);
	ds_machine__delete(inj->machine);
	ds_symbols__delete(inj->syms);
	free(inj);
}

/* Inputs with stack copies are unwound: the symbols, machine and user unwinder for it.  False when out of memory. */
static bool setup_unwinding(struct ds_inject *inj)
{
	struct ds_symbols_opts so = { .symfs = inj->opts.symfs, .kallsyms = inj->opts.kallsyms, .no_inline = true };

	inj->syms = ds_symbols__new(&so);
	inj->machine = inj->syms ? ds_machine__new(inj->syms) : NULL;
	if (inj->machine) {
		ds_machine__set_time_conv(inj->machine, &ds_reader__info(inj->r)->time_conv);
		inj->uu = ds_user_unwind__new(inj->machine, inj->syms, ds_reader__info(inj->r), inj->opts.buildid_dir);
	}
	return inj->uu != NULL;
}


struct ds_inject *ds_inject__new(const struct ds_reader *r, struct ds_writer *w, const struct ds_inject_opts *opts)
{
	struct ds_inject *inj = calloc(1, sizeof(*inj));

	if (!inj) {
		dsi_error(-ENOMEM, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	inj->r = r;
	inj->w = w;
	if (opts)
		memcpy(&inj->opts, opts, opts->sz && opts->sz < sizeof(inj->opts) ? opts->sz : sizeof(inj->opts));
	for (size_t i = 0; i < ds_reader__nr_evsels(r); i++)
		inj->n.unwinding |= has_copy(ds_reader__evsel(r, i));
	if (inj->n.unwinding && !setup_unwinding(inj)) {
		ds_inject__delete(inj);
		dsi_error(-ENOMEM, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	return inj;
}

int ds_inject__finish(struct ds_inject *inj)
{
	int err = inj->set_up ? 0 : set_up(inj);
	int berr = copy_build_ids(inj);

	return berr ? berr : err;
}

const struct ds_inject_stats *ds_inject__stats(const struct ds_inject *inj)
{
	return &inj->n;
}
