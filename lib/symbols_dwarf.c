// SPDX-License-Identifier: MIT
/*
 * Inline chains from DWARF (libdw): the DW_TAG_inlined_subroutine and
 * DW_TAG_subprogram DIEs whose ranges contain an address, innermost first,
 * named the way perf names inline frames (demangled linkage name, else
 * DW_AT_name, else "??").
 */
#include <dwarf.h>

#include "symbols_int.h"

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
			    struct ds_hashmap *cache)
{
	const char *raw = die_raw_name(die), *name;
	uint64_t *hit;

	if (!raw)
		raw = "??";        /* what perf prints for a nameless inline frame */
	hit = ds_hashmap__find(cache, (uint64_t)(uintptr_t)raw);
	if (hit)
		return (const char *)(uintptr_t)*hit;
	name = ds_intern__sym(in, raw, demangle);
	if (name)
		ds_hashmap__set(cache, (uint64_t)(uintptr_t)raw, (uint64_t)(uintptr_t)name);
	return name;
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
 * Descend from @parent into the child scope whose ranges hold w->pc,
 * recording code scopes.  true once a code scope was found below @parent.
 * Our own walk rather than dwarf_getscopes(): that one follows inlined
 * instances into their abstract origin (we need the concrete callers) and
 * leaks its array on some corrupt inputs.
 */
static bool walk_scopes(struct walk *w, Dwarf_Die *parent, unsigned depth)
{
	Dwarf_Die child;

	if (depth >= MAX_DEPTH || dwarf_child(parent, &child) != 0)
		return false;
	do {
		int tag = dwarf_tag(&child);

		if (is_code_scope(tag)) {
			if (dwarf_haspc(&child, w->pc) <= 0 || w->n >= MAX_DEPTH)
				continue;
			w->chain[w->n++] = child;
			walk_scopes(w, &w->chain[w->n - 1], depth + 1);
			return true;
		}
		if (is_container(tag) && walk_scopes(w, &child, depth + 1))
			return true;
	} while (dwarf_siblingof(&child, &child) == 0);
	return false;
}

size_t ds_dwarf__inlines(Dwarf *dw, uint64_t vaddr, struct ds_intern *in, bool demangle,
			 struct ds_hashmap *cache, struct ds_inline_frame *out, size_t max)
{
	struct walk walk = { .pc = vaddr }, *w = &walk;   /* a few KB of stack */
	Dwarf_Die cu;
	size_t n = 0;

	if (!dwarf_addrdie(dw, vaddr, &cu))
		return 0;
	walk_scopes(w, &cu, 0);
	/* innermost first; the chain ends at the innermost out-of-line function */
	for (size_t i = w->n; i-- > 0 && n < max;) {
		int tag = dwarf_tag(&w->chain[i]);

		if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_subprogram)
			continue;
		out[n++].name = die_name(&w->chain[i], in, demangle, cache);
		if (tag == DW_TAG_subprogram)
			break;
	}
	return n;
}
