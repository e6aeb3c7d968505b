// SPDX-License-Identifier: MIT
/*
 * bench/scale: grow a real perf.data recording to any size for benchmarks.
 *
 *   scale IN.data OUT.data COPIES
 *
 * The data section of IN is written COPIES times.  Copy k moves every
 * process and thread to pid/tid + k*OFF (OFF = the largest pid in IN + 1,
 * rounded up to 1000; pid 0 and -1 stay: the idle task and "all"), shifts
 * every timestamp by k*(span of IN), and shifts every deferred-callchain
 * cookie (in CALLCHAIN_DEFERRED records and after PERF_CONTEXT_USER_DEFERRED
 * in samples) by k*(cookie range of IN).  The COMM/FORK/EXIT/MMAP/MMAP2
 * records are copied with their pids moved, so every new thread has its
 * name and maps; the kernel's own records (pid 0/-1) and the synthesized
 * user records (ID_INDEX, THREAD_MAP, ...) are written once, and
 * FINISHED_ROUND is kept in every copy.  Times only grow from one copy to
 * the next, so the rounds stay ordered.  The header, attrs and feature
 * sections are kept (feature offsets moved past the bigger data section).
 *
 * Only file-mode, uncompressed recordings: that is what the benchmark uses.
 * Built against build/libdstack.a by bench/run.sh (record layouts parsed
 * with the library's event parser).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dstack/log.h"
#include "dstack/abi.h"
#include "dstack/event.h"
#include "dstack/reader.h"

struct plan {
	struct ds_reader *r;
	uint64_t tmin, tmax, cmin, cmax;
	uint32_t pid_max;
	uint32_t pid_step;
	uint64_t time_step, cookie_step;
};

static int die(const char *msg, const char *arg)
{
	fprintf(stderr, "scale: %s%s%s\n", msg, arg ? ": " : "", arg ? arg : "");
	exit(1);
}

static unsigned char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		die(strerror(errno), path);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	unsigned char *buf = malloc(n > 0 ? (size_t)n : 1);
	if (!buf || n < (long)sizeof(struct ds_file_header) || fread(buf, 1, (size_t)n, f) != (size_t)n)
		die("cannot read (or too short)", path);
	fclose(f);
	*len = (size_t)n;
	return buf;
}

/* Offsets of the pid/tid and time words in a record; -1 when absent. */
struct where {
	int pid, time;
};

static struct where sample_fields(const struct ds_evsel *e)
{
	uint64_t st = e->attr.sample_type;
	int off = 8;
	struct where w = { -1, -1 };

	off += (st & DS_SAMPLE_IDENTIFIER) ? 8 : 0;
	off += (st & DS_SAMPLE_IP) ? 8 : 0;
	if (st & DS_SAMPLE_TID) {
		w.pid = off;
		off += 8;
	}
	if (st & DS_SAMPLE_TIME)
		w.time = off;
	return w;
}

static struct where trailer_fields(const struct ds_evsel *e, const struct ds_event_header *h)
{
	uint64_t st = e->attr.sample_type;
	struct where w = { -1, -1 };

	if (!(e->attr.flags & (1ULL << DS_ATTR_SAMPLE_ID_ALL)) || h->size < e->sample_id_size + 8)
		return w;
	int off = h->size - e->sample_id_size;
	if (st & DS_SAMPLE_TID) {
		w.pid = off;
		off += 8;
	}
	if (st & DS_SAMPLE_TIME)
		w.time = off;
	return w;
}

static uint32_t get32(const unsigned char *p, int off) { uint32_t v; memcpy(&v, p + off, 4); return v; }
static uint64_t get64(const unsigned char *p, int off) { uint64_t v; memcpy(&v, p + off, 8); return v; }
static void put32(unsigned char *p, int off, uint32_t v) { memcpy(p + off, &v, 4); }
static void put64(unsigned char *p, int off, uint64_t v) { memcpy(p + off, &v, 8); }

static bool real_pid(uint32_t p) { return p != 0 && p != UINT32_MAX; }

static void note_pid(struct plan *pl, uint32_t p)
{
	if (real_pid(p) && p > pl->pid_max)
		pl->pid_max = p;
}

static void note_time(struct plan *pl, uint64_t t)
{
	if (t < pl->tmin)
		pl->tmin = t;
	if (t > pl->tmax)
		pl->tmax = t;
}

static void note_cookie(struct plan *pl, uint64_t c)
{
	if (c < pl->cmin)
		pl->cmin = c;
	if (c > pl->cmax)
		pl->cmax = c;
}

