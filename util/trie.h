/* SPDX-License-Identifier: MIT */
/*
 * The edges of a tree of stacks: (parent node, key) -> child node, the
 * index of a call graph, a flame graph or a set of folded stacks, where a
 * sample walks down from a root one frame (key) at a time.  The caller
 * keeps its nodes (most often an array, a node an index in it) and numbers
 * them; the trie only finds a node's child by key, and remembers the
 * children made.  Keys are any u64 (a frame's id, an interned pointer),
 * parents any u32 (DSI_TRIE_NONE too: roots can be found by key under it).
 *
 *	struct node *n = dsi_grow(v, &cap, nr + 1, sizeof(*v), 1024);
 *	...
 *	c = dsi_trie__child(&t, parent, key, nr, &added);
 *	if (c == DSI_TRIE_NONE)
 *		return -ENOMEM;         (nothing was added)
 *	if (added)
 *		v[nr++] = (struct node){ .parent = parent, ... };
 *
 * Open addressing with linear probing, a power-of-two capacity and a load
 * under 1/2; a slot is 16 bytes (key, parent, node + 1; 0 is free) and
 * holds the whole edge, so a lookup reads no node.  Nothing is removed but
 * everything at once (dsi_trie__exit), so a trie that has grown never
 * allocates again.
 *
 * Lifecycle: zero-initialise (struct dsi_trie t = {0}); dsi_trie__exit()
 * frees the table and leaves it empty, ready for use again.
 *
 * Who may use it: the library, the CLI and the tests (util/ is both's module).
 */
#ifndef DSTACK_TRIE_H
#define DSTACK_TRIE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "util/hashmap.h"

#define DSI_TRIE_NONE UINT32_MAX

struct dsi_trie_slot {
	uint64_t key;
	uint32_t parent;
	uint32_t node1;   /* child node + 1; 0: free */
};

struct dsi_trie {
	struct dsi_trie_slot *slots;
	size_t cap;       /* 0 or a power of two */
	size_t len;       /* edges */
};

void dsi_trie__exit(struct dsi_trie *t);
/* Room for one more edge (called by dsi_trie__child): 0 or -ENOMEM, when the trie is unchanged. */
int dsi_trie__grow(struct dsi_trie *t);

static inline size_t dsi_trie__count(const struct dsi_trie *t)
{
	return t->len;
}

static inline size_t dsi_trie__slot(const struct dsi_trie *t, uint32_t parent, uint64_t key)
{
	return dsi_hash64(key * 0x9e3779b97f4a7c15ULL ^ ((uint64_t)parent << 32 | parent)) & (t->cap - 1);
}

/* The child of @parent under @key, DSI_TRIE_NONE if there is none. */
static inline uint32_t dsi_trie__find(const struct dsi_trie *t, uint32_t parent, uint64_t key)
{
	if (!t->cap)
		return DSI_TRIE_NONE;
	for (size_t i = dsi_trie__slot(t, parent, key);; i = (i + 1) & (t->cap - 1)) {
		const struct dsi_trie_slot *s = &t->slots[i];

		if (!s->node1)
			return DSI_TRIE_NONE;
		if (s->key == key && s->parent == parent)
			return s->node1 - 1;
	}
}

/*
 * The child of @parent under @key, else @new_node (not DSI_TRIE_NONE),
 * added as it: *@added tells which.  DSI_TRIE_NONE on ENOMEM (nothing added).
 */
static inline uint32_t dsi_trie__child(struct dsi_trie *t, uint32_t parent, uint64_t key, uint32_t new_node,
				      bool *added)
{
	*added = false;
	if ((t->len + 1) * 2 > t->cap && dsi_trie__grow(t))
		return DSI_TRIE_NONE;
	for (size_t i = dsi_trie__slot(t, parent, key);; i = (i + 1) & (t->cap - 1)) {
		struct dsi_trie_slot *s = &t->slots[i];

		if (!s->node1) {
			*s = (struct dsi_trie_slot){ .key = key, .parent = parent, .node1 = new_node + 1 };
			t->len++;
			*added = true;
			return new_node;
		}
		if (s->key == key && s->parent == parent)
			return s->node1 - 1;
	}
}

#endif
