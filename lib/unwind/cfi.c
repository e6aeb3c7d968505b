// SPDX-License-Identifier: MIT
/*
 * DWARF CFI rows through libdw (dwarf_cfi_addrframe parses the CIE/FDE
 * programs, .eh_frame_hdr's table finds the FDE), converted once into
 * uw_row (expressions copied: libdw's Dwarf_Frame is freed at once), and a
 * DWARF expression evaluator for the rows whose rules are expressions
 * (PLT stubs' CFA, glibc's signal trampoline, stack realignment).
 */
#include <dwarf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "util/grow.h"
#include "unwind/unwind_int.h"

static int ops_keep(struct uw_opstore *st, const Dwarf_Op *ops, size_t n, uint32_t *at)
{
	if (n > 4096)
		return -1;
	if (st->nr + n > st->cap) {
		struct uw_op *v = dsi_grow(st->v, &st->cap, st->nr + n, sizeof(*v), 256);

		if (!v)
			return -1;
		st->v = v;
	}
	*at = (uint32_t)st->nr;
	for (size_t i = 0; i < n; i++)
		st->v[st->nr++] = (struct uw_op){ ops[i].atom, ops[i].number, ops[i].number2, ops[i].offset };
	return 0;
}

/* A register's location from libdw, in the cheap forms where it has one. */
static int rule_of(Dwarf_Frame *fr, unsigned regno, struct uw_rule *r, struct uw_opstore *st)
{
	Dwarf_Op mem[3], *ops;
	size_t n;
	bool value;

	memset(r, 0, sizeof(*r));
	if (dwarf_frame_register(fr, (int)regno, mem, &ops, &n) != 0) {
		r->loc = UW_UNDEF;
		return 0;
	}
	if (!n) {
		r->loc = ops ? UW_UNDEF : UW_SAME;
		return 0;
	}
	value = ops[n - 1].atom == DW_OP_stack_value;
	if (value)
		n--;
	if (n >= 1 && ops[0].atom == DW_OP_call_frame_cfa) {
		if (n == 1) {
			r->loc = value ? UW_VAL_CFA : UW_AT_CFA;
			return 0;
		}
		if (n == 2 && ops[1].atom == DW_OP_plus_uconst) {
			r->loc = value ? UW_VAL_CFA : UW_AT_CFA;
			r->off = (int64_t)ops[1].number;
			return 0;
		}
		if (n == 3 && (ops[1].atom == DW_OP_consts || ops[1].atom == DW_OP_constu) &&
		    ops[2].atom == DW_OP_plus) {
			r->loc = value ? UW_VAL_CFA : UW_AT_CFA;
			r->off = (int64_t)ops[1].number;
			return 0;
		}
	}
	if (!value && n == 1 && ops[0].atom >= DW_OP_reg0 && ops[0].atom <= DW_OP_reg31) {
		r->loc = UW_IN_REG;
		r->reg = (uint8_t)(ops[0].atom - DW_OP_reg0);
		return 0;
	}
	if (!value && n == 1 && ops[0].atom == DW_OP_regx && ops[0].number < UW_MAX_REGS) {
		r->loc = UW_IN_REG;
		r->reg = (uint8_t)ops[0].number;
		return 0;
	}
	r->loc = value ? UW_VAL_EXPR : UW_EXPR;
	r->nexpr = (uint32_t)n;
	if (!value && n >= 1 && n <= 2 && (n == 1 || ops[0].atom == DW_OP_call_frame_cfa) &&
	    ops[n - 1].atom >= DW_OP_breg0 && ops[n - 1].atom <= DW_OP_breg31 &&
	    ops[n - 1].atom - DW_OP_breg0 < UW_MAX_REGS) {
		r->at_reg = true;
		r->reg = (uint8_t)(ops[n - 1].atom - DW_OP_breg0);
		r->off = (int64_t)ops[n - 1].number;
	}
	return ops_keep(st, ops, n, &r->expr);
}

