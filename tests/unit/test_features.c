// SPDX-License-Identifier: MIT
/*
 * Header features decoded through the public API (dstack/features.h):
 * files written with ds_writer carrying raw feature payloads in perf's
 * layout (groups, PMU mappings and capabilities, BPF programs named from
 * their BTF, clock data, ...), read back record by record; then damaged
 * sections (counts and lengths past their section's end), whose records
 * before the damage are kept and whose error names the exact file offset.
 * With a directory argument the files are left there (to print them with
 * two builds of `dstack script --header-only` and compare).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "dstack/features.h"
#include "dstack/log.h"
#include "dstack/reader.h"
#include "dstack/writer.h"
#include "check.h"

/* A payload under construction, in perf's layout. */
struct buf {
	uint8_t b[4096];
	size_t n;
};

static void put(struct buf *b, const void *p, size_t n)
{
	memcpy(b->b + b->n, p, n);
	b->n += n;
}

static void put_u32(struct buf *b, uint32_t v) { put(b, &v, 4); }
static void put_u64(struct buf *b, uint64_t v) { put(b, &v, 8); }

/* perf's header string: u32 length (NUL included, padded to 64), the bytes, zeros */
static void put_str(struct buf *b, const char *s)
{
	uint32_t len = (uint32_t)((strlen(s) + 1 + 63) & ~(size_t)63);

	put_u32(b, len);
	memset(b->b + b->n, 0, len);
	memcpy(b->b + b->n, s, strlen(s));
	b->n += len;
}

static char dir[4096];

struct feat {
	int feat;
	struct buf *payload;
};

/* A file of one event, one sample and the features @f; its path in @path. */
static int write_file(const char *name, const struct feat *f, size_t nr, char *path, size_t size)
{
	struct ds_attr a = { .type = 1, .sample_period = 1000, .sample_type = DS_SAMPLE_IP | DS_SAMPLE_TID };
	uint64_t rec[3] = { 0 }, id = 1;
	struct ds_event_header h = { .type = DS_REC_SAMPLE, .misc = DS_MISC_USER, .size = 24 };
	struct ds_writer *w;
	int ret = 0;

	snprintf(path, size, "%s/%s.data", dir, name);
	w = ds_writer__open(path, false);
	CHECK(w != NULL, "open %s: %s", path, ds_errmsg());
	if (!w)
		return -1;
	ret |= ds_writer__add_attr(w, &a, ds_attr__min_size(&a), &id, 1, "cpu-clock");
	ret |= ds_writer__add_attr(w, &a, ds_attr__min_size(&a), NULL, 0, "cpu-clock2");
	ret |= ds_writer__feature_string(w, DS_FEAT_ARCH, "x86_64");
	for (size_t i = 0; i < nr; i++)
		ret |= ds_writer__feature(w, f[i].feat, f[i].payload->b, f[i].payload->n);
	memcpy(rec, &h, 8);
	rec[1] = 0x401000;
	rec[2] = (7ULL << 32) | 7;
	ret |= ds_writer__write(w, rec, sizeof(rec));
	ret |= ds_writer__close(w);
	CHECK(ret == 0, "writing %s", path);
	return ret;
}

static struct ds_reader *open_file(const char *path)
{
	struct ds_reader *rd = ds_reader__open(path);

	CHECK(rd != NULL, "reading %s back: %s", path, ds_errmsg());
	return rd;
}

