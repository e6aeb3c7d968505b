// SPDX-License-Identifier: MIT
/*
 * The stitcher (see dstack/stitch.h).  Held events sit in a FIFO ring
 * indexed by a monotonic sequence number.  In time order they leave from
 * its head; in perf's order only deferred samples are held, and they leave
 * out of order: each waits in its task's queue (linked through the ring)
 * for that task's next deferred record, as perf 7.2 delivers them.  Pending samples are also
 * linked per cookie (newest first) so a deferred record finds its samples
 * in time proportional to their number, never by scanning the FIFO.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "util/arena.h"
#include "dstack/log.h"
#include "dstack/stitch.h"
#include "util/grow.h"
#include "util/hashmap.h"

#define NO_SEQ UINT64_MAX
#define DEFAULT_EXIT_GRACE_NS (100ULL * 1000 * 1000)
#define DEFAULT_MAX_HELD (32ULL << 20)
#define MAX_ORPHANS 65536
#define SWEEP_MIN 65536         /* task states kept before a sweep_states */

struct chain {
	uint32_t refs;
	uint32_t tid;
	uint64_t cookie;
	uint64_t time;          /* of its record, 0 if none */
	uint64_t nr;
	uint64_t ips[];
};

/*
 * HELD_WAIT (time order): stitched with a record before it, waiting to
 * learn when perf 7.2 would print it (its release_time): perf holds such a
 * sample, too, until its task's next deferred record (see release_waiting).
 */
enum { HELD_READY, HELD_PENDING, HELD_WAIT, HELD_DONE };

struct held {
	uint64_t seq;
	const struct ds_event_header *hdr;
	struct dsi_arena_chunk *chunk;
	uint64_t offset;
	struct ds_evsel *evsel;
	struct chain *chain;
	uint64_t cookie;
	uint64_t next;          /* next older pending sample with this cookie */
	uint64_t next_wait;     /* next younger sample in its task's queue */
	uint64_t time;          /* the sample's */
	uint64_t release_time;  /* ds_event.record_time when not stitched after: 0 or DS_NO_TIME (to the end) */
	uint32_t tid;
	uint8_t state;
	uint8_t stitch;
	bool passed;            /* unresolved by another cookie of its task (ds_event.cookie_passed) */
	bool parsed;            /* sample is the parse of hdr (else parsed again when it goes) */
	struct ds_sample sample;   /* its fields, pointing into hdr (the copy) */
};

struct tid_state {
	uint32_t tid;
	uint64_t cookie;        /* cookie of the newest pending samples, if any */
	/*
	 * cookies of the task's samples still pending before those, oldest
	 * first: perf holds every sample of a task to its next record and
	 * matches each there (a later kernel entry's sample stamped among an
	 * earlier one's; entries whose records never come).  Allocated only
	 * then, freed when settled; as many as there are held samples at most.
	 */
	uint64_t *older;
	size_t nr_older, cap_older;
	uint32_t npending;      /* of every cookie */
	struct chain *chain;    /* newest deferred chain of this tid */
	/* its held samples, oldest first (NO_SEQ: none): all its deferred ones
	 * in perf's order, those waiting for their release (HELD_WAIT) in time order */
	uint64_t wait_head, wait_tail;
	/* its samples set aside (indexes into ds_stitcher.aside, oldest first; NO_SEQ: none) */
	uint64_t aside_head, aside_tail;
	bool exited;
	bool aside_due;         /* listed in ds_stitcher.due: a sample set aside is ready */
};

struct exit_note {
	uint32_t tid;
	uint64_t deadline;
};

struct ds_stitcher {
	struct ds_stitcher_opts opts;
	ds_event_fn fn;
	void *ctx;
	struct ds_stitch_stats stats;
	/* FIFO of held events: seqs [head, tail) */
	struct held *ring;
	size_t cap;             /* power of two */
	uint64_t head, tail;
	struct dsi_arena arena;
	struct dsi_hashmap tids;     /* tid -> index in states */
	struct tid_state *states;
	size_t nr_states, cap_states;
	size_t sweep_at;            /* nr_states that makes the next sweep_states */
	size_t last_state;          /* index tid_state found last (checked by its tid: a hint) */
	struct dsi_hashmap pending;  /* pending_key(tid, cookie) -> newest pending seq */
	struct dsi_hashmap orphans;  /* cookie -> chain of tid-less records */
	struct exit_note *exits;    /* exited tids with pending samples, by deadline */
	size_t nr_exits, cap_exits, exits_head;
	uint64_t now;
	uint64_t *merged;           /* scratch for a merged callchain */
	size_t merged_cap;
	/*
	 * Samples set aside (set_aside): out of the FIFO, each with its own
	 * copy, linked in its task's list by next_wait; free slots by next.
	 * aside_bytes is what they cost (copies, slots), within an eighth of
	 * max_held_bytes.  due: tids whose samples set aside are ready (time
	 * order), to go at the end of the event that settled them.
	 */
	struct held *aside;
	size_t nr_aside, cap_aside;
	uint64_t aside_free;
	uint64_t aside_bytes;
	uint32_t *due;
	size_t nr_due, cap_due;
	bool warned_tidless;
};

long ds_callchain__deferred_marker(const uint64_t *ips, uint64_t nr)
{
	/* the marker sits where the user part would start, its cookie after
	 * it: scan from the end, from nr - 2 down */
	for (uint64_t i = nr ? nr - 1 : 0; i-- > 0;)
		if (ips[i] == DS_CONTEXT_USER_DEFERRED)
			return (long)i;
	return -1;
}

struct ds_stitcher *ds_stitcher__new(const struct ds_stitcher_opts *opts, ds_event_fn fn, void *ctx)
{
	struct ds_stitcher *st = calloc(1, sizeof(*st));

	if (!st)
		return NULL;
	if (opts)
		st->opts = *opts;
	if (!st->opts.exit_grace_ns)
		st->opts.exit_grace_ns = DEFAULT_EXIT_GRACE_NS;
	if (!st->opts.max_held_bytes)
		st->opts.max_held_bytes = DEFAULT_MAX_HELD;
	st->fn = fn;
	st->ctx = ctx;
	st->aside_free = NO_SEQ;
	st->sweep_at = SWEEP_MIN;
	return st;
}

