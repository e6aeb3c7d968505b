// SPDX-License-Identifier: MIT
/*
 * The ends of a branch in perf report's branch view (report_branch.h).
 * Measured against perf 7.2 on recordings with branch stacks
 * (tests/suites/20-report.sh, report_branch_stacks_vs_perf7).
 */
#include <stdio.h>
#include <string.h>
#include "analysis/report_branch.h"
#include "dstack/machine.h"
#include "util/hashmap.h"

bool dsi_branch_side__resolve(const struct ds_profile_sample *s, uint64_t addr, struct branch_side *out,
			  struct ds_resolved *res)
{
	const char *short_name;
	size_t last;

	*out = (struct branch_side){ .addr = addr, .al_addr = addr };
	if (!ds_machine__resolve_any(s->machine, s->thread, addr, res, &out->level))
		return false;
	short_name = ds_machine__dso_short_name(s->machine, res->dso);
	out->dso = short_name ? short_name : ds_dso__short_name(res->dso, res->kernel, NULL, 0);
	out->al_addr = res->addr;
	last = res->nr_frames ? res->nr_frames - 1 : 0;
	if (res->frames[0].elf_name || res->frames[last].name) {
		out->sym = res->frames[0].elf_name ? res->frames[0].elf_name : res->frames[last].name;
		out->start = (res->kernel ? addr : res->addr) - res->frames[last].offset;
		out->end = out->start + res->frames[last].size;
		/* perf's "+0x" of a data object: its map-relative address less the symbol's absolute start */
		out->object = res->frames[last].object && !res->kernel;
		out->obj_off = res->addr - (out->start + res->map_start - res->map_pgoff);
	}
	return true;
}

bool dsi_branch_side__eq(const struct branch_side *a, const struct branch_side *b)
{
	if (!a->sym || !b->sym)
		return !a->sym && !b->sym && a->addr == b->addr;
	return a->start == b->start && a->end == b->end;
}

uint64_t dsi_branch_side__hash(const struct branch_side *s)
{
	return s->sym ? dsi_hash_pair(s->start, s->end) : dsi_hash64(s->addr);
}

bool dsi_branch_dso__eq(const struct branch_side *a, const struct branch_side *b)
{
	return a->dso == b->dso || (a->dso && b->dso && !strcmp(a->dso, b->dso));
}

/* -1, 0, 1 as @v: perf's differences, signed */
static int sign(int64_t v)
{
	return (v > 0) - (v < 0);
}

int dsi_branch_side__cmp(const struct branch_side *a, const struct branch_side *b)
{
	/* perf's sort__sym_from_cmp (and _to): its value with @a left, negated */
	if (!a->sym && !b->sym)
		return -sign((int64_t)(b->addr - a->addr));
	if (!a->sym || !b->sym)
		return a->sym ? -1 : 1;
	if (a->start != b->start)
		return -sign((int64_t)(b->start - a->start));
	return -sign((int64_t)(b->end - a->end));
}

int dsi_branch_dso__cmp(const struct branch_side *a, const struct branch_side *b)
{
	/* perf's sort__dso_from_cmp (and _to), negated */
	if (!a->dso || !b->dso)
		return !a->dso == !b->dso ? 0 : a->dso ? 1 : -1;
	return -sign(strcmp(a->dso, b->dso));
}

size_t dsi_branch_side__text(const struct branch_side *s, char *buf, size_t n)
{
	int len;

	if (s->sym && s->object)
		len = snprintf(buf, n, "[%c] %s+0x%llx", s->level, s->sym, (unsigned long long)s->obj_off);
	else if (s->sym)
		len = snprintf(buf, n, "[%c] %s", s->level, s->sym);
	else if (s->al_addr)
		len = snprintf(buf, n, "[%c] 0x%016llx", s->level, (unsigned long long)s->al_addr);
	else   /* "%#" prints no 0x for zero */
		len = snprintf(buf, n, "[%c] %016llx", s->level, 0ULL);
	return len < 0 ? 0 : (size_t)len < n ? (size_t)len : n - 1;
}

size_t dsi_branch_side__width(const struct branch_side *s)
{
	return s->sym ? strlen(s->sym) + 4 : 16 + 4 + 2;
}

size_t dsi_branch_dso__width(const struct branch_side *s)
{
	return s->sym ? (s->dso ? strlen(s->dso) : 9) : 16;
}
