/* SPDX-License-Identifier: MIT */
/*
 * The ends of a branch as perf report's branch view takes them: what
 * perf report shows by default for a recording made with branch stacks
 * (-b, LBR; the BRANCH_STACK header feature), an entry per branch of
 * weight 1.  Its keys (comm,dso_from,symbol_from,symbol_to,cycles by
 * default, or those --sort names) are lib/analysis/report*.c's entries; this is how
 * each end is resolved (perf's ip__resolve_ams), told apart, ordered,
 * sized and printed, as perf 7.2 does.
 *
 * The strings a branch_side points at live as long as the walk that
 * resolved it (the machine's names, the symbol tables'): the report is
 * printed before the walk ends.
 *
 * Who may use it: lib/analysis/report*.c.
 */
#ifndef DSTACK_ANALYSIS_REPORT_BRANCH_H
#define DSTACK_ANALYSIS_REPORT_BRANCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "dstack/profile.h"

/* One end of a branch as perf resolves it */
struct branch_side {
	const char *dso;     /* short name; NULL: in no map ("[unknown]") */
	const char *sym;     /* symbol-table name; NULL: none */
	uint64_t start, end; /* the symbol's, in its object (the kernel's: absolute) */
	uint64_t addr;       /* the branch's address */
	uint64_t al_addr;    /* in its object (perf's map__map_ip), addr in no map */
	uint64_t obj_off;    /* a data object's offset as perf prints it */
	char level;          /* '.', 'k', 'H' (in no map) */
	bool object;         /* sym is a data object (STT_OBJECT) */
};

/* A branch's source and target, and its cycles (the branch entry's flags, bits 4 to 19) */
struct branch_ends {
	struct branch_side from, to;
	uint16_t cycles;
};

/*
 * @addr as perf resolves a branch's end of sample @s: the cpumode is not
 * known, so a user map of the thread first, then the kernel's, else none.
 * The resolution itself into *@res: true where a map holds @addr.
 */
bool dsi_branch_side__resolve(const struct ds_profile_sample *s, uint64_t addr, struct branch_side *out,
			  struct ds_resolved *res);

/* perf's equal ends (its symbol_from/symbol_to keys): one symbol, or no symbol at one address */
bool dsi_branch_side__eq(const struct branch_side *a, const struct branch_side *b);
uint64_t dsi_branch_side__hash(const struct branch_side *s);
/* perf's equal objects (dso_from/dso_to): one short name, or none */
bool dsi_branch_dso__eq(const struct branch_side *a, const struct branch_side *b);

/*
 * perf's comparisons of two ends, as report's comparators take them
 * (< 0: @a left of @b in perf's trees, and first in its output): symbols
 * by start and end, none last, two without by address; objects by short
 * name descending, none first.
 */
int dsi_branch_side__cmp(const struct branch_side *a, const struct branch_side *b);
int dsi_branch_dso__cmp(const struct branch_side *a, const struct branch_side *b);

/* A symbol column's text as perf's _hist_entry__sym_snprintf: "[k] name", or the address in 16 digits */
size_t dsi_branch_side__text(const struct branch_side *s, char *buf, size_t n);

/* The width perf gives a symbol column for @s (hists__calc_col_len): the name's and "[k] ", or an address's */
size_t dsi_branch_side__width(const struct branch_side *s);

/*
 * The width perf gives an object column for @s: its name's where the end
 * has a symbol; one without widens it to an address's 16 digits
 * (hists__set_unres_dso_col_len).
 */
size_t dsi_branch_dso__width(const struct branch_side *s);

#endif
