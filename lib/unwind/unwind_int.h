/* SPDX-License-Identifier: MIT */
/*
 * Internals of the unwinder: the rule rows it caches per binary, the DWARF
 * CFI reader (libdw's parser, rows converted once and kept), the SFrame
 * decoder (hand-written: bookworm's libsframe reads neither version 2 as
 * binutils 2.44 writes it nor version 3), and the DWARF expression
 * evaluator.  Exposed to the unit tests and fuzz targets only.
 */
#ifndef DSTACK_UNWIND_INT_H
#define DSTACK_UNWIND_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <elfutils/libdw.h>

/* DWARF register numbers: x86_64 rax..r15 are 0..15 and the return address
 * 16; i386 eax..edi 0..7 and eip 8. */
#define UW_MAX_REGS 17

enum uw_loc {
	UW_SAME,      /* unchanged from the callee */
	UW_UNDEF,     /* cannot be recovered */
	UW_AT_CFA,    /* saved at CFA + off */
	UW_VAL_CFA,   /* is CFA + off */
	UW_IN_REG,    /* is the callee's register @reg */
	UW_EXPR,      /* saved at the address the expression computes */
	UW_VAL_EXPR,  /* is the value the expression computes */
};

enum uw_cfa { UW_CFA_REG, UW_CFA_EXPR };

struct uw_rule {
	uint8_t loc;              /* enum uw_loc */
	uint8_t reg;
	/* UW_EXPR of the form [DW_OP_call_frame_cfa,] DW_OP_breg@reg @off (glibc's
	 * signal trampoline): saved at register @reg + @off, read without the evaluator */
	bool at_reg;
	int64_t off;
	uint32_t expr, nexpr;     /* ops in the table's expression store */
};

/* One DWARF operation as kept in a table (libdw's Dwarf_Op, copied). */
struct uw_op {
	uint8_t atom;
	uint64_t n1, n2;
	uint64_t offset;          /* byte offset in its expression (skip/bra targets) */
};

enum uw_row_kind { UW_ROW_NONE, UW_ROW_CFI, UW_ROW_SFRAME, UW_ROW_PLT };

/* The rules for addresses [start, end) of a binary (its own addresses). */
struct uw_row {
	uint64_t start, end;
	uint8_t kind;             /* enum uw_row_kind */
	bool signal;              /* a signal frame: the caller's pc is exact */
	uint8_t cfa;              /* enum uw_cfa */
	uint8_t cfa_reg;
	int64_t cfa_off;
	uint32_t cfa_expr, cfa_nexpr;
	struct uw_rule regs[UW_MAX_REGS];
	/* set by the walker when it keeps the row: bit r, register r's rule is
	 * UW_SAME (@same) or one to apply (@apply: neither UW_SAME nor UW_UNDEF) */
	uint32_t same, apply;
};

struct uw_opstore {
	struct uw_op *v;
	size_t nr, cap;
};

/*
 * The CFI row of libdw's @cfi at @vaddr into @row (expressions copied into
 * @ops).  1 found, 0 none, -1 malformed.  @nregs: 17 (x86_64) or 9 (i386).
 */
int dsi_uw_cfi__row(Dwarf_CFI *cfi, uint64_t vaddr, unsigned nregs, unsigned ra_reg,
		struct uw_row *row, struct uw_opstore *ops);

/* A value source for expressions: registers (valid bits) and memory. */
struct uw_mem {
	const uint8_t *stack;
	uint64_t base, size;      /* the snapshot covers [base, base + size) */
	unsigned word;            /* bytes a read takes: 8 (perf's reads, for either ABI) or 4 */
};

/* Read a word of the snapshot: false if outside it. */
bool dsi_uw_mem__read(const struct uw_mem *m, uint64_t addr, uint64_t *val);

/*
 * Evaluate @n ops (DWARF expression) with @cfa (if have_cfa) and the
 * registers; the result on top of the stack into *out.  0, -EFAULT
 * (memory outside the snapshot), -EINVAL (malformed, unknown op, register
 * unknown).  *is_value: the expression ended in DW_OP_stack_value or
 * named a register (DW_OP_regN): the result is the value, not its address.
 */
int dsi_uw_expr__eval(const struct uw_op *ops, size_t n, const uint64_t *regs, uint32_t valid,
		  bool have_cfa, uint64_t cfa, const struct uw_mem *mem, uint64_t *out, bool *is_value);

/* ---- SFrame ---------------------------------------------------------- */

struct uw_sframe {
	const uint8_t *p;
	size_t size;
	uint64_t vaddr;           /* the section's address */
	uint8_t version, flags, abi;
	int8_t fixed_fp, fixed_ra;
	uint32_t nfdes;
	size_t fdes, fres, fres_end;  /* byte offsets in the section */
};

struct uw_sframe_row {
	uint64_t start, end;      /* the addresses it covers */
	bool sp_based;            /* CFA = SP + cfa_off, else FP + cfa_off */
	int32_t cfa_off;
	bool has_fp;              /* FP saved at CFA + fp_off */
	int32_t fp_off;
	int32_t ra_off;           /* RA saved at CFA + ra_off */
	bool outermost;           /* RA undefined (version 3) */
	bool signal;              /* a signal frame (version 3) */
};

/* Check the header of a .sframe section at @vaddr: 0, or -EINVAL with *why. */
int dsi_uw_sframe__init(struct uw_sframe *sf, const void *p, size_t size, uint64_t vaddr, const char **why);
/* The row for @pc: 1, 0 none, -EINVAL malformed (*why set). */
int dsi_uw_sframe__find(const struct uw_sframe *sf, uint64_t pc, struct uw_sframe_row *row, const char **why);

#endif
