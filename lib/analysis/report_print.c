// SPDX-License-Identifier: MIT
/*
 * The report printed as perf report --stdio prints it (report_int.h): the
 * sections' heads, the columns, the call graphs in every -g form.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/error.h"
#include "util/grow.h"
#include "analysis/report_int.h"
#include "analysis/report_text.h"

struct kid {
	uint32_t n;
	uint32_t rank;    /* its place in its parent's tree of children */
};

#define NAME_BUF 1024   /* perf's buffer for a call-graph name */

/*
 * A call-graph node's name into @buf (perf's callchain_list__sym_name into
 * its 1024 bytes: a longer C++ name is cut there, as perf's is).
 */
static const char *node_name(const struct ds_report *r, const struct node *nd, char *buf, size_t len)
{
	const struct nkey *n = &r->nkeys[nd->key];

	if (!n->sym) {
		snprintf(buf, len, "%#llx", (unsigned long long)n->ip);
		return buf;
	}
	if (!n->inlined && strlen(n->sym) < len)
		return n->sym;
	snprintf(buf, len, n->inlined ? "%s (inlined)" : "%s", n->sym);
	return buf;
}

/*
 * Heavier first; equal weights as perf's sort leaves them: it takes the
 * children in the order of their tree (child_at) and puts an equal weight
 * right of the ones before it.
 */
static int cmp_kid(const void *pa, const void *pb, void *ctx)
{
	const struct node *nodes = ((const struct ds_report *)ctx)->nodes;
	const struct kid *a = pa, *b = pb;

	if (nodes[a->n].cumul != nodes[b->n].cumul)
		return nodes[a->n].cumul > nodes[b->n].cumul ? -1 : 1;
	return (a->rank > b->rank) - (a->rank < b->rank);
}

/* Children of @n worth showing (at least @min), largest first; malloc'ed. */
static struct kid *kids(struct ds_report *r, uint32_t n, uint64_t min, size_t *nr)
{
	size_t nr_children = 0;
	struct kid *v;

	for (uint32_t c = r->nodes[n].first_child; c != NONE; c = r->nodes[c].next_sibling)
		nr_children++;
	v = malloc((nr_children + 1) * sizeof(*v));
	*nr = 0;
	if (!v)
		return NULL;
	for (uint32_t c = dsi_report_rb_first(r->nrb, r->nodes[n].kids_root), i = 0; c != NONE; c = dsi_report_rb_next(r->nrb, c), i++) {
		if (r->nodes[c].cumul < min)
			continue;
		/* equal weights: see cmp_kid */
		v[*nr].n = c;
		v[*nr].rank = i;
		(*nr)++;
	}
	if (*nr > 1)
		qsort_r(v, *nr, sizeof(*v), cmp_kid, r);
	return v;
}

/* A node and its single-child descendants form one printed run (perf's node list). */
static uint32_t run_next(const struct ds_report *r, uint32_t n)
{
	const struct node *x = &r->nodes[n];

	return x->first_child != NONE && r->nodes[x->first_child].next_sibling == NONE && x->hit == 0 ?
	       x->first_child : NONE;
}

static void margin(struct dsi_wbuf *o, int extra)
{
	dsi_wbuf__puts(o, "            ");
	for (int i = 0; i < extra; i++)
		dsi_wbuf__putc(o, ' ');
}

/* A call-graph value: @v's share of @total ("12.34%"), or with -g ...,period the period itself */
static void print_gvalue(const struct ds_report *r, uint64_t v, uint64_t total)
{
	if (r->graph_period) {
		dsi_wbuf__printf(r->out, "%llu", (unsigned long long)v);
		return;
	}
	dsi_wbuf__fixed2(r->out, total ? v * 100.0 / total : 0.0, 0);
	dsi_wbuf__putc(r->out, '%');
}

/* The period under @n's children (perf's children_hit) */
static uint64_t children_hit(const struct ds_report *r, uint32_t n)
{
	return r->nodes[n].cumul - r->nodes[n].hit;
}

/* fractal: the least branch under @n shown, the threshold's share of its children's period (rounded up) */
static uint64_t rel_min(const struct ds_report *r, uint32_t n)
{
	double x = children_hit(r, n) * r->graph_pct / 100.0;
	uint64_t m = (uint64_t)x;

	return m < x ? m + 1 : m;
}

