// SPDX-License-Identifier: MIT
/*
 * report's branch view (report_branch.h): perf report's SORT_MODE__BRANCH
 * with its default keys, comm,dso_from,symbol_from,symbol_to,cycles (the
 * view with keys of the sample view is cmd_report.c's own entries, one per
 * branch: count_branches).  Measured against perf 7.2 on recordings with branch stacks
 * (tests/suites/20-report.sh, report_branch_stacks_vs_perf7).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/report_branch.h"
#include "cli/report_text.h"
#include "dstack/machine.h"
#include "util/grow.h"
#include "util/hashmap.h"
#include "util/idmap.h"
#include "util/strset.h"

#define BV_EVENTS 4096   /* as report's EVENTS_MAX: every event a reader takes from a file */

/* One end of a branch as perf resolves it (ip__resolve_ams) */
struct bside {
	const char *dso;     /* short name; NULL: in no map ("[unknown]") */
	const char *sym;     /* symbol-table name; NULL: none */
	uint64_t start, end; /* the symbol's, in its object (the kernel's: absolute) */
	uint64_t addr;       /* the branch's address */
	uint64_t al_addr;    /* in its object (perf's map__map_ip), addr in no map */
	uint64_t obj_off;    /* a data object's offset as perf prints it */
	char level;          /* '.', 'k', 'H' (in no map) */
	bool object;         /* sym is a data object (STT_OBJECT) */
};

struct bentry {
	uint32_t ev;         /* the event's index in the file */
	int32_t tid;         /* its first sample's: perf sizes the Command column by that thread */
	const char *comm;
	struct bside from, to;
	uint16_t cycles;
	uint64_t count;
	/*
	 * perf's latency of the entry: each branch adds its sample's, the
	 * sample's period (not the branch's 1) * 1000 over its parallelism.
	 * Not shown, but perf's output order has it after the count.
	 */
	uint64_t latency;
};

struct branch_view {
	struct bentry *v;
	size_t nr, cap, max;
	struct ds_idmap ids;          /* bentry (perf's equal entries) -> index in v */
	struct dsi_strset strs;       /* our copies of the texts entries keep */
	struct ds_machine *machine;   /* the walk's: threads' newest comms when printing */
	uint64_t samples[BV_EVENTS], branches[BV_EVENTS];
	const char *names[BV_EVENTS];
	uint64_t dropped;
	bool latency_order;           /* perf's latency is a sort key (branch_view__new) */
};

struct branch_view *branch_view__new(size_t max_bytes, bool latency_order)
{
	struct branch_view *bv = calloc(1, sizeof(*bv));

	if (bv) {
		bv->max = max_bytes / (sizeof(struct bentry) + 2 * sizeof(struct ds_idmap_slot));
		bv->latency_order = latency_order;
	}
	return bv;
}

void branch_view__delete(struct branch_view *bv)
{
	if (!bv)
		return;
	dsi_strset__exit(&bv->strs);
	dsi_idmap__exit(&bv->ids);
	free(bv->v);
	free(bv);
}

/* Our copy of @s (NULL stays NULL); NULL with *@err on ENOMEM. */
static const char *keep(struct branch_view *bv, const char *s, int *err)
{
	const char *c = s ? dsi_strset__intern(&bv->strs, s) : NULL;

	if (s && !c)
		*err = -ENOMEM;
	return c;
}

/*
 * @addr as perf resolves a branch's end: the cpumode is not known, so a
 * user map of the thread first, then the kernel's, else none (level 'H':
 * perf's next tries are guest modes, which a host report does not take).
 */
