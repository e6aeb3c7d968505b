// SPDX-License-Identifier: MIT
/*
 * The diff of two profiles (dstack/diff.h).  Both sides go into one tree
 * of stacks, root first: the comm (opts.by_comm), then the frames
 * outermost first, every node with its self and inclusive weight on each
 * side.  A recording's samples are interned by the stack model
 * (dstack/stacks.h), whose strings are the tree's too: a repeated sample
 * is a lookup of its stack's leaf.  A folded-stacks file's lines are
 * stacks of texts.  From the tree: the report delta, the folded diff
 * (difffolded.pl's "stack BASE NEW") and the differential flame graph.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dstack/diff.h"
#include "dstack/export.h"
#include "dstack/stacks.h"
#include "analysis/stacks_int.h"
#include "analysis/wbuf.h"
#include "util/grow.h"
#include "util/hashmap.h"
#include "util/idmap.h"

#define NONE UINT32_MAX
#define F_KERNEL 1
#define F_INLINED 2
#define F_COMM 4
#define STR_EMPTY 0          /* the string id of "" (the model's first) */
#define MEMO_MAX (1u << 16)

struct dnode {
	uint32_t name, dso;         /* string ids (dso: "" for folded-text frames and comms) */
	uint32_t self_name;         /* a leaf's symbol-table name (what perf diff's self counts), 0: name */
	uint32_t parent, first_child, next;
	uint8_t flags;              /* F_* */
	double self[2], total[2];   /* weights: [0] BASE, [1] NEW */
};

struct side {
	char *path;
	bool folded_text;
	double total;               /* weight of the samples compared */
	uint64_t samples;           /* samples compared */
	uint64_t other_events;      /* samples skipped: another event */
};

/* A stack of the model under a comm's node: the leaf its frames lead to. */
struct memo {
	uint32_t stack;
	uint32_t root, leaf;
};

struct ds_diff {
	struct ds_diff_opts o;
	struct ds_stacks *model;     /* the recordings' stacks, and every string of the tree */
	const char *event;           /* opts.event, else the first event of BASE (the model's copy) */
	unsigned sort;               /* DS_DIFF_SORT_*: the report's */
	bool counts, children;
	struct dnode *nodes;
	size_t nr, cap;
	struct dsi_idmap edges;       /* (parent, name, dso, flags) -> index in nodes */
	struct side side[2];
	int cur;                     /* the side being read (-1: none begun) */
	struct dsi_idmap memo_ids;    /* (stack, comm node) -> index in memo */
	struct memo *memo;
	size_t nr_memo, cap_memo;
	char *line;                  /* a folded line being split */
	size_t line_cap;
	bool summed;                 /* inclusive weights made */
};

#define STR(d, id) ((d)->model->strs.strs[id])

static uint64_t node_key(uint32_t parent, uint32_t name, uint32_t dso, uint8_t flags)
{
	return dsi_hash_pair(dsi_hash_pair(parent, name), (uint64_t)dso << 8 | flags);
}

static bool node_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct dnode *n = &((const struct ds_diff *)ctx)->nodes[id], *k = key;

	return n->parent == k->parent && n->name == k->name && n->dso == k->dso && n->flags == k->flags;
}

/* The child of @parent for the frame (name, dso, flags), made if new; NONE on ENOMEM. */
static uint32_t child(struct ds_diff *d, uint32_t parent, uint32_t name, uint32_t dso, uint8_t flags)
{
	struct dnode key = { .name = name, .dso = dso, .parent = parent, .flags = flags, .first_child = NONE,
			     .next = NONE };
	struct dnode *nn = dsi_grow(d->nodes, &d->cap, d->nr + 1, sizeof(*nn), 1024);
	uint32_t id;
	bool added;

	if (!nn || d->nr >= NONE - 1)
		return NONE;
	d->nodes = nn;
	id = dsi_idmap__find_or_add(&d->edges, node_key(parent, name, dso, flags), node_eq, d, &key,
				   (uint32_t)d->nr, &added);
	if (added) {
		if (parent != NONE) {
			key.next = d->nodes[parent].first_child;
			d->nodes[parent].first_child = (uint32_t)d->nr;
		}
		d->nodes[d->nr++] = key;
	}
	return id;
}

