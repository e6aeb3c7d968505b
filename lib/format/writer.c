// SPDX-License-Identifier: MIT
/*
 * perf.data writer (see dstack/writer.h).  The layouts are perf's on-disk
 * ones, as lib/format/reader.c reads them back:
 *
 *   file:  header | ids of attr 0 | ids of attr 1 | ... | attrs | data |
 *          feature section table (one {offset, size} per set bit) | payloads
 *   pipe:  {magic, 16} | HEADER_ATTR... | HEADER_FEATURE... | HEADER_BUILD_ID... | data
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "dstack/writer.h"
#include "util/error.h"

#define BUF_SIZE (1u << 20)
#define NAME_ALIGN 64           /* perf pads header strings to this */
#define FILE_HEADER_SIZE ((uint64_t)sizeof(struct ds_file_header))
#define MAX_RECORD 65535u

struct wattr {
	struct ds_attr attr;
	uint64_t *ids;
	size_t nr_ids;
	char *name;
};

struct wfeat {
	uint8_t *data;
	size_t len;
	bool set;
	bool dirty;              /* pipe mode: set since the prologue was written */
};

struct wbuild_id {
	int32_t pid;
	uint16_t misc;
	uint8_t size;
	uint8_t bid[20];
	char *filename;
};

struct ds_writer {
	char *path;
	int fd;
	bool pipe, own_fd;
	bool started;            /* header/attrs (file) or prologue (pipe) written */
	struct wattr *attrs;
	size_t nr_attrs;
	uint32_t attr_size;      /* on-disk attr size: the largest given */
	struct wfeat feats[DS_FEAT_BITS];
	struct wbuild_id *bids;
	size_t nr_bids, bids_emitted;
	uint8_t *buf;
	size_t buf_len;
	uint64_t data_offset;    /* file mode: where the data section starts */
	uint64_t data_bytes;     /* accepted, buffered included */
	uint64_t good_bytes;     /* complete records on disk */
	uint64_t pipe_bytes;     /* pipe mode: bytes of the stream on disk */
	int err;
	char errbuf[512];
};

/* The writer's first error again, for ds_errmsg() too (a failed writer stays failed). */
static int failed(const struct ds_writer *w)
{
	return dsi_error_keep(w->err, w->errbuf);
}

int ds_writer__status(const struct ds_writer *w)
{
	return w->err ? failed(w) : 0;
}

__attribute__((format(printf, 3, 4)))
static int fail(struct ds_writer *w, int code, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (w->err)
		return failed(w);
	n = snprintf(w->errbuf, sizeof(w->errbuf), "%s: ", w->path);
	va_start(ap, fmt);
	vsnprintf(w->errbuf + n, sizeof(w->errbuf) - (size_t)n, fmt, ap);
	va_end(ap);
	w->err = code;
	return failed(w);
}
uint64_t ds_writer__data_bytes(const struct ds_writer *w) { return w->data_bytes; }

static size_t align_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

uint32_t ds_attr__min_size(const struct ds_attr *attr)
{
	const uint8_t *p = (const uint8_t *)attr;
	size_t end = sizeof(*attr);

	while (end > DS_ATTR_SIZE_VER0 && !p[end - 1])
		end--;
	end = align_up(end, 8);
	if (end == 88) /* no ABI version is 88 bytes: VER2 is 80, VER3 96 */
		end = 96;
	return (uint32_t)end;
}

/* ---- raw output --------------------------------------------------------- */

/* Write all of @p at @off (or at the current position if @off < 0): bytes written. */
static size_t write_fully(struct ds_writer *w, const void *p, size_t n, int64_t off, int *errp)
{
	size_t done = 0;

	*errp = 0;
	while (done < n) {
		ssize_t r = off < 0 ? write(w->fd, (const char *)p + done, n - done)
				    : pwrite(w->fd, (const char *)p + done, n - done, off + (int64_t)done);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			*errp = -errno;
			break;
		}
		if (r == 0) {
			*errp = -EIO;
			break;
		}
		done += (size_t)r;
	}
	return done;
}

