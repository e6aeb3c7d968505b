// SPDX-License-Identifier: MIT
/*
 * perf's symbol tree, replayed for the tables whose symbols overlap.
 *
 * perf 7.2 keeps a binary's symbols in a red-black tree keyed by start
 * (equal starts go right) and finds an address by descending it: left
 * below a symbol's start, right at or past its end, else that symbol.
 * Where no two symbols overlap the descent finds the one symbol holding
 * the address, which is what a binary search of the sorted table gives.
 * Where they do (a label inside a function: gcc's i386 switch tables
 * leave their .L labels in .symtab; a sized symbol that runs past the
 * next one's start; JIT entries over each other), the descent returns
 * whichever holder it meets first, or none when it turns away from all
 * of them, and that depends on the tree's shape.  So those tables are
 * rebuilt as perf builds its tree: the same inserts and erases in the
 * same order (dsi_symlog), through the Linux kernel's red-black
 * algorithm (lib/rbtree.c: rebalancing after insert, erase by the
 * successor), and searched by the same descent.
 */
#include <stdlib.h>
#include <string.h>

#include "util/grow.h"
#include "symbols/symbols_int.h"

#define NIL UINT32_MAX

struct symnode {
	uint64_t start, end;
	uint32_t left, right, parent;
	uint32_t sym;              /* index in the table; NIL for a data object */
	bool red;
};

struct ds_symtree {
	uint32_t root;
	uint32_t nr;
	struct symnode n[];
};

/* ---- the log of perf's inserts and erases ------------------------------ */

static void log_op(struct dsi_symlog *log, const struct dsi_symop *op)
{
	struct dsi_symop *v;

	if (log->failed)
		return;
	v = dsi_grow(log->ops, &log->cap, log->nr + 1, sizeof(*v), 1024);
	if (!v || op->id == NIL) {
		log->failed = true;
		return;
	}
	log->ops = v;
	log->ops[log->nr++] = *op;
	if (op->id >= log->nr_ids)
		log->nr_ids = op->id + 1;
}

void dsi_symlog__insert(struct dsi_symlog *log, uint32_t id, uint64_t start, const char *name)
{
	log_op(log, &(struct dsi_symop){ .start = start, .name = name, .id = id, .erase = false });
}

void dsi_symlog__erase(struct dsi_symlog *log, uint32_t id)
{
	log_op(log, &(struct dsi_symop){ .id = id, .erase = true });
}

void dsi_symlog__exit(struct dsi_symlog *log)
{
	free(log->ops);
	memset(log, 0, sizeof(*log));
}

/* ---- lib/rbtree.c's algorithm on an array of nodes --------------------- */

static void change_child(struct ds_symtree *t, uint32_t old, uint32_t new, uint32_t parent)
{
	if (parent == NIL)
		t->root = new;
	else if (t->n[parent].left == old)
		t->n[parent].left = new;
	else
		t->n[parent].right = new;
}

/* After a rotation: @new takes @old's parent and colour, @old becomes @new's child coloured @red. */
static void rotate_set_parents(struct ds_symtree *t, uint32_t old, uint32_t new, bool red)
{
	uint32_t parent = t->n[old].parent;

	t->n[new].parent = parent;
	t->n[new].red = t->n[old].red;
	t->n[old].parent = new;
	t->n[old].red = red;
	change_child(t, old, new, parent);
}

static void set_parent_black(struct ds_symtree *t, uint32_t x, uint32_t parent)
{
	if (x != NIL) {
		t->n[x].parent = parent;
		t->n[x].red = false;
	}
}

/* The insert's rebalancing where @parent is the left child of @gparent (mirrored when !left). */
static uint32_t *side(struct ds_symtree *t, uint32_t x, bool left)
{
	return left ? &t->n[x].left : &t->n[x].right;
}

static void insert_fixup(struct ds_symtree *t, uint32_t node)
{
	struct symnode *n = t->n;
	uint32_t parent = n[node].parent, gparent, tmp;

	for (;;) {
		if (parent == NIL) {
			n[node].red = false;
			return;
		}
		if (!n[parent].red)
			return;
		gparent = n[parent].parent;
		bool left = n[gparent].right != parent;   /* parent is gparent's left child */

		tmp = *side(t, gparent, !left);           /* the uncle */
		if (tmp != NIL && n[tmp].red) {
			n[tmp].red = false;
			n[parent].red = false;
			node = gparent;
			parent = n[node].parent;
			n[node].red = true;
			continue;
		}
		tmp = *side(t, parent, !left);
		if (node == tmp) {
			/* rotate at parent, node takes its place */
			tmp = *side(t, node, left);
			*side(t, parent, !left) = tmp;
			*side(t, node, left) = parent;
			set_parent_black(t, tmp, parent);
			n[parent].parent = node;
			n[parent].red = true;
			parent = node;
			tmp = *side(t, node, !left);
		}
		/* rotate at gparent */
		*side(t, gparent, left) = tmp;
		*side(t, parent, !left) = gparent;
		set_parent_black(t, tmp, gparent);
		rotate_set_parents(t, gparent, parent, true);
		return;
	}
}