/* "|  |  --12.34%--" and the rest of a graph line's left part, for a branch at @depth */
static void branch_head(struct ds_report *r, int depth, uint64_t mask, bool first, uint64_t v, uint64_t total, int left)
{
	struct dsi_wbuf *o = r->out;

	margin(o, left);
	for (int d = 0; d < depth; d++) {
		dsi_wbuf__putc(o, mask & (1ULL << d) ? '|' : ' ');
		if (first && d == depth - 1) {
			dsi_wbuf__puts(o, "--");
			print_gvalue(r, v, total);
			dsi_wbuf__puts(o, "--");
		} else
			dsi_wbuf__puts(o, "          ");
	}
}

/*
 * @parent's branches at @depth: shares of @total, those under @min hidden.
 * fractal (perf's graph relative): a branch's total and threshold are its
 * parent's children's period, and what the threshold hid is one "[...]".
 */
static void print_level(struct ds_report *r, uint32_t parent, uint64_t total, uint64_t min, int depth,
			uint64_t mask, int left)
{
	struct dsi_wbuf *o = r->out;
	bool fractal = r->graph_mode == GM_FRACTAL;
	size_t nr;
	struct kid *v = kids(r, parent, min, &nr);
	uint64_t remaining = total, nmask = mask;
	char buf[NAME_BUF];

	if (!v || depth > 60) {
		free(v);
		return;
	}
	for (size_t k = 0; k < nr; k++) {
		uint32_t last = v[k].n;

		remaining -= r->nodes[last].cumul < remaining ? r->nodes[last].cumul : remaining;
		if (k + 1 == nr && (!fractal || !remaining))
			nmask &= ~(1ULL << (depth - 1));
		margin(o, left);
		for (int d = 0; d < depth; d++)
			dsi_wbuf__puts(o, mask & (1ULL << d) ? "|          " : "           ");
		dsi_wbuf__putc(o, '\n');
		for (uint32_t n = v[k].n, i = 0; n != NONE; n = run_next(r, n), i++) {
			branch_head(r, depth, nmask, !i, r->nodes[n].cumul, total, left);
			dsi_wbuf__puts(o, node_name(r, &r->nodes[n], buf, sizeof(buf)));
			dsi_wbuf__putc(o, '\n');
			last = n;
		}
		if (fractal)
			print_level(r, last, children_hit(r, last), rel_min(r, last), depth + 1,
				    nmask | (1ULL << depth), left);
		else
			print_level(r, last, total, min, depth + 1, nmask | (1ULL << depth), left);
	}
	if (fractal && remaining && remaining != total) {
		branch_head(r, depth, nmask & ~(1ULL << (depth - 1)), true, remaining, total, left);
		dsi_wbuf__puts(o, "[...]\n");
	}
	free(v);
}

static void print_graph(struct ds_report *r, const struct entry *e, uint64_t total, uint64_t min)
{
	struct dsi_wbuf *o = r->out;
	size_t nr, start = o->len, flushes = o->flushes;   /* did print_level write? */
	/* fractal: the entry's branches shown from the threshold's share of their own period */
	struct kid *v = kids(r, e->root, r->graph_mode == GM_FRACTAL ? rel_min(r, e->root) : min, &nr);
	uint32_t root = e->root;
	int left = 0;
	char buf[NAME_BUF];
	bool wrote = false;

	if (!v)
		return;
	if (nr == 1 && r->nodes[v[0].n].cumul == e->acc) {
		int i = 0;

		for (uint32_t n = v[0].n; n != NONE; n = run_next(r, n), i++) {
			root = n;
			if (!i && r->sort_sym_first)
				continue;
			if (!left) {
				dsi_wbuf__puts(o, "            |\n            ---");
				left = 3;
			} else {
				margin(o, left);
			}
			dsi_wbuf__puts(o, node_name(r, &r->nodes[n], buf, sizeof(buf)));
			dsi_wbuf__putc(o, '\n');
			wrote = true;
		}
	}
	free(v);
	if (r->graph_mode == GM_FRACTAL)   /* the first branches: shares of the entry's own period */
		print_level(r, root, e->acc, rel_min(r, root), 1, 1, left);
	else
		print_level(r, root, total, min, 1, 1, left);
	if (wrote || o->len != start || o->flushes != flushes)
		dsi_wbuf__putc(o, '\n');
}

/* flat and folded: the nodes where chains end, as perf's sort_chain_flat() lists them */
struct flat_list {
	uint32_t *v;
	size_t nr, cap;
};

/*
 * @n's subtree after its children, in the order of perf's tree of children
 * (child_at), then @n itself when chains end there with at least @min:
 * perf's post-order walk.  false when out of memory.
 */
