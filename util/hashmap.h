/* SPDX-License-Identifier: MIT */
/*
 * An open-addressing hash map from a 64-bit key to a 64-bit value (or a
 * pointer cast to one).  Linear probing, power-of-two capacity, backward-
 * shift deletion (no tombstones), so every operation is O(1) expected and a
 * map that has grown never allocates again in the steady state.
 *
 * A slot is its key and value, 16 bytes, with no flag: key 0 marks a free
 * slot, and the key 0 itself (a tid, a chunk number) is kept beside the
 * table, so that a map probed at random misses the cache less
 * (docs/performance.md).
 *
 * Lifecycle: zero-initialise (struct dsi_hashmap m = {0}) or call
 * dsi_hashmap__init(); dsi_hashmap__exit() frees the table.  Keys are any u64;
 * the map owns nothing the values point to.  A value pointer stays valid
 * until the next insertion or deletion.
 *
 * Who may use it: the library, the CLI and the tests (util/ is both's module).
 */
#ifndef DSTACK_HASHMAP_H
#define DSTACK_HASHMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct dsi_hashmap_slot {
	uint64_t key;   /* 0: free */
	uint64_t val;
};

struct dsi_hashmap {
	struct dsi_hashmap_slot *slots;
	size_t cap;   /* 0 or a power of two */
	size_t len;   /* keys in slots (key 0 not counted) */
	bool has_zero;
	uint64_t zero_val;   /* key 0's value, when has_zero */
};

static inline uint64_t dsi_hash64(uint64_t x)
{
	/* splitmix64 finaliser: cheap and good enough for tids and cookies */
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

/* FNV-1a of the NUL-terminated @s (not mixed: pass it to dsi_hash64 to spread it over a table) */
static inline uint64_t dsi_hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

/* FNV-1a of @s[0 .. @n) (not mixed) */
static inline uint64_t dsi_hash_bytes(const void *s, size_t n)
{
	uint64_t h = 1469598103934665603ULL;

	for (size_t i = 0; i < n; i++)
		h = (h ^ ((const unsigned char *)s)[i]) * 1099511628211ULL;
	return h;
}

static inline uint64_t dsi_hash_pair(uint64_t a, uint64_t b)
{
	return dsi_hash64(a ^ dsi_hash64(b + 0x9e3779b97f4a7c15ULL));
}

void dsi_hashmap__init(struct dsi_hashmap *m);
void dsi_hashmap__exit(struct dsi_hashmap *m);
/* Pointer to the value for @key, or NULL. */
uint64_t *dsi_hashmap__find(const struct dsi_hashmap *m, uint64_t key);
/* Insert or overwrite. 0 or -ENOMEM. */
int dsi_hashmap__set(struct dsi_hashmap *m, uint64_t key, uint64_t val);
/* Value slot for @key, inserted as @init if absent (*@found tells). NULL on -ENOMEM. */
uint64_t *dsi_hashmap__upsert(struct dsi_hashmap *m, uint64_t key, uint64_t init, bool *found);
/* Remove; true if it was there (its value into *@old if @old). */
bool dsi_hashmap__del(struct dsi_hashmap *m, uint64_t key, uint64_t *old);

/* The number of keys. */
static inline size_t dsi_hashmap__count(const struct dsi_hashmap *m)
{
	return m->len + m->has_zero;
}

/* Iterate: for (size_t i = 0; dsi_hashmap__next(m, &i, &k, &v); ) ... */
bool dsi_hashmap__next(const struct dsi_hashmap *m, size_t *iter, uint64_t *key, uint64_t *val);

#endif
