// SPDX-License-Identifier: MIT
/*
 * Inline chains from DWARF (libdw): the DW_TAG_inlined_subroutine and
 * DW_TAG_subprogram DIEs whose ranges contain an address, innermost first,
 * named the way perf names inline frames (demangled linkage name, else
 * DW_AT_name, else "??").
 *
 * Finding the outermost scope walks the CU's DIEs from the start; a CU's
 * first lookup (with a cache) records its outermost code scopes' address
 * ranges instead, and later lookups search those: a walk per lookup costs
 * the CU's size every time, and a C++ CU can hold 10^5 DIEs
 * (docs/performance.md).
 */
#include <dwarf.h>
#include <stdlib.h>

#include "util/grow.h"
#include "symbols/symbols_int.h"

/* The raw (mangled) name of a function DIE, through its abstract origin. */
static const char *die_raw_name(Dwarf_Die *die)
{
	Dwarf_Attribute a;
	const char *s = NULL;

	if (dwarf_attr_integrate(die, DW_AT_linkage_name, &a) ||
	    dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a))
		s = dwarf_formstring(&a);
	if (!s && dwarf_attr_integrate(die, DW_AT_name, &a))
		s = dwarf_formstring(&a);
	return s;
}

/*
 * Interned name; @cache maps the raw string's address (stable while the
 * Dwarf is open) to the interned result so a name is demangled once.
 */
static const char *die_name(Dwarf_Die *die, struct ds_intern *in, bool demangle,
			    struct dsi_hashmap *cache)
{
	const char *raw = die_raw_name(die), *name;
	uint64_t *hit;

	if (!raw)
		raw = "??";        /* what perf prints for a nameless inline frame */
	hit = dsi_hashmap__find(cache, (uint64_t)(uintptr_t)raw);
	if (hit)
		return (const char *)(uintptr_t)*hit;
	name = dsi_intern__sym(in, raw, demangle);
	if (name)
		dsi_hashmap__set(cache, (uint64_t)(uintptr_t)raw, (uint64_t)(uintptr_t)name);
	return name;
}

/*
 * Whether binutils' addr2line takes @die's name as not a linkage name: its
 * CU's language mangles names, or may (everything but C, Fortran 77/2018+,
 * Cobol, Pascal, PL/I, UPC and assembler: binutils' mangle_style()), and the
 * DIE has no DW_AT_linkage_name (main, an extern "C" function such as
 * glibc's inline atoi in C++).  compute_frames() (symbols.c) says what perf
 * then prints.
 */
#ifndef DW_LANG_C17
#define DW_LANG_C17 0x2c
#endif
#ifndef DW_LANG_Fortran18
#define DW_LANG_Fortran18 0x2d
#endif
#ifndef DW_LANG_Assembly
#define DW_LANG_Assembly 0x31
#endif
#ifndef DW_LANG_C23
#define DW_LANG_C23 0x3e
#endif
#ifndef DW_LANG_Fortran23
#define DW_LANG_Fortran23 0x3f
#endif
static bool die_unlinked(Dwarf_Die *die, int lang)
{
	Dwarf_Attribute a;

	switch (lang) {
	case DW_LANG_C89: case DW_LANG_C: case DW_LANG_C99: case DW_LANG_C11:
	case DW_LANG_C17: case DW_LANG_C23: case DW_LANG_Cobol74: case DW_LANG_Cobol85:
	case DW_LANG_Fortran77: case DW_LANG_Fortran18: case DW_LANG_Fortran23:
	case DW_LANG_Pascal83: case DW_LANG_PLI: case DW_LANG_UPC:
	case DW_LANG_Mips_Assembler: case DW_LANG_Assembly:
		return false;
	}
	return !dwarf_attr_integrate(die, DW_AT_linkage_name, &a) &&
	       !dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a);
}

/*
 * The low end of @die's first address range as binutils keeps it (a later
 * range that ends where it starts extends it down, one that starts where it
 * ends extends it up); 0 if it has none.
 */