/* Stacks start at node 0, the root ("all"). */
static void add_weight(struct ds_diff *d, uint32_t leaf, double w)
{
	d->nodes[leaf].self[d->cur] += w;
	d->side[d->cur].total += w;
}

/* --- recordings ---------------------------------------------------------- */

static bool memo_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct memo *a = &((const struct ds_diff *)ctx)->memo[id], *b = key;

	return a->stack == b->stack && a->root == b->root;
}

/* The leaf memoised for @key's stack under its comm's node, NONE if there is none. */
static uint32_t memo_find(const struct ds_diff *d, const struct memo *key)
{
	return dsi_idmap__find(&d->memo_ids, dsi_hash_pair(key->stack, key->root), memo_eq, d, key);
}

/* Memoise @key (not found by memo_find just before); 0 or -ENOMEM. */
static int memo_add(struct ds_diff *d, const struct memo *key)
{
	if (d->nr_memo >= MEMO_MAX) {
		dsi_idmap__exit(&d->memo_ids);
		d->nr_memo = 0;
	}
	struct memo *m = dsi_grow(d->memo, &d->cap_memo, d->nr_memo + 1, sizeof(*m), 1024);

	if (!m || d->nr_memo >= DSI_IDMAP_NONE - 1)
		return -ENOMEM;
	d->memo = m;
	if (dsi_idmap__add(&d->memo_ids, dsi_hash_pair(key->stack, key->root), (uint32_t)d->nr_memo) < 0)
		return -ENOMEM;
	d->memo[d->nr_memo++] = *key;
	return 0;
}

/*
 * Whether a sample of event @ev is compared: the first event seen is, when
 * opts.event named none.  1, 0 (counted as another event's), or -ENOMEM.
 */
static int compared_event(struct ds_diff *d, const char *ev)
{
	if (!d->event) {
		uint32_t id = ds_stacks__intern_str(d->model, ev);

		if (id == NONE)
			return -ENOMEM;
		d->event = STR(d, id);
	}
	if (strcmp(ev, d->event)) {
		d->side[d->cur].other_events++;
		return 0;
	}
	return 1;
}

/* The node of the model's stack @stack under @n (its comm), from the outermost frame in; NONE when out of memory. */
static uint32_t stack_node(struct ds_diff *d, uint32_t stack, uint32_t n)
{
	size_t len;
	const struct ds_stacks_entry *e = ds_stacks__stack(d->model, stack, &len);

	for (size_t i = len; n != NONE && i-- > 0;) {
		const struct ds_stacks_frame *f = ds_stacks__frame(d->model, e[i].frame);

		n = child(d, n, f->name, f->dso, (uint8_t)(f->kernel * F_KERNEL | f->inlined * F_INLINED));
	}
	return n;
}

/*
 * The self weight goes to the symbol-table symbol at the sample's address,
 * as perf diff's (and report's flat profile): a function inlined there, or
 * a clone DWARF names otherwise, is not it.  Leaf node @n keeps the first
 * one named.  0 or -ENOMEM.
 */
static int set_self_name(struct ds_diff *d, const struct ds_profile_sample *s, uint32_t n)
{
	for (size_t i = 0; i < s->nr_frames; i++) {
		const struct ds_cc_frame *f = &s->frames[i];

		if (f->cookie)
			continue;
		if (f->elf_sym && !d->nodes[n].self_name) {
			uint32_t id = ds_stacks__intern_str(d->model, f->elf_sym);

			if (id == NONE)
				return -ENOMEM;
			d->nodes[n].self_name = id;
		}
		break;
	}
	return 0;
}