static void chain_put(struct chain *c)
{
	if (c && --c->refs == 0)
		free(c);
}

static struct chain *chain_get(struct chain *c)
{
	if (c)
		c->refs++;
	return c;
}

void ds_stitcher__delete(struct ds_stitcher *st)
{
	uint64_t k, v;

	if (!st)
		return;
	for (uint64_t s = st->head; s < st->tail; s++) {
		struct held *h = &st->ring[s & (st->cap - 1)];

		chain_put(h->chain);
		if (h->chunk)
			dsi_arena__release(&st->arena, h->chunk);
	}
	free(st->ring);
	dsi_arena__exit(&st->arena);
	for (uint64_t i = 0; i < st->nr_aside; i++) {
		if (!st->aside[i].hdr)
			continue;
		chain_put(st->aside[i].chain);
		free((void *)st->aside[i].hdr);
	}
	free(st->aside);
	free(st->due);
	for (size_t i = 0; i < st->nr_states; i++) {
		chain_put(st->states[i].chain);
		free(st->states[i].older);
	}
	free(st->states);
	for (size_t i = 0; dsi_hashmap__next(&st->orphans, &i, &k, &v);)
		chain_put((struct chain *)(uintptr_t)v);
	dsi_hashmap__exit(&st->orphans);
	dsi_hashmap__exit(&st->tids);
	dsi_hashmap__exit(&st->pending);
	free(st->exits);
	free(st->merged);
	free(st);
}

const struct ds_stitch_stats *ds_stitcher__stats(const struct ds_stitcher *st)
{
	return &st->stats;
}

/*
 * The state of @tid, made if it has none; NULL on ENOMEM.  Finding one
 * moves nothing (no state, no map slot): only making one may, so a
 * caller holding a state or a map value across a lookup of a tid that has
 * its state keeps it valid.
 */
static struct tid_state *tid_state(struct ds_stitcher *st, uint32_t tid)
{
	struct tid_state *ts;
	uint64_t *idx;

	/* a sample's task is asked for three times (push, hold, resolve) and
	 * the samples of a task come in runs: one tid per state, so a state
	 * at the hint with this tid is the one the map would give */
	if (st->last_state < st->nr_states && st->states[st->last_state].tid == tid)
		return &st->states[st->last_state];
	idx = dsi_hashmap__find(&st->tids, tid);
	if (idx) {
		st->last_state = (size_t)*idx;
		return &st->states[*idx];
	}
	/* room first: a tid in the map has its state */
	ts = dsi_grow(st->states, &st->cap_states, st->nr_states + 1, sizeof(*ts), 256);
	if (!ts)
		return NULL;
	st->states = ts;
	if (dsi_hashmap__set(&st->tids, tid, st->nr_states))
		return NULL;
	st->last_state = st->nr_states;
	ts = &st->states[st->nr_states++];

	memset(ts, 0, sizeof(*ts));
	ts->tid = tid;
	ts->wait_head = ts->wait_tail = NO_SEQ;
	ts->aside_head = ts->aside_tail = NO_SEQ;
	return ts;
}

/*
 * A task's state that holds nothing (no pending sample, no chain, an empty
 * queue) is the state tid_state makes anew: such states are dropped when
 * their number passes sweep_at, so that ever new tids (hostile input, or
 * the countless short tasks of a long system-wide recording) keep no
 * memory.  The next sweep waits for twice what this one kept, at least
 * SWEEP_MIN: the sweeps cost O(1) per state made, amortized.
 */
static bool tid_state__idle(const struct tid_state *ts)
{
	return !ts->npending && !ts->chain && ts->wait_head == NO_SEQ && !ts->nr_older && ts->aside_head == NO_SEQ;
}

/* Between events only: it moves states (no tid_state pointer may live across it). */
static void sweep_states(struct ds_stitcher *st)
{
	size_t kept = 0;

	for (size_t i = 0; i < st->nr_states; i++) {
		struct tid_state *ts = &st->states[i];

		if (tid_state__idle(ts)) {
			dsi_hashmap__del(&st->tids, ts->tid, NULL);
			continue;
		}
		if (kept != i) {
			st->states[kept] = *ts;
			*dsi_hashmap__find(&st->tids, ts->tid) = kept;
		}
		kept++;
	}
	st->nr_states = kept;
	st->sweep_at = kept * 2 > SWEEP_MIN ? kept * 2 : SWEEP_MIN;
}

static struct held *held_at(struct ds_stitcher *st, uint64_t seq)
{
	return &st->ring[seq & (st->cap - 1)];
}

static int ring_grow(struct ds_stitcher *st)
{
	size_t ncap = st->cap ? st->cap * 2 : 1024;
	struct held *n = malloc(ncap * sizeof(*n));

	if (!n)
		return -ENOMEM;
	for (uint64_t s = st->head; s < st->tail; s++)
		n[s & (ncap - 1)] = st->ring[s & (st->cap - 1)];
	free(st->ring);
	st->ring = n;
	st->cap = ncap;
	return 0;
}

/* Build the chain the kernel would have written without deferral. */
static int merge_chain(struct ds_stitcher *st, struct ds_sample *s, const struct chain *c)
{
	long m = ds_callchain__deferred_marker(s->callchain, s->callchain_nr);
	size_t tail, need;

	if (m < 0)
		return 0;
	tail = (size_t)(s->callchain_nr - (uint64_t)m - 2);
	need = (size_t)m + 1 + c->nr + tail;
	if (need > st->merged_cap) {
		uint64_t *n = realloc(st->merged, need * sizeof(*n));

		if (!n)
			return -ENOMEM;
		st->merged = n;
		st->merged_cap = need;
	}
	size_t k = (size_t)m;

	memcpy(st->merged, s->callchain, k * sizeof(uint64_t));
	if (!c->nr || c->ips[0] != DS_CONTEXT_USER)
		st->merged[k++] = DS_CONTEXT_USER;
	memcpy(st->merged + k, c->ips, c->nr * sizeof(uint64_t));
	k += c->nr;
	memcpy(st->merged + k, s->callchain + m + 2, tail * sizeof(uint64_t));
	k += tail;
	s->callchain = st->merged;
	s->callchain_nr = k;
	return 0;
}

