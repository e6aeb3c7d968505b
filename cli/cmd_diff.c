// SPDX-License-Identifier: MIT
/*
 * dstack diff BASE NEW: what changed between two profiles.
 *
 * Each input is a recording (perf.data, file or pipe mode: it starts with
 * "PERFILE2") or a folded-stacks text file ("frame;frame;... count", what
 * `dstack folded`, stackcollapse-perf.pl and inferno write).  Both go into
 * one tree of stacks, root first: the comm, then the frames outermost
 * first, every node with its self and inclusive weight on each side.
 * From that tree:
 *
 *  - the default output is the report delta: per --sort key, the
 *    baseline %, the new %, their difference and (--children) the
 *    difference of the inclusive percentages, ordered by the size of the
 *    change.  Percentages are of each side's total weight (so a longer
 *    recording of the same work shows no change); --counts prints the
 *    weights themselves;
 *  - --folded prints "stack BASE NEW" per stack, the output of
 *    FlameGraph's difffolded.pl and inferno-diff-folded (-n: BASE scaled
 *    to NEW's total, as difffolded.pl -n), which flamegraph.pl and
 *    inferno-flamegraph draw as a differential flame graph;
 *  - --flamegraph draws that graph itself: frames sized by NEW, red where
 *    the frame's share grew, blue where it shrank (difffolded.pl's
 *    colouring), the numbers on hover, search and zoom as in
 *    `dstack flamegraph`.
 *
 * Weights are sample periods for the report (as perf diff) and sample
 * counts for --folded and --flamegraph (as `dstack folded`), --period and
 * --samples choose otherwise.  Only one event is compared: -e NAME, else
 * the first one sampled in BASE; the samples of other events are counted
 * and said in the header.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "cli.h"
#include "dstack/event.h"
#include "dstack/export.h"
#include "export_common.h"
#include "util/grow.h"
#include "util/outbuf.h"
#include "util/idmap.h"
#include "util/strset.h"

#define NONE UINT32_MAX
#define F_KERNEL 1
#define F_INLINED 2
#define F_COMM 4

struct dnode {
	uint32_t name, dso;         /* string ids (dso: "" for folded-text frames and comms) */
	uint32_t self_name;         /* a leaf's symbol-table name (what perf diff's self counts), 0: name */
	uint32_t parent, first_child, next;
	uint8_t flags;              /* F_* */
	double self[2], total[2];   /* weights: [0] BASE, [1] NEW */
};

struct side {
	const char *path;
	bool folded_text;
	double total;               /* weight of the samples compared */
	uint64_t samples;           /* samples compared */
	uint64_t other_events;      /* samples skipped: another event */
};

enum mode { M_REPORT, M_FOLDED, M_FLAME };
enum weight { W_DEFAULT, W_PERIOD, W_SAMPLES };

#define SORT_COMM 1
#define SORT_DSO 2
#define SORT_SYM 4

/* A chain (ds_profile_sample.chain_id) under a comm's node: the leaf its frames lead to. */
struct memo {
	uint64_t chain_id;
	uint32_t root, leaf;
};

/* A frame with a symbol, by its interned pointers: the ids of its name and dso. */
struct frame_names {
	const char *sym, *dso;
	uint8_t flags;               /* kernel * 2 + inlined */
	uint32_t name, dso_id;
};

struct diff {
	struct walk_opts wo;
	enum mode mode;
	enum weight weight;
	unsigned sort;               /* SORT_* */
	bool counts, children, normalize;
	const char *event;           /* -e, else the first event of BASE (an interned copy) */
	struct dsi_strset strs;      /* the texts of nodes and entries, by id */
	struct dnode *nodes;
	size_t nr, cap;
	struct ds_idmap edges;       /* (parent, name, dso, flags) -> index in nodes */
	struct side side[2];
	int cur;                     /* the side being read */
	/* per recording: the leaf of each (chain id, comm node), and the ids of each frame with a symbol */
	struct ds_idmap memo_ids, frame_ids;
	struct memo *memo;
	size_t nr_memo, cap_memo;
	struct frame_names *frames;
	size_t nr_frames, cap_frames;
	int err;
};

static uint64_t node_key(uint32_t parent, uint32_t name, uint32_t dso, uint8_t flags)
{
	return dsi_hash_pair(dsi_hash_pair(parent, name), (uint64_t)dso << 8 | flags);
}

