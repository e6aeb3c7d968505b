// SPDX-License-Identifier: MIT
/*
 * The report's call graphs (report_int.h): nodes, the trees of a node's
 * children, and the memo of a sample's path.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/grow.h"
#include "analysis/report_int.h"

/*
 * --children: perf's order is not a sort.  Its comparison of equal Children
 * looks at the chains' depths only within one thread, so it is no order
 * across threads, and the result is where perf's red-black trees put the
 * entries: built here the same way (tree_order, struct rbn).
 */

static void rb_rotate(struct rbn *t, uint32_t *root, uint32_t x, bool left)
{
	uint32_t y = left ? t[x].right : t[x].left, p = t[x].parent;
	uint32_t m = left ? t[y].left : t[y].right;

	if (left) {
		t[x].right = m;
		t[y].left = x;
	} else {
		t[x].left = m;
		t[y].right = x;
	}
	if (m != NONE)
		t[m].parent = x;
	t[y].parent = p;
	t[x].parent = y;
	if (p == NONE)
		*root = y;
	else if (t[p].left == x)
		t[p].left = y;
	else
		t[p].right = y;
}

/*
 * Node @z below @p (left of it if @left; the root when @p is NONE), then
 * rebalanced as perf's rb_insert_color.  Whether that rotated (moved
 * nodes that were there); with @moved (room for 3), the nodes a rotation
 * moved into it, as many as *@nr_moved.
 */
bool dsi_report_rb_link_moved(struct rbn *t, uint32_t *root, uint32_t z, uint32_t p, bool left, uint32_t *moved,
			  size_t *nr_moved)
{
	uint32_t x;
	bool rotated = false;

	t[z] = (struct rbn){ .left = NONE, .right = NONE, .parent = p, .red = true };
	if (p == NONE)
		*root = z;
	else if (left)
		t[p].left = z;
	else
		t[p].right = z;
	x = z;
	while (t[x].parent != NONE && t[t[x].parent].red) {
		uint32_t q = t[x].parent, g = t[q].parent;
		bool ql = t[g].left == q;
		uint32_t u = ql ? t[g].right : t[g].left;

		if (u != NONE && t[u].red) {
			t[q].red = t[u].red = false;
			t[g].red = true;
			x = g;
			continue;
		}
		if (moved) {   /* (what the rotations below move: x, its parent and grandparent) */
			moved[0] = x;
			moved[1] = q;
			moved[2] = g;
			*nr_moved = 3;
		}
		if (x == (ql ? t[q].right : t[q].left)) {
			rb_rotate(t, root, q, ql);
			x = q;
			q = t[x].parent;
		}
		t[q].red = false;
		t[g].red = true;
		rb_rotate(t, root, g, !ql);
		rotated = true;
	}
	t[*root].red = false;
	return rotated;
}

bool dsi_report_rb_link(struct rbn *t, uint32_t *root, uint32_t z, uint32_t p, bool left)
{
	return dsi_report_rb_link_moved(t, root, z, p, left, NULL, NULL);
}

static uint8_t nkey_kind(const struct nkey *k)
{
	return !k->sym ? KIND_ADDR : k->inlined ? KIND_INLINED : KIND_SYM;
}

/* perf's order of two frames' DSO objects (see dso_rank()) */
static int dso_order(const struct nkey *a, const struct nkey *b)
{
	if (a->dso_rank != b->dso_rank)
		return a->dso_rank < b->dso_rank ? -1 : 1;
	return a->dso == b->dso ? 0 : strcmp(a->dso, b->dso);
}

/*
 * perf's match_chain() of a tree node's frame (@a, the node made at @aip)
 * with a chain's frame (@b at @bip): 0 when equal (the chain goes on
 * below the node), < 0 when the node comes first (the search goes left:
 * a node's children read in descending order), > 0 otherwise.  Inlined
 * functions compare by name (equal names are one, whatever their DSOs),
 * two other symbols by DSO then start, and a frame without a symbol by
 * DSO then address.
 */
static int chain_match(const struct nkey *a, uint64_t aip, const struct nkey *b, uint64_t bip)
{
	int c;

	if (a->sym && b->sym) {
		if (a->inlined || b->inlined)
			return a->sym == b->sym ? 0 : strcmp(a->sym, b->sym);
		if ((c = dso_order(a, b)))
			return c;
		return (a->start > b->start) - (a->start < b->start);
	}
	if ((c = dso_order(a, b)))
		return c;
	return (aip > bip) - (aip < bip);
}