static int deliver(struct ds_stitcher *st, struct ds_event *ev, const struct chain *c)
{
	if (c) {
		int err = merge_chain(st, &ev->sample, c);

		if (err)
			return err;
	}
	return st->fn(st->ctx, ev);
}

static void resolve(struct ds_stitcher *st, struct held *h, struct chain *c, bool passed);
static int deliver_aside(struct ds_stitcher *st, struct tid_state *ts, bool (*go)(const struct held *));
static bool aside_any(const struct held *a);

/* Deliver the held sample @h (resolved unstitched if still pending) and let its copy go. */
static int deliver_held(struct ds_stitcher *st, struct held *h)
{
	struct ds_event ev;
	const char *why;
	int err;

	if (h->state == HELD_PENDING)
		resolve(st, h, NULL, false);
	ev = (struct ds_event){ .hdr = h->hdr, .offset = h->offset, .evsel = h->evsel, .stitch = h->stitch,
				.cookie = h->cookie,
				.record_time = h->stitch == DS_STITCH_AFTER && h->chain ? h->chain->time : h->release_time,
				.cookie_passed = h->passed };
	h->state = HELD_DONE;
	if (h->parsed)
		ev.sample = h->sample;
	else if (h->evsel)
		ds_record__parse_sample(h->evsel, h->hdr, &ev.sample, &why);
	err = deliver(st, &ev, h->chain);
	chain_put(h->chain);
	h->chain = NULL;
	if (h->chunk)
		dsi_arena__release(&st->arena, h->chunk);
	h->chunk = NULL;
	return err;
}

/* Move the ring's head past the samples already delivered. */
static void compact(struct ds_stitcher *st)
{
	while (st->head < st->tail && held_at(st, st->head)->state == HELD_DONE)
		st->head++;
}

/* @h goes at its task's record at @time (perf's order). */
static void released_at(struct held *h, uint64_t time)
{
	/* (a held sample matches only a record after it: the others are given up) */
	h->passed = h->state != HELD_PENDING && h->stitch == DS_STITCH_UNRESOLVED;
	h->release_time = time;
}

/*
 * perf 7.2's order: a task's held samples go out, oldest first, when a
 * deferred record of that task arrives (matched or not).
 */
static int release_tid(struct ds_stitcher *st, struct tid_state *ts, uint64_t time)
{
	uint64_t s = ts->wait_head;
	int err = 0;

	/* those set aside first: they are older than any in the FIFO */
	for (uint64_t i = ts->aside_head; i != NO_SEQ; i = st->aside[i].next_wait)
		released_at(&st->aside[i], time);
	if (ts->aside_head != NO_SEQ && (err = deliver_aside(st, ts, aside_any)))
		return err;
	ts->wait_head = ts->wait_tail = NO_SEQ;
	while (s != NO_SEQ && !err) {
		struct held *h = held_at(st, s);

		s = h->next_wait;
		released_at(h, time);
		err = deliver_held(st, h);
	}
	compact(st);
	return err;
}

/* @h completed by @c, or unresolved (@passed: given up for another cookie of its task) */
static void resolve(struct ds_stitcher *st, struct held *h, struct chain *c, bool passed)
{
	struct tid_state *ts = tid_state(st, h->tid);

	h->state = HELD_READY;
	h->passed = !c && passed;
	if (c) {
		h->chain = chain_get(c);
		h->stitch = DS_STITCH_AFTER;
		st->stats.stitched_after++;
	} else {
		h->stitch = DS_STITCH_UNRESOLVED;
		st->stats.unresolved++;
	}
	if (ts && ts->npending)
		ts->npending--;
}

/*
 * Pending samples are listed per (tid, cookie), so a record walks only its
 * own samples even when hostile input gives many tids one cookie.  Once
 * records without a tid appear (no sample_id_all), they match by cookie
 * alone and the lists are per cookie (see rekey_pending).
 */
static uint64_t pending_key(const struct ds_stitcher *st, uint32_t tid, uint64_t cookie)
{
	return st->warned_tidless ? cookie : dsi_hash_pair(tid, cookie);
}

/* Rebuild the pending lists keyed by cookie alone (entering tid-less mode). */
static int rekey_pending(struct ds_stitcher *st)
{
	dsi_hashmap__exit(&st->pending);
	for (uint64_t s = st->head; s < st->tail; s++) {
		struct held *h = held_at(st, s);
		bool found;
		uint64_t *headp;

		if (h->state != HELD_PENDING)
			continue;
		headp = dsi_hashmap__upsert(&st->pending, h->cookie, NO_SEQ, &found);
		if (!headp)
			return -ENOMEM;
		h->next = *headp;   /* oldest first in, so the newest ends up first */
		*headp = s;
	}
	return 0;
}

/* @ts's samples set aside are ready (time order): they go after this event's settling (drain_due). */
static void mark_due(struct ds_stitcher *st, struct tid_state *ts)
{
	uint32_t *n;

	if (st->opts.perf_order || ts->aside_due)
		return;
	n = dsi_grow(st->due, &st->cap_due, st->nr_due + 1, sizeof(*n), 16);
	if (!n)
		return;   /* (they go when the task's samples are next settled, or at the end) */
	st->due = n;
	st->due[st->nr_due++] = ts->tid;
	ts->aside_due = true;
}

enum settle_which { SETTLE_COOKIE, SETTLE_ALL, SETTLE_OTHERS };

/*
 * Settle @ts's pending samples set aside as settle_cookie does those in
 * the FIFO: @which SETTLE_COOKIE those of @cookie (chain @c), SETTLE_ALL
 * every one (those of @cookie get @c, the others none), SETTLE_OTHERS
 * every one but those of @cookie (none).  One walk of the task's list.
 */
