/* SPDX-License-Identifier: MIT */
/*
 * An id map: the id of a key equal to the one asked for.  The caller keeps
 * its keys (most often an array, the id an index in it) and says what
 * equal means with a callback, eq(ctx, id, key); the map keeps, per id,
 * 32 bits of the key's hash, and asks eq only of the ids whose bits match.
 * So "hash, compare, rehash on a collision" is written once, and two keys
 * with one hash cost a comparison, never a wrong answer.
 *
 *	struct thing *n = dsi_grow(v, &cap, nr + 1, sizeof(*v), 256);
 *	...
 *	id = dsi_idmap__find_or_add(&m, thing_hash(key), thing_eq, ctx, key, nr, &added);
 *	if (id == DSI_IDMAP_NONE)
 *		return -ENOMEM;         (nothing was added)
 *	if (added)
 *		v[nr++] = *key;         (room was made first: nothing can fail now)
 *
 * @hash must be mixed already (dsi_hash64, dsi_hash_pair, dsi_hash64 of
 * dsi_hash_str): its low 32 bits pick the slot and tell keys apart.  eq is
 * called with the ctx and key given, on ids added before, and must not
 * change the map.  Ids are any u32 but DSI_IDMAP_NONE, given by the caller
 * (a dense index, an offset, an index + 1).
 *
 * Open addressing with linear probing, a power-of-two capacity and a load
 * under 1/2; a slot is 8 bytes (hash bits, id + 1; 0 is free).  Nothing is
 * ever removed but everything at once (dsi_idmap__exit), so a map that has
 * grown never allocates again.  The probe loops are inline so that an eq
 * known at the call site is inlined into them.
 *
 * Lifecycle: zero-initialise (struct dsi_idmap m = {0}); dsi_idmap__exit()
 * frees the table and leaves it empty, ready for use again.
 *
 * Who may use it: the library, the CLI and the tests (util/ is both's module).
 */
#ifndef DSTACK_IDMAP_H
#define DSTACK_IDMAP_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DSI_IDMAP_NONE UINT32_MAX

/* Is the key with id @id equal to @key?  (@ctx: the caller's, e.g. the array of keys) */
typedef bool dsi_idmap_eq_fn(const void *ctx, uint32_t id, const void *key);

struct dsi_idmap_slot {
	uint32_t hash;   /* the key hash's low 32 bits */
	uint32_t id1;    /* id + 1; 0: free */
};

struct dsi_idmap {
	struct dsi_idmap_slot *slots;
	size_t cap;      /* 0 or a power of two */
	size_t len;      /* ids in the map */
};

void dsi_idmap__exit(struct dsi_idmap *m);
/* Room for one more id (called by the adds): 0 or -ENOMEM, when the map is unchanged. */
int dsi_idmap__grow(struct dsi_idmap *m);

static inline size_t dsi_idmap__count(const struct dsi_idmap *m)
{
	return m->len;
}

/* The id of the key equal to @key (by @eq), DSI_IDMAP_NONE if there is none. */
static inline uint32_t dsi_idmap__find(const struct dsi_idmap *m, uint64_t hash, dsi_idmap_eq_fn *eq,
				      const void *ctx, const void *key)
{
	uint32_t h = (uint32_t)hash;

	if (!m->cap)
		return DSI_IDMAP_NONE;
	for (size_t i = h & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
		const struct dsi_idmap_slot *s = &m->slots[i];

		if (!s->id1)
			return DSI_IDMAP_NONE;
		if (s->hash == h && eq(ctx, s->id1 - 1, key))
			return s->id1 - 1;
	}
}

/*
 * The id of the key equal to @key, else @new_id (not DSI_IDMAP_NONE), added
 * for it: *@added tells which; the caller then stores the key under
 * @new_id before the next call.  DSI_IDMAP_NONE on ENOMEM (nothing added).
 */
static inline uint32_t dsi_idmap__find_or_add(struct dsi_idmap *m, uint64_t hash, dsi_idmap_eq_fn *eq,
					     const void *ctx, const void *key, uint32_t new_id, bool *added)
{
	uint32_t h = (uint32_t)hash;

	*added = false;
	if ((m->len + 1) * 2 > m->cap && dsi_idmap__grow(m))
		return DSI_IDMAP_NONE;
	for (size_t i = h & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
		struct dsi_idmap_slot *s = &m->slots[i];

		if (!s->id1) {
			s->hash = h;
			s->id1 = new_id + 1;
			m->len++;
			*added = true;
			return new_id;
		}
		if (s->hash == h && eq(ctx, s->id1 - 1, key))
			return s->id1 - 1;
	}
}

/*
 * Add @id (not DSI_IDMAP_NONE) for a key with @hash that dsi_idmap__find
 * just did not find (a key added twice would only ever be found as the
 * first).  0 or -ENOMEM (nothing added).
 */
static inline int dsi_idmap__add(struct dsi_idmap *m, uint64_t hash, uint32_t id)
{
	uint32_t h = (uint32_t)hash;

	if ((m->len + 1) * 2 > m->cap && dsi_idmap__grow(m))
		return -ENOMEM;
	for (size_t i = h & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
		struct dsi_idmap_slot *s = &m->slots[i];

		if (!s->id1) {
			s->hash = h;
			s->id1 = id + 1;
			m->len++;
			return 0;
		}
	}
}

#endif
