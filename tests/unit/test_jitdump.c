// SPDX-License-Identifier: MIT
/*
 * jitdump reader unit tests (lib/symbols/jitdump.c): dumps built here in
 * both byte orders, as CPython's -X perf_jit writes them (an unwinding
 * record before each code load), read back: the loads, their names and
 * timestamps, which unwinding data goes with which load (perf inject's
 * rule: one whose .eh_frame_hdr is empty stays for the next loads), a move
 * mapped with its load's code; the ELF image of a load loads (its symbol
 * at 0x80, its size) and its .eh_frame gives the unwinder the rows the
 * CFI says; damaged dumps: one problem line with the file and the right
 * offset, what came before kept.  A dump of TSC timestamps: converted as
 * perf converts them (tsc_to_perf_time), and through the public API a
 * recording written here (its TIME_CONV, the dump's mmap, samples in JIT
 * code) maps each load at its converted time; without a TIME_CONV, the
 * code is mapped from the dump's mmap on.
 */
#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "dstack/jitdump.h"
#include "dstack/log.h"
#include "dstack/profile.h"
#include "dstack/reader.h"
#include "dstack/writer.h"
#include "symbols/jitdump.h"
#include "symbols/symbols_int.h"
#include "unwind/unwind_int.h"
#include "check.h"

struct buf {
	uint8_t b[8192];
	size_t n;
	bool swap;
};

static void put(struct buf *b, const void *p, size_t n)
{
	memcpy(b->b + b->n, p, n);
	b->n += n;
}

static void u32(struct buf *b, uint32_t v)
{
	v = b->swap ? __builtin_bswap32(v) : v;
	put(b, &v, 4);
}

static void u64(struct buf *b, uint64_t v)
{
	v = b->swap ? __builtin_bswap64(v) : v;
	put(b, &v, 8);
}

static const uint8_t code[12] = { 0x55, 0x48, 0x89, 0xe5, 0xff, 0xd1, 0x5d, 0xc3, 0x90, 0x90, 0x90, 0x90 };

/* .eh_frame for code[] laid out as perf's ELF lays it (.eh_frame at ALIGN_8(0x80 + 12)), then a 20-byte header */
static void unwinding(struct buf *b, uint64_t ts)
{
	static const uint8_t cie[24] = { 0x14, 0, 0, 0, 0, 0, 0, 0, 1, 'z', 'R', 0, 1, 0x78, 0x10, 1, 0x1b,
					 0x0c, 7, 8, 0x90, 1, 0, 0 };
	uint8_t fde[32] = { 0x1c, 0, 0, 0, 0x1c, 0, 0, 0 };
	int32_t pc = -(int32_t)(16 + 0x20);   /* code start relative to the pc_begin field */
	uint32_t range = sizeof(code);
	static const uint8_t ins[] = { 0, 0x41, 0x0e, 0x10, 0x86, 0x02, 0x43, 0x0d, 0x06 };
	uint8_t hdr[20] = { 1, 0x1b, 3, 0x3b };

	memcpy(fde + 8, &pc, 4);   /* the .eh_frame bytes are little-endian x86_64 data in either dump */
	memcpy(fde + 12, &range, 4);
	memcpy(fde + 16, ins, sizeof(ins));
	u32(b, 4);
	u32(b, 16 + 24 + 24 + 32 + 20);
	u64(b, ts);
	u64(b, 24 + 32 + 20);
	u64(b, 20);
	u64(b, 24 + 32 + 20);
	put(b, cie, 24);
	put(b, fde, 32);
	put(b, hdr, 20);
}

static void load(struct buf *b, uint64_t ts, uint64_t addr, uint64_t index, const char *name)
{
	size_t nl = strlen(name) + 1;

	u32(b, 0);
	u32(b, (uint32_t)(16 + 40 + nl + sizeof(code)));
	u64(b, ts);
	u32(b, 77);
	u32(b, 78);
	u64(b, addr);
	u64(b, addr);
	u64(b, sizeof(code));
	u64(b, index);
	put(b, name, nl);
	put(b, code, sizeof(code));
}