static bool mixed(uint8_t kinds)
{
	return kinds & (kinds - 1);
}

/*
 * The child of @parent that a chain's frame (nkey @key at @ip) goes to,
 * made if perf's search of the children's tree finds none (perf's
 * append_chain_children): NONE on ENOMEM.  A new child is linked where the
 * search ended.
 */
/*
 * After a child of @parent was made: the map holds each child of a parent
 * of one kind of children once it has more than TRIE_MIN (all of them
 * when it gets there).  False on ENOMEM.
 */
static bool kids_mapped(struct ds_report *r, uint32_t parent)
{
	const struct node *p = &r->nodes[parent];
	bool added;

	if (mixed(p->kinds) || p->nkids <= TRIE_MIN)
		return true;
	for (uint32_t c = p->first_child; c != NONE; c = r->nodes[c].next_sibling) {
		if (dsi_trie__child(&r->node_trie, parent, r->nodes[c].key, c, &added) == NONE)
			return false;
		if (p->nkids != TRIE_MIN + 1)
			break;   /* (the others are in: only the newest is new) */
	}
	return true;
}

/* A comparison of the walk's frame r->walk_d by its address with a node's address @aip, outcome @sign. */
static void walk_cmp_note(struct ds_report *r, uint64_t aip, int sign)
{
	struct ipcmp *v;

	if (!r->walking)
		return;
	if (!(v = dsi_grow(r->wcmp, &r->cap_wcmp, r->nr_wcmp + 1, sizeof(*v), 16))) {
		r->wcmp_lost = true;
		return;
	}
	r->wcmp = v;
	v[r->nr_wcmp++] = (struct ipcmp){ .aip = aip, .d = r->walk_d, .sign = sign };
}

uint32_t dsi_report_child_at(struct ds_report *r, uint32_t parent, uint32_t key, uint64_t ip)
{
	uint32_t x, at = NONE, z;
	uint8_t kinds;
	bool left = false;

	/*
	 * children of one kind: perf's search is an order, there is one child
	 * a key, and the newest child (often the only one) is asked first,
	 * then the map of many children (a few are searched in their tree)
	 */
	if (!mixed(r->nodes[parent].kinds) && (x = r->nodes[parent].first_child) != NONE &&
	    (r->nodes[x].key == key ||
	     (r->nodes[parent].nkids > TRIE_MIN && (x = dsi_trie__find(&r->node_trie, parent, key)) != NONE)))
		return x;
	for (x = r->nodes[parent].kids_root; x != NONE;) {
		const struct nkey *a = &r->nkeys[r->nodes[x].key], *b = &r->nkeys[key];
		int c = chain_match(a, r->nodes[x].ip, b, ip);

		/* (a frame with a symbol compared by its address: path_add) */
		if (!a->sym && b->sym && !dso_order(a, b))
			walk_cmp_note(r, r->nodes[x].ip, c);
		if (!c)
			return x;
		at = x;
		left = c < 0;
		x = left ? r->nrb[x].left : r->nrb[x].right;
	}
	if ((z = dsi_report_new_node(r, parent, key)) == NONE)
		return NONE;
	r->nodes[z].ip = ip;
	dsi_report_rb_link(r->nrb, &r->nodes[parent].kids_root, z, at, left);
	kinds = r->nodes[parent].kinds | nkey_kind(&r->nkeys[key]);
	if (mixed(kinds) && !mixed(r->nodes[parent].kinds))
		r->mix_epoch++;
	r->nodes[parent].kinds = kinds;
	return kids_mapped(r, parent) ? z : NONE;
}
/* @period along @nodes (@n of them, from @root down): each one's cumul, the last one's hit. */
void dsi_report_credit(struct ds_report *r, uint32_t root, const uint32_t *nodes, size_t n, uint64_t period)
{
	r->nodes[root].cumul += period;
	for (size_t d = 0; d < n; d++)
		r->nodes[nodes[d]].cumul += period;
	r->nodes[n ? nodes[n - 1] : root].hit += period;
}