static void settle_aside(struct ds_stitcher *st, struct tid_state *ts, enum settle_which which, uint64_t cookie,
			 struct chain *c, bool passed, uint64_t time)
{
	bool any = false;

	for (uint64_t i = ts->aside_head; i != NO_SEQ; i = st->aside[i].next_wait) {
		struct held *h = &st->aside[i];
		bool mine = h->cookie == cookie;

		if (h->state != HELD_PENDING || (which == SETTLE_COOKIE && !mine) || (which == SETTLE_OTHERS && mine))
			continue;
		resolve(st, h, mine ? c : NULL, passed);
		if (!(mine && c) && time)
			h->release_time = time;
		any = true;
	}
	if (any)
		mark_due(st, ts);
}

/*
 * Settle the pending samples of @cookie: those of @tid (any tid if @tid is
 * -1, in tid-less mode only) get chain @c, or become unresolved when @c is
 * NULL, released at @time (0: their own; a record's, @passed: given up
 * there; DS_NO_TIME: as at the end), which decides how perf prints them.
 */
static void settle_cookie(struct ds_stitcher *st, uint64_t cookie, int64_t tid, struct chain *c, bool passed,
			  uint64_t time)
{
	uint64_t key = tid < 0 ? cookie : pending_key(st, (uint32_t)tid, cookie);
	uint64_t *headp = dsi_hashmap__find(&st->pending, key);
	uint64_t keep = NO_SEQ, *link = &keep;

	if (!headp)
		return;
	for (uint64_t s = *headp; s != NO_SEQ && s >= st->head;) {
		struct held *h = held_at(st, s);
		uint64_t next = h->next;

		if (h->seq != s)
			break;
		if (h->state == HELD_PENDING && h->cookie == cookie && (tid < 0 || h->tid == (uint32_t)tid)) {
			resolve(st, h, c, passed);
			if (!c && time)
				h->release_time = time;
		} else if (h->state == HELD_PENDING) {
			*link = s;          /* another tid's sample: keep it linked */
			link = &h->next;
		}
		s = next;
	}
	*link = NO_SEQ;
	if (keep == NO_SEQ)
		dsi_hashmap__del(&st->pending, key, NULL);
	else
		*headp = keep;
}

/* The older cookies settled: their list goes. */
static void forget_older(struct tid_state *ts)
{
	free(ts->older);
	ts->older = NULL;
	ts->nr_older = ts->cap_older = 0;
}

/*
 * Settle every pending sample of @ts: those of @cookie get chain @c (NULL:
 * none do), the others none (@passed: given up at a record at @time).
 */
static void settle_tid(struct ds_stitcher *st, struct tid_state *ts, uint64_t cookie, struct chain *c, bool passed,
		       uint64_t time)
{
	for (size_t i = 0; i < ts->nr_older; i++)
		settle_cookie(st, ts->older[i], ts->tid, c && ts->older[i] == cookie ? c : NULL, passed, time);
	forget_older(ts);
	if (ts->npending)
		settle_cookie(st, ts->cookie, ts->tid, c && ts->cookie == cookie ? c : NULL, passed, time);
	if (ts->aside_head != NO_SEQ)
		settle_aside(st, ts, SETTLE_ALL, cookie, c, passed, time);
}

/*
 * A sample of a new kernel entry: the task's pending samples stay pending,
 * for its next record to match (perf 7.2 holds them all and matches each
 * by cookie there).  Out of memory, they are given up now.  A cookie met
 * again (not physical) is listed again: settling it twice finds nothing
 * the second time, and no list is scanned per sample.
 */
static void keep_older(struct ds_stitcher *st, struct tid_state *ts)
{
	uint64_t *n = dsi_grow(ts->older, &ts->cap_older, ts->nr_older + 1, sizeof(*n), 4);
	if (!n) {
		settle_cookie(st, ts->cookie, ts->tid, NULL, false, 0);
		settle_aside(st, ts, SETTLE_COOKIE, ts->cookie, NULL, false, 0);
		return;
	}
	ts->older = n;
	ts->older[ts->nr_older++] = ts->cookie;
}

/*
 * The task's record can no longer come for its older cookies (it exited,
 * or the recording ended): those samples go unresolved, as perf prints
 * what it holds at the end.
 */
static void give_up_older(struct ds_stitcher *st, struct tid_state *ts)
{
	for (size_t i = 0; i < ts->nr_older; i++)
		if (ts->older[i] != ts->cookie)   /* (the newest waits for its record a little: note_exit) */
			settle_cookie(st, ts->older[i], ts->tid, NULL, false, DS_NO_TIME);
	if (ts->nr_older)
		settle_aside(st, ts, SETTLE_OTHERS, ts->cookie, NULL, false, DS_NO_TIME);
	forget_older(ts);
}

/*
 * Move pointer @p into the record at @from to the same place in its copy
 * at @to; false when it points elsewhere (then the copy is parsed again).
 */
static bool rebase(const void **p, const char *from, const char *to, size_t size)
{
	uintptr_t q = (uintptr_t)*p, f = (uintptr_t)from;

	if (!q)
		return true;
	if (q < f || q - f > size)
		return false;
	*p = to + (q - f);
	return true;
}

/*
 * Keep @ev's parsed fields with its copy @to, so that they need not be
 * parsed again when it goes (the parse was ~4% of a report): only when
 * every field it points to is in the record (a caller's sample may point
 * elsewhere; then it is parsed again, as before).
 */
static bool rebase_sample(struct ds_sample *s, const char *from, const char *to, size_t size)
{
	return rebase((const void **)&s->callchain, from, to, size) && rebase(&s->raw, from, to, size) &&
	       rebase(&s->branch, from, to, size) && rebase((const void **)&s->regs_user, from, to, size) &&
	       rebase(&s->stack_user, from, to, size) && rebase((const void **)&s->regs_intr, from, to, size) &&
	       rebase(&s->aux, from, to, size) && rebase((const void **)&s->read, from, to, size);
}

