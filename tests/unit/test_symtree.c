// SPDX-License-Identifier: MIT
/*
 * perf's symbol tree, replayed (lib/symbols/symtree.c): a small tree whose
 * shape is worked out by hand from the Linux red-black rules, searched
 * where only the shape decides (overlapping symbols, a descent that turns
 * away from the one holding the address), before and after an erase by
 * successor; then random insert/erase logs, checked for the red-black
 * rules, and against a binary search where no symbols overlap.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "symbols/symbols_int.h"
#include "check.h"

#define MAXID 3000

static char names[MAXID];          /* symbol id's name: &names[id] */
static uint64_t start_of[MAXID], end_of[MAXID];
static bool live[MAXID];

static uint64_t rnd(void)
{
	static uint64_t x = 0x9e3779b97f4a7c15ULL;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return x;
}

static int sym_cmp(const void *pa, const void *pb)
{
	const struct ds_sym *a = pa, *b = pb;

	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	return a->name < b->name ? -1 : a->name > b->name;   /* insertion order: ids ascend */
}

/* The table of the live ids, sorted as a loader leaves it. */
static void live_table(struct ds_symtab *tab, uint32_t nr_ids)
{
	tab->syms = calloc(nr_ids + 1, sizeof(*tab->syms));
	tab->nr = 0;
	tab->tree = NULL;
	for (uint32_t id = 0; id < nr_ids; id++)
		if (live[id])
			tab->syms[tab->nr++] = (struct ds_sym){ .start = start_of[id], .end = end_of[id],
								.name = &names[id] };
	qsort(tab->syms, tab->nr, sizeof(*tab->syms), sym_cmp);
}

static const char *found(const struct ds_symtab *tab, uint64_t ip)
{
	const struct ds_sym *s = dsi_symtab__find(tab, ip);

	return s ? s->name : NULL;
}

#define ID(p) ((p) ? (int)((p) - names) : -1)

/*
 * Ids 1..7 at 10..70, each 5 long but id 1, which runs to 110.  The
 * inserts in order build 20B[10B, 40R[30B, 60B[50R, 70R]]] (root id 2).
 */
static void check_hand_shape(void)
{
	struct dsi_symlog log = { 0 };
	struct ds_symtab tab;
	uint32_t root = 0, bh = 0;

	memset(live, 0, sizeof(live));
	for (uint32_t id = 1; id <= 7; id++) {
		start_of[id] = id * 10;
		end_of[id] = id == 1 ? 110 : id * 10 + 5;
		live[id] = true;
		dsi_symlog__insert(&log, id, start_of[id], &names[id]);
	}
	live_table(&tab, 8);
	CHECK(dsi_symtab__overlaps(&tab), "id 1 overlaps the others");
	CHECK(dsi_symtab__replay(&tab, &log, end_of) && tab.tree, "replayed");
	CHECK(dsi_symtab__tree_check(&tab, &root, &bh) == 0 && root == 2 && bh == 3, "root %u, black height %u (NIL counted)", root, bh);
	CHECK(ID(found(&tab, 15)) == 1, "15: left of the root, id 1 holds it: %d", ID(found(&tab, 15)));
	CHECK(ID(found(&tab, 42)) == 4, "42: id 4 met before id 1: %d", ID(found(&tab, 42)));
	CHECK(found(&tab, 47) == NULL, "47: the descent turns away from id 1: %d", ID(found(&tab, 47)));
	CHECK(ID(found(&tab, 72)) == 7, "72: id 7: %d", ID(found(&tab, 72)));
	CHECK(found(&tab, 75) == NULL, "75: past id 7's end");
	dsi_symtab__drop_tree(&tab);
	free(tab.syms);

	/* erase id 4 (two children): its successor id 5 takes its place and colour */
	dsi_symlog__erase(&log, 4);
	live[4] = false;
	live_table(&tab, 8);
	CHECK(dsi_symtab__replay(&tab, &log, end_of) && tab.tree, "replayed after the erase");
	CHECK(dsi_symtab__tree_check(&tab, &root, &bh) == 0 && root == 2, "root %u", root);
	CHECK(found(&tab, 47) == NULL, "47: 50's left is 30, no right: %d", ID(found(&tab, 47)));
	CHECK(ID(found(&tab, 52)) == 5, "52: id 5: %d", ID(found(&tab, 52)));
	CHECK(ID(found(&tab, 33)) == 3, "33: id 3: %d", ID(found(&tab, 33)));
	CHECK(ID(found(&tab, 21)) == 2, "21: the root: %d", ID(found(&tab, 21)));
	dsi_symtab__drop_tree(&tab);
	free(tab.syms);
	dsi_symlog__exit(&log);
}

/* Random logs: the rules hold; without overlaps, the same answers as a binary search. */
static void check_random(bool overlap, int rounds)
{
	for (int r = 0; r < rounds; r++) {
		struct dsi_symlog log = { 0 };
		struct ds_symtab tab, plain;
		uint32_t nr_ids = 1 + (uint32_t)(rnd() % (MAXID - 1)), root, bh;
		int bad = 0;

		memset(live, 0, sizeof(live));
		for (uint32_t id = 0; id < nr_ids; id++) {
			/* without overlaps: slots 16 apart, a symbol in each slot at most */
			start_of[id] = overlap ? rnd() % 4000 : id * 16;
			end_of[id] = start_of[id] + 1 + rnd() % (overlap ? 60 : 15);
			dsi_symlog__insert(&log, id, start_of[id], &names[id]);
			live[id] = true;
			if (id && rnd() % 3 == 0) {   /* erase a live one now and then */
				uint32_t victim = (uint32_t)(rnd() % id);

				if (live[victim]) {
					dsi_symlog__erase(&log, victim);
					live[victim] = false;
				}
			}
		}
		live_table(&tab, nr_ids);
		CHECK(dsi_symtab__replay(&tab, &log, end_of) && tab.tree, "round %d replayed", r);
		CHECK(dsi_symtab__tree_check(&tab, &root, &bh) == 0, "round %d: red-black rules (%u ids)", r, nr_ids);
		if (!overlap) {
			plain = tab;
			plain.tree = NULL;
			for (uint64_t ip = 0; ip < nr_ids * 16 + 20; ip += 1 + rnd() % 5)
				bad += dsi_symtab__find(&tab, ip) != dsi_symtab__find(&plain, ip);
			CHECK(bad == 0, "round %d: %d lookups differ from the binary search", r, bad);
		} else {
			for (uint64_t ip = 0; ip < 4100; ip += 1 + rnd() % 7) {
				const struct ds_sym *s = dsi_symtab__find(&tab, ip);

				bad += s && !(s->start <= ip && ip < s->end);
			}
			CHECK(bad == 0, "round %d: %d lookups gave a symbol that does not hold the address", r, bad);
		}
		dsi_symtab__drop_tree(&tab);
		free(tab.syms);
		dsi_symlog__exit(&log);
	}
}

int main(void)
{
	check_hand_shape();
	check_random(false, 40);
	check_random(true, 40);
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