static uint64_t die_first_low(Dwarf_Die *die)
{
	Dwarf_Addr base, lo, hi, first_lo = 0, first_hi = 0;
	ptrdiff_t off = 0;

	while ((off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0) {
		if (lo == hi)
			continue;
		if (!first_hi) {
			first_lo = lo;
			first_hi = hi;
		} else if (lo == first_hi) {
			first_hi = hi;
		} else if (hi == first_lo) {
			first_lo = lo;
		}
	}
	return first_lo;
}

#define MAX_DEPTH 128   /* DIE nesting we follow; deeper (hostile) trees are cut */

struct walk {
	uint64_t pc;
	Dwarf_Die chain[MAX_DEPTH];   /* outermost first */
	size_t n;
};

/* Scopes that may contain code (checked against pc), as libdw's getscopes. */
static bool is_code_scope(int tag)
{
	switch (tag) {
	case DW_TAG_subprogram:
	case DW_TAG_inlined_subroutine:
	case DW_TAG_lexical_block:
	case DW_TAG_entry_point:
	case DW_TAG_try_block:
	case DW_TAG_catch_block:
	case DW_TAG_with_stmt:
	case DW_TAG_module:
		return true;
	}
	return false;
}

/* Containers without addresses that can hold function definitions (C++). */
static bool is_container(int tag)
{
	return tag == DW_TAG_namespace || tag == DW_TAG_class_type ||
	       tag == DW_TAG_structure_type || tag == DW_TAG_union_type;
}

/*
 * Descend from @parent into the child scope whose ranges hold @pc,
 * appending code scopes to @chain from *@n on (at most @max, and no deeper
 * than @max levels).  true once a code scope was found below @parent.
 * Our own walk rather than dwarf_getscopes(): that one follows inlined
 * instances into their abstract origin (we need the concrete callers) and
 * leaks its array on some corrupt inputs.
 */
bool dsi_dwarf__scopes_at(Dwarf_Die *parent, uint64_t pc, Dwarf_Die *chain, size_t *n, size_t max, unsigned depth)
{
	Dwarf_Die child;

	if (depth >= max || dwarf_child(parent, &child) != 0)
		return false;
	do {
		int tag = dwarf_tag(&child);

		if (is_code_scope(tag)) {
			if (dwarf_haspc(&child, pc) <= 0 || *n >= max)
				continue;
			chain[(*n)++] = child;
			dsi_dwarf__scopes_at(&chain[*n - 1], pc, chain, n, max, depth + 1);
			return true;
		}
		if (is_container(tag) && dsi_dwarf__scopes_at(&child, pc, chain, n, max, depth + 1))
			return true;
	} while (dwarf_siblingof(&child, &child) == 0);
	return false;
}

static bool walk_scopes(struct walk *w, Dwarf_Die *parent, unsigned depth)
{
	return dsi_dwarf__scopes_at(parent, w->pc, w->chain, &w->n, MAX_DEPTH, depth);
}

/* Length of @die's address range that holds @pc; UINT64_MAX if none does. */
static uint64_t range_len_at(Dwarf_Die *die, uint64_t pc)
{
	Dwarf_Addr base, lo, hi;
	ptrdiff_t off = 0;

	while ((off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0)
		if (lo <= pc && pc < hi)
			return hi - lo;
	return UINT64_MAX;
}

/*
 * Sibling functions covering the same code (an assembler source: gas gives
 * each alias of a function its own DW_TAG_subprogram, __munmap,
 * __GI___munmap, munmap, __GI_munmap): binutils' addr2line, which perf
 * 7.2's inline lookup runs, takes the one with the smallest range holding
 * the address and, among equal ones, the last.  @first is the scope the walk
 * chose (the first holding pc); replaced by a later sibling that fits better.
 */
static void prefer_last_alias(struct walk *w, uint64_t pc)
{
	Dwarf_Die sib = w->chain[0];
	uint64_t best = range_len_at(&w->chain[0], pc);

	if (dwarf_tag(&w->chain[0]) != DW_TAG_subprogram)
		return;
	while (dwarf_siblingof(&sib, &sib) == 0) {
		uint64_t len;

		if (dwarf_tag(&sib) != DW_TAG_subprogram || dwarf_haspc(&sib, pc) <= 0)
			continue;
		len = range_len_at(&sib, pc);
		if (len <= best) {
			best = len;
			w->chain[0] = sib;
		}
	}
}

/* ---- the outermost code scopes of a CU, by address ------------------- */

/* One address range of an outermost code scope. */
struct scope_range {
	uint64_t lo, hi;           /* [lo, hi) */
	Dwarf_Off off;             /* the scope's DIE */
	uint32_t order;            /* its place in walk_scopes()'s order: the first one holding pc wins */
	uint32_t depth;            /* walk_scopes()'s depth for it */
};

struct cu_scopes {
	struct scope_range *v;
	size_t nr, cap;
	uint32_t next_order;
	bool overlap;              /* ranges overlap (not in a sane file): search them all */
	bool failed;               /* ENOMEM while building: walk the DIEs instead */
};

static void add_ranges(struct cu_scopes *c, Dwarf_Die *die, unsigned depth)
{
	Dwarf_Addr base, lo, hi;
	uint32_t order = c->next_order++;
	size_t first = c->nr;
	ptrdiff_t off = 0;

	while ((off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0) {
		if (lo >= hi)
			continue;
		struct scope_range *n = dsi_grow(c->v, &c->cap, c->nr + 1, sizeof(*n), 64);

		if (!n) {
			c->failed = true;
			return;
		}
		c->v = n;
		c->v[c->nr++] = (struct scope_range){ .lo = lo, .hi = hi, .off = dwarf_dieoffset(die),
						      .order = order, .depth = depth };
	}
	if (off < 0)   /* bad ranges: dwarf_haspc() fails for this scope, so the walk skips it */
		c->nr = first;
}

/* The code scopes walk_scopes() would test below @parent, in its order. */
static void collect_scopes(struct cu_scopes *c, Dwarf_Die *parent, unsigned depth)
{
	Dwarf_Die child;

	if (depth >= MAX_DEPTH || dwarf_child(parent, &child) != 0)
		return;
	do {
		int tag = dwarf_tag(&child);

		if (is_code_scope(tag))
			add_ranges(c, &child, depth);
		else if (is_container(tag))
			collect_scopes(c, &child, depth + 1);
	} while (!c->failed && dwarf_siblingof(&child, &child) == 0);
}

static int range_cmp(const void *pa, const void *pb)
{
	const struct scope_range *a = pa, *b = pb;

	if (a->lo != b->lo)
		return a->lo < b->lo ? -1 : 1;
	return a->order < b->order ? -1 : a->order > b->order;
}

static struct cu_scopes *cu_scopes_build(Dwarf_Die *cu)
{
	struct cu_scopes *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	collect_scopes(c, cu, 0);
	if (c->failed) {
		free(c->v);
		c->v = NULL;
		c->nr = 0;
		return c;
	}
	if (c->nr > 1)   /* none at all (a CU of declarations): v is NULL, and qsort(NULL) is UB */
		qsort(c->v, c->nr, sizeof(*c->v), range_cmp);
	for (size_t i = 1; i < c->nr; i++)
		if (c->v[i].lo < c->v[i - 1].hi)
			c->overlap = true;
	return c;
}

/* The CU's scopes (built at its first lookup), NULL when they cannot be had. */
static struct cu_scopes *cu_scopes_of(struct ds_dwarf_cache *cache, Dwarf_Die *cu)
{
	uint64_t key = dwarf_dieoffset(cu);
	uint64_t *slot = dsi_hashmap__find(&cache->cus, key);
	struct cu_scopes *c;

	if (slot)
		return (struct cu_scopes *)(uintptr_t)*slot;
	c = cu_scopes_build(cu);
	if (c && dsi_hashmap__set(&cache->cus, key, (uint64_t)(uintptr_t)c) < 0) {
		free(c->v);
		free(c);
		return NULL;
	}
	return c;
}

/* The range walk_scopes() would pick for @pc: the first in its order holding it; NULL if none. */
static const struct scope_range *scope_at(const struct cu_scopes *c, uint64_t pc)
{
	const struct scope_range *best = NULL;
	size_t lo = 0, hi = c->nr;

	if (c->overlap) {
		for (size_t i = 0; i < c->nr; i++)
			if (c->v[i].lo <= pc && pc < c->v[i].hi && (!best || c->v[i].order < best->order))
				best = &c->v[i];
		return best;
	}
	while (lo < hi) {   /* the last range starting at or below pc */
		size_t mid = lo + (hi - lo) / 2;

		if (c->v[mid].lo <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && pc < c->v[lo - 1].hi ? &c->v[lo - 1] : NULL;
}

/* walk_scopes() from the CU, through its scopes if it has them. */
static void cu_walk(Dwarf *dw, struct ds_dwarf_cache *cache, struct walk *w, Dwarf_Die *cu)
{
	struct cu_scopes *c = cache ? cu_scopes_of(cache, cu) : NULL;
	const struct scope_range *r;

	if (!c || c->failed) {
		walk_scopes(w, cu, 0);
		return;
	}
	r = scope_at(c, w->pc);
	if (!r || !dwarf_offdie(dw, r->off, &w->chain[0]))
		return;
	w->n = 1;
	if (c->overlap)
		prefer_last_alias(w, w->pc);
	walk_scopes(w, &w->chain[0], r->depth + 1);
}

void dsi_dwarf_cache__init(struct ds_dwarf_cache *c)
{
	dsi_hashmap__init(&c->names);
	dsi_hashmap__init(&c->cus);
	dsi_hashmap__init(&c->a2l);
}

void dsi_dwarf_cache__exit(struct ds_dwarf_cache *c)
{
	uint64_t k, v;

	for (size_t i = 0; dsi_hashmap__next(&c->cus, &i, &k, &v);) {
		struct cu_scopes *cs = (struct cu_scopes *)(uintptr_t)v;

		free(cs->v);
		free(cs);
	}
	dsi_hashmap__exit(&c->cus);
	dsi_hashmap__exit(&c->names);
	dsi_hashmap__exit(&c->a2l);
}

struct ds_cu_range {
	uint64_t start, end;
	Dwarf_Off cu;              /* the CU DIE's offset */
};

#define CU_RANGES_MAX (1u << 20)   /* a hostile file's ranges stop being indexed there */

static int cu_range_cmp(const void *pa, const void *pb)
{
	const struct ds_cu_range *a = pa, *b = pb;

	return a->start < b->start ? -1 : a->start > b->start;
}

void dsi_dwarf__index_cus(struct ds_elf_image *img)
{
	Dwarf_Aranges *ar;
	size_t nar = 0, n = 0, cap = 0;
	Dwarf_Off off = 0, next;
	size_t hsize;
	struct ds_cu_range *v = NULL;

	if (!img->dwarf || (dwarf_getaranges(img->dwarf, &ar, &nar) == 0 && nar > 0))
		return;
	while (n < CU_RANGES_MAX && dwarf_nextcu(img->dwarf, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu;
		Dwarf_Addr base, start, end;
		ptrdiff_t it = 0;

		if (dwarf_offdie(img->dwarf, off + hsize, &cu)) {
			while (n < CU_RANGES_MAX && (it = dwarf_ranges(&cu, it, &base, &start, &end)) > 0) {
				if (end <= start)
					continue;
				if (n == cap) {
					struct ds_cu_range *nv = dsi_grow(v, &cap, n + 1, sizeof(*v), 64);

					if (!nv)
						goto done;
					v = nv;
				}
				v[n++] = (struct ds_cu_range){ start, end, dwarf_dieoffset(&cu) };
			}
		}
		if (next <= off)
			break;
		off = next;
	}
done:
	if (!n) {
		free(v);
		return;
	}
	qsort(v, n, sizeof(*v), cu_range_cmp);
	img->cu_ranges = v;
	img->nr_cu_ranges = n;
}

Dwarf_Die *dsi_dwarf__addrdie(const struct ds_elf_image *img, uint64_t vaddr, Dwarf_Die *cu)
{
	size_t lo = 0, hi = img->nr_cu_ranges;

	if (!img->dwarf)
		return NULL;
	if (!img->nr_cu_ranges)
		return dwarf_addrdie(img->dwarf, vaddr, cu);
	while (lo < hi) {   /* the first range starting past vaddr */
		size_t mid = lo + (hi - lo) / 2;

		if (img->cu_ranges[mid].start <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* ranges of one CU do not overlap another's: the one starting last at or below */
	if (!lo || vaddr >= img->cu_ranges[lo - 1].end)
		return NULL;
	return dwarf_offdie(img->dwarf, img->cu_ranges[lo - 1].cu, cu);
}

size_t dsi_dwarf__a2l_depth(Dwarf_Die *chain, size_t n)
{
	while (n > 0) {
		int tag = dwarf_tag(&chain[n - 1]);
		Dwarf_Attribute a;

		if ((tag == DW_TAG_inlined_subroutine || tag == DW_TAG_subprogram) &&
		    !(dwarf_attr(&chain[n - 1], DW_AT_ranges, &a) && dwarf_whatform(&a) == DW_FORM_rnglistx))
			break;
		n--;
	}
	return n;
}

size_t dsi_dwarf__inlines(const struct ds_elf_image *img, uint64_t vaddr, struct ds_intern *in, bool demangle,
			 struct ds_dwarf_cache *cache, struct ds_inline_frame *out, size_t max)
{
	struct walk walk = { .pc = vaddr }, *w = &walk;   /* a few KB of stack */
	struct dsi_hashmap no_cache;   /* names for this call only, when there is no cache */
	struct dsi_hashmap *names = cache ? &cache->names : &no_cache;
	Dwarf_Die cu;
	size_t n = 0;
	int lang;

	dsi_hashmap__init(&no_cache);
	if (!img->dwarf || !dsi_dwarf__addrdie(img, vaddr, &cu))
		return 0;
	lang = dwarf_srclang(&cu);
	cu_walk(img->dwarf, cache, w, &cu);
	/* innermost first (as addr2line finds it); the chain ends at the innermost out-of-line function */
	for (size_t i = dsi_dwarf__a2l_depth(w->chain, w->n); i-- > 0 && n < max;) {
		int tag = dwarf_tag(&w->chain[i]);

		if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_subprogram)
			continue;
		out[n++] = (struct ds_inline_frame){
			.name = die_name(&w->chain[i], in, demangle, names),
			.die = dwarf_dieoffset(&w->chain[i]),
			.low = die_first_low(&w->chain[i]),
			.unlinked = die_unlinked(&w->chain[i], lang),
		};
		if (tag == DW_TAG_subprogram)
			break;
	}
	dsi_hashmap__exit(&no_cache);   /* empty when there is a cache */
	return n;
}