/* Bytes of whole records among the first @n bytes of @p (records back to back). */
static size_t whole_records(const uint8_t *p, size_t len, size_t n)
{
	size_t at = 0;

	while (at + 8 <= len) {
		struct ds_event_header h;

		memcpy(&h, p + at, sizeof(h));
		if (h.size < 8 || at + h.size > n)
			break;
		at += h.size;
	}
	return at;
}

/* Push @n bytes of whole records to the output. */
static int emit(struct ds_writer *w, const void *p, size_t n)
{
	int err;
	size_t done;

	if (w->err)
		return failed(w);
	done = write_fully(w, p, n, -1, &err);
	if (w->pipe)
		w->pipe_bytes += done;
	if (err) {
		w->good_bytes += whole_records(p, n, done);
		return fail(w, err, "write failed after %llu bytes of data: %s",
			    (unsigned long long)w->good_bytes, strerror(-err));
	}
	w->good_bytes += n;
	return 0;
}

static int flush(struct ds_writer *w)
{
	int err = 0;

	if (w->buf_len)
		err = emit(w, w->buf, w->buf_len);
	w->buf_len = 0;
	return err;
}

/* Append one record (or, in pipe mode, any bytes) through the buffer. */
static int put(struct ds_writer *w, const void *p, size_t n)
{
	if (w->err)
		return failed(w);
	w->data_bytes += n;
	if (n > BUF_SIZE - w->buf_len) {
		int err = flush(w);

		if (err)
			return err;
		if (n > BUF_SIZE)
			return emit(w, p, n);
	}
	memcpy(w->buf + w->buf_len, p, n);
	w->buf_len += n;
	return 0;
}

/* ---- open --------------------------------------------------------------- */

struct ds_writer *ds_writer__open(const char *path, bool pipe)
{
	struct ds_writer *w = calloc(1, sizeof(*w));
	struct stat st;
	int e;

	if (!w || !(w->path = strdup(path)) || !(w->buf = malloc(BUF_SIZE)))
		goto nomem;
	if (!strcmp(path, "-")) {
		w->fd = STDOUT_FILENO;
		w->pipe = true;
	} else {
		w->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (w->fd < 0) {
			e = errno;
			dsi_error(-e, "%s: cannot create: %s", path, strerror(e));
			goto out_errno;
		}
		w->own_fd = true;
		w->pipe = pipe;
	}
	if (!fstat(w->fd, &st) && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)))
		w->pipe = true; /* cannot seek back to finalise a header */
	w->attr_size = DS_ATTR_SIZE_VER0;
	return w;
nomem:
	e = ENOMEM;
	dsi_error(-e, "out of memory");
out_errno:
	if (w) {
		if (w->own_fd)
			close(w->fd);
		free(w->buf);
		free(w->path);
		free(w);
	}
	errno = e;
	return NULL;
}

/* ---- attrs and features --------------------------------------------------- */

int ds_writer__add_attr(struct ds_writer *w, const struct ds_attr *attr, uint32_t attr_size,
			const uint64_t *ids, size_t nr_ids, const char *name)
{
	struct wattr *na, *a;

	if (w->err)
		return failed(w);
	if (w->started)
		return fail(w, -EBUSY, "attr added after the first record");
	if (attr_size < DS_ATTR_SIZE_VER0 || attr_size > DS_ATTR_SIZE_MAX || attr_size % 8)
		return fail(w, -EINVAL, "attr size %u is not a perf_event_attr size", attr_size);
	if (nr_ids > (1u << 24))
		return fail(w, -EINVAL, "%zu ids for one attr", nr_ids);
	na = realloc(w->attrs, (w->nr_attrs + 1) * sizeof(*na));
	if (!na)
		return fail(w, -ENOMEM, "out of memory");
	w->attrs = na;
	a = &na[w->nr_attrs];
	memset(a, 0, sizeof(*a));
	memcpy(&a->attr, attr, attr_size);
	if (nr_ids) {
		a->ids = malloc(nr_ids * sizeof(*ids));
		if (!a->ids)
			return fail(w, -ENOMEM, "out of memory");
		memcpy(a->ids, ids, nr_ids * sizeof(*ids));
	}
	a->nr_ids = nr_ids;
	if (name && !(a->name = strdup(name))) {
		free(a->ids);
		return fail(w, -ENOMEM, "out of memory");
	}
	w->nr_attrs++;
	if (attr_size > w->attr_size)
		w->attr_size = attr_size;
	return 0;
}