static bool flat_collect(struct ds_report *r, uint32_t n, uint64_t min, struct flat_list *l, int depth)
{
	bool ok = true;

	if (depth < 4096)
		for (uint32_t c = dsi_report_rb_first(r->nrb, r->nodes[n].kids_root); c != NONE && ok; c = dsi_report_rb_next(r->nrb, c))
			ok = flat_collect(r, c, min, l, depth + 1);
	if (ok && r->nodes[n].hit && r->nodes[n].hit >= min) {
		uint32_t *g = dsi_grow(l->v, &l->cap, l->nr + 1, sizeof(*g), 64);

		if (!g)
			return false;
		l->v = g;
		l->v[l->nr++] = n;
	}
	return ok;
}

/*
 * Heavier ends first; equal ones in the walk's order (qsort is not
 * stable: by index in it).  @ctx: the flat_list of the walk, its nodes
 * the report's.
 */
struct flat_sort {
	const struct node *nodes;
	const uint32_t *list;
};

static int cmp_flat(const void *pa, const void *pb, void *ctx)
{
	const struct flat_sort *fs = ctx;
	uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
	uint64_t ha = fs->nodes[fs->list[a]].hit, hb = fs->nodes[fs->list[b]].hit;

	if (ha != hb)
		return ha > hb ? -1 : 1;
	return (a > b) - (a < b);
}

/*
 * -g flat (each chain that ends with at least the threshold: its value,
 * then its frames a line each) and -g folded (its value and its frames
 * joined by ';' on one line), as perf's callchain__fprintf_flat/_folded.
 * Out of memory: r->error, and the entry's chains stop there.
 */
static void print_flat(struct ds_report *r, const struct entry *e, uint64_t total, uint64_t min)
{
	struct dsi_wbuf *o = r->out;
	struct flat_list l = { 0 };
	bool folded = r->graph_mode == GM_FOLDED;
	uint32_t *path = NULL, *order = NULL;
	size_t cap = 0;
	char buf[NAME_BUF];

	if (!flat_collect(r, e->root, min, &l, 0) || (l.nr && !(order = malloc(l.nr * sizeof(*order))))) {
		r->error = -ENOMEM;
		goto out;
	}
	if (l.nr) {
		/* indices sorted, so that equal ends keep the walk's order */
		for (size_t i = 0; i < l.nr; i++)
			order[i] = (uint32_t)i;
		struct flat_sort fs = { r->nodes, l.v };

		qsort_r(order, l.nr, sizeof(*order), cmp_flat, &fs);
	}
	for (size_t i = 0; order && i < l.nr; i++) {
		uint32_t n = l.v[order[i]];
		size_t depth = 0;

		for (uint32_t x = n; x != e->root && x != NONE; x = r->nodes[x].parent) {
			uint32_t *g = dsi_grow(path, &cap, depth + 1, sizeof(*g), 64);

			if (!g) {
				r->error = -ENOMEM;
				goto out;
			}
			path = g;
			path[depth++] = x;
		}
		if (folded) {
			print_gvalue(r, r->nodes[n].hit, total);
			dsi_wbuf__putc(o, ' ');
		} else {
			dsi_wbuf__puts(o, "           ");
			print_gvalue(r, r->nodes[n].cumul, total);
			dsi_wbuf__putc(o, '\n');
		}
		while (depth--) {
			if (!folded)
				dsi_wbuf__puts(o, "                ");
			dsi_wbuf__puts(o, node_name(r, &r->nodes[path[depth]], buf, sizeof(buf)));
			if (!folded || !depth)
				dsi_wbuf__putc(o, '\n');
			else
				dsi_wbuf__putc(o, ';');
		}
		if (!folded)
			dsi_wbuf__putc(o, '\n');
	}
out:
	free(path);
	free(order);
	free(l.v);
}

/* The newest comm of the thread @tid: perf's "Pid:Command" names the thread as it is at the end. */
static const char *thread_comm(const struct ds_report *r, int32_t tid, const char *fallback)
{
	struct ds_thread *t = r->machine ? ds_machine__thread(r->machine, -1, tid) : NULL;

	return t ? ds_thread__comm(t) : fallback;
}

/* The branch keys' columns in @w widened for @b's ends, as perf sizes them (hists__calc_col_len) */
static void branch_widths(const struct branch_ends *b, size_t *w)
{
	size_t l;

	if ((l = dsi_branch_dso__width(&b->from)) > w[SORT_DSO_FROM])
		w[SORT_DSO_FROM] = l;
	if ((l = dsi_branch_dso__width(&b->to)) > w[SORT_DSO_TO])
		w[SORT_DSO_TO] = l;
	if ((l = dsi_branch_side__width(&b->from)) > w[SORT_SYM_FROM])
		w[SORT_SYM_FROM] = l;
	if ((l = dsi_branch_side__width(&b->to)) > w[SORT_SYM_TO])
		w[SORT_SYM_TO] = l;
}