/* Up to @max records of @feat into @out (strings copied into @strs); the iterator's last result in *@end. */
static size_t collect(struct ds_reader *rd, int feat, struct ds_feat_rec *out, size_t max, char strs[][2][64],
		      int *end, char *errmsg, size_t errsize)
{
	struct ds_feat_iter *it = ds_feat_iter__new(rd, feat);
	size_t n = 0;
	int err = 0;

	CHECK(it != NULL, "iterator on feature %d: %s", feat, strerror(errno));
	if (!it)
		return 0;
	while (n < max && (err = ds_feat_iter__next(it, &out[n])) > 0) {
		const struct ds_feat_rec *r = &out[n];
		const char *a = NULL, *b = NULL;

		switch (r->type) {
		case DS_FEAT_REC_STRING: a = r->str; break;
		case DS_FEAT_REC_PMU: a = r->pmu.name; break;
		case DS_FEAT_REC_GROUP: a = r->group.name; break;
		case DS_FEAT_REC_PMU_CAPS: a = r->pmu_caps.pmu; break;
		case DS_FEAT_REC_CAP: a = r->cap.name; b = r->cap.value; break;
		case DS_FEAT_REC_BPF_SUBPROG: a = r->bpf_subprog.name; break;
		default: break;
		}
		snprintf(strs[n][0], 64, "%s", a ? a : "");
		snprintf(strs[n][1], 64, "%s", b ? b : "");
		n++;
	}
	*end = err;
	snprintf(errmsg, errsize, "%s", err < 0 ? ds_errmsg() : "");
	ds_feat_iter__delete(it);
	return n;
}

/* ---- a BPF program and its BTF ------------------------------------------------ */

/* One HEADER_BPF_PROG_INFO program: @nr subprograms, tags 0xa0+i.., addresses 0xffffffffc0001000 + i*0x100 */
static void put_prog(struct buf *b, uint32_t id, uint32_t nr, uint32_t btf_id, const char *name, bool bad_counts)
{
	uint8_t info[192] = { 0 }, data[256] = { 0 };
	uint64_t ksyms = 0, lens = 8ULL * nr, tags = lens + 4ULL * nr, finfo = tags + 8ULL * nr;
	uint32_t nr_tags = bad_counts ? nr + 1 : nr, rec_size = 8, data_len = (uint32_t)(finfo + 8ULL * nr);

	memcpy(info + 4, &id, 4);
	strncpy((char *)info + 64, name, 16);
	memcpy(info + 104, &nr, 4);
	memcpy(info + 108, &nr, 4);
	memcpy(info + 112, &ksyms, 8);
	memcpy(info + 120, &lens, 8);
	memcpy(info + 128, &btf_id, 4);
	memcpy(info + 132, &rec_size, 4);
	memcpy(info + 136, &finfo, 8);
	memcpy(info + 180, &nr_tags, 4);
	memcpy(info + 184, &tags, 8);
	for (uint32_t i = 0; i < nr; i++) {
		uint64_t addr = 0xffffffffc0001000ULL + 0x100ULL * i;
		uint32_t len = 0x40 + i, type_id = i + 1;

		memcpy(data + ksyms + 8 * i, &addr, 8);
		memcpy(data + lens + 4 * i, &len, 4);
		for (int k = 0; k < 8; k++)
			data[tags + 8 * i + k] = (uint8_t)(0xa0 + i * 16 + k);
		memcpy(data + finfo + 8 * i + 4, &type_id, 4);
	}
	put_u32(b, sizeof(info));
	put_u32(b, data_len);
	put_u64(b, 0);
	put(b, info, sizeof(info));
	put(b, data, data_len);
}

/* A BTF blob of two FUNC types, "handler_a" (1) and "handler_b" (2). */
static void put_btf(struct buf *b, uint32_t id)
{
	static const char strs[] = "\0handler_a\0handler_b";
	uint8_t blob[24 + 24 + sizeof(strs)] = { 0 };
	uint16_t magic = 0xeB9F;
	uint32_t hdr_len = 24, type_off = 0, type_len = 24, str_off = 24, str_len = sizeof(strs);
	uint32_t t1[3] = { 1, 12u << 24, 0 }, t2[3] = { 11, 12u << 24, 0 };

	memcpy(blob, &magic, 2);
	blob[2] = 1;
	memcpy(blob + 4, &hdr_len, 4);
	memcpy(blob + 8, &type_off, 4);
	memcpy(blob + 12, &type_len, 4);
	memcpy(blob + 16, &str_off, 4);
	memcpy(blob + 20, &str_len, 4);
	memcpy(blob + 24, t1, 12);
	memcpy(blob + 36, t2, 12);
	memcpy(blob + 48, strs, sizeof(strs));
	put_u32(b, id);
	put_u32(b, sizeof(blob));
	put(b, blob, sizeof(blob));
}

