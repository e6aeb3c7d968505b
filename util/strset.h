/* SPDX-License-Identifier: MIT */
/*
 * A string set: our one copy of each distinct text, and its dense id (the
 * order texts were first added: 0, 1, 2, ...).  Equal texts get the same
 * id and the same pointer, so a caller compares texts by id or pointer,
 * and a tree keyed by them merges what prints the same.
 *
 *	struct dsi_strset set = {0};
 *	uint32_t id = dsi_strset__add(&set, "main");
 *	if (id == DSI_IDMAP_NONE)
 *		return -ENOMEM;           (nothing was added)
 *	puts(dsi_strset__str(&set, id));
 *	dsi_strset__exit(&set);
 *
 * Ownership: the set owns its copies; a text's pointer stays valid until
 * dsi_strset__exit (the array of pointers moves as it grows, the texts do
 * not).  Nothing is removed but everything at once.
 *
 * Lifecycle: zero-initialise; dsi_strset__exit() frees all and leaves the
 * set empty, ready for use again.
 *
 * Who may use it: the library, the CLI and the tests (util/ is both's module).
 */
#ifndef DSTACK_STRSET_H
#define DSTACK_STRSET_H

#include <stddef.h>
#include <stdint.h>
#include "util/idmap.h"

struct dsi_strset {
	char **strs;           /* by id: our copies (read, never written, by users) */
	size_t nr, cap;
	struct dsi_idmap ids;   /* text -> id */
	size_t text_bytes;     /* of the copies, malloc's own overhead counted */
};

/* The id of the text equal to @s, a copy of @s added if there is none; DSI_IDMAP_NONE on ENOMEM. */
uint32_t dsi_strset__add(struct dsi_strset *set, const char *s);

/* The id of the text equal to @s, DSI_IDMAP_NONE if the set has none. */
uint32_t dsi_strset__find(const struct dsi_strset *set, const char *s);

/* Our copy of @s (dsi_strset__add's, by pointer); NULL on ENOMEM. */
const char *dsi_strset__intern(struct dsi_strset *set, const char *s);

/* The text of @id, an id dsi_strset__add gave. */
static inline const char *dsi_strset__str(const struct dsi_strset *set, uint32_t id)
{
	return set->strs[id];
}

/* The memory the set holds, near enough: its arrays as allocated, and its copies. */
size_t dsi_strset__mem(const struct dsi_strset *set);

void dsi_strset__exit(struct dsi_strset *set);

#endif
