// SPDX-License-Identifier: MIT
/*
 * Spill files and the tally (util/spill.h).  A record, in memory and on
 * disk, is a 20-byte head (u64 count, u64 weight, u32 length) and the text's bytes;
 * a run is records in byte order of their texts, each text once.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "util/grow.h"
#include "util/io.h"
#include "util/spill.h"

#define HEAD 20u
#define MEM_MIN ((size_t)64 << 10)
#define CHUNK ((size_t)64 << 10)    /* bytes read or written at a time per run */
#define FANIN 64

int dsi_spill_open(const char *dir)
{
	char path[4096];
	int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);

	if (fd >= 0)
		return fd;
	if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
		return -errno;
	if ((size_t)snprintf(path, sizeof(path), "%s/dstack-spill-XXXXXX", dir) >= sizeof(path))
		return -ENAMETOOLONG;
	if ((fd = mkostemp(path, O_CLOEXEC)) < 0)
		return -errno;
	unlink(path);
	return fd;
}

struct run {
	uint64_t off, len;     /* bytes [off, off + len) of the file */
};

/* Records written at the end of a file, through a buffer. */
struct writer {
	int fd;
	uint64_t at;           /* where the buffer's bytes go */
	char buf[CHUNK];
	size_t len;
};

/* A run being read: its bytes not read yet [off, off + left), the ones read buf[pos .. len). */
struct reader {
	int fd;
	uint64_t off, left;
	char *buf;
	size_t pos, len, cap;
	/* the current record (in buf) */
	const char *text;
	uint32_t tlen;
	uint64_t count, weight;
};

struct dsi_tally {
	size_t max;            /* bytes of records and index held before spilling */
	char *buf;             /* records */
	size_t used, cap;
	uint64_t *idx;         /* offsets of the records in buf */
	size_t nr, cap_idx;
	const char *dir;
	int fd, fd2;           /* the spill file (-1: none); the merge passes' other file */
	uint64_t flen, flen2;
	struct run *runs;
	size_t nr_runs, cap_runs;
	size_t spilled;        /* runs written from memory */
	bool reading;
	size_t pos;            /* reading memory: the next index */
	struct reader heads[FANIN];
	size_t heap[FANIN], nr_heads, nr_heap;
	char *cur;             /* the text returned last (copied out of the readers) */
	size_t cur_cap;
	struct writer *w;
	int err;
	char msg[512];
};

/* Note the spill file's failure (@what: "creating", "writing", "reading"); returns -err. */
static int failed(struct dsi_tally *t, const char *what, int err)
{
	if (!t->err) {
		t->err = err ? err : EIO;
		snprintf(t->msg, sizeof(t->msg), "%s a temporary file in %s: %s", what, t->dir, strerror(t->err));
	}
	return -t->err;
}

struct dsi_tally *dsi_tally__new_in(size_t mem, const char *dir)
{
	struct dsi_tally *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->max = mem > MEM_MIN ? mem : MEM_MIN;
	t->dir = dir && *dir ? dir : "/tmp";
	t->fd = t->fd2 = -1;
	return t;
}

void dsi_tally__delete(struct dsi_tally *t)
{
	if (!t)
		return;
	if (t->fd >= 0)
		close(t->fd);
	if (t->fd2 >= 0)
		close(t->fd2);
	for (size_t i = 0; i < FANIN; i++)
		free(t->heads[i].buf);
	free(t->buf);
	free(t->idx);
	free(t->runs);
	free(t->cur);
	free(t->w);
	free(t);
}

size_t dsi_tally__runs(const struct dsi_tally *t)
{
	return t->spilled;
}

const char *dsi_tally__error(const struct dsi_tally *t)
{
	return t->err && t->msg[0] ? t->msg : NULL;
}

static uint64_t rec_count(const char *r)
{
	uint64_t c;

	memcpy(&c, r, 8);
	return c;
}

static uint64_t rec_weight(const char *r)
{
	uint64_t w;

	memcpy(&w, r + 8, 8);
	return w;
}

