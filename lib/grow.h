/* SPDX-License-Identifier: MIT */
/*
 * Growing arrays, the one way: ds_grow(p, &cap, need, size, first) makes
 * room for @need elements of @size bytes in @p (capacity *@cap elements),
 * doubling from @first.  It returns the array, perhaps moved, with *@cap
 * updated; or NULL on ENOMEM or overflow, when @p and *@cap are unchanged
 * and still valid.  The caller stores the result:
 *
 *	struct x *n = ds_grow(v, &cap, nr + 1, sizeof(*v), 256);
 *	if (!n)
 *		return -ENOMEM;
 *	v = n;
 */
#ifndef DSTACK_GROW_H
#define DSTACK_GROW_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

static inline void *ds_grow(void *p, size_t *cap, size_t need, size_t size, size_t first)
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
	n = realloc(p, ncap * size);
	if (n)
		*cap = ncap;
	return n;
}

#endif
