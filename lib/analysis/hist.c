// SPDX-License-Identifier: MIT
/*
 * The report's entries (report_int.h): their keys and hashes, and perf's
 * tree of entries searched as perf searches it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/grow.h"
#include "analysis/report_int.h"


/* Two branches equal by the branch keys sorted by (dso_from ... cycles) */
static bool branch_ends_eq(const struct ds_report *r, const struct branch_ends *a, const struct branch_ends *b)
{
	return (!dsi_report_uses(r, SORT_DSO_FROM) || dsi_branch_dso__eq(&a->from, &b->from)) &&
	       (!dsi_report_uses(r, SORT_DSO_TO) || dsi_branch_dso__eq(&a->to, &b->to)) &&
	       (!dsi_report_uses(r, SORT_SYM_FROM) || dsi_branch_side__eq(&a->from, &b->from)) &&
	       (!dsi_report_uses(r, SORT_SYM_TO) || dsi_branch_side__eq(&a->to, &b->to)) &&
	       (!dsi_report_uses(r, SORT_CYCLES) || a->cycles == b->cycles);
}

static uint64_t branch_ends_hash(const struct ds_report *r, const struct branch_ends *b, uint64_t h)
{
	if (dsi_report_uses(r, SORT_DSO_FROM))
		h = dsi_hash_pair(h, b->from.dso ? dsi_hash_str(b->from.dso) : 0);
	if (dsi_report_uses(r, SORT_DSO_TO))
		h = dsi_hash_pair(h, b->to.dso ? dsi_hash_str(b->to.dso) : 0);
	if (dsi_report_uses(r, SORT_SYM_FROM))
		h = dsi_hash_pair(h, dsi_branch_side__hash(&b->from));
	if (dsi_report_uses(r, SORT_SYM_TO))
		h = dsi_hash_pair(h, dsi_branch_side__hash(&b->to));
	return dsi_report_uses(r, SORT_CYCLES) ? dsi_hash_pair(h, b->cycles) : h;
}

static bool entry_eq(const struct ds_report *r, const struct entry *a, const struct entry *b)
{
	if (a->evsel != b->evsel)
		return false;
	if (dsi_report_uses(r, SORT_COMM) && a->comm != b->comm)
		return false;
	if (dsi_report_uses(r, SORT_PID) && a->pid != b->pid)
		return false;
	/* perf tells objects apart by their short names: two "perf" binaries are one */
	if (dsi_report_uses(r, SORT_DSO) && a->sdso != b->sdso && strcmp(a->sdso, b->sdso))
		return false;
	if (dsi_report_uses(r, SORT_SYM) && (a->sym != b->sym || (!a->sym && a->addr != b->addr)))
		return false;
	/* perf's symbol key tells the DSOs of two symbols apart when no dso key does (free@plt of two objects) */
	if (dsi_report_uses(r, SORT_SYM) && !dsi_report_uses(r, SORT_DSO) && a->sym && a->dso != b->dso &&
	    a->sdso != b->sdso && strcmp(a->sdso, b->sdso))
		return false;
	/*
	 * perf's symbol key is the symbol's start (sort__sym_cmp): two
	 * functions of one name are two (Rust's legacy names drop the hash
	 * that tells generic instances apart); an inlined function is one per
	 * function it is inlined in (its symbol's start)
	 */
	if (dsi_report_uses(r, SORT_SYM) && a->sym && a->start != b->start)
		return false;
	if (dsi_report_uses(r, SORT_SRCLINE) && a->srcline != b->srcline)
		return false;
	if (dsi_report_uses(r, SORT_TRACE) && a->trace != b->trace)
		return false;
	if (dsi_report_uses(r, SORT_CPU) && a->cpu != b->cpu)
		return false;
	return r->brs ? branch_ends_eq(r, &r->brs[a->br], &r->brs[b->br]) : true;
}

