/* SPDX-License-Identifier: MIT */
/*
 * Resolved samples of a recording: the whole pipeline in one object.
 *
 * A ds_profile owns a session (reading and stitching the recording), the
 * symbols and the machine (threads and maps); it hands each sample to the
 * caller with its thread's comm, its weight and its callchain resolved to
 * frames, callee first, unwinding the samples that carry a user stack
 * snapshot.  The binaries the recording names start loading on a helper
 * thread as soon as the header and the MMAP records name them.
 *
 *	struct ds_profile_opts opts = { .symbols = { .symfs = "/" } };
 *	struct ds_profile *p = ds_profile__open("perf.data", &opts);
 *
 *	if (!p)
 *		return -errno;              // why: ds_errmsg()
 *	err = ds_profile__for_each_sample(p, on_sample, ctx);
 *	...                                 // the names handed over still valid
 *	ds_profile__close(p);               // and now no more
 *
 * Errors are negative errno values (NULL and errno for the open); why an
 * open or a run failed is in ds_errmsg() (dstack/log.h), as for the whole
 * API.  Deprecated, kept for one reason: it also still goes to
 * opts.error, else to the log, at the moment the run fails, before the
 * run's closing warnings (--off-cpu's "no sched:sched_switch sample",
 * unmatched switch-outs), and dstack's stderr keeps that order.  A caller
 * printing ds_errmsg() after the call prints the failure after those
 * warnings instead; new callers do that and leave the hook NULL.
 *
 * Lifetimes: everything the profile hands out (the sample, its frames,
 * events and threads) is owned by the profile.  The sample and its frame
 * array are valid during the callback only; the strings they point to
 * (comm, frame sym and dso names, the event's name) are interned and stay
 * valid until ds_profile__close(): a caller may keep the pointers, and
 * compare them (equal names, equal pointers) instead of the text.  (The
 * comm is an exception with ds_profile_opts.transient_comms.)
 */
#ifndef DSTACK_PROFILE_H
#define DSTACK_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "dstack/machine.h"
#include "dstack/session.h"
#include "dstack/symbols.h"
#include "dstack/unwind.h"

struct ds_profile;

/* What a sample weighs, and which samples are delivered. */
enum ds_profile_time_mode {
	DS_PROFILE_CPU,      /* every sample, weighted by its period */
	/*
	 * Only sched:sched_switch samples, each weighted by the ns its thread
	 * stayed off CPU (dstack/offcpu.h), with a leaf frame naming the wait
	 * ("[off-cpu: sleeping]", dso "[off-cpu]").
	 */
	DS_PROFILE_OFFCPU,
	/* Those and the other (on-CPU) samples by their period (ns for cpu-clock/task-clock). */
	DS_PROFILE_WALL,
	/* (other tracepoint samples are left out of both) */
};

/* A filter's verdict on a sample (ds_profile_opts.filter). */
enum ds_profile_verdict {
	DS_PROFILE_KEEP,
	DS_PROFILE_DROP,     /* not delivered (perf's --time, -C) */
	/*
	 * Left out by its thread (perf's --pid, --tid, --comm): delivered
	 * marked filtered, without frames, where a report is attached
	 * (dstack/report.h: perf report counts them); else dropped.
	 */
	DS_PROFILE_HIDE,
};