static uint32_t rec_len(const char *r)
{
	uint32_t l;

	memcpy(&l, r + 16, 4);
	return l;
}

static void rec_head(char *r, uint64_t count, uint64_t weight, uint32_t len)
{
	memcpy(r, &count, 8);
	memcpy(r + 8, &weight, 8);
	memcpy(r + 16, &len, 4);
}

/* Byte order of two texts (strcmp's: a prefix first). */
static int text_cmp(const char *a, size_t la, const char *b, size_t lb)
{
	int c = memcmp(a, b, la < lb ? la : lb);

	return c ? c : (la > lb) - (la < lb);
}

static int idx_cmp(const void *pa, const void *pb, void *ctx)
{
	const char *a = (const char *)ctx + *(const uint64_t *)pa, *b = (const char *)ctx + *(const uint64_t *)pb;

	return text_cmp(a + HEAD, rec_len(a), b + HEAD, rec_len(b));
}

static int writer_flush(struct dsi_tally *t, struct writer *w)
{
	for (size_t done = 0; done < w->len;) {
		ssize_t n = pwrite(w->fd, w->buf + done, w->len - done, (off_t)w->at);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return failed(t, "writing", n < 0 ? errno : ENOSPC);
		done += (size_t)n;
		w->at += (uint64_t)n;
	}
	w->len = 0;
	return 0;
}

static int writer_put(struct dsi_tally *t, struct writer *w, const void *p, size_t n)
{
	const char *s = p;

	while (n) {
		size_t room = sizeof(w->buf) - w->len, k = n < room ? n : room;

		memcpy(w->buf + w->len, s, k);
		w->len += k;
		s += k;
		n -= k;
		if (w->len == sizeof(w->buf) && writer_flush(t, w))
			return -t->err;
	}
	return 0;
}

static int writer_record(struct dsi_tally *t, struct writer *w, const char *text, uint32_t len, uint64_t count,
			 uint64_t weight)
{
	char head[HEAD];

	rec_head(head, count, weight, len);
	return writer_put(t, w, head, HEAD) ? -t->err : writer_put(t, w, text, len);
}

static int new_run(struct dsi_tally *t)
{
	struct run *n = dsi_grow(t->runs, &t->cap_runs, t->nr_runs + 1, sizeof(*n), 16);

	if (!n)
		return -ENOMEM;
	t->runs = n;
	if (!t->w && !(t->w = malloc(sizeof(*t->w))))
		return -ENOMEM;
	if (t->fd < 0) {
		int fd = dsi_spill_open(t->dir);

		if (fd < 0)
			return failed(t, "creating", -fd);
		t->fd = fd;
	}
	return 0;
}

static void sort_memory(struct dsi_tally *t)
{
	if (t->nr > 1)
		qsort_r(t->idx, t->nr, sizeof(*t->idx), idx_cmp, t->buf);
}

/* The records in memory, sorted and summed, as one more run at the end of the spill file. */
static int spill_memory(struct dsi_tally *t)
{
	int err = new_run(t);
	struct writer *w = t->w;

	if (err)
		return err;
	sort_memory(t);
	*w = (struct writer){ .fd = t->fd, .at = t->flen };
	for (size_t i = 0; i < t->nr;) {
		const char *r = t->buf + t->idx[i];
		uint64_t count = rec_count(r), weight = rec_weight(r);
		uint32_t len = rec_len(r);

		while (++i < t->nr && !idx_cmp(&t->idx[i - 1], &t->idx[i], t->buf)) {
			count += rec_count(t->buf + t->idx[i]);
			weight += rec_weight(t->buf + t->idx[i]);
		}
		if (writer_record(t, w, r + HEAD, len, count, weight))
			return -t->err;
	}
	if (writer_flush(t, w))
		return -t->err;
	t->runs[t->nr_runs++] = (struct run){ t->flen, w->at - t->flen };
	t->flen = w->at;
	t->nr = t->used = 0;
	t->spilled++;
	return 0;
}