/* Also after an error: close still writes what it can. */
static int set_feature(struct ds_writer *w, int feat, const void *data, size_t len)
{
	struct wfeat *f;
	uint8_t *copy = malloc(len ? len : 1);

	if (!copy)
		return fail(w, -ENOMEM, "out of memory");
	if (len)
		memcpy(copy, data, len);
	f = &w->feats[feat];
	free(f->data);
	f->data = copy;
	f->len = len;
	f->set = true;
	f->dirty = true;
	return 0;
}

int ds_writer__feature(struct ds_writer *w, int feat, const void *data, size_t len)
{
	if (w->err)
		return failed(w);
	if (feat <= 0 || feat >= DS_FEAT_BITS)
		return fail(w, -EINVAL, "header feature %d does not exist", feat);
	if (len > (64u << 20))
		return fail(w, -E2BIG, "header feature %d of %zu bytes is too large", feat, len);
	return set_feature(w, feat, data, len);
}

/* perf's header string: u32 length (NUL included, padded to 64), bytes, zeros. */
static size_t string_size(const char *s)
{
	return 4 + align_up(strlen(s) + 1, NAME_ALIGN);
}

static uint8_t *put_string(uint8_t *p, const char *s)
{
	size_t n = strlen(s);
	uint32_t len = (uint32_t)align_up(n + 1, NAME_ALIGN);

	memcpy(p, &len, 4);
	memcpy(p + 4, s, n);
	memset(p + 4 + n, 0, len - n);
	return p + 4 + len;
}

int ds_writer__feature_string(struct ds_writer *w, int feat, const char *s)
{
	uint8_t *buf;
	int err;

	if (strlen(s) > (1u << 20))
		return fail(w, -E2BIG, "header feature %d: string too long", feat);
	buf = malloc(string_size(s));
	if (!buf)
		return fail(w, -ENOMEM, "out of memory");
	put_string(buf, s);
	err = ds_writer__feature(w, feat, buf, string_size(s));
	free(buf);
	return err;
}

int ds_writer__feature_cmdline(struct ds_writer *w, int argc, const char *const *argv)
{
	size_t size = 4;
	uint32_t nr = argc > 0 ? (uint32_t)argc : 0;
	uint8_t *buf, *p;
	int err;

	for (uint32_t i = 0; i < nr; i++) {
		if (strlen(argv[i]) > (1u << 20))
			return fail(w, -E2BIG, "command line word too long");
		size += string_size(argv[i]);
	}
	buf = malloc(size);
	if (!buf)
		return fail(w, -ENOMEM, "out of memory");
	memcpy(buf, &nr, 4);
	p = buf + 4;
	for (uint32_t i = 0; i < nr; i++)
		p = put_string(p, argv[i]);
	err = ds_writer__feature(w, DS_FEAT_CMDLINE, buf, size);
	free(buf);
	return err;
}

int ds_writer__feature_nrcpus(struct ds_writer *w, uint32_t avail, uint32_t online)
{
	uint32_t v[2] = { avail, online };

	return ds_writer__feature(w, DS_FEAT_NRCPUS, v, sizeof(v));
}

int ds_writer__feature_u64(struct ds_writer *w, int feat, uint64_t v)
{
	return ds_writer__feature(w, feat, &v, sizeof(v));
}

