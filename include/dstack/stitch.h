/* SPDX-License-Identifier: MIT */
/*
 * dstack stitcher: joins each sample whose callchain ends in
 * PERF_CONTEXT_USER_DEFERRED, cookie with the user callchain of the
 * PERF_RECORD_CALLCHAIN_DEFERRED record of the same tid and cookie, whether
 * that record comes before the sample (a sample taken on the way out of the
 * kernel, after the unwind ran) or after it (the usual case).
 *
 * Input: events in time order (from the ordering stage).  Output: the same
 * events, delivered through a callback, with each deferred sample's
 * callchain replaced by the merged chain
 *     kernel ips..., PERF_CONTEXT_USER, user ips...
 * which is what the kernel would have written without deferral.  The
 * order is time order: a sample waiting for its record holds back the
 * events behind it.  With perf_order it is perf 7.2's: every event but a
 * deferred sample goes on at once; a deferred sample waits for the next
 * deferred record of its task (the one it matches, or a later one), and
 * that task's samples go out then, oldest first; what still waits at the
 * end goes out then, oldest first.  A sample is stitched when its record (same tid and cookie) comes before
 * or after it; it is given up on (delivered unstitched, with its cookie,
 * and counted) when its tid shows another cookie or a new record (its
 * record can no longer come), when its tid exited more than a grace period
 * earlier, or at the end.
 *
 * Cost: O(1) expected per event (hash maps keyed by tid and cookie).
 * Memory: the events held, up to max_held_bytes: past it the oldest
 * samples that wait leave the queue for a store of their own (up to an eighth
 * of it; they go when settled, out of time order, as perf 7.2 prints
 * them), then the oldest go out early, unstitched; plus one user chain
 * per live tid.  No allocation per sample in the
 * steady state.
 *
 * Ownership: events passed to the callback are valid only during the call.
 * Errors: functions return 0 or a negative errno (-ENOMEM), or the first
 * non-zero value returned by the callback, which stops delivery.
 */
#ifndef DSTACK_STITCH_H
#define DSTACK_STITCH_H

#include <stdbool.h>
#include <stdint.h>
#include "dstack/event.h"
#include "dstack/reader.h"

struct ds_stitch_stats {
	uint64_t samples;              /* all samples seen */
	uint64_t deferred_samples;     /* samples carrying a cookie */
	uint64_t inplace_user;         /* samples of a defer_callchain event with the user chain in place */
	uint64_t records;              /* CALLCHAIN_DEFERRED records */
	uint64_t duplicate_records;    /* same tid and cookie as the previous one */
	uint64_t tidless_records;      /* no sample_id_all: matched by cookie alone */
	uint64_t stitched_before, stitched_after;
	uint64_t unresolved;
	uint64_t max_held;             /* most events held back at once */
	uint64_t released_early;       /* samples given up on (unresolved) to stay within max_held_bytes */
	uint64_t set_aside;            /* waiting samples moved out of the held FIFO past max_held_bytes (delivered out of time order) */
};

struct ds_stitcher;

struct ds_stitcher_opts {
	uint64_t exit_grace_ns;        /* 0: default (100 ms) */
	uint64_t max_held_bytes;       /* 0: default (32 MiB); beyond it the oldest pending is set aside, then released */
	/*
	 * Deliver in perf 7.2's order instead of time order: a deferred sample
	 * when its task's next deferred record comes, everything else at once
	 * (script --perf-order: the same text as perf's, line for line).
	 */
	bool perf_order;
};

struct ds_stitcher *ds_stitcher__new(const struct ds_stitcher_opts *opts, ds_event_fn fn, void *ctx);
void ds_stitcher__delete(struct ds_stitcher *st);

/* Feed one event (the stitcher copies what it must keep). */
int ds_stitcher__push(struct ds_stitcher *st, const struct ds_event *ev);
/* End of input: release every held event. */
int ds_stitcher__flush(struct ds_stitcher *st);
const struct ds_stitch_stats *ds_stitcher__stats(const struct ds_stitcher *st);

/*
 * Where the deferred marker is in a callchain: index of
 * PERF_CONTEXT_USER_DEFERRED (the cookie follows), or -1.
 */
long ds_callchain__deferred_marker(const uint64_t *ips, uint64_t nr);

#endif