static size_t build(struct buf *b, bool swap, size_t *second_load)
{
	memset(b, 0, sizeof(*b));
	b->swap = swap;
	u32(b, 0x4A695444);
	u32(b, 1);
	u32(b, 40);
	u32(b, EM_X86_64);
	u32(b, 0);
	u32(b, 77);
	u64(b, 5);
	u64(b, 0);
	unwinding(b, 100);
	load(b, 101, 0x7f0000001000, 0, "py::f:/a.py");
	*second_load = b->n;
	load(b, 111, 0x7f0000001020, 1, "py::g:/a.py");   /* no unwinding record: the first's went with its load */
	u32(b, 1);                                         /* a move of load 0 */
	u32(b, 16 + 48);
	u64(b, 120);
	u32(b, 77);
	u32(b, 78);
	u64(b, 0);
	u64(b, 0x7f0000001000);
	u64(b, 0x7f0000009000);
	u64(b, sizeof(code));
	u64(b, 0);
	u32(b, 3);                                         /* close */
	u32(b, 16);
	u64(b, 130);
	return b->n;
}

static void write_dump(const char *path, const uint8_t *p, size_t n)
{
	FILE *f = fopen(path, "wb");

	if (!f || fwrite(p, 1, n, f) != n)
		abort();
	fclose(f);
}

static void read_back(bool swap, const char *path)
{
	struct buf b;
	struct dsi_jitdump jd;
	size_t second, n = build(&b, swap, &second);

	write_dump(path, b.b, n);
	CHECK(dsi_jitdump__read(&jd, path) == 0, "read");
	CHECK(!jd.problem[0], "no problem: %s", jd.problem);
	CHECK(jd.swap == swap && jd.pid == 77, "swap %d pid %u", jd.swap, jd.pid);
	CHECK(jd.nr == 3, "3 codes, got %zu", jd.nr);
	if (jd.nr == 3) {
		const struct ds_jit_code *c = jd.codes;

		CHECK(!strcmp(c[0].name, "py::f:/a.py") && c[0].time == 101 && c[0].addr == 0x7f0000001000 &&
		      c[0].size == sizeof(code) && c[0].index == 0 && c[0].pid == 77 && c[0].tid == 78, "load 0");
		CHECK(c[0].unw_size == 76 && c[0].unw_hdr_size == 20 && c[0].map_len == 16 + 76, "load 0's unwinding: %llu %llu %llu",
		      (unsigned long long)c[0].unw_size, (unsigned long long)c[0].unw_hdr_size, (unsigned long long)c[0].map_len);
		CHECK(!strcmp(c[1].name, "py::g:/a.py") && c[1].unw_size == 0 && c[1].map_len == sizeof(code),
		      "load 1 has no unwinding (the first's header was not empty)");
		CHECK(c[2].move && c[2].addr == 0x7f0000009000 && c[2].time == 120 && c[2].code_off == c[0].code_off &&
		      !strcmp(c[2].name, c[0].name), "the move maps load 0's code anew");
		/* the image: its symbol, and the rows its .eh_frame gives */
		uint8_t *img_buf;
		size_t len;
		struct ds_elf_image img;

		CHECK(dsi_jitdump__elf(&jd, &c[0], false, &img_buf, &len, NULL) == 0, "image built");
		CHECK(dsi_elf__open_memory(&img, img_buf, len) == 0 && dsi_elf__load(&img, false, NULL, "/x/jitted-77-0.so", NULL),
		      "image loads");
		const struct ds_sym *s = dsi_symtab__find(&img.symtab, 0x80 + 5);
		uint64_t va = 0;

		CHECK(s && s->start == 0x80 && s->end == 0x80 + sizeof(code), "its symbol at 0x80, the code's size");
		CHECK(dsi_elf__off_to_vaddr(&img, 0x80 + 5, &va) && va == 0x85, "file offset 0x85 is its address");
		Dwarf_CFI *cfi = dwarf_getcfi_elf(img.elf);
		struct uw_row row;
		struct uw_opstore ops = { 0 };

		CHECK(cfi && dsi_uw_cfi__row(cfi, 0x80, 17, 16, &row, &ops) == 1 && row.cfa_reg == 7 && row.cfa_off == 8,
		      "at entry: CFA rsp+8");
		CHECK(cfi && dsi_uw_cfi__row(cfi, 0x80 + 5, 17, 16, &row, &ops) == 1 && row.cfa_reg == 6 && row.cfa_off == 16,
		      "after push and mov: CFA rbp+16");
		CHECK(cfi && dsi_uw_cfi__row(cfi, 0x80 + sizeof(code), 17, 16, &row, &ops) != 1, "past the code: no row");
		free(ops.v);
		if (cfi)
			dwarf_cfi_end(cfi);
		dsi_elf__close(&img);
		free(img_buf);
	}
	dsi_jitdump__exit(&jd);

	/* cut inside the second load: the first kept, one line naming the file and that record's offset */
	char want[256];

	write_dump(path, b.b, second + 20);
	CHECK(dsi_jitdump__read(&jd, path) == 0 && jd.nr == 1, "cut: 1 code kept, got %zu", jd.nr);
	snprintf(want, sizeof(want), "jitdump %s: offset %#zx: record size", path, second);
	CHECK(!strncmp(jd.problem, want, strlen(want)), "cut: '%s'", jd.problem);
	dsi_jitdump__exit(&jd);
	/* the API's: the code kept, the damage the dump's status, its line said by ds_errmsg() */
	struct ds_jitdump *pub = ds_jitdump__open(path);

	CHECK(pub && ds_jitdump__nr_codes(pub) == 1 && ds_jitdump__status(pub) == -EBADMSG &&
	      !strncmp(ds_errmsg(), want, strlen(want)), "cut, the API's status: '%s'", ds_errmsg());
	ds_jitdump__close(pub);
	write_dump(path, b.b, n);
	pub = ds_jitdump__open(path);
	CHECK(pub && ds_jitdump__nr_codes(pub) == 3 && !ds_jitdump__status(pub), "whole, the API's status: 0");
	ds_jitdump__close(pub);

	/* the second load's code outside any address: skipped, the rest read */
	uint64_t bad = swap ? __builtin_bswap64(0xffffffffffff0000ull) : 0xffffffffffff0000ull;

	memcpy(b.b + second + 32, &bad, 8);
	write_dump(path, b.b, n);
	CHECK(dsi_jitdump__read(&jd, path) == 0 && jd.nr == 2, "bad address: 2 codes kept, got %zu", jd.nr);
	snprintf(want, sizeof(want), "jitdump %s: offset %#zx: code at 0xffffffffffff0000", path, second);
	CHECK(!strncmp(jd.problem, want, strlen(want)), "bad address: '%s'", jd.problem);
	dsi_jitdump__exit(&jd);

	/* a header cut short; not a dump */
	write_dump(path, b.b, 30);
	CHECK(dsi_jitdump__read(&jd, path) == 0 && jd.nr == 0 && strstr(jd.problem, "offset 0: truncated"), "short: '%s'", jd.problem);
	dsi_jitdump__exit(&jd);
	write_dump(path, (const uint8_t *)"not a jitdump at all, not at all....................", 50);
	CHECK(dsi_jitdump__read(&jd, path) == 0 && jd.nr == 0 && strstr(jd.problem, "not a jitdump"), "magic: '%s'", jd.problem);
	dsi_jitdump__exit(&jd);
}

