// SPDX-License-Identifier: MIT
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dstack/event.h"
#include "dstack/log.h"
#include "dstack/session.h"
#include "stream/ordered.h"
#include "stream/session_int.h"
#include "util/error.h"
#include "util/units.h"
#include "util/prefault.h"
#include "format/event_int.h"
#include "format/reader_int.h"

/*
 * The reading thread reads, orders, parses and stitches, and hands the
 * calling thread what its callbacks are to see, in the order they are to
 * see it, in batches: a ring of NR_BATCHES slots, filled by the reader
 * (prod counts the batches published) and emptied by the consumer (cons
 * counts those it is done with).  An item is an event for the sideband,
 * for the callback or for both; an event the stitcher held (its copy is
 * the stitcher's, gone when its callback returns) is copied into the
 * batch, with its stitched callchain.  The records' memory (pinned input
 * windows, arena chunks) is released by the reader when it reuses a slot,
 * so the source, the arena and the stitcher stay single-threaded.  A full ring stops the reader until half of
 * it is free, and each side is woken only when it waits: a wake-up per
 * batch is a context switch per batch, and made the wall time erratic
 * (docs/performance.md).
 */
#define BATCH_ITEMS 512
/*
 * ... or fewer when they are big: a batch of 1,024 dwarf-mode samples
 * (8 KiB stack copies) held 8 MiB, and the ring 64 MiB of pinned windows
 * and arena chunks the reader kept faulting in fresh.
 */
#define BATCH_BYTES (256u << 10)
#define NR_BATCHES 8
/* the copies of held events a batch starts with room for (more: the batch ends) */
#define BATCH_COPIES (64u << 10)

enum { HAND_SIDEBAND = 1, HAND_EMIT = 2, HAND_SKIPPED = 4 };

struct handoff {
	struct ds_event ev;
	unsigned what;           /* HAND_*: the sideband's, the callback's, or both; or a warning */
	const char *why;         /* HAND_SKIPPED: the record at ev.hdr, ev.offset did not parse */
};

/* What a record handed over lies in: given back when its batch comes back. */
struct release {
	struct dsi_arena_chunk *chunk;       /* a copy ... */
	struct ds_source_window *win;       /* ... or where it lies in the input */
};

struct batch {
	size_t n, nr_rel;
	size_t bytes;            /* of the records handed over */
	uint8_t *copies;         /* held events' records and stitched chains */
	size_t copies_len, copies_cap;
	struct handoff v[BATCH_ITEMS];
	struct release rel[BATCH_ITEMS];
};

struct pipeline {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t room;     /* the reader waits for free slots ... */
	pthread_cond_t filled;   /* ... the consumer for published ones */
	struct batch *slots[NR_BATCHES];
	uint64_t prod, cons;     /* under lock */
	bool done;               /* under lock: the reader published its last batch */
	bool reader_waits, consumer_waits;   /* under lock */
	atomic_bool stop;        /* the consumer failed: stop reading */
	int read_ret, read_err;  /* the reading loop's results, read after the join */
	/* the reader's: the record being pushed, and its sideband item not yet also an emit */
	const struct ds_event_header *in_hdr;
	bool in_sideband;
};

/*
 * Pipelined, the reading thread writes the first group of fields for every
 * record and the consumer reads the second for every event: they start on
 * their own cache lines, or each record's counter update would take the
 * line away from the consumer (docs/performance.md).
 */
#define DS_CACHELINE 64

struct ds_session {
	/* the reading side: reader, ordering, counters */
	struct ds_reader *reader;
	struct ds_ordered ordered;
	struct ds_session_stats stats;
	struct pipeline *pl;     /* set while run uses a reading thread */
	void (*peek)(void *ctx, const struct ds_evsel *evsel, const struct ds_event_header *hdr);
	void *peek_ctx;
	char err[600];
	/* the consuming side: callbacks, stitcher */
	_Alignas(DS_CACHELINE) struct ds_stitcher *stitcher;
	ds_event_fn fn;
	void *ctx;
	ds_event_fn sideband;
	void *sideband_ctx;
	int cb_err;
	uint64_t bad_events;     /* records whose fields did not parse: skipped */
};

