// SPDX-License-Identifier: MIT
/*
 * The queue is an array, appended to in file order and sorted at each
 * flush.  What a round adds is a few ascending runs (one per CPU buffer the
 * recorder drained), after the sorted rest of the previous round, so a
 * natural merge sort orders it in a pass or two; a binary heap paid a
 * sift of log(queue) compares for every record instead.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "util/grow.h"
#include "stream/ordered.h"
#include "format/source.h"

void dsi_ordered__init(struct ds_ordered *o, ds_ordered_deliver_fn fn, void *ctx)
{
	*o = (struct ds_ordered){ .deliver = fn, .ctx = ctx, .sorted = true };
}

void dsi_ordered__release(struct ds_ordered *o, struct dsi_arena_chunk *chunk, struct ds_source_window *win)
{
	if (win)
		dsi_source__unpin(win);
	else
		dsi_arena__release(&o->arena, chunk);
}

void dsi_ordered__exit(struct ds_ordered *o)
{
	for (size_t i = o->head; i < o->len; i++)
		dsi_ordered__release(o, o->items[i].chunk, o->items[i].win);
	free(o->items);
	free(o->tmp);
	dsi_arena__exit(&o->arena);
	o->items = o->tmp = NULL;
	o->head = o->len = o->cap = 0;
}

/* What a queued record costs: its bytes, its item and the sort's copy of it. */
static inline size_t item_cost(const struct ds_event_header *hdr)
{
	return hdr->size + 2 * sizeof(struct ds_ordered_item);
}

static inline bool before(const struct ds_ordered_item *a, const struct ds_ordered_item *b)
{
	return a->time < b->time || (a->time == b->time && a->seq < b->seq);
}

static inline int check_budget(struct ds_ordered *o);

static int make_room(struct ds_ordered *o)
{
	struct ds_ordered_item *n;

	if (o->head) {  /* what was delivered leaves the front first */
		memmove(o->items, o->items + o->head, (o->len - o->head) * sizeof(*o->items));
		o->len -= o->head;
		o->head = 0;
		if (o->len < o->cap)
			return 0;
	}
	n = dsi_grow(o->items, &o->cap, o->len + 1, sizeof(*n), 4096);
	if (!n)
		return -ENOMEM;
	o->items = n;
	return 0;
}

static struct ds_ordered_item *append(struct ds_ordered *o, const struct ds_event_header *hdr, uint64_t offset,
				      uint64_t time)
{
	struct ds_ordered_item *it;

	if (o->len == o->cap && make_room(o))
		return NULL;
	it = &o->items[o->len];
	*it = (struct ds_ordered_item){ .time = time, .seq = o->seq++, .offset = offset, .hdr = hdr };
	if (time < o->last_flush)
		o->nr_unordered++;
	if (time > o->max_time)
		o->max_time = time;
	if (o->len > o->head && before(it, &o->items[o->len - 1]))
		o->sorted = false;
	o->len++;
	if (o->len - o->head > o->peak_len)
		o->peak_len = o->len - o->head;
	o->held += item_cost(hdr);
	return it;
}

int dsi_ordered__queue(struct ds_ordered *o, const struct ds_event_header *hdr, uint64_t offset, uint64_t time)
{
	struct dsi_arena_chunk *chunk;
	const struct ds_event_header *copy = dsi_arena__copy(&o->arena, hdr, hdr->size, &chunk);
	struct ds_ordered_item *it;

	if (!copy)
		return -ENOMEM;
	it = append(o, copy, offset, time);
	if (!it) {
		dsi_arena__release(&o->arena, chunk);
		return -ENOMEM;
	}
	it->chunk = chunk;
	return check_budget(o);
}

int dsi_ordered__queue_pinned(struct ds_ordered *o, const struct ds_event_header *hdr, uint64_t offset,
			     uint64_t time, struct ds_source_window *win)
{
	struct ds_ordered_item *it = append(o, hdr, offset, time);

	if (!it) {
		dsi_source__unpin(win);
		return -ENOMEM;
	}
	it->win = win;
	return check_budget(o);
}

/* Move each queued record into the arena's newest chunks, freeing what held it. */
static int compact(struct ds_ordered *o)
{
	for (size_t i = o->head; i < o->len; i++) {
		struct ds_ordered_item *it = &o->items[i];
		struct dsi_arena_chunk *chunk;
		const struct ds_event_header *copy = dsi_arena__copy(&o->arena, it->hdr, it->hdr->size, &chunk);

		if (!copy)
			return -ENOMEM;
		dsi_ordered__release(o, it->chunk, it->win);
		it->hdr = copy;
		it->chunk = chunk;
		it->win = NULL;
	}
	o->nr_compactions++;
	return 0;
}

