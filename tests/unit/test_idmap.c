// SPDX-License-Identifier: MIT
/*
 * Id map and trie unit tests: keys kept by the caller in an array, found
 * again by their equality and nothing else.  A hash function that gives
 * every key one of a few values (collisions on purpose, and hash bits that
 * match for unequal keys) must not change an answer; key 0 and id 0 are
 * ordinary; many keys survive growth; ids come back as given (offsets,
 * index + 1); the trie tells apart equal keys under different parents and
 * the parent DSI_TRIE_NONE; exit leaves both empty and usable.  The sites
 * moved onto the id map: the machine's interned strings (two names whose
 * hash bits collide stay two strings) and the shape table's frames and
 * shapes (enough of them that hash bits collide); the string set every
 * interning site uses: dense ids in order, one copy per text, find without
 * adding, exit then reuse.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/hashmap.h"
#include "util/idmap.h"
#include "util/strset.h"
#include "util/trie.h"
#include "process/machine_int.h"
#include "check.h"

#define MANY 200000

struct keys {
	uint64_t *v;
	size_t nr;
	unsigned eq_calls;
};

static bool key_eq(const void *ctx, uint32_t id, const void *key)
{
	struct keys *k = (struct keys *)ctx;

	k->eq_calls++;
	return k->v[id] == *(const uint64_t *)key;
}

/* @buckets distinct hashes in all (1: every key collides with every other) */
static uint64_t bad_hash(uint64_t k, unsigned buckets)
{
	return dsi_hash64(k % buckets);
}

static void collisions(unsigned buckets)
{
	struct keys k = { calloc(MANY, sizeof(uint64_t)), 0, 0 };
	struct dsi_idmap m = { 0 };
	size_t n = buckets < 1000 ? 3000 : MANY;   /* long probe runs: quadratic, keep them short */
	bool ok = true, added;

	for (size_t i = 0; i < n; i++) {
		uint64_t key = i * 7919;   /* key 0 first */
		uint32_t id = dsi_idmap__find_or_add(&m, bad_hash(key, buckets), key_eq, &k, &key, (uint32_t)k.nr,
						    &added);

		if (id != k.nr || !added)
			ok = false;
		k.v[k.nr++] = key;
	}
	CHECK(ok, "%u hash values: every new key gets the id given", buckets);
	CHECK(dsi_idmap__count(&m) == n, "%u hash values: count %zu", buckets, dsi_idmap__count(&m));
	ok = true;
	for (size_t i = 0; i < n; i++) {
		uint64_t key = i * 7919, absent = key + 1;

		if (dsi_idmap__find(&m, bad_hash(key, buckets), key_eq, &k, &key) != i ||
		    dsi_idmap__find_or_add(&m, bad_hash(key, buckets), key_eq, &k, &key, 12345, &added) != i || added ||
		    dsi_idmap__find(&m, bad_hash(absent, buckets), key_eq, &k, &absent) != DSI_IDMAP_NONE)
			ok = false;
	}
	CHECK(ok && dsi_idmap__count(&m) == n, "%u hash values: each key found again as itself, absent keys not", buckets);
	dsi_idmap__exit(&m);
	CHECK(!dsi_idmap__count(&m) && dsi_idmap__find(&m, 1, key_eq, &k, &k.v[0]) == DSI_IDMAP_NONE,
	      "exit leaves an empty map");
	free(k.v);
}

/* eq is asked only where the kept hash bits match */
static void hash_bits_filter(void)
{
	struct keys k = { calloc(MANY, sizeof(uint64_t)), 0, 0 };
	struct dsi_idmap m = { 0 };

	for (size_t i = 0; i < MANY; i++) {
		k.v[i] = i;
		if (dsi_idmap__add(&m, dsi_hash64(i), (uint32_t)i))
			break;
	}
	k.eq_calls = 0;
	for (uint64_t i = MANY; i < 2 * MANY; i++)
		dsi_idmap__find(&m, dsi_hash64(i), key_eq, &k, &i);
	CHECK(k.eq_calls < MANY / 1000, "absent keys: %u comparisons for %d lookups", k.eq_calls, MANY);
	dsi_idmap__exit(&m);
	free(k.v);
}

