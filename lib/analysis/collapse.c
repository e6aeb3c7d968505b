// SPDX-License-Identifier: MIT
/*
 * The report's order (report_int.h): perf's comparators of entries, its
 * collapse of equal entries and merge of their call graphs, and the group
 * view's pairing of members with their leader's entries.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/grow.h"
#include "analysis/report_int.h"

/* perf's short name of a DSO (ds_machine__dso_short_name) */
static const char *short_dso_of(const struct ds_report *r, const char *dso)
{
	const char *s;

	if (r->machine && (s = ds_machine__dso_short_name(r->machine, dso)))
		return s;
	return ds_dso__short_name(dso, false, NULL, 0);
}

/*
 * Remembered per DSO (r->short_dsos): the entries' comparisons ask for it
 * twice each, and working it out (a hash lookup, a string search) was a
 * tenth of a --children report.  Without memory, worked out again.
 */
const char *dsi_report_short_dso(const struct ds_report *r, const char *dso)
{
	uint64_t *v = r->short_dsos ? dsi_hashmap__find(r->short_dsos, (uintptr_t)dso) : NULL;
	const char *s;

	if (v)
		return (const char *)(uintptr_t)*v;
	s = short_dso_of(r, dso);
	if (r->short_dsos)
		(void)dsi_hashmap__set(r->short_dsos, (uintptr_t)dso, (uintptr_t)s);
	return s;
}

int dsi_report_sym_text(const struct entry *e, char *buf, size_t n)
{
	if (e->sym) {   /* snprintf's "[%c] %s" by hand: printf's parsing was a share of printing (docs/performance.md) */
		size_t len = strlen(e->sym), k;

		if (n < 5) {   /* no room for the prefix and a NUL: callers give 1024 */
			if (n)
				buf[0] = '\0';
			return (int)(len + 4);
		}
		k = len < n - 5 ? len : n - 5;
		buf[0] = '[';
		buf[1] = e->level;
		buf[2] = ']';
		buf[3] = ' ';
		memcpy(buf + 4, e->sym, k);
		buf[4 + k] = '\0';
		return (int)(len + 4);
	}
	/* perf's "%#0*llx": for 0 the '#' adds no "0x" (C's rule), so 16 zeros */
	if (!e->addr)
		return snprintf(buf, n, "[%c] %016d", e->level, 0);
	return snprintf(buf, n, "[%c] 0x%016llx", e->level, (unsigned long long)e->addr);
}

/* A kernel module's short DSO name ("[virtio_blk]"); NULL for the kernel's own or an unknown one */
static const char *module_dso(const struct ds_report *r, const char *dso)
{
	const char *s = dsi_report_short_dso(r, dso);

	if (s[0] != '[' || !strcmp(s, "[kernel.kallsyms]") || !strcmp(s, "[kernel.vmlinux]") ||
	    !strcmp(s, "[unknown]") || !strncmp(s, "[guest.kernel", 13))
		return NULL;
	return s;
}

/*
 * The Symbol column's width for @e: perf sizes it by the symbol's own name,
 * so a --children entry of an inlined frame ("name (inlined)") counts
 * without its suffix, and may run past the column.  A module's symbol,
 * from kallsyms (dstack reads no .ko), counts as perf's does: its whole
 * line's rest, "name\t[module]", which perf cuts at the tab for printing
 * after taking its length.
 */
size_t dsi_report_sym_width(const struct ds_report *r, const struct entry *e, char *buf, size_t n)
{
	static const char suffix[] = " (inlined)";
	size_t len = (size_t)dsi_report_sym_text(e, buf, n), k = sizeof(suffix) - 1;
	const char *mod;

	if (e->sym && len < n && len >= k + 4 && !strcmp(buf + len - k, suffix))
		len -= k;
	if (e->sym && e->level == 'k' && (mod = module_dso(r, e->dso)))
		len += 1 + strlen(mod);
	return len;
}

static int sym_collapsed(const struct ds_report *r, const struct entry *a, const struct entry *b);

