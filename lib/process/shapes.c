// SPDX-License-Identifier: MIT
/*
 * Shapes: chains whose frames are the same but for what the analyses do
 * not look at (the addresses of frames with a symbol, the maps they came
 * from) share a shape id, so the same code run by many processes adds up
 * under one id.  Each distinct frame is kept once (struct shape_frame: what
 * a shape compares) under a dense id, each shape as the array of its
 * frames' ids (4 bytes a frame).
 *
 * Both tables are u64 hash maps keyed by a hash of the content, probed on
 * to the next key when two contents collide.
 */
#include <stdlib.h>
#include <string.h>
#include "util/grow.h"
#include "process/machine_int.h"

#define SHAPE_IDS_MAX ((4u << 20) / sizeof(uint32_t))   /* frame ids kept in shapes, at most */

struct shape_frame {
	const char *sym, *dso, *elf_sym;
	uint64_t ip, addr;             /* only for frames with no symbol */
	uint8_t flags;                 /* inlined, kernel, cookie */
};

struct shape {
	uint32_t off, nr;              /* in shape_table.ids */
};

struct shape_table {
	struct ds_hashmap frame_map;   /* frame hash (probed on) -> index in frames */
	struct shape_frame *frames;
	size_t nr_frames, cap_frames;
	struct ds_hashmap shape_map;   /* hash of the frame ids (probed on) -> index in shapes */
	struct shape *shapes;
	size_t nr_shapes, cap_shapes;
	uint32_t *ids;                 /* each shape's frames, as ids in frames */
	size_t nr_ids, cap_ids;
};

struct shape_table *shape_table__new(void)
{
	return calloc(1, sizeof(struct shape_table));
}

void shape_table__delete(struct shape_table *st)
{
	if (!st)
		return;
	ds_hashmap__exit(&st->frame_map);
	ds_hashmap__exit(&st->shape_map);
	free(st->frames);
	free(st->shapes);
	free(st->ids);
	free(st);
}

/* ---- frames ------------------------------------------------------------ */

static uint8_t frame_flags(const struct ds_cc_frame *f)
{
	return (uint8_t)(f->inlined | f->kernel << 1 | f->cookie << 2);
}

static struct shape_frame shape_frame_of(const struct ds_cc_frame *f)
{
	return (struct shape_frame){ .sym = f->sym, .dso = f->dso, .elf_sym = f->elf_sym, .flags = frame_flags(f),
				     .ip = f->sym ? 0 : f->ip, .addr = f->sym ? 0 : f->addr };
}

/*
 * Equal for every analysis: names (interned: compared as pointers), flags,
 * and the addresses only of frames with no symbol (shape_frame_of zeroes
 * them otherwise).
 */
static bool frame_same(const struct shape_frame *a, const struct shape_frame *b)
{
	return a->sym == b->sym && a->dso == b->dso && a->elf_sym == b->elf_sym && a->flags == b->flags &&
	       a->ip == b->ip && a->addr == b->addr;
}

static uint64_t frame_hash(const struct shape_frame *sf)
{
	return ds_hash_pair(ds_hash_pair((uintptr_t)sf->sym, (uintptr_t)sf->dso),
			    ds_hash_pair((uintptr_t)sf->elf_sym ^ sf->flags, sf->ip ^ sf->addr * 0x9e3779b97f4a7c15ULL));
}

uint32_t shape_table__frame_id(struct shape_table *st, const struct ds_cc_frame *f)
{
	struct shape_frame sf = shape_frame_of(f), *n;
	uint64_t k = frame_hash(&sf), *v;

	for (;; k = ds_hash64(k + 1)) {   /* collisions: the next key */
		v = ds_hashmap__find(&st->frame_map, k);
		if (!v)
			break;
		if (frame_same(&st->frames[*v], &sf))
			return (uint32_t)*v;
	}
	if (st->nr_frames >= UINT32_MAX - 1)
		return UINT32_MAX;
	n = ds_grow(st->frames, &st->cap_frames, st->nr_frames + 1, sizeof(*n), 1024);
	if (!n)
		return UINT32_MAX;
	st->frames = n;
	if (ds_hashmap__set(&st->frame_map, k, st->nr_frames) < 0)
		return UINT32_MAX;
	st->frames[st->nr_frames] = sf;
	return (uint32_t)st->nr_frames++;
}

/* ---- shapes ------------------------------------------------------------ */

static uint64_t ids_hash(const uint32_t *ids, size_t n)
{
	uint64_t k = n;

	for (size_t i = 0; i < n; i++) {
		k = (k ^ ids[i]) * 0x9e3779b97f4a7c15ULL;
		k ^= k >> 29;
	}
	return ds_hash64(k);
}

/* A new shape of @n frame ids under key @k; its index + 1, 0 when it cannot be kept. */
static uint64_t shape_table__append(struct shape_table *st, uint64_t k, const uint32_t *ids, size_t n)
{
	struct shape *ns;
	uint32_t *ni;

	if (st->nr_ids + n > SHAPE_IDS_MAX)
		return 0;   /* full: later shapes go without an id */
	ns = ds_grow(st->shapes, &st->cap_shapes, st->nr_shapes + 1, sizeof(*ns), 256);
	if (!ns)
		return 0;
	st->shapes = ns;
	ni = ds_grow(st->ids, &st->cap_ids, st->nr_ids + n, sizeof(*ni), 4096);
	if (!ni)
		return 0;
	st->ids = ni;
	if (ds_hashmap__set(&st->shape_map, k, st->nr_shapes) < 0)
		return 0;
	memcpy(st->ids + st->nr_ids, ids, n * sizeof(*ids));
	st->shapes[st->nr_shapes] = (struct shape){ .off = (uint32_t)st->nr_ids, .nr = (uint32_t)n };
	st->nr_ids += n;
	return ++st->nr_shapes;
}

uint64_t shape_table__add(struct shape_table *st, const uint32_t *ids, size_t n)
{
	uint64_t k;

	for (k = ids_hash(ids, n);; k = ds_hash64(k + 1)) {   /* collisions: the next key */
		uint64_t *v = ds_hashmap__find(&st->shape_map, k);
		const struct shape *sh;

		if (!v)
			break;
		sh = &st->shapes[*v];
		if (sh->nr == n && !memcmp(st->ids + sh->off, ids, n * sizeof(*ids)))
			return *v + 1;
	}
	return shape_table__append(st, k, ids, n);
}

const uint32_t *shape_table__frames(const struct shape_table *st, uint64_t shape, size_t *nr)
{
	if (!st || !shape || shape > st->nr_shapes) {
		*nr = 0;
		return NULL;
	}
	*nr = st->shapes[shape - 1].nr;
	return st->ids + st->shapes[shape - 1].off;
}
