/* SPDX-License-Identifier: MIT */
/*
 * Byte source behind the reader: a regular file read through windows of
 * at most a few MiB, mapped or read (so a multi-gigabyte file costs a
 * bounded amount of memory), or a pipe read into a growable buffer.
 * Offsets are absolute positions in the file or stream.
 */
#ifndef DSTACK_SOURCE_H
#define DSTACK_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * A window of the file: bytes [off, off + len) at data, a mapping of the
 * file or a buffer they were read into.  Records in it can be used where
 * they lie while the window is pinned; when the source moves on, a pinned
 * window stays until its last pin goes.
 */
struct ds_source_window {
	uint8_t *data;
	uint64_t off;
	size_t len, cap;
	unsigned pins;
	bool retired;           /* no longer the current window: put away at the last unpin */
	bool mapped;            /* data is a mapping of the file, not a buffer */
	int guard;              /* mapped: its slot in the SIGBUS handler's table */
	struct ds_source *src;
	struct ds_source_window *next_spare;
};

struct ds_source {
	int fd;
	bool pipe;
	bool owns_fd;
	bool no_map;            /* windows are pread buffers, never mappings (set after open to choose) */
	uint64_t size;          /* file size; UINT64_MAX for pipes until EOF */
	/* file: the current window, windows kept for reuse, bytes of all windows */
	struct ds_source_window *win;
	struct ds_source_window *spare;
	unsigned nr_spare;
	size_t live_bytes;
	size_t pinned_bytes;    /* of the windows pinned now (pins > 0) */
	size_t *pinned;         /* where pins count them: &pinned_bytes, or a count
				 * several sources share (set after open) */
	size_t pin_limit;       /* pinned_bytes past which pin says no; 0: 64 MiB */
	/* pipe: bytes [buf_off, buf_off + buf_len) of the stream */
	uint8_t *buf;
	size_t buf_cap, buf_len;
	uint64_t buf_off;
	bool eof;
};

int dsi_source__open(struct ds_source *s, const char *path);
void dsi_source__close(struct ds_source *s);
/*
 * Point *@p at bytes [@off, @off + @len).  Valid until the next call.
 * 0, -ENODATA when the source ends before @off + @len, or -errno.
 * For pipes, @off must not go backwards past the last call's offset.
 */
int dsi_source__get(struct ds_source *s, uint64_t off, size_t len, const uint8_t **p);

/*
 * Keep what the last dsi_source__get() of a file returned valid until
 * dsi_source__unpin(): the window it lies in stays even after the source
 * moves on.  NULL for a pipe (its buffer moves: copy instead), or when
 * pinned windows already hold pin_limit bytes in *pinned (then copy too).  Every pin
 * is dropped before dsi_source__close().
 */
struct ds_source_window *dsi_source__pin(struct ds_source *s);
void dsi_source__unpin(struct ds_source_window *w);

/*
 * Pages of mapped windows read as zeros so far, in this process: their
 * file shrank while they were mapped.  A reader compares the count before
 * and after a run; more means what it read is not the file.
 */
unsigned long dsi_source__faults(void);

/*
 * Is the file now shorter than it was at open (*@was then, *@now now)?
 * A shrink that stays inside a page, or ahead of every window, makes no
 * fault: the reader just meets zeros or the end early.  Never for a pipe.
 */
bool dsi_source__shrank(const struct ds_source *s, uint64_t *was, uint64_t *now);

#endif