/* The end of the row libdw finds at @vaddr; 0 where it finds none. */
static Dwarf_Addr row_end_at(Dwarf_CFI *cfi, Dwarf_Addr vaddr)
{
	Dwarf_Frame *fr = NULL;
	Dwarf_Addr start, end = 0;
	bool signal;

	if (dwarf_cfi_addrframe(cfi, vaddr, &fr) != 0)
		return 0;
	if (dwarf_frame_info(fr, &start, &end, &signal) < 0)
		end = 0;
	free(fr);
	return end;
}

/*
 * Where the row libdw found at @vaddr, said to be [@start, @end), really
 * starts.  libdw's DW_CFA_restore_state restores the remembered row whole,
 * its start included: the row after an epilogue (gcc's remember_state
 * before it, restore_state after) is said to start where the epilogue
 * starts, and a cache trusting that range would give the epilogue's
 * addresses the body's CFA.  Its end is right (the next advance), and every
 * row below the real start ends at or below it, so the real start is the
 * lowest address in [@start, @vaddr] whose row has this end: checked at
 * @start (one call, the common case), else found by bisection.
 */
static Dwarf_Addr row_start(Dwarf_CFI *cfi, Dwarf_Addr start, Dwarf_Addr end, Dwarf_Addr vaddr)
{
	Dwarf_Addr lo, hi;

	if (start >= vaddr || row_end_at(cfi, start) == end)
		return start;
	lo = start + 1, hi = vaddr;   /* the row at hi has this end; at lo - 1 it has not */
	while (lo < hi) {
		Dwarf_Addr mid = lo + (hi - lo) / 2;

		if (row_end_at(cfi, mid) == end)
			hi = mid;
		else
			lo = mid + 1;
	}
	return hi;
}

int dsi_uw_cfi__row(Dwarf_CFI *cfi, uint64_t vaddr, unsigned nregs, unsigned ra_reg,
		struct uw_row *row, struct uw_opstore *st)
{
	Dwarf_Frame *fr = NULL;
	Dwarf_Op *ops;
	size_t n;
	Dwarf_Addr start, end;
	bool signal = false;
	int rc = -1;

	if (!cfi || dwarf_cfi_addrframe(cfi, vaddr, &fr) != 0)
		return 0;
	memset(row, 0, sizeof(*row));
	if (dwarf_frame_info(fr, &start, &end, &signal) < 0 || dwarf_frame_cfa(fr, &ops, &n) != 0 || !n)
		goto out;
	if (end <= start)
		end = start + 1;
	row->start = row_start(cfi, start, end, vaddr);
	row->end = end;
	row->kind = UW_ROW_CFI;
	row->signal = signal;
	if (n == 1 && ops[0].atom == DW_OP_bregx && ops[0].number < nregs) {
		row->cfa = UW_CFA_REG;
		row->cfa_reg = (uint8_t)ops[0].number;
		row->cfa_off = (int64_t)ops[0].number2;
	} else {
		row->cfa = UW_CFA_EXPR;
		row->cfa_nexpr = (uint32_t)n;
		if (ops_keep(st, ops, n, &row->cfa_expr))
			goto out;
	}
	for (unsigned r = 0; r < nregs && r <= ra_reg; r++)
		if (rule_of(fr, r, &row->regs[r], st))
			goto out;
	rc = 1;
out:
	free(fr);
	return rc;
}

bool dsi_uw_mem__read(const struct uw_mem *m, uint64_t addr, uint64_t *val)
{
	if (addr < m->base || addr - m->base > m->size || m->size - (addr - m->base) < m->word)
		return false;
	if (m->word == 8) {
		memcpy(val, m->stack + (addr - m->base), 8);
	} else {
		uint32_t v;

		memcpy(&v, m->stack + (addr - m->base), 4);
		*val = v;
	}
	return true;
}

#define STACK_MAX 64

