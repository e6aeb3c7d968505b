// SPDX-License-Identifier: MIT
/*
 * Unit test of the CFI rows and the walk through them, on .eh_frame as
 * this machine's own assembler and linker write it: tests/unit/data/
 * cfi-rows.s is linked at test time (cc -shared -nostdlib) into a scratch
 * directory, then its rows are read through the unwinder's private API and
 * walked with hand-made registers and stacks.  It covers one-instruction
 * rows (gcc's epilogue between remember_state and restore_state, in either
 * order of lookups), expression rules (the PLT's CFA expression, ld's own
 * PLT, a signal trampoline's DW_CFA_def_cfa_expression, DW_CFA_expression
 * and DW_CFA_val_expression), a return address left in a register, and
 * zero return addresses (by CFI: the end; by the frame pointer: perf's
 * ffffffffffffffff frame); and the same object linked by lld, whose text
 * segment lies a page past its file offset.  tests/unit/data/plt-calls.s,
 * linked by lld and by ld without CFI for their PLTs, is walked from every
 * instruction a lazy call runs through its stub (followed as the CPU would,
 * through the GOT's link-time slots) to the resolver's jump.
 */
#include <dwarf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dstack/symbols.h"
#include "dstack/unwind.h"
#include "unwind/unwind_int.h"
#include "check.h"

#define BASE 0x7f1200000000ull   /* where the test "maps" the object */

static Elf *elf;
static struct ds_map obj_map;

/* The address of symbol @name in the linked object; 0 (and a failure) if none. */
static uint64_t sym(const char *name)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;
			const char *n;

			if (gelf_getsym(d, (int)i, &s) && (n = elf_strptr(elf, sh.sh_link, s.st_name)) && !strcmp(n, name))
				return s.st_value;
		}
	}
	CHECK(0, "no symbol %s in the object", name);
	return 0;
}

static const struct ds_map *find_obj(void *ctx, uint64_t addr)
{
	(void)ctx;
	return addr >= obj_map.start && addr < obj_map.end ? &obj_map : NULL;
}

/* A walk from @ip, @sp, @bp (and rcx) over @words of stack at @sp. */
struct run {
	uint64_t ips[16];
	struct ds_unwind_result res;
};

static void walk(struct ds_unwinder *u, uint64_t ip, uint64_t sp, uint64_t bp, uint64_t cx,
		 const uint64_t *words, size_t nwords, struct run *r)
{
	/* perf registers CX (2), BP (6), SP (7), IP (8), lowest bit first */
	uint64_t regs[4] = { cx, bp, sp, ip };
	struct ds_unwind_regs in = {
		.abi = DS_REGS_ABI_64,
		.mask = (1u << DS_X86_CX) | (1u << DS_X86_BP) | (1u << DS_X86_SP) | (1u << DS_X86_IP),
		.regs = regs, .nr_regs = 4, .stack = words, .stack_size = nwords * 8,
	};

	memset(r, 0, sizeof(*r));
	ds_unwinder__unwind_regs(u, find_obj, NULL, &in, r->ips, 16, &r->res);
}

static void expect(const struct run *r, const uint64_t *want, size_t n, enum ds_unwind_end end, const char *what)
{
	bool same = r->res.nr == n;

	for (size_t i = 0; same && i < n; i++)
		same = r->ips[i] == want[i];
	CHECK(same, "%s: %zu frames, want %zu (first %#" PRIx64 ", second %#" PRIx64 ")", what, r->res.nr, n,
	      r->res.nr > 0 ? r->ips[0] : 0, r->res.nr > 1 ? r->ips[1] : 0);
	CHECK(r->res.end == end, "%s: ends %s, want %s", what, ds_unwind_end__name(r->res.end),
	      ds_unwind_end__name(end));
}

#define SP 0x7ffd00001000ull

/*
 * libdw says the row after gcc's restore_state starts where the
 * remember_state was (the epilogue's first row): the row kept must start at
 * the restore, or the epilogue's pcs take the body's CFA.  Both orders of
 * lookup: the epilogue's one-instruction row first, and the row after the
 * restore first.
 */
