// SPDX-License-Identifier: MIT
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/outbuf.h"
#include "samples.h"
#include "dstack/debuginfod.h"

void walk_opts_init(struct walk_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->common.input = "perf.data";
	o->max_stack = 127;
}

const char *walk_usage(void)
{
	return "  -i FILE|-            input (default perf.data)\n"
	       "  --symfs DIR          look binaries up under DIR\n"
	       "  --kallsyms FILE      kernel symbols (default /proc/kallsyms, for the running kernel)\n"
	       "  --pid PID[,PID...]   only these processes\n"
	       "  --tid TID[,TID...]   only these threads\n"
	       "  --comm, --comms, -c NAME[,...]  only these command names\n"
	       "  -C, --cpu LIST       only samples on these CPUs (0-3,6)\n"
	       "  --time START,END     only samples in this time range (seconds, as perf script prints them;\n"
	       "                       either side may be empty; several ranges separated by spaces;\n"
	       "                       percent slices: 10%/2, 0%-10%,30%-40%, 10%)\n"
	       "  --max-stack N        at most N callchain entries (default 127)\n"
	       "  --no-inline          do not expand inlined functions\n"
	       "  --no-demangle        keep C++ names mangled\n"
	       "  --off-cpu            off-CPU time (ns) of sched:sched_switch samples, by stack and wait state\n"
	       "  --wall               off-CPU time and on-CPU samples (by period: use cpu-clock) together\n";
}

/* a list option given again replaces the earlier list, as perf's options do */
static int parse_ids(const char *cmd, const char *opt, const char *v, int32_t *out, size_t *nr)
{
	char *end;

	*nr = 0;
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

/*
 * perf's "SEC[.NSEC]": at most nine decimals, read exactly (no float);
 * empty: 0 (open).  0, or -1 if it is not such a number.
 */
static int parse_seconds(const char *s, size_t n, uint64_t *ns)
{
	uint64_t sec = 0, frac = 0;
	size_t i = 0, digits = 0;

	*ns = 0;
	if (!n)
		return 0;
	for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
		if (sec > UINT64_MAX / 10 / 1000000000ULL)
			return -1;
		sec = sec * 10 + (uint64_t)(s[i] - '0');
	}
	if (i < n && s[i] == '.') {
		for (i++; i < n && s[i] >= '0' && s[i] <= '9'; i++, digits++)
			frac = frac * 10 + (uint64_t)(s[i] - '0');
		if (digits > 9)
			return -1;
		for (; digits < 9; digits++)
			frac *= 10;
	}
	if (i != n || (n == 1 && s[0] == '.'))
		return -1;
	*ns = sec * 1000000000ULL + frac;
	return 0;
}

/* "START,END" (either may be empty) */
static int parse_range(const char *s, size_t n, uint64_t *start, uint64_t *end)
{
	const char *comma = memchr(s, ',', n);

	if (!comma)
		return -1;
	return parse_seconds(s, (size_t)(comma - s), start) ||
	       parse_seconds(comma + 1, n - (size_t)(comma - s) - 1, end) || (*end && *start > *end) ? -1 : 0;
}

/* "P%" as a fraction (what follows the first '%' is ignored, as perf does); -1 if not a number */
static int parse_percent(const char *s, size_t n, double *p)
{
	const char *pc = memchr(s, '%', n);
	char buf[32], *e;

	if (!pc || pc == s || (size_t)(pc - s) >= sizeof(buf))
		return -1;
	memcpy(buf, s, (size_t)(pc - s));
	buf[pc - s] = 0;
	*p = strtod(buf, &e) / 100;
	return *e ? -1 : 0;
}

/*
 * The slice from fraction @a to @b of the time between the first and the
 * last sample, as perf sets it: both in [0, 1], rounded to the nanosecond,
 * the end one before the next slice's start (but at the last sample).
 */