/* ---- whole features ------------------------------------------------------------ */

static void test_good(void)
{
	struct buf groups = { .n = 0 }, pmus = { .n = 0 }, caps = { .n = 0 }, cpucaps = { .n = 0 };
	struct buf progs = { .n = 0 }, btfs = { .n = 0 }, clock = { .n = 0 }, clockid = { .n = 0 };
	struct buf emach = { .n = 0 }, cln = { .n = 0 }, comp = { .n = 0 }, dirf = { .n = 0 };
	struct ds_feat_rec r[16];
	char s[16][2][64], path[4200], msg[400];
	int end;
	size_t n;

	put_u32(&groups, 2);
	put_str(&groups, "{anon_group}"); put_u32(&groups, 0); put_u32(&groups, 2);
	put_str(&groups, "solo"); put_u32(&groups, 1); put_u32(&groups, 1);
	put_u32(&pmus, 2);
	put_u32(&pmus, 4); put_str(&pmus, "cpu");
	put_u32(&pmus, 11); put_str(&pmus, "ibs_op");
	put_u32(&cpucaps, 1);
	put_str(&cpucaps, "max_precise"); put_str(&cpucaps, "0");
	put_u32(&caps, 2);
	put_u32(&caps, 2);
	put_str(&caps, "branches"); put_str(&caps, "32"); put_str(&caps, "pmu_name"); put_str(&caps, "zen");
	put_str(&caps, "cpu_core");
	put_u32(&caps, 0);
	put_str(&caps, "ibs_fetch");
	put_u32(&progs, 3);
	put_prog(&progs, 7, 1, 0, "myprog", false);
	put_prog(&progs, 3, 2, 5, "", false);
	put_prog(&progs, 9, 1, 0, "odd", true);
	put_u32(&btfs, 2);
	put_btf(&btfs, 5);
	put_btf(&btfs, 2);
	put_u32(&clock, 1); put_u32(&clock, 1); put_u64(&clock, 1700000000123456789ULL); put_u64(&clock, 5000000123ULL);
	put_u64(&clockid, 1);
	put_u32(&emach, 62); put_u32(&emach, 0);
	put_u32(&cln, 64);
	put_u32(&comp, 0); put_u32(&comp, 1); put_u32(&comp, 3); put_u32(&comp, 5); put_u32(&comp, 4096);
	put_u64(&dirf, 1);
	const struct feat f[] = {
		{ DS_FEAT_GROUP_DESC, &groups }, { DS_FEAT_PMU_MAPPINGS, &pmus }, { DS_FEAT_CPU_PMU_CAPS, &cpucaps },
		{ DS_FEAT_PMU_CAPS, &caps }, { DS_FEAT_BPF_PROG_INFO, &progs }, { DS_FEAT_BPF_BTF, &btfs },
		{ DS_FEAT_CLOCK_DATA, &clock }, { DS_FEAT_CLOCKID, &clockid }, { DS_FEAT_E_MACHINE, &emach },
		{ DS_FEAT_CLN_SIZE, &cln }, { DS_FEAT_COMPRESSED, &comp }, { DS_FEAT_DIR_FORMAT, &dirf },
	};

	if (write_file("features", f, sizeof(f) / sizeof(*f), path, sizeof(path)))
		return;
	struct ds_reader *rd = open_file(path);

	if (!rd)
		return;
	CHECK(!strcmp(ds_feature__name(DS_FEAT_PMU_CAPS), "PMU_CAPS") && !strcmp(ds_feature__name(34), "CLN_SIZE") &&
	      !ds_feature__name(0) && !ds_feature__name(DS_FEAT_NR_NAMED), "feature names");
	CHECK(!ds_feat_iter__new(rd, DS_FEAT_NUMA_TOPOLOGY) && errno == ENOENT, "no such feature: ENOENT");
	CHECK(!ds_feat_iter__new(rd, DS_FEAT_BITS) && errno == EINVAL, "bad feature number: EINVAL");

	n = collect(rd, DS_FEAT_GROUP_DESC, r, 16, s, &end, msg, sizeof(msg));
	CHECK(n == 2 && end == 0 && r[0].type == DS_FEAT_REC_GROUP && !strcmp(s[0][0], "{anon_group}") &&
	      r[0].group.leader == 0 && r[0].group.nr_members == 2 && !strcmp(s[1][0], "solo") &&
	      r[1].group.leader == 1 && r[1].group.nr_members == 1, "groups: %zu %d", n, end);

	n = collect(rd, DS_FEAT_PMU_MAPPINGS, r, 16, s, &end, msg, sizeof(msg));
	CHECK(n == 2 && end == 0 && r[0].pmu.type == 4 && !strcmp(s[0][0], "cpu") && r[1].pmu.type == 11 &&
	      !strcmp(s[1][0], "ibs_op"), "pmu mappings: %zu %d", n, end);

	n = collect(rd, DS_FEAT_CPU_PMU_CAPS, r, 16, s, &end, msg, sizeof(msg));
	CHECK(n == 2 && end == 0 && r[0].type == DS_FEAT_REC_PMU_CAPS && !strcmp(s[0][0], "cpu") &&
	      r[0].pmu_caps.nr_caps == 1 && r[1].type == DS_FEAT_REC_CAP && !strcmp(s[1][0], "max_precise") &&
	      !strcmp(s[1][1], "0"), "cpu pmu caps: %zu %d", n, end);

	/* the PMU's name comes after its capabilities in the file, first in the records */
	n = collect(rd, DS_FEAT_PMU_CAPS, r, 16, s, &end, msg, sizeof(msg));
	CHECK(n == 4 && end == 0 && r[0].type == DS_FEAT_REC_PMU_CAPS && !strcmp(s[0][0], "cpu_core") &&
	      r[0].pmu_caps.nr_caps == 2 && !strcmp(s[1][0], "branches") && !strcmp(s[1][1], "32") &&
	      !strcmp(s[2][0], "pmu_name") && !strcmp(s[2][1], "zen") && r[3].type == DS_FEAT_REC_PMU_CAPS &&
	      !strcmp(s[3][0], "ibs_fetch") && r[3].pmu_caps.nr_caps == 0, "pmu caps: %zu %d %s [%s %s %s %s]", n, end, msg, s[0][0], s[1][0], s[2][0], s[3][0]);

	/* programs by id: 3 (two subprograms named from BTF 5), 7 (its own name), 9 (counts disagree) */
	n = collect(rd, DS_FEAT_BPF_PROG_INFO, r, 16, s, &end, msg, sizeof(msg));
	CHECK(n == 6 && end == 0, "bpf programs: %zu records, %d %s", n, end, msg);
	if (n == 6) {
		CHECK(r[0].type == DS_FEAT_REC_BPF_PROG && r[0].bpf_prog.id == 3 && r[0].bpf_prog.nr_subprogs == 2 &&
		      r[0].bpf_prog.valid, "program 3");
		CHECK(r[1].type == DS_FEAT_REC_BPF_SUBPROG && r[1].bpf_subprog.index == 0 &&
		      r[1].bpf_subprog.addr == 0xffffffffc0001000ULL && r[1].bpf_subprog.size == 0x40 &&
		      !strcmp(s[1][0], "bpf_prog_a0a1a2a3a4a5a6a7_handler_a"), "subprogram 0: %s", s[1][0]);
		CHECK(r[2].bpf_subprog.index == 1 && r[2].bpf_subprog.addr == 0xffffffffc0001100ULL &&
		      !strcmp(s[2][0], "bpf_prog_b0b1b2b3b4b5b6b7_handler_b"), "subprogram 1: %s", s[2][0]);
		CHECK(r[3].bpf_prog.id == 7 && r[3].bpf_prog.valid && r[4].type == DS_FEAT_REC_BPF_SUBPROG &&
		      !strcmp(s[4][0], "bpf_prog_a0a1a2a3a4a5a6a7_myprog"), "program 7: %s", s[4][0]);
		CHECK(r[5].bpf_prog.id == 9 && !r[5].bpf_prog.valid, "program 9: invalid, no subprograms");
	}
	n = collect(rd, DS_FEAT_BPF_BTF, r, 16, s, &end, msg, sizeof(msg));
	CHECK(n == 2 && end == 0 && r[0].btf.id == 2 && r[1].btf.id == 5, "btfs by id");

	n = collect(rd, DS_FEAT_CLOCK_DATA, r, 16, s, &end, msg, sizeof(msg));
	CHECK(n == 1 && r[0].clock_data.version == 1 && r[0].clock_data.clockid == 1 &&
	      r[0].clock_data.tod_ns == 1700000000123456789ULL && r[0].clock_data.clock_ns == 5000000123ULL, "clock data");
	n = collect(rd, DS_FEAT_E_MACHINE, r, 16, s, &end, msg, sizeof(msg));
	CHECK(n == 1 && r[0].e_machine.machine == 62, "e_machine");
	n = collect(rd, DS_FEAT_CLN_SIZE, r, 16, s, &end, msg, sizeof(msg));
	CHECK(n == 1 && r[0].type == DS_FEAT_REC_U64 && r[0].u64 == 64, "cacheline size");
	n = collect(rd, DS_FEAT_COMPRESSED, r, 16, s, &end, msg, sizeof(msg));
	CHECK(n == 1 && r[0].compressed.type == 1 && r[0].compressed.level == 3 && r[0].compressed.ratio == 5 &&
	      r[0].compressed.mmap_len == 4096, "compressed");
	n = collect(rd, DS_FEAT_ARCH, r, 16, s, &end, msg, sizeof(msg));
	CHECK(n == 1 && r[0].type == DS_FEAT_REC_STRING && !strcmp(s[0][0], "x86_64"), "arch");
	n = collect(rd, DS_FEAT_EVENT_DESC, r, 16, s, &end, msg, sizeof(msg));
	CHECK(n == 0 && end == 0, "EVENT_DESC gives no records");
	ds_reader__close(rd);
}

