// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdlib.h>
#include "util/hashmap.h"
#include "util/prefault.h"

void dsi_hashmap__init(struct dsi_hashmap *m)
{
	m->slots = NULL;
	m->cap = 0;
	m->len = 0;
	m->has_zero = false;
	m->zero_val = 0;
}

void dsi_hashmap__exit(struct dsi_hashmap *m)
{
	free(m->slots);
	dsi_hashmap__init(m);
}

static size_t slot_of(const struct dsi_hashmap *m, uint64_t key)
{
	return dsi_hash64(key) & (m->cap - 1);
}

uint64_t *dsi_hashmap__find(const struct dsi_hashmap *m, uint64_t key)
{
	if (!key)
		return m->has_zero ? (uint64_t *)&m->zero_val : NULL;
	if (!m->cap)
		return NULL;
	for (size_t i = slot_of(m, key);; i = (i + 1) & (m->cap - 1)) {
		struct dsi_hashmap_slot *s = &m->slots[i];

		if (s->key == key)
			return &s->val;
		if (!s->key)
			return NULL;
	}
}

static int grow(struct dsi_hashmap *m)
{
	size_t ncap = m->cap ? m->cap * 2 : 16;
	struct dsi_hashmap_slot *old = m->slots;
	size_t ocap = m->cap;
	/* slots are written all over: populated in one call, not a fault per page */
	struct dsi_hashmap_slot *ns = dsi_calloc_populated(ncap, sizeof(*ns));

	if (!ns)
		return -ENOMEM;
	m->slots = ns;
	m->cap = ncap;
	for (size_t j = 0; j < ocap; j++) {
		if (!old[j].key)
			continue;
		size_t i = slot_of(m, old[j].key);

		while (ns[i].key)
			i = (i + 1) & (ncap - 1);
		ns[i] = old[j];
	}
	free(old);
	return 0;
}

uint64_t *dsi_hashmap__upsert(struct dsi_hashmap *m, uint64_t key, uint64_t init, bool *found)
{
	bool dummy;

	if (!found)
		found = &dummy;
	if (!key) {
		*found = m->has_zero;
		if (!m->has_zero) {
			m->has_zero = true;
			m->zero_val = init;
		}
		return &m->zero_val;
	}
	/* keep the load factor under 1/2 so probe runs stay short */
	if ((m->len + 1) * 2 > m->cap && grow(m))
		return NULL;
	for (size_t i = slot_of(m, key);; i = (i + 1) & (m->cap - 1)) {
		struct dsi_hashmap_slot *s = &m->slots[i];

		if (s->key == key) {
			*found = true;
			return &s->val;
		}
		if (!s->key) {
			s->key = key;
			s->val = init;
			m->len++;
			*found = false;
			return &s->val;
		}
	}
}

int dsi_hashmap__set(struct dsi_hashmap *m, uint64_t key, uint64_t val)
{
	uint64_t *v = dsi_hashmap__upsert(m, key, val, NULL);

	if (!v)
		return -ENOMEM;
	*v = val;
	return 0;
}

bool dsi_hashmap__del(struct dsi_hashmap *m, uint64_t key, uint64_t *old)
{
	size_t mask = m->cap - 1, i;

	if (!key) {
		if (!m->has_zero)
			return false;
		if (old)
			*old = m->zero_val;
		m->has_zero = false;
		return true;
	}
	if (!m->cap)
		return false;
	for (i = slot_of(m, key);; i = (i + 1) & mask) {
		if (!m->slots[i].key)
			return false;
		if (m->slots[i].key == key)
			break;
	}
	if (old)
		*old = m->slots[i].val;
	/* backward-shift: pull later members of the probe run into the hole */
	for (size_t j = (i + 1) & mask;; j = (j + 1) & mask) {
		struct dsi_hashmap_slot *s = &m->slots[j];

		if (!s->key)
			break;
		size_t home = slot_of(m, s->key);
		/* s may move to i only if i lies cyclically in [home, j) */
		if (((j - home) & mask) >= ((j - i) & mask)) {
			m->slots[i] = *s;
			i = j;
		}
	}
	m->slots[i].key = 0;
	m->len--;
	return true;
}

/* *@iter: 0 is key 0's turn, i + 1 slot i's */
bool dsi_hashmap__next(const struct dsi_hashmap *m, size_t *iter, uint64_t *key, uint64_t *val)
{
	if (*iter == 0) {
		(*iter)++;
		if (m->has_zero) {
			if (key)
				*key = 0;
			if (val)
				*val = m->zero_val;
			return true;
		}
	}
	for (; *iter - 1 < m->cap; (*iter)++) {
		const struct dsi_hashmap_slot *s = &m->slots[*iter - 1];

		if (s->key) {
			if (key)
				*key = s->key;
			if (val)
				*val = s->val;
			(*iter)++;
			return true;
		}
	}
	return false;
}
