// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "util/io.h"
#include "util/prefault.h"
#include "format/source.h"

/*
 * A file is read through windows: mappings of the file, its pages mapped
 * when the window is made (MADV_POPULATE_READ), or where that cannot be
 * done (an older kernel, a file that cannot be mapped) buffers filled with
 * pread.  Either way records are used where they lie while their window
 * is pinned, and a window in flight is memory the budget counts.
 *
 * A mapping made page by page costs a fault a page (dear in a VM), and
 * was slower than pread into a reused buffer; one made whole by
 * MADV_POPULATE_READ costs its page-table entries, not a copy of the
 * bytes, which for dwarf-mode stack copies (most never read) was most of
 * the reading thread's time.  Mapped windows are bigger than buffers:
 * each unmap makes the CPUs that read the window drop it from their TLBs
 * (docs/performance.md).  A file that shrank before a window was made
 * is read by pread, which says where it ends; one cut short by someone
 * else while a window of it is mapped would end the process (SIGBUS) as
 * perf's own reader does, so the pages it lost read as zeros instead
 * (guard_fault) and the session ends with an error (dsi_source__faults).
 * A cut inside a page faults nowhere (the page's tail reads as zeros):
 * the session compares the file's size with its size at open
 * (dsi_source__shrank) and names the cause before the reader's error.
 *
 * Buffers of WINDOW bytes are kept for reuse, their pages populated once
 * (page faults are dear in a VM).  The windows in flight (pinned by
 * records waiting to be ordered and consumed) are most of the reading
 * side's memory: WINDOW is the buffer size that measured fastest, bigger
 * buffers costing more fresh pages, smaller ones more reads.
 */
#define WINDOW (256u << 10)
#define SPARE_WINDOWS 16
/* a mapped window, unless that is more than a quarter of what may be pinned */
#define MAP_WINDOW (2u << 20)
/* a read away from the last window's end (the header, its feature
 * sections, the start of the data) gets a window this big: most are a
 * few KiB, and a new WINDOW buffer would be populated and filled for them */
#define SMALL_WINDOW (64u << 10)
/* pinned windows beyond this (unless the owner set pin_limit): pin says
 * no and the caller copies */
#define PIN_LIMIT (64u << 20)

int dsi_source__open(struct ds_source *s, const char *path)
{
	struct stat st;

	memset(s, 0, sizeof(*s));
	s->pinned = &s->pinned_bytes;
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

		dsi_source__close(s);
		return err;
	}
	if (S_ISDIR(st.st_mode)) {   /* read() says EISDIR only once reading: "0 bytes" misled */
		dsi_source__close(s);
		return -EISDIR;
	}
	s->pipe = !S_ISREG(st.st_mode);
	s->size = s->pipe ? UINT64_MAX : (uint64_t)st.st_size;
	if (!s->pipe)
		posix_fadvise(s->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	return 0;
}

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22   /* Linux 5.14 */
#endif

/*
 * The mapped windows' ranges, for the SIGBUS handler: a slot each, taken
 * and given back with atomics (the handler runs on any thread, at any
 * time).  No free slot: the window is read instead.
 */
#define NR_GUARDS 256
static struct {
	_Atomic uintptr_t lo, hi;
	atomic_bool taken;
} guards[NR_GUARDS];
static atomic_ulong guard_faults;
static long guard_page;
static pthread_once_t guard_once = PTHREAD_ONCE_INIT;
static bool guard_on;

/*
 * A page of a mapped window the file no longer has: a page of zeros put in
 * its place, counted, and the read goes on.  Any other SIGBUS is the
 * default's again (the fault repeats and ends the process, as without us).
 */
static void guard_fault(int sig, siginfo_t *si, void *uc)
{
	uintptr_t a = (uintptr_t)si->si_addr;

	(void)sig;
	(void)uc;
	for (size_t i = 0; i < NR_GUARDS; i++) {
		if (a < atomic_load(&guards[i].lo) || a >= atomic_load(&guards[i].hi))
			continue;
		void *page = (void *)(a & ~(uintptr_t)(guard_page - 1));

		if (mmap(page, (size_t)guard_page, PROT_READ, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) != MAP_FAILED) {
			atomic_fetch_add(&guard_faults, 1);
			return;
		}
		break;
	}
	signal(SIGBUS, SIG_DFL);
}