static int percent_slice(double a, double b, uint64_t first, uint64_t last, uint64_t *start, uint64_t *end)
{
	double total = (double)(last - first);

	if (!(a >= 0 && a <= 1 && b >= 0 && b <= 1))
		return -1;
	*start = first + (uint64_t)llround(a * total);
	*end = first + (uint64_t)llround(b * total);
	if (*end > *start && *end != last)
		(*end)--;
	return 0;
}

/* One percent item of the form @form: '/' "P%/N" (the Nth slice of P%), '-' "A%-B%". */
static int parse_percent_item(const char *s, size_t n, char form, uint64_t first, uint64_t last, uint64_t *start,
			      uint64_t *end)
{
	const char *sep = memchr(s, form, n);
	double a, b;

	if (!sep)
		return -1;
	if (form == '/') {
		char num[24], *e;
		long k;

		if (parse_percent(s, (size_t)(sep - s), &a) || a <= 0 || n - (size_t)(sep - s) - 1 >= sizeof(num))
			return -1;
		memcpy(num, sep + 1, n - (size_t)(sep - s) - 1);
		num[n - (size_t)(sep - s) - 1] = 0;
		k = strtol(num, &e, 10);
		if (*e)
			return -1;
		return percent_slice(a * (double)(k - 1), a * (double)k, first, last, start, end);
	}
	if (parse_percent(s, (size_t)(sep - s), &a) || parse_percent(sep + 1, n - (size_t)(sep - s) - 1, &b))
		return -1;
	return percent_slice(a, b, first, last, start, end);
}

/*
 * --time START,END ranges, split the way perf splits them: as many ranges
 * as commas; each range's END is the word after its comma (spaces after
 * the comma skipped), which may hold no comma; the next range starts after
 * the space that ends it.  Ranges come in order: each ends before the next
 * starts (compared as written, an open end being 0, as perf compares).
 */
static int parse_time_ranges(struct sample_filter *f, const char *v)
{
	size_t commas = 0;
	const char *p = v;

	for (const char *c = v; *c; c++)
		commas += *c == ',';
	if (!commas || commas > MAX_FILTER)
		return -1;
	for (size_t i = 0; i < commas; i++) {
		const char *arg = p, *end;

		if (i + 1 < commas) {
			for (p = strchr(p, ',') + 1; isspace((unsigned char)*p); p++)
				;
			for (; *p && !isspace((unsigned char)*p); p++)
				if (*p == ',')
					return -1;
			end = p;
			p += *p != 0;
		} else {
			end = arg + strlen(arg);
		}
		while (arg < end && isspace((unsigned char)*arg))
			arg++;
		if (parse_range(arg, (size_t)(end - arg), &f->times[i].start, &f->times[i].end))
			return -1;
		f->nr_times = i + 1;
	}
	for (size_t i = 0; i + 1 < f->nr_times; i++)
		if (f->times[i].end >= f->times[i + 1].start)
			return -1;
	return 0;
}

/* "P%": the first slice of P% */
static int percent_slice_one(const char *v, uint64_t first, uint64_t last, struct sample_filter *f)
{
	double p;

	if (parse_percent(v, strlen(v), &p) || p <= 0 || percent_slice(0, p, first, last, &f->times[0].start,
								  &f->times[0].end))
		return -1;
	f->nr_times = 1;
	return 0;
}

/*
 * --time percent items, of the time from @first to @last, read as perf
 * reads them: with a '/' anywhere, every comma-separated item is "P%/N";
 * else with a '-', every one "A%-B%"; else the whole is one "P%" (its
 * only '%' last), the first slice of P%.
 */