/* ids are the caller's: offsets, index + 1, 0 */
static void any_ids(void)
{
	uint64_t v[3] = { 0, 0, 0 }, key;
	struct keys k = { v, 3, 0 };
	struct dsi_idmap m = { 0 };
	bool added;

	/* ids 0, 1000000 and UINT32_MAX - 1 name keys held in slots 0, 1, 2 of a table mapped by hand */
	v[0] = 5, v[1] = 6, v[2] = 7;
	key = 5;
	CHECK(dsi_idmap__find_or_add(&m, dsi_hash64(key), key_eq, &k, &key, 0, &added) == 0 && added, "id 0");
	CHECK(!dsi_idmap__add(&m, dsi_hash64(6), 1), "add id 1");
	key = 6;
	CHECK(dsi_idmap__find(&m, dsi_hash64(key), key_eq, &k, &key) == 1, "found id 1");
	key = 7;
	CHECK(dsi_idmap__find_or_add(&m, dsi_hash64(key), key_eq, &k, &key, 2, &added) == 2 && added, "id 2");
	key = 5;
	CHECK(dsi_idmap__find(&m, dsi_hash64(key), key_eq, &k, &key) == 0, "id 0 found again");
	dsi_idmap__exit(&m);
}

struct str_keys {
	const char **v;
};

static bool str_eq(const void *ctx, uint32_t id, const void *key)
{
	return !strcmp(((const struct str_keys *)ctx)->v[id], key);
}

/* string keys compared by content, found from another copy */
static void strings(void)
{
	const char *v[] = { "main", "", "foo", "bar" };
	struct str_keys k = { v };
	struct dsi_idmap m = { 0 };
	char copy[8];
	bool ok = true, added;

	for (uint32_t i = 0; i < 4; i++)
		if (dsi_idmap__find_or_add(&m, dsi_hash64(dsi_hash_str(v[i])), str_eq, &k, v[i], i, &added) != i || !added)
			ok = false;
	for (uint32_t i = 0; i < 4; i++) {
		strcpy(copy, v[i]);
		if (dsi_idmap__find(&m, dsi_hash64(dsi_hash_str(copy)), str_eq, &k, copy) != i)
			ok = false;
	}
	CHECK(ok, "strings found by content (the empty one too)");
	dsi_idmap__exit(&m);
}

static void string_set(void)
{
	struct dsi_strset set = { 0 };
	const char *a = "lib45140.so", *b = "lib106742.so";   /* their hash bits collide (machine_intern) */
	char buf[32];
	bool ok = true;

	CHECK(dsi_strset__find(&set, "") == DSI_IDMAP_NONE, "an empty set finds nothing");
	CHECK(dsi_strset__add(&set, "") == 0 && dsi_strset__add(&set, a) == 1 && dsi_strset__add(&set, b) == 2,
	      "ids are dense, in the order texts came (the empty text too)");
	strcpy(buf, a);
	CHECK(dsi_strset__add(&set, buf) == 1 && dsi_strset__find(&set, b) == 2 && set.nr == 3,
	      "a text added again keeps its id; colliding texts stay two");
	CHECK(dsi_strset__intern(&set, buf) == dsi_strset__str(&set, 1) && dsi_strset__str(&set, 1) != a &&
	      !strcmp(dsi_strset__str(&set, 1), a), "intern gives our copy, the same pointer each time");
	CHECK(dsi_strset__find(&set, "main") == DSI_IDMAP_NONE && set.nr == 3, "find adds nothing");
	for (unsigned i = 0; i < MANY && ok; i++) {
		snprintf(buf, sizeof(buf), "s%u", i);
		if (dsi_strset__add(&set, buf) != i + 3)
			ok = false;
	}
	for (unsigned i = 0; i < MANY && ok; i++) {
		snprintf(buf, sizeof(buf), "s%u", i);
		if (dsi_strset__find(&set, buf) != i + 3 || strcmp(dsi_strset__str(&set, i + 3), buf))
			ok = false;
	}
	CHECK(ok && dsi_strset__mem(&set) > MANY * 4, "%d texts survive growth, each found by content", MANY);
	dsi_strset__exit(&set);
	CHECK(!set.nr && !set.strs && dsi_strset__find(&set, a) == DSI_IDMAP_NONE && dsi_strset__add(&set, a) == 0,
	      "exit leaves the set empty and usable");
	dsi_strset__exit(&set);
}