static bool keep_sample(struct held *h, const struct ds_event *ev)
{
	if (!ev->evsel)
		return false;
	h->sample = ev->sample;
	return rebase_sample(&h->sample, (const char *)ev->hdr, (const char *)h->hdr, ev->hdr->size);
}

/*
 * Set aside @h, the FIFO's head, a sample of task @ts that waits (for its
 * record in time order; for its task's next record in perf's order), so
 * that the events behind it may go: the FIFO held them all, and one task
 * asleep in the kernel for seconds (sampled on its way in, its record
 * written when it wakes) would make the bound give its sample up.  Its
 * copy moves out of the arena (it would pin a chunk) to a slot of the
 * aside store, at the end of its task's list; it goes when it is settled
 * (time order: at once, out of time order, where perf 7.2 prints it) or
 * at its task's next record (perf's order).  false, and nothing moved,
 * when the store is at its share of the bound or cannot grow.  The share
 * is an eighth: what the store holds the FIFO has not, and a store of
 * half the bound left the FIFO's short waits so little room that more
 * samples were given up than without it.
 */
/* What a sample set aside costs the store: its copy of @size bytes and, as in the FIFO, two slots. */
static uint64_t aside_cost(size_t size)
{
	return size + 2 * sizeof(struct held);
}

/* Slot @i of the store is free again (its copy gone). */
static void aside_slot_free(struct ds_stitcher *st, uint64_t i)
{
	st->aside[i].hdr = NULL;
	st->aside[i].next = st->aside_free;
	st->aside_free = i;
}

static bool set_aside(struct ds_stitcher *st, struct held *h, struct tid_state *ts)
{
	size_t size = h->hdr->size;
	uint64_t i = st->aside_free;
	void *copy;

	if (st->warned_tidless || st->aside_bytes + aside_cost(size) > st->opts.max_held_bytes / 8)
		return false;
	if (i == NO_SEQ) {
		struct held *n = dsi_grow(st->aside, &st->cap_aside, st->nr_aside + 1, sizeof(*n), 64);

		if (!n)
			return false;
		st->aside = n;
		i = st->nr_aside++;
	} else {
		st->aside_free = st->aside[i].next;
	}
	copy = malloc(size);
	if (!copy) {
		aside_slot_free(st, i);
		return false;
	}
	memcpy(copy, h->hdr, size);
	struct held *a = &st->aside[i];

	*a = *h;
	if (a->parsed)
		rebase_sample(&a->sample, (const char *)h->hdr, copy, size);
	a->hdr = copy;
	a->chunk = NULL;
	a->next = a->next_wait = NO_SEQ;
	dsi_arena__release(&st->arena, h->chunk);
	h->chunk = NULL;
	h->chain = NULL;
	h->state = HELD_DONE;
	if (ts->aside_tail == NO_SEQ)
		ts->aside_head = i;
	else
		st->aside[ts->aside_tail].next_wait = i;
	ts->aside_tail = i;
	st->aside_bytes += aside_cost(size);
	st->stats.set_aside++;
	return true;
}

/* Deliver @ts's samples set aside for which @go holds, oldest first; they leave the store. */
static int deliver_aside(struct ds_stitcher *st, struct tid_state *ts, bool (*go)(const struct held *))
{
	uint64_t *link = &ts->aside_head, kept = NO_SEQ;
	int err = 0;

	while (*link != NO_SEQ && !err) {
		uint64_t i = *link;
		struct held *a = &st->aside[i];

		if (!go(a)) {
			kept = i;
			link = &a->next_wait;
			continue;
		}
		*link = a->next_wait;
		err = deliver_held(st, a);
		st->aside_bytes -= aside_cost(a->hdr->size);
		free((void *)a->hdr);
		aside_slot_free(st, i);
	}
	/* (stopped by an error, the list past *link is as it was, its tail too) */
	if (*link == NO_SEQ)
		ts->aside_tail = kept;
	return err;
}

static bool aside_settled(const struct held *a)
{
	return a->state != HELD_PENDING;
}

static bool aside_any(const struct held *a)
{
	(void)a;
	return true;
}

/* Time order: deliver the samples set aside that were settled (mark_due). */
static int drain_due(struct ds_stitcher *st)
{
	int err = 0;

	for (size_t k = 0; k < st->nr_due && !err; k++) {
		uint64_t *idx = dsi_hashmap__find(&st->tids, st->due[k]);
		struct tid_state *ts = idx ? &st->states[*idx] : NULL;

		if (!ts || !ts->aside_due)
			continue;
		ts->aside_due = false;
		err = deliver_aside(st, ts, aside_settled);
	}
	st->nr_due = 0;
	return err;
}

static int cmp_seq(const void *a, const void *b)
{
	uint64_t x = (*(struct held *const *)a)->seq, y = (*(struct held *const *)b)->seq;

	return x < y ? -1 : x > y;
}

/*
 * The end: every sample set aside goes, oldest first (they are older than
 * any in the FIFO), as the FIFO's go then.
 */
static int flush_aside(struct ds_stitcher *st)
{
	struct held **order;
	size_t n = 0;
	int err = 0;

	if (!st->nr_aside)
		return 0;
	order = malloc(st->nr_aside * sizeof(*order));
	if (!order)
		return -ENOMEM;
	for (size_t i = 0; i < st->nr_aside; i++)
		if (st->aside[i].hdr)
			order[n++] = &st->aside[i];
	qsort(order, n, sizeof(*order), cmp_seq);
	for (size_t i = 0; i < n && !err; i++) {
		if (st->opts.perf_order)
			order[i]->release_time = DS_NO_TIME;
		err = deliver_held(st, order[i]);
		free((void *)order[i]->hdr);
		order[i]->hdr = NULL;
	}
	free(order);
	if (err)
		return err;
	for (size_t i = 0; i < st->nr_states; i++)
		st->states[i].aside_head = st->states[i].aside_tail = NO_SEQ;
	st->nr_aside = 0;
	st->aside_free = NO_SEQ;
	st->aside_bytes = 0;
	st->nr_due = 0;
	return 0;
}