int dsi_ordered__bound_memory(struct ds_ordered *o, const size_t *window_bytes)
{
	size_t kept = dsi_ordered__kept(o, *window_bytes);

	if (!o->budget || kept <= o->budget || kept <= o->compact_at)
		return 0;
	int err = compact(o);

	o->compact_at = dsi_ordered__kept(o, *window_bytes) + o->budget / 2;
	return err;
}

/* Merge the sorted a[0..na) and b[0..nb) into out. */
static void merge(const struct ds_ordered_item *a, size_t na, const struct ds_ordered_item *b, size_t nb,
		  struct ds_ordered_item *out)
{
	size_t i = 0, j = 0;

	while (i < na && j < nb)
		*out++ = before(&b[j], &a[i]) ? b[j++] : a[i++];
	memcpy(out, a + i, (na - i) * sizeof(*a));
	memcpy(out + (na - i), b + j, (nb - j) * sizeof(*b));
}

/* End of the ascending run that starts at i. */
static size_t run_end(const struct ds_ordered_item *v, size_t i, size_t n)
{
	while (++i < n && !before(&v[i], &v[i - 1]))
		;
	return i;
}

/*
 * Natural merge sort of items[head..len): each pass merges neighbouring
 * runs pairwise into the other buffer, so k runs take log2(k) passes.
 */
static int sort_queue(struct ds_ordered *o)
{
	struct ds_ordered_item *src, *dst;
	size_t n = o->len - o->head;

	if (o->sorted || n < 2) {   /* items may still be NULL (fuzz: an empty stream) */
		o->sorted = true;
		return 0;
	}
	dst = dsi_grow(o->tmp, &o->tmp_cap, n, sizeof(*dst), 4096);
	if (!dst)
		return -ENOMEM;
	o->tmp = dst;
	src = o->items + o->head;
	for (;;) {
		size_t i = 0, runs = 0;

		while (i < n) {
			size_t mid = run_end(src, i, n), end = mid < n ? run_end(src, mid, n) : n;

			merge(src + i, mid - i, src + mid, end - mid, dst + i);
			i = end;
			runs++;
		}
		struct ds_ordered_item *t = src;

		src = dst;
		dst = t;
		if (runs == 1)
			break;
	}
	if (src != o->items + o->head)
		memcpy(o->items + o->head, src, n * sizeof(*src));
	o->sorted = true;
	return 0;
}

/* Deliver the queue's oldest record (and release it unless handed off); deliver's result. */
static int deliver_head(struct ds_ordered *o)
{
	struct ds_ordered_item it = o->items[o->head++];
	int err;

	o->held -= item_cost(it.hdr);
	o->last_flush = it.time;
	err = o->deliver(o->ctx, &it);
	if (!o->handoff)
		dsi_ordered__release(o, it.chunk, it.win);
	return err;
}

static int flush_upto(struct ds_ordered *o, uint64_t limit)
{
	int err = sort_queue(o);

	if (err)
		return err;
	while (o->head < o->len && o->items[o->head].time <= limit)
		if ((err = deliver_head(o)))
			return err;
	if (o->head == o->len)
		o->head = o->len = 0;  /* sorted stays true: nothing is queued */
	return 0;
}

/*
 * Over the budget: deliver the oldest records until half of it is held
 * (half, so that a stream without rounds sorts once per half budget, not
 * once per record).  Returns the first non-zero deliver result.
 */
static int over_budget(struct ds_ordered *o)
{
	int err = sort_queue(o);

	if (err)
		return err;
	while (o->head < o->len && o->held > o->budget / 2) {
		o->nr_early++;
		if ((err = deliver_head(o)))
			return err;
	}
	if (o->head == o->len)
		o->head = o->len = 0;
	/* what the next round may deliver now is at least what went early */
	if (o->next_flush < o->last_flush)
		o->next_flush = o->last_flush;
	return 0;
}

static inline int check_budget(struct ds_ordered *o)
{
	return o->budget && o->held > o->budget ? over_budget(o) : 0;
}

int dsi_ordered__round(struct ds_ordered *o)
{
	int err = flush_upto(o, o->next_flush);

	o->next_flush = o->max_time;
	return err;
}

int dsi_ordered__flush_all(struct ds_ordered *o)
{
	return flush_upto(o, UINT64_MAX);
}