static bool node_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct dnode *n = &((const struct diff *)ctx)->nodes[id], *k = key;

	return n->parent == k->parent && n->name == k->name && n->dso == k->dso && n->flags == k->flags;
}

/* The child of @parent for the frame (name, dso, flags), made if new; NONE on ENOMEM. */
static uint32_t child(struct diff *d, uint32_t parent, uint32_t name, uint32_t dso, uint8_t flags)
{
	struct dnode key = { .name = name, .dso = dso, .parent = parent, .flags = flags, .first_child = NONE,
			     .next = NONE };
	struct dnode *nn = dsi_grow(d->nodes, &d->cap, d->nr + 1, sizeof(*nn), 1024);
	uint32_t id;
	bool added;

	if (!nn || d->nr >= NONE - 1)
		return NONE;
	d->nodes = nn;
	id = ds_idmap__find_or_add(&d->edges, node_key(parent, name, dso, flags), node_eq, d, &key,
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
static void add_weight(struct diff *d, uint32_t leaf, double w)
{
	d->nodes[leaf].self[d->cur] += w;
	d->side[d->cur].total += w;
}

/* --- recordings ---------------------------------------------------------- */

static bool frame_names_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct frame_names *a = &((const struct diff *)ctx)->frames[id], *b = key;

	return a->sym == b->sym && a->dso == b->dso && a->flags == b->flags;
}

/* The ids of a frame's name and dso, kept by the frame's interned pointers (those with a symbol). */
static int frame_ids(struct diff *d, const struct ds_cc_frame *f, uint32_t *name, uint32_t *dso)
{
	struct frame_names key = { .sym = f->sym, .dso = f->dso, .flags = (uint8_t)(f->kernel * 2 + f->inlined) };
	uint64_t k = dsi_hash_pair(dsi_hash_pair((uintptr_t)f->sym, (uintptr_t)f->dso), key.flags);
	char buf[512];
	const char *n = f->sym;

	if (f->sym) {
		uint32_t id = ds_idmap__find(&d->frame_ids, k, frame_names_eq, d, &key);

		if (id != DS_IDMAP_NONE) {
			*name = d->frames[id].name;
			*dso = d->frames[id].dso_id;
			return 0;
		}
	}
	if (!n) {
		if (!f->dso || !strcmp(f->dso, "[unknown]")) {
			n = "[unknown]";
		} else {
			n = frame_dso_label(f, buf, sizeof(buf));
		}
	}
	*name = dsi_strset__add(&d->strs, n);
	*dso = dsi_strset__add(&d->strs, f->dso ? f->dso : "[unknown]");
	if (*name == NONE || *dso == NONE)
		return -ENOMEM;
	if (f->sym) {
		struct frame_names *fn = dsi_grow(d->frames, &d->cap_frames, d->nr_frames + 1, sizeof(*fn), 1024);

		if (!fn || d->nr_frames >= DS_IDMAP_NONE - 1)
			return -ENOMEM;
		d->frames = fn;
		if (ds_idmap__add(&d->frame_ids, k, (uint32_t)d->nr_frames) < 0)
			return -ENOMEM;
		key.name = *name;
		key.dso_id = *dso;
		d->frames[d->nr_frames++] = key;
	}
	return 0;
}

static bool memo_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct memo *a = &((const struct diff *)ctx)->memo[id], *b = key;

	return a->chain_id == b->chain_id && a->root == b->root;
}

/* The leaf memoised for @key's chain under its comm's node, NONE if there is none. */
static uint32_t memo_find(const struct diff *d, const struct memo *key)
{
	return ds_idmap__find(&d->memo_ids, dsi_hash_pair(key->chain_id, key->root), memo_eq, d, key);
}

/* Memoise @key (not found by memo_find just before); 0 or -ENOMEM. */
static int memo_add(struct diff *d, const struct memo *key)
{
	if (d->nr_memo >= CLI_CHAIN_MEMO_MAX) {
		dsi_idmap__exit(&d->memo_ids);
		d->nr_memo = 0;
	}
	struct memo *m = dsi_grow(d->memo, &d->cap_memo, d->nr_memo + 1, sizeof(*m), 1024);

	if (!m || d->nr_memo >= DS_IDMAP_NONE - 1)
		return -ENOMEM;
	d->memo = m;
	if (ds_idmap__add(&d->memo_ids, dsi_hash_pair(key->chain_id, key->root), (uint32_t)d->nr_memo) < 0)
		return -ENOMEM;
	d->memo[d->nr_memo++] = *key;
	return 0;
}