static int parse_time_percents(struct sample_filter *f, const char *v, uint64_t first, uint64_t last)
{
	char form = strchr(v, '/') ? '/' : strchr(v, '-') ? '-' : 0;

	if (!form) {
		if (strchr(v, '%') != v + strlen(v) - 1 || percent_slice_one(v, first, last, f))
			return -1;
		return 0;
	}
	while (*v) {
		const char *e = strchr(v, ',');
		size_t n = e ? (size_t)(e - v) : strlen(v);

		if (!n || f->nr_times >= MAX_FILTER)
			return -1;   /* perf takes no empty item, nor doubled or trailing separators */
		if (parse_percent_item(v, n, form, first, last, &f->times[f->nr_times].start,
				       &f->times[f->nr_times].end))
			return -1;
		f->nr_times++;
		v += n + (e != NULL);
	}
	return f->nr_times ? 0 : -1;
}

/* --time: START,END ranges, or percent items.  @first/@last: the recording's sample times (percent only). */
static int parse_times(struct sample_filter *f, const char *v, uint64_t first, uint64_t last)
{
	f->nr_times = 0;
	return strchr(v, '%') ? parse_time_percents(f, v, first, last) : parse_time_ranges(f, v);
}

static int parse_time_opt(const char *cmd, const char *v, struct sample_filter *f)
{
	/* percent slices need the recording: checked for their syntax now, computed later */
	if (parse_times(f, v, 0, strchr(v, '%') ? 1000000000ULL : 0)) {
		usage_error(cmd, "bad --time '%s' (START,END in seconds, as perf script prints them, either side "
				 "empty; several ranges separated by spaces; or percent: 10%%/2, 0%%-10%%,30%%-40%%, 10%%)", v);
		return -1;
	}
	f->time_str = v;
	return 1;
}

/* perf's CPU lists: "0-3,6" */
static int parse_cpus(const char *cmd, const char *v, struct sample_filter *f)
{
	const char *p = v;

	memset(f->cpus, 0, sizeof(f->cpus));
	while (*p) {
		char *e;
		unsigned long a = strtoul(p, &e, 10), b = a;

		if (e == p)
			goto bad;
		if (*e == '-') {
			p = e + 1;
			b = strtoul(p, &e, 10);
			if (e == p)
				goto bad;
		}
		if (a > b || b >= MAX_FILTER_CPUS || (*e && *e != ','))
			goto bad;
		for (unsigned long c = a; c <= b; c++)
			f->cpus[c / 64] |= 1ULL << (c % 64);
		p = *e ? e + 1 : e;
	}
	f->by_cpu = true;
	return 1;
bad:
	usage_error(cmd, "bad CPU list '%s' (like 0-3,6; CPUs below %d)", v, MAX_FILTER_CPUS);
	return -1;
}

bool sample_filter_active(const struct sample_filter *f)
{
	return f->nr_pids || f->nr_tids || f->nr_comms || f->time_str || f->by_cpu;
}

