// SPDX-License-Identifier: MIT
#include <errno.h>
#include <inttypes.h>
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
#include "format/reader_int.h"

/*
 * The reading thread hands ordered records to the calling thread in
 * batches: a ring of NR_BATCHES slots, filled by the reader (prod counts
 * the batches published) and emptied by the consumer (cons counts those it
 * is done with).  The records' memory (pinned input windows, arena chunks)
 * is released by the reader when it reuses a slot, so the source and the
 * arena stay single-threaded.  A full ring stops the reader until half of
 * it is free, and each side is woken only when it waits: a wake-up per
 * batch is a context switch per batch, and made the wall time erratic
 * (docs/performance.md).
 */
#define BATCH_ITEMS 1024
/*
 * ... or fewer when they are big: a batch of 1,024 dwarf-mode samples
 * (8 KiB stack copies) held 8 MiB, and the ring 64 MiB of pinned windows
 * and arena chunks the reader kept faulting in fresh.
 */
#define BATCH_BYTES (256u << 10)
#define NR_BATCHES 8

struct handoff {
	const struct ds_event_header *hdr;
	struct ds_evsel *evsel;
	uint64_t offset;
	struct dsi_arena_chunk *chunk;       /* the record's memory: a copy ... */
	struct ds_source_window *win;       /* ... or where it lies in the input */
};

struct batch {
	size_t n;
	size_t bytes;            /* of the records handed over */
	struct handoff v[BATCH_ITEMS];
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
 * Parse a record of @evsel into an event; false (after a warning) if its
 * fields are bad.  Only the consuming side parses: the reading side reads
 * no more than the time it orders by.
 */
static bool make_event(struct ds_session *s, struct ds_evsel *evsel, const struct ds_event_header *hdr,
		       uint64_t offset, struct ds_event *ev)
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

	if (!make_event(s, ds_reader__evsel_of(s->reader, it->hdr), it->hdr, it->offset, &ev))
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
	for (size_t i = 0; i < b->n; i++)
		dsi_ordered__release(&s->ordered, b->v[i].chunk, b->v[i].win);
	b->n = 0;
	b->bytes = 0;
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
		(*b)->n = 0;
		(*b)->bytes = 0;
	}
	return *b;
}

static int pl_push(struct ds_session *s, const struct ds_event_header *hdr, struct ds_evsel *evsel,
		   uint64_t offset, struct dsi_arena_chunk *chunk, struct ds_source_window *win)
{
	struct pipeline *pl = s->pl;
	struct batch *b;

	if (atomic_load(&pl->stop)) {
		dsi_ordered__release(&s->ordered, chunk, win);
		return -ECANCELED;
	}
	b = pl_slot(pl);
	if (!b) {
		dsi_ordered__release(&s->ordered, chunk, win);
		return -ENOMEM;
	}
	b->v[b->n++] = (struct handoff){ .hdr = hdr, .evsel = evsel, .offset = offset, .chunk = chunk, .win = win };
	b->bytes += hdr->size;
	if (b->n == BATCH_ITEMS || b->bytes >= BATCH_BYTES)
		pl_publish(s);
	return 0;
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
		return make_event(s, evsel, hdr, rec->offset, &ev) ? consume(s, &ev) : 0;
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
	pthread_mutex_lock(&pl->lock);
	pl->prod++;   /* the last batch, maybe empty */
	pl->done = true;
	pthread_cond_signal(&pl->filled);
	pthread_mutex_unlock(&pl->lock);
	return NULL;
}

static void consume_handoff(struct ds_session *s, const struct handoff *h)
{
	struct ds_event ev;

	if (make_event(s, h->evsel, h->hdr, h->offset, &ev) && consume(s, &ev))
		atomic_store(&s->pl->stop, true);
}

/*
 * The reading thread touched the record on the other core: ask for its
 * lines two records ahead, so parsing it does not wait for each in turn.
 */
static inline void prefetch_record(const struct ds_event_header *hdr)
{
	const char *p = (const char *)hdr;

	__builtin_prefetch(p);
	__builtin_prefetch(p + 64);
	__builtin_prefetch(p + 128);
	__builtin_prefetch(p + 192);
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
				prefetch_record(b->v[i + 2].hdr);
			consume_handoff(s, &b->v[i]);
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
		for (size_t j = 0; j < pl->slots[i]->n; j++)
			dsi_ordered__release(&s->ordered, pl->slots[i]->v[j].chunk, pl->slots[i]->v[j].win);
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

/*
 * A file cut short while it was read (by another program): pages cut off
 * while mapped read as zeros (@faults of them), and a file that ends
 * early or holds a header of zeros is where the reader stops.  The cause
 * is said first, the reader's own words (its offset) after them; with
 * no fault and no error of the reader's, the run read all it meant to.
 * Whether it said so.
 */
static bool say_shrank(struct ds_session *s, int ret, unsigned long faults)
{
	char why[sizeof(s->err)], sizes[64] = "", zeros[64] = "";
	const char *path = ds_reader__path(s->reader), *then = ret < 0 ? s->err : "";
	size_t plen = strlen(path);
	uint64_t was, now;
	bool shorter;
	int n;

	if (!faults && ret >= 0)
		return false;   /* a clean run: no stat of the file */
	shorter = dsi_reader__shrank(s->reader, &was, &now);
	if (!faults && !shorter)
		return false;
	if (!strncmp(then, path, plen) && !strncmp(then + plen, ": ", 2))
		then += plen + 2;   /* the file is named once */
	snprintf(why, sizeof(why), "%s", then);
	if (shorter)
		snprintf(sizes, sizeof(sizes), " (%" PRIu64 " bytes, now %" PRIu64 ")", was, now);
	if (faults)
		snprintf(zeros, sizeof(zeros), ": %lu page%s of it read as zeros", faults, faults == 1 ? "" : "s");
	n = snprintf(s->err, sizeof(s->err), "%s: the file shrank while it was read%s%s", path, sizes, zeros);
	if (*why && n >= 0 && (size_t)n < sizeof(s->err))
		snprintf(s->err + n, sizeof(s->err) - (size_t)n, " (then: %.*s)", (int)(sizeof(s->err) - (size_t)n), why);
	return true;
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

	dsi_ordered__init(&s->ordered, deliver_ordered, s);
	s->ordered.budget = budget / 2;
	/* records handed to the consumer pin windows too, a window each at worst */
	dsi_reader__set_pin_limit(s->reader, budget / 4);
	if (!sto.max_held_bytes)
		sto.max_held_bytes = budget / 2;
	if (!opts->no_stitch) {
		s->stitcher = ds_stitcher__new(&sto, fn, ctx);
		if (!s->stitcher)
			return -ENOMEM;
	}
	if (opts->reader_thread && pl_start(s)) {
		err = run_pipelined(s, &ret);
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
	if (!err && say_shrank(s, ret, dsi_source__faults() - faults) && ret >= 0)
		ret = -EIO;
	if (err == -ENOMEM)
		snprintf(s->err, sizeof(s->err), "out of memory");
	if (!s->cb_err && s->stitcher) {
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