/* ---- damaged sections ------------------------------------------------------------ */

/*
 * One damaged feature: its records before the damage as @want_n, then
 * -EBADMSG with a message naming offset section+@rel.  The section's
 * offset is that of its first record less @first.
 */
static void check_damage(const char *name, int feat, struct buf *payload, size_t want_n, uint64_t first, uint64_t rel,
			 const char *what)
{
	const struct feat f[] = { { feat, payload } };
	struct ds_feat_rec r[16];
	char s[16][2][64], path[4200], msg[400], want[64];
	int end = 0;
	size_t n;

	if (write_file(name, f, 1, path, sizeof(path)))
		return;
	struct ds_reader *rd = open_file(path);

	if (!rd)
		return;
	n = collect(rd, feat, r, 16, s, &end, msg, sizeof(msg));
	CHECK(n == want_n && end == -EBADMSG, "%s: %zu records (want %zu), end %d", name, n, want_n, end);
	if (n) {
		snprintf(want, sizeof(want), "offset %#" PRIx64 ":", r[0].offset - first + rel);
		CHECK(strstr(msg, want) && strstr(msg, ds_feature__name(feat)) && strstr(msg, what),
		      "%s: message '%s' lacks '%s' or '%s'", name, msg, want, what);
	} else {
		CHECK(strstr(msg, "offset 0x") && strstr(msg, ds_feature__name(feat)) && strstr(msg, what),
		      "%s: message '%s'", name, msg);
	}
	ds_reader__close(rd);
}