int ds_diff__add(struct ds_diff *d, const struct ds_profile_sample *s)
{
	const char *ev = s->evsel && s->evsel->name ? s->evsel->name : "unknown";
	double w = d->o.by_period ? (double)s->period : 1.0;
	uint32_t n, name;
	struct memo mk;
	int rc;

	if (d->cur < 0 || d->side[d->cur].folded_text)
		return -EINVAL;
	if ((rc = compared_event(d, ev)) <= 0)
		return rc;
	d->side[d->cur].samples++;
	/* not by comm: one root (a task per sample would make a root each) */
	name = !d->o.by_comm ? STR_EMPTY : ds_stacks__intern_str(d->model, s->comm ? s->comm : ":-1");
	if (name == NONE || (n = child(d, 0, name, 0, F_COMM)) == NONE)
		return -ENOMEM;
	mk.root = n;
	if ((rc = ds_stacks__intern(d->model, s, &mk.stack)))
		return rc;
	uint32_t id = memo_find(d, &mk);

	if (id != DSI_IDMAP_NONE) {
		add_weight(d, d->memo[id].leaf, w);
		return 0;
	}
	if ((n = stack_node(d, mk.stack, n)) == NONE || set_self_name(d, s, n))
		return -ENOMEM;
	mk.leaf = n;
	if (memo_add(d, &mk) < 0)
		return -ENOMEM;
	add_weight(d, n, w);
	return 0;
}

/* --- folded text --------------------------------------------------------- */

int ds_diff__add_folded(struct ds_diff *d, const char *text, size_t len)
{
	char *end, *sp, *line;
	double w;

	if (d->cur < 0 || !d->side[d->cur].folded_text)
		return -EINVAL;
	if (!(line = dsi_grow(d->line, &d->line_cap, len + 1, 1, 256)))
		return -ENOMEM;
	d->line = line;
	memcpy(line, text, len);
	line[len] = 0;
	if (memchr(line, 0, len))
		return -EINVAL;
	while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
		line[--len] = 0;
	if (!len)
		return 1;
	sp = strrchr(line, ' ');
	if (!sp || sp == line)
		return -EINVAL;
	w = strtod(sp + 1, &end);
	if (end == sp + 1 || *end || !(w >= 0) || isinf(w))
		return -EINVAL;
	while (sp > line && sp[-1] == ' ')
		sp--;
	*sp = 0;
	uint32_t n = 0;

	for (char *f = line, *semi;; f = semi + 1) {
		semi = strchr(f, ';');
		if (semi)
			*semi = 0;
		uint32_t name = ds_stacks__intern_str(d->model, f);

		/* the first frame is the command, as stackcollapse writes it */
		if (name == NONE || (n = child(d, n, name, 0, n ? 0 : F_COMM)) == NONE)
			return -ENOMEM;
		if (!semi)
			break;
	}
	d->side[d->cur].samples++;
	add_weight(d, n, w);
	return 0;
}

/* --- totals -------------------------------------------------------------- */

/* Inclusive weights: nodes are made after their parents, so one backward pass adds them up. */
static void sum_totals(struct ds_diff *d)
{
	for (size_t i = d->nr; i-- > 0;) {
		struct dnode *n = &d->nodes[i];

		for (int s = 0; s < 2; s++) {
			n->total[s] += n->self[s];
			if (n->parent != NONE)
				d->nodes[n->parent].total[s] += n->total[s];
		}
	}
}

static double pct(const struct ds_diff *d, int s, double w)
{
	return d->side[s].total > 0 ? 100.0 * w / d->side[s].total : 0.0;
}

/* --- the report delta ---------------------------------------------------- */

struct dentry {
	uint32_t comm, dso, name;   /* string ids, NONE when not a sort key */
	uint8_t flags;
	uint32_t stamp;             /* the last leaf counted in total (once per stack) */
	double self[2], total[2];
	double delta, cdelta;       /* sort values */
};

struct dreport {
	struct dentry *e;
	size_t nr, cap;
	struct dsi_idmap ids;        /* (comm, dso, name, flags) -> index in e */
};

static bool dentry_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct dentry *e = &((const struct dreport *)ctx)->e[id], *k = key;

	return e->comm == k->comm && e->dso == k->dso && e->name == k->name && e->flags == k->flags;
}