static void check_one_instruction_rows(Dwarf_CFI *cfi)
{
	uint64_t pop_rbp = sym("epi_pop_rbp"), body2 = sym("epi_body2"), late = sym("epi_body2_late");
	uint64_t ret_outer = sym("outer_body") + 5;   /* after its call */
	struct uw_opstore ops = { 0 };
	struct uw_row row;
	struct run r;

	CHECK(dsi_uw_cfi__row(cfi, late, 17, 16, &row, &ops) == 1 && row.start == body2 && row.cfa_off == 32,
	      "row at epi_body2_late: [%#" PRIx64 ", %#" PRIx64 ") CFA rsp+%" PRId64 ", want it to start at %#" PRIx64,
	      row.start, row.end, row.cfa_off, body2);
	CHECK(dsi_uw_cfi__row(cfi, pop_rbp, 17, 16, &row, &ops) == 1 && row.start == pop_rbp &&
	      row.end == pop_rbp + 1 && row.cfa_off == 16, "the one-instruction row of pop %%rbp: [%#" PRIx64
	      ", %#" PRIx64 ") CFA rsp+%" PRId64, row.start, row.end, row.cfa_off);
	free(ops.v);

	for (int order = 0; order < 2; order++) {
		struct ds_unwinder *u = ds_unwinder__new(NULL);
		/* at pop %rbp: [sp] the saved rbp, [sp + 8] the return address */
		uint64_t leaf[] = { 0x1111, BASE + ret_outer };
		/* in the body after the restore: CFA rsp+32, the return address at sp + 24 */
		uint64_t body[] = { 0, 0x2222, 0x3333, BASE + ret_outer };
		uint64_t want_leaf[] = { BASE + pop_rbp, BASE + ret_outer - 1 };
		uint64_t want_body[] = { BASE + late, BASE + ret_outer - 1 };

		for (int k = 0; k < 2; k++) {
			if ((k == 0) == (order == 0)) {
				walk(u, BASE + pop_rbp, SP, 0, 0, leaf, 2, &r);
				expect(&r, want_leaf, 2, DS_UNWIND_END_OUTERMOST, "leaf at pop %rbp");
			} else {
				walk(u, BASE + late, SP, 0, 0, body, 4, &r);
				expect(&r, want_body, 2, DS_UNWIND_END_OUTERMOST, "leaf after restore_state");
			}
		}
		ds_unwinder__delete(u);
	}
}

/*
 * Expression rules: the PLT's CFA (ours and the one ld wrote for the
 * object's own .plt), a signal trampoline (its caller's pc is exact), and
 * a value expression evaluated to its value.
 */