/*
 * The sort columns' widths into @w (SORT_MAX entries): each title's, or
 * wider for the longest value of the section's entries, as perf sizes them.
 */
static void column_widths(const struct ds_report *r, struct entry **list, size_t nr, size_t *w)
{
	static const size_t title_width[SORT_MAX] = { 7, 13, 6, 15, 11, 12, 3, 20, 20, 13, 13, 18 };
	char buf[SYM_TEXT_MAX];

	memcpy(w, title_width, sizeof(title_width));
	for (size_t i = 0; i < nr; i++) {
		size_t l;

		/* perf sizes the Command column by the threads' newest comms, and cuts
		 * a longer comm of the sample's time to that width */
		if ((l = strlen(thread_comm(r, list[i]->pid, list[i]->comm))) > w[SORT_COMM])
			w[SORT_COMM] = l;
		if ((l = strlen(dsi_report_short_dso(r, list[i]->dso))) > w[SORT_DSO])
			w[SORT_DSO] = l;
		/* an entry without a symbol widens the object column to an address's 16 digits, as
		 * perf (hists__set_unres_dso_col_len), but not under a --dsos list */
		if (!list[i]->sym && !r->dsos.n && w[SORT_DSO] < 16)
			w[SORT_DSO] = 16;
		if ((l = dsi_report_sym_width(r, list[i], buf, sizeof(buf))) > w[SORT_SYM])
			w[SORT_SYM] = l;
		if ((l = strlen(thread_comm(r, list[i]->pid, list[i]->comm)) + 8) > w[SORT_PID])
			w[SORT_PID] = l;
		if (list[i]->srcline && (l = strlen(list[i]->srcline)) > w[SORT_SRCLINE])
			w[SORT_SRCLINE] = l;
		/*
		 * perf makes an entry's trace text when it first compares the
		 * entry with another, and sizes the column by the texts made: a
		 * section of one sample without a cumulative profile (whose
		 * callers' entries are compared with it) compared nothing, its
		 * text is cut to the title's width
		 */
		if (list[i]->trace && (l = strlen(list[i]->trace)) > w[SORT_TRACE] &&
		    (nr > 1 || list[i]->samples > 1 || (r->children && r->any_callchain)))
			w[SORT_TRACE] = l;
		if (r->brs)
			branch_widths(&r->brs[list[i]->br], w);
	}
}

/* The members of the group event @ev leads (its section shows them all), else 0. */
static int group_members(const struct ds_report *r, size_t ev)
{
	const struct ds_evsel *e = r->evsels[ev];

	return dsi_report_in_group(r, e) && r->group_slot[e->idx] == 0 ? r->group_size[e->idx] : 0;
}

/* The index of member @k of the group @ev leads among the events seen, SIZE_MAX if it had no sample. */
static size_t member_index(const struct ds_report *r, size_t ev, int k)
{
	const struct ds_evsel *m = ds_reader__evsel(r->reader, (size_t)(r->evsels[ev]->idx + k));

	for (size_t i = 0; i < r->nr_evsels; i++)
		if (r->evsels[i] == m)
			return i;
	return SIZE_MAX;
}

/* Does the section of the group @ev leads show member @k?  perf leaves out a member without samples (--skip-empty). */
static bool member_shown(const struct ds_report *r, size_t ev, int k)
{
	size_t i = member_index(r, ev, k);

	return i != SIZE_MAX && r->ev_passed[i];
}

/* The columns of each kind (Overhead, Samples, ...) in @ev's section: its group's members shown, else 1. */
static int column_count(const struct ds_report *r, size_t ev)
{
	int n = 0;

	for (int k = 0; k < group_members(r, ev); k++)
		n += member_shown(r, ev, k);
	return group_members(r, ev) ? n : 1;
}

/* The group's period (and, with @samples, its samples), summed over its members as perf's header counts them. */
static uint64_t group_total(const struct ds_report *r, size_t ev, uint64_t *samples)
{
	uint64_t period = 0, n = 0;

	for (int k = 0; k < group_members(r, ev); k++) {
		size_t i = member_index(r, ev, k);

		if (i != SIZE_MAX)
			period += r->ev_period[i], n += r->ev_samples[i];
	}
	if (samples)
		*samples = n;
	return period;
}

