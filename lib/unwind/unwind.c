// SPDX-License-Identifier: MIT
/*
 * The stack walker: from a sample's user registers and stack snapshot to
 * its user frames, one caller at a time, each found by the best rules its
 * binary has (DWARF CFI, then SFrame, then a PLT stub's own code, then
 * the frame-pointer chain).
 *
 * Rules are kept per binary as rows over address ranges, sorted and
 * disjoint, decoded on a range's first use (a miss decodes once and
 * inserts; addresses with no rule are kept as such too): the per-sample
 * cost is a binary search and the row's evaluation, with no allocation.
 */
#include <errno.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include "util/grow.h"
#include "dstack/unwind.h"
#include "dstack/log.h"
#include "util/hashmap.h"
#include "symbols/symbols_int.h"
#include "unwind/unwind_int.h"

#define HINT_BITS 8
#define HINTS (1u << HINT_BITS)

struct uw_dso {
	const struct ds_elf_image *img;   /* NULL: no usable file */
	bool is64;
	uint64_t entry, entry_end;        /* e_entry to its symbol's end: _start has no caller */
	uint64_t first_page;              /* of its lowest segment, where perf's module starts; UINT64_MAX: none */
	struct { uint64_t start, end; } text[4];   /* its first executable PT_LOADs' addresses */
	unsigned nr_text;
	Dwarf_CFI *eh;                    /* .eh_frame (ours: dwarf_cfi_end) */
	Dwarf_CFI *dbg;                   /* .debug_frame (the Dwarf's) */
	bool has_sframe;
	struct uw_sframe sf;
	/* the PLT sections' code, for stubs no CFI covers (plt_row) */
	struct uw_plt { uint64_t start, size; const uint8_t *code; } plt[5];
	unsigned nr_plt;
	bool sframe_warned;
	struct uw_row *rows;              /* sorted by start, disjoint */
	size_t nr, cap;
	struct uw_opstore ops;
	/* file offsets looked up lately: their address and row (valid while
	 * the rows are the @nr + 1 they were, an insertion moving them) */
	struct uw_hint { uint64_t off, vaddr; size_t nr, row; bool text; } hint[HINTS];
};

struct ds_unwinder {
	struct ds_machine *machine;       /* its maps' DSOs, the vDSO's images included; may be NULL */
	struct dsi_hashmap dsos;           /* struct ds_dso * -> struct uw_dso * */
};

/* DWARF register numbers */
enum { X64_RBP = 6, X64_RSP = 7, X64_RA = 16, X86_ESP = 4, X86_EBP = 5, X86_RA = 8 };

/* perf register of each DWARF register: x86_64 rax, rdx, rcx, rbx, rsi, rdi, rbp, rsp, r8-r15, ra */
static const uint8_t x64_perf[17] = {
	DS_X86_AX, DS_X86_DX, DS_X86_CX, DS_X86_BX, DS_X86_SI, DS_X86_DI, DS_X86_BP, DS_X86_SP,
	DS_X86_R8, DS_X86_R8 + 1, DS_X86_R8 + 2, DS_X86_R8 + 3, DS_X86_R8 + 4, DS_X86_R8 + 5,
	DS_X86_R8 + 6, DS_X86_R8 + 7, DS_X86_IP,
};
/* i386: eax, ecx, edx, ebx, esp, ebp, esi, edi, eip */
static const uint8_t x86_perf[9] = {
	DS_X86_AX, DS_X86_CX, DS_X86_DX, DS_X86_BX, DS_X86_SP, DS_X86_BP, DS_X86_SI, DS_X86_DI, DS_X86_IP,
};

static const char *const reg_names[DS_X86_NR_REGS] = {
	"AX", "BX", "CX", "DX", "SI", "DI", "BP", "SP", "IP", "FLAGS", "CS", "SS", "DS", "ES", "FS", "GS",
	"R8", "R9", "R10", "R11", "R12", "R13", "R14", "R15",
};

const char *ds_x86_reg__name(unsigned idx)
{
	return idx < DS_X86_NR_REGS ? reg_names[idx] : NULL;
}

const char *ds_unwind_end__name(enum ds_unwind_end e)
{
	static const char *const n[DS_UNWIND_END__NR] = {
		"outermost", "no-info", "left-stack", "no-progress", "max-frames", "no-vdso", "no-regs",
	};
	return (unsigned)e < DS_UNWIND_END__NR ? n[e] : "?";
}

const char *ds_unwind_method__name(enum ds_unwind_method m)
{
	static const char *const n[DS_UNWIND_METHOD__NR] = { "cfi", "sframe", "fp", "plt" };
	return (unsigned)m < DS_UNWIND_METHOD__NR ? n[m] : "?";
}

struct ds_unwinder *ds_unwinder__new(struct ds_machine *m)
{
	struct ds_unwinder *u = calloc(1, sizeof(*u));

	if (!u)
		return NULL;
	u->machine = m;
	dsi_hashmap__init(&u->dsos);
	return u;
}

static void uw_dso_free(struct uw_dso *d)
{
	if (d->eh)
		dwarf_cfi_end(d->eh);
	free(d->rows);
	free(d->ops.v);
	free(d);
}

void ds_unwinder__delete(struct ds_unwinder *u)
{
	if (!u)
		return;
	for (size_t i = 0; i < u->dsos.cap; i++)
		if (u->dsos.slots[i].key)
			uw_dso_free((struct uw_dso *)(uintptr_t)u->dsos.slots[i].val);
	dsi_hashmap__exit(&u->dsos);
	free(u);
}