int ds_writer__feature_sample_time(struct ds_writer *w, uint64_t first, uint64_t last)
{
	uint64_t v[2] = { first, last };

	return ds_writer__feature(w, DS_FEAT_SAMPLE_TIME, v, sizeof(v));
}

/* perf_record_header_build_id: header, pid, data[20], size, 3 reserved, filename */
#define BUILD_ID_FIXED 36
#define MAX_BUILD_ID_NAME 4096

/* Size of an entry's record; @pad8 rounds it to 8 bytes (pipe records). */
static size_t build_id_record_size(const struct wbuild_id *b, bool pad8)
{
	size_t n = BUILD_ID_FIXED + align_up(strlen(b->filename) + 1, NAME_ALIGN);

	return pad8 ? align_up(n, 8) : n;
}

static void fill_build_id_record(uint8_t *p, const struct wbuild_id *b, size_t size)
{
	struct ds_event_header h = {
		.type = DS_REC_HEADER_BUILD_ID,
		.misc = (uint16_t)(b->misc | DS_MISC_BUILD_ID_SIZE),
		.size = (uint16_t)size,
	};

	memset(p, 0, size);
	memcpy(p, &h, sizeof(h));
	memcpy(p + 8, &b->pid, 4);
	memcpy(p + 12, b->bid, b->size);
	p[32] = b->size;
	memcpy(p + BUILD_ID_FIXED, b->filename, strlen(b->filename));
}

static int emit_build_id(struct ds_writer *w, const struct wbuild_id *b)
{
	uint8_t rec[BUILD_ID_FIXED + MAX_BUILD_ID_NAME + NAME_ALIGN + 8];
	size_t size = build_id_record_size(b, true);

	fill_build_id_record(rec, b, size);
	return put(w, rec, size);
}

int ds_writer__add_build_id(struct ds_writer *w, int32_t pid, uint16_t misc,
			    const uint8_t *bid, size_t bid_len, const char *filename)
{
	struct wbuild_id *nb, *b;

	if (w->err)
		return failed(w);
	if (!bid_len || bid_len > 20)
		return fail(w, -EINVAL, "build-id of %zu bytes", bid_len);
	if (strlen(filename) > MAX_BUILD_ID_NAME)
		return fail(w, -EINVAL, "build-id file name too long");
	nb = realloc(w->bids, (w->nr_bids + 1) * sizeof(*nb));
	if (!nb)
		return fail(w, -ENOMEM, "out of memory");
	w->bids = nb;
	b = &nb[w->nr_bids];
	memset(b, 0, sizeof(*b));
	b->pid = pid;
	b->misc = misc & DS_MISC_CPUMODE_MASK;
	b->size = (uint8_t)bid_len;
	memcpy(b->bid, bid, bid_len);
	b->filename = strdup(filename);
	if (!b->filename)
		return fail(w, -ENOMEM, "out of memory");
	w->nr_bids++;
	/* pipe mode: into the stream as they come, once the attrs are out */
	if (w->pipe && w->started) {
		w->bids_emitted = w->nr_bids;
		return emit_build_id(w, b);
	}
	return 0;
}

/* EVENT_DESC: u32 nr, u32 attr size, then per attr: attr, u32 nr_ids, name, ids. */
static uint8_t *build_event_desc(struct ds_writer *w, size_t *lenp)
{
	size_t len = 8;
	uint8_t *buf, *p;
	uint32_t v;

	for (size_t i = 0; i < w->nr_attrs; i++)
		len += w->attr_size + 4 + string_size(w->attrs[i].name ? w->attrs[i].name : "") +
		       w->attrs[i].nr_ids * 8;
	buf = malloc(len);
	if (!buf)
		return NULL;
	v = (uint32_t)w->nr_attrs;
	memcpy(buf, &v, 4);
	memcpy(buf + 4, &w->attr_size, 4);
	p = buf + 8;
	for (size_t i = 0; i < w->nr_attrs; i++) {
		const struct wattr *a = &w->attrs[i];

		memcpy(p, &a->attr, w->attr_size);
		p += w->attr_size;
		v = (uint32_t)a->nr_ids;
		memcpy(p, &v, 4);
		p = put_string(p + 4, a->name ? a->name : "");
		if (a->nr_ids)   /* an attr without ids may have no array: memcpy(NULL, 0) is undefined */
			memcpy(p, a->ids, a->nr_ids * 8);
		p += a->nr_ids * 8;
	}
	*lenp = len;
	return buf;
}