/* Calls @fn on every cookie word of a record (sample or deferred record). */
static void for_cookies(struct plan *pl, unsigned char *rec, uint64_t k,
			void (*fn)(struct plan *, unsigned char *, int, uint64_t))
{
	const struct ds_event_header *h = (const void *)rec;
	const struct ds_evsel *e = ds_reader__evsel_of(pl->r, h);
	const char *why;

	if (!e)
		return;
	if (h->type == DS_REC_CALLCHAIN_DEFERRED) {
		struct ds_deferred_event d;
		if (ds_deferred__parse(e, h, &d, &why) == 0)
			fn(pl, rec, 8, k);
	} else if (h->type == DS_REC_SAMPLE) {
		struct ds_sample s;
		if (ds_sample__parse(e, h, &s, &why) || !s.callchain)
			return;
		for (uint64_t i = 0; i + 1 < s.callchain_nr; i++)
			if (s.callchain[i] == DS_CONTEXT_USER_DEFERRED)
				fn(pl, rec, (int)((const unsigned char *)&s.callchain[i + 1] - rec), k);
	}
}

static void scan_cookie(struct plan *pl, unsigned char *rec, int off, uint64_t k)
{
	note_cookie(pl, get64(rec, off));
}

static void shift_cookie(struct plan *pl, unsigned char *rec, int off, uint64_t k)
{
	put64(rec, off, get64(rec, off) + k * pl->cookie_step);
}

/* pid/tid words in the body of the task records (not the trailer). */
static int body_pids(uint32_t type, int offs[4])
{
	switch (type) {
	case DS_REC_MMAP: case DS_REC_MMAP2: case DS_REC_COMM:
	case DS_REC_NAMESPACES:
		offs[0] = 8; offs[1] = 12;
		return 2;
	case DS_REC_FORK: case DS_REC_EXIT:
		offs[0] = 8; offs[1] = 12; offs[2] = 16; offs[3] = 20;
		return 4;
	case DS_REC_SWITCH_CPU_WIDE:
		offs[0] = 8; offs[1] = 12;
		return 2;
	}
	return 0;
}

static struct where fields_of(struct plan *pl, const unsigned char *rec)
{
	const struct ds_event_header *h = (const void *)rec;
	const struct ds_evsel *e;
	struct where none = { -1, -1 };

	if (h->type >= DS_REC_KERNEL_MAX || !(e = ds_reader__evsel_of(pl->r, h)))
		return none;
	return h->type == DS_REC_SAMPLE ? sample_fields(e) : trailer_fields(e, h);
}

static void scan(struct plan *pl, unsigned char *data, uint64_t size)
{
	for (uint64_t off = 0; off + 8 <= size;) {
		unsigned char *rec = data + off;
		const struct ds_event_header *h = (const void *)rec;
		if (h->size < 8 || off + h->size > size)
			die("damaged record in the data section", NULL);
		if (h->type == DS_REC_COMPRESSED || h->type == DS_REC_COMPRESSED2)
			die("compressed recordings are not supported", NULL);
		struct where w = fields_of(pl, rec);
		int offs[4], n = body_pids(h->type, offs);
		if (w.pid >= 0 && w.pid + 8 <= h->size) {
			note_pid(pl, get32(rec, w.pid));
			note_pid(pl, get32(rec, w.pid + 4));
		}
		if (w.time >= 0 && w.time + 8 <= h->size)
			note_time(pl, get64(rec, w.time));
		for (int i = 0; i < n; i++)
			if (offs[i] + 4 <= h->size)
				note_pid(pl, get32(rec, offs[i]));
		for_cookies(pl, rec, 0, scan_cookie);
		off += h->size;
	}
}

static uint32_t move_pid(const struct plan *pl, uint32_t p, uint64_t k)
{
	return real_pid(p) ? (uint32_t)(p + k * pl->pid_step) : p;
}

/* Whether copy k (k >= 1) carries this record at all. */
static bool keep_in_copy(struct plan *pl, const unsigned char *rec)
{
	const struct ds_event_header *h = (const void *)rec;
	if (h->type == DS_REC_FINISHED_ROUND)
		return true;
	if (h->type >= DS_REC_KERNEL_MAX)
		return false;
	if (h->type == DS_REC_SAMPLE)
		return true;
	int offs[4];
	if (body_pids(h->type, offs))
		return real_pid(get32(rec, offs[0]));
	struct where w = fields_of(pl, rec);
	return w.pid < 0 || real_pid(get32(rec, w.pid));
}

