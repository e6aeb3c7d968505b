// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dstack/log.h"
#include "samples.h"

struct walk {
	const struct walk_opts *o;
	struct ds_machine *machine;
	walk_fn fn;
	void *ctx;
};

static struct ds_stitch_stats last_stats;
static struct ds_header_info last_header;
static struct ds_session_stats last_session_stats;

const struct ds_stitch_stats *walk_last_stitch_stats(void) { return &last_stats; }
const struct ds_session_stats *walk_last_session_stats(void) { return &last_session_stats; }
const struct ds_header_info *walk_last_header(void) { return &last_header; }

void walk_opts_init(struct walk_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->common.input = "perf.data";
	o->filter.time_end = UINT64_MAX;
	o->max_stack = 127;
}

const char *walk_usage(void)
{
	return "  -i FILE|-            input (default perf.data)\n"
	       "  --symfs DIR          look binaries up under DIR\n"
	       "  --kallsyms FILE      kernel symbols (default /proc/kallsyms)\n"
	       "  --pid PID[,PID...]   only these processes\n"
	       "  --tid TID[,TID...]   only these threads\n"
	       "  --comm NAME[,...]    only these command names\n"
	       "  --time START,END     only samples in this time range (seconds, as perf script prints them;\n"
	       "                       either side may be empty)\n"
	       "  -C CPU[,CPU...]      only samples taken on these CPUs (N or N-M ranges)\n"
	       "  --max-stack N        at most N callchain entries (default 127)\n"
	       "  --no-inline          do not expand inlined functions\n"
	       "  --no-demangle        keep C++ names mangled\n";
}

static int parse_ids(const char *cmd, const char *opt, const char *v, int32_t *out, size_t *nr)
{
	char *end;

	while (*v) {
		long x = strtol(v, &end, 10);

		if (end == v || (*end && *end != ',') || *nr >= MAX_FILTER) {
			usage_error(cmd, "bad %s list '%s'", opt, v);
			return -1;
		}
		out[(*nr)++] = (int32_t)x;
		v = *end ? end + 1 : end;
	}
	return 1;
}

static int parse_time(const char *cmd, const char *v, uint64_t *ns)
{
	char *end;
	double d;

	if (!*v)
		return 0;
	d = strtod(v, &end);
	if (end == v || d < 0) {
		usage_error(cmd, "bad time '%s' (seconds, e.g. 18.75)", v);
		return -1;
	}
	*ns = (uint64_t)(d * 1e9 + 0.5);
	return 0;
}

static int parse_time_range(const char *cmd, const char *v, struct sample_filter *f)
{
	const char *comma = strchr(v, ',');
	char start[64];
	size_t n = comma ? (size_t)(comma - v) : strlen(v);

	if (n >= sizeof(start)) {
		usage_error(cmd, "bad --time '%s'", v);
		return -1;
	}
	memcpy(start, v, n);
	start[n] = 0;
	if (parse_time(cmd, start, &f->time_start) || (comma && parse_time(cmd, comma + 1, &f->time_end)))
		return -1;
	return 1;
}

static int parse_cpus(const char *cmd, const char *v, struct sample_filter *f)
{
	const char *p = v;
	char *end;

	memset(f->cpus, 0, sizeof(f->cpus));   /* a repeated -C replaces the list, as perf's */
	while (*p) {
		unsigned long a = strtoul(p, &end, 10), b = a;

		if (end != p && *end == '-') {
			p = end + 1;
			b = strtoul(p, &end, 10);
		}
		if (end == p || (*end && *end != ',') || a > b || b >= 64 * sizeof(f->cpus) / sizeof(*f->cpus)) {
			usage_error(cmd, "bad -C list '%s'", v);
			return -1;
		}
		for (unsigned long c = a; c <= b; c++)
			f->cpus[c / 64] |= 1ULL << (c % 64);
		p = *end ? end + 1 : end;
	}
	f->has_cpus = true;
	return 1;
}

/* A repeated --pid/--tid/--comm replaces the earlier list, as perf's options do. */
static int parse_comms(const char *cmd, char *v, struct sample_filter *f)
{
	f->nr_comms = 0;
	for (char *tok = strtok(v, ","); tok; tok = strtok(NULL, ",")) {
		if (f->nr_comms >= MAX_FILTER) {
			usage_error(cmd, "too many --comm names");
			return -1;
		}
		f->comms[f->nr_comms++] = tok;
	}
	return 1;
}

