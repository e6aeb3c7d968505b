// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdlib.h>
#include "util/trie.h"
#include "util/prefault.h"

void dsi_trie__exit(struct dsi_trie *t)
{
	free(t->slots);
	t->slots = NULL;
	t->cap = 0;
	t->len = 0;
}

/* Double the table (from 16). */
int dsi_trie__grow(struct dsi_trie *t)
{
	struct dsi_trie old = *t;
	struct dsi_trie_slot *ns;

	t->cap = old.cap ? old.cap * 2 : 16;
	/* slots are written all over: populated in one call, not a fault per page */
	ns = t->cap <= SIZE_MAX / sizeof(*ns) ? dsi_calloc_populated(t->cap, sizeof(*ns)) : NULL;
	if (!ns) {
		*t = old;
		return -ENOMEM;
	}
	t->slots = ns;
	for (size_t j = 0; j < old.cap; j++) {
		const struct dsi_trie_slot *s = &old.slots[j];
		size_t i;

		if (!s->node1)
			continue;
		for (i = dsi_trie__slot(t, s->parent, s->key); ns[i].node1; i = (i + 1) & (t->cap - 1))
			;
		ns[i] = *s;
	}
	free(old.slots);
	return 0;
}