/* Branch key @key (SORT_DSO_FROM ...) of two entries' branches (report_branch.h) */
static int cmp_branch_key(const struct ds_report *r, int key, const struct entry *a, const struct entry *b)
{
	const struct branch_ends *ba, *bb;

	if (!r->brs)
		return 0;
	ba = &r->brs[a->br];
	bb = &r->brs[b->br];
	switch (key) {
	case SORT_DSO_FROM: return dsi_branch_dso__cmp(&ba->from, &bb->from);
	case SORT_DSO_TO: return dsi_branch_dso__cmp(&ba->to, &bb->to);
	case SORT_SYM_FROM: return dsi_branch_side__cmp(&ba->from, &bb->from);
	case SORT_SYM_TO: return dsi_branch_side__cmp(&ba->to, &bb->to);
	default: return (ba->cycles < bb->cycles) - (ba->cycles > bb->cycles);   /* perf's: more first */
	}
}

/* The keys perf compares alike as entries come, collapse and are output: comm, pid, srcline, trace, cpu, branch ends. */
static int cmp_plain_key(const struct ds_report *r, int key, const struct entry *a, const struct entry *b)
{
	if (key >= SORT_DSO_FROM)
		return cmp_branch_key(r, key, a, b);
	switch (key) {
	case SORT_COMM: return a->comm == b->comm ? 0 : strcmp(a->comm, b->comm);
	case SORT_PID: return (a->pid > b->pid) - (a->pid < b->pid);
	case SORT_SRCLINE: return strcmp(a->srcline ? a->srcline : "?", b->srcline ? b->srcline : "?");
	case SORT_TRACE: return strcmp(a->trace ? a->trace : "", b->trace ? b->trace : "");
	case SORT_CPU: return (a->cpu > b->cpu) - (a->cpu < b->cpu);
	default: return 0;
	}
}

/* perf's DSO key: by short name, entries of no map ("[unknown]") last */
static int dso_cmp(const struct entry *a, const struct entry *b)
{
	if (a->dso == b->dso)
		return 0;
	if (a->dso_unknown != b->dso_unknown)
		return a->dso_unknown - b->dso_unknown;
	return a->sdso == b->sdso ? 0 : strcmp(a->sdso, b->sdso);
}

/* Member @k's entry paired with @e in its group's section (link_group): @e itself for the leader, NULL if none. */
const struct entry *dsi_report_member_entry(const struct ds_report *r, const struct entry *e, int k)
{
	size_t i = (size_t)(e - r->ents);
	uint32_t p = k && i < r->nr_gcols ? r->gcols[i].pair[k] : 0;

	return !k ? e : p ? &r->ents[p - 1] : NULL;
}

/* Member @k's self period on @e, or (@acc) its cumulative one, in @e's group section. */
uint64_t dsi_report_member_period(const struct ds_report *r, const struct entry *e, int k, bool acc)
{
	const struct entry *m = dsi_report_member_entry(r, e, k);

	return !m ? 0 : acc ? m->acc : m->self;
}

int dsi_report_cmp_entry(const void *pa, const void *pb, void *ctx)
{
	const struct entry *a = *(const struct entry *const *)pa, *b = *(const struct entry *const *)pb;
	const struct ds_report *r = ctx;

	if (a->acc != b->acc)
		return a->acc > b->acc ? -1 : 1;
	/* perf's tie of equal Children in one thread, with a call graph: the caller first (the deeper chain, caller order) */
	if (r->children && r->graph && a->pid == b->pid && a->depth != b->depth)
		return (a->depth > b->depth) == r->caller ? -1 : 1;
	/* perf's sort keys: overhead_children, latency_children, overhead, latency, then the columns */
	if (r->latency && r->children && a->lat_acc != b->lat_acc)
		return a->lat_acc > b->lat_acc ? -1 : 1;
	if (a->self != b->self)
		return a->self > b->self ? -1 : 1;
	if ((r->latency || r->branch_latency) && a->lat_self != b->lat_self)
		return a->lat_self > b->lat_self ? -1 : 1;
	/* a group's members, in order, after its leader */
	for (int k = 1; dsi_report_in_group(r, a->evsel) && k < r->group_size[a->evsel->idx]; k++) {
		uint64_t pa_k = dsi_report_member_period(r, a, k, false), pb_k = dsi_report_member_period(r, b, k, false);

		if (pa_k != pb_k)
			return pa_k > pb_k ? -1 : 1;
	}
	for (int i = 0; i < r->nr_sort; i++) {
		int c = 0;

		switch (r->sort[i]) {
		case SORT_DSO:
			c = dso_cmp(a, b);
			break;
		case SORT_SYM:
			if (!a->sym != !b->sym)
				c = a->sym ? -1 : 1;
			else
				/*
				 * in perf's tree two addresses are equal: the collapsed
				 * order tells them apart, by perf's signed difference (a
				 * kernel address before a user one)
				 */
				c = a->sym ? strcmp(a->sym, b->sym) : r->in_tree || a->addr == b->addr ? 0 :
				    (int64_t)(a->addr - b->addr) < 0 ? -1 : 1;
			break;
		default:
			c = cmp_plain_key(r, r->sort[i], a, b);
			break;
		}
		if (c)
			return c;
	}
	/*
	 * perf's IPC column is a sort key too, last, where the --sort text says
	 * "symbol" (ipc_null, ipc_lbr): it compares the symbol as perf's trees
	 * do, so entries without one tie no more but go by address
	 */
	if (r->ipc_columns) {
		int c = sym_collapsed(r, a, b);

		if (c)
			return c;
	}
	/*
	 * Equal by every key shown (one symbol name in two DSOs when dso is no
	 * key): perf's output tree keeps them in its collapsed order.
	 */
	return r->in_tree ? 0 : dsi_report_cmp_collapsed(pa, pb, ctx);
}