static void check_expressions(Dwarf_CFI *cfi)
{
	struct ds_unwinder *u = ds_unwinder__new(NULL);
	uint64_t plt = sym("plt_like"), tramp = sym("sig_tramp"), handler = sym("handler_body");
	uint64_t interrupted = sym("outer_interrupted"), ret_outer = sym("outer_body") + 5;
	struct uw_opstore ops = { 0 };
	struct uw_row row;
	struct run r;

	/* rip & 15 below 11: CFA rsp+8; from 11 on: rsp+16 */
	{
		uint64_t low[] = { BASE + ret_outer, 0 }, high[] = { 0, BASE + ret_outer };
		uint64_t want[] = { BASE + plt + 2, BASE + ret_outer - 1 };

		walk(u, BASE + plt + 2, SP, 0, 0, low, 2, &r);
		expect(&r, want, 2, DS_UNWIND_END_OUTERMOST, "PLT-like CFA at +2");
		want[0] = BASE + plt + 12;
		walk(u, BASE + plt + 12, SP, 0, 0, high, 2, &r);
		expect(&r, want, 2, DS_UNWIND_END_OUTERMOST, "PLT-like CFA at +12");
	}
	/* ld's .plt: its stub's FDE ends with the same expression */
	{
		Dwarf_Addr pltsec = 0;
		Elf_Scn *scn = NULL;
		GElf_Shdr sh;
		size_t shstrndx;

		elf_getshdrstrndx(elf, &shstrndx);
		while ((scn = elf_nextscn(elf, scn))) {
			const char *name = gelf_getshdr(scn, &sh) ? elf_strptr(elf, shstrndx, sh.sh_name) : NULL;

			if (name && !strcmp(name, ".plt"))
				pltsec = sh.sh_addr;
		}
		CHECK(pltsec && dsi_uw_cfi__row(cfi, pltsec + 16 + 11, 17, 16, &row, &ops) == 1 &&
		      row.cfa == UW_CFA_EXPR, "ld's .plt at %#" PRIx64 ": a CFA expression", (uint64_t)pltsec);
		if (pltsec && row.cfa == UW_CFA_EXPR) {
			uint64_t regs[UW_MAX_REGS] = { 0 }, cfa = 0;
			uint8_t stack[32] = { 0 };
			struct uw_mem mem = { .stack = stack, .base = SP, .size = sizeof(stack), .word = 8 };
			bool isval;

			regs[7] = SP;
			regs[16] = pltsec + 16 + 11;
			CHECK(!dsi_uw_expr__eval(ops.v + row.cfa_expr, row.cfa_nexpr, regs, (1u << 7) | (1u << 16), false,
						 0, &mem, &cfa, &isval) && cfa == SP + 16,
			      "ld's .plt CFA at entry + 11: %#" PRIx64, cfa);
			regs[16] = pltsec + 16 + 10;
			CHECK(!dsi_uw_expr__eval(ops.v + row.cfa_expr, row.cfa_nexpr, regs, (1u << 7) | (1u << 16), false,
						 0, &mem, &cfa, &isval) && cfa == SP + 8,
			      "ld's .plt CFA at entry + 10: %#" PRIx64, cfa);
		}
	}
	/* the trampoline: a value expression for rbx */
	CHECK(dsi_uw_cfi__row(cfi, tramp, 17, 16, &row, &ops) == 1 && row.signal && row.cfa == UW_CFA_EXPR &&
	      row.regs[16].loc == UW_EXPR && row.regs[7].loc == UW_EXPR && row.regs[3].loc == UW_VAL_EXPR,
	      "the trampoline's row: signal %d, CFA kind %d, rip %d, rsp %d, rbx %d", row.signal, row.cfa,
	      row.regs[16].loc, row.regs[7].loc, row.regs[3].loc);
	if (row.regs[3].loc == UW_VAL_EXPR) {
		uint64_t regs[UW_MAX_REGS] = { 0 }, v = 0;
		uint8_t stack[8] = { 0 };
		struct uw_mem mem = { .stack = stack, .base = SP, .size = sizeof(stack), .word = 8 };
		bool isval;

		regs[7] = SP;
		CHECK(!dsi_uw_expr__eval(ops.v + row.regs[3].expr, row.regs[3].nexpr, regs, 1u << 7, true, 0, &mem, &v,
					 &isval) && v == SP + 16, "rbx by DW_CFA_val_expression: %#" PRIx64, v);
	}
	free(ops.v);
	/*
	 * handler -> trampoline (its return address, looked up at pc - 1 but
	 * reported exact) -> the interrupted pc (exact), whose frame is the
	 * outermost.  The saved context: rsp at +160, rip at +168 of the
	 * trampoline's sp.
	 */
	{
		uint64_t st[40] = { 0 };
		uint64_t tsp = SP + 8, isp = SP + 0x100;
		uint64_t want[] = { BASE + handler, BASE + tramp, BASE + interrupted };

		st[0] = BASE + tramp;                 /* the handler's return address */
		st[1 + 160 / 8] = isp;                /* the context's rsp */
		st[1 + 168 / 8] = BASE + interrupted; /* and rip */
		walk(u, BASE + handler, SP, 0, 0, st, 40, &r);
		expect(&r, want, 3, DS_UNWIND_END_OUTERMOST, "through the signal trampoline");
		(void)tsp;
	}
	ds_unwinder__delete(u);
}

/*
 * The return address in a register with nothing left on the stack (CFA
 * rsp+0, libgcc's _Unwind_RaiseException jumping to a landing pad): the
 * caller's sp is the frame's own, and that is no loop for a leaf.
 */
