// SPDX-License-Identifier: MIT
/*
 * The pprof export (ds_pprof, dstack/export.h) through the public API:
 * the gzip stream inflated and its profile.proto walked by hand: string 0
 * is "", equal samples are one with their count and period summed, the
 * sample types, one Location per address with its inlined frames as
 * Lines, a Function per frame key; one profile per event; the same
 * samples (counts and periods per stack) when they spill to disk; a
 * failing stream's errno.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "dstack/export.h"
#include "dstack/log.h"
#include "stack_samples.h"
#include "mem_stream.h"
#include "check.h"

static char clock_ev[] = "cpu-clock", cycles[] = "cycles";
static const int machine;

/* The gzip stream inflated into *@out; its length, 0 on a bad stream. */
static size_t inflate_all(const struct mem *m, unsigned char **out)
{
	z_stream z = { 0 };
	size_t cap = 1 << 20;

	*out = malloc(cap);
	if (inflateInit2(&z, 15 + 16) != Z_OK)
		return 0;
	z.next_in = (Bytef *)m->buf;
	z.avail_in = (uInt)m->len;
	z.next_out = *out;
	z.avail_out = (uInt)cap;
	int r = inflate(&z, Z_FINISH);
	size_t n = r == Z_STREAM_END ? cap - z.avail_out : 0;

	inflateEnd(&z);
	return n;
}

static uint64_t varint(const unsigned char **p, const unsigned char *end)
{
	uint64_t v = 0;

	for (unsigned s = 0; *p < end && s < 64; s += 7) {
		unsigned char b = *(*p)++;

		v |= (uint64_t)(b & 0x7f) << s;
		if (!(b & 0x80))
			break;
	}
	return v;
}

/* What the test reads of a profile. */
struct prof {
	size_t fields[16];          /* top-level fields seen, by number */
	char strings[64][64];
	size_t nr_strings;
	uint64_t values[16][4];     /* per sample: its first values */
	size_t nr_values[16];
	size_t nr_samples, lines;   /* Lines of all Locations */
	uint64_t sum[4];            /* of every sample's values */
};

/* Walk the message [p, end): top-level when @top (string table, samples, locations). */
static void walk(struct prof *pr, const unsigned char *p, const unsigned char *end, int top)
{
	while (p < end) {
		uint64_t key = varint(&p, end), f = key >> 3, len;

		if ((key & 7) == 0) {
			varint(&p, end);
			continue;
		}
		len = varint(&p, end);
		if ((key & 7) != 2 || len > (uint64_t)(end - p))
			return;
		if (top == 1) {
			if (f < 16)
				pr->fields[f]++;
			if (f == 6 && pr->nr_strings < 64)
				snprintf(pr->strings[pr->nr_strings++], 64, "%.*s", (int)len, p);
			if (f == 2)
				walk(pr, p, p + len, 2);
			if (f == 4)
				walk(pr, p, p + len, 4);
		} else if (top == 2 && f == 2) {   /* Sample.value, packed */
			const unsigned char *q = p;
			size_t s = pr->nr_samples < 16 ? pr->nr_samples : 15, k = 0;

			while (q < p + len) {
				uint64_t v = varint(&q, p + len);

				if (k < 4) {
					pr->values[s][k] = v;
					pr->sum[k] += v;
				}
				k++;
			}
			pr->nr_values[s] = k;
			pr->nr_samples++;
		} else if (top == 4 && f == 4) {   /* Location.line */
			pr->lines++;
		}
		p += len;
	}
}

static int read_profile(const struct mem *m, struct prof *pr)
{
	unsigned char *raw;
	size_t n = inflate_all(m, &raw);

	memset(pr, 0, sizeof(*pr));
	walk(pr, raw, raw + n, 1);
	free(raw);
	return n ? 0 : -1;
}

static struct ds_pprof *make(size_t memory, const char *tmpdir, int copies, char *ev2)
{
	struct ds_pprof_opts o = { .sz = sizeof(o), .memory = memory, .tmpdir = tmpdir };
	struct ds_pprof *pp = ds_pprof__new(&o);
	struct test_sample t;
	struct ds_cc_frame a[] = { ts_user(0x10, "inl", "/bin/x"), ts_user(0x10, "f", "/bin/x"), ts_user(0x20, "main", "/bin/x") };
	struct ds_cc_frame b[] = { ts_kernel(0xffff1, "schedule"), ts_user(0x20, "main", "/bin/x") };

	a[0].inlined = true;
	for (int i = 0; i < copies; i++) {
		char comm[32];

		snprintf(comm, sizeof(comm), "c%d", i % 3000);
		ds_pprof__add(pp, ts_make(&t, &machine, comm, 1, 10, 5, clock_ev, 1, a, 3));
		ds_pprof__add(pp, ts_make(&t, &machine, comm, 1, 10, 6, clock_ev, 1, a, 3));
		ds_pprof__add(pp, ts_make(&t, &machine, "k", 2, 4, 7, ev2, 2, b, 2));
	}
	return pp;
}