/* Two entries' symbol names as perf's (an inlined one's without " (inlined)"), as strcmp. */
static int sym_name_cmp(const struct entry *a, const struct entry *b)
{
	static const size_t suffix = sizeof(" (inlined)") - 1;
	size_t la = strlen(a->sym) - (a->inlined ? suffix : 0), lb = strlen(b->sym) - (b->inlined ? suffix : 0);
	int c = memcmp(a->sym, b->sym, la < lb ? la : lb);

	return c ? c : (la > lb) - (la < lb);
}

/*
 * perf's symbol key as its trees compare it (sort__sym_cmp): two unknown
 * symbols by address alone, others by DSO first, then by start and end
 * (inlined functions by name).  < 0: @a left of @b.
 */
static int sym_collapsed(const struct ds_report *r, const struct entry *a, const struct entry *b)
{
	int c;

	/* two unknown symbols: their addresses alone, not their DSOs */
	if (!a->sym && !b->sym)
		return a->start == b->start ? 0 : (int64_t)(a->start - b->start) < 0 ? -1 : 1;
	if ((c = dso_cmp(a, b)))
		return c;
	if (!a->sym != !b->sym)
		return a->sym ? -1 : 1;
	if ((a->inlined || b->inlined) && (c = sym_name_cmp(b, a)))
		return c;   /* perf's: by name where either is inlined, the other way round (a new one left of a greater name) */
	if ((a->inlined || b->inlined) && a->start <= b->end && a->end >= b->start)
		return 0;   /* perf's: one name in functions that overlap (or touch) is one (no order) */
	if (a->start != b->start)   /* perf's difference, signed */
		return (int64_t)(a->start - b->start) < 0 ? -1 : 1;
	if (a->end != b->end)
		return (int64_t)(a->end - b->end) < 0 ? -1 : 1;
	return strcmp(a->sym, b->sym);
}

/*
 * perf's comparison of entries in its trees of entries as they come and
 * collapsed (a new one, @pa, goes left of @pb when < 0): comm, pid, dso
 * (none last), symbol by its start (none last, by address), source line.
 */
int dsi_report_cmp_collapsed(const void *pa, const void *pb, void *ctx)
{
	const struct entry *a = *(const struct entry *const *)pa, *b = *(const struct entry *const *)pb;
	const struct ds_report *r = ctx;

	for (int i = 0; i < r->nr_sort; i++) {
		int c = 0;

		switch (r->sort[i]) {
		case SORT_SYM:
			c = sym_collapsed(r, a, b);
			break;
		case SORT_DSO:
			c = dso_cmp(a, b);
			break;
		default:
			c = cmp_plain_key(r, r->sort[i], a, b);
			break;
		}
		if (c)
			return c;
	}
	/* perf's IPC key, last (cmp_entry) */
	return r->ipc_columns ? sym_collapsed(r, a, b) : 0;
}

/* @in's entries into a red-black tree as perf's go, one after the other; its root. */
static uint32_t rb_build(const struct ds_report *r, struct rbn *t, struct entry **in, size_t nr, entry_cmp cmp)
{
	uint32_t root = NONE;

	for (uint32_t z = 0; z < nr; z++)
		dsi_report_rb_insert(r, t, &root, in, z, cmp);
	return root;
}