/* The handler, unless the program has one of its own (then nothing is mapped). */
static void guard_install(void)
{
	struct sigaction old, sa;

	guard_page = sysconf(_SC_PAGESIZE);
	if (guard_page <= 0 || sigaction(SIGBUS, NULL, &old) || (old.sa_flags & SA_SIGINFO) ||
	    old.sa_handler != SIG_DFL)
		return;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = guard_fault;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	guard_on = !sigaction(SIGBUS, &sa, NULL);
}

/* Whether mapped windows are guarded (the handler is installed): asked before mapping one. */
static bool guard_ready(void)
{
	pthread_once(&guard_once, guard_install);
	return guard_on;
}

static int guard_take(uintptr_t lo, uintptr_t hi)
{
	for (int i = 0; i < NR_GUARDS; i++) {
		bool no = false;

		if (atomic_compare_exchange_strong(&guards[i].taken, &no, true)) {
			atomic_store(&guards[i].lo, lo);
			atomic_store(&guards[i].hi, hi);
			return i;
		}
	}
	return -1;
}

static void guard_give_back(int i)
{
	atomic_store(&guards[i].hi, 0);
	atomic_store(&guards[i].lo, 0);
	atomic_store(&guards[i].taken, false);
}

unsigned long dsi_source__faults(void)
{
	return atomic_load(&guard_faults);
}

bool dsi_source__shrank(const struct ds_source *s, uint64_t *was, uint64_t *now)
{
	struct stat st;

	if (s->pipe || s->fd < 0 || fstat(s->fd, &st) || (uint64_t)st.st_size >= s->size)
		return false;
	*was = s->size;
	*now = (uint64_t)st.st_size;
	return true;
}

static size_t map_window_size(const struct ds_source *s)
{
	size_t limit = s->pin_limit ? s->pin_limit : PIN_LIMIT, size = MAP_WINDOW;

	while (size > WINDOW && size > limit / 4)
		size /= 2;
	return size;
}

/*
 * Bytes [@start, @start + @len) of the file mapped, its pages mapped now;
 * NULL if not, and after a failure the source reads by pread from then on.
 */
static struct ds_source_window *window_map(struct ds_source *s, uint64_t start, size_t len)
{
	struct ds_source_window *w;
	void *p;
	int guard;

	if (!s->no_map && !guard_ready())
		s->no_map = true;   /* the program handles SIGBUS itself: every window is read */
	if (s->no_map)
		return NULL;
	p = mmap(NULL, len, PROT_READ, MAP_PRIVATE, s->fd, (off_t)start);
	if (p == MAP_FAILED) {
		s->no_map = true;
		return NULL;
	}
	if (madvise(p, len, MADV_POPULATE_READ) || !(w = calloc(1, sizeof(*w)))) {
		munmap(p, len);
		s->no_map = true;
		return NULL;
	}
	if ((guard = guard_take((uintptr_t)p, (uintptr_t)p + len)) < 0) {   /* this one read instead */
		munmap(p, len);
		free(w);
		return NULL;
	}
	w->guard = guard;
	w->data = p;
	w->off = start;
	w->len = w->cap = len;
	w->mapped = true;
	w->src = s;
	s->live_bytes += len;
	return w;
}

/* A window of @cap bytes: a spare one if it fits, else a new one. */
static struct ds_source_window *window_new(struct ds_source *s, size_t cap)
{
	struct ds_source_window *w = s->spare;

	if (w && cap <= w->cap) {
		s->spare = w->next_spare;
		s->nr_spare--;
	} else {
		w = calloc(1, sizeof(*w));
		if (!w || !(w->data = dsi_malloc_populated(cap))) {
			free(w);
			return NULL;
		}
		w->cap = cap;
		w->src = s;
		s->live_bytes += cap;
	}
	w->pins = 0;
	w->retired = false;
	return w;
}

/* @w is done with: kept for reuse, or freed. */
static void window_put(struct ds_source *s, struct ds_source_window *w)
{
	if (w->mapped) {
		s->live_bytes -= w->cap;
		guard_give_back(w->guard);
		munmap(w->data, w->cap);
		free(w);
		return;
	}
	if (w->cap == WINDOW && s->nr_spare < SPARE_WINDOWS) {
		w->next_spare = s->spare;
		s->spare = w;
		s->nr_spare++;
		return;
	}
	s->live_bytes -= w->cap;
	free(w->data);
	free(w);
}

