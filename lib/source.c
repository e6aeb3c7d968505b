// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "prefault.h"
#include "source.h"

/* Window size: big enough that remaps are rare, small enough to bound RSS. */
#define WINDOW (8u << 20)   /* file pages mapped at once: bounds what the input adds to RSS */

int ds_source__open(struct ds_source *s, const char *path)
{
	struct stat st;

	memset(s, 0, sizeof(*s));
	if (!strcmp(path, "-")) {
		s->fd = 0;
	} else {
		s->fd = open(path, O_RDONLY | O_CLOEXEC);
		if (s->fd < 0)
			return -errno;
		s->owns_fd = true;
	}
	if (fstat(s->fd, &st) < 0) {
		int err = -errno;

		ds_source__close(s);
		return err;
	}
	s->pipe = !S_ISREG(st.st_mode);
	s->size = s->pipe ? UINT64_MAX : (uint64_t)st.st_size;
	return 0;
}

/* The current window is left: unmapped now, or by its last unpin. */
static void leave_window(struct ds_source *s)
{
	struct ds_source_window *w = s->win;

	if (w && w->pins) {
		w->retired = true;
	} else {
		if (s->map)
			munmap(s->map, s->map_len);
		free(w);
	}
	s->win = NULL;
	s->map = NULL;
}

struct ds_source_window *ds_source__pin(struct ds_source *s)
{
	if (s->pipe || !s->map)
		return NULL;
	if (!s->win) {
		s->win = calloc(1, sizeof(*s->win));
		if (!s->win)
			return NULL;
		s->win->map = s->map;
		s->win->len = s->map_len;
	}
	s->win->pins++;
	return s->win;
}

void ds_source__unpin(struct ds_source_window *w)
{
	if (--w->pins || !w->retired)
		return;
	munmap(w->map, w->len);
	free(w);
}

void ds_source__close(struct ds_source *s)
{
	leave_window(s);
	free(s->buf);
	if (s->owns_fd)
		close(s->fd);
	memset(s, 0, sizeof(*s));
	s->fd = -1;
}

/*
 * Reading is sequential: pages well behind @off are not read again, so
 * they are given back to keep the input's share of RSS to a few MiB.  The
 * mapping is private and read-only, so a page touched again is simply read
 * from the file again: this can never change what a caller sees.
 */
#define KEEP_BEHIND (1u << 20)   /* (default) and given back in steps of this: each step costs a TLB flush on every CPU running a thread of ours */
#define READ_AHEAD (256u << 10)

static void release_behind(struct ds_source *s, uint64_t off)
{
	size_t rel = (size_t)(off - s->map_off), page = ds_page_size(), upto;

	if (rel < s->map_dropped) {
		/* back into what was given back (the data after the header and
		 * its feature sections at the end): count the drops from here */
		s->map_dropped = rel & ~(page - 1);
		s->map_populated = s->map_dropped;
	}
	if (rel > s->map_populated + READ_AHEAD)   /* a jump forward: nothing to fill in between */
		s->map_populated = rel & ~(page - 1);
	if (rel + READ_AHEAD / 2 > s->map_populated && s->map_populated < s->map_len) {
		/* the next step in one call: a page fault costs ~10 us in a VM */
		size_t n = s->map_len - s->map_populated < READ_AHEAD ? s->map_len - s->map_populated : READ_AHEAD;

		ds_prefault_read(s->map + s->map_populated, n);
		s->map_populated += n;
	}
	size_t keep = s->keep_behind ? s->keep_behind : KEEP_BEHIND;

	if (rel < s->map_dropped + 2 * keep)
		return;
	upto = (rel - keep) & ~(page - 1);
	madvise(s->map + s->map_dropped, upto - s->map_dropped, MADV_DONTNEED);
	s->map_dropped = upto;
}

static int file_get(struct ds_source *s, uint64_t off, size_t len, const uint8_t **p)
{
	if (off > s->size || len > s->size - off)
		return -ENODATA;
	if (s->map && off >= s->map_off && off + len <= s->map_off + s->map_len) {
		*p = s->map + (off - s->map_off);
		release_behind(s, off);
		return 0;
	}
	leave_window(s);
	uint64_t page = ds_page_size();
	uint64_t start = off & ~(page - 1);
	uint64_t want = off + len - start;

	if (want < WINDOW)
		want = WINDOW;
	if (want > s->size - start)
		want = s->size - start;
	if (!want)
		want = 1; /* mmap of length 0 fails; the caller asked for 0 bytes */
	void *m = mmap(NULL, want, PROT_READ, MAP_PRIVATE, s->fd, (off_t)start);

	if (m == MAP_FAILED)
		return -errno;
	madvise(m, want, MADV_SEQUENTIAL);
	s->map = m;
	s->map_off = start;
	s->map_len = want;
	s->map_dropped = 0;
	s->map_populated = (size_t)(off - start) & ~(size_t)(page - 1);
	*p = s->map + (off - start);
	return 0;
}

static int pipe_fill(struct ds_source *s, size_t need)
{
	if (need > s->buf_cap) {
		size_t cap = s->buf_cap ? s->buf_cap : 1 << 16;

		while (cap < need)
			cap *= 2;
		uint8_t *nb = realloc(s->buf, cap);

		if (!nb)
			return -ENOMEM;
		s->buf = nb;
		s->buf_cap = cap;
	}
	while (s->buf_len < need) {
		ssize_t n = read(s->fd, s->buf + s->buf_len, s->buf_cap - s->buf_len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0) {
			s->eof = true;
			s->size = s->buf_off + s->buf_len;
			return -ENODATA;
		}
		s->buf_len += (size_t)n;
	}
	return 0;
}

static int pipe_get(struct ds_source *s, uint64_t off, size_t len, const uint8_t **p)
{
	if (off < s->buf_off)
		return -ESPIPE;
	/* drop what lies before @off: a pipe is read once, front to back */
	for (;;) {
		uint64_t skip = off - s->buf_off;

		if (skip <= s->buf_len) {
			/* fuzz finding: buf is NULL before the first fill, and NULL + 0 is UB */
			if (skip)
				memmove(s->buf, s->buf + skip, s->buf_len - skip);
			s->buf_len -= skip;
			s->buf_off = off;
			break;
		}
		/* skip payload bytes never looked at */
		s->buf_off += s->buf_len;
		s->buf_len = 0;
		uint64_t gap = off - s->buf_off;
		int err = pipe_fill(s, gap < (1u << 20) ? (size_t)gap : (1u << 20));

		if (err)
			return err;
	}
	int err = pipe_fill(s, len);

	if (err)
		return err;
	*p = s->buf;
	return 0;
}

int ds_source__get(struct ds_source *s, uint64_t off, size_t len, const uint8_t **p)
{
	return s->pipe ? pipe_get(s, off, len, p) : file_get(s, off, len, p);
}