static void check_register_return(void)
{
	struct ds_unwinder *u = ds_unwinder__new(NULL);
	uint64_t jmp = sym("jump_out_jmp"), ret_outer = sym("outer_body") + 5;
	uint64_t st[2] = { 0 };
	uint64_t want[] = { BASE + jmp, BASE + ret_outer - 1 };
	struct run r;

	walk(u, BASE + jmp, SP, 0, BASE + ret_outer, st, 2, &r);
	expect(&r, want, 2, DS_UNWIND_END_OUTERMOST, "return address in rcx, CFA rsp+0");
	ds_unwinder__delete(u);
}

/*
 * Zero return addresses.  By CFI, 0 is the end (libdw's pc undefined): no
 * frame for it.  By the frame pointer (a pc with no CFI), perf's libdw
 * fallback takes the 0 as a pc and reports it at pc - 1: the frame
 * ffffffffffffffff, then goes on by the frame pointer it read (0: the end).
 * A return address of 1 is a frame at 0: counted, not reported.
 */
static void check_zero_return(void)
{
	struct ds_unwinder *u = ds_unwinder__new(NULL);
	uint64_t epi_start = sym("epi"), nocfi = sym("nocfi_body");
	struct run r;

	{
		/* at epi's first instruction the return address is at sp */
		uint64_t st[] = { 0 };
		uint64_t want[] = { BASE + epi_start };

		walk(u, BASE + epi_start, SP, 0, 0, st, 1, &r);
		expect(&r, want, 1, DS_UNWIND_END_OUTERMOST, "CFI's return address 0");
	}
	{
		/* nocfi with rbp at a frame record { saved rbp 0, return address 0 } */
		uint64_t st[] = { 0, 0, 0 };
		uint64_t want[] = { BASE + nocfi, UINT64_MAX };

		walk(u, BASE + nocfi, SP, SP + 8, 0, st, 3, &r);
		expect(&r, want, 2, DS_UNWIND_END_NO_INFO, "the frame pointer's return address 0");
	}
	{
		/* the same record one level up: the walk goes on from the frame pointer read */
		uint64_t ret_outer = sym("outer_body") + 5;
		uint64_t st[] = { SP + 24, 0, 0, 0, BASE + ret_outer };
		uint64_t want[] = { BASE + nocfi, UINT64_MAX, BASE + ret_outer - 1 };

		walk(u, BASE + nocfi, SP, SP, 0, st, 5, &r);
		expect(&r, want, 3, DS_UNWIND_END_OUTERMOST, "a 0 in the frame-pointer chain, then a caller");
	}
	{
		/* epi at its first instruction returning to 1: pc - 1 = 0 is no frame; the walk goes on by rbp */
		uint64_t st[] = { 1, 0 };
		uint64_t want[] = { BASE + epi_start };

		walk(u, BASE + epi_start, SP, 0, 0, st, 2, &r);
		expect(&r, want, 1, DS_UNWIND_END_NO_INFO, "a return address of 1");
	}
	ds_unwinder__delete(u);
}

/* cfi-rows.s linked into @dir (@ld: a -fuse-ld= value, or NULL); its path in @out.  false when the toolchain cannot. */
static bool link_object(const char *src, const char *dir, const char *ld, char *out, size_t size)
{
	char cmd[PATH_MAX * 8];
	const char *cc = getenv("CC") && *getenv("CC") ? getenv("CC") : "cc";

	snprintf(out, size, "%s/cfi-rows%s%s.so", dir, ld ? "-" : "", ld ? ld : "");
	snprintf(cmd, sizeof(cmd), "%s -shared -nostdlib %s%s -o '%s' '%s' 2>/dev/null", cc, ld ? "-fuse-ld=" : "",
		 ld ? ld : "", out, src);
	return system(cmd) == 0;
}

/*
 * lld places the text segment a page past its file offset (LOAD offset
 * 0x680, vaddr 0x1680): the kernel maps it at base + 0x1000 from file
 * offset 0, so the map's start less its offset is not the binary's base.
 * perf prints such a frame (then looks its CFI up a page off); ours is
 * reported and walked by the object's own rows.
 */
