// SPDX-License-Identifier: MIT
/*
 * Shapes: chains whose frames are the same but for what the analyses do
 * not look at (the addresses of frames with a symbol, the maps they came
 * from) share a shape id, so the same code run by many processes adds up
 * under one id.  Each distinct frame is kept once (struct shape_frame: what
 * a shape compares) under a dense id, each shape as the array of its
 * frames' ids (4 bytes a frame).
 *
 * Both are found by content through an id map (util/idmap.h): two frames
 * or shapes with one hash cost a comparison, never a wrong id.
 */
#include <stdlib.h>
#include <string.h>
#include "util/grow.h"
#include "process/machine_int.h"

#define SHAPE_IDS_MAX ((4u << 20) / sizeof(uint32_t))   /* frame ids kept in shapes, at most */

struct shape_frame {
	const char *sym, *dso, *elf_sym;
	uint64_t ip, addr;             /* only for frames with no symbol */
	uint64_t start;                /* the symbol's start in its object (kernel: its address) */
	uint8_t flags;                 /* inlined, kernel, cookie */
};

struct shape {
	uint32_t off, nr;              /* in shape_table.ids */
};

struct shape_table {
	struct dsi_idmap frame_ids;     /* frame -> index in frames */
	struct shape_frame *frames;
	size_t nr_frames, cap_frames;
	struct dsi_idmap shape_ids;     /* frame ids -> index in shapes */
	struct shape *shapes;
	size_t nr_shapes, cap_shapes;
	uint32_t *ids;                 /* each shape's frames, as ids in frames */
	size_t nr_ids, cap_ids;
};

struct shape_table *dsi_shape_table__new(void)
{
	return calloc(1, sizeof(struct shape_table));
}

void dsi_shape_table__delete(struct shape_table *st)
{
	if (!st)
		return;
	dsi_idmap__exit(&st->frame_ids);
	dsi_idmap__exit(&st->shape_ids);
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
				     .ip = f->sym ? 0 : f->ip, .addr = f->sym ? 0 : f->addr,
				     .start = !f->sym ? 0 : f->kernel ? f->ip - f->offset : f->addr - f->offset };
}

/*
 * Equal for every analysis: names (interned: compared as pointers), flags,
 * the symbol's start in its object (two functions of one name are two to
 * perf's report: its keys compare symbols by start), and the addresses
 * only of frames with no symbol (shape_frame_of zeroes them otherwise).
 */
static bool frame_same(const struct shape_frame *a, const struct shape_frame *b)
{
	return a->sym == b->sym && a->dso == b->dso && a->elf_sym == b->elf_sym && a->flags == b->flags &&
	       a->ip == b->ip && a->addr == b->addr && a->start == b->start;
}

static uint64_t frame_hash(const struct shape_frame *sf)
{
	return dsi_hash_pair(dsi_hash_pair((uintptr_t)sf->sym, (uintptr_t)sf->dso),
			    dsi_hash_pair((uintptr_t)sf->elf_sym ^ sf->flags,
					  sf->ip ^ (sf->addr ^ sf->start * 0xc2b2ae3d27d4eb4fULL) * 0x9e3779b97f4a7c15ULL));
}

static bool frame_eq(const void *ctx, uint32_t id, const void *key)
{
	return frame_same(&((const struct shape_table *)ctx)->frames[id], key);
}

uint32_t dsi_shape_table__frame_id(struct shape_table *st, const struct ds_cc_frame *f)
{
	struct shape_frame sf = shape_frame_of(f);
	struct shape_frame *n = dsi_grow(st->frames, &st->cap_frames, st->nr_frames + 1, sizeof(*n), 1024);
	uint32_t id;
	bool added;

	if (!n || st->nr_frames >= UINT32_MAX - 1)
		return UINT32_MAX;
	st->frames = n;
	id = dsi_idmap__find_or_add(&st->frame_ids, frame_hash(&sf), frame_eq, st, &sf, (uint32_t)st->nr_frames,
				   &added);
	if (added)
		st->frames[st->nr_frames++] = sf;
	return id;
}

/* ---- shapes ------------------------------------------------------------ */

static uint64_t ids_hash(const uint32_t *ids, size_t n)
{
	uint64_t k = n;

	for (size_t i = 0; i < n; i++) {
		k = (k ^ ids[i]) * 0x9e3779b97f4a7c15ULL;
		k ^= k >> 29;
	}
	return dsi_hash64(k);
}

struct shape_key {
	const uint32_t *ids;
	size_t n;
};

static bool shape_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct shape_table *st = ctx;
	const struct shape *sh = &st->shapes[id];
	const struct shape_key *k = key;

	return sh->nr == k->n && (!k->n || !memcmp(st->ids + sh->off, k->ids, k->n * sizeof(*k->ids)));
}

/* A new shape of @n frame ids, hashed @hash; its index + 1, 0 when it cannot be kept. */
static uint64_t shape_table__append(struct shape_table *st, uint64_t hash, const uint32_t *ids, size_t n)
{
	struct shape *ns;
	uint32_t *ni;

	if (st->nr_ids + n > SHAPE_IDS_MAX)
		return 0;   /* full: later shapes go without an id */
	ns = dsi_grow(st->shapes, &st->cap_shapes, st->nr_shapes + 1, sizeof(*ns), 256);
	if (!ns)
		return 0;
	st->shapes = ns;
	ni = dsi_grow(st->ids, &st->cap_ids, st->nr_ids + n, sizeof(*ni), 4096);
	if (!ni)
		return 0;
	st->ids = ni;
	if (dsi_idmap__add(&st->shape_ids, hash, (uint32_t)st->nr_shapes) < 0)
		return 0;
	if (n)
		memcpy(st->ids + st->nr_ids, ids, n * sizeof(*ids));
	st->shapes[st->nr_shapes] = (struct shape){ .off = (uint32_t)st->nr_ids, .nr = (uint32_t)n };
	st->nr_ids += n;
	return ++st->nr_shapes;
}

uint64_t dsi_shape_table__add(struct shape_table *st, const uint32_t *ids, size_t n)
{
	struct shape_key key = { .ids = ids, .n = n };
	uint64_t hash = ids_hash(ids, n);
	uint32_t id = dsi_idmap__find(&st->shape_ids, hash, shape_eq, st, &key);

	if (id != DSI_IDMAP_NONE)
		return (uint64_t)id + 1;
	return shape_table__append(st, hash, ids, n);
}

const uint32_t *dsi_shape_table__frames(const struct shape_table *st, uint64_t shape, size_t *nr)
{
	if (!st || !shape || shape > st->nr_shapes) {
		*nr = 0;
		return NULL;
	}
	*nr = st->shapes[shape - 1].nr;
	return st->ids + st->shapes[shape - 1].off;
}
