/* SPDX-License-Identifier: MIT */
/* Reading files at an offset, the one way (the input's windows, kallsyms). */
#ifndef DSTACK_IO_H
#define DSTACK_IO_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

/*
 * @n bytes at @off of @fd into @buf, retrying short reads and EINTR: how
 * many were read (fewer only at the end of the file), or -errno.
 */
static inline ssize_t ds_pread_full(int fd, void *buf, size_t n, uint64_t off)
{
	size_t have = 0;

	while (have < n) {
		ssize_t got = pread(fd, (char *)buf + have, n - have, (off_t)(off + have));

		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return -errno;
		if (got == 0)
			break;
		have += (size_t)got;
	}
	return (ssize_t)have;
}

#endif