int sample_filter_prepare(struct sample_filter *f, const char *cmd, const struct ds_reader *rd)
{
	const struct ds_header_info *hi = ds_reader__info(rd);

	if (f->by_cpu) {
		/* perf's rule (perf_session__cpu_bitmap): the first event of each type samples the CPU */
		bool seen[6] = { false }, all = true;   /* by type, up to PERF_TYPE_MAX: those perf asks */

		for (size_t i = 0; i < ds_reader__nr_evsels(rd); i++) {
			const struct ds_evsel *e = ds_reader__evsel(rd, i);

			if (e->attr.type >= sizeof(seen) / sizeof(*seen) || seen[e->attr.type])
				continue;
			seen[e->attr.type] = true;
			all = all && (e->attr.sample_type & DS_SAMPLE_CPU);
		}
		if (!all) {
			fprintf(stderr, "dstack %s: File does not contain CPU events. Remove -C option to proceed.\n", cmd);
			return -1;
		}
		/* perf takes CPUs up to the recording's count (none known in a pipe) */
		for (size_t c = 0; c < MAX_FILTER_CPUS; c++)
			if ((f->cpus[c / 64] >> (c % 64) & 1) && c >= hi->nr_cpus_avail) {
				fprintf(stderr, "dstack %s: -C: CPU %zu is not one of the recording's %u CPUs%s\n", cmd, c,
					hi->nr_cpus_avail, hi->pipe ? " (a pipe-mode recording does not say how many)" : "");
				return -1;
			}
	}
	if (f->time_str && strchr(f->time_str, '%')) {
		if (!hi->last_sample_time) {
			fprintf(stderr, "dstack %s: --time %s: the recording does not say its first and last sample "
					"times (no HEADER_SAMPLE_TIME): percent ranges need them\n", cmd, f->time_str);
			return -1;
		}
		if (parse_times(f, f->time_str, hi->first_sample_time, hi->last_sample_time)) {
			fprintf(stderr, "dstack %s: bad --time '%s'\n", cmd, f->time_str);
			return -1;
		}
	}
	return 0;
}

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
	if ((v = opt_value("--pid", argc, argv, i)))
		return parse_ids(cmd, "--pid", v, o->filter.pids, &o->filter.nr_pids);
	if ((v = opt_value("--tid", argc, argv, i)))
		return parse_ids(cmd, "--tid", v, o->filter.tids, &o->filter.nr_tids);
	/* perf's report and script spell it --comms (-c); --comm, a prefix, is one to perf too */
	if ((v = opt_value("--comm", argc, argv, i)) || (v = opt_value("--comms", argc, argv, i)) ||
	    (v = opt_value("-c", argc, argv, i)))
		return parse_comms(cmd, (char *)v, &o->filter);
	if ((v = opt_value("--time", argc, argv, i)))
		return parse_time_opt(cmd, v, &o->filter);
	if ((v = opt_value("-C", argc, argv, i)) || (v = opt_value("--cpu", argc, argv, i)))
		return parse_cpus(cmd, v, &o->filter);
	if (!strcmp(argv[*i], "--off-cpu") || !strcmp(argv[*i], "--wall")) {
		o->time_mode = argv[*i][2] == 'o' ? WALK_OFFCPU : WALK_WALL;
		return 1;
	}
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

/*
 * perf's perf_time__ranges_skip_sample(): one range bounds, several are a
 * union.  A sample without a time is perf's time -1, past any range's end
 * (only a time of 0 passes every filter).
 */
static bool time_wanted(const struct sample_filter *f, uint64_t t)
{
	if (!f->nr_times || !t)
		return true;
	if (f->nr_times == 1)
		return !((f->times[0].start && t < f->times[0].start) || (f->times[0].end && t > f->times[0].end));
	for (size_t i = 0; i < f->nr_times; i++)
		if (t >= f->times[i].start && (t <= f->times[i].end || !f->times[i].end))
			return true;
	return false;
}

bool sample_filter_cpu(const struct sample_filter *f, const struct ds_sample *s)
{
	return !(f->by_cpu && s->has_cpu && s->cpu != (uint32_t)-1 &&
		 (s->cpu >= MAX_FILTER_CPUS || !(f->cpus[s->cpu / 64] >> (s->cpu % 64) & 1)));
}

bool sample_filter_time_cpu(const struct sample_filter *f, const struct ds_sample *s)
{
	return time_wanted(f, s->time) && sample_filter_cpu(f, s);
}

bool sample_filter_wanted(const struct sample_filter *f, const struct ds_sample *s, const char *comm)
{
	return sample_filter_time_cpu(f, s) && sample_filter_thread(f, s, comm);
}

bool sample_filter_thread(const struct sample_filter *f, const struct ds_sample *s, const char *comm)
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

/*
 * debuginfod (ds_symbols_opts.debuginfod): one line per binary asked,
 * whatever came of it, always (as perf says nothing, a stripped binary's
 * [unknown] frames would not say why).
 */
/* Whether the binary @path of build-id @id was said already in this run (diff reads two inputs). */
static bool debuginfod_said(const char *path, const char *id)
{
	static char **said;
	static size_t n, cap;
	char *key;

	if (asprintf(&key, "%s %s", id, path) < 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!strcmp(said[i], key)) {
			free(key);
			return true;
		}
	if (n == cap) {
		char **grown = realloc(said, (cap ? 2 * cap : 16) * sizeof(*said));

		if (!grown) {
			free(key);
			return false;
		}
		said = grown;
		cap = cap ? 2 * cap : 16;
	}
	said[n++] = key;   /* kept to the exit */
	return false;
}

