// SPDX-License-Identifier: MIT
/*
 * Hash map unit tests: random upserts, sets, finds and deletions checked
 * against a plain array model, with the keys that are special to the map
 * (0, kept beside the table) and keys crowded into one probe run (equal low
 * bits after hashing do not matter: equal slots are forced by a small map);
 * iteration visits every key once; count follows.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/hashmap.h"
#include "check.h"

#define UNIVERSE 600

/* the model: key i of keys[] present with val[i] when has[i] */
static uint64_t keys[UNIVERSE], vals[UNIVERSE];
static bool has[UNIVERSE];

static uint64_t rnd(void)
{
	static uint64_t x = 88172645463325252ULL;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return x;
}

static void check_all(const struct dsi_hashmap *m, const char *when)
{
	size_t n = 0, seen_count = 0;
	static bool seen[UNIVERSE];
	uint64_t k, v;
	bool ok = true;

	for (size_t i = 0; i < UNIVERSE; i++) {
		uint64_t *p = dsi_hashmap__find(m, keys[i]);

		if (has[i] ? !p || *p != vals[i] : p != NULL)
			ok = false;
		n += has[i];
	}
	CHECK(ok, "%s: finds agree with the model", when);
	CHECK(dsi_hashmap__count(m) == n, "%s: count %zu, model %zu", when, dsi_hashmap__count(m), n);
	memset(seen, 0, sizeof(seen));
	ok = true;
	for (size_t it = 0; dsi_hashmap__next(m, &it, &k, &v);) {
		size_t i;

		for (i = 0; i < UNIVERSE && keys[i] != k; i++)
			;
		if (i == UNIVERSE || !has[i] || seen[i] || vals[i] != v)
			ok = false;
		else
			seen[i] = true;
		seen_count++;
	}
	CHECK(ok && seen_count == n, "%s: iteration visits each key once (%zu of %zu)", when, seen_count, n);
}

static void random_ops(void)
{
	struct dsi_hashmap m = { 0 };

	/* key 0, all ones, small numbers (tids) and spread ones (hashes, pointers) */
	keys[0] = 0;
	keys[1] = UINT64_MAX;
	for (size_t i = 2; i < UNIVERSE; i++)
		keys[i] = i < 200 ? i : rnd();
	for (int round = 0; round < 200000; round++) {
		size_t i = rnd() % UNIVERSE;
		unsigned op = (unsigned)(rnd() % 4);
		bool found;

		if (op == 0) {
			uint64_t *p = dsi_hashmap__upsert(&m, keys[i], round, &found);

			CHECK(p && found == has[i], "upsert %#llx: found %d, model %d", (unsigned long long)keys[i], found,
			      has[i]);
			if (p && !has[i]) {
				CHECK(*p == (uint64_t)round, "upsert of a new key starts at its init");
				has[i] = true;
				vals[i] = (uint64_t)round;
			}
			if (p && rnd() % 2) {
				*p = rnd();
				vals[i] = *p;
			}
		} else if (op == 1) {
			vals[i] = rnd();
			has[i] = true;
			CHECK(dsi_hashmap__set(&m, keys[i], vals[i]) == 0, "set");
		} else if (op == 2) {
			uint64_t old = 0;
			bool was = dsi_hashmap__del(&m, keys[i], &old);

			CHECK(was == has[i] && (!was || old == vals[i]), "del %#llx: was %d, model %d",
			      (unsigned long long)keys[i], was, has[i]);
			has[i] = false;
		} else {
			uint64_t *p = dsi_hashmap__find(&m, keys[i]);

			CHECK(has[i] ? p && *p == vals[i] : !p, "find %#llx", (unsigned long long)keys[i]);
		}
		if (round % 20000 == 0)
			check_all(&m, "during");
	}
	check_all(&m, "after random operations");
	for (size_t i = 0; i < UNIVERSE; i++)
		if (has[i]) {
			CHECK(dsi_hashmap__del(&m, keys[i], NULL), "delete all: %#llx", (unsigned long long)keys[i]);
			has[i] = false;
		}
	check_all(&m, "emptied");
	CHECK(dsi_hashmap__count(&m) == 0, "empty count");
	dsi_hashmap__exit(&m);
}

/* a map that grows from nothing keeps every key, and exit leaves it usable as empty */
static void grow_and_exit(void)
{
	struct dsi_hashmap m;
	bool ok = true;

	dsi_hashmap__init(&m);
	CHECK(!dsi_hashmap__find(&m, 0) && !dsi_hashmap__find(&m, 7), "an empty map finds nothing");
	CHECK(!dsi_hashmap__del(&m, 0, NULL) && !dsi_hashmap__del(&m, 7, NULL), "an empty map deletes nothing");
	for (uint64_t k = 0; k < 100000; k++)
		if (dsi_hashmap__set(&m, k * 4096, k))
			ok = false;
	for (uint64_t k = 0; k < 100000; k++) {
		uint64_t *v = dsi_hashmap__find(&m, k * 4096);

		if (!v || *v != k)
			ok = false;
	}
	CHECK(ok && dsi_hashmap__count(&m) == 100000, "100000 page-aligned keys (0 among them) kept through growth");
	dsi_hashmap__exit(&m);
	CHECK(dsi_hashmap__count(&m) == 0 && !dsi_hashmap__find(&m, 0), "exit leaves an empty map");
}

int main(void)
{
	random_ops();
	grow_and_exit();
	printf("test_hashmap: %d passed, %d failed\n", passed, failed);
	return failed != 0;
}