static uint64_t entry_hash(const struct ds_report *r, const struct entry *e)
{
	uint64_t h = dsi_hash64((uintptr_t)e->evsel);

	if (dsi_report_uses(r, SORT_COMM))
		h = dsi_hash_pair(h, (uintptr_t)e->comm);
	if (dsi_report_uses(r, SORT_PID))
		h = dsi_hash_pair(h, (uint64_t)(uint32_t)e->pid);
	if (dsi_report_uses(r, SORT_DSO))
		h = dsi_hash_pair(h, dsi_hash_str(e->sdso));
	if (dsi_report_uses(r, SORT_SYM))
		h = dsi_hash_pair(h, e->sym ? (uintptr_t)e->sym ^ e->start : e->addr);
	if (dsi_report_uses(r, SORT_SYM) && !dsi_report_uses(r, SORT_DSO) && e->sym)
		h = dsi_hash_pair(h, dsi_hash_str(e->sdso));
	if (dsi_report_uses(r, SORT_SRCLINE))
		h = dsi_hash_pair(h, (uintptr_t)e->srcline);
	if (dsi_report_uses(r, SORT_TRACE))
		h = dsi_hash_pair(h, (uintptr_t)e->trace);
	if (dsi_report_uses(r, SORT_CPU))
		h = dsi_hash_pair(h, (uint64_t)(uint32_t)e->cpu);
	return r->brs ? branch_ends_hash(r, &r->brs[e->br], h) : h;
}

static bool nkey_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct nkey *a = &((const struct ds_report *)ctx)->nkeys[id], *b = key;

	/*
	 * perf's match_chain(): inlined functions are one by name, whatever
	 * their DSO (libc's and ld.so's __GI_munmap); others by DSO and the
	 * symbol's start (two functions of one name are two)
	 */
	if (a->inlined && b->inlined && a->sym && b->sym)
		return a->sym == b->sym;
	return a->sym == b->sym && a->dso == b->dso && a->ip == b->ip && a->inlined == b->inlined &&
	       (!a->sym || a->inlined || a->start == b->start);
}

/*
 * Where perf's DSO object for @f's DSO would sort: perf orders equal
 * call-graph branches of different DSOs by the objects' addresses, which
 * follow the order it made them in: none (no map) first, the kernel's
 * (made at start), its modules', then the user maps' DSOs as they were
 * first mapped.
 */
static uint32_t dso_rank(const struct ds_report *r, const struct ds_cc_frame *f)
{
	unsigned seq;

	if (f->kernel)
		return r->machine && f->dso == ds_machine__kernel_dso(r->machine) ? 1 : 2;
	seq = r->machine ? ds_machine__map_name_seq(r->machine, f->dso) : 0;
	if (seq)
		return 3 + seq;
	return strcmp(f->dso, "[unknown]") ? 3 : 0;
}

/* @key's index in r->nkeys (nkey_eq), added if new; NONE on ENOMEM. */
uint32_t dsi_report_intern_nkey(struct ds_report *r, const struct nkey *key)
{
	struct nkey *n = dsi_grow(r->nkeys, &r->cap_nkeys, r->nr_nkeys + 1, sizeof(*n), 1024);
	uint64_t k;
	uint32_t id;
	bool added;

	if (!n || r->nr_nkeys >= NONE - 1)
		return NONE;
	r->nkeys = n;
	k = key->inlined && key->sym ? dsi_hash64((uintptr_t)key->sym ^ 1)   /* by name alone (nkey_eq) */
				     : dsi_hash64((uintptr_t)key->dso * 0x9e3779b97f4a7c15ULL ^
						  (key->sym ? (uintptr_t)key->sym ^ key->start : key->ip) *
						  0xc2b2ae3d27d4eb4fULL);
	id = dsi_idmap__find_or_add(&r->nkey_ids, k, nkey_eq, r, key, (uint32_t)r->nr_nkeys, &added);
	if (added)
		r->nkeys[r->nr_nkeys++] = *key;
	return id;
}