static void check_lld_text(const char *src, const char *dir, struct ds_symbols *syms)
{
	char obj[PATH_MAX * 2];
	struct ds_unwinder *u;
	uint64_t pop_rbp, ret_outer, text = 0;
	Elf *saved = elf;
	struct ds_map saved_map = obj_map;
	size_t nph = 0;
	int fd;

	if (!link_object(src, dir, "lld", obj, sizeof(obj))) {
		printf("SKIPPED lld's layout: *** cc -fuse-ld=lld cannot link here ***\n");
		return;
	}
	fd = open(obj, O_RDONLY);
	elf = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
	if (!elf || elf_getphdrnum(elf, &nph)) {
		CHECK(0, "cannot read %s", obj);
		elf = saved;
		return;
	}
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD && (ph.p_flags & PF_X) && !text) {
			text = ph.p_vaddr & ~0xfffull;
			CHECK(ph.p_vaddr - ph.p_offset == 0x1000, "lld's text LOAD: offset %#" PRIx64 ", vaddr %#" PRIx64,
			      (uint64_t)ph.p_offset, (uint64_t)ph.p_vaddr);
		}
	}
	pop_rbp = sym("epi_pop_rbp");
	ret_outer = sym("outer_body") + 5;
	/* the text map: from the page of its file offset (0) at the page of its address */
	obj_map = (struct ds_map){ .start = BASE + text, .end = BASE + text + 0x1000, .pgoff = 0, .name = obj,
				   .dso = ds_symbols__dso(syms, obj, NULL, 0) };
	u = ds_unwinder__new(NULL);
	{
		uint64_t leaf[] = { 0x1111, BASE + ret_outer };
		uint64_t want[] = { BASE + pop_rbp, BASE + ret_outer - 1 };
		struct run r;

		walk(u, BASE + pop_rbp, SP, 0, 0, leaf, 2, &r);
		expect(&r, want, 2, DS_UNWIND_END_OUTERMOST, "lld's text segment, a page past its offset");
	}
	ds_unwinder__delete(u);
	elf_end(elf);
	close(fd);
	unlink(obj);
	elf = saved;
	obj_map = saved_map;
}

/*
 * PLT stubs without CFI.  Each call of plt-calls.s's caller is followed
 * instruction by instruction as the CPU runs it on a lazy first call (the
 * GOT slots hold their link-time values: back into the PLT), with the
 * stack it has at each (the return address under what the stub pushed):
 * from each, the walk must reach the caller's return address and end
 * there (the caller's CFI finds 0 above it).  "Process" addresses are
 * BASE + file offset: one map of the whole file.
 */
struct image {
	Elf *elf;
	int fd;
};

/* The file offset of @vaddr (in an allocated section with contents) into *off. */
static bool image_off(const struct image *im, uint64_t vaddr, uint64_t *off)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(im->elf, scn)))
		if (gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_ALLOC) && sh.sh_type != SHT_NOBITS &&
		    vaddr >= sh.sh_addr && vaddr - sh.sh_addr < sh.sh_size) {
			*off = sh.sh_offset + (vaddr - sh.sh_addr);
			return true;
		}
	return false;
}

static bool image_read(const struct image *im, uint64_t vaddr, void *buf, size_t n)
{
	uint64_t off;

	return image_off(im, vaddr, &off) && pread(im->fd, buf, n, (off_t)off) == (ssize_t)n;
}