/* The first node of the tree at @root in order (perf's rb_first), NONE if empty. */
uint32_t dsi_report_rb_first(const struct rbn *t, uint32_t root)
{
	uint32_t x = root;

	while (x != NONE && t[x].left != NONE)
		x = t[x].left;
	return x;
}

/* The node after @x in order (perf's rb_next), NONE after the last. */
uint32_t dsi_report_rb_next(const struct rbn *t, uint32_t x)
{
	uint32_t c;

	if (t[x].right != NONE)
		return dsi_report_rb_first(t, t[x].right);
	do {
		c = x;
		x = t[x].parent;
	} while (x != NONE && t[x].right == c);
	return x;
}

/* The entries of the tree at @root (node x: @in[x]) into @out, in order; their number. */
static size_t rb_read(const struct rbn *t, uint32_t root, struct entry **in, struct entry **out)
{
	size_t k = 0;

	for (uint32_t x = dsi_report_rb_first(t, root); x != NONE; x = dsi_report_rb_next(t, x))
		out[k++] = in[x];
	return k;
}

/* The unresolved nkey of a merged frame: @base's DSO at @ip (printed as the address). NONE on ENOMEM. */
static uint32_t nkey_addr(struct ds_report *r, uint32_t base, uint64_t ip)
{
	struct nkey key = { .dso = r->nkeys[base].dso, .ip = ip, .start = ip,
			    .dso_rank = r->nkeys[base].dso_rank };

	return dsi_report_intern_nkey(r, &key);
}

/*
 * perf's merge of @d's call graph into @e's as its collapse merges the
 * entries (callchain_merge): @d's nodes in the order of its trees (a node,
 * then its children in order), and each node where chains end appends its
 * chain with its hit from @e's root.  The merge copies a chain's maps but
 * not its symbols (merge_chain_branch), so the frames are addresses in
 * their DSOs: one matches a child made at its own address, else becomes a
 * child of its own, printed as the address.
 */
static int merge_graph(struct ds_report *r, struct entry *e, const struct entry *d)
{
	uint32_t *todo = NULL, *chain = NULL;
	size_t nr = 0, cap = 0, cap_chain = 0;
	int rc = 0;

	r->nodes[e->root].hit += r->nodes[d->root].hit;
	r->nodes[e->root].cumul += r->nodes[d->root].hit;
	for (uint32_t n = d->root;;) {
		size_t depth = 0, k = nr;

		for (uint32_t x = n; x != d->root; x = r->nodes[x].parent)
			depth++;
		if (n != d->root && r->nodes[n].hit) {
			uint32_t *v = dsi_grow(chain, &cap_chain, depth, sizeof(*v), 64), to = e->root;
			size_t i = depth;

			if (!v)
				goto oom;
			chain = v;
			for (uint32_t x = n; x != d->root; x = r->nodes[x].parent)
				chain[--i] = x;
			for (i = 0; i < depth; i++) {
				uint32_t key = nkey_addr(r, r->nodes[chain[i]].key, r->nodes[chain[i]].ip);

				if (key == NONE || (to = dsi_report_child_at(r, to, key, r->nodes[chain[i]].ip)) == NONE)
					goto oom;
				chain[i] = to;
			}
			dsi_report_credit(r, e->root, chain, depth, r->nodes[n].hit);
		}
		/* the children, last first: taken from the end, they come in order */
		for (uint32_t c = dsi_report_rb_first(r->nrb, r->nodes[n].kids_root); c != NONE; c = dsi_report_rb_next(r->nrb, c)) {
			uint32_t *v = dsi_grow(todo, &cap, nr + 1, sizeof(*v), 64);

			if (!v)
				goto oom;
			todo = v;
			todo[nr++] = c;
		}
		for (size_t i = k, j = nr; i + 1 < j; i++, j--) {
			uint32_t t = todo[i];

			todo[i] = todo[j - 1];
			todo[j - 1] = t;
		}
		if (!nr)
			break;
		n = todo[--nr];
	}
out:
	free(todo);
	free(chain);
	return rc;
oom:
	rc = -ENOMEM;
	goto out;
}

/* @d into @e, equal as perf's collapse finds them: its periods, and its call graph (merge_graph). */
static void merge_entry(struct ds_report *r, struct entry *e, struct entry *d)
{
	e->self += d->self;
	e->acc += d->acc;
	e->samples += d->samples;
	e->lat_self += d->lat_self;
	e->lat_acc += d->lat_acc;
	d->merged = true;
	if (r->graph && merge_graph(r, e, d))
		r->error = -ENOMEM;
}