/* An expression's evaluation: its operand stack and what its ops may read. */
struct uw_eval {
	uint64_t st[STACK_MAX];
	size_t sp;
	uint64_t mask;                  /* the target's address width */
	const uint64_t *regs;
	uint32_t valid;                 /* bit r: regs[r] is known */
	bool have_cfa;
	uint64_t cfa;
	const struct uw_mem *mem;
};

/* Push @v; -EINVAL when the stack is full. */
static int eval__push(struct uw_eval *e, uint64_t v)
{
	if (e->sp >= STACK_MAX)
		return -EINVAL;
	e->st[e->sp++] = v;
	return 0;
}

static bool eval__has(const struct uw_eval *e, size_t k)
{
	return e->sp >= k;
}

/* Push register @r plus @off (DW_OP_bregN, DW_OP_bregx); -EINVAL if @r is unknown. */
static int eval__push_reg(struct uw_eval *e, uint64_t r, uint64_t off)
{
	if (r >= UW_MAX_REGS || !(e->valid & (1u << r)))
		return -EINVAL;
	return eval__push(e, (e->regs[r] + off) & e->mask);
}

/* The ops that push a value: constants, DW_OP_bregx, DW_OP_call_frame_cfa. */
static int eval__push_op(struct uw_eval *e, const struct uw_op *o)
{
	if (o->atom == DW_OP_bregx)
		return eval__push_reg(e, o->n1, o->n2);
	if (o->atom == DW_OP_call_frame_cfa)
		return e->have_cfa ? eval__push(e, e->cfa) : -EINVAL;
	return eval__push(e, o->n1);
}

/* The ops that rearrange the stack: dup, drop, over, pick, swap, rot. */
static int eval__stack_op(struct uw_eval *e, const struct uw_op *o)
{
	uint64_t *st = e->st, a;
	size_t sp = e->sp;

	switch (o->atom) {
	case DW_OP_dup:
		return eval__has(e, 1) ? eval__push(e, st[sp - 1]) : -EINVAL;
	case DW_OP_drop:
		if (!eval__has(e, 1))
			return -EINVAL;
		e->sp--;
		return 0;
	case DW_OP_over:
		return eval__has(e, 2) ? eval__push(e, st[sp - 2]) : -EINVAL;
	case DW_OP_pick:
		return o->n1 < sp ? eval__push(e, st[sp - 1 - o->n1]) : -EINVAL;
	case DW_OP_swap:
		if (!eval__has(e, 2))
			return -EINVAL;
		a = st[sp - 1];
		st[sp - 1] = st[sp - 2];
		st[sp - 2] = a;
		return 0;
	case DW_OP_rot:
		if (!eval__has(e, 3))
			return -EINVAL;
		a = st[sp - 1];
		st[sp - 1] = st[sp - 2];
		st[sp - 2] = st[sp - 3];
		st[sp - 3] = a;
		return 0;
	default:
		return -EINVAL;
	}
}

/* The ops on the top entry alone: abs, neg, not, plus_uconst. */
static int eval__unary_op(struct uw_eval *e, const struct uw_op *o)
{
	uint64_t *top;

	if (!eval__has(e, 1))
		return -EINVAL;
	top = &e->st[e->sp - 1];
	switch (o->atom) {
	case DW_OP_abs:
		if ((int64_t)*top < 0)
			*top = -*top;
		return 0;
	case DW_OP_neg:
		*top = -*top;
		return 0;
	case DW_OP_not:
		*top = ~*top;
		return 0;
	case DW_OP_plus_uconst:
		*top += o->n1;
		return 0;
	default:
		return -EINVAL;
	}
}

/*
 * @a op @b into *r for the two-operand ops; -EINVAL on division by zero.
 * Shifts by 64 or more give what the shifted-out bits leave (0, or the sign
 * for shra); INT64_MIN / -1 stays INT64_MIN rather than trapping.
 */