/* "195  of events 'anon group { cpu-clock, task-clock }'" (perf's evsel__group_desc) */
static void print_group_title(struct ds_report *r, size_t ev)
{
	struct dsi_wbuf *o = r->out;
	const struct ds_evsel *lead = r->evsels[ev];
	uint64_t n;

	group_total(r, ev, &n);
	dsi_report_print_unit(o, n);
	dsi_wbuf__printf(o, " of events '%s { ", r->group_name[lead->idx]);
	for (int k = 0, first = 1; k < group_members(r, ev); k++) {
		if (!member_shown(r, ev, k))
			continue;
		dsi_wbuf__printf(o, "%s%s", first ? "" : ", ", ds_reader__evsel(r->reader, (size_t)(lead->idx + k))->name);
		first = 0;
	}
	dsi_wbuf__puts(o, " }'");
}

/* The section's head: samples, event, event count, then the column titles and their dotted rule. */
static void print_section_head(struct ds_report *r, size_t ev, bool first, bool children, const size_t *w)
{
	static const char *const titles[SORT_MAX] = { "Command", "Shared Object", "Symbol", "    Pid:Command", "Source:Line",
						      "Trace output", "CPU", "Source Shared Object",
						      "Target Shared Object", "Source Symbol", "Target Symbol",
						      "Basic Block Cycles" };
	struct dsi_wbuf *o = r->out;
	bool group = group_members(r, ev) != 0;
	int cols = column_count(r, ev);

	/* perf's "#" line above the first section only */
	dsi_wbuf__puts(o, !first ? "# Samples: " : "#\n# Samples: ");
	if (group) {
		print_group_title(r, ev);
	} else {
		dsi_report_print_unit(o, r->ev_samples[ev]);
		dsi_wbuf__printf(o, " of event '%s'", r->ev_names[ev] ? r->ev_names[ev] : "?");
	}
	if (r->time_str)
		dsi_wbuf__printf(o, " (time slices: %s)", r->time_str);
	dsi_wbuf__printf(o, "\n# Event count (approx.): %llu\n#\n# ",
		      (unsigned long long)(group ? group_total(r, ev, NULL) : r->ev_period[ev]));
	if (group && children) {   /* one 8-wide column a member, each title right-aligned over its own */
		dsi_wbuf__printf(o, "%*s  %*s", 8 * cols, "Children", 8 * cols, "Self");
	} else if (group) {
		dsi_wbuf__printf(o, "%*s", 8 * cols, "Overhead");
	} else if (r->latency)
		dsi_wbuf__puts(o, children ? "Children  Latency      Self   Latency" : "Overhead   Latency");
	else
		dsi_wbuf__puts(o, children ? "Children      Self" : "Overhead");
	if (r->show_samples)
		dsi_wbuf__printf(o, "  %*s", 12 * cols, "Samples");
	if (r->show_period)
		dsi_wbuf__printf(o, "  %*s", 12 * cols, "Period");
	/* perf prints each title through a 1024-byte buffer: a wider column's title is cut there */
	for (int i = 0; i < r->nr_col; i++)
		dsi_wbuf__printf(o, "  %-*s", (int)(w[r->col[i]] < 1023 ? w[r->col[i]] : 1023), titles[r->col[i]]);
	if (r->ipc_columns)
		dsi_wbuf__puts(o, "  IPC   [IPC Coverage]");
	dsi_wbuf__puts(o, "\n# ........");
	for (int k = 1; k < cols; k++)
		dsi_wbuf__puts(o, "........");
	if (children && r->latency)
		dsi_wbuf__puts(o, "  .......");
	if (children)
		dsi_report_rule(o, (size_t)cols * 8);
	if (r->latency)
		dsi_wbuf__puts(o, "  ........");
	if (r->show_samples)
		dsi_report_rule(o, (size_t)cols * 12);
	if (r->show_period)
		dsi_report_rule(o, (size_t)cols * 12);
	for (int i = 0; i < r->nr_col; i++) {
		dsi_wbuf__puts(o, "  ");
		for (size_t k = 0; k < w[r->col[i]]; k++)
			dsi_wbuf__putc(o, '.');
	}
	if (r->ipc_columns)
		dsi_wbuf__puts(o, "  ....................");
	dsi_wbuf__puts(o, "\n#\n");
}

/* Branch key @key's column of branch @b, padded to its width @w[@key] */
static void branch_column(struct dsi_wbuf *o, int key, const struct branch_ends *b, const size_t *w)
{
	char buf[SYM_TEXT_MAX];

	switch (key) {
	case SORT_DSO_FROM:
	case SORT_DSO_TO: {
		const struct branch_side *end = key == SORT_DSO_FROM ? &b->from : &b->to;

		dsi_report_column_cut(o, end->dso ? end->dso : "[unknown]", w[key]);
		return;
	}
	case SORT_SYM_FROM:
	case SORT_SYM_TO:
		dsi_branch_side__text(key == SORT_SYM_FROM ? &b->from : &b->to, buf, sizeof(buf));
		break;
	default:   /* perf's "%hd" of the cycles, "-" for none */
		if (b->cycles)
			snprintf(buf, sizeof(buf), "%d", (int16_t)b->cycles);
		else
			strcpy(buf, "-");
		break;
	}
	dsi_report_column(o, buf, w[key]);
}

