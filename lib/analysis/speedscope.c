// SPDX-License-Identifier: MIT
/*
 * speedscope's file format (dstack/export.h): the samples
 * (https://www.speedscope.app/file-format-schema.json): shared frames
 * (name, file = DSO), one "sampled" profile per thread named "comm (tid)",
 * stacks root first, weights = periods in nanoseconds for the clock
 * events (the unit is "none" for other events).  Threads are in
 * (pid, tid) order, frames numbered by first appearance: the output is
 * the same for the same input.
 *
 * The format lists every sample, so every sample is kept to the end, as a
 * record of a few words and its comm (struct srec; the frames and stacks
 * are interned once by the stack model).  Memory stays bounded by
 * opts.memory, not by the recording: past a quarter of it the records are
 * sorted by (pid, tid, recording order) in runs of that size, spilled to
 * an unlinked temporary file in opts.tmpdir, and the
 * runs merged, at most a fan-in at a time (an external sort).  A sort
 * rather than one pass over the spill per group of threads: the number of
 * threads is the input's, so such passes would have no bound, where the
 * merge takes log_fanin(runs) passes whatever the threads.  Small profiles
 * never touch the file.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "dstack/export.h"
#include "dstack/stacks.h"
#include "analysis/analysis_int.h"
#include "analysis/wbuf.h"
#include "util/grow.h"
#include "util/io.h"
#include "util/spill.h"

#define RECS_MEM_MIN ((size_t)256 << 10)     /* the records' memory, whatever the budget */
#define MERGE_READ ((size_t)64 << 10)       /* bytes read at a time from each run merged */
#define FANIN_MAX 256
#define DEFAULT_MEMORY ((size_t)1 << 30)

/* A sample as its profile needs it: what is kept per sample, in memory or spilled. */
struct srec {
	int32_t pid, tid;
	uint32_t stack;         /* the model's stack id */
	uint32_t long_comm;     /* string id + 1 of a comm too long for comm; 0: comm holds it */
	uint64_t period;
	uint64_t seq;           /* recording order: the last sort key */
	char comm[16];          /* NUL-terminated: a comm is not interned (a task per sample would keep one each) */
};

/* A sorted run in the spill file: records [off, off + len). */
struct run {
	uint64_t off, len;
};

/*
 * The samples: in buf while they fit in max records; past that, sorted
 * runs in the file fd.  After store_sort, the records in (pid, tid, seq)
 * order are buf[0 .. nr) (nothing spilled) or the file's [0 .. flen),
 * read through the window buf[0 .. wlen) holding records from wstart.
 */
struct store {
	struct ds_stacks *x;        /* the model (its strings grow by a comm too long for srec) */
	struct srec *buf;
	size_t nr, cap, max;
	uint64_t seq;
	uint32_t clock_evsel;   /* id + 1 of the last event name found to be a clock */
	bool not_clock;         /* a sample's event is not a clock: weights are not ns */
	const char *dir;        /* where the spill file is made */
	int fd, fd2;            /* the spill file (-1: none); the merge's other file */
	uint64_t flen;          /* records in fd */
	struct run *runs;
	size_t nr_runs, cap_runs;
	uint64_t wstart;
	size_t wlen;
	int err;                /* the spill file's failure (in msg), 0 while none */
	char msg[512];
};

struct ds_speedscope {
	struct ds_speedscope_opts o;
	char *title;
	struct store s;
	bool written;
};

static void store_init(struct store *s, struct ds_stacks *x, size_t budget, const char *dir)
{
	size_t mem = budget / 4;

	memset(s, 0, sizeof(*s));
	s->x = x;
	s->max = (mem > RECS_MEM_MIN ? mem : RECS_MEM_MIN) / sizeof(struct srec);
	s->dir = dir && *dir ? dir : "/tmp";
	s->fd = s->fd2 = -1;
}