static void debug_entry(struct buf *b, uint64_t addr, uint32_t line, const char *name)
{
	u64(b, addr);
	u32(b, line);
	u32(b, 0);
	put(b, name, strlen(name) + 1);
}

/*
 * A debug-info record and the load that takes it, then a load without one:
 * the lines perf's addr2line gives for the .debug_line perf inject writes
 * of it (the rows where something changed, the sequence ending at the last
 * entry's address), a repeated-name marker keeping the file, an entry
 * below the code (perf's address arithmetic wraps) left out of the lookup.
 */
static void debug_lines(bool swap, const char *path)
{
	const uint64_t base = 0x7f0000001000;
	struct buf b;
	struct dsi_jitdump jd;
	size_t rec;
	char file[64];
	unsigned line = 0;

	memset(&b, 0, sizeof(b));
	b.swap = swap;
	u32(&b, 0x4A695444);
	u32(&b, 1);
	u32(&b, 40);
	u32(&b, EM_X86_64);
	u32(&b, 0);
	u32(&b, 77);
	u64(&b, 5);
	u64(&b, 0);
	rec = b.n;
	u32(&b, 2);
	u32(&b, 0);                 /* its size, set below */
	u64(&b, 100);
	u64(&b, base);
	u64(&b, 5);
	debug_entry(&b, base + 2, 10, "/src/a.js");
	debug_entry(&b, base + 4, 10, "\xff");
	debug_entry(&b, base + 6, 12, "/src/b.js");
	debug_entry(&b, base - 0x100, 77, "zz");
	debug_entry(&b, base + 9, 3, "/src/b.js");
	uint32_t size = (uint32_t)(b.n - rec);

	size = swap ? __builtin_bswap32(size) : size;
	memcpy(b.b + rec + 4, &size, 4);
	load(&b, 101, base, 0, "js::f");
	load(&b, 102, base + 0x20, 1, "js::g");
	write_dump(path, b.b, b.n);
	CHECK(dsi_jitdump__read(&jd, path) == 0 && jd.nr == 2 && !jd.problem[0], "debug: 2 codes, '%s'", jd.problem);
	if (jd.nr == 2) {
		static const struct { uint64_t at; int rc; const char *file; unsigned line; } want[] = {
			{ 0x80, 0, NULL, 0 },             /* before the first row */
			{ 0x83, 1, "/src/a.js", 10 },
			{ 0x85, 1, "/src/a.js", 10 },     /* the marker: the file kept */
			{ 0x88, 1, "/src/b.js", 12 },     /* the wrapped entry is no row below it */
			{ 0x89, 0, NULL, 0 },             /* the sequence's end */
		};

		for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
			int rc = dsi_jitdump__srcline(&jd, &jd.codes[0], want[i].at, file, sizeof(file), &line);

			CHECK(rc == want[i].rc && (!rc || (!strcmp(file, want[i].file) && line == want[i].line)),
			      "debug%s: line at %#llx: rc %d %s:%u", swap ? " (swapped)" : "", (unsigned long long)want[i].at,
			      rc, rc > 0 ? file : "-", rc > 0 ? line : 0);
		}
		CHECK(dsi_jitdump__srcline(&jd, &jd.codes[1], 0x83, file, sizeof(file), &line) == -ENOENT,
		      "debug: the next load has no debug info (the record went with the first)");
	}
	dsi_jitdump__exit(&jd);
}