static int resolve_side(struct branch_view *bv, const struct ds_profile_sample *s, uint64_t addr, struct bside *out)
{
	struct ds_resolved res;
	size_t last;
	int err = 0;

	*out = (struct bside){ .addr = addr, .al_addr = addr, .level = 'H' };
	if (ds_machine__resolve(s->machine, s->thread, DS_MISC_USER, addr, &res))
		out->level = '.';
	else if (ds_machine__resolve(s->machine, s->thread, DS_MISC_KERNEL, addr, &res))
		out->level = 'k';
	else
		return 0;
	const char *short_name = ds_machine__dso_short_name(s->machine, res.dso);

	out->dso = keep(bv, short_name ? short_name : ds_dso__short_name(res.dso, res.kernel, NULL, 0), &err);
	out->al_addr = res.addr;
	last = res.nr_frames ? res.nr_frames - 1 : 0;
	if (res.frames[0].elf_name || res.frames[last].name) {
		out->sym = keep(bv, res.frames[0].elf_name ? res.frames[0].elf_name : res.frames[last].name, &err);
		out->start = (res.kernel ? addr : res.addr) - res.frames[last].offset;
		out->end = out->start + res.frames[last].size;
		/* perf's "+0x" of a data object: its map-relative address less the symbol's absolute start */
		out->object = res.frames[last].object && !res.kernel;
		out->obj_off = res.addr - (out->start + res.map_start - res.map_pgoff);
	}
	return err;
}

/* perf's equal entries (hist_entry__cmp with the branch keys) */
static bool side_eq(const struct bside *a, const struct bside *b)
{
	if (!a->sym || !b->sym)
		return !a->sym && !b->sym && a->addr == b->addr;
	return a->start == b->start && a->end == b->end;
}

static bool entry_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct bentry *a = &((const struct bentry *)ctx)[id], *b = key;

	return a->ev == b->ev && a->cycles == b->cycles && !strcmp(a->comm, b->comm) &&
	       (a->from.dso == b->from.dso || (a->from.dso && b->from.dso && !strcmp(a->from.dso, b->from.dso))) &&
	       side_eq(&a->from, &b->from) && side_eq(&a->to, &b->to);
}

static uint64_t side_hash(const struct bside *s)
{
	return s->sym ? dsi_hash_pair(s->start, s->end) : dsi_hash64(s->addr);
}

static uint64_t entry_hash(const struct bentry *e)
{
	uint64_t h = dsi_hash_pair(e->ev, e->cycles);

	h = dsi_hash_pair(h, dsi_hash_str(e->comm));
	h = dsi_hash_pair(h, e->from.dso ? dsi_hash_str(e->from.dso) : 0);
	h = dsi_hash_pair(h, side_hash(&e->from));
	return dsi_hash_pair(h, side_hash(&e->to));
}

static int add_branch(struct branch_view *bv, const struct bentry *key, uint64_t latency)
{
	struct bentry *n;
	uint32_t id;
	bool added;

	if (!(n = dsi_grow(bv->v, &bv->cap, bv->nr + 1, sizeof(*n), 256)))
		return -ENOMEM;
	bv->v = n;
	if (bv->nr >= bv->max) {   /* the budget reached: an entry there may still grow */
		id = ds_idmap__find(&bv->ids, entry_hash(key), entry_eq, bv->v, key);
		if (id == DS_IDMAP_NONE) {
			bv->dropped++;
		} else {
			bv->v[id].count++;
			bv->v[id].latency += latency;
		}
		return 0;
	}
	id = ds_idmap__find_or_add(&bv->ids, entry_hash(key), entry_eq, bv->v, key, (uint32_t)bv->nr, &added);
	if (id == DS_IDMAP_NONE)
		return -ENOMEM;
	if (added)
		bv->v[bv->nr++] = *key;
	bv->v[id].count++;
	bv->v[id].latency += latency;
	return 0;
}

