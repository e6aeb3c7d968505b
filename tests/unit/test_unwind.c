// SPDX-License-Identifier: MIT
/*
 * Unit test of lib/unwind: the SFrame decoder (versions 2 and 3) against
 * binutils' own decoding of sections the real assemblers wrote
 * (tests/unit/data, recipe in its README), hostile SFrame sections, the
 * DWARF expression evaluator, and the CFI walk of this very program: a
 * snapshot of its own registers and stack, taken three calls deep in code
 * built without frame pointers, unwound through its .eh_frame (gcc's and
 * gas's) back to main; and the vDSO's images kept in a build-id cache.
 */
#include <errno.h>
#include <dwarf.h>
#include <elf.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dstack/log.h"
#include "dstack/symbols.h"
#include "dstack/unwind.h"
#include "unwind/unwind_int.h"
#include "check.h"

static char data_dir[PATH_MAX];

/* The whole file at @path, NUL-terminated (malloc'd); NULL if unreadable. */
static void *read_whole(const char *path, size_t *size)
{
	FILE *f;
	void *buf;
	long n;

	if (!(f = fopen(path, "rb")))
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	*size = (size_t)n;
	if (buf)
		((char *)buf)[n] = 0;
	return buf;
}

/* The test data file @name (tests/unit/data). */
static void *slurp(const char *name, size_t *size)
{
	char path[PATH_MAX * 2];

	snprintf(path, sizeof(path), "%s/%s", data_dir, name);
	return read_whole(path, size);
}

/*
 * Every row readelf printed: "func idx [i]: pc = 0x..., size = N bytes",
 * then "STARTPC[m]?  CFA  FP  RA" and rows "ADDR  sp+16  c-16|u  f|u".
 * The decoder must give the same rule at the row's first address and at
 * its last, and nothing past the function.
 */
