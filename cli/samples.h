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
#include "util/hashmap.h"
#include "dstack/machine.h"
#include "dstack/session.h"
#include "dstack/unwind.h"

#define MAX_FILTER 64

#define MAX_FILTER_CPUS 4096

/*
 * perf's sample filters: --pid, --tid, --comm (comma lists), -C/--cpu
 * (a list like 0-3,6) and --time (ranges "START,END" in seconds with up
 * to nine decimals, either side open, several separated by spaces; or
 * percent slices of the recording: "10%/2", "0%-10%,30%-40%").
 */
struct sample_filter {
	int32_t pids[MAX_FILTER], tids[MAX_FILTER];
	size_t nr_pids, nr_tids;
	const char *comms[MAX_FILTER];
	size_t nr_comms;
	const char *time_str;            /* --time as given; sample_filter_prepare() reads it */
	struct { uint64_t start, end; } times[MAX_FILTER];  /* ns; 0: open */
	size_t nr_times;
	bool by_cpu;
	uint64_t cpus[MAX_FILTER_CPUS / 64];
};

/* Any filter set. */
bool sample_filter_active(const struct sample_filter *f);
/*
 * Once the recording is open: the --time ranges (percent needs the
 * recording's first and last sample times), the -C check (the samples
 * must carry their CPU).  0, or -1 after printing why.
 */
int sample_filter_prepare(struct sample_filter *f, const char *cmd, const struct ds_reader *rd);
/* The sample passes the filters (@comm: its thread's at its time). */
bool sample_filter_wanted(const struct sample_filter *f, const struct ds_sample *s, const char *comm);
/* Its parts: --time and -C; --comm, --pid and --tid. */
bool sample_filter_time_cpu(const struct sample_filter *f, const struct ds_sample *s);
bool sample_filter_thread(const struct sample_filter *f, const struct ds_sample *s, const char *comm);

struct walk_opts {
	struct common_opts common;
	struct sample_filter filter;
	unsigned max_stack;              /* default 127, as perf */
	bool no_inline;
	bool no_demangle;
	bool want_shapes;                /* fill walk_sample.shape_id (report aggregates by it) */
	/*
	 * Hand over the samples --comm/--pid/--tid leave out too, marked
	 * filtered and without frames (perf report counts them in its
	 * totals); --time and -C drop samples outright, as in perf.
	 */
	bool keep_filtered;
	/* samples named as perf script names them (script_comm): folded is script's output collapsed */
	bool script_comms;
	/*
	 * --off-cpu: only sched:sched_switch samples, each weighted by the ns
	 * its thread stayed off CPU (lib/process/offcpu.c), with a leaf frame naming
	 * the wait ("[off-cpu: sleeping]"); --wall: those and the other
	 * (on-CPU) samples by their period (ns for cpu-clock/task-clock).
	 * Other tracepoint samples are left out of both.
	 */
	enum { WALK_CPU, WALK_OFFCPU, WALK_WALL } time_mode;
	/*
	 * Called once the whole recording has been walked, before it is
	 * closed: the names in the samples handed over (comm, dso, sym) are
	 * still valid here, so a command that prints at the end needs no copies.
	 * @status is what walk_samples will return.
	 */
	void (*at_end)(void *ctx, int status);
};

/*
 * perf's delivery of samples that read counters (PERF_SAMPLE_READ, e.g.
 * `-e '{cycles,instructions}:S'`): one sample per counter read, of that
 * counter's event, its period the counter's growth since its last read
 * (by sample id); a counter that did not grow, or whose id no event has,
 * gives none.
 */
struct read_split {
	struct ds_hashmap ids;           /* sample id -> index + 1 into counters */
	struct read_counter {
		const struct ds_evsel *evsel;
		uint64_t last;
	} *counters;
	size_t nr;
	bool ready;
};

typedef int (*read_split_fn)(void *ctx, const struct ds_evsel *evsel, uint64_t period);

/* Calls @fn for each counter read in @ev (a sample with PERF_SAMPLE_READ); its first error. */
int read_split_sample(struct read_split *rs, const struct ds_reader *rd, const struct ds_event *ev,
		      read_split_fn fn, void *ctx);