struct ds_profile_opts {
	/* where binaries and kernel symbols are found, inlining, demangling */
	struct ds_symbols_opts symbols;
	unsigned max_stack;              /* callchain entries taken (perf's --max-stack); 0: 127, perf's default */
	bool no_frames;                  /* take none (perf's --max-stack 0): samples without frames */
	/*
	 * a chain longer than max_stack keeps its outermost entries
	 * (DS_CALLCHAIN_FROM_ROOT): perf's report in caller order, its
	 * default with --children
	 */
	bool max_stack_from_root;
	enum ds_profile_time_mode time_mode;
	/* samples named as perf script names them (ds_thread__script_comm), not by their thread's comm at their time */
	bool script_comms;
	/*
	 * The sample's comm is valid during the callback only, when it names
	 * a task no COMM record named (":TID", perf's placeholder) or script's
	 * ":TID" after an exit: such names are then not interned, and a
	 * recording of countless such tasks (a task per sample) does not grow
	 * the profile.  For callers that copy or compare the comm's text, not
	 * its pointer.
	 */
	bool transient_comms;
	/* events: deferred callchains as records of their own, samples unstitched (ds_session_opts.no_stitch) */
	bool no_stitch;
	/*
	 * Samples in perf 7.2's order, not time order: a deferred sample when
	 * its task's next deferred record comes (dstack/stitch.h perf_order).
	 * Off-CPU and wall time keep time order.
	 */
	bool perf_order;
	/* read on the calling thread only (else on a second one: ds_session_opts.reader_thread) */
	bool one_thread;
	/*
	 * Do not load every binary the recording names up front (on a helper
	 * thread): only those the samples need.  For a filtered profile,
	 * which may need few of them.
	 */
	bool no_preload;
	/*
	 * What the library would otherwise take from the environment, which
	 * it never reads: perf's build-id cache (the vDSO's image:
	 * ds_vdso__cache_path; NULL: none), and the session's memory budget
	 * (ds_session_opts.memory_budget; 0: 64 MiB).
	 */
	const char *buildid_dir;
	size_t memory_budget;

	/* Hooks; each may be NULL, each gets @hook_ctx. */
	void *hook_ctx;
	/*
	 * Which samples ds_profile__for_each_sample() delivers: @s the raw
	 * sample, @comm its thread's (as the sample would be named).  Also
	 * asked of a thread's switch-out under DS_PROFILE_OFFCPU/WALL: a wait
	 * it does not keep is not counted.
	 */
	enum ds_profile_verdict (*filter)(void *ctx, const struct ds_sample *s, const char *comm);
	/*
	 * Called once in ds_profile__open(), the header read, before the
	 * binaries it lists are looked up: the time to fetch debug files
	 * (dstack/debuginfod.h) for ds_profile__reader(@p)'s build-ids.
	 */
	void (*before_symbols)(void *ctx, struct ds_profile *p);
	/*
	 * For every event read, before it is handled: @bytes of the data read
	 * so far (file offset from the data section's start), @sample whether
	 * it is a sample.  Once more when the reading ends, before anything
	 * is said about the run, with @bytes DS_PROFILE_READ_DONE.
	 */
	void (*progress)(void *ctx, uint64_t bytes, bool sample);
	/*
	 * Why ds_profile__open() or a run failed: @err the negative errno
	 * returned, @msg the input's reason, else strerror(-@err) (never
	 * NULL).  A run stopped by a callback's error is reported too; a
	 * callback that said why itself returns -ECANCELED.  NULL: logged as
	 * a warning ("PATH: MSG"), but for -ECANCELED.  (Deprecated: the
	 * same message is in ds_errmsg(); see "Errors" above for why it is
	 * still here.)
	 */
	void (*error)(void *ctx, int err, const char *msg);
};

#define DS_PROFILE_READ_DONE UINT64_MAX

/* One sample, as ds_profile__for_each_sample() hands it over (valid during the call). */
struct ds_profile_sample {
	const struct ds_event *ev;       /* the (stitched) event; a wait's: the switch-out's, at the wait's time */
	const struct ds_evsel *evsel;    /* its event (name: evsel->name); a counter read's own */
	struct ds_thread *thread;
	struct ds_machine *machine;      /* the profile's threads and maps */
	const char *comm;                /* the thread's at the sample's time (or script's: script_comms) */
	int32_t pid, tid;
	uint32_t cpu;                    /* (uint32_t)-1 if the sample does not say */
	/*
	 * perf's parallelism: the tasks running when it was taken, counted
	 * from the recording's SWITCH records (in, +1; out, -1; 1 at first),
	 * at least 1 and at most the recording's CPUs.  1 without them.
	 */
	uint32_t parallelism;
	uint64_t time;                   /* ns; DS_NO_TIME if the sample does not say */
	uint64_t period;                 /* its weight: the period, else the attr's (1 for a frequency); a wait's ns */
	const struct ds_cc_frame *frames; /* callee first */
	size_t nr_frames;
	bool ip_only;                    /* no callchain came with it (none recorded, or an empty one): frames are its ip's */
	uint64_t chain_id;               /* ds_machine__callchain_id() of frames: equal ids, equal frames; 0 none.
					  * New ids keep coming on a long input (the same chain gets another once
					  * the machine's bounded chain cache has moved on): a cache keyed by them
					  * must be bounded too */
	uint64_t shape_id;               /* with a report attached: ds_machine__callchain_shape(); 0 none */
	const uint32_t *frame_ids;       /* with a shape_id, each frame's id (ds_machine__shape_frames); else NULL */
	bool filtered;                   /* hidden by the filter (with a report attached): no frames */
	bool off_cpu;                    /* a wait: period is its length in ns */
};