static void check_sframe(const char *name, uint64_t vaddr, int version)
{
	char bin[64], txt[64];
	size_t size, tsize;
	uint8_t *sec;
	char *text, *line, *save = NULL;
	struct uw_sframe sf;
	const char *why = NULL;
	uint64_t fpc = 0, fsize = 0;
	bool mask = false;
	int rows = 0, fdes = 0;
	struct { uint64_t at; bool sp; int cfa; bool has_fp; int fp; } prev = { 0 };
	bool have_prev = false;

	snprintf(bin, sizeof(bin), "%s.bin", name);
	snprintf(txt, sizeof(txt), "%s.txt", name);
	sec = slurp(bin, &size);
	text = slurp(txt, &tsize);
	CHECK(sec && text, "%s: test data missing under %s", name, data_dir);
	if (!sec || !text)
		return;
	CHECK(dsi_uw_sframe__init(&sf, sec, size, vaddr, &why) == 0, "%s: init: %s", name, why);
	CHECK(sf.version == version, "%s: version %d", name, sf.version);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long long a, b;
		char cfa[32], fp[32], ra[32];
		struct uw_sframe_row r;

		if (sscanf(line, " func idx [%*u]: pc = %llx, size = %llu", &a, &b) == 2) {
			fpc = a;
			fsize = b;
			fdes++;
			have_prev = false;
			/* past the end: not this function's rule */
			CHECK(dsi_uw_sframe__find(&sf, fpc + fsize, &r, &why) >= 0, "%s: past %llx", name, a + b);
			continue;
		}
		if (strstr(line, "STARTPC")) {
			mask = strstr(line, "[m]") != NULL;
			continue;
		}
		if (sscanf(line, " %llx %31s %31s %31s", &a, cfa, fp, ra) != 4 || (strncmp(cfa, "sp+", 3) && strncmp(cfa, "fp+", 3)))
			continue;
		{
			uint64_t at = mask ? fpc + a : a;
			int rc = dsi_uw_sframe__find(&sf, at, &r, &why);
			bool has_fp = fp[0] == 'c';
			int fpoff = has_fp ? atoi(fp + 1) : 0;

			rows++;
			CHECK(rc == 1, "%s: no row at %#llx (%s)", name, (unsigned long long)at, rc < 0 ? why : "none");
			if (rc != 1)
				continue;
			CHECK(r.start == at, "%s: row at %#llx starts at %#llx", name, (unsigned long long)at,
			      (unsigned long long)r.start);
			CHECK(r.sp_based == (cfa[0] == 's') && r.cfa_off == atoi(cfa + 3),
			      "%s: %#llx: CFA %s, decoded %s+%d", name, (unsigned long long)at, cfa,
			      r.sp_based ? "sp" : "fp", r.cfa_off);
			CHECK(r.has_fp == has_fp && (!has_fp || r.fp_off == fpoff), "%s: %#llx: FP %s, decoded %d/%d",
			      name, (unsigned long long)at, fp, r.has_fp, r.fp_off);
			CHECK(r.ra_off == -8 && !r.outermost, "%s: %#llx: RA at CFA%+d", name, (unsigned long long)at, r.ra_off);
			/* the previous row holds up to this one's start */
			if (have_prev && !mask && at > prev.at) {
				struct uw_sframe_row q;

				CHECK(dsi_uw_sframe__find(&sf, at - 1, &q, &why) == 1 && q.start == prev.at &&
				      q.cfa_off == prev.cfa && q.sp_based == prev.sp,
				      "%s: %#llx (the row before %#llx)", name, (unsigned long long)(at - 1),
				      (unsigned long long)at);
			}
			prev.at = at;
			prev.sp = r.sp_based;
			prev.cfa = r.cfa_off;
			have_prev = true;
		}
	}
	CHECK(fdes >= 8 && rows >= 20, "%s: only %d functions, %d rows checked", name, fdes, rows);

	/* hostile copies: every truncation and every single-byte change ends cleanly */
	{
		uint8_t *copy = malloc(size);
		int refused = 0;

		for (size_t n = 0; n < size; n++) {
			struct uw_sframe s2;
			struct uw_sframe_row r;

			memcpy(copy, sec, n);
			if (dsi_uw_sframe__init(&s2, copy, n, vaddr, &why) == 0)
				for (uint64_t pc = vaddr - 0x1200; pc < vaddr; pc += 3)
					(void)dsi_uw_sframe__find(&s2, pc, &r, &why);
			else
				refused++;
		}
		CHECK(refused >= 28, "%s: truncations to under the header accepted", name);
		for (size_t i = 0; i < size; i++)
			for (int bit = 0; bit < 8; bit++) {
				struct uw_sframe s2;
				struct uw_sframe_row r;

				memcpy(copy, sec, size);
				copy[i] ^= (uint8_t)(1u << bit);
				if (dsi_uw_sframe__init(&s2, copy, size, vaddr, &why) == 0)
					for (uint64_t pc = vaddr - 0x1200; pc < vaddr; pc += 7)
						(void)dsi_uw_sframe__find(&s2, pc, &r, &why);
			}
		passed++;
		free(copy);
	}
	free(sec);
	free(text);
}