bool ds_unwind__has_snapshot(const struct ds_evsel *evsel, const struct ds_sample *s)
{
	uint64_t t = evsel->attr.sample_type;

	/* as perf: nothing to unwind when the kernel could copy no stack */
	return (t & DS_SAMPLE_REGS_USER) && (t & DS_SAMPLE_STACK_USER) && s->regs_user && s->regs_user_abi &&
	       s->stack_user && s->stack_user_dyn;
}

/* The binary's .sframe section, if it has a good one. */
static void find_sframe(struct uw_dso *d, Elf *elf, const char *path)
{
	GElf_Shdr sh;
	Elf_Scn *scn = dsi_elf__section(elf, ".sframe", &sh, NULL);
	Elf_Data *data;
	const char *why = NULL;

	if (!scn || sh.sh_type == SHT_NOBITS)
		return;
	data = elf_getdata(scn, NULL);
	if (!data || !data->d_buf)
		return;
	if (dsi_uw_sframe__init(&d->sf, data->d_buf, data->d_size, sh.sh_addr, &why)) {
		ds_warn("%s: .sframe at file offset %#llx not used: %s", path, (unsigned long long)sh.sh_offset, why);
		return;
	}
	d->has_sframe = true;
}

/*
 * The binary's PLT sections.  GNU ld describes its stubs in .eh_frame;
 * lld, mold and gold (without --ld-generated-unwind-info) do not, and a
 * sample lands in a stub whenever a call through it is interrupted.
 */
static void find_plt(struct uw_dso *d, Elf *elf)
{
	static const char *const names[] = { ".plt", ".plt.sec", ".plt.got", ".plt.bnd", ".iplt" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		GElf_Shdr sh;
		Elf_Scn *scn = dsi_elf__section(elf, names[i], &sh, NULL);
		Elf_Data *data;

		if (!scn || sh.sh_type != SHT_PROGBITS || !(sh.sh_flags & SHF_EXECINSTR) ||
		    !(data = elf_getdata(scn, NULL)) || !data->d_buf)
			continue;
		d->plt[d->nr_plt++] = (struct uw_plt){
			.start = sh.sh_addr, .size = data->d_size < sh.sh_size ? data->d_size : sh.sh_size,
			.code = data->d_buf,
		};
	}
}

/*
 * Where the entry point's function ends: its symbol's end, else 64 bytes
 * on (a stripped _start is shorter), never past the next symbol.
 */
static uint64_t entry_end(const struct ds_elf_image *img, uint64_t entry)
{
	const struct ds_sym *s = dsi_symtab__find(&img->symtab, entry);
	uint64_t end = entry + 64;

	if (s)
		return s->end;
	for (size_t i = 0; i < img->symtab.nr; i++)
		if (img->symtab.syms[i].start > entry && img->symtab.syms[i].start < end)
			end = img->symtab.syms[i].start;
	return end;
}

/* The binary's executable PT_LOAD segments (the first few). */
static void find_text(struct uw_dso *d)
{
	size_t n = 0;

	if (elf_getphdrnum(d->img->elf, &n))
		return;
	for (size_t i = 0; i < n && d->nr_text < sizeof(d->text) / sizeof(d->text[0]); i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(d->img->elf, (int)i, &ph) && ph.p_type == PT_LOAD && (ph.p_flags & PF_X)) {
			d->text[d->nr_text].start = ph.p_vaddr;
			d->text[d->nr_text++].end = ph.p_vaddr + ph.p_memsz;
		}
	}
}

static bool in_text(const struct uw_dso *d, uint64_t vaddr)
{
	for (unsigned i = 0; i < d->nr_text; i++)
		if (vaddr >= d->text[i].start && vaddr < d->text[i].end)
			return true;
	return false;
}

static struct uw_dso *dso_tables(struct ds_unwinder *u, struct ds_dso *dso)
{
	uint64_t *hit = dsi_hashmap__find(&u->dsos, (uint64_t)(uintptr_t)dso);
	struct uw_dso *d;
	GElf_Ehdr eh;

	if (hit)
		return (struct uw_dso *)(uintptr_t)*hit;
	if (!(d = calloc(1, sizeof(*d))))
		return NULL;
	if (dsi_hashmap__set(&u->dsos, (uint64_t)(uintptr_t)dso, (uint64_t)(uintptr_t)d)) {
		free(d);
		return NULL;
	}
	d->img = dsi_dso__image(dso);
	if (!d->img || !d->img->elf || !gelf_getehdr(d->img->elf, &eh)) {
		d->img = NULL;
		return d;
	}
	d->is64 = eh.e_ident[EI_CLASS] == ELFCLASS64;
	d->entry = eh.e_entry;
	d->first_page = UINT64_MAX;
	for (size_t i = 0; i < d->img->nr_segs; i++)
		if (d->img->segs[i].vaddr < d->first_page)
			d->first_page = d->img->segs[i].vaddr & ~(uint64_t)0xfff;
	find_text(d);
	d->entry_end = entry_end(d->img, eh.e_entry);
	d->eh = dwarf_getcfi_elf(d->img->elf);
	if (d->img->dwarf)
		d->dbg = dwarf_getcfi(d->img->dwarf);
	find_sframe(d, d->img->elf, ds_dso__path(dso));
	find_plt(d, d->img->elf);
	return d;
}