int walk_opt(struct walk_opts *o, const char *cmd, int argc, char **argv, int *i)
{
	const char *v;

	if (common_opt(&o->common, argc, argv, i))
		return 1;
	if ((v = opt_value("--pid", argc, argv, i))) {
		o->filter.nr_pids = 0;
		return parse_ids(cmd, "--pid", v, o->filter.pids, &o->filter.nr_pids);
	}
	if ((v = opt_value("--tid", argc, argv, i))) {
		o->filter.nr_tids = 0;
		return parse_ids(cmd, "--tid", v, o->filter.tids, &o->filter.nr_tids);
	}
	if ((v = opt_value("--comm", argc, argv, i)))
		return parse_comms(cmd, (char *)v, &o->filter);
	if ((v = opt_value("--time", argc, argv, i))) {
		o->filter.time_str = v;
		return parse_time_range(cmd, v, &o->filter);
	}
	if ((v = opt_value("-C", argc, argv, i)) || (v = opt_value("--cpu", argc, argv, i)))
		return parse_cpus(cmd, v, &o->filter);
	if ((v = opt_value("--max-stack", argc, argv, i))) {
		o->max_stack = (unsigned)strtoul(v, NULL, 0);
		return 1;
	}
	if (!strcmp(argv[*i], "--no-inline")) {
		o->no_inline = true;
		return 1;
	}
	if (!strcmp(argv[*i], "--no-demangle")) {
		o->no_demangle = true;
		return 1;
	}
	return 0;
}

static bool in_list(const int32_t *v, size_t n, int32_t x)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == x)
			return true;
	return false;
}

/* The sample is in the --time range and on a -C CPU (a sample without a CPU is on none). */
static bool in_range(const struct sample_filter *f, const struct ds_sample *s)
{
	if (s->time != DS_NO_TIME && (s->time < f->time_start || s->time > f->time_end))
		return false;
	return !f->has_cpus || (s->has_cpu && s->cpu < 64 * sizeof(f->cpus) / sizeof(*f->cpus) &&
				(f->cpus[s->cpu / 64] >> (s->cpu % 64) & 1));
}

static bool wanted(const struct sample_filter *f, const struct ds_sample *s, const char *comm)
{
	if (f->nr_pids && !in_list(f->pids, f->nr_pids, (int32_t)s->pid))
		return false;
	if (f->nr_tids && !in_list(f->tids, f->nr_tids, (int32_t)s->tid))
		return false;
	if (f->nr_comms) {
		size_t i;

		for (i = 0; i < f->nr_comms; i++)
			if (!strcmp(f->comms[i], comm))
				break;
		if (i == f->nr_comms)
			return false;
	}
	return true;
}

static int on_event(void *ctx, const struct ds_event *ev)
{
	struct walk *w = ctx;
	const struct ds_sample *s = &ev->sample;
	struct walk_sample ws = { .ev = ev, .evsel = ev->evsel };

	if (ev->hdr->type != DS_REC_SAMPLE || !ev->evsel)
		return 0;
	ws.thread = ds_machine__thread(w->machine, (int32_t)s->pid, (int32_t)s->tid);
	ws.machine = w->machine;
	if (!ws.thread)
		return -ENOMEM;
	/* a sample its deferred record completed: the comm when that record came, as perf (stitch.h) */
	ws.comm = ev->record_time ? ds_thread__comm_at(ws.thread, ev->record_time)
		: s->time == DS_NO_TIME ? ds_thread__comm(ws.thread) : ds_thread__comm_at(ws.thread, s->time);
	if (!in_range(&w->o->filter, s))
		return 0;
	ws.pid = (int32_t)s->pid;
	ws.tid = (int32_t)s->tid;
	if (ev->evsel->attr.sample_type & DS_SAMPLE_PERIOD)
		ws.period = s->period;
	else
		ws.period = DS_ATTR_FLAG(&ev->evsel->attr, DS_ATTR_FREQ) ? 1 : ev->evsel->attr.sample_period;
	if (!wanted(&w->o->filter, s, ws.comm)) {
		if (!w->o->keep_filtered)
			return 0;
		ws.filtered = true;
		return w->fn(w->ctx, &ws);
	}
	if (s->callchain) {
		ws.frames = ds_machine__callchain(w->machine, ws.thread, s->callchain, s->callchain_nr,
						  w->o->max_stack, &ws.nr_frames);
	} else if (ev->evsel->attr.sample_type & DS_SAMPLE_IP) {
		uint64_t ips[2] = { s->cpumode == DS_MISC_KERNEL ? DS_CONTEXT_KERNEL : DS_CONTEXT_USER, s->ip };

		ws.frames = ds_machine__callchain(w->machine, ws.thread, ips, 2, w->o->max_stack, &ws.nr_frames);
	}
	if (ws.frames) {
		ws.chain_id = ds_machine__callchain_id(w->machine);
		if (w->o->want_shapes) {
			size_t nr;

			ws.shape_id = ds_machine__callchain_shape(w->machine);
			ws.frame_ids = ds_machine__shape_frames(w->machine, ws.shape_id, &nr);
			if (nr != ws.nr_frames)
				ws.frame_ids = NULL;   /* cannot be: a shape is its chain's frames */
		}
	}
	return w->fn(w->ctx, &ws);
}