/* Add @period along the frames from..to of @s (either direction) under @e's root, now. */
static int add_chain_nodes(struct ds_report *r, struct entry *e, const struct ds_profile_sample *s, long from, long to,
			   uint64_t period)
{
	long step = from <= to ? 1 : -1;
	uint32_t n = e->root, key;

	r->nodes[n].cumul += period;
	for (long i = from; i != to + step; i += step) {
		key = dsi_report_frame_nkey(r, s, (size_t)i);
		n = key == NONE ? NONE : dsi_report_child_at(r, n, key, s->frames[i].ip);
		if (n == NONE)
			return -ENOMEM;
		r->nodes[n].cumul += period;
	}
	r->nodes[n].hit += period;
	return 0;
}

/*
 * A chain's path under an entry, remembered by the chain's shape: a
 * profile repeats its chains (and many processes run the same code), and
 * the same shape under the same root walks the same nodes (keyed by names,
 * and by address only where there is no name) as long as no node on the
 * way has children of mixed kinds (the only ones where perf's search can
 * miss, child_at).  So a repeat adds its period to the path's pending sum,
 * credited to its nodes when that may change (a node came to mix kinds
 * somewhere: r->mix_epoch moved) and before printing (flush_paths); a path
 * through a mixed node walks its nodes for every sample, as perf does.
 * The graph is built as the samples come, so its trees are perf's.
 *
 * A path through a mixed node keeps its nodes and a pending sum too while
 * its walk cannot come out otherwise: no node on its way got a child
 * since its last walk (a search's outcome depends on the trees of
 * children it meets and the frames it compares; children only come, so
 * the sum of their numbers along the way tells), and each comparison that
 * walk made of a frame with a symbol by its address (the one thing of a
 * chain its shape leaves free that a search reads) comes out the same for
 * this sample's address (path_keep_cmps).
 *
 * A path record: root, shape id (2 words), from, to, n, pending period (2
 * words), the mix epoch its nodes were checked at, a flag (walks every
 * sample), the number of nodes at its last walk, its comparisons by
 * address (path_keep_cmps), the sum of the children of the nodes it searched
 * (UINT32_MAX: not known); then its n nodes.  Its frames' keys and
 * addresses are those of the sample at hand (of its shape).
 */
#define PATH_HEAD 13

static size_t path_words(uint32_t n)
{
	return PATH_HEAD + (size_t)n;
}

static uint32_t *path_nodes(uint32_t *p) { return p + PATH_HEAD; }

static uint32_t *path_room(struct ds_report *r, size_t words)
{
	uint32_t *n = dsi_grow(r->paths, &r->cap_paths, r->nr_paths + words, sizeof(*n), 4096);

	if (!n)
		return NULL;
	r->paths = n;
	return n + r->nr_paths;
}

static uint64_t path_pending(const uint32_t *p)
{
	return (uint64_t)p[7] << 32 | p[6];
}

static void path_set_pending(uint32_t *p, uint64_t v)
{
	p[6] = (uint32_t)v;
	p[7] = (uint32_t)(v >> 32);
}

/*
 * The index in sample @s (of path @p's shape) of the path's frame @d.
 * Where a node's children mix kinds perf compares a frame without a
 * symbol by address with the frame searched for, so a chain of one shape
 * (frames by name) can walk another way in another process (ld.so mapped
 * elsewhere, its functions with and without symbols side by side): the
 * walk takes the sample's own addresses.
 */
/* The children of the nodes path @p searches (its root, its nodes but the last), UINT32_MAX if not known. */
static uint32_t path_kids(const struct ds_report *r, uint32_t *p)
{
	const uint32_t *nodes = path_nodes(p);
	uint32_t sum = 0;

	if (p[5] >= UINT32_MAX / NKIDS_MAX)
		return UINT32_MAX;
	for (uint32_t d = 0; d < p[5]; d++) {
		uint16_t k = r->nodes[d ? nodes[d - 1] : p[0]].nkids;

		if (k == NKIDS_MAX)
			return UINT32_MAX;
		sum += k;
	}
	return sum;
}

static size_t walk_frame(const uint32_t *p, uint32_t d)
{
	long from = (int32_t)p[3], to = (int32_t)p[4];

	return (size_t)(from <= to ? from + (long)d : from - (long)d);
}