/*
 * Whether a sample of event @ev is compared: the first event seen is, when
 * -e named none.  1, 0 (counted as another event's), or -ENOMEM.
 */
static int compared_event(struct diff *d, const char *ev)
{
	if (!d->event) {
		uint32_t id = dsi_strset__add(&d->strs, ev);

		if (id == NONE)
			return -ENOMEM;
		d->event = d->strs.strs[id];
	}
	if (strcmp(ev, d->event)) {
		d->side[d->cur].other_events++;
		return 0;
	}
	return 1;
}

/* The node of the sample's stack under @n (its comm), from the outermost frame in; NONE when out of memory. */
static uint32_t stack_node(struct diff *d, const struct ds_profile_sample *s, uint32_t n)
{
	uint32_t name, dso;

	for (size_t i = s->nr_frames; i-- > 0;) {
		const struct ds_cc_frame *f = &s->frames[i];

		if (f->cookie)
			continue;   /* an unresolved deferred chain: no frames to show */
		if (frame_ids(d, f, &name, &dso) < 0 ||
		    (n = child(d, n, name, dso, (uint8_t)(f->kernel * F_KERNEL | f->inlined * F_INLINED))) == NONE)
			return NONE;
	}
	return n;
}

/*
 * The self weight goes to the symbol-table symbol at the sample's address,
 * as perf diff's (and report's flat profile): a function inlined there, or
 * a clone DWARF names otherwise, is not it.  Leaf node @n keeps the first
 * one named.  0 or -ENOMEM.
 */
static int set_self_name(struct diff *d, const struct ds_profile_sample *s, uint32_t n)
{
	for (size_t i = 0; i < s->nr_frames; i++) {
		const struct ds_cc_frame *f = &s->frames[i];

		if (f->cookie)
			continue;
		if (f->elf_sym && !d->nodes[n].self_name) {
			uint32_t id = dsi_strset__add(&d->strs, f->elf_sym);

			if (id == NONE)
				return -ENOMEM;
			d->nodes[n].self_name = id;
		}
		break;
	}
	return 0;
}

static int on_sample(void *ctx, const struct ds_profile_sample *s)
{
	struct diff *d = ctx;
	const char *ev = s->evsel && s->evsel->name ? s->evsel->name : "unknown";
	bool by_period = d->weight == W_PERIOD || (d->weight == W_DEFAULT && d->mode == M_REPORT);
	double w = by_period ? (double)s->period : 1.0;
	uint32_t n, name;
	struct memo mk = { .chain_id = s->chain_id };
	int rc = compared_event(d, ev);

	if (rc <= 0)
		return rc;
	d->side[d->cur].samples++;
	/* a report not by comm needs no comm: one root (a task per sample would make a root each) */
	name = d->mode == M_REPORT && !(d->sort & SORT_COMM) ? XSTR_EMPTY : dsi_strset__add(&d->strs, s->comm ? s->comm : ":-1");
	if (name == NONE || (n = child(d, 0, name, 0, F_COMM)) == NONE)
		return -ENOMEM;
	mk.root = n;
	if (s->chain_id) {
		uint32_t id = memo_find(d, &mk);

		if (id != DS_IDMAP_NONE) {
			add_weight(d, d->memo[id].leaf, w);
			return 0;
		}
	}
	if ((n = stack_node(d, s, n)) == NONE || set_self_name(d, s, n))
		return -ENOMEM;
	mk.leaf = n;
	if (s->chain_id && memo_add(d, &mk) < 0)
		return -ENOMEM;
	add_weight(d, n, w);
	return 0;
}

/* Forget the memo and frames: the chain ids and frame pointers die with their recording. */
static void forget_recording(struct diff *d)
{
	dsi_idmap__exit(&d->memo_ids);
	dsi_idmap__exit(&d->frame_ids);
	free(d->memo);
	free(d->frames);
	d->memo = NULL;
	d->frames = NULL;
	d->nr_memo = d->cap_memo = d->nr_frames = d->cap_frames = 0;
}