static int machine_sideband(void *ctx, const struct ds_event *ev)
{
	return ds_machine__process(ctx, ev);
}

/*
 * Kernel symbols will be looked up: the user named a kallsyms file, or an
 * event samples the kernel.  Their load then overlaps the reading.
 */
static bool wants_kernel(const struct ds_reader *rd, const struct ds_symbols_opts *so)
{
	if (so->kallsyms)
		return true;
	for (size_t i = 0; i < ds_reader__nr_evsels(rd); i++)
		if (!DS_ATTR_FLAG(&ds_reader__evsel(rd, i)->attr, DS_ATTR_EXCLUDE_KERNEL))
			return true;
	return false;
}

/*
 * Where dstack keeps what is worth keeping across runs (the check of a
 * kallsyms file): $DSTACK_CACHE_DIR (empty: nowhere), else
 * $XDG_CACHE_HOME/dstack, else $HOME/.cache/dstack; NULL for nowhere.
 */
static const char *cache_dir(void)
{
	static char buf[4096];
	const char *v = getenv("DSTACK_CACHE_DIR"), *base;
	int n;

	if (v)
		return *v ? v : NULL;
	if ((base = getenv("XDG_CACHE_HOME")) && *base == '/')
		n = snprintf(buf, sizeof(buf), "%s/dstack", base);
	else if ((base = getenv("HOME")) && *base == '/')
		n = snprintf(buf, sizeof(buf), "%s/.cache/dstack", base);
	else
		return NULL;
	return n > 0 && (size_t)n < sizeof(buf) ? buf : NULL;
}

int analysis_open(struct analysis *a, const char *cmd, const char *input, const struct ds_symbols_opts *opts)
{
	struct ds_symbols_opts with_cache = *opts;
	const struct ds_symbols_opts *so = &with_cache;
	char *err = NULL;

	if (!with_cache.cache_dir)
		with_cache.cache_dir = cache_dir();
	memset(a, 0, sizeof(*a));
	a->syms = ds_symbols__new(so);
	/* a kallsyms file named: its load overlaps setting up and opening the input too */
	if (a->syms && so->kallsyms)
		ds_symbols__preload_kernel(a->syms);
	a->machine = a->syms ? ds_machine__new(a->syms) : NULL;
	if (!a->machine) {
		fprintf(stderr, "dstack %s: out of memory\n", cmd);
		analysis_close(a);
		return EXIT_INPUT;
	}
	a->session = ds_session__open(input, &err);
	if (!a->session) {
		fprintf(stderr, "dstack %s: %s\n", cmd, err ? err : strerror(errno));
		free(err);
		analysis_close(a);
		return EXIT_INPUT;
	}
	/* build-ids recorded in the header let symbols reject a wrong binary */
	const struct ds_reader *rd = ds_session__reader(a->session);
	const struct ds_header_info *hi = ds_reader__info(rd);

	if (wants_kernel(rd, so))
		ds_symbols__preload_kernel(a->syms);   /* no-op if started above */

	a->listed = calloc(hi->nr_build_ids ? hi->nr_build_ids : 1, sizeof(*a->listed));
	for (size_t i = 0; i < hi->nr_build_ids; i++) {
		struct ds_dso *d;

		if (hi->build_ids[i].filename[0] != '/')
			continue;
		d = ds_symbols__dso(a->syms, hi->build_ids[i].filename, hi->build_ids[i].data, hi->build_ids[i].size);
		if (d && a->listed)
			a->listed[a->nr_listed++] = d;
	}
	return EXIT_OK;
}

/*
 * On the reading thread, a few rounds ahead of the samples: a binary an
 * MMAP names starts loading on the symbols' helper thread, so that its
 * first lookup finds it loaded (report on a 5 MB recording: the loads of
 * ld.so, libc and the workload were ~2 ms of this thread's time).
 */
