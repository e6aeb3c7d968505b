/* SPDX-License-Identifier: MIT */
/*
 * The loop every analysis command shares: open a recording, stitch it,
 * track threads and maps, filter samples (--pid/--tid/--comm/--time) and
 * hand each one over with its symbolized callchain, callee first.
 */
#ifndef DSTACK_CLI_SAMPLES_H
#define DSTACK_CLI_SAMPLES_H

#include <stdbool.h>
#include <stdint.h>
#include "cli.h"
#include "dstack/machine.h"
#include "dstack/session.h"

#define MAX_FILTER 64

struct sample_filter {
	int32_t pids[MAX_FILTER], tids[MAX_FILTER];
	size_t nr_pids, nr_tids;
	const char *comms[MAX_FILTER];
	size_t nr_comms;
	uint64_t time_start, time_end;   /* ns; 0 and UINT64_MAX when open */
	const char *time_str;            /* --time as given (report's header), NULL if none */
	uint64_t cpus[16];               /* -C: bit N set for CPU N (0..1023) */
	bool has_cpus;
};

struct walk_opts {
	struct common_opts common;
	struct sample_filter filter;
	unsigned max_stack;              /* default 127, as perf */
	bool no_inline;
	bool no_demangle;
	bool want_shapes;                /* fill walk_sample.shape_id (report aggregates by it) */
	/*
	 * Hand over the samples --pid/--tid/--comm reject too, marked
	 * filtered and without frames: perf report hides them but counts them
	 * in its totals (--time and -C samples are dropped, as perf does).
	 */
	bool keep_filtered;
	/*
	 * Called once the whole recording has been walked, before it is
	 * closed: the names in the samples handed over (comm, dso, sym) are
	 * still valid here, so a command that prints at the end needs no copies.
	 * @status is what walk_samples will return.
	 */
	void (*at_end)(void *ctx, int status);
};

/* One sample as the commands see it. */
struct walk_sample {
	const struct ds_event *ev;
	struct ds_thread *thread;
	struct ds_machine *machine;      /* the walk's threads and maps (valid until at_end returns) */
	const char *comm;                /* at the sample's time */
	int32_t pid, tid;
	uint64_t period;                 /* the sample's weight (period, else the attr's) */
	const struct ds_cc_frame *frames; /* callee first; valid during the call */
	size_t nr_frames;
	uint64_t chain_id;               /* ds_machine__callchain_id() of frames: equal ids, equal frames; 0 none */
	uint64_t shape_id;               /* with want_shapes, ds_machine__callchain_shape(): equal but for symbolized addresses; 0 none */
	const uint32_t *frame_ids;       /* with a shape_id, each frame's id (ds_machine__shape_frames); else NULL */
	const struct ds_evsel *evsel;
	bool filtered;                   /* with keep_filtered: rejected by --pid/--tid/--comm */
};

typedef int (*walk_fn)(void *ctx, const struct walk_sample *s);

/* A recording opened for analysis: its session, symbols and machine. */
struct analysis {
	struct ds_session *session;
	struct ds_symbols *syms;
	struct ds_machine *machine;
	/* the binaries the header lists as sampled, and those the MMAPs name
	 * as they are read, load on a helper thread (ds_symbols__prefetch)
	 * unless the caller filters samples: then it may need few of them */
	struct ds_dso **listed;
	size_t nr_listed;
	bool no_preload;
};

/* EXIT_OK, or EXIT_INPUT after printing "dstack CMD: why". */
int analysis_open(struct analysis *a, const char *cmd, const char *input, const struct ds_symbols_opts *so);
/*
 * Run the session with threads and maps tracked (the sideband is set to
 * the machine); returns the exit status, printing the input's error if any.
 */
int analysis_run(struct analysis *a, const char *cmd, struct ds_session_opts *sopts, ds_event_fn fn, void *ctx);
void analysis_close(struct analysis *a);
/*
 * The end of a command whose output is out: the process exits next.  A
 * release build leaves @a to that exit: freeing the symbols, the machine
 * and the session (joining the helper thread, closing and unmapping every
 * binary) was ~1 ms of a 15 ms report (50 alternated runs: mix.fp 17.3 ->
 * 16.0 ms, kernel.fp 14.8 -> 14.0) that the exit does again anyway.
 * Builds made to find leaks (MODE=debug, asan, tsan: DSTACK_TIDY_EXIT)
 * close it as analysis_close() does.
 */
void analysis_finish(struct analysis *a);

void walk_opts_init(struct walk_opts *o);
/*
 * Consume argv[*i] if it is a common, filter or symbol option: 1 consumed,
 * 0 not ours, -1 bad value (message printed).
 */
int walk_opt(struct walk_opts *o, const char *cmd, int argc, char **argv, int *i);
/* Usage text for the options walk_opt() takes. */
const char *walk_usage(void);

/*
 * Run over the whole recording.  Returns the process exit status: EXIT_OK,
 * or EXIT_INPUT after printing "dstack CMD: <error>" (everything read
 * before the error has been handed to @fn).  Statistics of the run:
 * walk_last_stitch_stats().
 */
int walk_samples(const char *cmd, const struct walk_opts *o, walk_fn fn, void *ctx);

/* Statistics of the last walk (valid until the next walk_samples). */
const struct ds_stitch_stats *walk_last_stitch_stats(void);
const struct ds_header_info *walk_last_header(void);
const struct ds_session_stats *walk_last_session_stats(void);

#endif
