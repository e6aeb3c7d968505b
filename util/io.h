/* SPDX-License-Identifier: MIT */
/*
 * Reading files at an offset, the one way (the input's windows, kallsyms).
 * Who may use it: the library and the CLI (util/); opens a path the way input is opened.
 */
#ifndef DSTACK_IO_H
#define DSTACK_IO_H

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * @n bytes at @off of @fd into @buf, retrying short reads and EINTR: how
 * many were read (fewer only at the end of the file), or -errno.
 */
static inline ssize_t dsi_pread_full(int fd, void *buf, size_t n, uint64_t off)
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

/*
 * Open @path to read it if it is a regular file: what a binary, a debug
 * file, kallsyms, a symbol map or a cache file must be, whether its name
 * came from the user or from the recording.  A FIFO with no writer would
 * block the open (and a reader would wait forever), a device may never end
 * (/dev/zero) and a directory cannot be read: the open is non-blocking, the
 * type checked with fstat before any read, and anything else refused with
 * errno EINVAL (the callers say "not a regular file").  /proc files are
 * regular.  Returns the fd (blocking again), or -1 with errno set.
 */
static inline int dsi_open_regular(const char *path)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	int flags;

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		int err = errno;

		err = fstat(fd, &st) ? err : EINVAL;
		close(fd);
		errno = err;
		return -1;
	}
	flags = fcntl(fd, F_GETFL);
	if (flags >= 0)
		fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
	return fd;
}

#endif