/* Index of the last row starting at or below @vaddr (nr if none). */
static size_t rows_at(const struct uw_dso *d, uint64_t vaddr)
{
	size_t lo = 0, hi = d->nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (d->rows[mid].start <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? lo - 1 : d->nr;
}

static void sframe_row(const struct uw_sframe_row *sr, bool is64, struct uw_row *row)
{
	unsigned sp = is64 ? X64_RSP : X86_ESP, fp = is64 ? X64_RBP : X86_EBP, ra = is64 ? X64_RA : X86_RA;

	memset(row, 0, sizeof(*row));
	row->start = sr->start;
	row->end = sr->end;
	row->kind = UW_ROW_SFRAME;
	row->signal = sr->signal;
	row->cfa = UW_CFA_REG;
	row->cfa_reg = (uint8_t)(sr->sp_based ? sp : fp);
	row->cfa_off = sr->cfa_off;
	row->regs[sp].loc = UW_VAL_CFA;
	if (sr->has_fp) {
		row->regs[fp].loc = UW_AT_CFA;
		row->regs[fp].off = sr->fp_off;
	}
	if (sr->outermost) {
		row->regs[ra].loc = UW_UNDEF;
	} else {
		row->regs[ra].loc = UW_AT_CFA;
		row->regs[ra].off = sr->ra_off;
	}
}

/* A kept row's register masks (struct uw_row): what step_row copies and what it computes. */
static void row_masks(struct uw_row *row)
{
	row->same = row->apply = 0;
	for (unsigned r = 0; r < UW_MAX_REGS; r++) {
		switch (row->regs[r].loc) {
		case UW_SAME:
			row->same |= 1u << r;
			break;
		case UW_AT_CFA: case UW_VAL_CFA: case UW_IN_REG: case UW_EXPR: case UW_VAL_EXPR:
			row->apply |= 1u << r;
			break;
		default:
			break;
		}
	}
}

/* ---- PLT stubs ---------------------------------------------------------
 * A stub's frame is its caller's call: the return address at sp, pushed
 * one word more by each push the stub has run (a lazy entry's relocation
 * index, the resolver's GOT word).  Every x86_64 PLT layout (ld's, lld's,
 * mold's; IBT's endbr and .plt.sec, MPX's bnd) is made of the few
 * instructions plt_insn knows, in 16-byte entries; anything else gives no
 * rule.  The lazy resolver's header is the entry whose first
 * instruction (after an endbr) pushes a memory word: it is jumped to with
 * the index already pushed.
 */

/* The length of a ModRM operand (ModRM, SIB, displacement) in @n bytes; 0 if cut. */
static size_t modrm_len(const uint8_t *p, size_t n)
{
	unsigned mod, rm;
	size_t len = 1;

	if (!n)
		return 0;
	mod = p[0] >> 6;
	rm = p[0] & 7;
	if (mod != 3 && rm == 4) {
		if (n < 2)
			return 0;
		len++;
		if (mod == 0 && (p[1] & 7) == 5)
			len += 4;
	} else if (mod == 0 && rm == 5) {
		len += 4;
	}
	len += mod == 1 ? 1 : mod == 2 ? 4 : 0;
	return len <= n ? len : 0;
}

static bool is_endbr(const uint8_t *p, size_t n)
{
	return n >= 4 && p[0] == 0xf3 && p[1] == 0x0f && p[2] == 0x1e && (p[3] == 0xfa || p[3] == 0xfb);
}

/* The length of the stub instruction at @p (0: not one), *push whether it pushes a word. */
static size_t plt_insn(const uint8_t *p, size_t n, bool *push)
{
	size_t i = 0, m;
	bool nop_prefix = false;   /* 66 or 2e: only long nops take them here */

	*push = false;
	if (is_endbr(p, n))
		return 4;
	for (; i < n && i < 8 && (p[i] == 0x66 || p[i] == 0x2e || p[i] == 0xf2 || p[i] == 0x3e); i++)
		nop_prefix |= p[i] == 0x66 || p[i] == 0x2e;
	if (i >= n)
		return 0;
	switch (p[i]) {
	case 0x90: case 0xcc:                        /* nop, int3 padding */
		return i + 1;
	case 0x0f:                                   /* nop r/m */
		if (i + 2 < n && p[i + 1] == 0x1f && !((p[i + 2] >> 3) & 7) && (m = modrm_len(p + i + 2, n - i - 2)))
			return i + 2 + m;
		return 0;
	case 0x68:                                   /* push imm32 */
		*push = true;
		return !nop_prefix && i + 5 <= n ? i + 5 : 0;
	case 0xe9:                                   /* jmp rel32 */
		return !nop_prefix && i + 5 <= n ? i + 5 : 0;
	case 0xff:                                   /* jmp r/m (/4), push r/m (/6) */
		if (nop_prefix || i + 1 >= n || (((p[i + 1] >> 3) & 7) != 4 && ((p[i + 1] >> 3) & 7) != 6) ||
		    !(m = modrm_len(p + i + 1, n - i - 1)))
			return 0;
		*push = ((p[i + 1] >> 3) & 7) == 6;
		return i + 1 + m;
	default:
		return 0;
	}
}

/*
 * The rule for @vaddr in a PLT section of @d into @row, covering the
 * instructions around it that the same pushes precede: true, or false
 * where @vaddr is in no PLT, not at an instruction of the stub's, or in
 * code plt_insn does not know.
 */
static bool plt_row(const struct uw_dso *d, uint64_t vaddr, struct uw_row *row)
{
	unsigned word = d->is64 ? 8 : 4, sp = d->is64 ? X64_RSP : X86_ESP, ra = d->is64 ? X64_RA : X86_RA;

	for (unsigned k = 0; k < d->nr_plt; k++) {
		const struct uw_plt *pl = &d->plt[k];
		uint64_t rel = vaddr - pl->start, at = rel & ~(uint64_t)15, pos = at, start = at, end;
		size_t n, len;
		unsigned words = 1;
		bool push;

		if (vaddr < pl->start || rel >= pl->size)
			continue;
		n = (size_t)(pl->size - at < 16 ? pl->size - at : 16);
		len = is_endbr(pl->code + at, n) ? 4 : 0;
		if (plt_insn(pl->code + at + len, n - len, &push) && push && pl->code[at + len] == 0xff)
			words = 2;   /* the resolver's header */
		for (; pos < rel; pos += len) {
			if (!(len = plt_insn(pl->code + pos, n - (size_t)(pos - at), &push)))
				return false;
			if (push && pos + len <= rel) {
				words++;
				start = pos + len;
			}
		}
		if (pos != rel)
			return false;
		/* on to the next push's end, or as far as the stub decodes */
		for (end = pos; end < at + n; end += len) {
			if (!(len = plt_insn(pl->code + end, n - (size_t)(end - at), &push)))
				break;
			if (push) {
				end += len;
				break;
			}
		}
		memset(row, 0, sizeof(*row));
		row->start = pl->start + start;
		row->end = pl->start + (end > rel ? end : rel + 1);
		row->kind = UW_ROW_PLT;
		row->cfa = UW_CFA_REG;
		row->cfa_reg = (uint8_t)sp;
		row->cfa_off = (int64_t)words * word;
		row->regs[sp].loc = UW_VAL_CFA;
		row->regs[ra].loc = UW_AT_CFA;
		row->regs[ra].off = -(int64_t)word;
		return true;
	}
	return false;
}

/* The row for @vaddr, decoded and kept on first use; NULL only without memory. */
static const struct uw_row *rules(struct uw_dso *d, uint64_t vaddr)
{
	size_t i = rows_at(d, vaddr), at;
	struct uw_row row;
	struct uw_sframe_row sr;
	unsigned nregs = d->is64 ? 17 : 9, ra = d->is64 ? X64_RA : X86_RA;
	const char *why = NULL;
	int rc = 0;

	if (i < d->nr && vaddr < d->rows[i].end)
		return &d->rows[i];
	at = i < d->nr ? i + 1 : 0;
	if (d->img) {
		rc = dsi_uw_cfi__row(d->eh, vaddr, nregs, ra, &row, &d->ops);
		if (rc <= 0)
			rc = dsi_uw_cfi__row(d->dbg, vaddr, nregs, ra, &row, &d->ops);
		if (rc <= 0 && d->has_sframe && d->is64) {
			int src = dsi_uw_sframe__find(&d->sf, vaddr, &sr, &why);

			if (src > 0) {
				sframe_row(&sr, true, &row);
				rc = 1;
			} else if (src < 0 && !d->sframe_warned) {
				ds_warn("unwind: .sframe: %s", why);
				d->sframe_warned = true;
			}
		}
		/* x86_64 only: an i386 stub keeps perf's frame-pointer step (below) */
		if (rc <= 0 && d->is64 && plt_row(d, vaddr, &row))
			rc = 1;
	}
	if (rc <= 0 || row.start > vaddr || row.end <= vaddr) {
		memset(&row, 0, sizeof(row));
		row.kind = UW_ROW_NONE;
		row.start = vaddr;
		row.end = vaddr + 1;
	}
	row_masks(&row);
	/* keep the rows disjoint: a range is clipped to its neighbours */
	if (at > 0 && row.start < d->rows[at - 1].end)
		row.start = d->rows[at - 1].end;
	if (at < d->nr && row.end > d->rows[at].start)
		row.end = d->rows[at].start;
	if (d->nr == d->cap) {
		struct uw_row *v = dsi_grow(d->rows, &d->cap, d->nr + 1, sizeof(*v), 64);

		if (!v)
			return NULL;
		d->rows = v;
	}
	memmove(&d->rows[at + 1], &d->rows[at], (d->nr - at) * sizeof(*d->rows));
	d->rows[at] = row;
	d->nr++;
	return &d->rows[at];
}

/*
 * A walk as perf 7.2's libdw walk makes it, for either ABI: memory is read
 * in 8-byte words (perf's memory_read callback fills a Dwarf_Word, and
 * fails unless all 8 bytes lie in the snapshot), and a value is cut to the
 * task's register width (@mask) only where it becomes a register (libdw's
 * __libdwfl_frame_reg_set): a CFA, an address or an expression's stack
 * keeps all 64 bits.  On a 32-bit stack a word read so has the next word
 * as its upper half: a CFA read from the stack (a realigned main's
 * DW_OP_deref) then points nowhere and the walk ends there, as perf's does.
 */
struct walk {
	uint64_t regs[UW_MAX_REGS];
	uint32_t valid;
	bool by_fp;                         /* the last step was the frame-pointer chain's */
	unsigned nregs, sp, fp, ra, word;   /* word: the task's, 8 or 4 */
	uint64_t mask;                      /* the task's register width */
	struct uw_mem mem;
};

/* dsi_uw_mem__read for the walk's 8-byte reads, inlined: most of a step's work */
static inline bool mem_read(const struct uw_mem *m, uint64_t addr, uint64_t *val)
{
	uint64_t at = addr - m->base;

	if (addr < m->base || at > m->size || m->size - at < 8)
		return false;
	memcpy(val, m->stack + at, 8);
	return true;
}

static bool reg_get(const struct walk *w, unsigned r, uint64_t *v)
{
	if (r >= w->nregs || !(w->valid & (1u << r)))
		return false;
	*v = w->regs[r];
	return true;
}

/* The CFA of @row into *cfa: -1, or the end reason when it cannot be computed. */
static int row_cfa(const struct walk *w, const struct uw_row *row, const struct uw_opstore *ops, uint64_t *cfa)
{
	bool is_value;
	int rc;

	if (row->cfa == UW_CFA_REG) {
		if (!reg_get(w, row->cfa_reg, cfa))
			return DS_UNWIND_END_NO_INFO;
		*cfa += (uint64_t)row->cfa_off;
		return -1;
	}
	rc = dsi_uw_expr__eval(ops->v + row->cfa_expr, row->cfa_nexpr, w->regs, w->valid, false, 0,
			       &w->mem, cfa, &is_value);
	if (rc)
		return rc == -EFAULT ? DS_UNWIND_END_LEFT_STACK : DS_UNWIND_END_NO_INFO;
	return -1;
}

/* The caller's register @r by rule @ru into *v; false when the rule leaves it unknown. */
static bool caller_reg(const struct walk *w, const struct uw_rule *ru, unsigned r, uint64_t cfa,
		       const struct uw_opstore *ops, uint64_t *v)
{
	bool ok, is_value;

	switch (ru->loc) {
	case UW_SAME:
		return reg_get(w, r, v);
	case UW_AT_CFA:
		return mem_read(&w->mem, cfa + (uint64_t)ru->off, v);
	case UW_VAL_CFA:
		*v = cfa + (uint64_t)ru->off;
		return true;
	case UW_IN_REG:
		return reg_get(w, ru->reg, v);
	case UW_EXPR:
		if (ru->at_reg)
			return reg_get(w, ru->reg, v) && mem_read(&w->mem, *v + (uint64_t)ru->off, v);
		/* fall through */
	case UW_VAL_EXPR:
		ok = !dsi_uw_expr__eval(ops->v + ru->expr, ru->nexpr, w->regs, w->valid, true, cfa, &w->mem,
					v, &is_value);
		if (ok && ru->loc == UW_EXPR && !is_value)
			ok = mem_read(&w->mem, *v, v);
		return ok;
	case UW_UNDEF:
	default:
		return false;
	}
}

/*
 * One caller from @row: the registers of @w replaced by the caller's.
 * Returns an end reason, or -1 when the step succeeded.
 */
static int step_row(struct walk *w, const struct uw_row *row, const struct uw_opstore *ops)
{
	uint64_t cfa, vals[UW_MAX_REGS], v;
	uint32_t got = 0, nvalid, in = (1u << w->nregs) - 1;
	int end;

	if ((end = row_cfa(w, row, ops, &cfa)) >= 0)
		return end;
	/* the registers the row computes (from the callee's, so apart), then
	 * those it keeps as they are (UW_SAME) */
	for (uint32_t m = row->apply & in; m; m &= m - 1) {
		unsigned r = (unsigned)__builtin_ctz(m);

		if (caller_reg(w, &row->regs[r], r, cfa, ops, &v)) {
			vals[r] = v & w->mask;
			got |= 1u << r;
		}
	}
	/* the caller's stack pointer is the CFA on x86 unless a rule says otherwise */
	if (row->regs[w->sp].loc == UW_SAME || row->regs[w->sp].loc == UW_UNDEF) {
		vals[w->sp] = cfa & w->mask;
		got |= 1u << w->sp;
	}
	nvalid = (w->valid & row->same & in & ~got) | got;
	if (row->regs[w->ra].loc == UW_UNDEF)
		return DS_UNWIND_END_OUTERMOST;
	if (!(nvalid & (1u << w->ra)))
		return DS_UNWIND_END_LEFT_STACK;
	if (w->mask != ~0ull)
		for (unsigned r = 0; r < w->nregs; r++)
			w->regs[r] &= w->mask;
	for (uint32_t m = got; m; m &= m - 1) {
		unsigned r = (unsigned)__builtin_ctz(m);

		w->regs[r] = vals[r];
	}
	w->valid = nvalid;
	return -1;
}

/*
 * One caller through the frame-pointer chain, with the checks of libdw's
 * x86_64 fallback (perf 7.2's walk takes it wherever CFI gives no step): a
 * frame pointer of 0 ends the walk, an unreadable saved frame pointer
 * reads as 0, and the caller's stack pointer (bp + 2 words) must be above
 * the frame's.
 */
static int step_fp64(struct walk *w)
{
	uint64_t bp, sp, ra, nbp;

	if (!reg_get(w, w->fp, &bp) || !reg_get(w, w->sp, &sp) || !bp)
		return DS_UNWIND_END_NO_INFO;
	if (!mem_read(&w->mem, bp + 8, &ra))
		return DS_UNWIND_END_LEFT_STACK;
	if (!mem_read(&w->mem, bp, &nbp))
		nbp = 0;
	if (bp + 16 <= sp)
		return DS_UNWIND_END_NO_PROGRESS;
	w->regs[w->fp] = nbp;
	w->regs[w->sp] = bp + 16;
	w->regs[w->ra] = ra;
	w->valid = (1u << w->fp) | (1u << w->sp) | (1u << w->ra);
	return -1;
}

/*
 * The same by libdw's i386 fallback: a frame pointer below the stack
 * pointer, a return address of 0, and a saved frame pointer that is 0,
 * unreadable or not above the caller's stack pointer end the walk.  Its
 * reads are perf's 8-byte words (struct walk): the return address keeps
 * the word above it as its upper half (perf prints such a pc, e.g.
 * 30804c22f, as [unknown]), the frame pointer is cut to 32 bits only
 * after the check.
 */
static int step_fp32(struct walk *w)
{
	uint64_t bp, sp, ra, nbp;

	if (!reg_get(w, w->fp, &bp) || !reg_get(w, w->sp, &sp) || !bp || !sp || bp < sp)
		return DS_UNWIND_END_NO_INFO;
	if (!mem_read(&w->mem, bp + 4, &ra) || !ra)
		return DS_UNWIND_END_LEFT_STACK;
	if (!mem_read(&w->mem, bp, &nbp) || !nbp || bp + 8 >= nbp)
		return DS_UNWIND_END_NO_PROGRESS;
	w->regs[w->fp] = nbp & w->mask;
	w->regs[w->sp] = (bp + 8) & w->mask;
	w->regs[w->ra] = ra;
	w->valid = (1u << w->fp) | (1u << w->sp) | (1u << w->ra);
	return -1;
}

static int step_fp(struct walk *w)
{
	return w->word == 8 ? step_fp64(w) : step_fp32(w);
}

/*
 * One caller from a function's first instruction: the call just pushed
 * the return address, so it is the word at sp, and every other register
 * is the caller's.  x86's ABI guarantees this of any function, CFI or not.
 */
static int step_at_entry(struct walk *w)
{
	uint64_t sp, ra;

	if (!reg_get(w, w->sp, &sp))
		return DS_UNWIND_END_NO_INFO;
	if (!mem_read(&w->mem, sp, &ra))
		return DS_UNWIND_END_LEFT_STACK;
	w->regs[w->sp] = (sp + w->word) & w->mask;
	w->regs[w->ra] = ra & w->mask;
	w->valid |= (1u << w->sp) | (1u << w->ra);
	return -1;
}

static bool walk_init(struct walk *w, const struct ds_unwind_regs *in)
{
	uint64_t perf[64], mask = in->mask, seen = 0;
	const uint8_t *map;
	unsigned k = 0;

	memset(w, 0, sizeof(*w));
	for (unsigned b = 0; b < 64 && k < in->nr_regs; b++)
		if (mask & (1ull << b)) {
			perf[b] = in->regs[k++];
			seen |= 1ull << b;
		}
	if (in->abi == DS_REGS_ABI_64) {
		w->nregs = 17;
		w->sp = X64_RSP, w->fp = X64_RBP, w->ra = X64_RA, w->word = 8;
		w->mask = ~0ull;
		map = x64_perf;
	} else {
		w->nregs = 9;
		w->sp = X86_ESP, w->fp = X86_EBP, w->ra = X86_RA, w->word = 4;
		w->mask = 0xffffffffull;
		map = x86_perf;
	}
	for (unsigned r = 0; r < w->nregs; r++)
		if (seen & (1ull << map[r])) {
			w->regs[r] = perf[map[r]] & w->mask;
			w->valid |= 1u << r;
		}
	if (!(w->valid & (1u << w->ra)) || !(w->valid & (1u << w->sp)))
		return false;
	w->mem.stack = in->stack;
	w->mem.base = w->regs[w->sp];
	w->mem.size = in->stack ? in->stack_size : 0;
	w->mem.word = 8;
	return true;
}

static const struct ds_map *thread_map(void *t, uint64_t addr)
{
	return ds_thread__find_map(t, addr);
}

void ds_unwinder__unwind(struct ds_unwinder *u, struct ds_thread *t, const struct ds_evsel *evsel,
			 const struct ds_sample *s, uint64_t *ips, size_t max, struct ds_unwind_result *res)
{
	struct ds_unwind_regs in = {
		.abi = s->regs_user_abi, .mask = evsel->attr.sample_regs_user, .regs = s->regs_user,
		.nr_regs = evsel->nr_regs_user, .stack = s->stack_user, .stack_size = s->stack_user_dyn,
	};

	if (!ds_unwind__has_snapshot(evsel, s)) {
		memset(res, 0, sizeof(*res));
		res->end = DS_UNWIND_END_NO_REGS;
		return;
	}
	ds_unwinder__unwind_regs(u, thread_map, t, &in, ips, max, res);
}

/* A frame's unwinding rules: its binary's tables and the row at its address there. */
struct frame {
	struct uw_dso *d;
	const struct uw_row *row;
	uint64_t vaddr;
};

static bool is_vdso(const struct ds_map *map)
{
	return map->name && (!strcmp(map->name, "[vdso]") || !strcmp(map->name, "[vdso32]"));
}

/*
 * The maps one walk has met, with what was found for them: a walk goes
 * back and forth between a few binaries (the program, its C library), and
 * the task's maps, which are disjoint, do not change during it.
 */
struct map_seen {
	const struct ds_map *map;
	struct ds_dso *dso;               /* its binary (a vDSO map's: its image), NULL if none */
	struct uw_dso *d;                 /* its tables; NULL without memory */
	bool vdso;
};

#define MAP_CACHE 4

struct map_cache {
	struct map_seen v[MAP_CACHE];
	unsigned nr, next;
};

/* The map holding @look and what it gives, NULL if none. */
static const struct map_seen *map_seen(struct ds_unwinder *u, ds_unwind_find_map find, void *ctx, uint64_t look,
				       struct map_cache *mc)
{
	const struct ds_map *map;
	struct map_seen *ms;

	for (unsigned i = 0; i < mc->nr; i++)
		if (look >= mc->v[i].map->start && look < mc->v[i].map->end)
			return &mc->v[i];
	if (!(map = find(ctx, look)))
		return NULL;
	if (mc->nr < MAP_CACHE) {
		ms = &mc->v[mc->nr++];
	} else {
		ms = &mc->v[mc->next];
		mc->next = (mc->next + 1) % MAP_CACHE;
	}
	ms->map = map;
	ms->dso = u->machine ? ds_machine__map_dso(u->machine, map) : map->dso;
	ms->vdso = is_vdso(map);
	ms->d = ms->dso ? dso_tables(u, ms->dso) : NULL;
	return ms;
}

/*
 * Whether perf's libdw walk can report the binary of @map where @look, at
 * @vaddr in it, says it lies.  perf reports a binary at the map's start
 * less its file offset (a perf-injected JIT image at the map's start) and
 * takes a module already there only if it starts at that address: a map
 * of a segment whose addresses are not its file offsets plus the binary's
 * first page (the data segment of binutils' i386 and PIE links, one page
 * on) reports the binary again elsewhere, and the walk fails there.  Only
 * a bad return address lands in such a segment (a frame whose CFI misses
 * a push, glibc's i386 memcpy), so the walk rightly ends before it.  An
 * executable segment so placed (lld puts text a page past its file
 * offset) is reported all the same: perf prints the frame, then looks its
 * CFI up a page off and reads a wrong slot as the return address; ours
 * walks it by its own rows.
 */
static bool perf_reports_here(const struct uw_dso *d, const struct ds_map *map, bool vdso, uint64_t look,
			      uint64_t vaddr, bool text)
{
	uint64_t base;

	/*
	 * A jitdump's code (its image made to lie where its map says), and
	 * perf 7.2's own jitted images (a PT_LOAD of .text at 0x80): perf
	 * reports those at the map's start, 0x80 off, misses their CFI and
	 * walks on by the frame pointer; the CFI read where it lies gives
	 * the frames perf prints of CPython's trampolines
	 */
	if (d->first_page == UINT64_MAX || vdso || text ||
	    dsi_dso__is_jitdump(map->dso) || (map->name && !strncmp(map->name, "/tmp/jitted-", 12)))
		return true;
	base = map->start - map->pgoff;
	return look - vaddr + d->first_page == base;
}

/*
 * The rules of the frame at @look into *fr: -1, or the DS_UNWIND_END_*
 * that ends the walk there.  Frames are reported as perf 7.2's libdw walk
 * reports them: an address in no map at all is a frame of its own (fr->d
 * NULL), walked on by the frame pointer as libdw does where it finds no
 * CFI; an address in a map whose binary cannot be read (an anonymous
 * map, a file not found, the vDSO without its image) or reported there
 * (perf_reports_here) ends the walk unreported, as perf's module
 * reporting fails there.
 */
static int find_frame(struct ds_unwinder *u, ds_unwind_find_map find, void *ctx, uint64_t look,
		      struct map_cache *mc, struct frame *fr)
{
	const struct map_seen *ms = map_seen(u, find, ctx, look, mc);
	struct uw_dso *d;
	uint64_t off;
	struct uw_hint *h;
	bool text;

	fr->d = NULL;
	fr->row = NULL;
	if (!ms)
		return -1;
	if (!ms->dso)
		return ms->vdso ? DS_UNWIND_END_NO_VDSO : DS_UNWIND_END_NO_INFO;
	off = look - ms->map->start + ms->map->pgoff;
	if (!(d = fr->d = ms->d) || !d->img)
		return DS_UNWIND_END_NO_INFO;
	h = &d->hint[(off * 0x9e3779b97f4a7c15ull) >> (64 - HINT_BITS)];
	if (h->nr == d->nr + 1 && h->off == off) {
		fr->vaddr = h->vaddr;
		if (!perf_reports_here(d, ms->map, ms->vdso, look, fr->vaddr, h->text))
			return DS_UNWIND_END_NO_INFO;
		fr->row = &d->rows[h->row];
		return -1;
	}
	if (!dsi_elf__off_to_vaddr(d->img, off, &fr->vaddr))
		return DS_UNWIND_END_NO_INFO;
	text = in_text(d, fr->vaddr);
	if (!perf_reports_here(d, ms->map, ms->vdso, look, fr->vaddr, text) || !(fr->row = rules(d, fr->vaddr)))
		return DS_UNWIND_END_NO_INFO;
	h->text = text;
	h->off = off;
	h->vaddr = fr->vaddr;
	h->nr = d->nr + 1;
	h->row = (size_t)(fr->row - d->rows);
	return -1;
}

/*
 * A pc at the first instruction of a function of a binary without DWARF
 * CFI (an SFrame-only or stripped one: crtstuff's functions have no SFrame
 * entry either, and a sample lands on their first instruction when its
 * page faults in).  Where the binary has CFI, perf's libdw walk takes the
 * frame pointer here, and so does ours, to print what perf prints.
 */
static bool at_function_start(const struct frame *fr)
{
	const struct ds_sym *s;

	if (!fr->d || fr->d->eh || fr->d->dbg)
		return false;
	s = dsi_symtab__find(&fr->d->img->symtab, fr->vaddr);
	return s && s->start == fr->vaddr;
}

/*
 * The caller's registers into @w by the frame's rules (CFI, SFrame, else
 * the frame pointer), counted in res->steps: -1, or the DS_UNWIND_END_*
 * that ends the walk (the ELF entry point, a rule that cannot be applied,
 * a stack pointer that did not move up but in a signal frame).  @sp: the
 * frame's own stack pointer; @exact: its pc is where it stopped (the
 * sampled frame, or one a signal interrupted), not a return address.
 */
static int step_frame(struct walk *w, const struct frame *fr, uint64_t sp, bool exact, struct ds_unwind_result *res)
{
	const struct uw_row *row = fr->row;
	enum ds_unwind_method how;
	bool by_fp = false;
	int end;

	if (row && row->kind == UW_ROW_NONE && fr->vaddr >= fr->d->entry && fr->vaddr < fr->d->entry_end) {
		/* the ELF entry point (_start) has no caller; only binaries
		 * stripped of their CFI get here */
		return DS_UNWIND_END_OUTERMOST;
	}
	if (row && row->kind != UW_ROW_NONE) {
		how = row->kind == UW_ROW_CFI ? DS_UNWIND_CFI : row->kind == UW_ROW_SFRAME ? DS_UNWIND_SFRAME : DS_UNWIND_PLT;
		end = step_row(w, row, &fr->d->ops);
	} else if (exact && at_function_start(fr)) {
		how = DS_UNWIND_FP;
		end = step_at_entry(w);
	} else {
		how = DS_UNWIND_FP;
		end = step_fp(w);
		by_fp = true;
	}
	if (end >= 0)
		return end;
	/*
	 * The caller's stack pointer must be above this frame's, but in a
	 * signal frame; a frame at its exact pc may leave it where it is: a
	 * return address in a register, nothing left on the stack
	 * (libgcc's _Unwind_RaiseException jumping to a landing pad through
	 * %rcx, CFA rsp+0).  Only the first frame and those a signal
	 * interrupted are exact, so this makes no loop.
	 */
	if (!(w->valid & (1u << w->sp)) ||
	    ((w->regs[w->sp] < sp || (w->regs[w->sp] == sp && !exact)) && !(row && row->signal)))
		return DS_UNWIND_END_NO_PROGRESS;
	w->by_fp = by_fp;
	res->steps[how]++;
	return -1;
}

/*
 * Whether the walk ends at the caller's return address 0.  CFI's 0 is
 * the outermost frame (libdw's "pc undefined", as glibc's _start and
 * clone3 leave it).  perf's frame-pointer fallback (libdw's x86_64
 * backend) sets the pc whatever it read: a 0 there is a frame, which perf
 * reports at pc - 1 (ffffffffffffffff [unknown]) and walks on from by the
 * frame pointer it read; ours does the same on x86_64.  libdw's i386
 * fallback stops at a 0 itself (step_fp32).
 */
static bool zero_ra_ends(const struct walk *w)
{
	return w->regs[w->ra] == 0 && !(w->by_fp && w->word == 8);
}

void ds_unwinder__unwind_regs(struct ds_unwinder *u, ds_unwind_find_map find, void *ctx,
			      const struct ds_unwind_regs *in, uint64_t *ips, size_t max,
			      struct ds_unwind_result *res)
{
	struct walk w;
	struct map_cache mc = { .nr = 0 };
	bool activation = true;   /* the pc is exact, not a return address */
	size_t taken = 0;         /* frames walked, those at 0 (not written) included */
	int end;

	memset(res, 0, sizeof(*res));
	if (!in->regs || (in->abi != DS_REGS_ABI_32 && in->abi != DS_REGS_ABI_64) || !walk_init(&w, in) || !max) {
		res->end = DS_UNWIND_END_NO_REGS;
		return;
	}
	for (;;) {
		uint64_t pc = w.regs[w.ra], look = activation ? pc : pc - 1, sp = w.regs[w.sp];
		struct frame fr;
		uint64_t ip;

		if ((end = find_frame(u, find, ctx, look, &mc, &fr)) >= 0)
			break;
		/* a signal frame's own address is exact too (its caller's pc is) */
		ip = activation || (fr.row && fr.row->signal) ? pc : pc - 1;
		/* perf counts a frame at 0 against --max-stack but prints none */
		if (ip)
			ips[res->nr++] = ip;
		if (++taken >= max) {
			end = DS_UNWIND_END_MAX_FRAMES;
			break;
		}
		if ((end = step_frame(&w, &fr, sp, activation, res)) >= 0)
			break;
		activation = fr.row && fr.row->signal;
		if (zero_ra_ends(&w)) {
			end = DS_UNWIND_END_OUTERMOST;
			break;
		}
	}
	res->end = (enum ds_unwind_end)end;
}