static void prefetch_mapped(void *ctx, const struct ds_evsel *evsel, const struct ds_event_header *hdr)
{
	struct analysis *a = ctx;
	struct ds_mmap_event me;
	const char *why;

	if ((hdr->type != DS_REC_MMAP && hdr->type != DS_REC_MMAP2) ||
	    (hdr->misc & DS_MISC_CPUMODE_MASK) == DS_MISC_KERNEL || (hdr->misc & DS_MISC_MMAP_DATA) ||
	    ds_mmap__parse(evsel, hdr, &me, &why))
		return;
	if (!strncmp(me.filename, "//", 2) || !strncmp(me.filename, "/memfd:", 7) || !strncmp(me.filename, "/dev/", 5))
		return;   /* anonymous and device memory: nothing to load */
	ds_symbols__prefetch(a->syms, me.filename);
}

int analysis_run(struct analysis *a, const char *cmd, struct ds_session_opts *sopts, ds_event_fn fn, void *ctx)
{
	int ret;

	sopts->sideband = machine_sideband;
	sopts->sideband_ctx = a->machine;
	sopts->reader_thread = !getenv("DSTACK_ONE_THREAD");
	if (!a->no_preload) {   /* filtered samples may need few of the binaries */
		for (size_t i = 0; i < a->nr_listed; i++)
			ds_symbols__prefetch(a->syms, ds_dso__path(a->listed[i]));
		sopts->peek = prefetch_mapped;
		sopts->peek_ctx = a;
	}
	ret = ds_session__run(a->session, sopts, fn, ctx);
	if (ret && ret != -EPIPE) {
		const char *msg = ds_session__error(a->session);

		fprintf(stderr, "dstack %s: %s\n", cmd, *msg ? msg : strerror(-ret));
	}
	if (!ret && ds_session__stats(a->session)->bad_records)
		ret = -EINVAL; /* records were skipped: say so in the exit status */
	return ret ? EXIT_INPUT : EXIT_OK;
}

void analysis_close(struct analysis *a)
{
	ds_machine__delete(a->machine);
	ds_symbols__delete(a->syms);
	ds_session__close(a->session);
	free(a->listed);
	memset(a, 0, sizeof(*a));
}

#ifndef DSTACK_TIDY_EXIT
/* what analysis_finish() leaves to the exit: global, so it stays reachable (valgrind) */
struct analysis analysis_left_to_exit;
#endif

void analysis_finish(struct analysis *a)
{
#ifdef DSTACK_TIDY_EXIT
	analysis_close(a);
#else
	analysis_left_to_exit = *a;
	memset(a, 0, sizeof(*a));
#endif
}

/* Some event records the CPU of its samples. */
static bool sample_cpus(const struct ds_reader *rd)
{
	for (size_t i = 0; i < ds_reader__nr_evsels(rd); i++)
		if (ds_reader__evsel(rd, i)->attr.sample_type & DS_SAMPLE_CPU)
			return true;
	return false;
}

int walk_samples(const char *cmd, const struct walk_opts *o, walk_fn fn, void *ctx)
{
	struct ds_symbols_opts so = { .symfs = o->common.symfs, .kallsyms = o->common.kallsyms,
				      .no_inline = o->no_inline, .no_demangle = o->no_demangle };
	struct walk w = { .o = o, .fn = fn, .ctx = ctx };
	struct ds_session_opts sopts = { 0 };
	struct analysis a;
	int ret = analysis_open(&a, cmd, o->common.input, &so);

	if (ret)
		return ret;
	if (o->filter.has_cpus && !sample_cpus(ds_session__reader(a.session))) {
		/* perf refuses the same way: nothing could pass the filter */
		fprintf(stderr, "dstack %s: the file does not contain CPU events: remove -C\n", cmd);
		analysis_close(&a);
		return EXIT_INPUT;
	}
	a.no_preload = o->filter.nr_pids || o->filter.nr_tids || o->filter.nr_comms ||
		       o->filter.time_start || o->filter.time_end != UINT64_MAX || o->filter.has_cpus;
	w.machine = a.machine;
	ret = analysis_run(&a, cmd, &sopts, on_event, &w);
	if (ds_session__stitch_stats(a.session))
		last_stats = *ds_session__stitch_stats(a.session);
	last_session_stats = *ds_session__stats(a.session);
	last_header = *ds_reader__info(ds_session__reader(a.session));
	/* shallow copy: the strings and build-ids die with the session */
	last_header.hostname = last_header.osrelease = last_header.version = NULL;
	last_header.arch = last_header.cpudesc = last_header.cpuid = last_header.cmdline = NULL;
	last_header.build_ids = NULL;
	last_header.nr_build_ids = 0;
	if (o->at_end)
		o->at_end(ctx, ret);
	analysis_finish(&a);
	return ret;
}