/*
 * The comparisons by address of the walk just made (r->wcmp) kept for
 * path @p (word 11: none, else its ipdep's index + 1; UINT32_MAX: not
 * known, the path walks every sample).
 */
static void path_keep_cmps(struct ds_report *r, uint32_t *p)
{
	struct ipdep *dep;

	if (p[11] == UINT32_MAX)
		return;
	if (!p[11]) {
		if (!r->nr_wcmp && !r->wcmp_lost)
			return;
		dep = r->nr_ipdeps < UINT32_MAX - 1 ?
		      dsi_grow(r->ipdeps, &r->cap_ipdeps, r->nr_ipdeps + 1, sizeof(*dep), 64) : NULL;
		if (!dep) {
			p[11] = UINT32_MAX;
			return;
		}
		r->ipdeps = dep;
		r->ipdeps[r->nr_ipdeps] = (struct ipdep){ 0 };
		p[11] = (uint32_t)++r->nr_ipdeps;
	}
	dep = &r->ipdeps[p[11] - 1];
	if (r->wcmp_lost || r->nr_wcmp >= UINT32_MAX) {
		dep->nr = UINT32_MAX;
		return;
	}
	if (r->nr_wcmp > dep->cap) {
		struct ipcmp *v = dsi_grow(r->ipcs, &r->cap_ipcs, r->nr_ipcs + r->nr_wcmp, sizeof(*v), 64);

		if (!v) {
			dep->nr = UINT32_MAX;
			return;
		}
		r->ipcs = v;
		dep->at = r->nr_ipcs;
		dep->cap = (uint32_t)r->nr_wcmp;
		r->nr_ipcs += r->nr_wcmp;
	}
	memcpy(r->ipcs + dep->at, r->wcmp, r->nr_wcmp * sizeof(*r->wcmp));
	dep->nr = (uint32_t)r->nr_wcmp;
}

/* Would path @p's last walk compare sample @s's frames by address as it compared its own? */
static bool path_cmps_same(const struct ds_report *r, const uint32_t *p, const struct ds_profile_sample *s)
{
	const struct ipdep *dep;

	if (!p[11])
		return true;
	if (p[11] == UINT32_MAX || (dep = &r->ipdeps[p[11] - 1])->nr == UINT32_MAX)
		return false;
	for (uint32_t k = 0; k < dep->nr; k++) {
		const struct ipcmp *c = &r->ipcs[dep->at + k];
		uint64_t ip = s->frames[walk_frame(p, c->d)].ip;

		if ((c->aip > ip) - (c->aip < ip) != c->sign)
			return false;
	}
	return true;
}

/*
 * Path @p's nodes found (made where new) by perf's search from its root,
 * for the chain of sample @s, then @period along them.  With @known, the
 * path's nodes are those of an earlier search: as long as this one takes
 * the same way, a node whose children are of one kind leads to the same
 * child (child_at), unsearched.
 */
static int path_walk(struct ds_report *r, uint32_t *p, const struct ds_profile_sample *s, uint64_t period, bool known)
{
	uint32_t *nodes = path_nodes(p), n = p[0], key;

	r->nr_wcmp = 0;
	r->wcmp_lost = false;
	r->walking = true;
	for (uint32_t d = 0; d < p[5]; d++) {
		size_t i = walk_frame(p, d);

		if (known && !mixed(r->nodes[n].kinds)) {
			n = nodes[d];
			continue;
		}
		r->walk_d = d;
		if ((key = dsi_report_frame_nkey(r, s, i)) == NONE || (n = dsi_report_child_at(r, n, key, s->frames[i].ip)) == NONE) {
			r->walking = false;
			return -ENOMEM;
		}
		known = known && n == nodes[d];
		nodes[d] = n;
	}
	r->walking = false;
	p[10] = (uint32_t)r->nr_nodes;
	path_keep_cmps(r, p);
	p[12] = path_kids(r, p);
	dsi_report_credit(r, p[0], nodes, p[5], period);
	return 0;
}

/* Path @p's pending period credited to its nodes. */
static void path_flush(struct ds_report *r, uint32_t *p)
{
	if (path_pending(p))
		dsi_report_credit(r, p[0], path_nodes(p), p[5], path_pending(p));
	path_set_pending(p, 0);
}