static int binary_result(unsigned atom, uint64_t a, uint64_t b, uint64_t *r)
{
	switch (atom) {
	case DW_OP_and:   *r = a & b; return 0;
	case DW_OP_or:    *r = a | b; return 0;
	case DW_OP_xor:   *r = a ^ b; return 0;
	case DW_OP_plus:  *r = a + b; return 0;
	case DW_OP_minus: *r = a - b; return 0;
	case DW_OP_mul:   *r = a * b; return 0;
	case DW_OP_shl:   *r = b >= 64 ? 0 : a << b; return 0;
	case DW_OP_shr:   *r = b >= 64 ? 0 : a >> b; return 0;
	case DW_OP_shra:
		*r = b >= 64 ? (uint64_t)((int64_t)a >> 63) : (uint64_t)((int64_t)a >> b);
		return 0;
	case DW_OP_eq:    *r = a == b; return 0;
	case DW_OP_ne:    *r = a != b; return 0;
	case DW_OP_lt:    *r = (int64_t)a < (int64_t)b; return 0;
	case DW_OP_le:    *r = (int64_t)a <= (int64_t)b; return 0;
	case DW_OP_gt:    *r = (int64_t)a > (int64_t)b; return 0;
	case DW_OP_ge:    *r = (int64_t)a >= (int64_t)b; return 0;
	case DW_OP_div:
		if (!b)
			return -EINVAL;
		*r = ((int64_t)a == INT64_MIN && (int64_t)b == -1) ? a : (uint64_t)((int64_t)a / (int64_t)b);
		return 0;
	case DW_OP_mod:
		if (!b)
			return -EINVAL;
		*r = a % b;
		return 0;
	default:
		return -EINVAL;
	}
}

/* The two-operand ops: pop b, replace a (below it) with a op b. */
static int eval__binary_op(struct uw_eval *e, const struct uw_op *o)
{
	uint64_t b;

	if (!eval__has(e, 2))
		return -EINVAL;
	b = e->st[--e->sp];
	return binary_result(o->atom, e->st[e->sp - 1], b, &e->st[e->sp - 1]);
}

/*
 * DW_OP_deref (a word of the snapshot) and DW_OP_deref_size (as libdw:
 * the word read, then cut to its 1 to 8 low bytes, so the whole word
 * must lie in the snapshot): -EFAULT outside it.
 */
static int eval__memory_op(struct uw_eval *e, const struct uw_op *o)
{
	uint64_t v;

	if (!eval__has(e, 1))
		return -EINVAL;
	if (o->atom == DW_OP_deref_size && (!o->n1 || o->n1 > e->mem->word))
		return -EINVAL;
	if (!dsi_uw_mem__read(e->mem, e->st[e->sp - 1], &v))
		return -EFAULT;
	if (o->atom == DW_OP_deref_size && o->n1 < 8)
		v &= (1ull << (o->n1 * 8)) - 1;
	e->st[e->sp - 1] = v;
	return 0;
}

/*
 * DW_OP_skip, DW_OP_bra (taken when the popped entry is non-zero): *i
 * becomes the index before the target op, so the caller's i++ lands on it.
 * The target may be one past the last op (the expression ends); any other
 * offset that starts no op is -EINVAL.
 */
static int eval__branch(struct uw_eval *e, const struct uw_op *ops, size_t n, size_t *i)
{
	const struct uw_op *o = &ops[*i];
	uint64_t target;
	size_t j;

	if (o->atom == DW_OP_bra) {
		if (!eval__has(e, 1))
			return -EINVAL;
		if (!e->st[--e->sp])
			return 0;
	}
	/* libdw keeps the operand; the target is past the 3-byte op */
	target = o->offset + 3 + (uint64_t)(int64_t)(int16_t)o->n1;
	for (j = 0; j < n && ops[j].offset != target; j++)
		;
	if (j == n && target != (n ? ops[n - 1].offset + 1 : 0))
		return -EINVAL;
	*i = j - 1;   /* wraps for j == 0: the loop's i++ lands on 0 */
	return 0;
}