static void trie(void)
{
	struct dsi_trie t = { 0 };
	uint32_t nr = 0, a, b, c;
	bool added, ok = true;

	CHECK(dsi_trie__find(&t, DSI_TRIE_NONE, 1) == DSI_TRIE_NONE, "an empty trie finds nothing");
	a = dsi_trie__child(&t, DSI_TRIE_NONE, 0, nr, &added);
	CHECK(a == 0 && added, "a root (key 0) under DSI_TRIE_NONE");
	nr++;
	b = dsi_trie__child(&t, a, 0, nr, &added);
	CHECK(b == 1 && added, "key 0 under node 0 is another node");
	nr++;
	c = dsi_trie__child(&t, b, UINT64_MAX, nr, &added);
	CHECK(c == 2 && added, "key UINT64_MAX under node 1");
	nr++;
	CHECK(dsi_trie__child(&t, DSI_TRIE_NONE, 0, 99, &added) == 0 && !added, "the root found again");
	CHECK(dsi_trie__find(&t, a, 0) == 1 && dsi_trie__find(&t, b, UINT64_MAX) == 2 && dsi_trie__find(&t, a, UINT64_MAX) ==
	      DSI_TRIE_NONE, "edges by (parent, key)");
	/* a wide and deep tree: node i's children are keys 0..7 (pointers, ids) */
	for (uint32_t parent = 3; nr < MANY; parent++)
		for (uint64_t key = 0; key < 8 && nr < MANY; key++) {
			if (dsi_trie__child(&t, parent - 1, key << 40 | parent, nr, &added) != nr || !added)
				ok = false;
			nr++;
		}
	CHECK(ok && dsi_trie__count(&t) == MANY, "%d edges added through growth", MANY);
	ok = true;
	nr = 3;
	for (uint32_t parent = 3; nr < MANY; parent++)
		for (uint64_t key = 0; key < 8 && nr < MANY; key++, nr++)
			if (dsi_trie__find(&t, parent - 1, key << 40 | parent) != nr ||
			    dsi_trie__child(&t, parent - 1, key << 40 | parent, 0, &added) != nr || added ||
			    dsi_trie__find(&t, parent, key << 40 | parent) != DSI_TRIE_NONE)
				ok = false;
	CHECK(ok && dsi_trie__count(&t) == MANY, "every edge found again, the same key under another parent not");
	dsi_trie__exit(&t);
	CHECK(!dsi_trie__count(&t) && dsi_trie__find(&t, DSI_TRIE_NONE, 0) == DSI_TRIE_NONE, "exit leaves an empty trie");
	CHECK(dsi_trie__child(&t, 5, 5, 0, &added) == 0 && added, "and usable again");
	dsi_trie__exit(&t);
}