static void store_exit(struct store *s)
{
	if (s->fd >= 0)
		close(s->fd);
	if (s->fd2 >= 0)
		close(s->fd2);
	free(s->buf);
	free(s->runs);
}

/* Keep the spill file's first failure, as text too (said by ds_errmsg()); returns -1. */
static int spill_failed(struct store *s, const char *what, int err)
{
	if (!s->err) {
		s->err = err ? err : EIO;
		snprintf(s->msg, sizeof(s->msg), "%s the samples' temporary file in %s: %s", what, s->dir,
			 strerror(s->err));
	}
	return -1;
}

/* A new temporary file (util/spill.h), unlinked from the start. */
static int spill_open(struct store *s, int *fd)
{
	*fd = dsi_spill_open(s->dir);
	return *fd < 0 ? spill_failed(s, "creating", -*fd) : 0;
}

static int spill_write(struct store *s, int fd, uint64_t at, const struct srec *r, size_t n)
{
	const char *p = (const char *)r;
	size_t left = n * sizeof(*r);
	off_t off = (off_t)(at * sizeof(*r));

	while (left) {
		ssize_t w = pwrite(fd, p, left, off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return spill_failed(s, "writing", w < 0 ? errno : ENOSPC);
		p += w;
		left -= (size_t)w;
		off += w;
	}
	return 0;
}

/* Records [at, at + n) of @fd, all of them: a short read is the file's failure. */
static int spill_read(struct store *s, int fd, uint64_t at, struct srec *r, size_t n)
{
	ssize_t got = dsi_pread_full(fd, r, n * sizeof(*r), at * sizeof(*r));

	if (got < 0)
		return spill_failed(s, "reading", (int)-got);
	if ((size_t)got < n * sizeof(*r))
		return spill_failed(s, "reading", EIO);
	return 0;
}

static int cmp_rec(const struct srec *x, const struct srec *y)
{
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

static int cmp_rec_q(const void *a, const void *b)
{
	return cmp_rec(a, b);
}

static void sort_buf(struct store *s)
{
	if (s->nr > 1)
		qsort(s->buf, s->nr, sizeof(*s->buf), cmp_rec_q);
}

/* The records in memory, sorted, as one more run at the end of the spill file. */
static int spill_run(struct store *s)
{
	struct run *n = dsi_grow(s->runs, &s->cap_runs, s->nr_runs + 1, sizeof(*n), 16);

	if (!n)
		return -ENOMEM;
	s->runs = n;
	if (s->fd < 0 && spill_open(s, &s->fd))
		return -s->err;
	sort_buf(s);
	if (spill_write(s, s->fd, s->flen, s->buf, s->nr))
		return -s->err;
	s->runs[s->nr_runs++] = (struct run){ s->flen, s->nr };
	s->flen += s->nr;
	s->nr = 0;
	return 0;
}

/* The model's sample callback: the sample kept as a record, the records spilled past max. */
static int keep_sample(void *ctx, const struct ds_stacks_sample *xs, const char *comm)
{
	struct store *s = ctx;

	if (!s->not_clock && xs->event + 1 != s->clock_evsel) {
		if (dsi_is_clock(ds_stacks__str(s->x, xs->event)))
			s->clock_evsel = xs->event + 1;
		else
			s->not_clock = true;
	}
	if (s->nr == s->max) {
		int err = spill_run(s);

		if (err)
			return err;
	}
	if (s->nr == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 1024;
		struct srec *n;

		cap = cap < s->max ? cap : s->max;
		if (!(n = realloc(s->buf, cap * sizeof(*n))))
			return -ENOMEM;
		s->buf = n;
		s->cap = cap;
	}
	struct srec *r = &s->buf[s->nr];
	size_t len = strlen(comm);

	*r = (struct srec){ xs->pid, xs->tid, xs->stack, 0, xs->period, s->seq, { 0 } };
	if (len < sizeof(r->comm))
		memcpy(r->comm, comm, len);
	else if ((r->long_comm = ds_stacks__intern_str(s->x, comm) + 1) == 0)
		return -ENOMEM;   /* (UINT32_MAX + 1) */
	s->nr++;
	s->seq++;
	return 0;
}

/* A run being merged: its records not read yet [off, off + left), the ones read buf[pos .. len). */
struct head {
	struct srec *buf;
	size_t pos, len, cap;
	uint64_t off, left;
};

static int head_fill(struct store *s, struct head *h)
{
	size_t n = h->left < h->cap ? (size_t)h->left : h->cap;

	if (spill_read(s, s->fd, h->off, h->buf, n))
		return -1;
	h->off += n;
	h->left -= n;
	h->pos = 0;
	h->len = n;
	return 0;
}

static bool head_less(const struct head *h, size_t a, size_t b)
{
	return cmp_rec(&h[a].buf[h[a].pos], &h[b].buf[h[b].pos]) < 0;
}

/* Restore the min-heap @heap[0 .. n) of heads below position @i. */
static void heap_down(const struct head *h, size_t *heap, size_t n, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, m = i;

		if (l < n && head_less(h, heap[l], heap[m]))
			m = l;
		if (l + 1 < n && head_less(h, heap[l + 1], heap[m]))
			m = l + 1;
		if (m == i)
			return;
		size_t t = heap[i];

		heap[i] = heap[m];
		heap[m] = t;
		i = m;
	}
}

/*
 * Merge the @k runs @r of fd into one run of @out written from *@at (on
 * return, its end).  buf is cut in k + 1 slices: one per run, one to write.
 */
static int merge_runs(struct store *s, const struct run *r, size_t k, int out, uint64_t *at)
{
	struct head h[FANIN_MAX];
	size_t heap[FANIN_MAX], n = 0, slice = s->max / (k + 1), nw = 0;
	struct srec *w = s->buf + k * slice;

	for (size_t i = 0; i < k; i++) {
		h[i] = (struct head){ s->buf + i * slice, 0, 0, slice, r[i].off, r[i].len };
		if (h[i].left && head_fill(s, &h[i]))
			return -1;
		if (h[i].len)
			heap[n++] = i;
	}
	for (size_t i = n / 2; i-- > 0;)
		heap_down(h, heap, n, i);
	while (n) {
		struct head *t = &h[heap[0]];

		w[nw++] = t->buf[t->pos++];
		if (nw == slice) {
			if (spill_write(s, out, *at, w, nw))
				return -1;
			*at += nw;
			nw = 0;
		}
		if (t->pos == t->len) {
			if (t->left && head_fill(s, t))
				return -1;
			if (t->pos == t->len)
				heap[0] = heap[--n];
		}
		heap_down(h, heap, n, 0);
	}
	if (nw && spill_write(s, out, *at, w, nw))
		return -1;
	*at += nw;
	return 0;
}

/* The records in (pid, tid, seq) order: sorted in memory, or the spill merged into one run. */
static int store_sort(struct store *s)
{
	size_t fanin = s->max * sizeof(struct srec) / MERGE_READ;

	if (s->fd < 0) {
		sort_buf(s);
		return 0;
	}
	if (s->nr && spill_run(s))
		return -1;
	fanin = fanin < 2 ? 2 : fanin > FANIN_MAX ? FANIN_MAX : fanin;
	while (s->nr_runs > 1) {
		size_t nr = 0;
		uint64_t at = 0;
		int t;

		if (s->fd2 < 0 && spill_open(s, &s->fd2))
			return -1;
		for (size_t i = 0; i < s->nr_runs; i += fanin) {
			size_t k = s->nr_runs - i < fanin ? s->nr_runs - i : fanin;
			struct run m = { at, 0 };

			if (merge_runs(s, s->runs + i, k, s->fd2, &at))
				return -1;
			m.len = at - m.off;
			s->runs[nr++] = m;   /* nr <= i: the runs merged are already read */
		}
		s->nr_runs = nr;
		s->flen = at;
		t = s->fd;
		s->fd = s->fd2;
		s->fd2 = t;
		if (ftruncate(s->fd2, 0)) {
			/* the merged-from file's space is not given back: it only costs disk until exit */
		}
	}
	s->wlen = 0;
	return 0;
}

static uint64_t store_len(const struct store *s)
{
	return s->fd < 0 ? s->nr : s->flen;
}

/*
 * Sorted record @i (below store_len), or NULL when the spill file fails
 * (said).  What comes back from the disk is checked like any input: a
 * record naming a stack or a string that does not exist is a read error.
 */
static const struct srec *store_at(struct store *s, uint64_t i)
{
	if (s->fd < 0)
		return &s->buf[i];
	if (i < s->wstart || i - s->wstart >= s->wlen) {
		uint64_t left = s->flen - i;
		size_t n = left < s->max ? (size_t)left : s->max;

		s->wstart = i;
		s->wlen = 0;
		if (spill_read(s, s->fd, i, s->buf, n))
			return NULL;
		for (size_t j = 0; j < n; j++)
			if (s->buf[j].stack >= ds_stacks__nr_stacks(s->x) || s->buf[j].long_comm > ds_stacks__nr_strs(s->x) ||
			    s->buf[j].comm[sizeof(s->buf[j].comm) - 1]) {
				spill_failed(s, "reading", EIO);
				return NULL;
			}
		s->wlen = n;
	}
	return &s->buf[i - s->wstart];
}

/* One thread's profile: the records [from, to), all of one (pid, tid), in recording order. */
static void write_profile(struct dsi_wbuf *o, struct store *s, const struct srec *first, uint64_t from,
			  uint64_t to, uint64_t total, const char *unit)
{
	const struct ds_stacks *x = s->x;
	const struct srec *r;
	char name[300];

	snprintf(name, sizeof(name), "%s (%d)", first->long_comm ? ds_stacks__str(x, first->long_comm - 1) : first->comm,
		 first->tid);
	dsi_wbuf__puts(o, "{\"type\":\"sampled\",\"name\":");
	dsi_wbuf__json(o, name);
	dsi_wbuf__printf(o, ",\"unit\":\"%s\",\"startValue\":0,\"endValue\":", unit);
	dsi_wbuf__dec(o, total);
	dsi_wbuf__puts(o, ",\"samples\":[");
	for (uint64_t i = from; i < to && (r = store_at(s, i)); i++) {
		size_t len;
		const struct ds_stacks_entry *e = ds_stacks__stack(x, r->stack, &len);

		if (i > from)
			dsi_wbuf__putc(o, ',');
		dsi_wbuf__putc(o, '[');
		for (size_t j = len; j-- > 0;) {
			dsi_wbuf__dec(o, e[j].frame);
			if (j)
				dsi_wbuf__putc(o, ',');
		}
		dsi_wbuf__putc(o, ']');
	}
	dsi_wbuf__puts(o, "],\"weights\":[");
	for (uint64_t i = from; i < to && (r = store_at(s, i)); i++) {
		if (i > from)
			dsi_wbuf__putc(o, ',');
		dsi_wbuf__dec(o, r->period);
	}
	dsi_wbuf__puts(o, "]}");
}

/* 0, or a negative errno: the stream's, or the spill file's (s->err, said in s->msg). */
static int write_speedscope(struct store *s, ds_write_fn fn, void *ctx, const char *title)
{
	const struct ds_stacks *x = s->x;
	const char *unit = s->not_clock ? "none" : "nanoseconds";
	uint64_t n = store_len(s), nr = 0;
	const struct srec *r;
	struct dsi_wbuf w, *o = &w;
	int err;

	if (dsi_wbuf__init(o, fn, ctx))
		return -ENOMEM;
	dsi_wbuf__puts(o, "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\"shared\":{\"frames\":[");
	for (size_t i = 0; i < ds_stacks__nr_frames(x); i++) {
		const struct ds_stacks_frame *f = ds_stacks__frame(x, (uint32_t)i);

		if (i)
			dsi_wbuf__putc(o, ',');
		dsi_wbuf__puts(o, "{\"name\":");
		dsi_wbuf__json(o, ds_stacks__str(x, f->name));
		dsi_wbuf__puts(o, ",\"file\":");
		dsi_wbuf__json(o, f->inlined ? "(inlined)" : ds_stacks__str(x, f->dso));
		dsi_wbuf__putc(o, '}');
	}
	dsi_wbuf__puts(o, "]},\"profiles\":[");
	for (uint64_t i = 0, j; i < n && !o->error && (r = store_at(s, i)); i = j) {
		struct srec first = *r;
		uint64_t total = first.period;

		for (j = i + 1; j < n && (r = store_at(s, j)) && r->pid == first.pid && r->tid == first.tid; j++)
			total += r->period;
		if (s->err)
			break;
		if (nr++)
			dsi_wbuf__putc(o, ',');
		write_profile(o, s, &first, i, j, total, unit);
	}
	dsi_wbuf__puts(o, "],\"name\":");
	dsi_wbuf__json(o, title);
	dsi_wbuf__puts(o, ",\"activeProfileIndex\":0,\"exporter\":\"dstack\"}\n");
	err = dsi_wbuf__finish(o);
	return s->err ? -s->err : err;
}

struct ds_speedscope *ds_speedscope__new(const struct ds_speedscope_opts *opts)
{
	struct ds_speedscope *sp = calloc(1, sizeof(*sp));
	struct ds_stacks *model;

	if (!sp) {
		errno = ENOMEM;
		return NULL;
	}
	if (opts)
		memcpy(&sp->o, opts, opts->sz < sizeof(sp->o) ? opts->sz : sizeof(sp->o));
	sp->o.sz = sizeof(sp->o);
	struct ds_stacks_opts mo = {
		.sz = sizeof(mo), .sample_fn = keep_sample, .sample_ctx = &sp->s, .comms_to_fn = true,
	};

	model = ds_stacks__new(&mo);
	store_init(&sp->s, model, sp->o.memory ? sp->o.memory : DEFAULT_MEMORY, sp->o.tmpdir);
	sp->title = strdup(sp->o.title ? sp->o.title : "perf.data");
	if (!model || !sp->title) {
		ds_speedscope__delete(sp);
		errno = ENOMEM;
		return NULL;
	}
	return sp;
}

void ds_speedscope__delete(struct ds_speedscope *sp)
{
	if (!sp)
		return;
	ds_stacks__delete(sp->s.x);
	store_exit(&sp->s);
	free(sp->title);
	free(sp);
}

/* A public call's result, a failure said for ds_errmsg(). */
static int said(const struct ds_speedscope *sp, int err)
{
	return err ? dsi_export_failed(err, -sp->s.err, sp->s.msg) : 0;
}

int ds_speedscope__add(struct ds_speedscope *sp, const struct ds_profile_sample *s)
{
	if (sp->written)
		return said(sp, -EINVAL);
	if (sp->s.err)
		return said(sp, -sp->s.err);
	return said(sp, ds_stacks__add(sp->s.x, s));
}

static int speedscope_write(struct ds_speedscope *sp, ds_write_fn fn, void *ctx)
{
	if (sp->written)
		return -EINVAL;
	sp->written = true;
	/* a spill file that failed: no output */
	if (sp->s.err)
		return -sp->s.err;
	if (store_sort(&sp->s))
		return sp->s.err ? -sp->s.err : -ENOMEM;
	return write_speedscope(&sp->s, fn, ctx, sp->title);
}

int ds_speedscope__write(struct ds_speedscope *sp, ds_write_fn fn, void *ctx)
{
	return said(sp, speedscope_write(sp, fn, ctx));
}