static bool have_names(const struct ds_writer *w)
{
	for (size_t i = 0; i < w->nr_attrs; i++)
		if (w->attrs[i].name)
			return true;
	return false;
}

/* Generated features: EVENT_DESC from the attrs unless set raw. */
static int generate_features(struct ds_writer *w)
{
	uint8_t *p;
	size_t len;
	int err;

	if (w->feats[DS_FEAT_EVENT_DESC].set || !have_names(w))
		return 0;
	p = build_event_desc(w, &len);
	if (!p)
		return fail(w, -ENOMEM, "out of memory");
	err = set_feature(w, DS_FEAT_EVENT_DESC, p, len);
	free(p);
	return err;
}

/* ---- start: what comes before the first record ----------------------------- */

static void finish_attrs(struct ds_writer *w)
{
	for (size_t i = 0; i < w->nr_attrs; i++)
		w->attrs[i].attr.size = w->attr_size;
}

static int emit_pipe_feature(struct ds_writer *w, int feat)
{
	struct wfeat *f = &w->feats[feat];
	size_t size = align_up(16 + f->len, 8);
	uint8_t *rec;
	struct ds_event_header h = { .type = DS_REC_HEADER_FEATURE, .size = (uint16_t)size };
	uint64_t id = (uint64_t)feat;
	int err;

	f->dirty = false;
	if (size > MAX_RECORD - 7) {
		/* one record cannot hold it: leave the feature out rather than fail the stream */
		return 0;
	}
	rec = calloc(1, size);
	if (!rec)
		return fail(w, -ENOMEM, "out of memory");
	memcpy(rec, &h, sizeof(h));
	memcpy(rec + 8, &id, 8);
	if (f->len)
		memcpy(rec + 16, f->data, f->len);
	err = put(w, rec, size);
	free(rec);
	return err;
}

static int start_pipe(struct ds_writer *w)
{
	struct ds_file_header h = { .magic = DS_PERF_MAGIC2, .size = 16 };
	int err = put(w, &h, 16);

	for (size_t i = 0; !err && i < w->nr_attrs; i++) {
		const struct wattr *a = &w->attrs[i];
		size_t size = 8 + w->attr_size + a->nr_ids * 8;
		struct ds_event_header rh = { .type = DS_REC_HEADER_ATTR, .size = (uint16_t)size };
		uint8_t *rec;

		if (size > MAX_RECORD)
			return fail(w, -E2BIG, "attr %zu has too many ids (%zu) for a pipe-mode HEADER_ATTR record",
				    i, a->nr_ids);
		rec = malloc(size);
		if (!rec)
			return fail(w, -ENOMEM, "out of memory");
		memcpy(rec, &rh, 8);
		memcpy(rec + 8, &a->attr, w->attr_size);
		if (a->nr_ids)
			memcpy(rec + 8 + w->attr_size, a->ids, a->nr_ids * 8);
		err = put(w, rec, size);
		free(rec);
	}
	if (!err)
		err = generate_features(w);
	for (int f = 1; !err && f < DS_FEAT_BITS; f++)
		if (w->feats[f].set && f != DS_FEAT_BUILD_ID)
			err = emit_pipe_feature(w, f);
	for (; !err && w->bids_emitted < w->nr_bids; w->bids_emitted++)
		err = emit_build_id(w, &w->bids[w->bids_emitted]);
	return err;
}