static void tree_insert(struct ds_symtree *t, uint32_t id, uint64_t start)
{
	uint32_t x = t->root, parent = NIL;
	bool left = false;

	while (x != NIL) {
		parent = x;
		left = start < t->n[x].start;
		x = left ? t->n[x].left : t->n[x].right;
	}
	t->n[id] = (struct symnode){ .start = start, .end = start, .left = NIL, .right = NIL, .parent = parent,
				     .sym = NIL, .red = true };
	if (parent == NIL)
		t->root = id;
	else
		*side(t, parent, left) = id;
	insert_fixup(t, id);
}

static bool is_black(const struct ds_symtree *t, uint32_t x)
{
	return x == NIL || !t->n[x].red;
}

/* The erase's rebalancing: @parent's subtree on the @node side is a black node short. */
static void erase_fixup(struct ds_symtree *t, uint32_t parent)
{
	struct symnode *n = t->n;
	uint32_t node = NIL, sibling, tmp1, tmp2;

	for (;;) {
		bool left = n[parent].right != node;      /* node is parent's left child */

		sibling = *side(t, parent, !left);
		if (sibling == NIL)
			return;                           /* not in a valid tree */
		if (n[sibling].red) {
			/* rotate at parent */
			tmp1 = *side(t, sibling, left);
			*side(t, parent, !left) = tmp1;
			*side(t, sibling, left) = parent;
			set_parent_black(t, tmp1, parent);
			rotate_set_parents(t, parent, sibling, true);
			sibling = tmp1;
			if (sibling == NIL)
				return;
		}
		tmp1 = *side(t, sibling, !left);
		if (is_black(t, tmp1)) {
			tmp2 = *side(t, sibling, left);
			if (is_black(t, tmp2)) {
				/* sibling colour flip */
				n[sibling].parent = parent;
				n[sibling].red = true;
				if (n[parent].red) {
					n[parent].red = false;
				} else {
					node = parent;
					parent = n[node].parent;
					if (parent != NIL)
						continue;
				}
				return;
			}
			/* rotate at sibling */
			tmp1 = *side(t, tmp2, !left);
			*side(t, sibling, left) = tmp1;
			*side(t, tmp2, !left) = sibling;
			*side(t, parent, !left) = tmp2;
			set_parent_black(t, tmp1, sibling);
			tmp1 = sibling;
			sibling = tmp2;
		}
		/* rotate at parent, colour flips */
		tmp2 = *side(t, sibling, left);
		*side(t, parent, !left) = tmp2;
		*side(t, sibling, left) = parent;
		set_parent_black(t, tmp1, sibling);
		if (tmp2 != NIL)
			n[tmp2].parent = parent;
		rotate_set_parents(t, parent, sibling, false);
		return;
	}
}

static void tree_erase(struct ds_symtree *t, uint32_t node)
{
	struct symnode *n = t->n;
	uint32_t child = n[node].right, tmp = n[node].left, parent, rebalance;

	if (tmp == NIL) {
		/* at most one child, the right one */
		parent = n[node].parent;
		change_child(t, node, child, parent);
		if (child != NIL) {
			n[child].parent = parent;
			n[child].red = n[node].red;
			rebalance = NIL;
		} else {
			rebalance = n[node].red ? NIL : parent;
		}
	} else if (child == NIL) {
		/* only a left child */
		parent = n[node].parent;
		n[tmp].parent = parent;
		n[tmp].red = n[node].red;
		change_child(t, node, tmp, parent);
		rebalance = NIL;
	} else {
		uint32_t successor = child, child2;

		tmp = n[child].left;
		if (tmp == NIL) {
			/* the successor is the right child */
			parent = successor;
			child2 = n[successor].right;
		} else {
			/* the successor is the leftmost under the right child */
			do {
				parent = successor;
				successor = tmp;
				tmp = n[tmp].left;
			} while (tmp != NIL);
			child2 = n[successor].right;
			n[parent].left = child2;
			n[successor].right = child;
			n[child].parent = successor;
		}
		tmp = n[node].left;
		n[successor].left = tmp;
		n[tmp].parent = successor;
		change_child(t, node, successor, n[node].parent);
		if (child2 != NIL) {
			set_parent_black(t, child2, parent);
			rebalance = NIL;
		} else {
			rebalance = n[successor].red ? NIL : parent;
		}
		n[successor].parent = n[node].parent;
		n[successor].red = n[node].red;
	}
	if (rebalance != NIL)
		erase_fixup(t, rebalance);
}