static struct dentry *entry(struct ds_diff *d, struct dreport *r, uint32_t comm, const struct dnode *f, bool self)
{
	uint32_t dso = d->sort & DS_DIFF_SORT_DSO ? f->dso : NONE;
	uint32_t name = !(d->sort & DS_DIFF_SORT_SYM) ? NONE : self && f->self_name ? f->self_name : f->name;
	uint8_t flags = d->sort & DS_DIFF_SORT_SYM ? f->flags & F_KERNEL : 0;

	struct dentry key, *ne = dsi_grow(r->e, &r->cap, r->nr + 1, sizeof(*ne), 256);
	uint32_t id;
	bool added;

	comm = d->sort & DS_DIFF_SORT_COMM ? comm : NONE;
	key = (struct dentry){ .comm = comm, .dso = dso, .name = name, .flags = flags, .stamp = NONE };
	if (!ne || r->nr >= NONE - 1)
		return NULL;
	r->e = ne;
	id = dsi_idmap__find_or_add(&r->ids, dsi_hash_pair(dsi_hash_pair(comm, dso), (uint64_t)name << 8 | flags),
				   dentry_eq, r, &key, (uint32_t)r->nr, &added);
	if (id == NONE)
		return NULL;
	if (added)
		r->e[r->nr++] = key;
	return &r->e[id];
}

/* The comm node above @n (the root's child), and @n's sort entry. */
static uint32_t comm_of(const struct ds_diff *d, uint32_t n)
{
	while (d->nodes[n].parent != 0)
		n = d->nodes[n].parent;
	return d->nodes[n].name;
}

/*
 * Every stack's leaf gives its self weight to its entry, and its weight to
 * every entry on its path once (recursion counts once, as perf's children).
 * A stack with no frames (only its comm) is left out, as report leaves out
 * samples with nothing to show.
 */
static int build_entries(struct ds_diff *d, struct dreport *r)
{
	for (size_t i = 1; i < d->nr; i++) {
		const struct dnode *leaf = &d->nodes[i];
		uint32_t comm;
		struct dentry *e;

		if ((!leaf->self[0] && !leaf->self[1]) || (leaf->flags & F_COMM))
			continue;
		comm = comm_of(d, (uint32_t)i);
		if (!(e = entry(d, r, comm, leaf, true)))
			return -ENOMEM;
		for (int s = 0; s < 2; s++)
			e->self[s] += leaf->self[s];
		for (uint32_t n = (uint32_t)i; !(d->nodes[n].flags & F_COMM); n = d->nodes[n].parent) {
			if (!(e = entry(d, r, comm, &d->nodes[n], false)))
				return -ENOMEM;
			if (e->stamp == i)
				continue;
			e->stamp = (uint32_t)i;
			for (int s = 0; s < 2; s++)
				e->total[s] += leaf->self[s];
		}
	}
	return 0;
}

static const char *entry_text(const struct ds_diff *d, const struct dentry *e)
{
	return e->name != NONE ? STR(d, e->name) : e->dso != NONE ? STR(d, e->dso) :
		e->comm != NONE ? STR(d, e->comm) : "";
}

/* By the size of the change (the children's with --children), then by name: a stable order. */
static int cmp_entry(const void *a, const void *b, void *ctx)
{
	const struct ds_diff *sort_d = ctx;
	const struct dentry *x = a, *y = b;
	double dx = fabs(sort_d->children ? x->cdelta : x->delta), dy = fabs(sort_d->children ? y->cdelta : y->delta);

	if (dx != dy)
		return dx < dy ? 1 : -1;
	if (x->self[1] != y->self[1])
		return x->self[1] < y->self[1] ? 1 : -1;
	return strcmp(entry_text(sort_d, x), entry_text(sort_d, y));
}

static void print_value(struct dsi_wbuf *o, const struct ds_diff *d, double v, bool sign, int width)
{
	char buf[64];

	if (d->counts)
		snprintf(buf, sizeof(buf), sign ? "%+.0f" : "%.0f", v);
	else
		snprintf(buf, sizeof(buf), sign ? "%+.2f%%" : "%.2f%%", v);
	dsi_wbuf__printf(o, "%*s", width, buf);
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');

	return s && s[1] ? s + 1 : p;
}