static void file_header(const struct ds_writer *w, struct ds_file_header *h)
{
	uint64_t ids_size = 0;

	for (size_t i = 0; i < w->nr_attrs; i++)
		ids_size += w->attrs[i].nr_ids * 8;
	memset(h, 0, sizeof(*h));
	h->magic = DS_PERF_MAGIC2;
	h->size = FILE_HEADER_SIZE;
	h->attr_size = w->attr_size + 16;
	h->attrs.offset = FILE_HEADER_SIZE + ids_size;
	h->attrs.size = w->nr_attrs * h->attr_size;
	h->data.offset = h->attrs.offset + h->attrs.size;
}

/* Header (data size 0), the ids, the attrs; the data follows. */
static int start_file(struct ds_writer *w)
{
	struct ds_file_header h;
	uint64_t off;
	int err = 0;

	file_header(w, &h);
	off = FILE_HEADER_SIZE;
	for (size_t i = 0; !err && i < w->nr_attrs; i++) {
		size_t n = w->attrs[i].nr_ids * 8;

		write_fully(w, w->attrs[i].ids, n, (int64_t)off, &err);
		off += n;
	}
	off = h.attrs.offset;
	for (size_t i = 0; !err && i < w->nr_attrs; i++) {
		uint8_t rec[DS_ATTR_SIZE_MAX + 16];
		struct ds_file_section ids = { 0, w->attrs[i].nr_ids * 8 };

		ids.offset = FILE_HEADER_SIZE;
		for (size_t k = 0; k < i; k++)
			ids.offset += w->attrs[k].nr_ids * 8;
		memcpy(rec, &w->attrs[i].attr, w->attr_size);
		memcpy(rec + w->attr_size, &ids, 16);
		write_fully(w, rec, w->attr_size + 16, (int64_t)off, &err);
		off += w->attr_size + 16;
	}
	if (!err)
		write_fully(w, &h, sizeof(h), 0, &err);
	if (!err && lseek(w->fd, (off_t)h.data.offset, SEEK_SET) < 0)
		err = -errno;
	if (err)
		return fail(w, err, "cannot write the header: %s", strerror(-err));
	w->data_offset = h.data.offset;
	return 0;
}

static int start(struct ds_writer *w)
{
	if (w->started)
		return failed(w);
	w->started = true;
	finish_attrs(w);
	if (w->err)
		return failed(w);
	return w->pipe ? start_pipe(w) : start_file(w);
}

int ds_writer__write(struct ds_writer *w, const void *record, size_t len)
{
	struct ds_event_header h;
	int err;

	if (w->err)
		return failed(w);
	if (len < 8 || len > MAX_RECORD)
		return fail(w, -EINVAL, "record of %zu bytes", len);
	memcpy(&h, record, sizeof(h));
	if (h.size != len)
		return fail(w, -EINVAL, "record (type %u) size %u in its header, %zu given", h.type, h.size, len);
	if (!w->started && (err = start(w)))
		return err;
	return put(w, record, len);
}

/* ---- close -------------------------------------------------------------- */

/* BUILD_ID payload: the raw one, then the entries in perf's file layout. */
static uint8_t *build_id_payload(struct ds_writer *w, size_t *lenp)
{
	const struct wfeat *raw = &w->feats[DS_FEAT_BUILD_ID];
	size_t len = raw->set ? raw->len : 0;
	uint8_t *buf, *p;

	for (size_t i = 0; i < w->nr_bids; i++)
		len += build_id_record_size(&w->bids[i], false);
	buf = malloc(len ? len : 1);
	if (!buf)
		return NULL;
	p = buf;
	if (raw->set && raw->len) {
		memcpy(p, raw->data, raw->len);
		p += raw->len;
	}
	for (size_t i = 0; i < w->nr_bids; i++) {
		size_t n = build_id_record_size(&w->bids[i], false);

		fill_build_id_record(p, &w->bids[i], n);
		p += n;
	}
	*lenp = len;
	return buf;
}