/* ---- building and searching ------------------------------------------- */

/* The index in @tab of the symbol at @start named @name (the pointer), or NIL. */
static uint32_t table_index(const struct ds_symtab *tab, uint64_t start, const char *name)
{
	size_t lo = 0, hi = tab->nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (tab->syms[mid].start < start)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < tab->nr && tab->syms[lo].start == start; lo++)
		if (tab->syms[lo].name == name)
			return (uint32_t)lo;
	return NIL;
}

bool dsi_symtab__overlaps(const struct ds_symtab *tab)
{
	for (size_t i = 1; i < tab->nr; i++)
		if (tab->syms[i].start < tab->syms[i - 1].end || tab->syms[i].start == tab->syms[i - 1].start)
			return true;
	return false;
}

bool dsi_symtab__replay(struct ds_symtab *tab, const struct dsi_symlog *log, const uint64_t *end_by_id)
{
	struct ds_symtree *t;
	bool *live;

	if (log->failed || !log->nr_ids || log->nr_ids >= NIL)
		return true;
	t = malloc(sizeof(*t) + (size_t)log->nr_ids * sizeof(t->n[0]));
	live = calloc(log->nr_ids, sizeof(*live));
	if (!t || !live) {
		free(t);
		free(live);
		return false;
	}
	t->root = NIL;
	t->nr = log->nr_ids;
	for (size_t i = 0; i < log->nr; i++) {
		const struct dsi_symop *op = &log->ops[i];

		if (op->id >= log->nr_ids || op->erase != live[op->id])
			continue;                 /* an erase of what is not in, or a second insert */
		if (op->erase)
			tree_erase(t, op->id);
		else
			tree_insert(t, op->id, op->start);
		live[op->id] = !op->erase;
	}
	/* each node left in the tree: its finished end, its symbol in the table (none: an object) */
	for (size_t i = 0; i < log->nr; i++) {
		const struct dsi_symop *op = &log->ops[i];

		if (!op->erase && live[op->id]) {
			t->n[op->id].end = end_by_id[op->id];
			t->n[op->id].sym = table_index(tab, op->start, op->name);
		}
	}
	free(live);
	dsi_symtab__drop_tree(tab);
	tab->tree = t;
	return true;
}

const struct ds_sym *dsi_symtree__find(const struct ds_symtab *tab, uint64_t ip)
{
	const struct ds_symtree *t = tab->tree;
	uint32_t x = t->root;

	while (x != NIL) {
		const struct symnode *s = &t->n[x];

		if (ip < s->start)
			x = s->left;
		else if (ip > s->end || (ip == s->end && ip != s->start))
			x = s->right;
		else
			return s->sym == NIL ? NULL : &tab->syms[s->sym];
	}
	return NULL;
}

void dsi_symtab__drop_tree(struct ds_symtab *tab)
{
	free(tab->tree);
	tab->tree = NULL;
}

/* ---- for the unit tests ------------------------------------------------ */

/* Black height of @x's subtree, or -1 where a red-black rule or a link is broken. */
static int check_node(const struct ds_symtree *t, uint32_t x, uint32_t parent, uint64_t lo, uint64_t hi)
{
	int l, r;

	if (x == NIL)
		return 1;
	if (x >= t->nr || t->n[x].parent != parent || t->n[x].start < lo || t->n[x].start > hi)
		return -1;
	if (t->n[x].red && parent != NIL && t->n[parent].red)
		return -1;
	l = check_node(t, t->n[x].left, x, lo, t->n[x].start);
	r = check_node(t, t->n[x].right, x, t->n[x].start, hi);
	if (l < 0 || r < 0 || l != r)
		return -1;
	return l + !t->n[x].red;
}

int dsi_symtab__tree_check(const struct ds_symtab *tab, uint32_t *root, uint32_t *height)
{
	const struct ds_symtree *t = tab->tree;
	int bh;

	if (!t)
		return -1;
	if (t->root != NIL && t->n[t->root].red)
		return -1;
	bh = check_node(t, t->root, NIL, 0, UINT64_MAX);
	if (root)
		*root = t->root;
	if (height)
		*height = (uint32_t)bh;
	return bh < 0 ? -1 : 0;
}
