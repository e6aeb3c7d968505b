/* SPDX-License-Identifier: MIT */
/*
 * Ordering: records from several CPUs' ring buffers arrive interleaved;
 * deliver them in timestamp order, the way perf's ordered events do.  The
 * recorder writes FINISHED_ROUND after each pass over all buffers: every
 * record written after it is newer than everything written before the
 * previous one, so at each round we may deliver all queued records up to
 * the newest timestamp seen before the previous round.  Memory is bounded by
 * about two rounds of records, and by a byte budget whatever the input: a
 * file without FINISHED_ROUND (or with rounds too far apart) would
 * otherwise be held whole.  Past the budget the oldest records are
 * delivered early, down to half of it; a record that then comes older than
 * one delivered is delivered out of time order and counted (nr_unordered;
 * nr_early counts those delivered before their round).  Equal timestamps
 * keep file order.
 */
#ifndef DSTACK_ORDERED_H
#define DSTACK_ORDERED_H

#include <stdbool.h>
#include <stdint.h>
#include "util/arena.h"
#include "dstack/abi.h"

struct ds_source_window;

/* A record waiting: its copy in the arena (chunk), or where it lies in a pinned input window (win). */
struct ds_ordered_item {
	uint64_t time;
	uint64_t seq;
	uint64_t offset;
	const struct ds_event_header *hdr;
	struct dsi_arena_chunk *chunk;
	struct ds_source_window *win;
};

/*
 * Called with each record in order.  The record's memory is released after
 * the call unless the ordered queue is in handoff mode: then deliver owns
 * it and gives it back with dsi_ordered__release(o, it->chunk, it->win).
 */
typedef int (*ds_ordered_deliver_fn)(void *ctx, const struct ds_ordered_item *it);

struct ds_ordered {
	struct ds_ordered_item *items;  /* [head, len) queued; sorted once flushed */
	size_t head, len, cap;
	struct ds_ordered_item *tmp;    /* the merge sort's other buffer */
	size_t tmp_cap;
	bool sorted;            /* items[head, len) already in order */
	bool handoff;           /* deliver keeps the records' chunks */
	uint64_t seq;
	uint64_t max_time;      /* newest timestamp queued */
	uint64_t next_flush;    /* deliver up to here at the next round */
	uint64_t last_flush;    /* newest timestamp delivered */
	uint64_t nr_unordered;  /* records older than what was already delivered */
	uint64_t nr_early;      /* records delivered before their round, for the budget */
	size_t budget;          /* bytes the queue may hold (records + 2 items each); 0: no bound */
	size_t held;            /* bytes held now, counted as for the budget */
	size_t compact_at;      /* memory kept alive past which to compact again */
	uint64_t nr_compactions;
	size_t peak_len;
	struct dsi_arena arena;
	ds_ordered_deliver_fn deliver;
	void *ctx;
};

void dsi_ordered__init(struct ds_ordered *o, ds_ordered_deliver_fn fn, void *ctx);
void dsi_ordered__exit(struct ds_ordered *o);
/* Queue a copy of the record. 0 or -ENOMEM. */
int dsi_ordered__queue(struct ds_ordered *o, const struct ds_event_header *hdr, uint64_t offset, uint64_t time);
/* Queue the record where it lies: @win (pinned by the caller) is unpinned when it is released. */
int dsi_ordered__queue_pinned(struct ds_ordered *o, const struct ds_event_header *hdr, uint64_t offset,
			     uint64_t time, struct ds_source_window *win);
/* Give back a delivered record's memory (handoff mode). */
void dsi_ordered__release(struct ds_ordered *o, struct dsi_arena_chunk *chunk, struct ds_source_window *win);
/*
 * Bound the memory the queue keeps alive, not only the bytes it holds: a
 * record pins its whole input window (or arena chunk), and a few records
 * that wait long (each copy's newest in an input without rounds) would
 * keep every window of the file.  Call after queueing with the bytes of
 * input windows pinned now (*@window_bytes, read again after): when that
 * and the arena's chunks pass the budget and twice what the last
 * compaction left, every queued record is copied into fresh chunks and
 * what held it before is let go.  0 or -ENOMEM.
 */
int dsi_ordered__bound_memory(struct ds_ordered *o, const size_t *window_bytes);

/* The memory the queue keeps alive: its arena's chunks and @window_bytes of pinned input windows. */
static inline size_t dsi_ordered__kept(const struct ds_ordered *o, size_t window_bytes)
{
	return o->arena.bytes_live + window_bytes;
}
/* FINISHED_ROUND seen. Returns the first non-zero deliver result. */
int dsi_ordered__round(struct ds_ordered *o);
/* Deliver everything (end of input or error). */
int dsi_ordered__flush_all(struct ds_ordered *o);

#endif