struct ds_session *ds_session__open(const char *path)
{
	struct ds_session *s = aligned_alloc(DS_CACHELINE, sizeof(*s));

	if (!s) {
		dsi_error(-ENOMEM, "%s: out of memory", path);
		return NULL;
	}
	memset(s, 0, sizeof(*s));
	s->reader = ds_reader__open(path);
	if (!s->reader) {
		int e = errno;

		free(s);
		errno = e;
		return NULL;
	}
	return s;
}

void ds_session__close(struct ds_session *s)
{
	if (!s)
		return;
	dsi_ordered__exit(&s->ordered);
	ds_stitcher__delete(s->stitcher);
	ds_reader__close(s->reader);
	free(s);
}

const char *dsi_session__errmsg(const struct ds_session *s) { return s->err; }
struct ds_reader *ds_session__reader(const struct ds_session *s) { return s->reader; }
const struct ds_session_stats *ds_session__stats(const struct ds_session *s) { return &s->stats; }

const struct ds_stitch_stats *ds_session__stitch_stats(const struct ds_session *s)
{
	return s->stitcher ? ds_stitcher__stats(s->stitcher) : NULL;
}

static void warn_skipped(const struct ds_session *s, uint64_t offset, uint32_t type, const char *why)
{
	const char *path = ds_reader__locate(s->reader, &offset);

	ds_warn("%s: offset %#llx: %s record skipped: %s\n", path, (unsigned long long)offset,
		ds_record_type__name(type), why);
}

/*
 * Parse a record of @evsel into an event; false if its fields are bad,
 * after a warning or, given @why, with the reason there for the caller
 * to say (the reading thread: the calling thread says it, in its place
 * among the callbacks' warnings).  The side that stitches parses: the
 * reading thread, when there is one.
 */
static bool make_event(struct ds_session *s, struct ds_evsel *evsel, const struct ds_event_header *hdr,
		       uint64_t offset, struct ds_event *ev, const char **why_out)
{
	const char *why = NULL;

	/* field by field: the sample is set by its parse (which zeroes it itself) */
	ev->hdr = hdr;
	ev->offset = offset;
	ev->evsel = evsel;
	ev->stitch = DS_STITCH_NONE;
	ev->cookie = 0;
	ev->record_time = 0;
	ev->cookie_passed = false;
	if (!evsel)   /* cannot happen: records are queued once their event is known */
		why = "sample id matches no event in the file";
	else if (!ds_record__parse_sample(evsel, hdr, &ev->sample, &why))
		return true;
	s->bad_events++;
	if (why_out)
		*why_out = why;
	else
		warn_skipped(s, offset, hdr->type, why);
	return false;
}

static int consume(struct ds_session *s, const struct ds_event *ev)
{
	int err = s->sideband ? s->sideband(s->sideband_ctx, ev) : 0;

	if (!err)
		err = s->stitcher ? ds_stitcher__push(s->stitcher, ev) : s->fn(s->ctx, ev);

	if (err && !s->cb_err)
		s->cb_err = err;
	return err;
}

static int deliver_ordered(void *ctx, const struct ds_ordered_item *it)
{
	struct ds_session *s = ctx;
	struct ds_event ev;

	if (!make_event(s, ds_reader__evsel_of(s->reader, it->hdr), it->hdr, it->offset, &ev, NULL))
		return 0;
	return consume(s, &ev);
}

/* ---- the reading thread's side of the handoff -------------------------- */