/* DW_OP_regN: the register's value is the result; only as the last op. */
static int eval__register_value(const struct uw_eval *e, unsigned r, bool last,
				uint64_t *out, bool *is_value)
{
	if (r >= UW_MAX_REGS || !(e->valid & (1u << r)) || !last)
		return -EINVAL;
	*out = e->regs[r];
	*is_value = true;
	return 0;
}

/* One op other than DW_OP_regN and the branches: 0 or a negative errno. */
static int eval__op(struct uw_eval *e, const struct uw_op *o, bool last, bool *is_value)
{
	unsigned at = o->atom;

	if (at >= DW_OP_lit0 && at <= DW_OP_lit31)
		return eval__push(e, at - DW_OP_lit0);
	if (at >= DW_OP_breg0 && at <= DW_OP_breg31)
		return eval__push_reg(e, at - DW_OP_breg0, o->n1);
	switch (at) {
	case DW_OP_addr: case DW_OP_const1u: case DW_OP_const1s: case DW_OP_const2u:
	case DW_OP_const2s: case DW_OP_const4u: case DW_OP_const4s: case DW_OP_const8u:
	case DW_OP_const8s: case DW_OP_constu: case DW_OP_consts:
	case DW_OP_bregx: case DW_OP_call_frame_cfa:
		return eval__push_op(e, o);
	case DW_OP_dup: case DW_OP_drop: case DW_OP_over: case DW_OP_pick:
	case DW_OP_swap: case DW_OP_rot:
		return eval__stack_op(e, o);
	case DW_OP_abs: case DW_OP_neg: case DW_OP_not: case DW_OP_plus_uconst:
		return eval__unary_op(e, o);
	case DW_OP_and: case DW_OP_or: case DW_OP_xor: case DW_OP_plus: case DW_OP_minus:
	case DW_OP_mul: case DW_OP_shl: case DW_OP_shr: case DW_OP_shra: case DW_OP_eq:
	case DW_OP_ne: case DW_OP_lt: case DW_OP_le: case DW_OP_gt: case DW_OP_ge:
	case DW_OP_div: case DW_OP_mod:
		return eval__binary_op(e, o);
	case DW_OP_deref: case DW_OP_deref_size:
		return eval__memory_op(e, o);
	case DW_OP_nop:
		return 0;
	case DW_OP_stack_value:
		if (!last)
			return -EINVAL;
		*is_value = true;
		return 0;
	default:
		return -EINVAL;
	}
}

int dsi_uw_expr__eval(const struct uw_op *ops, size_t n, const uint64_t *regs, uint32_t valid,
		  bool have_cfa, uint64_t cfa, const struct uw_mem *mem, uint64_t *out, bool *is_value)
{
	struct uw_eval e = {
		.sp = 0, .mask = mem->word == 8 ? ~0ull : 0xffffffffull,
		.regs = regs, .valid = valid, .have_cfa = have_cfa, .cfa = cfa, .mem = mem,
	};
	size_t budget = 64 * n + 64;   /* bounds the loops branches can make */

	*is_value = false;
	for (size_t i = 0; i < n; i++) {
		unsigned at = ops[i].atom;
		int rc;

		if (!budget--)
			return -EINVAL;
		if (at >= DW_OP_reg0 && at <= DW_OP_reg31)
			return eval__register_value(&e, at - DW_OP_reg0, i + 1 == n, out, is_value);
		if (at == DW_OP_skip || at == DW_OP_bra)
			rc = eval__branch(&e, ops, n, &i);
		else
			rc = eval__op(&e, &ops[i], i + 1 == n, is_value);
		if (rc)
			return rc;
	}
	if (!eval__has(&e, 1))
		return -EINVAL;
	*out = e.st[e.sp - 1] & e.mask;
	return 0;
}