int dsi_tally__add(struct dsi_tally *t, const char *text, size_t len, uint64_t count, uint64_t weight)
{
	size_t need = HEAD + len;

	if (t->err)
		return -t->err;
	if (t->reading)
		return -EINVAL;
	if (len > UINT32_MAX - HEAD)
		return -EOVERFLOW;
	if (t->nr && t->used + need + (t->nr + 1) * sizeof(*t->idx) > t->max) {
		int err = spill_memory(t);

		if (err)
			return err;
	}
	char *b = dsi_grow(t->buf, &t->cap, t->used + need, 1, 4096);
	uint64_t *ix = b ? dsi_grow(t->idx, &t->cap_idx, t->nr + 1, sizeof(*ix), 256) : NULL;

	if (b)
		t->buf = b;
	if (!ix)
		return -ENOMEM;
	t->idx = ix;
	rec_head(b + t->used, count, weight, (uint32_t)len);
	memcpy(b + t->used + HEAD, text, len);
	t->idx[t->nr++] = t->used;
	t->used += need;
	return 0;
}

/* Read the reader's next record: 1, 0 at the run's end, -errno. */
static int reader_next(struct dsi_tally *t, struct reader *r)
{
	for (;;) {
		size_t have = r->len - r->pos;

		if (have >= HEAD && have - HEAD >= rec_len(r->buf + r->pos)) {
			const char *rec = r->buf + r->pos;

			r->count = rec_count(rec);
			r->weight = rec_weight(rec);
			r->tlen = rec_len(rec);
			r->text = rec + HEAD;
			r->pos += HEAD + r->tlen;
			return 1;
		}
		if (!r->left)
			return have ? failed(t, "reading", EIO) : 0;
		/* the rest of the record: keep what is read, make room for it whole */
		size_t want = have >= HEAD ? HEAD + rec_len(r->buf + r->pos) : HEAD;

		if (have)   /* (buf is NULL before the first read) */
			memmove(r->buf, r->buf + r->pos, have);
		r->pos = 0;
		r->len = have;
		want = want > CHUNK ? want : CHUNK;
		if (want > r->cap) {
			char *n = realloc(r->buf, want);

			if (!n)
				return -ENOMEM;
			r->buf = n;
			r->cap = want;
		}
		size_t n = r->cap - r->len < r->left ? r->cap - r->len : (size_t)r->left;
		ssize_t got = dsi_pread_full(r->fd, r->buf + r->len, n, r->off);

		if (got < 0)
			return failed(t, "reading", (int)-got);
		if ((size_t)got < n)
			return failed(t, "reading", EIO);
		r->off += n;
		r->left -= n;
		r->len += n;
	}
}

static bool head_less(const struct dsi_tally *t, size_t a, size_t b)
{
	const struct reader *x = &t->heads[a], *y = &t->heads[b];

	return text_cmp(x->text, x->tlen, y->text, y->tlen) < 0;
}

static void heap_down(struct dsi_tally *t, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, m = i;

		if (l < t->nr_heap && head_less(t, t->heap[l], t->heap[m]))
			m = l;
		if (l + 1 < t->nr_heap && head_less(t, t->heap[l + 1], t->heap[m]))
			m = l + 1;
		if (m == i)
			return;
		size_t s = t->heap[i];

		t->heap[i] = t->heap[m];
		t->heap[m] = s;
		i = m;
	}
}

/* Start merging the @k runs @r of @fd. */
static int merge_start(struct dsi_tally *t, int fd, const struct run *r, size_t k)
{
	t->nr_heads = k;
	t->nr_heap = 0;
	for (size_t i = 0; i < k; i++) {
		struct reader *h = &t->heads[i];
		int got;

		h->fd = fd;
		h->off = r[i].off;
		h->left = r[i].len;
		h->pos = h->len = 0;
		if ((got = reader_next(t, h)) < 0)
			return got;
		if (got)
			t->heap[t->nr_heap++] = i;
	}
	for (size_t i = t->nr_heap / 2; i-- > 0;)
		heap_down(t, i);
	return 0;
}