void read_split_exit(struct read_split *rs);

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
	uint64_t chain_id;               /* ds_callchain.id of frames: equal ids, equal frames; 0 none */
	uint64_t shape_id;               /* with want_shapes, ds_callchain.shape: equal but for symbolized addresses; 0 none */
	const uint32_t *frame_ids;       /* with a shape_id, each frame's id (ds_machine__shape_frames); else NULL */
	const struct ds_evsel *evsel;
	bool filtered;                   /* left out by --comm/--pid/--tid (keep_filtered): no frames */
	bool off_cpu;                    /* a wait: period is its length in ns */
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
 * binary) was a measurable part of a short report (docs/performance.md),
 * work the exit does again anyway.
 * Builds made to find leaks (MODE=debug, asan, tsan: DSTACK_TIDY_EXIT)
 * close it as analysis_close() does.
 */
void analysis_finish(struct analysis *a);

/*
 * Tracepoint samples' text (lib/format/tracepoint.c): the formats are parsed from
 * the input's tracing data on the first tracepoint sample (again if a pipe
 * sends new data), %pS addresses resolve through the machine's kernel
 * symbols.
 */
struct trace_text {
	struct ds_session *session;
	struct ds_machine *machine;
	struct ds_thread *thread;   /* of the sample being formatted */
	struct ds_tp_set *set;
	const void *parsed;         /* the tracing data the set was parsed from */
	bool warned;
};

void trace_text_init(struct trace_text *tt, struct ds_session *s, struct ds_machine *m);
void trace_text_exit(struct trace_text *tt);
/* The event's format for a tracepoint sample, NULL if the input has none for it. */
const struct ds_tp_event *trace_text_event(struct trace_text *tt, const struct ds_event *ev);
/* snprintf-like: the sample's fields as perf prints them, "" if unknown. */
size_t trace_text(struct trace_text *tt, const struct ds_event *ev, struct ds_thread *t, char *buf, size_t cap);

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

/* Samples unwound from their stack snapshot in the last walk. */
struct unwind_stats {
	uint64_t samples;                           /* walks started */
	uint64_t ends[DS_UNWIND_END__NR];           /* samples by how the walk ended */
	uint64_t by_method[DS_UNWIND_METHOD__NR];   /* samples that used each method */
	uint64_t steps[DS_UNWIND_METHOD__NR];       /* callers found by each method */
	uint64_t frames;                            /* user frames produced */
};
/* ... of the last walk, or of the last user_unwind__exit() */
const struct unwind_stats *walk_last_unwind_stats(void);

/*
 * Unwinding samples with a user stack snapshot (--call-graph dwarf, or a
 * deferred sample's fallback): the chain is built in @chain, reused (no
 * allocation per sample).  Zeroed: ready.
 */
struct user_unwind {
	struct ds_unwinder *unwinder;
	struct ds_dso *vdso;             /* the recording's vDSO image (user_unwind__find_vdso) */
	uint64_t *chain;
	size_t chain_cap;
	struct unwind_stats stats;
};
/*
 * The chain of @ev if it has a snapshot and the kernel did not record its
 * user part (dwarf mode, or a deferred cookie left unresolved): its kernel
 * part, PERF_CONTEXT_USER, then at most @max unwound frames, as the kernel
 * would have written it.  NULL: keep the sample's own chain.  Valid until
 * the next call.
 */
const uint64_t *user_unwind__chain(struct user_unwind *uu, struct ds_machine *m, struct ds_thread *t,
				   const struct ds_event *ev, unsigned max, uint64_t *nr);
/*
 * The vDSO image the header names by build-id ("[vdso]"), if perf's
 * build-id cache holds it (dstack record and perf record keep it there).
 */
void user_unwind__find_vdso(struct user_unwind *uu, struct ds_symbols *syms, const struct ds_header_info *in);
/* Free it; its statistics become walk_last_unwind_stats(). */
void user_unwind__exit(struct user_unwind *uu);

/* The recording being walked, during walk_samples() and its at_end; NULL otherwise. */
const struct ds_reader *walk_reader(void);

/*
 * The thread's comm for @ev as perf script prints it: at the sample's
 * time, when perf printed a sample held for its deferred record, or ":TID"
 * for a thread perf script forgot at its EXIT (@buf holds that name).
 */
const char *script_comm(struct ds_thread *t, const struct ds_event *ev, char buf[24]);

/* Statistics of the last walk (valid until the next walk_samples). */
const struct ds_stitch_stats *walk_last_stitch_stats(void);
const struct ds_header_info *walk_last_header(void);
const struct ds_session_stats *walk_last_session_stats(void);

#endif
