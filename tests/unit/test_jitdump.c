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
 * offset, what came before kept.
 */
#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "dstack/jitdump.h"
#include "dstack/log.h"
#include "symbols/jitdump.h"
#include "symbols/symbols_int.h"
#include "unwind/unwind_int.h"

static int passed, failed;

#define CHECK(cond, ...) do { \
	if (cond) { passed++; } else { failed++; printf("FAIL %s:%d: ", __FILE__, __LINE__); \
		printf(__VA_ARGS__); printf("\n"); } } while (0)

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

		CHECK(dsi_jitdump__elf(&jd, &c[0], &img_buf, &len, NULL) == 0, "image built");
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
	CHECK(dsi_jitdump__name_matches("/tmp/x/jit-123.dump", 123) && dsi_jitdump__name_matches("jit-5.dump", 0) &&
	      !dsi_jitdump__name_matches("/tmp/jit-123.dump", 124) && !dsi_jitdump__name_matches("/tmp/jit-.dump", 0) &&
	      !dsi_jitdump__name_matches("/tmp/jit-12x.dump", 0) && !dsi_jitdump__name_matches("/tmp/xjit-1.dump", 1),
	      "perf's marker names");
	unlink(path);
	printf("test_jitdump: %d passed, %d failed\n", passed, failed);
	return failed != 0;
}