/* Publish the batch being filled; wait for a free slot and make it the next one. */
static void pl_publish(struct ds_session *s)
{
	struct pipeline *pl = s->pl;
	struct batch *b;

	pthread_mutex_lock(&pl->lock);
	pl->prod++;
	if (pl->consumer_waits)
		pthread_cond_signal(&pl->filled);
	if (pl->prod - pl->cons >= NR_BATCHES) {
		pl->reader_waits = true;
		while (pl->prod - pl->cons > NR_BATCHES / 2 && !atomic_load(&pl->stop))
			pthread_cond_wait(&pl->room, &pl->lock);
		pl->reader_waits = false;
	}
	pthread_mutex_unlock(&pl->lock);
	if (atomic_load(&pl->stop))
		return;
	b = pl->slots[pl->prod % NR_BATCHES];   /* consumed (if ever made): its records go back */
	if (!b)
		return;
	for (size_t i = 0; i < b->nr_rel; i++)
		dsi_ordered__release(&s->ordered, b->rel[i].chunk, b->rel[i].win);
	b->n = b->nr_rel = 0;
	b->bytes = 0;
	b->copies_len = 0;
}

/*
 * The batch being filled, made at its first use by the reading thread: an
 * input that never fills the ring never makes all of it, and the calling
 * thread does not populate 320 KiB before the reader may start.  NULL on
 * ENOMEM.
 */
static struct batch *pl_slot(struct pipeline *pl)
{
	struct batch **b = &pl->slots[pl->prod % NR_BATCHES];

	if (!*b && (*b = dsi_malloc_populated(sizeof(**b)))) {
		(*b)->n = (*b)->nr_rel = 0;
		(*b)->bytes = 0;
		(*b)->copies = NULL;
		(*b)->copies_len = (*b)->copies_cap = 0;
	}
	return *b;
}

/* The batch being filled, with room for an item (and a release); NULL on ENOMEM or a stop. */
static struct batch *pl_room(struct ds_session *s)
{
	struct pipeline *pl = s->pl;
	struct batch *b = pl_slot(pl);

	if (b && (b->n == BATCH_ITEMS || b->nr_rel == BATCH_ITEMS)) {
		pl_publish(s);
		b = atomic_load(&pl->stop) ? NULL : pl_slot(pl);
	}
	return b;
}

/* @size bytes in the batch's copies, or NULL: the batch is full (or, empty, cannot grow). */
static void *batch_copy_room(struct batch *b, size_t size)
{
	size_t at = (b->copies_len + 7) & ~(size_t)7;

	if (at + size > b->copies_cap) {
		size_t cap = size > BATCH_COPIES ? size : BATCH_COPIES;
		uint8_t *n;

		if (b->copies_len || !(n = realloc(b->copies, cap)))   /* items point into it */
			return NULL;
		b->copies = n;
		b->copies_cap = cap;
		at = 0;
	}
	b->copies_len = at + size;
	return b->copies + at;
}

/*
 * @ev, an event the stitcher gives out of a record it kept (or with a
 * callchain of its making), into @b's copies: its record, and its
 * callchain where that lies outside it.  false: no room.
 */
static bool copy_event(struct batch *b, struct ds_event *ev, bool record)
{
	const char *from = (const char *)ev->hdr;
	size_t size = record ? ev->hdr->size : 0;
	const uint64_t *chain = ev->sample.callchain;
	bool chain_out = chain && ((const char *)chain < from || (const char *)chain >= from + ev->hdr->size);
	size_t chain_bytes = chain_out ? ev->sample.callchain_nr * sizeof(*chain) : 0;
	char *to;

	if (!size && !chain_bytes)
		return true;
	if (!(to = batch_copy_room(b, size + chain_bytes)))
		return false;
	if (chain_out)
		ev->sample.callchain = NULL;
	if (record) {
		memcpy(to, from, size);
		dsi_sample__rebase(&ev->sample, from, to, size);
		ev->hdr = (const struct ds_event_header *)to;
	}
	if (chain_out) {
		memcpy(to + size, chain, chain_bytes);
		ev->sample.callchain = (const uint64_t *)(to + size);
	}
	return true;
}