/* The current window is left: put away now, or at its last unpin. */
static void leave_window(struct ds_source *s)
{
	struct ds_source_window *w = s->win;

	if (w && w->pins)
		w->retired = true;
	else if (w)
		window_put(s, w);
	s->win = NULL;
}

struct ds_source_window *dsi_source__pin(struct ds_source *s)
{
	if (s->pipe || !s->win || *s->pinned >= (s->pin_limit ? s->pin_limit : PIN_LIMIT))
		return NULL;
	if (!s->win->pins++)
		*s->pinned += s->win->cap;
	return s->win;
}

void dsi_source__unpin(struct ds_source_window *w)
{
	if (--w->pins)
		return;
	*w->src->pinned -= w->cap;
	if (w->retired)
		window_put(w->src, w);
}

void dsi_source__close(struct ds_source *s)
{
	leave_window(s);
	while (s->spare) {
		struct ds_source_window *w = s->spare;

		s->spare = w->next_spare;
		free(w->data);
		free(w);
	}
	free(s->buf);
	if (s->owns_fd)
		close(s->fd);
	memset(s, 0, sizeof(*s));
	s->fd = -1;
}

static int file_get(struct ds_source *s, uint64_t off, size_t len, const uint8_t **p)
{
	struct ds_source_window *w = s->win;

	if (off > s->size || len > s->size - off)
		return -ENODATA;
	if (w && off >= w->off && off + len <= w->off + w->len) {
		*p = w->data + (off - w->off);
		return 0;
	}
	/* a new window from @off's page: records keep the file's alignment */
	uint64_t start = off & ~(uint64_t)(dsi_page_size() - 1);
	uint64_t want = off + len - start;
	/* reading on from the window's end, or jumping elsewhere */
	bool on = w && off >= w->off && off <= w->off + w->len;
	uint64_t least = on ? (s->no_map ? WINDOW : map_window_size(s)) : SMALL_WINDOW;

	if (want < least)
		want = least;
	if (want > s->size - start)
		want = s->size - start;
	if (!want)
		want = 1;   /* a 0-byte read at the end: still a buffer to point into */
	if (want > SIZE_MAX / 2)
		return -ENOMEM;
	leave_window(s);
	if ((w = window_map(s, start, (size_t)want))) {
		s->win = w;
		*p = w->data + (off - start);
		return 0;
	}
	w = window_new(s, (size_t)want);
	if (!w)
		return -ENOMEM;
	ssize_t got = dsi_pread_full(s->fd, w->data, (size_t)want, start);

	if (got < 0) {
		window_put(s, w);
		return (int)got;
	}
	w->off = start;
	w->len = (size_t)got;
	s->win = w;
	if (off + len > start + (uint64_t)got)
		return -ENODATA;   /* the file shrank under us */
	*p = w->data + (off - start);
	return 0;
}

/*
 * A full buffer doubled (64 KiB at first): the buffer grows with what has
 * come, never to a length only claimed, so that a hostile length (a
 * pipe's tracing data claims up to 4 GiB) allocates no more than twice
 * what the input brings before it ends.
 */
static int pipe_grow(struct ds_source *s)
{
	size_t cap = s->buf_cap ? 2 * s->buf_cap : 1 << 16;
	uint8_t *nb = cap > s->buf_cap ? realloc(s->buf, cap) : NULL;

	if (!nb)
		return -ENOMEM;
	s->buf = nb;
	s->buf_cap = cap;
	return 0;
}

static int pipe_fill(struct ds_source *s, size_t need)
{
	while (s->buf_len < need) {
		ssize_t n;
		int err;

		if (s->buf_len == s->buf_cap && (err = pipe_grow(s)))
			return err;
		n = read(s->fd, s->buf + s->buf_len, s->buf_cap - s->buf_len);
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

int dsi_source__get(struct ds_source *s, uint64_t off, size_t len, const uint8_t **p)
{
	return s->pipe ? pipe_get(s, off, len, p) : file_get(s, off, len, p);
}