/* An entry's sort columns, each padded to its width but a last symbol or source line (as perf). */
static void print_entry_columns(struct ds_report *r, const struct entry *e, const size_t *w)
{
	struct dsi_wbuf *o = r->out;
	char buf[SYM_TEXT_MAX];

	for (int k = 0; k < r->nr_col; k++) {
		bool last = k + 1 == r->nr_col && !r->ipc_columns &&
			    (r->col[k] == SORT_SYM || r->col[k] == SORT_SRCLINE || r->col[k] == SORT_TRACE);

		switch (r->col[k]) {
		case SORT_COMM: dsi_report_column_cut(o, e->comm, w[SORT_COMM]); break;
		case SORT_DSO: dsi_report_column(o, dsi_report_short_dso(r, e->dso), last ? 0 : w[SORT_DSO]); break;
		case SORT_PID:
			snprintf(buf, sizeof(buf), "%7d:%s", e->pid, thread_comm(r, e->pid, e->comm));
			dsi_report_column(o, buf, last ? 0 : w[SORT_PID]);
			break;
		case SORT_SYM: {
			size_t len = (size_t)dsi_report_sym_text(e, buf, sizeof(buf));

			/* (not counted in the column's width: perf's is the name's) */
			if (e->object && len < sizeof(buf))
				snprintf(buf + len, sizeof(buf) - len, "+0x%llx", (unsigned long long)e->obj_off);
			dsi_report_column(o, buf, last ? 0 : w[SORT_SYM]);
			break;
		}
		case SORT_SRCLINE:
			dsi_report_column(o, e->srcline ? e->srcline : "?", last ? 0 : w[SORT_SRCLINE]);
			break;
		case SORT_TRACE:   /* perf's "%-.*s": cut to the column, never padded when last */
			if (last)
				dsi_wbuf__printf(o, "  %.*s", (int)w[SORT_TRACE], e->trace ? e->trace : "");
			else
				dsi_report_column_cut(o, e->trace ? e->trace : "", w[SORT_TRACE]);
			break;
		case SORT_CPU:   /* perf's "%*.*d": zero-padded to the column ("-001" for none) */
			snprintf(buf, sizeof(buf), "%*.*d", (int)w[SORT_CPU], (int)w[SORT_CPU], e->cpu);
			dsi_report_column(o, buf, last ? 0 : w[SORT_CPU]);
			break;
		default:   /* the branch keys: every column padded, the last too, as perf's */
			branch_column(o, r->col[k], &r->brs[e->br], w);
			break;
		}
	}
}

/*
 * A group's entry: each member's share of that member's total, side by
 * side ("   4.12%   4.08%"), of its self period or (@acc) its cumulative one.
 */
static void print_member_columns(struct ds_report *r, size_t ev, const struct entry *e, bool acc)
{
	struct dsi_wbuf *o = r->out;

	dsi_wbuf__puts(o, "  ");
	for (int k = 0; k < group_members(r, ev); k++) {
		size_t i = member_index(r, ev, k);
		uint64_t total = i == SIZE_MAX ? 0 : r->ev_period[i];

		if (!member_shown(r, ev, k))
			continue;
		dsi_wbuf__putc(o, ' ');
		dsi_wbuf__fixed2(o, total ? dsi_report_member_period(r, e, k, acc) * 100.0 / total : 0.0, 6);
		dsi_wbuf__putc(o, '%');
	}
}

/* A group's entry: each member's samples (-n), or with @period its self period (--show-total-period). */
static void print_member_samples(struct ds_report *r, size_t ev, const struct entry *e, bool period)
{
	dsi_wbuf__puts(r->out, "  ");
	for (int k = 0; k < group_members(r, ev); k++) {
		const struct entry *m = dsi_report_member_entry(r, e, k);

		if (member_shown(r, ev, k))
			dsi_wbuf__printf(r->out, "%12llu", (unsigned long long)(!m ? 0 : period ? m->self : m->samples));
	}
}

/* "  12.34%": @part of @total, the number right-aligned in @width. */
static void print_percent(struct dsi_wbuf *o, uint64_t part, uint64_t total, int width)
{
	dsi_wbuf__puts(o, "  ");
	dsi_wbuf__fixed2(o, total ? part * 100.0 / total : 0.0, width);
	dsi_wbuf__putc(o, '%');
}