int branch_view__add(struct branch_view *bv, const struct ds_profile_sample *s)
{
	const struct ds_sample *smp = &s->ev->sample;
	const uint64_t *b = smp->branch;
	uint32_t ev = (uint32_t)s->evsel->idx;
	uint64_t latency = s->period * 1000 / (s->parallelism ? s->parallelism : 1);
	int err = 0;

	if (!b || !smp->branch_nr || ev >= BV_EVENTS || !s->machine)
		return 0;
	bv->machine = s->machine;
	bv->names[ev] = s->evsel->name;
	bv->samples[ev]++;
	for (uint64_t i = 0; i < smp->branch_nr; i++) {
		/* perf_branch_entry: from, to, flags (cycles in bits 4 to 19) */
		struct bentry key = { .ev = ev, .tid = s->tid, .cycles = (uint16_t)(b[3 * i + 2] >> 4) };

		bv->branches[ev]++;
		if (!(key.comm = keep(bv, s->comm ? s->comm : ":?", &err)) ||
		    resolve_side(bv, s, b[3 * i], &key.from) || resolve_side(bv, s, b[3 * i + 1], &key.to) ||
		    (err = add_branch(bv, &key, latency)))
			return err ? err : -ENOMEM;
	}
	return 0;
}

bool branch_view__any(const struct branch_view *bv)
{
	return bv->nr > 0;
}

uint64_t branch_view__dropped(const struct branch_view *bv)
{
	return bv->dropped;
}

/* ---- output ------------------------------------------------------------ */

/* > 0: @a goes first in perf's output, as its sort functions say for these keys */
static int perf_first(int64_t v)
{
	return (v > 0) - (v < 0);
}

static int side_order(const struct bside *a, const struct bside *b)
{
	if (!a->sym && !b->sym)
		return perf_first((int64_t)(b->addr - a->addr));
	if (!a->sym || !b->sym)
		return a->sym ? 1 : -1;
	if (a->start != b->start)
		return perf_first((int64_t)(b->start - a->start));
	return perf_first((int64_t)(b->end - a->end));
}

/*
 * perf's output order: count, latency where it is a key (measured: a
 * branch of a sample of a greater period first, among equal counts), then comm (ascending), the
 * source's object (descending, none first), symbols, cycles
 */
static const struct branch_view *cmp_ctx;   /* the view cmp_entries() sorts for */

static int cmp_entries(const void *pa, const void *pb)
{
	const struct bentry *a = *(const struct bentry *const *)pa, *b = *(const struct bentry *const *)pb;
	int c;

	if (a->count != b->count)
		return a->count > b->count ? -1 : 1;
	if (cmp_ctx->latency_order && a->latency != b->latency)
		return a->latency > b->latency ? -1 : 1;
	if ((c = strcmp(a->comm, b->comm)))
		return c;
	if (!a->from.dso != !b->from.dso)
		return a->from.dso ? 1 : -1;
	if (a->from.dso && (c = strcmp(b->from.dso, a->from.dso)))
		return c;
	if ((c = side_order(&a->from, &b->from)) || (c = side_order(&a->to, &b->to)))
		return -c;
	if (a->cycles != b->cycles)
		return a->cycles > b->cycles ? -1 : 1;
	return a < b ? -1 : a > b;
}

/* A symbol column's text as perf's _hist_entry__sym_snprintf: "[k] name", or the address in 16 digits */
static size_t side_text(const struct bside *s, char *buf, size_t n)
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

/* The width perf gives a symbol column for @s (hists__calc_col_len): the name's and "[k] ", or an address's */
static size_t side_width(const struct bside *s)
{
	return s->sym ? strlen(s->sym) + 4 : 16 + 4 + 2;
}

enum { W_COMM, W_DSO, W_FROM, W_TO, W_MAX };