/* perf's tsc_to_perf_time, computed here another way: 128-bit product, then the shift */
static uint64_t ref_perf_time(const struct ds_time_conv *tc, uint64_t cyc)
{
	if (tc->cap_user_time_short)
		cyc = tc->time_cycles + ((cyc - tc->time_cycles) & tc->time_mask);
	return tc->time_zero + (uint64_t)(((unsigned __int128)cyc * tc->time_mult) >> tc->time_shift);
}

static void tsc_conversion(void)
{
	/* a Linux 7.2 guest's TIME_CONV (shift 31, mult 827195406, zero "negative") */
	struct ds_time_conv g = { .time_shift = 31, .time_mult = 827195406, .time_zero = 18446744071097176521ull,
				  .cap_user_time_zero = true };
	struct ds_time_conv sh = { .time_shift = 10, .time_mult = 3 << 10, .time_zero = 5, .time_cycles = 0x12345000,
				   .time_mask = 0xffffffff, .cap_user_time_zero = true, .cap_user_time_short = true };
	const uint64_t cycs[] = { 0, 1, 0x7fffffff, 0x80000000, 123456789012345ull, 0x0123456789abcdefull };
	int bad = 0;

	for (size_t i = 0; i < sizeof(cycs) / sizeof(cycs[0]); i++)
		bad += ds_time_conv__perf_time(&g, cycs[i]) != ref_perf_time(&g, cycs[i]) ||
		       ds_time_conv__perf_time(&sh, cycs[i]) != ref_perf_time(&sh, cycs[i]);
	CHECK(!bad, "TSC to perf time as perf's formula, %d of %zu differ", bad, 2 * sizeof(cycs) / sizeof(cycs[0]));
	/* a short counter: only its low 32 bits count, from time_cycles on */
	CHECK(ds_time_conv__perf_time(&sh, 0xabcd00000010ull) == ds_time_conv__perf_time(&sh, 0x10),
	      "cap_user_time_short: the counter's high bits ignored");
	struct ds_time_conv none = { .time_shift = 10 }, wide = { .time_shift = 64, .time_mult = 1 };

	CHECK(ds_time_conv__perf_time(&none, 5) == DS_NO_TIME && ds_time_conv__perf_time(&wide, 5) == DS_NO_TIME,
	      "no conversion (mult 0, a shift past 63): DS_NO_TIME");
}

