// SPDX-License-Identifier: MIT
#include <stdlib.h>
#include <string.h>
#include "util/arena.h"
#include "util/prefault.h"

#define CHUNK_SIZE (256u << 10)   /* what a round holds is tracked closely */
#define PREFAULT_STEP (64u << 10)   /* a small input fills a chunk only in part */
/* empty chunks kept for reuse: a steady stream needs a few; more (after a
 * burst, or a compaction that emptied many) go back to the allocator */
#define SPARE_CHUNKS 8

struct dsi_arena_chunk {
	struct dsi_arena_chunk *next;
	size_t size, used;
	size_t populated;             /* bytes of data prefaulted (kept when reused) */
	size_t live;
	_Alignas(8) unsigned char data[];
};

static struct dsi_arena_chunk *new_chunk(struct dsi_arena *a, size_t need)
{
	struct dsi_arena_chunk *c = NULL;

	if (need <= CHUNK_SIZE && a->free) {
		c = a->free;
		a->free = c->next;
		a->nr_free--;
	} else {
		size_t size = need > CHUNK_SIZE ? need : CHUNK_SIZE;

		c = malloc(sizeof(*c) + size);
		if (!c)
			return NULL;
		c->size = size;
		c->populated = 0;
	}
	c->next = NULL;
	c->used = 0;
	c->live = 0;
	a->bytes_live += c->size;
	if (a->bytes_live > a->bytes_peak)
		a->bytes_peak = a->bytes_live;
	return c;
}

static void retire(struct dsi_arena *a, struct dsi_arena_chunk *c)
{
	a->bytes_live -= c->size;
	if (c->size == CHUNK_SIZE && a->nr_free < SPARE_CHUNKS) {
		c->next = a->free;
		a->free = c;
		a->nr_free++;
	} else {
		free(c);
	}
}

void *dsi_arena__copy(struct dsi_arena *a, const void *src, size_t len, struct dsi_arena_chunk **chunk)
{
	size_t need = (len + 7) & ~(size_t)7;
	struct dsi_arena_chunk *c = a->cur;

	if (!c || c->size - c->used < need) {
		struct dsi_arena_chunk *n = new_chunk(a, need);

		if (!n)
			return NULL;
		/* the old current chunk is retired once its last record goes */
		if (c && !c->live)
			retire(a, c);
		a->cur = c = n;
	}
	void *p = c->data + c->used;

	if (c->used + need > c->populated) {
		size_t step = need > PREFAULT_STEP ? need : PREFAULT_STEP;

		if (step > c->size - c->populated)
			step = c->size - c->populated;
		dsi_prefault_write(c->data + c->populated, step);
		c->populated += step;
	}
	memcpy(p, src, len);
	c->used += need;
	c->live++;
	*chunk = c;
	return p;
}

void dsi_arena__release(struct dsi_arena *a, struct dsi_arena_chunk *c)
{
	if (--c->live)
		return;
	if (c == a->cur)
		c->used = 0; /* nothing left in it: refill from the start */
	else
		retire(a, c);
}

void dsi_arena__exit(struct dsi_arena *a)
{
	struct dsi_arena_chunk *c, *n;

	for (c = a->free; c; c = n) {
		n = c->next;
		free(c);
	}
	free(a->cur);
	/* chunks still holding live records belong to callers that leaked them */
	a->cur = a->free = NULL;
	a->nr_free = 0;
	a->bytes_live = 0;
}