static void debuginfod_done(void *ctx, const struct ds_debuginfod_req *r)
{
	const struct walk *w = ctx;
	char id[2 * 64 + 1];

	for (size_t k = 0; k < r->bid_len; k++)
		snprintf(id + 2 * k, 3, "%02x", r->build_id[k]);
	id[2 * r->bid_len] = 0;
	if (debuginfod_said(r->path, id))
		return;
	switch (r->result) {
	case DS_DI_FETCHED:
	case DS_DI_CACHED:
		fprintf(stderr, "dstack %s: debuginfod: %s: debug file %s (%llu KiB, build-id %s)\n", w->cmd, r->path,
			r->result == DS_DI_FETCHED ? "fetched" : "from the cache",
			(unsigned long long)(r->size + 1023) / 1024, id);
		break;
	case DS_DI_NOT_FOUND:
		fprintf(stderr, "dstack %s: debuginfod: %s: build-id %s unknown to the servers\n", w->cmd, r->path, id);
		break;
	case DS_DI_FAILED:
		fprintf(stderr, "dstack %s: debuginfod: %s: build-id %s: %s\n", w->cmd, r->path, id, r->why);
		break;
	case DS_DI_NOT_ASKED:
		break;
	}
}

/*
 * The debuginfod lookup's options into @o: the servers (cli_debuginfod_urls),
 * libdebuginfod's cache and $DEBUGINFOD_TIMEOUT, read here for the library;
 * false when it is off (--debuginfod with no server is said).
 */
static bool debuginfod_opts(const char *cmd, struct ds_debuginfod_opts *o)
{
	const char *urls = cli_debuginfod_urls(), *t = getenv("DEBUGINFOD_TIMEOUT");

	if (!urls) {
		if (cli_debuginfod)
			fprintf(stderr, "dstack %s: --debuginfod: no server: name one (--debuginfod=URL) or set DEBUGINFOD_URLS\n",
				cmd);
		return false;
	}
	*o = (struct ds_debuginfod_opts){ .urls = urls, .cache_dir = cli_debuginfod_cache(), .path = getenv("PATH"),
					  .timeout_s = t ? (unsigned)strtoul(t, NULL, 10) : 0 };
	return true;
}

/* -C, --time: dropped; --pid, --tid, --comm: hidden (report counts them) */
static enum ds_profile_verdict walk_filter(void *ctx, const struct ds_sample *s, const char *comm)
{
	const struct walk *w = ctx;

	if (!sample_filter_time_cpu(&w->filter, s))
		return DS_PROFILE_DROP;
	return sample_filter_thread(&w->filter, s, comm) ? DS_PROFILE_KEEP : DS_PROFILE_HIDE;
}

static void walk_progress(void *ctx, uint64_t bytes, bool sample)
{
	struct walk *w = ctx;

	if (bytes == DS_PROFILE_READ_DONE)
		progress_done(&w->progress);
	else
		progress_event(&w->progress, bytes, sample);
}

/* a failed output was reported where it failed; -ECANCELED: the callback said why already */
static void walk_error(void *ctx, int err, const char *msg)
{
	const struct walk *w = ctx;

	if (!output_error() && err != -ECANCELED)
		fprintf(stderr, "dstack %s: %s\n", w->cmd, msg);
}