static int hold(struct ds_stitcher *st, const struct ds_event *ev, bool pending, bool waiting, struct chain *c)
{
	struct held *h;

	if (st->tail - st->head == st->cap && ring_grow(st))
		return -ENOMEM;
	h = held_at(st, st->tail);
	h->hdr = dsi_arena__copy(&st->arena, ev->hdr, ev->hdr->size, &h->chunk);
	if (!h->hdr)
		return -ENOMEM;
	h->parsed = keep_sample(h, ev);
	h->seq = st->tail++;
	h->offset = ev->offset;
	h->evsel = ev->evsel;
	h->chain = chain_get(c);
	h->cookie = ev->cookie;
	h->tid = ev->sample.tid;
	h->state = pending ? HELD_PENDING : waiting ? HELD_WAIT : HELD_READY;
	h->stitch = ev->stitch;
	h->passed = false;
	h->next = NO_SEQ;
	h->next_wait = NO_SEQ;
	h->time = ev->sample.time;
	h->release_time = 0;
	if (st->opts.perf_order || waiting) {   /* its task's queue */
		struct tid_state *ts = tid_state(st, h->tid);

		if (!ts)
			return -ENOMEM;
		if (ts->wait_tail == NO_SEQ)
			ts->wait_head = h->seq;
		else
			held_at(st, ts->wait_tail)->next_wait = h->seq;
		ts->wait_tail = h->seq;
	}
	if (pending) {
		bool found;
		uint64_t *headp = dsi_hashmap__upsert(&st->pending, pending_key(st, ev->sample.tid, ev->cookie),
						     NO_SEQ, &found);

		if (!headp)
			return -ENOMEM;
		h->next = *headp;
		*headp = h->seq;
	}
	if (st->tail - st->head > st->stats.max_held)
		st->stats.max_held = st->tail - st->head;
	return 0;
}

/*
 * A deferred sample waits for its task's next record (perf's order); any
 * other event goes on now.  In time order, a @pending sample waits for its
 * record, a @waiting one (stitched before, HELD_WAIT) for its release, and
 * anything behind a held event waits too.
 */
static int emit_held(struct ds_stitcher *st, struct ds_event *ev, bool pending, bool waiting, struct chain *c)
{
	bool waits = !st->opts.perf_order ? pending || waiting || st->head != st->tail
					 : ev->hdr->type == DS_REC_SAMPLE && ev->cookie;

	return waits ? hold(st, ev, pending, waiting && !st->opts.perf_order, c) : deliver(st, ev, c);
}

static int emit(struct ds_stitcher *st, struct ds_event *ev, bool pending, struct chain *c)
{
	return emit_held(st, ev, pending, false, c);
}

/* The task's next record (or its end, DS_NO_TIME) at @time: its samples waiting for it (time order) may go. */
static void release_waiting(struct ds_stitcher *st, struct tid_state *ts, uint64_t time)
{
	if (st->opts.perf_order)
		return;   /* (there the queue is every deferred sample: release_tid) */
	for (uint64_t s = ts->wait_head; s != NO_SEQ;) {
		struct held *h = held_at(st, s);

		s = h->next_wait;
		h->state = HELD_READY;
		h->release_time = time;
	}
	ts->wait_head = ts->wait_tail = NO_SEQ;
}

/* @h, the oldest waiting sample of its task, goes now: out of its task's queue. */
static void unqueue_oldest(struct ds_stitcher *st, struct held *h)
{
	struct tid_state *ts = tid_state(st, h->tid);

	if (ts && ts->wait_head == h->seq) {
		ts->wait_head = h->next_wait;
		if (ts->wait_head == NO_SEQ)
			ts->wait_tail = NO_SEQ;
	}
}

/* Time order: deliver the held events from the head while they are resolved. */
static int drain_ready(struct ds_stitcher *st)
{
	while (st->head < st->tail) {
		struct held *h = held_at(st, st->head);
		int err = 0;

		if (h->state == HELD_PENDING)
			break;
		if (h->state == HELD_WAIT) {
			/* no record of its task for a grace period: as it is */
			if (h->time == DS_NO_TIME || h->time + st->opts.exit_grace_ns >= st->now)
				break;
			unqueue_oldest(st, h);
		}
		if (h->state != HELD_DONE)
			err = deliver_held(st, h);
		st->head++;
		if (err)
			return err;
	}
	return 0;
}

static struct chain *orphan_chain(struct ds_stitcher *st, uint64_t cookie)
{
	uint64_t *v = dsi_hashmap__find(&st->orphans, cookie);

	return v ? (struct chain *)(uintptr_t)*v : NULL;
}

/*
 * The sample's deferred marker.  Only an event that defers its callchains
 * has one where the kernel puts it (perf 7 looks there and only for such
 * events), so the others are not scanned: a marker must end their chain.
 */
static long marker_of(const struct ds_event *ev)
{
	const struct ds_sample *s = &ev->sample;

	if (!s->callchain)
		return -1;
	if (ev->evsel && DS_ATTR_FLAG(&ev->evsel->attr, DS_ATTR_DEFER_CALLCHAIN))
		return ds_callchain__deferred_marker(s->callchain, s->callchain_nr);
	return s->callchain_nr >= 2 && s->callchain[s->callchain_nr - 2] == DS_CONTEXT_USER_DEFERRED
	       ? (long)(s->callchain_nr - 2) : -1;
}

/* A deferring event's sample that still carries its user chain in place. */
static void count_inplace(struct ds_stitcher *st, const struct ds_event *ev)
{
	const struct ds_sample *s = &ev->sample;

	if (ev->evsel && DS_ATTR_FLAG(&ev->evsel->attr, DS_ATTR_DEFER_CALLCHAIN) && s->callchain)
		for (uint64_t i = 0; i < s->callchain_nr; i++)
			if (s->callchain[i] == DS_CONTEXT_USER) {
				st->stats.inplace_user++;
				break;
			}
}

