/* SPDX-License-Identifier: MIT */
/*
 * Byte source behind the reader: a regular file read through a sliding
 * mmap window (so a multi-gigabyte file costs a bounded amount of memory),
 * or a pipe read into a growable buffer.  Offsets are absolute positions in
 * the file or stream.
 */
#ifndef DSTACK_SOURCE_H
#define DSTACK_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * A mapping of the file: records in it can be used where they lie while
 * the window is pinned; when the source moves on, a pinned window stays
 * mapped until its last pin goes.
 */
struct ds_source_window {
	uint8_t *map;
	size_t len;
	unsigned pins;
	bool retired;           /* no longer the current window: unmapped at the last unpin */
};

struct ds_source {
	int fd;
	bool pipe;
	bool owns_fd;
	uint64_t size;          /* file size; UINT64_MAX for pipes until EOF */
	/* file: the current window */
	struct ds_source_window *win;   /* its pin count (map, map_len mirror it) */
	uint8_t *map;
	uint64_t map_off;
	size_t map_len;
	size_t map_dropped;     /* bytes at the window's start given back (MADV_DONTNEED) */
	size_t map_populated;   /* prefaulted up to here (from where reading began) */
	size_t keep_behind;     /* bytes kept mapped behind the reader (0: the default, 1 MiB) */
	/* pipe: bytes [buf_off, buf_off + buf_len) of the stream */
	uint8_t *buf;
	size_t buf_cap, buf_len;
	uint64_t buf_off;
	bool eof;
};

int ds_source__open(struct ds_source *s, const char *path);
void ds_source__close(struct ds_source *s);
/*
 * Point *@p at bytes [@off, @off + @len).  Valid until the next call.
 * 0, -ENODATA when the source ends before @off + @len, or -errno.
 * For pipes, @off must not go backwards past the last call's offset.
 */
int ds_source__get(struct ds_source *s, uint64_t off, size_t len, const uint8_t **p);

/*
 * Keep what the last ds_source__get() of a file returned valid until
 * ds_source__unpin(): the window it lies in stays mapped even after the
 * source moves on.  NULL for a pipe (its buffer moves: copy instead) or
 * if out of memory.  Pages of a pinned window may still be given back
 * behind the reader: touched again, they are read again from the file.
 */
struct ds_source_window *ds_source__pin(struct ds_source *s);
void ds_source__unpin(struct ds_source_window *w);

#endif
