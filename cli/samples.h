/* SPDX-License-Identifier: MIT */
/*
 * The loop every analysis command shares, over the library's resolved
 * samples (dstack/profile.h): the options that set it up (the filters
 * --pid/--tid/--comm/--time/-C among them), the environment it reads, the
 * progress line and the "dstack CMD: why" messages.
 */
#ifndef DSTACK_CLI_SAMPLES_H
#define DSTACK_CLI_SAMPLES_H

#include <stdbool.h>
#include <stdint.h>
#include "cli.h"
#include "progress.h"
#include "dstack/filter.h"
#include "dstack/profile.h"

#define MAX_FILTER 64

/*
 * perf's sample filters as the options give them: --pid, --tid, --comm
 * (comma lists) here, -C/--cpu and --time as given; the library's filter
 * (dstack/filter.h) made of them for the recording by sample_filter_prepare().
 */
struct sample_filter {
	int32_t pids[MAX_FILTER], tids[MAX_FILTER];
	size_t nr_pids, nr_tids;
	const char *comms[MAX_FILTER];
	size_t nr_comms;
	const char *time_str;            /* --time as given */
	const char *cpu_str;             /* -C as given */
	struct ds_filter *lib;           /* sample_filter_prepare()'s, freed by walk_finish() */
};

/* Any filter set. */
bool sample_filter_active(const struct sample_filter *f);
/*
 * Once the recording is open: the library's filter made (f->lib), its
 * --time ranges (percent needs the recording's first and last sample
 * times), the -C check (the samples must carry their CPU).  0, or -1
 * after printing why.
 */
int sample_filter_prepare(struct sample_filter *f, const char *cmd, const struct ds_reader *rd);
/* The sample passes the filters (@comm: its thread's at its time). */
bool sample_filter_wanted(const struct sample_filter *f, const struct ds_sample *s, const char *comm);
/* Its parts: --time and -C; --comm, --pid and --tid. */
/* -C alone: what perf filters its side-band records by. */
bool sample_filter_cpu(const struct sample_filter *f, const struct ds_sample *s);
bool sample_filter_time_cpu(const struct sample_filter *f, const struct ds_sample *s);
bool sample_filter_thread(const struct sample_filter *f, const struct ds_sample *s, const char *comm);

/* walk_opts.time_mode: the default, --off-cpu, --wall */
#define WALK_CPU DS_PROFILE_CPU
#define WALK_OFFCPU DS_PROFILE_OFFCPU
#define WALK_WALL DS_PROFILE_WALL

struct walk_opts {
	struct common_opts common;
	struct sample_filter filter;
	unsigned max_stack;              /* default 127, as perf */
	bool no_inline;
	bool no_demangle;
	bool max_stack_from_root;        /* a longer chain keeps its outermost max_stack entries (caller order) */
	/* samples named as perf script names them (ds_thread__script_comm): folded is script's output collapsed */
	bool script_comms;
	/* the sample's comm valid during the callback only (ds_profile_opts.transient_comms): the sink keeps its text */
	bool transient_comms;
	/* deferred callchains as records of their own (script --no-merge-callchains) */
	bool no_stitch;
	/* script --perf-order: samples in perf 7.2's order (ds_profile_opts.perf_order) */
	bool perf_order;
	/*
	 * --off-cpu: only sched:sched_switch samples, each weighted by the ns
	 * its thread stayed off CPU, with a leaf frame naming the wait
	 * ("[off-cpu: sleeping]"); --wall: those and the other (on-CPU)
	 * samples by their period (ns for cpu-clock/task-clock).  Other
	 * tracepoint samples are left out of both (DS_PROFILE_OFFCPU/WALL).
	 */
	enum ds_profile_time_mode time_mode;
};

void walk_opts_init(struct walk_opts *o);
/*
 * Consume argv[*i] if it is a common, filter or symbol option: 1 consumed,
 * 0 not ours, -1 bad value (message printed).
 */
int walk_opt(struct walk_opts *o, const char *cmd, int argc, char **argv, int *i);
/* Usage text for the options walk_opt() takes. */
const char *walk_usage(void);
/*
 * A tracepoint sample's text (ds_profile__tracepoint_text), whole: in @buf
 * (@cap bytes) when it fits, else in a malloc'd copy left in *@big for the
 * caller to free (else *@big is NULL).  Its length in *@len.  NULL only
 * when a long text found no memory: @buf then holds its first @cap - 1 bytes.
 */
const char *walk_trace_text(struct ds_profile *p, const struct ds_event *ev, struct ds_thread *t, char *buf,
			    size_t cap, size_t *len, char **big);

/* A recording opened for a command (walk_open): keep it in place while open (the hooks point at it). */
struct walk {
	struct ds_profile *profile;
	const char *cmd;
	const char *symfs;
	struct sample_filter filter;     /* the options', prepared for the recording */
	struct progress progress;
};

/*
 * Open @o's recording for @cmd: its symbols, the debug files --debuginfod
 * fetches, the filters prepared.  EXIT_OK,
 * or the exit status after printing "dstack CMD: why".
 */
int walk_open(struct walk *w, const char *cmd, const struct walk_opts *o);
/*
 * Hand each sample to @fn (ds_profile__for_each_sample).  Returns the
 * exit status: EXIT_OK, or EXIT_INPUT after printing "dstack CMD: <error>"
 * (everything read before the error has been handed to @fn; records
 * skipped as corrupt are an error too).  The names handed over stay valid
 * until walk_finish().
 */
int walk_run(struct walk *w, ds_profile_sample_fn fn, void *ctx);
/* The same, every event to @fn (ds_profile__for_each_event). */
int walk_run_events(struct walk *w, ds_event_fn fn, void *ctx);
/*
 * The end of a command whose output is out: the process exits next.  A
 * release build leaves the profile to that exit: freeing the symbols, the
 * machine and the session (joining the helper thread, closing and
 * unmapping every binary) is work the exit does again anyway, and a
 * visible part of a short report (commit e3054fc).  Builds made to find leaks (MODE=debug, asan, tsan:
 * DSTACK_TIDY_EXIT) close it.
 */
void walk_finish(struct walk *w);

/* walk_open, walk_run, walk_finish: the exit status. */
int walk_samples(const char *cmd, const struct walk_opts *o, ds_profile_sample_fn fn, void *ctx);

#endif
