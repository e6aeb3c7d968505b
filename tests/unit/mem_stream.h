/* SPDX-License-Identifier: MIT */
/*
 * The unit tests' output stream for the library's writers (ds_write_fn):
 * everything written kept in one growing NUL-terminated buffer, or, with
 * fail_errno set, every write that would pass fail_after bytes refused
 * with -fail_errno (fail_after 0: every write), counted in
 * calls_after_fail.  Zero-initialise; free(buf) when done.
 */
#ifndef DSTACK_TEST_MEM_STREAM_H
#define DSTACK_TEST_MEM_STREAM_H

#include <stdlib.h>
#include <string.h>

struct mem {
	char *buf;
	size_t len, cap;
	size_t fail_after;
	int fail_errno;
	int calls_after_fail;
};

static int mem_write(void *ctx, const void *buf, size_t len)
{
	struct mem *m = ctx;

	if (m->fail_errno && (m->len + len > m->fail_after || !m->fail_after)) {
		m->calls_after_fail++;
		return -m->fail_errno;
	}
	if (m->len + len + 1 > m->cap) {
		m->cap = (m->len + len + 1) * 2;
		m->buf = realloc(m->buf, m->cap);
		if (!m->buf)
			abort();
	}
	memcpy(m->buf + m->len, buf, len);
	m->len += len;
	m->buf[m->len] = 0;
	return 0;
}

#endif