/*
 * Feature table then payloads at @off.  Sets h->adds_features for what
 * was written; on a write error, no features (the header stays readable).
 */
static int write_features(struct ds_writer *w, struct ds_file_header *h, uint64_t off)
{
	struct ds_file_section secs[DS_FEAT_BITS];
	size_t nr = 0, bid_len = 0;
	uint8_t *bid_data = NULL;
	uint64_t at;
	int err = 0;

	if (w->nr_bids && !(bid_data = build_id_payload(w, &bid_len)))
		return -ENOMEM;
	for (int f = 1; f < DS_FEAT_BITS; f++)
		nr += w->feats[f].set || (f == DS_FEAT_BUILD_ID && bid_data);
	at = off + nr * sizeof(*secs);
	nr = 0;
	for (int f = 1; f < DS_FEAT_BITS && !err; f++) {
		const void *data = w->feats[f].data;
		size_t len = w->feats[f].len;

		if (f == DS_FEAT_BUILD_ID && bid_data) {
			data = bid_data;
			len = bid_len;
		} else if (!w->feats[f].set) {
			continue;
		}
		at = align_up(at, 8);
		secs[nr].offset = at;
		secs[nr].size = len;
		nr++;
		if (len)
			write_fully(w, data, len, (int64_t)at, &err);
		at += len;
		h->adds_features[f / 64] |= 1ULL << (f % 64);
	}
	free(bid_data);
	if (!err)
		write_fully(w, secs, nr * sizeof(*secs), (int64_t)off, &err);
	if (err) {
		memset(h->adds_features, 0, sizeof(h->adds_features));
		return err;
	}
	/* cut what a failed data write may have left behind */
	if (ftruncate(w->fd, (off_t)at) < 0 && errno != EINVAL)
		return -errno;
	return 0;
}

static int close_file(struct ds_writer *w)
{
	struct ds_file_header h;
	int err = 0, ferr;

	file_header(w, &h);
	h.data.size = w->good_bytes;
	err = generate_features(w);
	ferr = write_features(w, &h, h.data.offset + h.data.size);
	if (ferr && !err)
		err = fail(w, ferr, "cannot write the header features: %s", strerror(-ferr));
	write_fully(w, &h, sizeof(h), 0, &ferr);
	if (ferr && !err)
		err = fail(w, ferr, "cannot finalise the header: %s", strerror(-ferr));
	return err;
}

static int close_pipe(struct ds_writer *w)
{
	int err = generate_features(w);

	for (int f = 1; !err && f < DS_FEAT_BITS; f++)
		if (w->feats[f].set && w->feats[f].dirty && f != DS_FEAT_BUILD_ID)
			err = emit_pipe_feature(w, f);
	for (; !err && w->bids_emitted < w->nr_bids; w->bids_emitted++)
		err = emit_build_id(w, &w->bids[w->bids_emitted]);
	if (!err)
		err = flush(w);
	return err;
}

int ds_writer__close(struct ds_writer *w)
{
	int err;

	if (!w)
		return 0;
	if (!w->started)
		start(w);
	if (w->pipe) {
		if (!w->err)
			close_pipe(w);
		else
			flush(w);
	} else {
		if (!w->err)
			flush(w);
		close_file(w);
	}
	if (w->own_fd && close(w->fd) < 0)
		fail(w, -errno, "close failed: %s", strerror(errno));
	err = w->err ? failed(w) : 0;
	for (size_t i = 0; i < w->nr_attrs; i++) {
		free(w->attrs[i].ids);
		free(w->attrs[i].name);
	}
	free(w->attrs);
	for (int f = 0; f < DS_FEAT_BITS; f++)
		free(w->feats[f].data);
	for (size_t i = 0; i < w->nr_bids; i++)
		free(w->bids[i].filename);
	free(w->bids);
	free(w->buf);
	free(w->path);
	free(w);
	return err;
}