static int read_recording(struct diff *d, const char *path)
{
	struct walk_opts wo = d->wo;
	int ret;

	wo.common.input = path;
	/* stacks as `dstack folded` names them (perf script's comms) where they are compared with it */
	wo.script_comms = d->mode != M_REPORT;
	wo.transient_comms = true;   /* a comm is copied (dsi_strset__add), never kept by pointer */
	forget_recording(d);
	ret = walk_samples("diff", &wo, on_sample, d);
	forget_recording(d);
	return ret;
}

/* --- folded text --------------------------------------------------------- */

/*
 * One line "frame;frame;... count" (the count after the last blank, a
 * decimal number as difffolded.pl takes it).  Returns 0, 1 for a line to
 * skip (empty), -EINVAL for a bad one, -ENOMEM.
 */
static int folded_line(struct diff *d, char *line)
{
	size_t len = strlen(line);
	char *end, *sp;
	double w;

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
		uint32_t name = dsi_strset__add(&d->strs, f);

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

static int read_folded(struct diff *d, const char *path)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0, lineno = 0;
	long off = 0;
	ssize_t n;
	int ret = EXIT_OK;

	if (!f) {
		fprintf(stderr, "dstack diff: %s: %s\n", path, strerror(errno));
		return EXIT_INPUT;
	}
	while ((n = getline(&line, &cap, f)) > 0) {
		lineno++;
		if (memchr(line, 0, (size_t)n)) {
			fprintf(stderr, "dstack diff: %s: offset %ld (line %zu): a NUL byte: not a folded-stacks file\n",
				path, off, lineno);
			ret = EXIT_INPUT;
			break;
		}
		int r = folded_line(d, line);

		if (r == -EINVAL) {
			fprintf(stderr, "dstack diff: %s: offset %ld (line %zu): not \"stack count\"\n", path, off, lineno);
			ret = EXIT_INPUT;
			break;
		}
		if (r < 0) {
			fprintf(stderr, "dstack diff: %s\n", strerror(-r));
			ret = EXIT_INPUT;
			break;
		}
		off += n;
	}
	if (ret == EXIT_OK && ferror(f)) {
		fprintf(stderr, "dstack diff: %s: offset %ld: %s\n", path, off, strerror(errno));
		ret = EXIT_INPUT;
	}
	free(line);
	fclose(f);
	return ret;
}

/*
 * A recording starts with "PERFILE2" (file and pipe mode); "-" is one on
 * stdin, and so is anything but a regular file (a pipe cannot be peeked
 * at without taking what it gives).
 */
static int input_kind(const char *path, bool *folded_text)
{
	char magic[8];
	struct stat st;
	int fd;
	ssize_t n;

	*folded_text = false;
	if (!strcmp(path, "-"))
		return 0;
	if (!stat(path, &st) && !S_ISREG(st.st_mode))
		return 0;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		fprintf(stderr, "dstack diff: %s: %s\n", path, strerror(errno));
		return -1;
	}
	n = read(fd, magic, sizeof(magic));
	close(fd);
	*folded_text = n != (ssize_t)sizeof(magic) || memcmp(magic, "PERFILE2", 8);
	return 0;
}

/* --- totals -------------------------------------------------------------- */

/* Inclusive weights: nodes are made after their parents, so one backward pass adds them up. */
static void sum_totals(struct diff *d)
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

static double pct(const struct diff *d, int s, double w)
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
	struct ds_idmap ids;        /* (comm, dso, name, flags) -> index in e */
};

static bool dentry_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct dentry *e = &((const struct dreport *)ctx)->e[id], *k = key;

	return e->comm == k->comm && e->dso == k->dso && e->name == k->name && e->flags == k->flags;
}

static struct dentry *entry(struct diff *d, struct dreport *r, uint32_t comm, const struct dnode *f, bool self)
{
	uint32_t dso = d->sort & SORT_DSO ? f->dso : NONE;
	uint32_t name = !(d->sort & SORT_SYM) ? NONE : self && f->self_name ? f->self_name : f->name;
	uint8_t flags = d->sort & SORT_SYM ? f->flags & F_KERNEL : 0;