static void check_expr(void)
{
	uint8_t stack[64] = { 0 };
	struct uw_mem mem = { .stack = stack, .base = 0x1000, .size = sizeof(stack), .word = 8 };
	uint64_t regs[UW_MAX_REGS] = { 0 }, out = 0, v = 0xdeadbeef;
	bool isval;
	/* glibc's PLT CFA: rsp + 8 + ((rip & 15) >= 11) * 8 */
	struct uw_op plt[] = {
		{ DW_OP_breg7, 8, 0, 0 }, { DW_OP_breg16, 0, 0, 2 }, { DW_OP_lit15, 0, 0, 4 }, { DW_OP_and, 0, 0, 5 },
		{ DW_OP_lit11, 0, 0, 6 }, { DW_OP_ge, 0, 0, 7 }, { DW_OP_lit3, 0, 0, 8 }, { DW_OP_shl, 0, 0, 9 },
		{ DW_OP_plus, 0, 0, 10 },
	};
	struct uw_op deref[] = { { DW_OP_breg6, (uint64_t)-8, 0, 0 }, { DW_OP_deref, 0, 0, 2 } };
	struct uw_op loop[] = { { DW_OP_skip, (uint64_t)-3, 0, 0 } };
	struct uw_op out_of_stack[] = { { DW_OP_const8u, 0x5000, 0, 0 }, { DW_OP_deref, 0, 0, 9 } };
	struct uw_op cfa_val[] = { { DW_OP_call_frame_cfa, 0, 0, 0 }, { DW_OP_lit16, 0, 0, 1 }, { DW_OP_minus, 0, 0, 2 },
				   { DW_OP_stack_value, 0, 0, 3 } };
	uint32_t valid = (1u << 7) | (1u << 16) | (1u << 6);

	regs[7] = 0x1000;
	regs[16] = 0x40100a;
	CHECK(dsi_uw_expr__eval(plt, 9, regs, valid, false, 0, &mem, &out, &isval) == 0 && out == 0x1008,
	      "PLT CFA at rip&15 = 10: %#" PRIx64, out);
	regs[16] = 0x40100b;
	CHECK(dsi_uw_expr__eval(plt, 9, regs, valid, false, 0, &mem, &out, &isval) == 0 && out == 0x1010,
	      "PLT CFA at rip&15 = 11: %#" PRIx64, out);
	regs[6] = 0x1010;
	memcpy(stack + 8, &v, 8);
	CHECK(dsi_uw_expr__eval(deref, 2, regs, valid, false, 0, &mem, &out, &isval) == 0 && out == v,
	      "realigned CFA through rbp: %#" PRIx64, out);
	CHECK(dsi_uw_expr__eval(deref, 2, regs, 1u << 7, false, 0, &mem, &out, &isval) == -EINVAL, "unknown register");
	CHECK(dsi_uw_expr__eval(loop, 1, regs, valid, false, 0, &mem, &out, &isval) == -EINVAL, "a loop ends");
	CHECK(dsi_uw_expr__eval(out_of_stack, 2, regs, valid, false, 0, &mem, &out, &isval) == -EFAULT, "outside the snapshot");
	CHECK(dsi_uw_expr__eval(cfa_val, 4, regs, valid, true, 0x2000, &mem, &out, &isval) == 0 && out == 0x1ff0 && isval,
	      "CFA - 16 as a value: %#" PRIx64, out);
	mem.word = 4;
	regs[6] = 0x1010;
	CHECK(dsi_uw_expr__eval(deref, 2, regs, valid, false, 0, &mem, &out, &isval) == 0 && out == 0xdeadbeef,
	      "i386: 4-byte deref: %#" PRIx64, out);
}

/* ---- the walk of this program's own stack ---------------------------- */

#ifdef __clang__
#define NOIPA __attribute__((noinline))   /* clang has no noipa; its calls below are not tail calls */
#else
#define NOIPA __attribute__((noinline, noipa))
#endif

static uint64_t snap_regs[4];   /* BX, BP, SP, IP: perf registers 1, 6, 7, 8 */
static uint8_t *snap_stack;
static uint64_t snap_size;
static volatile int sink;

/* reads the live stack, redzones of a sanitized build included: not instrumented */
__attribute__((no_sanitize_address)) NOIPA static void snap_copy(uint64_t ip, uint64_t sp, uint64_t bp, uint64_t bx,
								  uint64_t stack_end)
{
	const volatile uint8_t *from = (const volatile uint8_t *)(uintptr_t)sp;

	snap_regs[0] = bx;
	snap_regs[1] = bp;
	snap_regs[2] = sp;
	snap_regs[3] = ip;
	snap_size = stack_end - sp < 65536 ? stack_end - sp : 65536;
	snap_stack = malloc(snap_size);
	for (uint64_t i = 0; i < snap_size; i++)
		snap_stack[i] = from[i];
}

static uint64_t stack_end;