static void test_damaged(void)
{
	struct buf b;

	/* CMDLINE of 3 words whose second's length runs past the section */
	b.n = 0;
	put_u32(&b, 3);
	put_str(&b, "dstack");
	put_u32(&b, 4000);
	put_u32(&b, 0);
	check_damage("cmdline", DS_FEAT_CMDLINE, &b, 1, 4, 4 + 68, "word of 4000 bytes past the section's end");

	/* a group list whose count promises more than the section holds */
	b.n = 0;
	put_u32(&b, 5);
	put_str(&b, "g"); put_u32(&b, 0); put_u32(&b, 1);
	check_damage("groups", DS_FEAT_GROUP_DESC, &b, 1, 4, 4 + 76, "group name (4 bytes) past the section's end");

	/* a PMU's capabilities cut off before its name */
	b.n = 0;
	put_u32(&b, 1);
	put_u32(&b, 1);
	put_str(&b, "branches");
	put_str(&b, "32");
	check_damage("pmu_caps", DS_FEAT_PMU_CAPS, &b, 0, 0, 0, "PMU name (4 bytes) past the section's end");

	/* a hostname whose length is hostile */
	b.n = 0;
	put_u32(&b, 0xffffffffu);
	put_u32(&b, 0);
	check_damage("hostname", DS_FEAT_HOSTNAME, &b, 0, 0, 0, "string of 4294967295 bytes");

	/* NRCPUS of one field */
	b.n = 0;
	put_u32(&b, 8);
	check_damage("nrcpus", DS_FEAT_NRCPUS, &b, 0, 0, 0, "CPUs online (4 bytes) past the section's end");

	/* three programs promised, one there: it is given, then the damage where the second should be */
	b.n = 0;
	put_u32(&b, 3);
	put_prog(&b, 4, 1, 0, "only", false);
	put_u32(&b, 1000);
	put_u32(&b, 1000);
	put_u64(&b, 0);
	for (int i = 0; i < 8; i++)
		put_u64(&b, 0);
	check_damage("bpf", DS_FEAT_BPF_PROG_INFO, &b, 2, 20, 4 + 16 + 192 + 28,
		     "a program entry does not fit in the section");
}