/*
 * The node whose entry @cmp finds equal to @key, as perf's search of its
 * trees walks (hists__find_entry), NONE if the walk finds none: its
 * comparisons are no order, so it may miss one that is there.
 */
static uint32_t rb_find(const struct ds_report *r, const struct rbn *t, uint32_t root, struct entry **in,
			const struct entry *key, entry_cmp cmp)
{
	uint32_t p;
	bool left;

	return dsi_report_rb_descend(r, t, root, dsi_report_list_at, in, key, cmp, true, &p, &left);
}

/*
 * @list (an event's entries as they were made) into perf's collapsed tree:
 * its tree of entries as they come, read into a new one where a key has a
 * collapse of its own (comm, srcline).  @t gets the nodes, node x's entry
 * left in @list[x]; the root is returned.  @tmp: room for @nr.
 */
static uint32_t collapsed_tree(struct ds_report *r, struct rbn *t, struct entry **list, size_t nr, struct entry **tmp)
{
	uint32_t root = rb_build(r, t, list, nr, dsi_report_cmp_collapsed), p;
	bool left;

	if (!dsi_report_uses(r, SORT_COMM) && !dsi_report_uses(r, SORT_SRCLINE))
		return root;
	rb_read(t, root, list, tmp);
	memcpy(list, tmp, nr * sizeof(*tmp));
	if (!r->children && !r->sym_tree)
		return rb_build(r, t, list, nr, dsi_report_cmp_collapsed);
	/* --children, or sym_tree: an entry equal to one already in is merged into it (its duplicates, made as they came) */
	root = NONE;
	for (uint32_t z = 0; z < nr; z++) {
		uint32_t x = dsi_report_rb_descend(r, t, root, dsi_report_list_at, list, list[z], dsi_report_cmp_collapsed, true, &p, &left);

		if (x != NONE)
			merge_entry(r, list[x], list[z]);
		else
			dsi_report_rb_link(t, &root, z, p, left);
	}
	return root;
}

/*
 * @list in perf's order: its collapsed tree (from the entries as they were
 * made, unless @collapsed: @list is that tree's order already) read into
 * its output tree.  Its comparisons are no orders (addresses compared by
 * their difference, signed; depths only within a thread), so the trees
 * decide.
 */
int dsi_report_tree_order(struct ds_report *r, struct entry **list, size_t *nrp, bool collapsed)
{
	size_t nr = *nrp;
	struct rbn *t = malloc(nr * sizeof(*t));
	struct entry **tmp = malloc(nr * sizeof(*tmp));

	if (!t || !tmp) {
		free(t);
		free(tmp);
		return -ENOMEM;
	}
	if (collapsed)
		memcpy(tmp, list, nr * sizeof(*tmp));
	else
		*nrp = nr = rb_read(t, collapsed_tree(r, t, list, nr, tmp), list, tmp);
	r->in_tree = true;
	rb_read(t, rb_build(r, t, tmp, nr, dsi_report_cmp_entry), tmp, list);
	r->in_tree = false;
	free(t);
	free(tmp);
	return 0;
}

/* Room for @more entries (dummies) and their member pairs, without moving them once made.  0 or -ENOMEM. */
static int group_room(struct ds_report *r, size_t more)
{
	size_t need = r->nr_ents + more, old = r->nr_gcols;
	struct entry *e = dsi_grow(r->ents, &r->cap_ents, need ? need : 1, sizeof(*e), 1024);
	struct group_cols *g;

	if (!e)
		return -ENOMEM;
	r->ents = e;
	if (!(g = dsi_grow(r->gcols, &r->cap_gcols, need ? need : 1, sizeof(*g), 64)))
		return -ENOMEM;
	r->gcols = g;
	if (need > old) {
		memset(g + old, 0, (need - old) * sizeof(*g));
		r->nr_gcols = need;
	}
	return 0;
}

/* perf's dummy entry: a copy of member entry @m in the leader's section, with nothing of the leader's (no sums, no chain). */
static struct entry *add_dummy(struct ds_report *r, const struct entry *m, const struct ds_evsel *lead)
{
	struct entry *d = &r->ents[r->nr_ents++];   /* room made by group_room */

	*d = *m;
	d->evsel = lead;
	d->self = d->acc = d->samples = d->lat_self = d->lat_acc = 0;
	d->depth = 0;   /* perf's dummy has an empty chain; @m's root, shared, has no graph: members draw none */
	return d;
}