NOIPA static void level3(int n)
{
	uint64_t ip, sp, bp, bx;

	__asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2\n\tmov %%rbx, %3"
			 : "=r"(ip), "=r"(sp), "=r"(bp), "=r"(bx));
	snap_copy(ip, sp, bp, bx, stack_end);
	sink += n;
}
NOIPA static void level2(int n) { level3(n + 1); sink++; }
NOIPA static void level1(int n) { volatile char pad[200]; pad[n % 200] = 1; level2(n + pad[3]); sink++; }

static struct ds_map self_map;

static const struct ds_map *find_self(void *ctx, uint64_t addr)
{
	(void)ctx;
	return addr >= self_map.start && addr < self_map.end ? &self_map : NULL;
}

NOIPA static void check_self_walk(void)
{
	char exe[PATH_MAX], line[PATH_MAX + 128];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	FILE *maps = fopen("/proc/self/maps", "r");
	struct ds_symbols_opts so = { .no_inline = true };
	struct ds_symbols *syms;
	struct ds_unwinder *u;
	uint64_t ips[64];
	struct ds_unwind_result res;
	const char *want[] = { "level3", "level2", "level1", "check_self_walk", "main" };
	struct ds_unwind_regs in;

	CHECK(n > 0 && maps, "no /proc/self");
	if (n <= 0 || !maps)
		return;
	exe[n] = 0;
	while (fgets(line, sizeof(line), maps)) {
		unsigned long long s, e, off;
		char perm[8], path[PATH_MAX];

		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %4095s", &s, &e, perm, &off, path) < 4)
			continue;
		if (strstr(line, "[stack]"))
			stack_end = e;
		if (perm[2] == 'x' && !strcmp(path, exe))
			self_map = (struct ds_map){ .start = s, .end = e, .pgoff = off, .name = exe };
	}
	fclose(maps);
	CHECK(self_map.start && stack_end, "no text map of %s or no [stack]", exe);
	if (!self_map.start || !stack_end)
		return;
	syms = ds_symbols__new(&so);
	self_map.dso = ds_symbols__dso(syms, exe, NULL, 0);
	level1(5);
	u = ds_unwinder__new(NULL);
	in = (struct ds_unwind_regs){ .abi = DS_REGS_ABI_64, .mask = (1u << DS_X86_BX) | (1u << DS_X86_BP) |
				      (1u << DS_X86_SP) | (1u << DS_X86_IP), .regs = snap_regs, .nr_regs = 4,
				      .stack = snap_stack, .stack_size = snap_size };
	ds_unwinder__unwind_regs(u, find_self, NULL, &in, ips, 64, &res);
	CHECK(res.nr >= 5, "self walk: %zu frames, ended %s", res.nr, ds_unwind_end__name(res.end));
	for (size_t i = 0; i < 5 && i < res.nr; i++) {
		struct ds_frame f[8];
		size_t k = ds_dso__resolve(self_map.dso, ips[i] - self_map.start + self_map.pgoff, f, 8);
		const char *name = k ? f[k - 1].name : NULL;

		CHECK(name && !strcmp(name, want[i]), "self walk frame %zu: %s, want %s", i, name ? name : "?", want[i]);
	}
	CHECK(res.steps[DS_UNWIND_CFI] >= 4, "self walk: %u CFI steps", res.steps[DS_UNWIND_CFI]);

	/* the same snapshot, cut: the walk leaves it and says so */
	in.stack_size = 24;
	ds_unwinder__unwind_regs(u, find_self, NULL, &in, ips, 64, &res);
	CHECK(res.end == DS_UNWIND_END_LEFT_STACK && res.nr >= 1 && res.nr < 4, "cut snapshot: %zu frames, %s",
	      res.nr, ds_unwind_end__name(res.end));
	/* a frame limit */
	in.stack_size = snap_size;
	ds_unwinder__unwind_regs(u, find_self, NULL, &in, ips, 2, &res);
	CHECK(res.end == DS_UNWIND_END_MAX_FRAMES && res.nr == 2, "limit: %zu frames, %s", res.nr,
	      ds_unwind_end__name(res.end));
	/* hostile stacks: garbage, and every word a return address into level2 */
	{
		uint64_t *junk = malloc(snap_size);
		uint64_t ret2 = ips[1] + 1;

		srand(7);
		for (int round = 0; round < 200; round++) {
			for (size_t i = 0; i < snap_size / 8; i++)
				junk[i] = round & 1 ? ret2 : ((uint64_t)rand() << 33) ^ (uint64_t)rand() ^
								 (round & 2 ? self_map.start : 0);
			in.stack = junk;
			ds_unwinder__unwind_regs(u, find_self, NULL, &in, ips, 64, &res);
			if (res.nr > 64 || res.end >= DS_UNWIND_END__NR)
				break;
		}
		CHECK(res.nr <= 64 && res.end < DS_UNWIND_END__NR, "hostile stacks end cleanly");
		free(junk);
	}
	/* no registers */
	in.regs = NULL;
	ds_unwinder__unwind_regs(u, find_self, NULL, &in, ips, 64, &res);
	CHECK(res.end == DS_UNWIND_END_NO_REGS && !res.nr, "no registers");
	ds_unwinder__delete(u);
	ds_symbols__delete(syms);
	free(snap_stack);
}

