// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/outbuf.h"
#include "samples.h"
#include "dstack/debuginfod.h"
#include "dstack/log.h"

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
 * @v checked as the library will take it (@set on a filter made for the
 * check): 1 if taken, 0 if refused (the caller says why in the option's
 * words), -1 out of memory (said).
 */
static int filter_takes(const char *cmd, int (*set)(struct ds_filter *, const char *), const char *v)
{
	struct ds_filter *check = ds_filter__new();
	int err = check ? set(check, v) : -ENOMEM;

	ds_filter__delete(check);
	if (err == -ENOMEM) {
		fprintf(stderr, "dstack %s: %s\n", cmd, ds_errmsg());
		return -1;
	}
	return !err;
}

static int parse_time_opt(const char *cmd, const char *v, struct sample_filter *f)
{
	int taken = filter_takes(cmd, ds_filter__set_time, v);

	if (!taken)
		usage_error(cmd, "bad --time '%s' (START,END in seconds, as perf script prints them, either side "
				 "empty; several ranges separated by spaces; or percent: 10%%/2, 0%%-10%%,30%%-40%%, 10%%)", v);
	if (taken <= 0)
		return -1;
	f->time_str = v;
	return 1;
}

/* perf's CPU lists: "0-3,6" */
static int parse_cpus(const char *cmd, const char *v, struct sample_filter *f)
{
	int taken = filter_takes(cmd, ds_filter__set_cpus, v);

	if (!taken)
		usage_error(cmd, "bad CPU list '%s' (like 0-3,6; CPUs below %d)", v, DS_FILTER_MAX_CPUS);
	if (taken <= 0)
		return -1;
	f->cpu_str = v;
	return 1;
}

bool sample_filter_active(const struct sample_filter *f)
{
	return f->nr_pids || f->nr_tids || f->nr_comms || f->time_str || f->cpu_str;
}

/* f->lib made of the options' values; the errors are the library's (out of memory: -ENOMEM) */
static int filter_make(struct sample_filter *f)
{
	if (!(f->lib = ds_filter__new()))
		return -errno;
	if (ds_filter__set_pids(f->lib, f->pids, f->nr_pids) || ds_filter__set_tids(f->lib, f->tids, f->nr_tids) ||
	    ds_filter__set_comms(f->lib, f->comms, f->nr_comms) || (f->cpu_str && ds_filter__set_cpus(f->lib, f->cpu_str)) ||
	    (f->time_str && ds_filter__set_time(f->lib, f->time_str)))
		return -1;
	return 0;
}

int sample_filter_prepare(struct sample_filter *f, const char *cmd, const struct ds_reader *rd)
{
	int err;

	if (!sample_filter_active(f))
		return 0;
	if (filter_make(f)) {
		fprintf(stderr, "dstack %s: %s\n", cmd, ds_errmsg());
		return -1;
	}
	switch ((err = ds_filter__prepare(f->lib, rd))) {
	case 0:
		return 0;
	case -EOPNOTSUPP:
		fprintf(stderr, "dstack %s: File does not contain CPU events. Remove -C option to proceed.\n", cmd);
		break;
	case -ERANGE:
		fprintf(stderr, "dstack %s: -C: %s\n", cmd, ds_errmsg());
		break;
	case -ENODATA:
		fprintf(stderr, "dstack %s: --time %s: %s\n", cmd, f->time_str, ds_errmsg());
		break;
	default:
		fprintf(stderr, "dstack %s: bad --time '%s'\n", cmd, f->time_str);
		break;
	}
	return -1;
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

bool sample_filter_cpu(const struct sample_filter *f, const struct ds_sample *s)
{
	return !f->lib || ds_filter__cpu(f->lib, s);
}

bool sample_filter_time_cpu(const struct sample_filter *f, const struct ds_sample *s)
{
	return !f->lib || ds_filter__time_cpu(f->lib, s);
}

bool sample_filter_wanted(const struct sample_filter *f, const struct ds_sample *s, const char *comm)
{
	return !f->lib || ds_filter__wanted(f->lib, s, comm);
}

bool sample_filter_thread(const struct sample_filter *f, const struct ds_sample *s, const char *comm)
{
	return !f->lib || ds_filter__thread(f->lib, s, comm);
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
		.max_stack_from_root = o->max_stack_from_root,
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
	ds_filter__delete(w->filter.lib);
	w->filter.lib = NULL;
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
