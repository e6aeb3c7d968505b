// SPDX-License-Identifier: MIT
/*
 * Writer unit tests: everything ds_writer writes, in file and pipe mode,
 * read back with ds_reader (attrs, ids, names, features, build-ids,
 * records byte for byte); attr sizes; a file whose writer never closed;
 * errors (bad calls, a full disk).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "dstack/log.h"
#include "dstack/reader.h"
#include "dstack/writer.h"
#include "check.h"

#define SAMPLE_TYPE (DS_SAMPLE_IDENTIFIER | DS_SAMPLE_IP | DS_SAMPLE_TID | DS_SAMPLE_TIME)
#define NR_RECORDS 40000   /* enough to go through the 1 MiB buffer a few times */

static void quiet(enum ds_log_level level, const char *fmt, va_list ap)
{
	(void)level;
	(void)fmt;
	(void)ap;
}

/* Record @i of the test stream: a SAMPLE of event i%2, or a COMM now and then. */
static size_t make_record(uint64_t *r, int i)
{
	struct ds_event_header h;

	if (i % 1000 == 7) {
		h = (struct ds_event_header){ .type = DS_REC_COMM, .size = 40 };
		memcpy(r, &h, 8);
		r[1] = ((uint64_t)(uint32_t)i << 32) | (uint32_t)i;      /* pid, tid */
		memset(&r[2], 0, 16);
		memcpy(&r[2], "worker", 6);
		r[4] = 0;                                                /* padding */
		return 40;
	}
	h = (struct ds_event_header){ .type = DS_REC_SAMPLE, .misc = DS_MISC_USER, .size = 40 };
	memcpy(r, &h, 8);
	r[1] = 100 + (uint64_t)(i % 2);              /* identifier: ids 100 / 101 */
	r[2] = 0x400000 + (uint64_t)i;               /* ip */
	r[3] = ((uint64_t)42 << 32) | 42;            /* pid, tid */
	r[4] = 1000 + (uint64_t)i;                   /* time */
	return 40;
}

static void make_attrs(struct ds_attr *a, struct ds_attr *b)
{
	memset(a, 0, sizeof(*a));
	memset(b, 0, sizeof(*b));
	a->type = 1;
	a->sample_period = 100000;
	a->sample_type = SAMPLE_TYPE;
	a->flags = 1ULL << DS_ATTR_SAMPLE_ID_ALL;
	*b = *a;
	b->config = 9;
	b->sample_max_stack = 127;  /* needs VER5 (112 bytes) */
}