/* ---- a recording with a dump of TSC times, read through ds_profile ---- */

#define TSC_PID 77
enum { CONV_SHIFT = 10, CONV_ZERO = 1000 };   /* conversion: t = 1000 + 3 * cycles */

struct found {
	uint64_t time;
	char sym[64];
};

static int on_jit_sample(void *ctx, const struct ds_profile_sample *s)
{
	struct found *f = ctx;

	for (size_t i = 0; i < 8; i++)
		if (f[i].time == s->ev->sample.time) {
			const char *sym = s->nr_frames && s->frames[0].sym ? s->frames[0].sym : "[unknown]";

			snprintf(f[i].sym, sizeof(f[i].sym), "%s", sym);
		}
	return 0;
}

static void put_record(struct ds_writer *w, uint32_t type, uint16_t misc, const uint64_t *body, size_t words, int *ret)
{
	uint64_t r[64];
	struct ds_event_header h = { type, misc, (uint16_t)(8 * (words + 1)) };

	memcpy(r, &h, 8);
	memcpy(r + 1, body, 8 * words);
	*ret |= ds_writer__write(w, r, 8 * (words + 1));
}

/* A recording of pid 77 mapping @dump at time 1200, with samples in its code at @f's times and addresses. */
static int write_tsc_recording(const char *path, const char *dump, bool time_conv, const uint64_t (*smp)[2], size_t n)
{
	struct ds_attr a = { .type = 1, .sample_type = DS_SAMPLE_IP | DS_SAMPLE_TID | DS_SAMPLE_TIME,
			     .flags = 1ULL << DS_ATTR_SAMPLE_ID_ALL };
	const uint64_t ids[] = { 1 };
	uint64_t b[48] = { 0 };
	struct ds_writer *w = ds_writer__open(path, false);
	size_t nl = strlen(dump) + 1, words;
	int ret = 0;

	if (!w)
		return -1;
	ret |= ds_writer__add_attr(w, &a, ds_attr__min_size(&a), ids, 1, "cpu-clock");
	if (time_conv) {
		uint64_t tc[6] = { CONV_SHIFT, 3 << CONV_SHIFT, CONV_ZERO, 0, 0, 1 /* cap_user_time_zero */ };

		put_record(w, DS_REC_TIME_CONV, 0, tc, 6, &ret);
	}
	/* MMAP2: pid tid, addr len pgoff, maj min, ino, gen, prot flags, name, then pid/tid and time */
	b[0] = (uint64_t)TSC_PID << 32 | TSC_PID;
	b[1] = 0x7f0000100000ull;
	b[2] = 0x1000;
	b[7] = 5 /* PROT_READ|PROT_EXEC */ | 2ull << 32 /* MAP_PRIVATE */;
	memcpy(&b[8], dump, nl);
	words = 8 + (nl + 7) / 8;
	b[words++] = (uint64_t)TSC_PID << 32 | TSC_PID;
	b[words++] = 1200;
	put_record(w, DS_REC_MMAP2, DS_MISC_USER, b, words, &ret);
	for (size_t i = 0; i < n; i++) {
		uint64_t s[3] = { smp[i][1], (uint64_t)TSC_PID << 32 | TSC_PID, smp[i][0] };

		put_record(w, DS_REC_SAMPLE, DS_MISC_USER, s, 3, &ret);
	}
	put_record(w, DS_REC_FINISHED_ROUND, 0, b, 0, &ret);
	ret |= ds_writer__close(w);
	return ret;
}