/* @b as the stitcher gives it out is @a as it came in: what it may set is as it was. */
static bool same_event(const struct ds_event *a, const struct ds_event *b)
{
	return a == b || (a->hdr == b->hdr && a->stitch == b->stitch && a->cookie == b->cookie &&
			  a->record_time == b->record_time && a->cookie_passed == b->cookie_passed &&
			  a->sample.callchain == b->sample.callchain && a->sample.callchain_nr == b->sample.callchain_nr);
}

/*
 * The reading thread's callback for what is to be delivered: an item of
 * the batch being filled (the record's sideband item, when it is the
 * record being pushed and nothing went out since).
 */
static int handoff_emit(struct ds_session *s, const struct ds_event *ev)
{
	struct pipeline *pl = s->pl;
	bool own = ev->hdr == pl->in_hdr;   /* the pushed record: released after its push */
	struct batch *b;
	struct handoff *h;

	for (int tries = 0;; tries++) {
		if (!(b = pl_room(s)))
			return atomic_load(&pl->stop) ? -ECANCELED : -ENOMEM;
		bool merge = pl->in_sideband && own && b->n && same_event(&b->v[b->n - 1].ev, ev);

		h = merge ? &b->v[b->n - 1] : &b->v[b->n];   /* the item is the one pushed when unchanged */
		if (!merge)
			h->ev = *ev;
		if (copy_event(b, &h->ev, !own)) {
			h->what = merge ? h->what | HAND_EMIT : HAND_EMIT;
			b->n += !merge;
			pl->in_sideband = false;
			return 0;
		}
		if (tries || merge)   /* (a merged one's own record and chain are never copied) */
			return -ENOMEM;
		pl_publish(s);   /* no room for its copy: the next batch */
		if (atomic_load(&pl->stop))
			return -ECANCELED;
	}
}

/* The stitcher's (and, without one, the session's) output. */
static int stitched(void *ctx, const struct ds_event *ev)
{
	struct ds_session *s = ctx;

	return s->pl ? handoff_emit(s, ev) : s->fn(s->ctx, ev);
}

/*
 * A record in time order, on the reading thread: parsed, its sideband
 * item, stitched (the items its callback is to see), and its memory
 * given back when the batch it ended in comes back.
 */
static int pl_push(struct ds_session *s, const struct ds_event_header *hdr, struct ds_evsel *evsel,
		   uint64_t offset, struct dsi_arena_chunk *chunk, struct ds_source_window *win)
{
	struct pipeline *pl = s->pl;
	struct ds_event ev, *in = &ev;
	struct batch *b = NULL;
	const char *why;
	int err = 0;

	if (atomic_load(&pl->stop)) {
		dsi_ordered__release(&s->ordered, chunk, win);
		return -ECANCELED;
	}
	/* parsed where the sideband is to see it: its item (the stitcher copies what it keeps) */
	if (s->sideband) {
		if (!(b = pl_room(s))) {
			err = atomic_load(&pl->stop) ? -ECANCELED : -ENOMEM;
			goto out;
		}
		in = &b->v[b->n].ev;
	}
	if (make_event(s, evsel, hdr, offset, in, &why)) {
		pl->in_hdr = hdr;
		if (s->sideband) {
			b->v[b->n++].what = HAND_SIDEBAND;
			pl->in_sideband = true;
		}
		err = s->stitcher ? ds_stitcher__push(s->stitcher, in) : handoff_emit(s, in);
	} else if ((b = pl_room(s))) {   /* said by the calling thread where it used to be */
		b->v[b->n++] = (struct handoff){ .ev = { .hdr = hdr, .offset = offset }, .what = HAND_SKIPPED,
						 .why = why };
	}
out:
	pl->in_hdr = NULL;
	pl->in_sideband = false;
	b = pl_slot(pl);   /* the batch its items ended in (a new one holds none: still after them) */
	if (!b) {
		dsi_ordered__release(&s->ordered, chunk, win);
		return err ? err : -ENOMEM;
	}
	if (b->nr_rel == BATCH_ITEMS) {   /* its items were published: the next batch is after them too */
		pl_publish(s);
		if (atomic_load(&pl->stop) || !(b = pl_slot(pl))) {
			dsi_ordered__release(&s->ordered, chunk, win);
			return err ? err : atomic_load(&pl->stop) ? -ECANCELED : -ENOMEM;
		}
	}
	b->rel[b->nr_rel++] = (struct release){ .chunk = chunk, .win = win };
	b->bytes += hdr->size;
	if (b->n == BATCH_ITEMS || b->nr_rel == BATCH_ITEMS || b->bytes >= BATCH_BYTES)
		pl_publish(s);
	return err;
}