/* Walk from @pc with @pushed words over the return address @ra (vaddrs). */
static void check_stub_frame(struct ds_unwinder *u, const struct image *im, uint64_t pc, const uint64_t *pushed,
			     size_t npushed, uint64_t ra, const char *what)
{
	uint64_t st[8], pc_off = 0, ra_off = 0, want[2];
	char buf[160];
	struct run r;

	if (!image_off(im, pc, &pc_off) || !image_off(im, ra, &ra_off) || npushed > 5) {
		CHECK(0, "%s: pc %#" PRIx64 " or return address %#" PRIx64 " in no section", what, pc, ra);
		return;
	}
	for (size_t i = 0; i < npushed; i++)
		st[i] = pushed[npushed - 1 - i];
	st[npushed] = BASE + ra_off;
	st[npushed + 1] = 0;
	want[0] = BASE + pc_off;
	want[1] = BASE + ra_off - 1;
	walk(u, BASE + pc_off, SP, 0x5555, 0, st, npushed + 2, &r);
	snprintf(buf, sizeof(buf), "%s: stub at %#" PRIx64 ", %zu pushed", what, pc, npushed);
	expect(&r, want, 2, DS_UNWIND_END_OUTERMOST, buf);
	CHECK(r.res.steps[DS_UNWIND_PLT] == 1, "%s: %u PLT steps, want 1", buf, r.res.steps[DS_UNWIND_PLT]);
}

/* Run the lazy call at @call (an e8 rel32) through its stub, checking each instruction's walk. */
static unsigned follow_call(struct ds_unwinder *u, const struct image *im, uint64_t call, const char *what)
{
	uint8_t b[8];
	int32_t rel;
	uint64_t pc, ra = call + 5, pushed[5];
	size_t np = 0;
	unsigned visited = 0;

	if (!image_read(im, call, b, 5) || b[0] != 0xe8) {
		CHECK(0, "%s: no call at %#" PRIx64, what, call);
		return 0;
	}
	memcpy(&rel, b + 1, 4);
	pc = ra + (uint64_t)(int64_t)rel;
	for (int step = 0; step < 12; step++) {
		size_t p = 0;

		if (!image_read(im, pc, b, sizeof(b))) {
			CHECK(0, "%s: stub code at %#" PRIx64 " unreadable", what, pc);
			return visited;
		}
		check_stub_frame(u, im, pc, pushed, np, ra, what);
		visited++;
		if (b[0] == 0xf3 && b[1] == 0x0f && b[2] == 0x1e && b[3] == 0xfa) {        /* endbr64 */
			pc += 4;
			continue;
		}
		if (b[0] == 0x68 && np < 5) {                                               /* push imm32 */
			uint32_t imm;

			memcpy(&imm, b + 1, 4);
			pushed[np++] = imm;
			pc += 5;
			continue;
		}
		p = b[0] == 0xf2;                                                           /* bnd */
		memcpy(&rel, b + p + 2, 4);
		if (b[p] == 0xff && (b[p + 1] == 0x35 || b[p + 1] == 0x25)) {               /* push / jmp *rip+d */
			uint64_t slot = pc + p + 6 + (uint64_t)(int64_t)rel, val = 0;

			if (!image_read(im, slot, &val, 8)) {
				CHECK(0, "%s: GOT slot %#" PRIx64 " unreadable", what, slot);
				return visited;
			}
			if (b[p + 1] == 0x35 && np < 5) {
				pushed[np++] = val;
				pc += p + 6;
				continue;
			}
			if (!val)       /* the resolver's slot, 0 until ld.so fills it */
				return visited;
			pc = val;
			continue;
		}
		if (b[p] == 0xe9) {                                                         /* jmp rel32 */
			memcpy(&rel, b + p + 1, 4);
			pc += p + 5 + (uint64_t)(int64_t)rel;
			continue;
		}
		CHECK(0, "%s: an instruction this test does not run at %#" PRIx64 " (%02x %02x)", what, pc, b[0], b[1]);
		return visited;
	}
	CHECK(0, "%s: the stub did not reach the resolver", what);
	return visited;
}