/* ds_machine__intern: one copy per string, two strings with one slot hash two copies */
static void machine_intern(void)
{
	/* found by search: the low 32 bits of their dsi_hash64(dsi_hash_str()) are equal */
	const char *a = "lib45140.so", *b = "lib106742.so";
	struct ds_machine *m = ds_machine__new(NULL);
	const char *ia, *ib, **kept;
	char buf[32];
	bool ok = true;

	CHECK(m, "a machine");
	if (!m)
		return;
	CHECK((uint32_t)dsi_hash64(dsi_hash_str(a)) == (uint32_t)dsi_hash64(dsi_hash_str(b)),
	      "%s and %s collide in the id map's hash bits (else this test tests less)", a, b);
	ia = ds_machine__intern(m, a);
	ib = ds_machine__intern(m, b);
	CHECK(ia != a && ia != ib && !strcmp(ia, a) && !strcmp(ib, b), "colliding names: two copies, each its own");
	strcpy(buf, b);
	CHECK(ds_machine__intern(m, buf) == ib && ds_machine__intern(m, a) == ia, "each found again by content");
	kept = malloc(MANY * sizeof(*kept));
	CHECK(kept, "room for the names");
	if (!kept) {
		ds_machine__delete(m);
		return;
	}
	for (unsigned i = 0; i < MANY; i++) {
		snprintf(buf, sizeof(buf), "/usr/lib/x%u.so", i);
		kept[i] = ds_machine__intern(m, buf);
		if (strcmp(kept[i], buf))
			ok = false;
	}
	for (unsigned i = 0; i < MANY; i++) {
		snprintf(buf, sizeof(buf), "/usr/lib/x%u.so", i);
		if (ds_machine__intern(m, buf) != kept[i])
			ok = false;
	}
	CHECK(ok && ds_machine__intern(m, b) == ib, "%d names through growth, each found again as the same copy", MANY);
	free(kept);
	ds_machine__delete(m);
}

/* shape_table: frames and shapes numbered by content, found again as the same ids */
static void shapes(void)
{
	struct shape_table *st = dsi_shape_table__new();
	struct ds_cc_frame f = { .dso = "[unknown]" };
	bool ok = true;
	uint32_t ids[2];
	size_t nr;

	CHECK(st, "a shape table");
	if (!st)
		return;
	/* frames with no symbol: told apart by their addresses */
	for (uint32_t i = 0; i < MANY; i++) {
		f.ip = 0x400000 + i;
		if (dsi_shape_table__frame_id(st, &f) != i)
			ok = false;
	}
	for (uint32_t i = 0; i < MANY; i++) {
		f.ip = 0x400000 + i;
		if (dsi_shape_table__frame_id(st, &f) != i)
			ok = false;
	}
	f.ip = 0x400000;
	f.kernel = true;
	CHECK(ok && dsi_shape_table__frame_id(st, &f) == MANY, "%d frames, each its id again; the flags tell apart", MANY);
	ok = true;
	for (uint32_t i = 0; i < MANY; i++) {
		ids[0] = i;
		ids[1] = i + 1;
		if (dsi_shape_table__add(st, ids, 2) != (uint64_t)i + 1)
			ok = false;
	}
	for (uint32_t i = 0; i < MANY && ok; i++) {
		const uint32_t *got;

		ids[0] = i;
		ids[1] = i + 1;
		got = dsi_shape_table__frames(st, (uint64_t)i + 1, &nr);
		if (dsi_shape_table__add(st, ids, 2) != (uint64_t)i + 1 || nr != 2 || got[0] != i || got[1] != i + 1)
			ok = false;
	}
	CHECK(ok, "%d shapes, each found again with its frames", MANY);
	CHECK(dsi_shape_table__add(st, ids, 1) == MANY + 1 && dsi_shape_table__add(st, NULL, 0) == MANY + 2 &&
	      dsi_shape_table__add(st, NULL, 0) == MANY + 2, "a prefix is another shape, the empty one too");
	dsi_shape_table__delete(st);
}

int main(void)
{
	collisions(1);
	collisions(7);
	collisions(1u << 30);
	hash_bits_filter();
	any_ids();
	strings();
	string_set();
	trie();
	machine_intern();
	shapes();
	printf("test_idmap: %d passed, %d failed\n", passed, failed);
	return failed != 0;
}
