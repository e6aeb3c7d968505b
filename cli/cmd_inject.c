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
#include <sys/stat.h>
#include <unistd.h>
#include "cli.h"
#include "dstack/event.h"
#include "dstack/session.h"
#include "dstack/writer.h"
#include "util/outbuf.h"
#include "samples.h"

#define ROUND_RECORDS 65536
#define MAX_RECORD_SIZE 65528u  /* largest 8-byte multiple a u16 size holds */

struct inject {
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
	if (inj->machine && type != DS_REC_SAMPLE && (err = ds_machine__process(inj->machine, ev)))
		return err;
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
	werr = ds_writer__error(inj->w)[0] != 0;
	if (ds_session__error(s)[0] && !werr)
		fprintf(stderr, "dstack inject: %s\n", ds_session__error(s));
	failed = ret || ds_session__stats(s)->bad_records;
	if (werr)
		output_failed_as(ds_writer__error(inj->w));   /* it names the file and the error */
	cret = ds_writer__close(inj->w);
	if (cret && !werr)
		output_failed(strcmp(out, "-") ? out : "stdout", -cret);
	if (werr || cret)
		return EXIT_OUTPUT;   /* no success line after a failed write */
	print_summary(inj, out);
	if (inj->unwind)
		fprintf(stderr, "dstack inject: %llu samples unwound from their stack copies, the copies dropped\n",
			(unsigned long long)inj->n.unwound);
	return failed ? EXIT_INPUT : EXIT_OK;
}

static int run(struct ds_session *s, const char *out, const struct common_opts *co)
{
	struct inject *inj = calloc(1, sizeof(*inj));
	struct ds_session_opts so = { 0 };
	char *err = NULL;
	int ret;

	if (!inj) {
		fprintf(stderr, "dstack inject: out of memory\n");
		return EXIT_INPUT;
	}
	inj->r = ds_session__reader(s);
	for (size_t i = 0; i < ds_reader__nr_evsels(inj->r); i++)
		inj->unwind |= has_copy(ds_reader__evsel(inj->r, i));
	if (inj->unwind && !setup_unwinding(inj, co)) {
		fprintf(stderr, "dstack inject: out of memory\n");
		inject_free(inj);
		return EXIT_INPUT;
	}
	inj->w = ds_writer__open(out, false, &err);
	if (!inj->w) {
		fprintf(stderr, "dstack inject: %s\n", err ? err : strerror(errno));
		free(err);
		inject_free(inj);
		return EXIT_INPUT;
	}
	so.memory_budget = cli_memory_budget();
	progress_init_input(&inj->progress, "inject", inj->r);
	ret = ds_session__run(s, &so, on_event, inj);
	progress_done(&inj->progress);
	ret = finish_output(inj, s, out, ret);
	inject_free(inj);
	return ret;
}

int cmd_inject(int argc, char **argv)
{
	struct common_opts co = { .input = "-" };
	const char *out = "-", *v;
	bool merge = false;
	char *err = NULL;

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
		usage_error("inject", "unknown option '%s' (usage: dstack inject --merge [-i IN] [-o OUT])", argv[i]);
		return EXIT_USAGE;
	}
	if (!merge) {
		usage_error("inject", "nothing to do: --merge is the only mode (usage: dstack inject --merge [-i IN] [-o OUT])");
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
	struct ds_session *s = ds_session__open(co.input, &err);

	if (!s) {
		fprintf(stderr, "dstack inject: %s\n", err ? err : strerror(errno));
		free(err);
		return EXIT_INPUT;
	}
	int ret = run(s, out, &co);

	ds_session__close(s);
	return ret;
}