/* An empty section: no records, no error. */
static void test_empty(void)
{
	struct buf b = { .n = 0 };
	const struct feat f[] = { { DS_FEAT_CMDLINE, &b } };
	struct ds_feat_rec r[4];
	char s[4][2][64], path[4200], msg[400];
	int end = 1;

	if (write_file("empty", f, 1, path, sizeof(path)))
		return;
	struct ds_reader *rd = open_file(path);

	if (!rd)
		return;
	CHECK(collect(rd, DS_FEAT_CMDLINE, r, 4, s, &end, msg, sizeof(msg)) == 0 && end == 0, "empty: %d", end);
	ds_reader__close(rd);
}

static void quiet(enum ds_log_level level, const char *fmt, va_list ap)
{
	(void)level;
	(void)fmt;
	(void)ap;
}

/* ---- the header's text (ds_reader__print_header) and groups (ds_reader__for_each_group) ---- */

struct mem {
	char b[8192];
	size_t n;
	int fail_after;                 /* writes before failing with -ENOSPC; 0: never */
	int writes;
};

static int mem_write(void *ctx, const void *buf, size_t len)
{
	struct mem *m = ctx;

	if (m->fail_after && ++m->writes >= m->fail_after)
		return -ENOSPC;
	if (m->n + len >= sizeof(m->b))
		len = sizeof(m->b) - 1 - m->n;
	memcpy(m->b + m->n, buf, len);
	m->n += len;
	m->b[m->n] = 0;
	return 0;
}