static void tsc_profile(const char *dir)
{
	char dump[256], data[256];
	struct buf b;
	size_t second;
	size_t n = build(&b, false, &second);
	const uint64_t one = 1;   /* JITDUMP_FLAGS_ARCH_TIMESTAMP */
	/*
	 * The loads' TSC times 101, 111 and the move's 120 convert to 1303,
	 * 1333 and 1360 (the mmap is at 1200): load 1 (0x7f0000001020) is not
	 * mapped yet at 1305 and is at 1340; load 0, moved at 1360 to
	 * 0x7f0000009000, is found there at 1370.
	 */
	const uint64_t smp[][2] = { { 1305, 0x7f0000001004 }, { 1306, 0x7f0000001024 }, { 1340, 0x7f0000001024 },
				    { 1370, 0x7f0000009004 } };
	const char *want_conv[] = { "py::f:/a.py", "[unknown]", "py::g:/a.py", "py::f:/a.py" };
	const char *want_none[] = { "py::f:/a.py", "py::g:/a.py", "py::g:/a.py", "py::f:/a.py" };

	memcpy(b.b + 32, &one, 8);
	snprintf(dump, sizeof(dump), "%s/jit-%d.dump", dir, TSC_PID);
	snprintf(data, sizeof(data), "%s/tsc.data", dir);
	write_dump(dump, b.b, n);

	struct dsi_jitdump jd;

	CHECK(dsi_jitdump__read(&jd, dump) == 0 && jd.nr == 3 && jd.arch_time && !jd.problem[0],
	      "a dump of TSC times is read: %zu codes, '%s'", jd.nr, jd.problem);
	struct ds_time_conv tc = { .time_shift = CONV_SHIFT, .time_mult = 3 << CONV_SHIFT, .time_zero = CONV_ZERO };

	CHECK(jd.nr == 3 && dsi_jitdump__time(&jd, &jd.codes[0], NULL) == DS_NO_TIME &&
	      dsi_jitdump__time(&jd, &jd.codes[0], &tc) == 1303 && dsi_jitdump__time(&jd, &jd.codes[2], &tc) == 1360,
	      "its times: none without a conversion, converted with one");
	dsi_jitdump__exit(&jd);

	for (int conv = 1; conv >= 0; conv--) {
		struct found f[8] = { { 0 } };
		struct ds_profile *p;

		for (size_t i = 0; i < 4; i++)
			f[i].time = smp[i][0];
		CHECK(write_tsc_recording(data, dump, conv, smp, 4) == 0, "recording written");
		p = ds_profile__open(data, NULL);
		CHECK(p && ds_profile__for_each_sample(p, on_jit_sample, f) == 0, "read: %s", ds_errmsg());
		if (p && conv) {
			const struct ds_time_conv *rtc = &ds_reader__info(ds_profile__reader(p))->time_conv;

			CHECK(rtc->time_shift == CONV_SHIFT && rtc->time_mult == 3 << CONV_SHIFT && rtc->time_zero == CONV_ZERO &&
			      rtc->cap_user_time_zero && !rtc->cap_user_time_short, "the reader's TIME_CONV");
		}
		ds_profile__close(p);
		for (size_t i = 0; i < 4; i++) {
			const char *want = conv ? want_conv[i] : want_none[i];

			CHECK(!strcmp(f[i].sym, want), "%s TIME_CONV: the sample at %llu in %s, want %s", conv ? "with" : "without",
			      (unsigned long long)f[i].time, f[i].sym, want);
		}
	}
	unlink(data);
	unlink(dump);
}

int main(void)
{
	char path[] = "/tmp/test_jitdump-XXXXXX";
	int fd = mkstemp(path);

	if (fd < 0)
		return 1;
	close(fd);
	elf_version(EV_CURRENT);
	read_back(false, path);
	read_back(true, path);
	debug_lines(false, path);
	debug_lines(true, path);
	CHECK(dsi_jitdump__name_matches("/tmp/x/jit-123.dump", 123) && dsi_jitdump__name_matches("jit-5.dump", 0) &&
	      !dsi_jitdump__name_matches("/tmp/jit-123.dump", 124) && !dsi_jitdump__name_matches("/tmp/jit-.dump", 0) &&
	      !dsi_jitdump__name_matches("/tmp/jit-12x.dump", 0) && !dsi_jitdump__name_matches("/tmp/xjit-1.dump", 1),
	      "perf's marker names");
	unlink(path);
	tsc_conversion();
	char dir[] = "/tmp/test_jitdump-tsc-XXXXXX";

	if (mkdtemp(dir)) {
		tsc_profile(dir);
		rmdir(dir);
	} else {
		CHECK(0, "mkdtemp: %s", strerror(errno));
	}
	printf("test_jitdump: %d passed, %d failed\n", passed, failed);
	return failed != 0;
}