	struct dentry key, *ne = dsi_grow(r->e, &r->cap, r->nr + 1, sizeof(*ne), 256);
	uint32_t id;
	bool added;

	comm = d->sort & SORT_COMM ? comm : NONE;
	key = (struct dentry){ .comm = comm, .dso = dso, .name = name, .flags = flags, .stamp = NONE };
	if (!ne || r->nr >= NONE - 1)
		return NULL;
	r->e = ne;
	id = ds_idmap__find_or_add(&r->ids, dsi_hash_pair(dsi_hash_pair(comm, dso), (uint64_t)name << 8 | flags),
				   dentry_eq, r, &key, (uint32_t)r->nr, &added);
	if (id == NONE)
		return NULL;
	if (added)
		r->e[r->nr++] = key;
	return &r->e[id];
}

/* The comm node above @n (the root's child), and @n's sort entry. */
static uint32_t comm_of(const struct diff *d, uint32_t n)
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
static int build_entries(struct diff *d, struct dreport *r)
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

static const struct diff *sort_d;

static const char *entry_text(const struct dentry *e)
{
	return e->name != NONE ? sort_d->strs.strs[e->name] : e->dso != NONE ? sort_d->strs.strs[e->dso] :
		e->comm != NONE ? sort_d->strs.strs[e->comm] : "";
}

/* By the size of the change (the children's with --children), then by name: a stable order. */
static int cmp_entry(const void *a, const void *b)
{
	const struct dentry *x = a, *y = b;
	double dx = fabs(sort_d->children ? x->cdelta : x->delta), dy = fabs(sort_d->children ? y->cdelta : y->delta);

	if (dx != dy)
		return dx < dy ? 1 : -1;
	if (x->self[1] != y->self[1])
		return x->self[1] < y->self[1] ? 1 : -1;
	return strcmp(entry_text(x), entry_text(y));
}

static void print_value(struct outbuf *o, const struct diff *d, double v, bool sign, int width)
{
	char buf[64];

	if (d->counts)
		snprintf(buf, sizeof(buf), sign ? "%+.0f" : "%.0f", v);
	else
		snprintf(buf, sizeof(buf), sign ? "%+.2f%%" : "%.2f%%", v);
	outbuf_printf(o, "%*s", width, buf);
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');

	return s && s[1] ? s + 1 : p;
}

static void report_header(struct outbuf *o, const struct diff *d)
{
	if (d->event)
		outbuf_printf(o, "# Event '%s'\n#\n", d->event);
	for (int s = 0; s < 2; s++) {
		const struct side *sd = &d->side[s];

		outbuf_printf(o, "# %-8s  %s: %llu %s, weight %.0f", s ? "New" : "Baseline", sd->path,
			      (unsigned long long)sd->samples, sd->folded_text ? "stacks" : "samples", sd->total);
		if (sd->other_events)
			outbuf_printf(o, " (%llu samples of other events not compared)",
				      (unsigned long long)sd->other_events);
		outbuf_putc(o, '\n');
	}
	outbuf_printf(o, "#\n# %s by %s%s\n#\n", d->counts ? "Weights" : "Percentages of each side's total",
		      d->side[0].folded_text && d->side[1].folded_text ? "the folded counts" :
		      d->weight == W_SAMPLES ? "sample count" : "period",
		      d->children ? "; Children: including callees" : "");
	outbuf_printf(o, "# %12s %12s %12s", "Baseline", "New", "Delta");
	if (d->children)
		outbuf_printf(o, " %12s", "Children");
	if (d->sort & SORT_COMM)
		outbuf_printf(o, "  %-16s", "Command");
	if (d->sort & SORT_DSO)
		outbuf_printf(o, "  %-24s", "Shared Object");
	if (d->sort & SORT_SYM)
		outbuf_puts(o, "  Symbol");
	outbuf_puts(o, "\n#\n");
}

