/* SPDX-License-Identifier: MIT */
/*
 * dstack session: the pipeline bytes -> records -> ordered events ->
 * stitched samples, run to completion with one callback per event.
 *
 *   struct ds_session *s = ds_session__open("perf.data");   NULL: errno, ds_errmsg()
 *   err = ds_session__run(s, &opts, my_event_fn, ctx);
 *   err < 0: ds_errmsg() says why (bad input: its offset and what)
 *   ds_session__close(s);
 *
 * Kernel records are delivered in time order (FINISHED_ROUND rounds);
 * records without a timestamp are delivered as they come.  perf-tool
 * records (attrs, features, FINISHED_ROUND, ...) are consumed by the
 * reader and not delivered.  A record whose fields do not parse is skipped
 * with a warning naming its offset, and counted; a record that breaks the
 * framing (size, truncation, corrupt compression) ends the run: everything
 * read before it is still delivered, then run returns the error.
 */
#ifndef DSTACK_SESSION_H
#define DSTACK_SESSION_H

#include <stdbool.h>
#include <stdint.h>
#include "dstack/reader.h"
#include "dstack/stitch.h"

struct ds_session;

struct ds_session_opts {
	bool no_stitch;              /* deliver deferred samples and records as recorded */
	struct ds_stitcher_opts stitch;
	/*
	 * Called for every event in time order *before* the stitcher holds
	 * anything back: the place to track threads and maps, so that a user
	 * callchain is resolved with the maps as they were when it was
	 * unwound (at its deferred record), as perf does.
	 */
	ds_event_fn sideband;
	void *sideband_ctx;
	/*
	 * Read and order the records on a second thread while they are parsed
	 * and the callbacks run on this one (same events, same order; a
	 * two-stage pipeline on two cores).  Callbacks still run on the
	 * calling thread only.  Falls back to one thread if none can be started.
	 */
	bool reader_thread;
	/*
	 * Called for every record but samples as it is read: in file order,
	 * ahead of the callbacks (by up to a few rounds), on the reading
	 * thread when there is one.  A look ahead, e.g. to start loading the
	 * binaries an MMAP names (ds_symbols__prefetch); it must only do what
	 * is safe from another thread.  May be NULL.
	 */
	void (*peek)(void *ctx, const struct ds_evsel *evsel, const struct ds_event_header *hdr);
	void *peek_ctx;
	/*
	 * Bytes the session may hold back on any input: half for the ordering
	 * queue (records waiting for their round), half for the stitcher
	 * (events behind samples waiting for their deferred record), unless
	 * stitch.max_held_bytes says otherwise.  Past it the oldest is
	 * delivered (out of order, or without its user stack) and one warning
	 * at the end counts what was affected.  0: DS_DEFAULT_MEMORY_BUDGET.
	 * (The dstack command takes it from $DSTACK_MEMORY_BUDGET.)
	 */
	size_t memory_budget;
};

/* The memory budget of options that name none (ds_session_opts, ds_profile_opts). */
#define DS_DEFAULT_MEMORY_BUDGET ((size_t)64 << 20)

struct ds_session_stats {
	uint64_t records[DS_REC_MAX];   /* by type, as read (after decompression) */
	uint64_t unknown_records;       /* types this reader does not know: skipped */
	uint64_t auxtrace_bytes;        /* AUX-area trace data in AUXTRACE records (not decoded) */
	uint64_t bad_records;           /* records whose fields did not parse: skipped */
	uint64_t compressed_bytes;
	uint64_t unordered;             /* records older than an already delivered round */
	uint64_t lost;                  /* sum of PERF_RECORD_LOST counts */
	uint64_t lost_samples;          /* sum of PERF_RECORD_LOST_SAMPLES counts */
};

/* NULL on failure, errno set and ds_errmsg() saying why (dstack/log.h). */
struct ds_session *ds_session__open(const char *path);
void ds_session__close(struct ds_session *s);

/*
 * 0, a negative errno (bad input, memory: ds_errmsg() says why, on the
 * caller's thread also when a reading thread met it), or the callback's
 * non-zero value (the callback says why of its own).
 */
int ds_session__run(struct ds_session *s, const struct ds_session_opts *opts, ds_event_fn fn, void *ctx);

struct ds_reader *ds_session__reader(const struct ds_session *s);
const struct ds_session_stats *ds_session__stats(const struct ds_session *s);
/* NULL when run with no_stitch. */
const struct ds_stitch_stats *ds_session__stitch_stats(const struct ds_session *s);

#endif
