// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdlib.h>
#include "ordered.h"

void ds_ordered__init(struct ds_ordered *o, ds_ordered_deliver_fn fn, void *ctx)
{
	*o = (struct ds_ordered){ .deliver = fn, .ctx = ctx };
}

void ds_ordered__exit(struct ds_ordered *o)
{
	for (size_t i = 0; i < o->len; i++)
		ds_arena__release(&o->arena, o->heap[i].chunk);
	free(o->heap);
	ds_arena__exit(&o->arena);
	o->heap = NULL;
	o->len = o->cap = 0;
}

static int before(const struct ds_ordered_item *a, const struct ds_ordered_item *b)
{
	return a->time < b->time || (a->time == b->time && a->seq < b->seq);
}

static void sift_up(struct ds_ordered_item *h, size_t i)
{
	struct ds_ordered_item x = h[i];

	while (i) {
		size_t p = (i - 1) / 2;

		if (!before(&x, &h[p]))
			break;
		h[i] = h[p];
		i = p;
	}
	h[i] = x;
}

static void sift_down(struct ds_ordered_item *h, size_t len, size_t i)
{
	struct ds_ordered_item x = h[i];

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= len)
			break;
		if (c + 1 < len && before(&h[c + 1], &h[c]))
			c++;
		if (!before(&h[c], &x))
			break;
		h[i] = h[c];
		i = c;
	}
	h[i] = x;
}

int ds_ordered__queue(struct ds_ordered *o, const struct ds_event_header *hdr, uint64_t offset, uint64_t time)
{
	struct ds_ordered_item it;

	if (o->len == o->cap) {
		size_t ncap = o->cap ? o->cap * 2 : 4096;
		struct ds_ordered_item *nh = realloc(o->heap, ncap * sizeof(*nh));

		if (!nh)
			return -ENOMEM;
		o->heap = nh;
		o->cap = ncap;
	}
	it.hdr = ds_arena__copy(&o->arena, hdr, hdr->size, &it.chunk);
	if (!it.hdr)
		return -ENOMEM;
	it.time = time;
	it.seq = o->seq++;
	it.offset = offset;
	if (time < o->last_flush)
		o->nr_unordered++;
	if (time > o->max_time)
		o->max_time = time;
	o->heap[o->len] = it;
	sift_up(o->heap, o->len++);
	if (o->len > o->peak_len)
		o->peak_len = o->len;
	return 0;
}

static int flush_upto(struct ds_ordered *o, uint64_t limit)
{
	while (o->len && o->heap[0].time <= limit) {
		struct ds_ordered_item it = o->heap[0];
		int err;

		o->heap[0] = o->heap[--o->len];
		if (o->len)
			sift_down(o->heap, o->len, 0);
		o->last_flush = it.time;
		err = o->deliver(o->ctx, it.hdr, it.offset);
		ds_arena__release(&o->arena, it.chunk);
		if (err)
			return err;
	}
	return 0;
}

int ds_ordered__round(struct ds_ordered *o)
{
	int err = flush_upto(o, o->next_flush);

	o->next_flush = o->max_time;
	return err;
}

int ds_ordered__flush_all(struct ds_ordered *o)
{
	return flush_upto(o, UINT64_MAX);
}