static int print_report(struct diff *d, int fd)
{
	struct dreport r = { 0 };
	struct outbuf *o = outbuf_new(fd);
	int err;

	if (!o)
		return ENOMEM;
	if (build_entries(d, &r) < 0) {
		err = ENOMEM;
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
	sort_d = d;
	qsort(r.e, r.nr, sizeof(*r.e), cmp_entry);
	report_header(o, d);
	for (size_t i = 0; i < r.nr; i++) {
		const struct dentry *e = &r.e[i];

		/* a key only on the way to others' samples: a row only when callees count */
		if (!d->children && !e->self[0] && !e->self[1])
			continue;
		outbuf_puts(o, "  ");
		print_value(o, d, d->counts ? e->self[0] : pct(d, 0, e->self[0]), false, 12);
		outbuf_putc(o, ' ');
		print_value(o, d, d->counts ? e->self[1] : pct(d, 1, e->self[1]), false, 12);
		outbuf_putc(o, ' ');
		print_value(o, d, e->delta, true, 12);
		if (d->children) {
			outbuf_putc(o, ' ');
			print_value(o, d, e->cdelta, true, 12);
		}
		if (d->sort & SORT_COMM)
			outbuf_printf(o, "  %-16s", d->strs.strs[e->comm]);
		if (d->sort & SORT_DSO)
			outbuf_printf(o, "  %-24s", d->strs.strs[e->dso][0] ? base_name(d->strs.strs[e->dso]) : "[unknown]");
		if (d->sort & SORT_SYM)
			outbuf_printf(o, "  [%c] %s", e->flags & F_KERNEL ? 'k' : '.', d->strs.strs[e->name]);
		outbuf_putc(o, '\n');
	}
	outbuf_flush(o);
	err = o->error;
out:
	outbuf_delete(o);
	free(r.e);
	dsi_idmap__exit(&r.ids);
	return err;
}

/* --- folded diff --------------------------------------------------------- */

/* A frame as `dstack folded` prints it: argument lists cut, kernel frames "_[k]". */
static void folded_text(const struct diff *d, const struct dnode *n, char *buf, size_t size)
{
	const char *name = d->strs.strs[n->name], *dso = d->strs.strs[n->dso];

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
static char *path_text(const struct diff *d, uint32_t n)
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

static void put_count(struct outbuf *o, double v)
{
	if (v == floor(v) && v < 1e18)
		outbuf_dec(o, (uint64_t)v, 0, ' ');
	else
		outbuf_printf(o, "%.15g", v);
}

static int print_folded(struct diff *d, int fd)
{
	struct fline *lines = calloc(d->nr + 1, sizeof(*lines));
	struct outbuf *o = NULL;
	size_t nr = 0;
	int err = 0;
	/* difffolded.pl -n: BASE's counts scaled to NEW's total, whole numbers */
	double scale = d->normalize && d->side[0].total > 0 ? d->side[1].total / d->side[0].total : 1.0;

	if (!lines)
		return ENOMEM;
	for (size_t i = 1; i < d->nr && !err; i++) {
		const struct dnode *n = &d->nodes[i];

		if (!n->self[0] && !n->self[1])
			continue;
		lines[nr].w[0] = d->normalize ? floor(n->self[0] * scale) : n->self[0];
		lines[nr].w[1] = n->self[1];
		if (!(lines[nr++].text = path_text(d, (uint32_t)i)))
			err = ENOMEM;
	}
	if (!err && !(o = outbuf_new(fd)))
		err = ENOMEM;
	if (!err) {
		qsort(lines, nr, sizeof(*lines), cmp_fline);
		for (size_t i = 0; i < nr; i++) {
			outbuf_puts(o, lines[i].text);
			outbuf_putc(o, ' ');
			put_count(o, lines[i].w[0]);
			outbuf_putc(o, ' ');
			put_count(o, lines[i].w[1]);
			outbuf_putc(o, '\n');
		}
		outbuf_flush(o);
		err = o->error;
	}
	outbuf_delete(o);
	for (size_t i = 0; i < nr; i++)
		free(lines[i].text);
	free(lines);
	return err;
}

/* --- the differential flame graph ---------------------------------------- */

static const struct diff *flame_d;

static int cmp_child(const void *a, const void *b)
{
	const struct dnode *x = &flame_d->nodes[*(const uint32_t *)a], *y = &flame_d->nodes[*(const uint32_t *)b];
	int c = strcmp(flame_d->strs.strs[x->name], flame_d->strs.strs[y->name]);

	if (!c)
		c = strcmp(flame_d->strs.strs[x->dso], flame_d->strs.strs[y->dso]);
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
static unsigned flame_depth(const struct diff *d, double total)
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
static void draw_diff_frame(struct diff *d, struct ds_flame_svg *svg, uint32_t id, double off, unsigned depth)
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

/* The differential flame graph as SVG on @fd: frames sized by NEW, depth first, children by name.  0 or an errno. */
static int write_flame(struct diff *d, int fd)
{
	struct ds_flame_svg *svg;
	struct outbuf *o = outbuf_new(fd);
	struct item { uint32_t id; double off; unsigned depth; } *stack = malloc((d->nr + 1) * sizeof(*stack));
	uint32_t *kids = malloc((d->nr + 1) * sizeof(*kids));
	double total = d->nodes[0].total[1];
	size_t sp = 0;
	char title[600];
	int err;

	snprintf(title, sizeof(title), "Differential Flame Graph: %s -> %s", base_name(d->side[0].path),
		 base_name(d->side[1].path));
	if (!stack || !kids || !o ||
	    !(svg = ds_flame_svg__begin(cli_write_outbuf, o, title, total, flame_depth(d, total)))) {
		free(stack);
		free(kids);
		outbuf_delete(o);
		return ENOMEM;
	}
	stack[sp++] = (struct item){ 0, 0, 0 };
	flame_d = d;
	while (sp) {
		struct item it = stack[--sp];
		double off = it.off;
		size_t nk = 0;

		draw_diff_frame(d, svg, it.id, it.off, it.depth);
		for (uint32_t c = d->nodes[it.id].first_child; c != NONE; c = d->nodes[c].next)
			if (ds_flame_svg__visible(d->nodes[c].total[1], total))
				kids[nk++] = c;
		qsort(kids, nk, sizeof(*kids), cmp_child);
		/* pushed last first, so the first name is drawn first */
		for (size_t k = 0; k < nk; k++) {
			stack[sp + nk - 1 - k] = (struct item){ kids[k], off, it.depth + 1 };
			off += d->nodes[kids[k]].total[1];
		}
		sp += nk;
	}
	err = -ds_flame_svg__end(svg);
	outbuf_flush(o);
	if (!err)
		err = o->error;
	outbuf_delete(o);
	free(stack);
	free(kids);
	return err;
}

/* --- the command --------------------------------------------------------- */

static void diff_usage(void)
{
	fprintf(stderr,
		"usage: dstack diff [options] BASE NEW\n"
		"  BASE, NEW            recordings (perf.data) or folded-stacks files\n"
		"  --sort KEYS          comm, dso, sym, comma-separated (default dso,sym)\n"
		"  --children           also the change of each key's inclusive share\n"
		"  --counts             weights instead of percentages of each side's total\n"
		"  --folded             \"stack BASE NEW\" lines (difffolded.pl's format)\n"
		"  -n, --normalize      with --folded: BASE scaled to NEW's total\n"
		"  --flamegraph         differential flame graph (SVG)\n"
		"  --period, --samples  weigh by period (report's default) or count samples\n"
		"  -e, --event NAME     compare this event (default: BASE's first)\n"
		"  -o FILE              write to FILE (default stdout; diff.svg for --flamegraph)\n%s",
		walk_usage());
}

static int parse_sort(struct diff *d, const char *v)
{
	char buf[256];

	snprintf(buf, sizeof(buf), "%s", v);
	d->sort = 0;
	for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (!strcmp(t, "comm"))
			d->sort |= SORT_COMM;
		else if (!strcmp(t, "dso"))
			d->sort |= SORT_DSO;
		else if (!strcmp(t, "sym") || !strcmp(t, "symbol"))
			d->sort |= SORT_SYM;
		else
			return -1;
	}
	return d->sort ? 0 : -1;
}

static int parse_args(struct diff *d, int argc, char **argv, const char **in, const char **output)
{
	const char *v;
	size_t nin = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-i") || !strncmp(argv[i], "--input", 7)) {
			usage_error("diff", "-i is not taken: name BASE and NEW");
			return EXIT_USAGE;
		}
		int c = walk_opt(&d->wo, "diff", argc, argv, &i);

		if (c < 0)
			return EXIT_USAGE;
		if (c)
			continue;
		if ((v = opt_value("-o", argc, argv, &i)) || (v = opt_value("--output", argc, argv, &i)))
			*output = v;
		else if ((v = opt_value("--sort", argc, argv, &i)) || (v = opt_value("-s", argc, argv, &i))) {
			if (parse_sort(d, v)) {
				usage_error("diff", "bad --sort '%s' (comm, dso, sym)", v);
				return EXIT_USAGE;
			}
		} else if ((v = opt_value("-e", argc, argv, &i)) || (v = opt_value("--event", argc, argv, &i)))
			d->event = v;
		else if (!strcmp(argv[i], "--children"))
			d->children = true;
		else if (!strcmp(argv[i], "--counts"))
			d->counts = true;
		else if (!strcmp(argv[i], "--folded"))
			d->mode = M_FOLDED;
		else if (!strcmp(argv[i], "--flamegraph"))
			d->mode = M_FLAME;
		else if (!strcmp(argv[i], "-n") || !strcmp(argv[i], "--normalize"))
			d->normalize = true;
		else if (!strcmp(argv[i], "--period"))
			d->weight = W_PERIOD;
		else if (!strcmp(argv[i], "--samples"))
			d->weight = W_SAMPLES;
		else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			diff_usage();
			return -1;
		} else if (argv[i][0] == '-' && argv[i][1]) {
			usage_error("diff", "unknown option '%s'", argv[i]);
			diff_usage();
			return EXIT_USAGE;
		} else if (nin < 2) {
			in[nin++] = argv[i];
		} else {
			usage_error("diff", "more than two inputs ('%s')", argv[i]);
			return EXIT_USAGE;
		}
	}
	if (nin != 2) {
		usage_error("diff", "two inputs are needed: BASE NEW");
		diff_usage();
		return EXIT_USAGE;
	}
	return EXIT_OK;
}