/* The nkey of frame @f (names are interned: compared as pointers), added if new; NONE on ENOMEM. */
static uint32_t nkey_of(struct ds_report *r, const struct ds_cc_frame *f)
{
	struct nkey key = { .sym = f->cookie ? NULL : dsi_report_keep(r, f->sym), .dso = dsi_report_keep(r, f->dso), .inlined = f->inlined };

	key.ip = key.sym ? 0 : f->ip;
	key.start = !key.sym ? f->ip : f->kernel ? f->ip - f->offset : f->addr - f->offset;
	key.dso_rank = dso_rank(r, f);
	return dsi_report_intern_nkey(r, &key);
}

/* The nkey of frame @i of @s: worked out once per machine frame id when the sample has them. */
uint32_t dsi_report_frame_nkey(struct ds_report *r, const struct ds_profile_sample *s, size_t i)
{
	uint32_t id, key;

	if (!s->frame_ids)
		return nkey_of(r, &s->frames[i]);
	id = s->frame_ids[i];
	if (id >= r->cap_fkeys) {
		uint32_t *n = dsi_grow_zeroed(r->fkeys, &r->cap_fkeys, (size_t)id + 1, sizeof(*n), 1024);

		if (!n)
			return nkey_of(r, &s->frames[i]);
		r->fkeys = n;
	}
	if (r->fkeys[id])
		return r->fkeys[id] - 1;
	key = nkey_of(r, &s->frames[i]);
	if (key != NONE)
		r->fkeys[id] = key + 1;
	return key;
}


/* perf's comparison of two entries (pointers to entry pointers) in report @ctx, as qsort_r's */
typedef int (*entry_cmp)(const void *, const void *, void *ctx);

/* Node x's entry in a tree: the trees of lists (node x: list[x]) and of r->ents (node x: ents[x]). */
typedef const struct entry *(*rb_entry_at)(const void *base, uint32_t x);

const struct entry *dsi_report_list_at(const void *base, uint32_t x) { return ((struct entry *const *)base)[x]; }
static const struct entry *ents_at(const void *base, uint32_t x) { return &((const struct entry *)base)[x]; }

/* Node @z (entry @in[z]) into the red-black tree at *@root as perf's go (@cmp < 0: left of a node; equal: right). */
void dsi_report_rb_insert(const struct ds_report *r, struct rbn *t, uint32_t *root, struct entry **in, uint32_t z,
		      entry_cmp cmp)
{
	uint32_t p;
	bool left;

	dsi_report_rb_descend(r, t, *root, dsi_report_list_at, in, in[z], cmp, false, &p, &left);
	dsi_report_rb_link(t, root, z, p, left);
}

static bool entry_id_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct ds_report *r = ctx;

	return entry_eq(r, &r->ents[id], key);
}

struct entry *dsi_report_find_entry(struct ds_report *r, const struct entry *key)
{
	struct entry *e = dsi_grow(r->ents, &r->cap_ents, r->nr_ents + 1, sizeof(*e), 1024);
	uint32_t id;
	bool added;

	/* the entry's root is made first, so nothing can fail once it is in the map */
	if (!e || r->nr_ents >= NONE - 1 || !dsi_report_node_room(r))
		return NULL;
	r->ents = e;
	id = dsi_idmap__find_or_add(&r->ent_ids, entry_hash(r, key), entry_id_eq, r, key, (uint32_t)r->nr_ents,
				   &added);
	if (id == NONE)
		return NULL;
	if (added) {
		e = &r->ents[r->nr_ents++];
		*e = *key;
		e->root = dsi_report_new_node(r, NONE, NONE);
	}
	return &r->ents[id];
}


