// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdlib.h>
#include "util/idmap.h"
#include "util/prefault.h"

void dsi_idmap__exit(struct dsi_idmap *m)
{
	free(m->slots);
	m->slots = NULL;
	m->cap = 0;
	m->len = 0;
}

/* Double the table (from 16), every id moved by the hash bits it keeps: eq is not needed. */
int dsi_idmap__grow(struct dsi_idmap *m)
{
	size_t ncap = m->cap ? m->cap * 2 : 16;
	struct dsi_idmap_slot *ns;

	/* the hash bits kept pick the slot: 2^32 slots are as many as they can tell apart */
	if ((uint64_t)ncap - 1 > UINT32_MAX || ncap > SIZE_MAX / sizeof(*ns))
		return -ENOMEM;
	/* slots are written all over: populated in one call, not a fault per page */
	ns = dsi_calloc_populated(ncap, sizeof(*ns));
	if (!ns)
		return -ENOMEM;
	for (size_t j = 0; j < m->cap; j++) {
		size_t i;

		if (!m->slots[j].id1)
			continue;
		for (i = m->slots[j].hash & (ncap - 1); ns[i].id1; i = (i + 1) & (ncap - 1))
			;
		ns[i] = m->slots[j];
	}
	free(m->slots);
	m->slots = ns;
	m->cap = ncap;
	return 0;
}