static void write_copy(struct plan *pl, const unsigned char *data, uint64_t size, uint64_t k,
		       FILE *out, uint64_t *written)
{
	unsigned char buf[65536];

	for (uint64_t off = 0; off + 8 <= size;) {
		const struct ds_event_header *h = (const void *)(data + off);
		uint16_t len = h->size;
		if (k == 0 || keep_in_copy(pl, data + off)) {
			memcpy(buf, data + off, len);
			if (k) {
				struct where w = fields_of(pl, buf);
				int offs[4], n = body_pids(h->type, offs);
				if (w.pid >= 0 && w.pid + 8 <= len) {
					put32(buf, w.pid, move_pid(pl, get32(buf, w.pid), k));
					put32(buf, w.pid + 4, move_pid(pl, get32(buf, w.pid + 4), k));
				}
				if (w.time >= 0 && w.time + 8 <= len)
					put64(buf, w.time, get64(buf, w.time) + k * pl->time_step);
				for (int i = 0; i < n; i++)
					if (offs[i] + 4 <= len)
						put32(buf, offs[i], move_pid(pl, get32(buf, offs[i]), k));
				if ((h->type == DS_REC_FORK || h->type == DS_REC_EXIT) && len >= 32)
					put64(buf, 24, get64(buf, 24) + k * pl->time_step);
				for_cookies(pl, buf, k, shift_cookie);
			}
			if (fwrite(buf, 1, len, out) != len)
				die("write failed", strerror(errno));
			*written += len;
		}
		off += len;
	}
}

int main(int argc, char **argv)
{
	if (argc != 4)
		die("usage: scale IN.data OUT.data COPIES", NULL);
	uint64_t copies = strtoull(argv[3], NULL, 0);
	if (!copies)
		die("COPIES must be at least 1", NULL);

	size_t len;
	unsigned char *in = slurp(argv[1], &len);
	struct ds_file_header hdr;
	memcpy(&hdr, in, sizeof(hdr));
	if (memcmp(&hdr.magic, "PERFILE2", 8) || hdr.size != sizeof(hdr))
		die("not a file-mode perf.data (pipe mode is not supported)", argv[1]);
	if (hdr.data.offset > len || hdr.data.size > len - hdr.data.offset)
		die("data section outside the file", argv[1]);

	struct plan pl = { .tmin = UINT64_MAX, .cmin = UINT64_MAX };
	pl.r = ds_reader__open(argv[1]);
	if (!pl.r)
		die(ds_errmsg(), argv[1]);

	unsigned char *data = in + hdr.data.offset;
	scan(&pl, data, hdr.data.size);
	pl.pid_step = (pl.pid_max + 1000) / 1000 * 1000;
	pl.time_step = pl.tmax >= pl.tmin ? pl.tmax - pl.tmin + 1 : 1;
	pl.cookie_step = pl.cmax >= pl.cmin ? pl.cmax - pl.cmin + 1 : 1;
	if ((uint64_t)pl.pid_step * copies > INT32_MAX)
		die("too many copies for the pid space", NULL);

	FILE *out = fopen(argv[2], "wb");
	if (!out)
		die(strerror(errno), argv[2]);
	static char obuf[1 << 20];
	setvbuf(out, obuf, _IOFBF, sizeof(obuf));
	if (fwrite(in, 1, hdr.data.offset, out) != hdr.data.offset)
		die("write failed", argv[2]);
	uint64_t written = 0;
	for (uint64_t k = 0; k < copies; k++)
		write_copy(&pl, data, hdr.data.size, k, out, &written);

	/* Feature section: a table of {offset, size}, one per feature bit, then payloads. */
	uint64_t feat_at = hdr.data.offset + hdr.data.size;
	int64_t delta = (int64_t)written - (int64_t)hdr.data.size;
	size_t nfeat = 0;
	for (int i = 0; i < DS_FEAT_BITS / 64; i++)
		nfeat += (size_t)__builtin_popcountll(hdr.adds_features[i]);
	size_t tail = len - feat_at;
	if (nfeat * 16 > tail)
		die("feature table outside the file", argv[1]);
	unsigned char *ft = in + feat_at;
	for (size_t i = 0; i < nfeat; i++)
		put64(ft, (int)(i * 16), get64(ft, (int)(i * 16)) + (uint64_t)delta);
	if (fwrite(ft, 1, tail, out) != tail)
		die("write failed", argv[2]);
	hdr.data.size = written;
	if (fseek(out, 0, SEEK_SET) || fwrite(&hdr, sizeof(hdr), 1, out) != 1 || fclose(out))
		die("write failed", argv[2]);

	fprintf(stderr, "scale: %s x%llu -> %s: %llu data bytes (pid step %u, time step %llu ns)\n",
		argv[1], (unsigned long long)copies, argv[2], (unsigned long long)written,
		pl.pid_step, (unsigned long long)pl.time_step);
	ds_reader__close(pl.r);
	free(in);
	return 0;
}
