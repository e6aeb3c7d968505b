/* SPDX-License-Identifier: MIT */
/*
 * Prefaulting: in a VM a page fault is dear, and one madvise populating
 * many pages costs much less than faulting them in one by one
 * (docs/performance.md), so memory about to be written is populated in
 * steps with one madvise each.  MADV_POPULATE_WRITE needs Linux 5.14;
 * elsewhere the call fails and the pages fault in as usual, so errors are
 * ignored.
 *
 * Who may use it: the library and the CLI (util/), for large buffers about to be filled.
 */
#ifndef DSTACK_PREFAULT_H
#define DSTACK_PREFAULT_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

/* The page size, asked once (threads racing to ask store the same value, atomically). */
static inline size_t dsi_page_size(void)
{
	static size_t page;
	size_t p = __atomic_load_n(&page, __ATOMIC_RELAXED);

	if (!p) {
		p = (size_t)sysconf(_SC_PAGESIZE);
		__atomic_store_n(&page, p, __ATOMIC_RELAXED);
	}
	return p;
}

static inline void dsi_prefault(const void *p, size_t n, int advice)
{
	size_t page = dsi_page_size();
	uintptr_t a;

	if (!n)
		return;
	a = (uintptr_t)p / page * page;
	madvise((void *)a, (uintptr_t)p + n - a, advice);
}

/* Pages about to be written (anonymous memory). */
static inline void dsi_prefault_write(void *p, size_t n)
{
#ifdef MADV_POPULATE_WRITE
	dsi_prefault(p, n, MADV_POPULATE_WRITE);
#else
	(void)p, (void)n;
#endif
}

/*
 * Below this, a block's few pages may as well fault: a populate call costs
 * about what two faults do.
 */
#define DSI_POPULATE_MIN (16u << 10)

/*
 * malloc(@n), its pages populated when it is big enough to matter, for
 * memory that will be written soon (and not necessarily in order, like a
 * hash table's slots).  NULL on ENOMEM.
 */
static inline void *dsi_malloc_populated(size_t n)
{
	void *p = malloc(n);

	if (p && n >= DSI_POPULATE_MIN)
		dsi_prefault_write(p, n);
	return p;
}

/* The same, zeroed (calloc would zero a heap block first, a fault per page). */
static inline void *dsi_calloc_populated(size_t nmemb, size_t size)
{
	void *p;

	if (size && nmemb > SIZE_MAX / size)
		return NULL;
	p = dsi_malloc_populated(nmemb * size);
	if (p)
		memset(p, 0, nmemb * size);
	return p;
}

#endif