/* Room for the tree links of entry @z. */
static bool etree_room(struct ds_report *r, size_t z)
{
	size_t cap = r->cap_etree;
	struct rbn *t = dsi_grow(r->etree, &r->cap_etree, z + 1, sizeof(*t), 1024);
	uint32_t *m;

	if (!t)
		return false;
	r->etree = t;
	if (!(m = dsi_grow_zeroed(r->ent_moved, &r->cap_moved, r->cap_etree, sizeof(*m), 1024))) {
		r->cap_etree = cap;   /* (the next call grows both) */
		return false;
	}
	r->ent_moved = m;
	return true;
}

/* Entry @z into its event's tree as perf's search places a new one. */
static void etree_add(struct ds_report *r, size_t ev, uint32_t z)
{
	uint32_t p;
	bool left;

	dsi_report_rb_descend(r, r->etree, r->ein_root[ev], ents_at, r->ents, &r->ents[z], dsi_report_cmp_collapsed, false, &p, &left);
	dsi_report_rb_link(r->etree, &r->ein_root[ev], z, p, left);
}

/* The event trees of the entries made so far (made as they came: the hash map's entries are what perf's search made). */
static bool etree_start(struct ds_report *r)
{
	if (!r->ein_root && !(r->ein_root = malloc(EVENTS_MAX * sizeof(*r->ein_root))))
		return false;
	if (!etree_room(r, r->nr_ents))
		return false;
	for (size_t i = 0; i < EVENTS_MAX; i++)
		r->ein_root[i] = NONE;
	for (size_t z = 0; z < r->nr_ents; z++)
		etree_add(r, dsi_report_event_index(r, r->ents[z].evsel), (uint32_t)z);
	r->etree_on = true;
	r->tree_epoch = ++r->ent_epoch;
	return true;
}

uint32_t dsi_report_search_entry_tree(struct ds_report *r, const struct entry *key)
{
	size_t ev = dsi_report_event_index(r, key->evsel);
	uint32_t p;
	bool left;

	if (ev == SIZE_MAX || !r->etree_on)
		return NONE;
	return dsi_report_rb_descend(r, r->etree, r->ein_root[ev], ents_at, r->ents, key, dsi_report_cmp_collapsed, true, &p, &left);
}

/*
 * --children: @key's entry as perf's search of its event's tree finds it
 * (struct ds_report's etree), made if none; until the first inlined entry,
 * the hash map's (the same).
 */
struct entry *dsi_report_find_entry_tree(struct ds_report *r, const struct entry *key)
{
	size_t ev = dsi_report_event_index(r, key->evsel);
	uint32_t x, z;
	struct entry *e;

	/* (without memory for the trees, the hash map's lookups go on) */
	if (ev == SIZE_MAX || (!r->etree_on && ((!key->inlined && !r->sym_tree) || !etree_start(r))))
		return dsi_report_find_entry(r, key);
	uint32_t p;
	bool left;

	x = dsi_report_rb_descend(r, r->etree, r->ein_root[ev], ents_at, r->ents, key, dsi_report_cmp_collapsed, true, &p, &left);
	if (x != NONE)
		return &r->ents[x];
	e = dsi_grow(r->ents, &r->cap_ents, r->nr_ents + 1, sizeof(*e), 1024);
	if (!e || r->nr_ents >= NONE - 1 || !dsi_report_node_room(r) || !etree_room(r, r->nr_ents))
		return NULL;
	r->ents = e;
	z = (uint32_t)r->nr_ents++;
	e = &r->ents[z];
	*e = *key;
	e->root = dsi_report_new_node(r, NONE, NONE);
	/*
	 * where the search ended: a search that found an entry before finds it
	 * still, and one for this key finds it, unless nodes moved
	 */
	uint32_t moved[3];
	size_t nr_moved = 0;

	if (dsi_report_rb_link_moved(r->etree, &r->ein_root[ev], z, p, left, moved, &nr_moved)) {
		r->ent_epoch++;
		for (size_t i = 0; i < nr_moved; i++)
			r->ent_moved[moved[i]] = r->ent_epoch;
	}
	return e;
}

