/* SPDX-License-Identifier: MIT */
/*
 * Growing arrays, the one way: dsi_grow(p, &cap, need, size, first) makes
 * room for @need elements of @size bytes in @p (capacity *@cap elements),
 * doubling from @first.  It returns the array, perhaps moved, with *@cap
 * updated; or NULL on ENOMEM or overflow, when @p and *@cap are unchanged
 * and still valid.  The caller stores the result:
 *
 *	struct x *n = dsi_grow(v, &cap, nr + 1, sizeof(*v), 256);
 *	if (!n)
 *		return -ENOMEM;
 *	v = n;
 *
 * Who may use it: the library, the CLI and the tests (util/ is both's module).
 */
#ifndef DSTACK_GROW_H
#define DSTACK_GROW_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "util/prefault.h"

#define GROW_POPULATE_MAX (4u << 20)

static inline void *dsi_grow(void *p, size_t *cap, size_t need, size_t size, size_t first)
{
	size_t ncap = *cap ? *cap : first;
	void *n;

	if (need <= *cap)
		return p;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2)
			return NULL;
		ncap *= 2;
	}
	if (ncap > SIZE_MAX / size)
		return NULL;
	if (ncap * size < DSI_POPULATE_MIN) {
		n = realloc(p, ncap * size);
	} else {
		/*
		 * Moved by hand, into pages populated first: realloc's copy (or a
		 * caller's fill) would fault them in one at a time, each fault dear
		 * in a VM.  The new room is populated up to GROW_POPULATE_MAX ahead.
		 */
		size_t old = *cap * size, add = ncap * size - old;

		n = malloc(ncap * size);
		if (!n)
			return NULL;
		dsi_prefault_write(n, old + (add < GROW_POPULATE_MAX ? add : GROW_POPULATE_MAX));
		if (p) {
			memcpy(n, p, old);
			free(p);
		}
	}
	if (n)
		*cap = ncap;
	return n;
}

/*
 * dsi_grow, the new elements zeroed: for arrays indexed by an id that
 * grows as ids come (counts per stack, a cache per frame id), where the
 * unseen ones must read as 0.
 */
static inline void *dsi_grow_zeroed(void *p, size_t *cap, size_t need, size_t size, size_t first)
{
	size_t old = *cap;
	char *n = dsi_grow(p, cap, need, size, first);

	if (n && *cap > old)
		memset(n + old * size, 0, (*cap - old) * size);
	return n;
}

#endif