/*
 * A record handed on keeps its window or chunk until its batch comes back,
 * and records delivered in time order may each lie in another one (an
 * input without rounds): past the queue's budget, what is handed on is
 * copied, side by side into the arena's newest chunk, and the old place
 * let go at once.
 */
static int deliver_handoff(void *ctx, const struct ds_ordered_item *it)
{
	struct ds_session *s = ctx;
	const struct ds_event_header *hdr = it->hdr;
	struct dsi_arena_chunk *chunk = it->chunk;
	struct ds_source_window *win = it->win;

	if (dsi_ordered__kept(&s->ordered, *dsi_reader__pinned_bytes(s->reader)) > s->ordered.budget) {
		const struct ds_event_header *copy = dsi_arena__copy(&s->ordered.arena, hdr, hdr->size, &chunk);

		dsi_ordered__release(&s->ordered, it->chunk, it->win);
		if (!copy)
			return -ENOMEM;
		hdr = copy;
		win = NULL;
	}
	return pl_push(s, hdr, ds_reader__evsel_of(s->reader, hdr), it->offset, chunk, win);
}

/* The reader is about to change state the consumer reads: let it catch up. */
static void pl_quiesce(void *ctx)
{
	struct ds_session *s = ctx;
	struct pipeline *pl = s->pl;
	const struct batch *b = pl->slots[pl->prod % NR_BATCHES];   /* NULL: never made */

	if (b && b->n)
		pl_publish(s);
	pthread_mutex_lock(&pl->lock);
	pl->reader_waits = true;
	while (pl->cons != pl->prod && !atomic_load(&pl->stop))
		pthread_cond_wait(&pl->room, &pl->lock);
	pl->reader_waits = false;
	pthread_mutex_unlock(&pl->lock);
}

static void count_lost(struct ds_session *s, const struct ds_event_header *hdr)
{
	if (hdr->type == DS_REC_LOST)
		s->stats.lost += ds_record__lost(hdr);
	else if (hdr->type == DS_REC_LOST_SAMPLES)
		s->stats.lost_samples += ds_record__lost(hdr);
}

static int process_record(struct ds_session *s, const struct ds_record *rec)
{
	const struct ds_event_header *hdr = rec->hdr;
	uint32_t type = hdr->type;
	struct ds_evsel *evsel;
	struct ds_event ev;
	uint64_t time;

	if (type < DS_REC_MAX)
		s->stats.records[type]++;
	if (rec->decompressed)
		s->stats.compressed_bytes += hdr->size;
	if (type == DS_REC_FINISHED_ROUND)
		return dsi_ordered__round(&s->ordered);
	if (type == DS_REC_AUXTRACE && hdr->size >= 16) {   /* its u64 size: the trace bytes after it */
		uint64_t n;

		memcpy(&n, (const char *)hdr + 8, sizeof(n));
		s->stats.auxtrace_bytes += n;
	}
	if (type >= DS_REC_KERNEL_MAX || !ds_record_type__name(type)) {
		if (!ds_record_type__name(type))
			s->stats.unknown_records++;
		return 0;
	}
	count_lost(s, hdr);
	evsel = ds_reader__evsel_of(s->reader, hdr);
	if (!evsel) {   /* said now, in file order, like the reader's own errors */
		s->stats.bad_records++;
		warn_skipped(s, rec->offset, type, "sample id matches no event in the file");
		return 0;
	}
	if (s->peek && type != DS_REC_SAMPLE)
		s->peek(s->peek_ctx, evsel, hdr);
	time = ds_evsel__record_time(evsel, hdr);
	if (time == DS_NO_TIME) {
		if (s->pl) {   /* the consumer reads it later: a copy that lasts */
			struct dsi_arena_chunk *chunk;
			const struct ds_event_header *copy = dsi_arena__copy(&s->ordered.arena, hdr, hdr->size, &chunk);

			return copy ? pl_push(s, copy, evsel, rec->offset, chunk, NULL) : -ENOMEM;
		}
		return make_event(s, evsel, hdr, rec->offset, &ev, NULL) ? consume(s, &ev) : 0;
	}
	/* a record in the input's window waits where it lies: no copy */
	struct ds_source_window *win = rec->in_window ? dsi_reader__pin(s->reader) : NULL;

	int err = win ? dsi_ordered__queue_pinned(&s->ordered, hdr, rec->offset, time, win)
		      : dsi_ordered__queue(&s->ordered, hdr, rec->offset, time);

	return err ? err : dsi_ordered__bound_memory(&s->ordered, dsi_reader__pinned_bytes(s->reader));
}