static void report_header(struct dsi_wbuf *o, const struct ds_diff *d)
{
	if (d->event)
		dsi_wbuf__printf(o, "# Event '%s'\n#\n", d->event);
	for (int s = 0; s < 2; s++) {
		const struct side *sd = &d->side[s];

		dsi_wbuf__printf(o, "# %-8s  %s: %llu %s, weight %.0f", s ? "New" : "Baseline", sd->path,
			      (unsigned long long)sd->samples, sd->folded_text ? "stacks" : "samples", sd->total);
		if (sd->other_events)
			dsi_wbuf__printf(o, " (%llu samples of other events not compared)",
				      (unsigned long long)sd->other_events);
		dsi_wbuf__putc(o, '\n');
	}
	dsi_wbuf__printf(o, "#\n# %s by %s%s\n#\n", d->counts ? "Weights" : "Percentages of each side's total",
		      d->side[0].folded_text && d->side[1].folded_text ? "the folded counts" :
		      d->o.by_period ? "period" : "sample count",
		      d->children ? "; Children: including callees" : "");
	dsi_wbuf__printf(o, "# %12s %12s %12s", "Baseline", "New", "Delta");
	if (d->children)
		dsi_wbuf__printf(o, " %12s", "Children");
	if (d->sort & DS_DIFF_SORT_COMM)
		dsi_wbuf__printf(o, "  %-16s", "Command");
	if (d->sort & DS_DIFF_SORT_DSO)
		dsi_wbuf__printf(o, "  %-24s", "Shared Object");
	if (d->sort & DS_DIFF_SORT_SYM)
		dsi_wbuf__puts(o, "  Symbol");
	dsi_wbuf__puts(o, "\n#\n");
}

static int print_report(struct ds_diff *d, ds_write_fn fn, void *ctx)
{
	struct dreport r = { 0 };
	struct dsi_wbuf w, *o = &w;
	int err;

	if (dsi_wbuf__init(o, fn, ctx))
		return -ENOMEM;
	if (build_entries(d, &r) < 0) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < r.nr; i++) {
		struct dentry *e = &r.e[i];

		if (d->counts) {
			e->delta = e->self[1] - e->self[0];
			e->cdelta = e->total[1] - e->total[0];
		} else {
			e->delta = pct(d, 1, e->self[1]) - pct(d, 0, e->self[0]);
			e->cdelta = pct(d, 1, e->total[1]) - pct(d, 0, e->total[0]);
		}
	}
	if (r.nr > 1)   /* (fuzz finding: no entry leaves r.e NULL, which qsort may not be given) */
		qsort_r(r.e, r.nr, sizeof(*r.e), cmp_entry, d);
	report_header(o, d);
	for (size_t i = 0; i < r.nr; i++) {
		const struct dentry *e = &r.e[i];

		/* a key only on the way to others' samples: a row only when callees count */
		if (!d->children && !e->self[0] && !e->self[1])
			continue;
		dsi_wbuf__puts(o, "  ");
		print_value(o, d, d->counts ? e->self[0] : pct(d, 0, e->self[0]), false, 12);
		dsi_wbuf__putc(o, ' ');
		print_value(o, d, d->counts ? e->self[1] : pct(d, 1, e->self[1]), false, 12);
		dsi_wbuf__putc(o, ' ');
		print_value(o, d, e->delta, true, 12);
		if (d->children) {
			dsi_wbuf__putc(o, ' ');
			print_value(o, d, e->cdelta, true, 12);
		}
		if (d->sort & DS_DIFF_SORT_COMM)
			dsi_wbuf__printf(o, "  %-16s", STR(d, e->comm));
		if (d->sort & DS_DIFF_SORT_DSO)
			dsi_wbuf__printf(o, "  %-24s", STR(d, e->dso)[0] ? base_name(STR(d, e->dso)) : "[unknown]");
		if (d->sort & DS_DIFF_SORT_SYM)
			dsi_wbuf__printf(o, "  [%c] %s", e->flags & F_KERNEL ? 'k' : '.', STR(d, e->name));
		dsi_wbuf__putc(o, '\n');
	}
	err = 0;