static void check_plt(const char *dir, struct ds_symbols *syms)
{
	static const struct { const char *tag, *flags; } links[] = {
		{ "lld", "-fuse-ld=lld" },
		{ "lld-ibt", "-fuse-ld=lld -Wl,-z,force-ibt" },
		{ "ld", "-fuse-ld=bfd -Wl,--no-ld-generated-unwind-info" },
		{ "ld-ibt", "-fuse-ld=bfd -Wl,-z,ibtplt -Wl,--no-ld-generated-unwind-info" },
	};
	char exe[PATH_MAX], src[PATH_MAX * 2], obj[PATH_MAX * 2], cmd[PATH_MAX * 8];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	const char *cc = getenv("CC") && *getenv("CC") ? getenv("CC") : "cc";
	Elf *saved = elf;
	struct ds_map saved_map = obj_map;

	if (n <= 0)
		return;
	exe[n] = 0;
	snprintf(src, sizeof(src), "%s/../../tests/unit/data/plt-calls.s", dirname(exe));
	for (size_t k = 0; k < sizeof(links) / sizeof(links[0]); k++) {
		struct image im;
		struct ds_unwinder *u;
		unsigned visited;

		snprintf(obj, sizeof(obj), "%s/plt-%s.so", dir, links[k].tag);
		snprintf(cmd, sizeof(cmd), "%s -shared -nostdlib %s -o '%s' '%s' 2>/dev/null", cc, links[k].flags, obj, src);
		if (system(cmd) != 0) {
			printf("SKIPPED PLT stubs linked by %s: *** %s %s cannot link here ***\n", links[k].tag, cc,
			       links[k].flags);
			continue;
		}
		im.fd = open(obj, O_RDONLY);
		im.elf = elf = im.fd >= 0 ? elf_begin(im.fd, ELF_C_READ, NULL) : NULL;
		if (!elf) {
			CHECK(0, "cannot read %s", obj);
			continue;
		}
		obj_map = (struct ds_map){ .start = BASE, .end = BASE + 0x10000, .pgoff = 0, .name = obj,
					   .dso = ds_symbols__dso(syms, obj, NULL, 0) };
		u = ds_unwinder__new(NULL);
		visited = follow_call(u, &im, sym("caller"), links[k].tag);
		visited += follow_call(u, &im, sym("caller_ret"), links[k].tag);
		/* each lazy call: the stub's jump, its push, its jump to the header, the header's push and jump */
		CHECK(visited >= 10, "%s: %u stub instructions run, want 10 or more", links[k].tag, visited);
		ds_unwinder__delete(u);
		elf_end(elf);
		close(im.fd);
		unlink(obj);
	}
	elf = saved;
	obj_map = saved_map;
}

int main(void)
{
	char exe[PATH_MAX], src[PATH_MAX * 2], dir[] = "/tmp/test_cfi.XXXXXX", obj[PATH_MAX * 2];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	struct ds_symbols_opts so = { .no_inline = true };
	struct ds_symbols *syms;
	Dwarf_CFI *cfi;
	int fd;

	if (n <= 0 || !mkdtemp(dir)) {
		fprintf(stderr, "test_cfi: no scratch directory\n");
		return 1;
	}
	exe[n] = 0;
	/* BUILD/tests/test_cfi -> the checkout's tests/unit/data */
	snprintf(src, sizeof(src), "%s/../../tests/unit/data/cfi-rows.s", dirname(exe));
	if (!link_object(src, dir, NULL, obj, sizeof(obj))) {
		fprintf(stderr, "FAIL: cannot assemble and link %s\n", src);
		return 1;
	}
	elf_version(EV_CURRENT);
	fd = open(obj, O_RDONLY);
	elf = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
	cfi = elf ? dwarf_getcfi_elf(elf) : NULL;
	if (!cfi) {
		fprintf(stderr, "FAIL: no CFI in %s\n", obj);
		return 1;
	}
	syms = ds_symbols__new(&so);
	obj_map = (struct ds_map){ .start = BASE, .end = BASE + 0x4000, .pgoff = 0, .name = obj,
				   .dso = ds_symbols__dso(syms, obj, NULL, 0) };
	CHECK(obj_map.dso != NULL, "the object as a DSO");

	check_one_instruction_rows(cfi);
	check_expressions(cfi);
	check_register_return();
	check_zero_return();
	check_lld_text(src, dir, syms);
	check_plt(dir, syms);

	dwarf_cfi_end(cfi);
	elf_end(elf);
	close(fd);
	ds_symbols__delete(syms);
	unlink(obj);
	rmdir(dir);
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