/*
 * A callback's nonzero return stops the run, and is returned by it
 * (-ECANCELED: the callback said why).
 */
typedef int (*ds_profile_sample_fn)(void *ctx, const struct ds_profile_sample *s);

/*
 * Open the recording at @path ("-": standard input) with @opts (NULL: the
 * defaults; read during this call, and the hooks kept).  NULL on error,
 * errno set, why said (opts.error).
 */
struct ds_profile *ds_profile__open(const char *path, const struct ds_profile_opts *opts);
/* Free it, and everything it handed out.  NULL is fine. */
void ds_profile__close(struct ds_profile *p);

/*
 * Read the whole recording and hand each sample to @fn, in time order
 * (or perf's, ds_profile_opts.perf_order).
 * 0, or the first error (the input's, or @fn's return); the samples read
 * before an error were handed over.  A profile is read once: the second
 * run returns -EALREADY.
 */
int ds_profile__for_each_sample(struct ds_profile *p, ds_profile_sample_fn fn, void *ctx);
/*
 * The same reading, unresolved: every (stitched) event to @fn, the machine
 * tracking threads and maps (for tools that resolve what they need
 * themselves, e.g. a perf script).
 */
int ds_profile__for_each_event(struct ds_profile *p, ds_event_fn fn, void *ctx);

/* Samples unwound from their user stack snapshot. */
struct ds_unwind_stats {
	uint64_t samples;                           /* walks started */
	uint64_t ends[DS_UNWIND_END__NR];           /* samples by how the walk ended */
	uint64_t by_method[DS_UNWIND_METHOD__NR];   /* samples that used each method */
	uint64_t steps[DS_UNWIND_METHOD__NR];       /* callers found by each method */
	uint64_t frames;                            /* user frames produced */
};

struct ds_profile_stats {
	struct ds_session_stats session;   /* records read (bad_records: skipped as corrupt) */
	struct ds_stitch_stats stitch;     /* zero with no_stitch */
	struct ds_unwind_stats unwind;
};

/* The statistics of the run so far (all zero before it). */
void ds_profile__stats(const struct ds_profile *p, struct ds_profile_stats *st);

/* The profile's parts: owned by it, valid until ds_profile__close(). */
const struct ds_reader *ds_profile__reader(const struct ds_profile *p);   /* header: ds_reader__info() */
struct ds_session *ds_profile__session(const struct ds_profile *p);
struct ds_symbols *ds_profile__symbols(const struct ds_profile *p);
struct ds_machine *ds_profile__machine(const struct ds_profile *p);

/*
 * Pieces of the pipeline, for tools that walk the events themselves
 * (ds_profile__for_each_event).
 */

/* The unwinder of the samples' user stack snapshots (its statistics are the profile's). */
struct ds_user_unwind *ds_profile__user_unwind(const struct ds_profile *p);

/*
 * A tracepoint sample's fields as perf prints them (snprintf-like: the
 * text's length; "" if the input has no format for it): the formats are
 * parsed from the input's tracing data on the first tracepoint sample
 * (again if a pipe sends new data), %pS addresses resolve through the
 * machine's kernel symbols.
 */
size_t ds_profile__tracepoint_text(struct ds_profile *p, const struct ds_event *ev, struct ds_thread *t,
				   char *buf, size_t cap);