out:
	if (!err)
		err = dsi_wbuf__finish(o);
	else
		dsi_wbuf__finish(o);
	free(r.e);
	dsi_idmap__exit(&r.ids);
	return err;
}

/* --- folded diff --------------------------------------------------------- */

/* A frame as `dstack folded` prints it: argument lists cut, kernel frames "_[k]". */
static void folded_text(const struct ds_diff *d, const struct dnode *n, char *buf, size_t size)
{
	const char *name = STR(d, n->name), *dso = STR(d, n->dso);

	snprintf(buf, size, "%s", name);
	if (!dso[0])
		return;   /* folded text in: the frame as it was */
	if (n->flags & F_COMM) {
		for (char *p = buf; *p; p++)
			if (*p == ' ')
				*p = '_';
		return;
	}
	ds_folded__tidy(buf);
	if ((n->flags & F_KERNEL) && !(n->flags & F_INLINED) && strcmp(dso, "[unknown]") && strlen(buf) + 4 < size)
		strcat(buf, "_[k]");
}

struct fline {
	char *text;
	double w[2];
};

static int cmp_fline(const void *a, const void *b)
{
	return strcmp(((const struct fline *)a)->text, ((const struct fline *)b)->text);
}

/* "comm;outer;...;inner" of node @n, malloc'ed. */
static char *path_text(const struct ds_diff *d, uint32_t n)
{
	char frame[4096];
	size_t len = 0, cap = 256;
	char *s = malloc(cap), *t;
	uint32_t path[1024];
	size_t depth = 0;

	if (!s)
		return NULL;
	for (uint32_t i = n; i != 0 && depth < 1024; i = d->nodes[i].parent)
		path[depth++] = i;
	while (depth--) {
		folded_text(d, &d->nodes[path[depth]], frame, sizeof(frame));
		size_t l = strlen(frame);

		if (!(t = dsi_grow(s, &cap, len + l + 2, 1, 256))) {
			free(s);
			return NULL;
		}
		s = t;
		memcpy(s + len, frame, l);
		len += l;
		s[len++] = depth ? ';' : 0;
	}
	if (!len)
		s[0] = 0;
	return s;
}

static void put_count(struct dsi_wbuf *o, double v)
{
	if (v == floor(v) && v < 1e18)
		dsi_wbuf__dec(o, (uint64_t)v);
	else
		dsi_wbuf__printf(o, "%.15g", v);
}

static int print_folded(struct ds_diff *d, bool normalize, ds_write_fn fn, void *ctx)
{
	struct fline *lines = calloc(d->nr + 1, sizeof(*lines));
	struct dsi_wbuf w, *o = &w;
	size_t nr = 0;
	int err = 0;
	/* difffolded.pl -n: BASE's counts scaled to NEW's total, whole numbers */
	double scale = normalize && d->side[0].total > 0 ? d->side[1].total / d->side[0].total : 1.0;

	if (!lines)
		return -ENOMEM;
	for (size_t i = 1; i < d->nr && !err; i++) {
		const struct dnode *n = &d->nodes[i];

		if (!n->self[0] && !n->self[1])
			continue;
		lines[nr].w[0] = normalize ? floor(n->self[0] * scale) : n->self[0];
		lines[nr].w[1] = n->self[1];
		if (!(lines[nr++].text = path_text(d, (uint32_t)i)))
			err = -ENOMEM;
	}
	if (!err)
		err = dsi_wbuf__init(o, fn, ctx);
	if (!err) {
		qsort(lines, nr, sizeof(*lines), cmp_fline);
		for (size_t i = 0; i < nr && !o->error; i++) {
			dsi_wbuf__puts(o, lines[i].text);
			dsi_wbuf__putc(o, ' ');
			put_count(o, lines[i].w[0]);
			dsi_wbuf__putc(o, ' ');
			put_count(o, lines[i].w[1]);
			dsi_wbuf__putc(o, '\n');
		}
		err = dsi_wbuf__finish(o);
	}
	for (size_t i = 0; i < nr; i++)
		free(lines[i].text);
	free(lines);
	return err;
}

/* --- the differential flame graph ---------------------------------------- */