/* One event's section of the report: its head, then each entry above --percent-limit with its call graph. */
static void print_section(struct ds_report *r, size_t ev, bool first, struct entry **list, size_t nr)
{
	struct dsi_wbuf *o = r->out;
	bool children = r->children && r->any_callchain, graph = r->graph && r->any_callchain;
	uint64_t total = r->ev_period[ev], graph_total = r->ev_passed_period[ev];
	/* call-graph branches below 0.5% of the total are hidden, or below --percent-limit as in perf;
	 * with --percentage relative, perf cuts by the shown samples' total but prints shares of all */
	double pct = r->graph_min >= 0 ? r->graph_min : r->percent_limit > 0 ? r->percent_limit : 0.5;
	uint64_t min = (uint64_t)(total * pct / 100);
	size_t w[SORT_MAX];

	r->graph_pct = pct;
	column_widths(r, list, nr, w);
	if (!r->quiet)   /* -q: perf prints the entries only */
		print_section_head(r, ev, first, children, w);
	for (size_t i = 0; i < nr; i++) {
		const struct entry *e = list[i];

		if (total && e->acc * 100.0 / total < r->percent_limit)
			continue;
		if (children) {
			if (group_members(r, ev))
				print_member_columns(r, ev, e, true);
			else
				print_percent(o, e->acc, total, 7);
			if (r->latency)
				print_percent(o, e->lat_acc, r->ev_latency[ev], 6);
		}
		if (group_members(r, ev))
			print_member_columns(r, ev, e, false);
		else
			print_percent(o, e->self, total, 7);
		if (r->latency)
			print_percent(o, e->lat_self, r->ev_latency[ev], 7);
		if (r->show_samples && group_members(r, ev))
			print_member_samples(r, ev, e, false);
		else if (r->show_samples)
			dsi_wbuf__printf(o, "  %12llu", (unsigned long long)e->samples);
		if (r->show_period && group_members(r, ev))
			print_member_samples(r, ev, e, true);
		else if (r->show_period)
			dsi_wbuf__printf(o, "  %12llu", (unsigned long long)e->self);
		print_entry_columns(r, e, w);
		if (r->ipc_columns && r->branch_keys)
			/* perf's ipc_lbr: its IPC and coverage come from annotating the symbol, which its
			 * stdio report does not do (0 for a symbol, as measured); none without a symbol */
			dsi_wbuf__puts(o, e->sym ? "  0.00  [  0.0%]      " : "  -                   ");
		else if (r->ipc_columns)   /* perf's ipc_null: no branch data, no IPC */
			dsi_wbuf__puts(o, "  -      -            ");
		dsi_wbuf__putc(o, '\n');
		if (graph && (r->graph_mode == GM_FLAT || r->graph_mode == GM_FOLDED))
			print_flat(r, e, graph_total, min);
		else if (graph)
			print_graph(r, e, graph_total, min);
	}
	dsi_wbuf__puts(o, "\n\n");
}

/* Did any sample pass the CPU and time filters (the thread filters' count in the totals)? */
static bool any_samples(const struct ds_report *r)
{
	for (size_t i = 0; i < r->nr_evsels; i++)
		if (r->ev_passed[i])
			return true;
	return false;
}

/* Did a sample run beside others (a parallelism above 1): is latency not the overhead? */
static bool latency_differs(const struct ds_report *r)
{
	for (size_t i = 0; i < r->nr_evsels; i++)
		if (r->ev_latency[i] != r->ev_period[i] * 1000)
			return true;
	return false;
}

/*
 * Does event @ev's section print its entries in perf's trees' order?  Its
 * sorts compare by no order there: --children with call graphs (depths
 * within a thread), and a symbol key without dso (entries with no symbol
 * by address alone, others by DSO first), so perf's ties are as its trees
 * leave them.  Otherwise the sort is an order, and a sort gives it.
 */
static bool perf_trees(const struct ds_report *r, size_t ev)
{
	return (r->children && r->any_callchain) || (r->sym_tree && !group_members(r, ev));
}

/*
 * Event @ev's entries, as perf sorts them, into r->order from r->nr_order
 * on (its section), by index: the group view's pairing may make entries
 * (dummies), which moves them.  0 or -ENOMEM.
 */