/*
 * The common case needs no copy: a sample with nothing to stitch (no
 * marker, @m < 0) goes out as it came, held samples or not (perf's order).
 */
static bool pass_through(struct ds_stitcher *st, const struct ds_event *in, long m)
{
	if (in->hdr->type != DS_REC_SAMPLE || m >= 0 || in->stitch != DS_STITCH_NONE || in->cookie ||
	    (!st->opts.perf_order && st->head != st->tail))
		return false;
	st->stats.samples++;
	count_inplace(st, in);
	return true;
}

/* A sample whose deferred marker (if any) is at @m. */
static int push_sample(struct ds_stitcher *st, struct ds_event *ev, long m)
{
	struct ds_sample *s = &ev->sample;

	st->stats.samples++;
	if (m < 0) {
		count_inplace(st, ev);
		return emit(st, ev, false, NULL);
	}
	st->stats.deferred_samples++;
	ev->cookie = s->callchain[m + 1];
	struct tid_state *ts = tid_state(st, s->tid);

	if (!ts)
		return -ENOMEM;
	if (ts->chain && ts->chain->cookie == ev->cookie) {
		ev->stitch = DS_STITCH_BEFORE;
		st->stats.stitched_before++;
		return emit_held(st, ev, false, true, ts->chain);
	}
	struct chain *oc = orphan_chain(st, ev->cookie);

	if (oc) {
		ev->stitch = DS_STITCH_BEFORE;
		st->stats.stitched_before++;
		return emit(st, ev, false, oc);
	}
	/*
	 * A new kernel entry: the previous one's samples stay pending to the
	 * task's next record, which may yet be theirs (a later entry's sample
	 * stamped before the earlier entry's last ones): perf 7.2 holds them
	 * all and matches each by cookie there
	 */
	if (ts->npending && ts->cookie != ev->cookie)
		keep_older(st, ts);
	if (ts->chain && ts->chain->cookie != ev->cookie) {
		chain_put(ts->chain);
		ts->chain = NULL;
	}
	ts->cookie = ev->cookie;
	ts->npending++;
	ts->exited = false;
	ev->stitch = DS_STITCH_UNRESOLVED; /* until its record comes */
	return emit(st, ev, true, NULL);
}

static struct chain *new_chain(const struct ds_deferred_event *d, uint32_t tid, uint64_t time)
{
	struct chain *c = malloc(sizeof(*c) + d->nr * sizeof(uint64_t));

	if (!c)
		return NULL;
	c->refs = 1;
	c->tid = tid;
	c->cookie = d->cookie;
	c->time = time == DS_NO_TIME ? 0 : time;
	c->nr = d->nr;
	memcpy(c->ips, d->ips, d->nr * sizeof(uint64_t));
	return c;
}

static int add_orphan(struct ds_stitcher *st, struct chain *c)
{
	uint64_t k, v;

	if (!st->warned_tidless) {
		ds_warn("deferred callchain records without a tid (no sample_id_all): matching them by cookie alone\n");
		st->warned_tidless = true;
		if (rekey_pending(st))
			return -ENOMEM;
	}
	if (dsi_hashmap__count(&st->orphans) >= MAX_ORPHANS) {
		for (size_t i = 0; dsi_hashmap__next(&st->orphans, &i, &k, &v);)
			chain_put((struct chain *)(uintptr_t)v);
		dsi_hashmap__exit(&st->orphans);
	}
	if (orphan_chain(st, c->cookie))
		return 1; /* duplicate */
	if (dsi_hashmap__set(&st->orphans, c->cookie, (uint64_t)(uintptr_t)chain_get(c)))
		return -ENOMEM;
	return 0;
}

static int push_deferred(struct ds_stitcher *st, struct ds_event *ev)
{
	struct ds_deferred_event d;
	const char *why;
	struct chain *c;

	st->stats.records++;
	if (!ev->evsel || ds_deferred__parse(ev->evsel, ev->hdr, &d, &why))
		return emit(st, ev, false, NULL);
	ev->cookie = d.cookie;
	if (!ev->sample.has_tid) {
		st->stats.tidless_records++;
		c = new_chain(&d, (uint32_t)-1, ev->sample.time);
		if (!c)
			return -ENOMEM;
		int dup = add_orphan(st, c);

		if (dup < 0) {
			chain_put(c);
			return dup;
		}
		if (dup)
			st->stats.duplicate_records++;
		else
			settle_cookie(st, d.cookie, -1, c, false, 0);
		chain_put(c);
		return emit(st, ev, false, NULL);
	}
	struct tid_state *ts = tid_state(st, ev->sample.tid);

	if (!ts)
		return -ENOMEM;
	if (ts->chain && ts->chain->cookie == d.cookie) {
		st->stats.duplicate_records++;
	} else {
		c = new_chain(&d, ev->sample.tid, ev->sample.time);
		if (!c)
			return -ENOMEM;
		chain_put(ts->chain);
		ts->chain = c;
		if (ts->npending)
			settle_tid(st, ts, d.cookie, c, true, ev->sample.time);
	}
	release_waiting(st, ts, ev->sample.time);
	int err = !st->opts.perf_order ? drain_due(st) : release_tid(st, ts, ev->sample.time);

	return err ? err : emit(st, ev, false, NULL);
}

static int note_exit(struct ds_stitcher *st, struct ds_event *ev)
{
	struct ds_task_event t;
	const char *why;
	uint64_t *idx;

	if (!ev->evsel || ds_task__parse(ev->evsel, ev->hdr, &t, &why))
		return 0;
	idx = dsi_hashmap__find(&st->tids, t.tid);
	if (!idx)
		return 0;
	/* (the index, not a pointer into the map: settling may insert into it) */
	size_t i = (size_t)*idx;

	/* no later record of the task: perf prints them at the end (a thread it has forgotten) */
	give_up_older(st, &st->states[i]);
	release_waiting(st, &st->states[i], DS_NO_TIME);
	if (!st->states[i].npending) {
		/* nothing waits for this tid: its chain can go (bounds memory by live tids) */
		chain_put(st->states[i].chain);
		st->states[i].chain = NULL;
		return 0;
	}
	/*
	 * A task that exits inside the kernel may still get its record written
	 * (to a per-CPU tracking event) just after its EXIT: wait a little.
	 */
	st->states[i].exited = true;
	struct exit_note *n = dsi_grow(st->exits, &st->cap_exits, st->nr_exits + 1, sizeof(*n), 64);

	if (!n)
		return -ENOMEM;
	st->exits = n;
	st->exits[st->nr_exits++] = (struct exit_note){ t.tid, t.time + st->opts.exit_grace_ns };
	return 0;
}