/* The merge's next distinct text (in t->cur) and summed count and weight: 1, 0 at the end, -errno. */
static int merge_next(struct dsi_tally *t, size_t *len, uint64_t *count, uint64_t *weight)
{
	if (!t->nr_heap)
		return 0;
	struct reader *h = &t->heads[t->heap[0]];
	char *c = dsi_grow(t->cur, &t->cur_cap, h->tlen + 1, 1, 256);

	if (!c)
		return -ENOMEM;
	t->cur = c;
	memcpy(c, h->text, h->tlen);
	*len = h->tlen;
	*count = *weight = 0;
	while (t->nr_heap) {
		h = &t->heads[t->heap[0]];
		if (text_cmp(h->text, h->tlen, c, *len))
			break;
		*count += h->count;
		*weight += h->weight;
		int got = reader_next(t, h);

		if (got < 0)
			return got;
		if (!got)
			t->heap[0] = t->heap[--t->nr_heap];
		heap_down(t, 0);
	}
	return 1;
}

/* Merge the runs, a fan-in at a time, into fd2 and swap files, until at most FANIN are left. */
static int merge_passes(struct dsi_tally *t)
{
	while (t->nr_runs > FANIN) {
		size_t out = 0;
		struct writer *w = t->w;

		if (t->fd2 < 0) {
			int fd = dsi_spill_open(t->dir);

			if (fd < 0)
				return failed(t, "creating", -fd);
			t->fd2 = fd;
		}
		if (ftruncate(t->fd2, 0))
			return failed(t, "writing", errno);
		*w = (struct writer){ .fd = t->fd2, .at = 0 };
		for (size_t i = 0; i < t->nr_runs; i += FANIN) {
			size_t k = t->nr_runs - i < FANIN ? t->nr_runs - i : FANIN, len;
			uint64_t start = w->at + w->len, count, weight;
			int got, err = merge_start(t, t->fd, t->runs + i, k);

			if (err)
				return err;
			while ((got = merge_next(t, &len, &count, &weight)) > 0)
				if (writer_record(t, w, t->cur, (uint32_t)len, count, weight))
					return -t->err;
			if (got < 0)
				return got;
			t->runs[out++] = (struct run){ start, w->at + w->len - start };
		}
		if (writer_flush(t, w))
			return -t->err;
		t->nr_runs = out;
		int fd = t->fd;

		t->fd = t->fd2;
		t->fd2 = fd;
		t->flen = w->at;
	}
	return 0;
}

/* End adding: sort memory, or spill it and set up the last merge. */
static int start_reading(struct dsi_tally *t)
{
	int err;

	t->reading = true;
	t->pos = 0;
	if (!t->nr_runs) {
		sort_memory(t);
		return 0;
	}
	if ((t->nr && (err = spill_memory(t))) || (err = merge_passes(t)))
		return err;
	free(t->buf);
	free(t->idx);
	t->buf = NULL;
	t->idx = NULL;
	t->cap = t->cap_idx = 0;
	return merge_start(t, t->fd, t->runs, t->nr_runs);
}

int dsi_tally__next(struct dsi_tally *t, const char **text, size_t *len, uint64_t *count, uint64_t *weight)
{
	uint64_t unused;
	int err;

	weight = weight ? weight : &unused;
	if (t->err)
		return -t->err;
	if (!t->reading && (err = start_reading(t)))
		return err;
	if (t->nr_runs) {
		err = merge_next(t, len, count, weight);
		*text = t->cur;
		return err;
	}
	if (t->pos >= t->nr)
		return 0;
	const char *r = t->buf + t->idx[t->pos];

	*text = r + HEAD;
	*len = rec_len(r);
	*count = rec_count(r);
	*weight = rec_weight(r);
	while (++t->pos < t->nr && !idx_cmp(&t->idx[t->pos - 1], &t->idx[t->pos], t->buf)) {
		*count += rec_count(t->buf + t->idx[t->pos]);
		*weight += rec_weight(t->buf + t->idx[t->pos]);
	}
	return 1;
}