typedef int (*ds_profile_read_fn)(void *ctx, const struct ds_evsel *evsel, uint64_t period);
/*
 * perf's delivery of samples that read counters (PERF_SAMPLE_READ, e.g.
 * `-e '{cycles,instructions}:S'`): @fn once per counter read in @ev, with
 * that counter's event and its growth since its last read (by sample id);
 * a counter that did not grow, or whose id no event has, gives none.  0,
 * or the first error (@fn's, or -ENOMEM).  @fn NULL: the reads are only
 * taken in, for a sample a filter hides (perf splits every sample's reads
 * before its filters, so the next shown sample's growth starts there).
 */
int ds_profile__split_reads(struct ds_profile *p, const struct ds_event *ev, ds_profile_read_fn fn, void *ctx);

/*
 * The thread's comm for @ev as perf script prints it: at the sample's
 * time, or, for a sample held for its deferred record, when perf printed
 * it; ":TID" for a thread perf script forgot at its EXIT (@buf holds that
 * name).  @t may be NULL (":-1").
 */
const char *ds_thread__script_comm(struct ds_thread *t, const struct ds_event *ev, char buf[24]);

/* The most entries one record's callchain can hold (a record's size is 16 bits). */
#define DS_PROFILE_CHAIN_MAX 8192

/*
 * @ev's callchain as perf 7.2 reads it, *@nr entries: the sample's own,
 * but for a sample perf gave up on (ds_event.cookie_passed), whose
 * deferred marker perf reads as a user context, so that the cookie is a
 * plain address ("[unknown]"): that chain is made in @buf.  NULL when
 * the sample has no callchain.
 */
const uint64_t *ds_event__perf_callchain(const struct ds_event *ev, uint64_t buf[DS_PROFILE_CHAIN_MAX], uint64_t *nr);

/*
 * The thread whose maps perf script resolves @ev's addresses in, at the
 * time ds_thread__script_comm() names it at: @t, or for a thread it
 * forgot at its EXIT, a thread of no maps (ds_machine__script_thread).
 * A sample stitched with a record before it (perf leaves it with its
 * cookie: its user frames are dstack's) is resolved in @t.  NULL for a
 * NULL @t.
 */
struct ds_thread *ds_machine__script_event_thread(struct ds_machine *m, struct ds_thread *t, const struct ds_event *ev);

/*
 * Unwinding samples with a user stack snapshot (--call-graph dwarf, or a
 * deferred sample's fallback) into the callchain the kernel would have
 * recorded.  It is @m's finder of the vDSO's images
 * (ds_machine__set_vdso_finder), for symbols and unwinding: each one the
 * header @in names ("[vdso]", "[vdso32]") from perf's build-id cache
 * @buildid_dir (ds_vdso__cache_path; NULL: none), else this process's own
 * 64-bit image when it is the recording's (the build-id the header names,
 * or none named and the recording's kernel release is this kernel's).
 * @m, @syms and @in must outlive it; delete it before @m.  NULL: out of
 * memory.
 */
struct ds_user_unwind *ds_user_unwind__new(struct ds_machine *m, struct ds_symbols *syms,
					   const struct ds_header_info *in, const char *buildid_dir);
void ds_user_unwind__delete(struct ds_user_unwind *uu);
/*
 * The chain of @ev if it has a snapshot and the kernel did not record its
 * user part (dwarf mode, or a deferred cookie left unresolved): its kernel
 * part (at most @max entries), PERF_CONTEXT_USER, then at most @max (0:
 * 127) unwound frames.  perf limits the kernel's chain and the unwind each
 * by --max-stack, not the two together: resolve the chain with a limit of
 * its length *@nr (ds_machine__callchain), not @max.  NULL: keep the
 * sample's own chain.  Owned by @uu, valid until the next call.
 */
const uint64_t *ds_user_unwind__chain(struct ds_user_unwind *uu, struct ds_thread *t, const struct ds_event *ev,
				      unsigned max, uint64_t *nr);
const struct ds_unwind_stats *ds_user_unwind__stats(const struct ds_user_unwind *uu);

#endif