static void on_group(void *ctx, const char *name, uint32_t leader, uint32_t members)
{
	char *out = ctx;
	size_t n = strlen(out);

	snprintf(out + n, 256 - n, "%s:%u:%u;", name, leader, members);
}

static void test_header_text(void)
{
	struct buf groups = { .n = 0 }, pmus = { .n = 0 };
	char path[4200], seen[256] = "";
	static struct mem m;

	put_u32(&groups, 1);
	put_str(&groups, "{anon_group}"); put_u32(&groups, 0); put_u32(&groups, 2);
	put_u32(&pmus, 2);
	put_u32(&pmus, 4); put_str(&pmus, "cpu");
	put_u32(&pmus, 1); put_str(&pmus, "software");
	const struct feat f[] = { { DS_FEAT_GROUP_DESC, &groups }, { DS_FEAT_PMU_MAPPINGS, &pmus } };

	if (write_file("header_text", f, 2, path, sizeof(path)))
		return;
	struct ds_reader *rd = open_file(path);

	if (!rd)
		return;
	ds_reader__for_each_group(rd, on_group, seen);
	CHECK(!strcmp(seen, "{anon_group}:0:2;"), "groups: %s", seen);
	CHECK(ds_reader__print_header(rd, path, DS_HEADER_LAYOUT, mem_write, &m) == 0, "layout: %s", ds_errmsg());
	CHECK(!strncmp(m.b, "# ========\n# captured on    : ", 30) && strstr(m.b, "# header version : 1\n") &&
	      strstr(m.b, "# feat offset    : ") && !strstr(m.b, "# arch"), "layout only: %s", m.b);
	m.n = 0;
	CHECK(ds_reader__print_header(rd, path, DS_HEADER_FEATURES, mem_write, &m) == 0, "features");
	CHECK(!strncmp(m.b, "# arch : x86_64\n", 16) && strstr(m.b, "# event : name = cpu-clock, , id = { 1 }") &&
	      strstr(m.b, "# group: {cpu-clock,cpu-clock2}\n") &&
	      strstr(m.b, "# pmu mappings: cpu = 4, software = 1\n") && strstr(m.b, "# missing features: ") &&
	      !strstr(m.b, "# ========"), "features only: %s", m.b);
	m.n = 0;
	CHECK(ds_reader__print_header(rd, path, DS_HEADER_LAYOUT | DS_HEADER_FEATURES, mem_write, &m) == 0, "all");
	CHECK(strstr(m.b, "# captured on") && strstr(m.b, "# arch : x86_64") && m.n > 12 &&
	      !strcmp(m.b + m.n - 13, "# ========\n#\n"), "the whole block, closed: %s", m.b);
	m.n = 0;
	m.fail_after = 1;
	CHECK(ds_reader__print_header(rd, path, DS_HEADER_LAYOUT | DS_HEADER_FEATURES, mem_write, &m) == -ENOSPC &&
	      strstr(ds_errmsg(), "writing the header"), "a failed write: %s", ds_errmsg());
	ds_reader__close(rd);
}

int main(int argc, char **argv)
{
	bool keep = argc > 1;

	ds_set_log(quiet);
	if (keep)
		snprintf(dir, sizeof(dir), "%s", argv[1]);
	else
		snprintf(dir, sizeof(dir), "/tmp/dstack-test-features.%d", (int)getpid());
	if (mkdir(dir, 0700) && errno != EEXIST) {
		printf("cannot make %s: %s\n", dir, strerror(errno));
		return 1;
	}
	test_good();
	test_damaged();
	test_empty();
	test_header_text();
	if (!keep) {
		const char *names[] = { "features", "cmdline", "groups", "pmu_caps", "hostname", "nrcpus", "bpf", "empty", "header_text" };
		char p[4200];

		for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++) {
			snprintf(p, sizeof(p), "%s/%s.data", dir, names[i]);
			unlink(p);
		}
		rmdir(dir);
	}
	printf("test_features: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