static void test_profile(void)
{
	struct ds_pprof_write_opts wo_any = { .sz = sizeof(wo_any) };
	struct ds_pprof *pp = make(0, NULL, 1, clock_ev);
	struct mem m = { 0 };
	struct prof pr;

	CHECK(ds_pprof__nr_events(pp) == 1 && !strcmp(ds_pprof__event(pp, 0), "cpu-clock"), "one event");
	CHECK(!ds_pprof__write(pp, NULL, mem_write, &m) && !read_profile(&m, &pr), "write, inflate");
	CHECK(pr.nr_strings && !pr.strings[0][0], "string 0 is \"\"");
	CHECK(pr.nr_samples == 2 && pr.values[0][0] == 2 && pr.values[0][1] == 20 && pr.values[1][0] == 1 &&
	      pr.values[1][1] == 4, "equal samples are one: %zu samples", pr.nr_samples);
	CHECK(pr.fields[1] == 2 && pr.fields[4] == 3 && pr.fields[5] == 4 && pr.lines == 4,
	      "2 sample types, 3 locations (the inlined frame a Line of f's), 4 functions: %zu %zu %zu %zu",
	      pr.fields[1], pr.fields[4], pr.fields[5], pr.lines);
	CHECK(ds_pprof__write(pp, NULL, mem_write, &m) == -EINVAL, "every event once");
	wo_any.event = 0;
	CHECK(ds_pprof__write(pp, &wo_any, mem_write, &m) == -EINVAL, "every event, or each event");
	ds_pprof__delete(pp);
	free(m.buf);

	pp = make(0, NULL, 1, cycles);
	m = (struct mem){ 0 };
	CHECK(ds_pprof__nr_events(pp) == 2, "two events");
	CHECK(!ds_pprof__write(pp, NULL, mem_write, &m) && !read_profile(&m, &pr) && pr.fields[1] == 4 &&
	      pr.nr_values[0] == 4, "a pair of sample types per event");
	free(m.buf);
	ds_pprof__delete(pp);
	struct ds_pprof_write_opts wo = { .sz = sizeof(wo), .event = 1 };

	pp = make(0, NULL, 1, cycles);
	m = (struct mem){ 0 };
	CHECK(!ds_pprof__write(pp, &wo, mem_write, &m) && !read_profile(&m, &pr) && pr.nr_samples == 1 &&
	      pr.fields[1] == 2 && pr.values[0][1] == 4, "event 1 alone");
	CHECK(ds_pprof__write(pp, &wo, mem_write, &m) == -EINVAL, "each event once");
	ds_pprof__delete(pp);
	free(m.buf);

	pp = make(0, NULL, 1, clock_ev);
	m = (struct mem){ .fail_errno = ENOSPC };
	CHECK(ds_pprof__write(pp, NULL, mem_write, &m) == -ENOSPC, "a failing stream's errno");
	ds_pprof__delete(pp);
}

static void test_spill(void)
{
	struct ds_pprof *big = make(0, NULL, 9000, clock_ev), *small = make(1, getenv("TMPDIR"), 9000, clock_ev);
	struct mem a = { 0 }, b = { 0 };
	struct prof pa, pb;

	CHECK(!ds_pprof__write(big, NULL, mem_write, &a) && !read_profile(&a, &pa), "in memory");
	CHECK(!ds_pprof__write(small, NULL, mem_write, &b) && !read_profile(&b, &pb), "spilled");
	CHECK(pa.nr_samples == 3001 && pb.nr_samples == 3001 && pa.sum[0] == pb.sum[0] && pa.sum[1] == pb.sum[1] &&
	      pa.sum[0] == 27000, "the same samples: %zu %zu, %llu %llu", pa.nr_samples, pb.nr_samples,
	      (unsigned long long)pa.sum[0], (unsigned long long)pb.sum[0]);
	ds_pprof__delete(big);
	ds_pprof__delete(small);
	free(a.buf);
	free(b.buf);

	small = make(1, "/nonexistent-dstack-dir", 9000, clock_ev);
	a = (struct mem){ 0 };
	CHECK(ds_pprof__write(small, NULL, mem_write, &a) < 0 && strstr(ds_errmsg(), "/nonexistent-dstack-dir") && !a.len,
	      "spill failure said (%s), nothing written", ds_errmsg());
	ds_pprof__delete(small);
	free(a.buf);
}

int main(void)
{
	test_profile();
	test_spill();
	printf("pprof: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