/* Give up on exited tids whose grace period has passed. */
static void expire_exits(struct ds_stitcher *st, uint64_t now, bool all)
{
	while (st->exits_head < st->nr_exits &&
	       (all || st->exits[st->exits_head].deadline < now)) {
		uint64_t *idx = dsi_hashmap__find(&st->tids, st->exits[st->exits_head].tid);

		size_t i = idx ? (size_t)*idx : 0;   /* (settling may insert into the map) */

		if (idx && st->states[i].exited) {
			settle_tid(st, &st->states[i], 0, NULL, false, 0);
			chain_put(st->states[i].chain);
			st->states[i].chain = NULL;
		}
		st->exits_head++;
	}
	if (st->exits_head == st->nr_exits)
		st->exits_head = st->nr_exits = 0;
}

/*
 * What holding costs: the events' copies, and per held event its ring
 * slot (the ring is a power of two, up to twice what is used) and its
 * share of the pending map.
 */
static uint64_t held_bytes(const struct ds_stitcher *st)
{
	return st->arena.bytes_live + (st->tail - st->head) * (2 * sizeof(struct held) + 32) + st->aside_bytes;
}

/*
 * Too much held, down to three quarters of the bound so that this runs
 * once per many events, not for each: the oldest held samples that wait
 * are set aside (set_aside), while that store is within its share; past
 * it they go now (out of perf's order), the pending ones unresolved
 * (without their user stack, counted in released_early).
 */
static int enforce_limit(struct ds_stitcher *st)
{
	while (held_bytes(st) > st->opts.max_held_bytes / 4 * 3 && st->head < st->tail) {
		struct held *h = held_at(st, st->head);
		uint64_t before = st->stats.unresolved;
		/* in time order the head may be any event: no task state made for it */
		struct tid_state *ts = h->state == HELD_PENDING || h->state == HELD_WAIT || st->opts.perf_order
				       ? tid_state(st, h->tid) : NULL;
		uint64_t next_wait = h->next_wait;
		int err;

		if (ts && (h->state == HELD_PENDING || st->opts.perf_order) && set_aside(st, h, ts)) {
			if (st->opts.perf_order) {
				/* (out of its task's queue, at the end of its list set aside) */
				ts->wait_head = next_wait;
				if (ts->wait_head == NO_SEQ)
					ts->wait_tail = NO_SEQ;
			}
			compact(st);
			continue;
		}
		if (h->state == HELD_PENDING) {
			if (!ts)
				return -ENOMEM;
			settle_tid(st, ts, 0, NULL, false, 0);
		}
		if ((st->opts.perf_order || h->state == HELD_WAIT) && ts) {
			/* the oldest held sample is the oldest of its task's queue */
			ts->wait_head = h->next_wait;
			if (ts->wait_head == NO_SEQ)
				ts->wait_tail = NO_SEQ;
		}
		err = deliver_held(st, h);
		st->stats.released_early += st->stats.unresolved - before;
		compact(st);
		if (err)
			return err;
	}
	return 0;
}

int ds_stitcher__push(struct ds_stitcher *st, const struct ds_event *in)
{
	long m = in->hdr->type == DS_REC_SAMPLE ? marker_of(in) : -1;
	struct ds_event ev;
	int err;

	if (in->sample.time != DS_NO_TIME && in->sample.time > st->now)
		st->now = in->sample.time;
	if (st->nr_exits)
		expire_exits(st, st->now, false);
	if (st->nr_states >= st->sweep_at)
		sweep_states(st);
	if (pass_through(st, in, m))
		return st->fn(st->ctx, in);
	ev = *in;
	ev.stitch = DS_STITCH_NONE;
	ev.cookie = 0;
	ev.record_time = 0;
	switch (ev.hdr->type) {
	case DS_REC_SAMPLE:
		err = push_sample(st, &ev, m);
		break;
	case DS_REC_CALLCHAIN_DEFERRED:
		err = push_deferred(st, &ev);
		break;
	case DS_REC_EXIT:
		err = note_exit(st, &ev);
		if (!err)
			err = emit(st, &ev, false, NULL);
		break;
	default:
		err = emit(st, &ev, false, NULL);
		break;
	}
	if (err)
		return err;
	if (held_bytes(st) > st->opts.max_held_bytes && (err = enforce_limit(st)))
		return err;
	if (st->nr_due && (err = drain_due(st)))
		return err;
	return !st->opts.perf_order ? drain_ready(st) : 0;
}

/* The end: what still waits goes out unresolved or as stitched, oldest first (perf's order). */
int ds_stitcher__flush(struct ds_stitcher *st)
{
	int err = 0;

	expire_exits(st, 0, true);
	for (size_t i = 0; i < st->nr_states; i++)
		give_up_older(st, &st->states[i]);
	err = flush_aside(st);
	for (uint64_t s = st->head; s < st->tail && !err; s++) {
		struct held *h = held_at(st, s);

		/* what perf still holds at the end, it prints then */
		if (h->state == HELD_WAIT || (st->opts.perf_order && h->state != HELD_DONE))
			h->release_time = DS_NO_TIME;
		if (h->state != HELD_DONE)
			err = deliver_held(st, h);
	}
	compact(st);
	dsi_hashmap__exit(&st->pending);
	for (size_t i = 0; i < st->nr_states; i++) {
		st->states[i].npending = 0;
		st->states[i].wait_head = st->states[i].wait_tail = NO_SEQ;
	}
	return err;
}
