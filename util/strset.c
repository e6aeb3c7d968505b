// SPDX-License-Identifier: MIT
/* A string set (see util/strset.h). */
#include <stdlib.h>
#include <string.h>
#include "util/grow.h"
#include "util/hashmap.h"
#include "util/strset.h"

static bool text_eq(const void *ctx, uint32_t id, const void *s)
{
	return !strcmp(((const struct dsi_strset *)ctx)->strs[id], s);
}

static uint64_t text_hash(const char *s)
{
	return dsi_hash64(dsi_hash_str(s));
}

uint32_t dsi_strset__find(const struct dsi_strset *set, const char *s)
{
	return dsi_idmap__find(&set->ids, text_hash(s), text_eq, set, s);
}

uint32_t dsi_strset__add(struct dsi_strset *set, const char *s)
{
	uint64_t hash = text_hash(s);
	uint32_t id = dsi_idmap__find(&set->ids, hash, text_eq, set, s);
	char **n, *copy;

	if (id != DSI_IDMAP_NONE)
		return id;
	if (set->nr >= DSI_IDMAP_NONE - 1 ||
	    !(n = dsi_grow(set->strs, &set->cap, set->nr + 1, sizeof(*n), 256)))
		return DSI_IDMAP_NONE;
	set->strs = n;
	if (!(copy = strdup(s)))
		return DSI_IDMAP_NONE;
	if (dsi_idmap__add(&set->ids, hash, (uint32_t)set->nr) < 0) {
		free(copy);
		return DSI_IDMAP_NONE;
	}
	set->text_bytes += strlen(s) + 1 + 16;   /* and malloc's own */
	set->strs[set->nr] = copy;
	return (uint32_t)set->nr++;
}

const char *dsi_strset__intern(struct dsi_strset *set, const char *s)
{
	uint32_t id = dsi_strset__add(set, s);

	return id == DSI_IDMAP_NONE ? NULL : set->strs[id];
}

size_t dsi_strset__mem(const struct dsi_strset *set)
{
	return set->cap * sizeof(*set->strs) + set->ids.cap * sizeof(*set->ids.slots) + set->text_bytes;
}

void dsi_strset__exit(struct dsi_strset *set)
{
	for (size_t i = 0; i < set->nr; i++)
		free(set->strs[i]);
	free(set->strs);
	dsi_idmap__exit(&set->ids);
	*set = (struct dsi_strset){ 0 };
}