/* Read and queue every record: 0 or the first error; *ret: the reader's last result. */
static int read_all(struct ds_session *s, int *ret)
{
	struct ds_record rec;
	int err = 0;

	while ((*ret = ds_reader__next(s->reader, &rec)) == 1) {
		err = process_record(s, &rec);
		/* pipelined, the callbacks' error is the consumer's to see: it says stop */
		if (err || (s->pl ? atomic_load(&s->pl->stop) : s->cb_err != 0))
			break;
	}
	return err;
}

/* ---- the consumer's side ------------------------------------------------ */

static void *reading_thread(void *arg)
{
	struct ds_session *s = arg;
	struct pipeline *pl = s->pl;

	pthread_setname_np(pthread_self(), "dstack-read");   /* for top, perf --comm */
	pl->read_err = read_all(s, &pl->read_ret);
	if (!atomic_load(&pl->stop)) {   /* whatever was read is delivered */
		int e = dsi_ordered__flush_all(&s->ordered);

		if (e && !pl->read_err && e != -ECANCELED)
			pl->read_err = e;
	}
	if (!atomic_load(&pl->stop) && s->stitcher) {   /* and whatever the stitcher still holds */
		int e = ds_stitcher__flush(s->stitcher);

		if (e && !pl->read_err && e != -ECANCELED)
			pl->read_err = e;
	}
	pthread_mutex_lock(&pl->lock);
	pl->prod++;   /* the last batch, maybe empty */
	pl->done = true;
	pthread_cond_signal(&pl->filled);
	pthread_mutex_unlock(&pl->lock);
	return NULL;
}

/* An item's callbacks; false: one failed (its error kept), stop. */
static bool consume_handoff(struct ds_session *s, const struct handoff *h)
{
	int err = 0;

	if (h->what & HAND_SKIPPED) {
		warn_skipped(s, h->ev.offset, h->ev.hdr->type, h->why);
		return true;
	}
	if (h->what & HAND_SIDEBAND)
		err = s->sideband(s->sideband_ctx, &h->ev);
	if (!err && (h->what & HAND_EMIT))
		err = s->fn(s->ctx, &h->ev);
	if (err && !s->cb_err)
		s->cb_err = err;
	return !err;
}

/*
 * The reading thread wrote the item and touched the record on the other
 * core: ask for their lines two items ahead, so reading them does not
 * wait for each in turn.
 */
static inline void prefetch_item(const struct handoff *h)
{
	const char *p = (const char *)h, *r = (const char *)h->ev.hdr;

	for (size_t i = 0; i < sizeof(*h); i += 64)
		__builtin_prefetch(p + i);
	__builtin_prefetch(r);
	__builtin_prefetch(r + 64);
	__builtin_prefetch(r + 128);
	__builtin_prefetch(r + 192);
}