static int section_order(struct ds_report *r, size_t ev)
{
	struct entry **list = malloc((r->nr_ents + 1) * sizeof(*list));
	size_t nr = 0;
	uint32_t *o;

	if (!list)
		return -ENOMEM;
	if (group_members(r, ev)) {
		if (dsi_report_link_group(r, ev, list, &nr)) {
			free(list);
			return -ENOMEM;
		}
	} else {
		for (size_t i = 0; i < r->nr_ents; i++)
			if (r->ents[i].evsel == r->evsels[ev])
				list[nr++] = &r->ents[i];
	}
	if (nr > 1 && !(perf_trees(r, ev) && dsi_report_tree_order(r, list, &nr, group_members(r, ev)) == 0))
		qsort_r(list, nr, sizeof(*list), dsi_report_cmp_entry, r);
	if (!(o = dsi_grow(r->order, &r->cap_order, r->nr_order + nr + 1, sizeof(*o), 256))) {
		free(list);
		return -ENOMEM;
	}
	r->order = o;
	for (size_t i = 0; i < nr; i++)
		o[r->nr_order + i] = (uint32_t)(list[i] - r->ents);
	free(list);
	r->sec_ev[r->nr_secs] = ev;
	r->sec_start[r->nr_secs++] = r->nr_order;
	r->nr_order += nr;
	r->sec_start[r->nr_secs] = r->nr_order;
	return 0;
}

int ds_report__finish(struct ds_report *r)
{
	if (r->finished)
		return r->error;
	r->finished = true;
	dsi_report_flush_run(r);
	dsi_report_flush_paths(r);
	/* (perf's branch view has no latency column) */
	r->latency = r->latency && !r->branch_keys && latency_differs(r);
	r->sec_start = malloc((r->nr_evsels + 1) * sizeof(*r->sec_start));
	r->sec_ev = malloc((r->nr_evsels + 1) * sizeof(*r->sec_ev));
	if (!r->sec_start || !r->sec_ev)
		return r->error = dsi_error(-ENOMEM, "report: out of memory");
	r->sec_start[0] = 0;
	/* sections in the order of the file's events, as perf's evlist (not of their first samples) */
	size_t order[sizeof(r->evsels) / sizeof(*r->evsels)];

	for (size_t i = 0; i < r->nr_evsels; i++) {
		size_t j = i;

		for (; j > 0 && r->evsels[order[j - 1]]->idx > r->evsels[i]->idx; j--)
			order[j] = order[j - 1];
		order[j] = i;
	}
	for (size_t oi = 0; oi < r->nr_evsels; oi++) {
		size_t ev = order[oi];

		if (dsi_report_in_group(r, r->evsels[ev]) && r->group_slot[r->evsels[ev]->idx])
			continue;   /* a group member: a column of its leader's section */
		if (!r->ev_passed[ev])
			continue;   /* no samples (a group's leader whose members alone had some): perf shows none (--skip-empty) */
		if (section_order(r, ev))
			return r->error = dsi_error(-ENOMEM, "report: out of memory");
	}
	return 0;
}

bool ds_report__has_samples(const struct ds_report *r)
{
	return r->nr_ents || any_samples(r);
}

/* The report from "# comm:" on, into r->out. */
int dsi_report_print_report(struct ds_report *r)
{
	int err = ds_report__finish(r);

	if (err)
		return err;
	/* a column left out for its single --comm, --dsos or -S value is named here, in the order of the sort keys, as perf does */
	for (int i = 0; i < r->nr_sort; i++) {
		if (r->sort[i] == SORT_COMM && r->nr_comms == 1)
			dsi_wbuf__printf(r->out, "# comm: %s\n", r->comms[0]);
		else if (r->sort[i] == SORT_DSO && r->dsos.n == 1)
			dsi_wbuf__printf(r->out, "# dso: %s\n", r->dsos.v[0]);
		else if (r->sort[i] == SORT_SYM && r->syms.n == 1)
			dsi_wbuf__printf(r->out, "# symbol: %s\n", r->syms.v[0]);
	}
	if (!ds_report__has_samples(r))
		return 0;   /* no sample (none recorded, or none on the CPUs or times asked): perf says so and ends there */
	if (!r->quiet)
		dsi_wbuf__printf(r->out, "#\n# Total Lost Samples: %llu\n", (unsigned long long)r->lost_samples);
	struct entry **list = malloc((r->nr_order + 1) * sizeof(*list));

	if (!list)
		return -ENOMEM;
	for (size_t i = 0; i < r->nr_order; i++)
		list[i] = &r->ents[r->order[i]];
	for (size_t s = 0; s < r->nr_secs; s++)
		print_section(r, r->sec_ev[s], s == 0, list + r->sec_start[s], r->sec_start[s + 1] - r->sec_start[s]);
	free(list);
	/* perf's "#" below the lost samples, else the first section's */
	if (!r->quiet)
		dsi_wbuf__puts(r->out, r->nr_secs ? "#\n" : "#\n#\n");
	return r->error;   /* a call graph print_flat() could not make */
}