/* Whether a node on path @p has children of mixed kinds (its search may find another node). */
static bool path_mixed(const struct ds_report *r, uint32_t *p)
{
	const uint32_t *nodes = path_nodes(p);

	for (uint32_t d = 0; d < p[5]; d++)
		if (mixed(r->nodes[d ? nodes[d - 1] : p[0]].kinds))
			return true;
	return false;
}

/* Sample @s's period along the path at offset @off, as perf's search of each sample would: 0 or -ENOMEM. */
int dsi_report_path_add(struct ds_report *r, size_t off, const struct ds_profile_sample *s)
{
	uint64_t period = s->period;
	uint32_t *p = r->paths + off;

	if (!p[9] && p[8] != r->mix_epoch) {
		path_flush(r, p);
		p[9] = path_mixed(r, p);
		p[8] = r->mix_epoch;
	}
	/* a mixed path's walk, unless it would take the way it took (see above) */
	if (p[9] && (!path_cmps_same(r, p, s) ||
		     (p[10] != r->nr_nodes && (p[12] == UINT32_MAX || p[12] != path_kids(r, p))))) {
		path_flush(r, p);
		return path_walk(r, p, s, period, true);
	}
	p[10] = (uint32_t)r->nr_nodes;
	path_set_pending(p, path_pending(p) + period);
	return 0;
}

void dsi_report_path_add_pending(struct ds_report *r, size_t off, uint64_t period)
{
	uint32_t *p = r->paths + off;

	p[10] = (uint32_t)r->nr_nodes;
	path_set_pending(p, path_pending(p) + period);
}

/* Every path's pending period credited to its nodes (before printing). */
void dsi_report_flush_paths(struct ds_report *r)
{
	for (size_t off = 0; off < r->nr_paths; off += path_words(r->paths[off + 5]))
		path_flush(r, r->paths + off);
}

/* What a path is found by: the words p[0 .. 4] of its record. */
struct path_key {
	uint32_t root;
	uint64_t shape_id;
	long from, to;
};

static bool path_eq(const void *ctx, uint32_t off, const void *key)
{
	const uint32_t *p = ((const struct ds_report *)ctx)->paths + off;
	const struct path_key *k = key;

	return p[0] == k->root && p[1] == (uint32_t)k->shape_id && p[2] == (uint32_t)(k->shape_id >> 32) &&
	       p[3] == (uint32_t)k->from && p[4] == (uint32_t)k->to;
}

int dsi_report_add_chain_at(struct ds_report *r, struct entry *e, const struct ds_profile_sample *s, long from, long to,
			size_t *at)
{
	long len = (from <= to ? to - from : from - to) + 1;
	uint64_t k = dsi_hash_pair(s->shape_id ^ (uint64_t)e->root << 40, (uint64_t)from << 32 | (uint32_t)to);
	struct path_key key = { e->root, s->shape_id, from, to };
	uint32_t *p, off;

	*at = SIZE_MAX;
	/* (paths past 2^32 words have offsets the id map cannot hold: the graph takes them at once) */
	if (!s->shape_id || !s->frame_ids || (uint64_t)len > UINT32_MAX - PATH_HEAD || r->nr_paths >= NONE)
		return add_chain_nodes(r, e, s, from, to, s->period);
	off = dsi_idmap__find(&r->path_ids, k, path_eq, r, &key);
	if (off != NONE) {
		*at = off;
		return dsi_report_path_add(r, off, s);
	}
	p = path_room(r, path_words((uint32_t)len));
	if (!p)
		return -ENOMEM;
	p[0] = e->root;
	p[1] = (uint32_t)s->shape_id;
	p[2] = (uint32_t)(s->shape_id >> 32);
	p[3] = (uint32_t)from;
	p[4] = (uint32_t)to;
	p[5] = (uint32_t)len;
	path_set_pending(p, 0);
	p[11] = 0;
	if (path_walk(r, p, s, s->period, false) || dsi_idmap__add(&r->path_ids, k, (uint32_t)r->nr_paths) < 0)
		return -ENOMEM;
	p[8] = r->mix_epoch;
	p[9] = path_mixed(r, p);
	*at = r->nr_paths;
	r->nr_paths += path_words((uint32_t)len);
	return 0;
}