/* Consume batches until the reader is done or a callback failed. */
static void consume_batches(struct ds_session *s)
{
	struct pipeline *pl = s->pl;

	for (;;) {
		struct batch *b;

		pthread_mutex_lock(&pl->lock);
		pl->consumer_waits = true;
		while (pl->cons == pl->prod && !pl->done)
			pthread_cond_wait(&pl->filled, &pl->lock);
		pl->consumer_waits = false;
		if (pl->cons == pl->prod) {
			pthread_mutex_unlock(&pl->lock);
			break;
		}
		b = pl->slots[pl->cons % NR_BATCHES];   /* NULL: the reader's last, empty, never made */
		pthread_mutex_unlock(&pl->lock);
		for (size_t i = 0; b && i < b->n && !atomic_load(&pl->stop); i++) {
			if (i + 2 < b->n)
				prefetch_item(&b->v[i + 2]);
			if (!consume_handoff(s, &b->v[i]))
				atomic_store(&pl->stop, true);
		}
		pthread_mutex_lock(&pl->lock);
		pl->cons++;
		/* the reader waits for half the ring (or, quiescing, for all of it) */
		if (pl->reader_waits && pl->prod - pl->cons <= NR_BATCHES / 2)
			pthread_cond_signal(&pl->room);
		pthread_mutex_unlock(&pl->lock);
		if (atomic_load(&pl->stop))
			break;
	}
	pthread_mutex_lock(&pl->lock);   /* a reader waiting for a slot: let it go */
	atomic_store(&pl->stop, atomic_load(&pl->stop) || !pl->done);
	pthread_cond_signal(&pl->room);
	pthread_mutex_unlock(&pl->lock);
}

static void pl_free(struct ds_session *s)
{
	struct pipeline *pl = s->pl;

	for (size_t i = 0; i < NR_BATCHES; i++) {
		if (!pl->slots[i])
			continue;
		for (size_t j = 0; j < pl->slots[i]->nr_rel; j++)
			dsi_ordered__release(&s->ordered, pl->slots[i]->rel[j].chunk, pl->slots[i]->rel[j].win);
		free(pl->slots[i]->copies);
		free(pl->slots[i]);
	}
	pthread_mutex_destroy(&pl->lock);
	pthread_cond_destroy(&pl->room);
	pthread_cond_destroy(&pl->filled);
	free(pl);
	s->pl = NULL;
	s->reader->quiesce = NULL;
	s->ordered.handoff = false;
	s->ordered.deliver = deliver_ordered;
}

/* Start the reading thread; false (nothing changed) if it cannot be. */
static bool pl_start(struct ds_session *s)
{
	struct pipeline *pl = calloc(1, sizeof(*pl));

	if (!pl)
		return false;
	s->pl = pl;
	pthread_mutex_init(&pl->lock, NULL);
	pthread_cond_init(&pl->room, NULL);
	pthread_cond_init(&pl->filled, NULL);
	atomic_init(&pl->stop, false);
	s->ordered.handoff = true;
	s->ordered.deliver = deliver_handoff;
	s->reader->quiesce = pl_quiesce;
	s->reader->quiesce_ctx = s;
	if (pthread_create(&pl->thread, NULL, reading_thread, s)) {
		pl_free(s);
		return false;
	}
	return true;
}

/* Pipelined: returns the reading loop's err; *ret its reader result. */
static int run_pipelined(struct ds_session *s, int *ret)
{
	struct pipeline *pl = s->pl;
	int err;

	consume_batches(s);
	pthread_join(pl->thread, NULL);
	*ret = pl->read_ret;
	err = pl->read_err == -ECANCELED ? 0 : pl->read_err;
	pl_free(s);
	return err;
}