static void column_widths(const struct branch_view *bv, struct bentry **list, size_t nr, size_t *w)
{
	w[W_COMM] = 7, w[W_DSO] = 20, w[W_FROM] = 13, w[W_TO] = 13;
	for (size_t i = 0; i < nr; i++) {
		const struct bentry *e = list[i];
		struct ds_thread *t = bv->machine ? ds_machine__thread(bv->machine, -1, e->tid) : NULL;
		size_t l = strlen(t ? ds_thread__comm(t) : e->comm);

		w[W_COMM] = l > w[W_COMM] ? l : w[W_COMM];
		/* the source's object widens its column only where it has a symbol; one
		 * without widens it to an address's 16 digits (hists__set_unres_dso_col_len) */
		l = e->from.sym ? (e->from.dso ? strlen(e->from.dso) : 9) : 16;
		w[W_DSO] = l > w[W_DSO] ? l : w[W_DSO];
		w[W_FROM] = side_width(&e->from) > w[W_FROM] ? side_width(&e->from) : w[W_FROM];
		w[W_TO] = side_width(&e->to) > w[W_TO] ? side_width(&e->to) : w[W_TO];
	}
}

static void print_head(struct branch_view *bv, struct outbuf *o, uint32_t ev, bool first, const char *time_str,
		       const size_t *w)
{
	outbuf_puts(o, first ? "#\n# Samples: " : "# Samples: ");
	report_print_unit(o, bv->samples[ev]);
	outbuf_printf(o, " of event '%s'", bv->names[ev] ? bv->names[ev] : "?");
	if (time_str)
		outbuf_printf(o, " (time slices: %s)", time_str);
	outbuf_printf(o, "\n# Event count (approx.): %llu\n#\n# Overhead", (unsigned long long)bv->branches[ev]);
	report_column(o, "Command", w[W_COMM]);
	report_column(o, "Source Shared Object", w[W_DSO]);
	report_column(o, "Source Symbol", w[W_FROM]);
	report_column(o, "Target Symbol", w[W_TO]);
	outbuf_puts(o, "  Basic Block Cycles\n# ........");
	for (int k = 0; k < W_MAX; k++)
		report_rule(o, w[k]);
	report_rule(o, 18);
	outbuf_puts(o, "\n#\n");
}

static void print_entry(struct outbuf *o, const struct bentry *e, uint64_t total, const size_t *w)
{
	char buf[16384];

	outbuf_puts(o, "  ");
	outbuf_fixed2(o, total ? e->count * 100.0 / total : 0.0, 7);
	outbuf_putc(o, '%');
	report_column_cut(o, e->comm, w[W_COMM]);
	report_column_cut(o, e->from.dso ? e->from.dso : "[unknown]", w[W_DSO]);
	side_text(&e->from, buf, sizeof(buf));
	report_column(o, buf, w[W_FROM]);
	side_text(&e->to, buf, sizeof(buf));
	report_column(o, buf, w[W_TO]);
	if (e->cycles)   /* perf's "%hd" */
		snprintf(buf, sizeof(buf), "%d", (int16_t)e->cycles);
	else
		strcpy(buf, "-");
	report_column(o, buf, 18);   /* the last column padded too, as perf's */
	outbuf_putc(o, '\n');
}

void branch_view__print(struct branch_view *bv, struct outbuf *o, const char *time_str, double percent_limit,
			bool quiet)
{
	struct bentry **list = malloc((bv->nr + 1) * sizeof(*list));
	bool first = true;
	size_t w[W_MAX];

	if (!list) {
		outbuf_puts(o, "# (out of memory: the branch view is not shown)\n");
		return;
	}
	for (uint32_t ev = 0; ev < BV_EVENTS; ev++) {
		size_t nr = 0;

		if (!bv->samples[ev])
			continue;
		for (size_t i = 0; i < bv->nr; i++)
			if (bv->v[i].ev == ev)
				list[nr++] = &bv->v[i];
		cmp_ctx = bv;
		qsort(list, nr, sizeof(*list), cmp_entries);
		column_widths(bv, list, nr, w);
		if (!quiet)
			print_head(bv, o, ev, first, time_str, w);
		for (size_t i = 0; i < nr; i++)
			if (!bv->branches[ev] || list[i]->count * 100.0 / bv->branches[ev] >= percent_limit)
				print_entry(o, list[i], bv->branches[ev], w);
		outbuf_puts(o, "\n\n");
		first = false;
	}
	free(list);
}