static void set_pair(struct ds_report *r, const struct entry *e, int k, const struct entry *m)
{
	r->gcols[e - r->ents].pair[k] = (uint32_t)(m - r->ents) + 1;
}

/* The entries of @evsel, as they were made, into @tree's collapsed tree (collapsed_tree). */
static void event_tree(struct ds_report *r, const struct ds_evsel *evsel, struct etree *tree, struct entry **tmp)
{
	tree->nr = 0;
	for (size_t i = 0; i < r->nr_ents; i++)
		if (r->ents[i].evsel == evsel)
			tree->e[tree->nr++] = &r->ents[i];
	tree->root = collapsed_tree(r, tree->t, tree->e, tree->nr, tmp);
}

/*
 * Member @k's tree @mt paired with the tree @lt of its leader @lead, as
 * perf's hists__match and hists__link: each of the leader's entries, in
 * order, looked for in the member's tree; then each member's entry that no
 * search found looked for in the leader's tree, and put there as a dummy
 * when missed.  @found: room for @mt->nr flags.
 */
static void pair_member(struct ds_report *r, const struct ds_evsel *lead, int k, struct etree *lt,
			const struct etree *mt, bool *found)
{
	memset(found, 0, mt->nr * sizeof(*found));
	for (uint32_t x = dsi_report_rb_first(lt->t, lt->root); x != NONE; x = dsi_report_rb_next(lt->t, x)) {
		uint32_t y = rb_find(r, mt->t, mt->root, mt->e, lt->e[x], dsi_report_cmp_collapsed);

		if (y != NONE) {
			set_pair(r, lt->e[x], k, mt->e[y]);
			found[y] = true;
		}
	}
	for (uint32_t y = dsi_report_rb_first(mt->t, mt->root); y != NONE; y = dsi_report_rb_next(mt->t, y)) {
		uint32_t x;

		if (found[y])
			continue;
		if ((x = rb_find(r, lt->t, lt->root, lt->e, mt->e[y], dsi_report_cmp_collapsed)) == NONE) {
			x = (uint32_t)lt->nr;
			lt->e[lt->nr++] = add_dummy(r, mt->e[y], lead);
			dsi_report_rb_insert(r, lt->t, &lt->root, lt->e, x, dsi_report_cmp_collapsed);
		}
		set_pair(r, lt->e[x], k, mt->e[y]);
	}
}

/*
 * perf's group view of the group @ev leads: the leader's collapsed tree
 * paired with each member's in turn (pair_member), so one thing shows
 * twice where perf's searches miss, as in perf's.  @list: room for the
 * leader's and members' entries; gets the leader's tree in order, dummies
 * in, their number in *@nr.  0 or -ENOMEM.
 */
int dsi_report_link_group(struct ds_report *r, size_t ev, struct entry **list, size_t *nr)
{
	const struct ds_evsel *lead = r->evsels[ev];
	size_t n = 0;
	int ret = -ENOMEM;

	for (size_t i = 0; i < r->nr_ents; i++)   /* the leader's and members' */
		n += dsi_report_in_group(r, r->ents[i].evsel) && r->group_leader[r->ents[i].evsel->idx] == lead->idx;
	if (group_room(r, n))
		return -ENOMEM;

	struct etree lt = { .t = malloc((n + 1) * sizeof(*lt.t)), .e = list };
	struct etree mt = { .t = malloc((n + 1) * sizeof(*mt.t)), .e = malloc((n + 1) * sizeof(*mt.e)) };
	struct entry **tmp = malloc((n + 1) * sizeof(*tmp));
	bool *found = malloc(n + 1);

	if (lt.t && mt.t && mt.e && tmp && found) {
		event_tree(r, lead, &lt, tmp);
		for (int k = 1; k < r->group_size[lead->idx]; k++) {
			event_tree(r, ds_reader__evsel(r->reader, (size_t)(lead->idx + k)), &mt, tmp);
			pair_member(r, lead, k, &lt, &mt, found);
		}
		rb_read(lt.t, lt.root, lt.e, tmp);
		memcpy(list, tmp, lt.nr * sizeof(*tmp));
		*nr = lt.nr;
		ret = 0;
	}
	free(lt.t);
	free(mt.t);
	free(mt.e);
	free(tmp);
	free(found);
	return ret;
}

