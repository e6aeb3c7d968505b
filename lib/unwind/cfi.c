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
	return ops_keep(st, ops, n, &r->expr);
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
	row->start = start;
	row->end = end > start ? end : start + 1;
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

int dsi_uw_expr__eval(const struct uw_op *ops, size_t n, const uint64_t *regs, uint32_t valid,
		  bool have_cfa, uint64_t cfa, const struct uw_mem *mem, uint64_t *out, bool *is_value)
{
	uint64_t st[STACK_MAX], a, b;
	size_t sp = 0, budget = 64 * n + 64;
	uint64_t mask = mem->word == 8 ? ~0ull : 0xffffffffull;

	*is_value = false;
#define PUSH(v) do { uint64_t pv_ = (v); if (sp >= STACK_MAX) return -EINVAL; st[sp] = pv_; sp++; } while (0)
#define NEED(k) do { if (sp < (k)) return -EINVAL; } while (0)
	for (size_t i = 0; i < n; i++) {
		const struct uw_op *o = &ops[i];
		unsigned at = o->atom;

		if (!budget--)
			return -EINVAL;
		if (at >= DW_OP_lit0 && at <= DW_OP_lit31) {
			PUSH(at - DW_OP_lit0);
			continue;
		}
		if (at >= DW_OP_breg0 && at <= DW_OP_breg31) {
			unsigned r = at - DW_OP_breg0;

			if (r >= UW_MAX_REGS || !(valid & (1u << r)))
				return -EINVAL;
			PUSH((regs[r] + o->n1) & mask);
			continue;
		}
		if (at >= DW_OP_reg0 && at <= DW_OP_reg31) {
			unsigned r = at - DW_OP_reg0;

			if (r >= UW_MAX_REGS || !(valid & (1u << r)) || i + 1 != n)
				return -EINVAL;
			*out = regs[r];
			*is_value = true;
			return 0;
		}
		switch (at) {
		case DW_OP_addr: case DW_OP_const1u: case DW_OP_const1s: case DW_OP_const2u:
		case DW_OP_const2s: case DW_OP_const4u: case DW_OP_const4s: case DW_OP_const8u:
		case DW_OP_const8s: case DW_OP_constu: case DW_OP_consts:
			PUSH(o->n1);
			break;
		case DW_OP_bregx:
			if (o->n1 >= UW_MAX_REGS || !(valid & (1u << o->n1)))
				return -EINVAL;
			PUSH((regs[o->n1] + o->n2) & mask);
			break;
		case DW_OP_call_frame_cfa:
			if (!have_cfa)
				return -EINVAL;
			PUSH(cfa);
			break;
		case DW_OP_dup: NEED(1); PUSH(st[sp - 1]); break;
		case DW_OP_drop: NEED(1); sp--; break;
		case DW_OP_over: NEED(2); PUSH(st[sp - 2]); break;
		case DW_OP_pick: if (o->n1 >= sp) return -EINVAL; PUSH(st[sp - 1 - o->n1]); break;
		case DW_OP_swap: NEED(2); a = st[sp - 1]; st[sp - 1] = st[sp - 2]; st[sp - 2] = a; break;
		case DW_OP_rot: NEED(3); a = st[sp - 1]; st[sp - 1] = st[sp - 2]; st[sp - 2] = st[sp - 3]; st[sp - 3] = a; break;
		case DW_OP_deref:
			NEED(1);
			if (!dsi_uw_mem__read(mem, st[sp - 1], &st[sp - 1]))
				return -EFAULT;
			break;
		case DW_OP_deref_size: {
			uint64_t v;
			struct uw_mem m8 = *mem;

			NEED(1);
			if (o->n1 != 4 && o->n1 != 8)
				return -EINVAL;
			m8.word = (unsigned)o->n1;
			if (!dsi_uw_mem__read(&m8, st[sp - 1], &v))
				return -EFAULT;
			st[sp - 1] = v;
			break;
		}
		case DW_OP_abs: NEED(1); if ((int64_t)st[sp - 1] < 0) st[sp - 1] = -st[sp - 1]; break;
		case DW_OP_neg: NEED(1); st[sp - 1] = -st[sp - 1]; break;
		case DW_OP_not: NEED(1); st[sp - 1] = ~st[sp - 1]; break;
		case DW_OP_plus_uconst: NEED(1); st[sp - 1] += o->n1; break;
#define BIN(op, expr) case op: NEED(2); b = st[--sp]; a = st[sp - 1]; st[sp - 1] = (expr); break
		BIN(DW_OP_and, a & b);
		BIN(DW_OP_or, a | b);
		BIN(DW_OP_xor, a ^ b);
		BIN(DW_OP_plus, a + b);
		BIN(DW_OP_minus, a - b);
		BIN(DW_OP_mul, a * b);
		BIN(DW_OP_shl, b >= 64 ? 0 : a << b);
		BIN(DW_OP_shr, b >= 64 ? 0 : a >> b);
		BIN(DW_OP_shra, b >= 64 ? (uint64_t)((int64_t)a >> 63) : (uint64_t)((int64_t)a >> b));
		BIN(DW_OP_eq, a == b);
		BIN(DW_OP_ne, a != b);
		BIN(DW_OP_lt, (int64_t)a < (int64_t)b);
		BIN(DW_OP_le, (int64_t)a <= (int64_t)b);
		BIN(DW_OP_gt, (int64_t)a > (int64_t)b);
		BIN(DW_OP_ge, (int64_t)a >= (int64_t)b);
#undef BIN
		case DW_OP_div:
			NEED(2);
			b = st[--sp];
			if (!b)
				return -EINVAL;
			a = st[sp - 1];
			st[sp - 1] = ((int64_t)a == INT64_MIN && (int64_t)b == -1) ? a : (uint64_t)((int64_t)a / (int64_t)b);
			break;
		case DW_OP_mod:
			NEED(2);
			b = st[--sp];
			if (!b)
				return -EINVAL;
			st[sp - 1] %= b;
			break;
		case DW_OP_skip:
		case DW_OP_bra: {
			uint64_t target;
			size_t j;

			if (at == DW_OP_bra) {
				NEED(1);
				if (!st[--sp])
					break;
			}
			/* libdw keeps the operand; the target is past the 3-byte op */
			target = o->offset + 3 + (uint64_t)(int64_t)(int16_t)o->n1;
			for (j = 0; j < n && ops[j].offset != target; j++)
				;
			if (j == n && target != (n ? ops[n - 1].offset + 1 : 0))
				return -EINVAL;
			i = j - 1;   /* the loop's i++ lands on j */
			break;
		}
		case DW_OP_nop:
			break;
		case DW_OP_stack_value:
			if (i + 1 != n)
				return -EINVAL;
			*is_value = true;
			break;
		default:
			return -EINVAL;
		}
	}
	NEED(1);
	*out = st[sp - 1] & mask;
	return 0;
#undef PUSH
#undef NEED
}