int walk_open(struct walk *w, const char *cmd, const struct walk_opts *o)
{
	bool filtering = sample_filter_active(&o->filter);
	struct ds_debuginfod_opts di;
	bool di_on = debuginfod_opts(cmd, &di);
	struct ds_profile_opts po = {
		.symbols = { .symfs = o->common.symfs, .kallsyms = o->common.kallsyms, .no_inline = o->no_inline,
			     .no_demangle = o->no_demangle,
			     .debuginfod_cache = di_on ? di.cache_dir : NULL,
			     .debuginfod = di_on ? &di : NULL, .debuginfod_done = debuginfod_done,
			     .debuginfod_ctx = w },
		.max_stack = o->max_stack,
		.no_frames = !o->max_stack,
		.time_mode = o->time_mode,
		.script_comms = o->script_comms,
		.transient_comms = o->transient_comms,
		.want_shapes = o->want_shapes,
		.max_stack_from_root = o->max_stack_from_root,
		.keep_filtered = o->keep_filtered,
		.no_stitch = o->no_stitch,
		.perf_order = o->perf_order,
		.one_thread = getenv("DSTACK_ONE_THREAD") != NULL,
		.no_preload = filtering,   /* filtered samples may need few of the binaries */
		.buildid_dir = cli_buildid_dir(),
		.memory_budget = cli_memory_budget(),
		.hook_ctx = w,
		.filter = filtering ? walk_filter : NULL,
		.error = walk_error,
	};

	memset(w, 0, sizeof(*w));
	w->cmd = cmd;
	w->symfs = o->common.symfs;
	w->filter = o->filter;
	progress_init(&w->progress, cmd, 0);   /* whether it is shown; set up for the run by progress_start() */
	if (w->progress.on)
		po.progress = walk_progress;
	w->profile = ds_profile__open(o->common.input, &po);
	if (!w->profile)
		return EXIT_INPUT;
	if (sample_filter_prepare(&w->filter, cmd, ds_profile__reader(w->profile))) {
		walk_finish(w);
		return EXIT_USAGE;
	}
	return EXIT_OK;
}

/* The run's exit status (records skipped as corrupt: said in it). */
static int walk_status(struct walk *w, int ret)
{
	struct ds_profile_stats st;

	if (!ret) {
		ds_profile__stats(w->profile, &st);
		if (st.session.bad_records)
			ret = -EINVAL;
	}
	return ret ? EXIT_INPUT : EXIT_OK;
}

static void progress_start(struct walk *w)
{
	progress_init_input(&w->progress, w->cmd, ds_profile__reader(w->profile));
}

int walk_run(struct walk *w, ds_profile_sample_fn fn, void *ctx)
{
	progress_start(w);
	return walk_status(w, ds_profile__for_each_sample(w->profile, fn, ctx));
}

int walk_run_events(struct walk *w, ds_event_fn fn, void *ctx)
{
	progress_start(w);
	return walk_status(w, ds_profile__for_each_event(w->profile, fn, ctx));
}

#ifndef DSTACK_TIDY_EXIT
/* what walk_finish() leaves to the exit: global, so it stays reachable (valgrind) */
struct ds_profile *walk_left_to_exit;
#endif

void walk_finish(struct walk *w)
{
#ifdef DSTACK_TIDY_EXIT
	ds_profile__close(w->profile);
#else
	walk_left_to_exit = w->profile;
#endif
	w->profile = NULL;
}

int walk_samples(const char *cmd, const struct walk_opts *o, ds_profile_sample_fn fn, void *ctx)
{
	struct walk w;
	int ret = walk_open(&w, cmd, o);

	if (ret)
		return ret;
	ret = walk_run(&w, fn, ctx);
	walk_finish(&w);
	return ret;
}

const char *walk_trace_text(struct ds_profile *p, const struct ds_event *ev, struct ds_thread *t, char *buf,
			    size_t cap, size_t *len, char **big)
{
	*big = NULL;
	*len = ds_profile__tracepoint_text(p, ev, t, buf, cap);
	if (*len < cap)
		return buf;
	if (!(*big = malloc(*len + 1)))   /* a long text (a big array): once more, whole */
		return NULL;
	ds_profile__tracepoint_text(p, ev, t, *big, *len + 1);
	return *big;
}