static int cmp_child(const void *a, const void *b, void *ctx)
{
	const struct ds_diff *d = ctx;
	const struct dnode *x = &d->nodes[*(const uint32_t *)a], *y = &d->nodes[*(const uint32_t *)b];
	int c = strcmp(STR(d, x->name), STR(d, y->name));

	if (!c)
		c = strcmp(STR(d, x->dso), STR(d, y->dso));
	return c ? c : x->flags - y->flags;
}
/*
 * Red for a frame whose share of the profile grew, blue for one that
 * shrank, white for none: the stronger the colour, the bigger the change,
 * full at 5 percentage points or more of the whole (difffolded.pl scales
 * by the biggest change, which makes a tiny change look as strong as a
 * big one when nothing else moved).
 */
static void diff_colour(char *buf, size_t n, double delta)
{
	double a = fabs(delta) / 5.0;
	unsigned c = (unsigned)(210.0 * (1.0 - (a > 1 ? 1 : a))) + 45;

	if (delta > 0)
		snprintf(buf, n, "rgb(255,%u,%u)", c, c);
	else if (delta < 0)
		snprintf(buf, n, "rgb(%u,%u,255)", c, c);
	else
		snprintf(buf, n, "rgb(255,255,255)");
}

/* The deepest frame drawn (visible at @total); 64 when memory runs out.  Nodes follow their parents: one pass. */
static unsigned flame_depth(const struct ds_diff *d, double total)
{
	unsigned *dep = calloc(d->nr + 1, sizeof(*dep)), depth = 0;

	if (!dep)
		return 64;
	for (size_t i = 1; i < d->nr; i++) {
		dep[i] = dep[d->nodes[i].parent] + 1;
		if (ds_flame_svg__visible(d->nodes[i].total[1], total) && dep[i] > depth)
			depth = dep[i];
	}
	free(dep);
	return depth;
}

/* One frame of the graph: node @id at @off and @depth, coloured by its change from BASE to NEW. */
static void draw_diff_frame(struct ds_diff *d, struct ds_flame_svg *svg, uint32_t id, double off, unsigned depth)
{
	const struct dnode *n = &d->nodes[id];
	char frame[4096], status[4400], fill[40];
	double b = pct(d, 0, n->total[0]), nw = pct(d, 1, n->total[1]);

	if (id)
		folded_text(d, n, frame, sizeof(frame));
	else
		snprintf(frame, sizeof(frame), "all");
	diff_colour(fill, sizeof(fill), nw - b);
	snprintf(status, sizeof(status), "%s: %.0f -> %.0f samples (%.2f%% -> %.2f%%, %+.2f)", frame, n->total[0],
		 n->total[1], b, nw, nw - b);
	ds_flame_svg__frame(svg, frame, status, status, fill, off, n->total[1], depth, n->flags & F_KERNEL);
}

/* The differential flame graph as SVG: frames sized by NEW, depth first, children by name.  0 or a negative errno. */
static int write_flame(struct ds_diff *d, ds_write_fn fn, void *ctx)
{
	struct ds_flame_svg *svg;
	struct item { uint32_t id; double off; unsigned depth; } *stack = malloc((d->nr + 1) * sizeof(*stack));
	uint32_t *kids = malloc((d->nr + 1) * sizeof(*kids));
	double total = d->nodes[0].total[1];
	size_t sp = 0;
	char title[600];
	int err;

	snprintf(title, sizeof(title), "Differential Flame Graph: %s -> %s", base_name(d->side[0].path),
		 base_name(d->side[1].path));
	if (!stack || !kids || !(svg = ds_flame_svg__begin(fn, ctx, title, total, flame_depth(d, total)))) {
		free(stack);
		free(kids);
		return -ENOMEM;
	}
	stack[sp++] = (struct item){ 0, 0, 0 };
	while (sp) {
		struct item it = stack[--sp];
		double off = it.off;
		size_t nk = 0;

		draw_diff_frame(d, svg, it.id, it.off, it.depth);
		for (uint32_t c = d->nodes[it.id].first_child; c != NONE; c = d->nodes[c].next)
			if (ds_flame_svg__visible(d->nodes[c].total[1], total))
				kids[nk++] = c;
		qsort_r(kids, nk, sizeof(*kids), cmp_child, d);
		/* pushed last first, so the first name is drawn first */
		for (size_t k = 0; k < nk; k++) {
			stack[sp + nk - 1 - k] = (struct item){ kids[k], off, it.depth + 1 };
			off += d->nodes[kids[k]].total[1];
		}
		sp += nk;
	}
	err = ds_flame_svg__end(svg);
	free(stack);
	free(kids);
	return err;
}