/* One warning at the end for what the memory bound changed. */
static void warn_budget(const struct ds_session *s, size_t budget)
{
	const struct ds_stitch_stats *st = s->stitcher ? ds_stitcher__stats(s->stitcher) : NULL;
	char size[DSI_SIZE_TEXT];

	if (s->ordered.nr_early)
		ds_warn("%s: records waited more than %s for their FINISHED_ROUND: %llu delivered early, "
			"%llu events delivered out of time order (memory budget: DSTACK_MEMORY_BUDGET)\n",
			ds_reader__path(s->reader), dsi_size_text(s->ordered.budget, size),
			(unsigned long long)s->ordered.nr_early, (unsigned long long)s->ordered.nr_unordered);
	if (st && st->released_early)
		ds_warn("%s: more than %s held behind samples waiting for deferred callchains: "
			"%llu samples delivered without their user stack (memory budget: DSTACK_MEMORY_BUDGET)\n",
			ds_reader__path(s->reader), dsi_size_text(budget / 2, size), (unsigned long long)st->released_early);
}

static int session_run(struct ds_session *s, const struct ds_session_opts *opts, ds_event_fn fn, void *ctx)
{
	struct ds_session_opts def = { 0 };
	int ret, err = 0;

	if (!opts)
		opts = &def;
	s->fn = fn;
	s->ctx = ctx;
	s->sideband = opts->sideband;
	s->sideband_ctx = opts->sideband_ctx;
	s->peek = opts->peek;
	s->peek_ctx = opts->peek_ctx;
	size_t budget = opts->memory_budget ? opts->memory_budget : DS_DEFAULT_MEMORY_BUDGET;
	struct ds_stitcher_opts sto = opts->stitch;
	unsigned long faults = dsi_source__faults();
	bool pipelined = false;

	dsi_ordered__init(&s->ordered, deliver_ordered, s);
	s->ordered.budget = budget / 2;
	/* records handed to the consumer pin windows too, a window each at worst */
	dsi_reader__set_pin_limit(s->reader, budget / 4);
	if (!sto.max_held_bytes)
		sto.max_held_bytes = budget / 2;
	if (!opts->no_stitch) {
		/* its output is the callback's, or the reading thread's handoff */
		s->stitcher = ds_stitcher__new(&sto, stitched, s);
		if (!s->stitcher)
			return -ENOMEM;
	}
	if (opts->reader_thread && pl_start(s)) {
		err = run_pipelined(s, &ret);
		pipelined = true;
	} else {
		err = read_all(s, &ret);
		/* whatever was read is delivered, even when the input ended badly */
		if (!s->cb_err) {
			int e = dsi_ordered__flush_all(&s->ordered);

			if (e && !err)
				err = e;
		}
	}
	if (ret < 0)
		snprintf(s->err, sizeof(s->err), "%s", dsi_reader__errmsg(s->reader));
	if (!err && ret >= 0 && dsi_source__faults() != faults) {
		ret = -EIO;
		snprintf(s->err, sizeof(s->err), "%s: the file shrank while it was read: %lu pages of it read as zeros",
			 ds_reader__path(s->reader), dsi_source__faults() - faults);
	}
	if (err == -ENOMEM)
		snprintf(s->err, sizeof(s->err), "out of memory");
	if (!s->cb_err && s->stitcher && !pipelined) {   /* (the reading thread flushed it) */
		int e = ds_stitcher__flush(s->stitcher);

		if (e && !err)
			err = e;
	}
	s->stats.unordered = s->ordered.nr_unordered;
	warn_budget(s, budget);
	s->stats.bad_records += s->bad_events;
	s->bad_events = 0;
	if (s->cb_err)
		return s->cb_err;
	if (err)
		return err;
	return ret < 0 ? ret : 0;
}

int ds_session__run(struct ds_session *s, const struct ds_session_opts *opts, ds_event_fn fn, void *ctx)
{
	int ret;

	ret = session_run(s, opts, fn, ctx);
	/* a callback's error is the callback's to explain; the reading thread's
	 * message is said on the caller's */
	if (ret < 0 && ret != s->cb_err)
		dsi_error_keep(ret, s->err);
	return ret;
}