static const uint8_t bid1[20] = { 0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
static const uint8_t bid2[8] = { 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88 };

/* Write the test file; @late: add a build-id and a feature after the first record. */
static int write_file(const char *path, bool pipe, bool late)
{
	struct ds_attr a, b;
	const uint64_t ids_a[] = { 100 }, ids_b[] = { 101 };
	const char *argv[] = { "dstack", "record", "--", "./my prog" };
	uint64_t rec[8], clockid = 1;
	int ret = 0;

	struct ds_writer *w = ds_writer__open(path, pipe);

	CHECK(w != NULL, "open %s: %s", path, ds_errmsg());
	if (!w)
		return -1;
	make_attrs(&a, &b);
	ret |= ds_writer__add_attr(w, &a, ds_attr__min_size(&a), ids_a, 1, "cpu-clock");
	ret |= ds_writer__add_attr(w, &b, ds_attr__min_size(&b), ids_b, 1, "dummy:u");
	ret |= ds_writer__feature_string(w, DS_FEAT_HOSTNAME, "testhost");
	ret |= ds_writer__feature_string(w, DS_FEAT_OSRELEASE, "6.19.0-test");
	ret |= ds_writer__feature_string(w, DS_FEAT_ARCH, "x86_64");
	ret |= ds_writer__feature_nrcpus(w, 8, 4);
	ret |= ds_writer__feature_cmdline(w, 4, argv);
	ret |= ds_writer__feature_u64(w, DS_FEAT_TOTAL_MEM, 123456);
	ret |= ds_writer__add_build_id(w, -1, DS_MISC_KERNEL, bid1, 20, "[kernel.kallsyms]");
	if (!late) {
		ret |= ds_writer__add_build_id(w, -1, DS_MISC_USER, bid2, 8, "/usr/lib/libfoo.so");
		ret |= ds_writer__feature(w, DS_FEAT_CLOCKID, &clockid, 8);
	}
	CHECK(ret == 0, "setting up the writer: %s", ds_errmsg());
	for (int i = 0; i < NR_RECORDS && !ret; i++) {
		size_t n = make_record(rec, i);

		ret = ds_writer__write(w, rec, n);
		if (late && i == 10) {
			ret |= ds_writer__add_build_id(w, -1, DS_MISC_USER, bid2, 8, "/usr/lib/libfoo.so");
			ret |= ds_writer__feature(w, DS_FEAT_CLOCKID, &clockid, 8);
		}
	}
	CHECK(ret == 0, "writing records: %s", ds_errmsg());
	ret |= ds_writer__feature_sample_time(w, 1000, 1000 + NR_RECORDS - 1);
	CHECK(ds_writer__data_bytes(w) >= (uint64_t)NR_RECORDS * 40, "data bytes %llu",
	      (unsigned long long)ds_writer__data_bytes(w));
	ret |= ds_writer__close(w);
	CHECK(ret == 0, "close");
	return ret;
}

static const struct ds_build_id_entry *find_bid(const struct ds_header_info *in, const char *name)
{
	for (size_t i = 0; i < in->nr_build_ids; i++)
		if (!strcmp(in->build_ids[i].filename, name))
			return &in->build_ids[i];
	return NULL;
}

static void check_header(struct ds_reader *r, bool pipe, const char *what)
{
	const struct ds_header_info *in = ds_reader__info(r);
	const struct ds_build_id_entry *k, *u;

	CHECK(in->pipe == pipe, "%s: pipe mode %d", what, in->pipe);
	CHECK(ds_reader__nr_evsels(r) == 2, "%s: %zu evsels", what, ds_reader__nr_evsels(r));
	if (ds_reader__nr_evsels(r) == 2) {
		struct ds_evsel *e0 = ds_reader__evsel(r, 0), *e1 = ds_reader__evsel(r, 1);
		struct ds_attr a, b;

		make_attrs(&a, &b);
		CHECK(e0->attr.size == 112 && e1->attr.size == 112, "%s: attr sizes %u %u (one size per file: the largest)",
		      what, e0->attr.size, e1->attr.size);
		a.size = b.size = 112;
		CHECK(!memcmp(&e0->attr, &a, sizeof(a)) && !memcmp(&e1->attr, &b, sizeof(b)), "%s: attrs differ", what);
		CHECK(e0->nr_ids == 1 && e0->ids[0] == 100 && e1->nr_ids == 1 && e1->ids[0] == 101, "%s: ids", what);
		CHECK(e0->name && !strcmp(e0->name, "cpu-clock") && e1->name && !strcmp(e1->name, "dummy:u"),
		      "%s: names %s %s", what, e0->name, e1->name);
	}
	CHECK(in->hostname && !strcmp(in->hostname, "testhost"), "%s: hostname %s", what, in->hostname);
	CHECK(in->osrelease && !strcmp(in->osrelease, "6.19.0-test"), "%s: osrelease", what);
	CHECK(in->arch && !strcmp(in->arch, "x86_64"), "%s: arch", what);
	CHECK(in->nr_cpus_avail == 8 && in->nr_cpus_online == 4, "%s: nrcpus %u %u", what,
	      in->nr_cpus_avail, in->nr_cpus_online);
	CHECK(in->cmdline && !strcmp(in->cmdline, "dstack record -- ./my prog"), "%s: cmdline '%s'", what, in->cmdline);
	CHECK(in->total_mem == 123456, "%s: total mem", what);
	CHECK(in->features[0] & (1ULL << DS_FEAT_CLOCKID), "%s: raw CLOCKID feature present", what);
	k = find_bid(in, "[kernel.kallsyms]");
	u = find_bid(in, "/usr/lib/libfoo.so");
	CHECK(in->nr_build_ids == 2 && k && u, "%s: %zu build-ids", what, in->nr_build_ids);
	if (k && u) {
		CHECK(k->pid == -1 && (k->misc & DS_MISC_CPUMODE_MASK) == DS_MISC_KERNEL && k->size == 20 &&
		      !memcmp(k->data, bid1, 20), "%s: kernel build-id", what);
		CHECK(u->pid == -1 && (u->misc & DS_MISC_CPUMODE_MASK) == DS_MISC_USER && u->size == 8 &&
		      !memcmp(u->data, bid2, 8), "%s: user build-id (size %u)", what, u->size);
	}
}

/* Every record comes back in order, byte for byte; @upto: only whole records were flushed. */
static void check_records(struct ds_reader *r, const char *what, bool upto)
{
	struct ds_record rec;
	uint64_t want[8];
	int i = 0, ret, bad = 0, wrong_evsel = 0;

	while ((ret = ds_reader__next(r, &rec)) == 1) {
		if (rec.hdr->type >= DS_REC_HEADER_ATTR)
			continue; /* pipe mode: attrs, features, build-ids */
		size_t n = make_record(want, i);

		if (rec.hdr->size != n || memcmp(rec.hdr, want, n))
			bad++;
		if (rec.hdr->type == DS_REC_SAMPLE) {
			struct ds_evsel *e = ds_reader__evsel_of(r, rec.hdr);

			wrong_evsel += !e || e->idx != i % 2;
		}
		i++;
	}
	CHECK(ret == 0, "%s: reader error %s", what, ds_errmsg());
	CHECK(bad == 0, "%s: %d records differ", what, bad);
	CHECK(wrong_evsel == 0, "%s: %d samples mapped to the wrong event", what, wrong_evsel);
	if (upto)
		CHECK(i > 0 && i < NR_RECORDS, "%s: %d of the records flushed so far", what, i);
	else
		CHECK(i == NR_RECORDS, "%s: %d records, want %d", what, i, NR_RECORDS);
}

static void round_trip(const char *dir, bool pipe, bool late)
{
	char path[4096], what[64];

	snprintf(what, sizeof(what), "%s%s", pipe ? "pipe" : "file", late ? " (late build-id)" : "");
	snprintf(path, sizeof(path), "%s/rt-%d-%d.data", dir, pipe, late);
	if (write_file(path, pipe, late))
		return;
	struct ds_reader *r = ds_reader__open(path);

	CHECK(r != NULL, "%s: reading back: %s", what, ds_errmsg());
	if (!r)
		return;
	if (pipe) { /* pipe-mode attrs and features arrive as records */
		check_records(r, what, false);
		check_header(r, true, what);
	} else {
		check_header(r, false, what);
		check_records(r, what, false);
	}
	ds_reader__close(r);
	unlink(path);
}

static void test_min_size(void)
{
	struct ds_attr a;

	memset(&a, 0, sizeof(a));
	CHECK(ds_attr__min_size(&a) == 64, "empty attr: %u", ds_attr__min_size(&a));
	a.type = 1;
	a.flags = ~0ULL;
	CHECK(ds_attr__min_size(&a) == 64, "VER0 fields: %u", ds_attr__min_size(&a));
	a.config2 = 1;
	CHECK(ds_attr__min_size(&a) == 72, "config2: %u", ds_attr__min_size(&a));
	a.branch_sample_type = 1;
	CHECK(ds_attr__min_size(&a) == 80, "branch_sample_type: %u", ds_attr__min_size(&a));
	a.sample_regs_user = 1;
	CHECK(ds_attr__min_size(&a) == 96, "regs_user: %u (no 88-byte ABI)", ds_attr__min_size(&a));
	a.sample_max_stack = 127;
	CHECK(ds_attr__min_size(&a) == 112, "sample_max_stack: %u", ds_attr__min_size(&a));
	a.sig_data = 1;
	CHECK(ds_attr__min_size(&a) == 128, "sig_data: %u", ds_attr__min_size(&a));
	a.config4 = 1;
	CHECK(ds_attr__min_size(&a) == 144, "config4: %u", ds_attr__min_size(&a));
}

/* A writer that never closes (a recorder killed) leaves a file readers take to its end. */
static void test_unfinished(const char *dir)
{
	char path[4096];
	struct ds_attr a, b;
	const uint64_t ids_a[] = { 100 }, ids_b[] = { 101 };
	uint64_t rec[8];
	int ret = 0;

	snprintf(path, sizeof(path), "%s/unfinished.data", dir);
	struct ds_writer *w = ds_writer__open(path, false);

	if (!w) {
		CHECK(0, "open %s", path);
		return;
	}
	make_attrs(&a, &b);
	ret |= ds_writer__add_attr(w, &a, 112, ids_a, 1, "cpu-clock");
	ret |= ds_writer__add_attr(w, &b, 112, ids_b, 1, "dummy:u");
	for (int i = 0; i < NR_RECORDS && !ret; i++)
		ret = ds_writer__write(w, rec, make_record(rec, i));
	CHECK(ret == 0, "unfinished: writing");

	struct ds_reader *r = ds_reader__open(path);

	CHECK(r != NULL, "unfinished: open: %s", ds_errmsg());
	if (r) {
		check_records(r, "unfinished", true);
		ds_reader__close(r);
	}
	CHECK(ds_writer__close(w) == 0, "unfinished: close");
	unlink(path);
}

static void test_errors(const char *dir)
{
	char path[4096];
	struct ds_attr a, b;
	const uint64_t ids[] = { 100 };
	uint64_t rec[8];
	size_t n;
	int ret;

	snprintf(path, sizeof(path), "%s/no/such/dir/x.data", dir);
	CHECK(ds_writer__open(path, false) == NULL && errno == ENOENT && strstr(ds_errmsg(), path),
	      "open in a missing directory: %s", ds_errmsg());

	snprintf(path, sizeof(path), "%s/err.data", dir);
	struct ds_writer *w = ds_writer__open(path, false);

	if (!w) {
		CHECK(0, "open %s", path);
		return;
	}
	make_attrs(&a, &b);
	CHECK(ds_writer__status(w) == 0, "a new writer's status is 0");
	CHECK(ds_writer__add_attr(w, &a, 60, ids, 1, NULL) == -EINVAL, "attr size 60 refused");
	w = (ds_writer__close(w), ds_writer__open(path, false));
	CHECK(ds_writer__feature(w, 0, "x", 1) == -EINVAL, "feature 0 refused");
	w = (ds_writer__close(w), ds_writer__open(path, false));
	ds_writer__add_attr(w, &a, 64, ids, 1, NULL);
	n = make_record(rec, 0);
	CHECK(ds_writer__write(w, rec, n - 8) == -EINVAL, "a length other than header.size refused");
	CHECK(strstr(ds_errmsg(), path) != NULL, "message names the file: %s", ds_errmsg());
	CHECK(ds_writer__write(w, rec, n) == -EINVAL, "a failed writer stays failed");
	ds_writer__open("/nonexistent-dir/x.data", false);   /* another failure in between */
	CHECK(ds_writer__status(w) == -EINVAL && strstr(ds_errmsg(), path) && strstr(ds_errmsg(), "in its header"),
	      "status: the first error, its message said again: %s", ds_errmsg());
	CHECK(ds_writer__close(w) == -EINVAL, "close returns the first error");

	w = ds_writer__open(path, false);
	ds_writer__add_attr(w, &a, 64, ids, 1, NULL);
	ds_writer__write(w, rec, n);
	CHECK(ds_writer__add_attr(w, &b, 64, ids, 1, NULL) == -EBUSY, "attr after the first record refused");
	ds_writer__close(w);
	unlink(path);

	/* a full disk: the error sticks, close reports it */
	if (access("/dev/full", W_OK) == 0) {
		w = ds_writer__open("/dev/full", false);
		CHECK(w != NULL, "open /dev/full");
		if (w) {
			ret = ds_writer__add_attr(w, &a, 64, ids, 1, NULL);
			for (int i = 0; i < NR_RECORDS && !ret; i++)
				ret = ds_writer__write(w, rec, make_record(rec, i));
			CHECK(ret == -ENOSPC, "disk full: %d %s", ret, ds_errmsg());
			CHECK(ds_writer__close(w) == -ENOSPC, "disk full: close");
		}
	} else {
		printf("SKIPPED: /dev/full is not writable: no disk-full test\n");
	}
}

/*
 * CMDLINE through the writer: its words read back as written (perf's
 * padded strings, counted), and a word too long for a header string
 * refused with E2BIG and a message, the writer failed from then on (so
 * that a recording whose header could not be written says so).
 */
static void test_cmdline(const char *dir)
{
	char path[512], *big;
	const char *argv[] = { "dstack", "record", "-g", "--", "sh", "-c", "echo 'a b'" };
	struct ds_attr a, b;
	const uint64_t ids[] = { 100 };
	uint64_t rec[8];
	size_t n;

	snprintf(path, sizeof(path), "%s/cmdline.data", dir);
	struct ds_writer *w = ds_writer__open(path, false);

	CHECK(w != NULL, "open: %s", ds_errmsg());
	if (!w)
		return;
	make_attrs(&a, &b);
	CHECK(ds_writer__add_attr(w, &a, ds_attr__min_size(&a), ids, 1, "cpu-clock") == 0, "attr");
	CHECK(ds_writer__feature_cmdline(w, 7, argv) == 0, "cmdline: %s", ds_errmsg());
	n = make_record(rec, 0);
	CHECK(ds_writer__write(w, rec, n) == 0, "record");
	CHECK(ds_writer__close(w) == 0, "close");
	struct ds_reader *rd = ds_reader__open(path);

	CHECK(rd != NULL, "read back: %s", ds_errmsg());
	if (rd) {
		const char *want = "dstack record -g -- sh -c echo 'a b'";
		const char *got = ds_reader__info(rd)->cmdline;
		uint64_t len = 0;
		const uint8_t *p = ds_reader__feature(rd, DS_FEAT_CMDLINE, &len);
		uint32_t nr = 0, first = 0;

		CHECK(got && !strcmp(got, want), "cmdline read back: '%s'", got ? got : "(none)");
		if (p && len >= 8) {
			memcpy(&nr, p, 4);
			memcpy(&first, p + 4, 4);
		}
		CHECK(nr == 7 && first == 64 && len == 4 + 7 * (4 + 64), "layout: %u words, first of %u bytes, %llu in all",
		      nr, first, (unsigned long long)len);
		ds_reader__close(rd);
	}
	unlink(path);

	/* a word past the 1 MiB a header string may hold */
	w = ds_writer__open(path, false);
	big = malloc((1u << 20) + 2);
	if (!w || !big) {
		CHECK(0, "setting up the E2BIG case");
		free(big);
		if (w)
			ds_writer__close(w);
		return;
	}
	memset(big, 'x', (1u << 20) + 1);
	big[(1u << 20) + 1] = 0;
	const char *bad[] = { "dstack", big };

	CHECK(ds_writer__add_attr(w, &a, ds_attr__min_size(&a), ids, 1, "cpu-clock") == 0, "attr");
	CHECK(ds_writer__feature_cmdline(w, 2, bad) == -E2BIG, "a word of 1 MiB + 1 refused with E2BIG");
	CHECK(strstr(ds_errmsg(), "command line word too long") && strstr(ds_errmsg(), path),
	      "E2BIG's message names the file and why: '%s'", ds_errmsg());
	CHECK(ds_writer__feature_cmdline(w, 1, argv) == -E2BIG, "the writer stays failed");
	CHECK(ds_writer__close(w) == -E2BIG, "close returns E2BIG");
	free(big);
	unlink(path);
}

int main(int argc, char **argv)
{
	char dir[] = "/tmp/dstack-writer-XXXXXX";

	(void)argc;
	(void)argv;
	ds_set_log(quiet);
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	test_min_size();
	round_trip(dir, false, false);
	round_trip(dir, true, false);
	round_trip(dir, false, true);
	round_trip(dir, true, true);
	test_unfinished(dir);
	test_errors(dir);
	test_cmdline(dir);
	rmdir(dir);
	printf("test_writer: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