static void diff_free(struct diff *d)
{
	dsi_strset__exit(&d->strs);
	free(d->nodes);
	dsi_idmap__exit(&d->edges);
	forget_recording(d);
	free(d);
}

int cmd_diff(int argc, char **argv)
{
	struct diff *d = calloc(1, sizeof(*d));
	const char *in[2] = { NULL, NULL }, *output = NULL;
	int ret, fd = STDOUT_FILENO, err = 0;

	if (!d) {
		fprintf(stderr, "dstack diff: out of memory\n");
		return EXIT_INPUT;
	}
	walk_opts_init(&d->wo);
	d->sort = SORT_DSO | SORT_SYM;
	ret = parse_args(d, argc, argv, in, &output);
	if (ret) {
		diff_free(d);
		return ret < 0 ? EXIT_OK : ret;
	}
	bool sorted = d->sort != (SORT_DSO | SORT_SYM);

	for (int s = 0; s < 2; s++) {
		d->side[s].path = in[s];
		if (input_kind(in[s], &d->side[s].folded_text)) {
			diff_free(d);
			return EXIT_INPUT;
		}
	}
	/* folded stacks know no DSO */
	if (!sorted && d->side[0].folded_text && d->side[1].folded_text)
		d->sort = SORT_SYM;
	if (!output && d->mode == M_FLAME)
		output = "diff.svg";
	if (output && strcmp(output, "-") &&
	    (fd = open(output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0) {
		fprintf(stderr, "dstack diff: %s: %s\n", output, strerror(errno));
		diff_free(d);
		return EXIT_USAGE;
	}
	/* the root: every stack hangs under it */
	if (dsi_strset__add(&d->strs, "") != 0 || child(d, NONE, 0, 0, 0) != 0) {
		err = ENOMEM;
		ret = EXIT_INPUT;
	}
	for (int s = 0; s < 2 && ret == EXIT_OK; s++) {
		d->cur = s;
		ret = d->side[s].folded_text ? read_folded(d, in[s]) : read_recording(d, in[s]);
	}
	if (ret == EXIT_OK && !err) {
		sum_totals(d);
		err = d->mode == M_FOLDED ? print_folded(d, fd) : d->mode == M_FLAME ? write_flame(d, fd) :
			print_report(d, fd);
	}
	if (err) {
		fprintf(stderr, "dstack diff: %s%s%s\n", output ? output : "", output ? ": " : "", strerror(err));
		ret = EXIT_INPUT;
	}
	if (fd != STDOUT_FILENO && close(fd)) {
		fprintf(stderr, "dstack diff: %s: %s\n", output, strerror(errno));
		ret = EXIT_INPUT;
	}
	diff_free(d);
	return ret;
}