/* --- the object ---------------------------------------------------------- */

struct ds_diff *ds_diff__new(const struct ds_diff_opts *opts)
{
	struct ds_diff *d = calloc(1, sizeof(*d));
	struct ds_stacks_opts mo = { .sz = sizeof(mo) };

	if (!d) {
		errno = ENOMEM;
		return NULL;
	}
	if (opts)
		memcpy(&d->o, opts, opts->sz < sizeof(d->o) ? opts->sz : sizeof(d->o));
	d->o.sz = sizeof(d->o);
	d->cur = -1;
	/* the model's string 0 is "", the root's name; every stack hangs under the root */
	if (!(d->model = ds_stacks__new(&mo)) || child(d, NONE, 0, 0, 0) != 0) {
		ds_diff__delete(d);
		errno = ENOMEM;
		return NULL;
	}
	if (d->o.event) {
		uint32_t id = ds_stacks__intern_str(d->model, d->o.event);

		if (id == NONE) {
			ds_diff__delete(d);
			errno = ENOMEM;
			return NULL;
		}
		d->event = STR(d, id);
	}
	d->o.event = NULL;   /* (the caller's: not kept) */
	return d;
}

void ds_diff__delete(struct ds_diff *d)
{
	if (!d)
		return;
	ds_stacks__delete(d->model);
	free(d->nodes);
	dsi_idmap__exit(&d->edges);
	dsi_idmap__exit(&d->memo_ids);
	free(d->memo);
	free(d->line);
	for (int s = 0; s < 2; s++)
		free(d->side[s].path);
	free(d);
}

int ds_diff__begin_side(struct ds_diff *d, int side, const char *name, bool folded_text)
{
	if (side < 0 || side > 1 || d->summed)
		return -EINVAL;
	free(d->side[side].path);
	if (!(d->side[side].path = strdup(name ? name : "")))
		return -ENOMEM;
	d->side[side].folded_text = folded_text;
	d->cur = side;
	/* the chain ids and frame pointers of a recording die with it */
	ds_stacks__end_source(d->model);
	dsi_idmap__exit(&d->memo_ids);
	d->nr_memo = 0;
	return 0;
}

const char *ds_diff__event(const struct ds_diff *d)
{
	return d->event;
}

/* Inclusive weights, once: nothing is added after. */
static void sum_once(struct ds_diff *d)
{
	if (!d->summed)
		sum_totals(d);
	d->summed = true;
	d->cur = -1;
}

int ds_diff__write_report(struct ds_diff *d, const struct ds_diff_report_opts *opts, ds_write_fn fn, void *ctx)
{
	struct ds_diff_report_opts o = { .sz = sizeof(o), .sort = DS_DIFF_SORT_DSO | DS_DIFF_SORT_SYM };

	if (opts)
		memcpy(&o, opts, opts->sz < sizeof(o) ? opts->sz : sizeof(o));
	if (!o.sort || (o.sort & ~(unsigned)(DS_DIFF_SORT_COMM | DS_DIFF_SORT_DSO | DS_DIFF_SORT_SYM)))
		return -EINVAL;
	sum_once(d);
	d->sort = o.sort;
	d->counts = o.counts;
	d->children = o.children;
	return print_report(d, fn, ctx);
}

int ds_diff__write_folded(struct ds_diff *d, bool normalize, ds_write_fn fn, void *ctx)
{
	sum_once(d);
	return print_folded(d, normalize, fn, ctx);
}

int ds_diff__write_flamegraph(struct ds_diff *d, ds_write_fn fn, void *ctx)
{
	sum_once(d);
	return write_flame(d, fn, ctx);
}