/* The cached image of @kind: an ELF of @class and @machine, filed under its own build-id. */
static void check_vdso_image(const char *dir, enum ds_vdso_kind kind, int class, int machine)
{
	uint8_t bid[20];
	size_t len = 0, size = 0;
	char path[PATH_MAX], rel[64];
	unsigned char *img;
	int err = ds_vdso__keep(dir, kind, bid, &len);

	if (err == -ENOEXEC && kind == DS_VDSO_32) {
		printf("SKIPPED the [vdso32] image: *** this kernel runs no i386 program ***\n");
		return;
	}
	CHECK(!err && len == 20, "%s kept: %s", ds_vdso__name(kind), strerror(-err));
	if (err)
		return;
	CHECK(!ds_vdso__cache_path(dir, kind, bid, len, path, sizeof(path)), "cache path");
	snprintf(rel, sizeof(rel), "%s/%02x", ds_vdso__name(kind), bid[0]);
	CHECK(strstr(path, rel) && !strcmp(path + strlen(path) - 5, "/vdso"), "%s: filed as %s", ds_vdso__name(kind), path);
	img = read_whole(path, &size);
	CHECK(img && size > sizeof(Elf64_Ehdr) && !memcmp(img, ELFMAG, SELFMAG) && img[EI_CLASS] == class &&
	      (img[18] | img[19] << 8) == machine, "%s: not an ELF of class %d, machine %d", path, class, machine);
	/* the build-id it is filed under is the image's own: in its notes */
	CHECK(img && memmem(img, size, bid, len), "%s: its build-id is not in it", path);
	free(img);
	/* kept once: a second call finds it and gives the same build-id */
	{
		uint8_t again[20];
		size_t n = 0;

		CHECK(!ds_vdso__keep(dir, kind, again, &n) && n == len && !memcmp(again, bid, len), "kept again");
	}
	snprintf(path, sizeof(path), "%s/.build-id/%02x", dir, bid[0]);
	CHECK(!access(path, F_OK), "perf's .build-id/ link: %s", path);
}

static void check_vdso(void)
{
	char dir[] = "/tmp/dstack-vdso-XXXXXX", cmd[64];

	CHECK(mkdtemp(dir), "mkdtemp");
	check_vdso_image(dir, DS_VDSO_64, ELFCLASS64, EM_X86_64);
	check_vdso_image(dir, DS_VDSO_32, ELFCLASS32, EM_386);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CHECK(system(cmd) == 0, "%s", cmd);
}

int main(int argc, char **argv)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	(void)argc;
	(void)argv;
	/* BUILD/tests/test_unwind -> the checkout's tests/unit/data */
	if (n > 0) {
		exe[n] = 0;
		snprintf(data_dir, sizeof(data_dir), "%s/../../tests/unit/data", dirname(exe));
	}
	check_sframe("sframe-v2", 0x2198, 2);
	check_sframe("sframe-v3", 0x2190, 3);
	check_expr();
	check_self_walk();
	check_vdso();
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
