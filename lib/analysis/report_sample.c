// SPDX-License-Identifier: MIT
/*
 * A sample into the report (report_int.h): its keys, its entries and call-
 * graph paths, --children, the memos, the filters, the branch view's
 * branches.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/error.h"
#include "util/grow.h"
#include "analysis/report_int.h"

/* The flat profile's frame: the sample ip's own symbol, not a function inlined there. */
static size_t leaf_frame(const struct ds_profile_sample *s)
{
	size_t i = 0;

	while (i + 1 < s->nr_frames && s->frames[i].inlined && s->frames[i + 1].ip == s->frames[0].ip)
		i++;
	return i;
}

/* @text's copy if there is one (intern_text), else NULL. */
static const char *find_text(const struct ds_report *r, const char *text)
{
	uint32_t id = dsi_strset__find(&r->texts, text);

	return id == NONE ? NULL : dsi_strset__str(&r->texts, id);
}

/* @text's one copy; NULL on ENOMEM. */
static const char *intern_text(struct ds_report *r, const char *text)
{
	return dsi_strset__intern(&r->texts, text);
}

/*
 * perf's srcline of a frame (ds_cc_frame__srcline): "file:line" from
 * DWARF, else "sym+offset", else "dso[address]"; "??:0" for a frame in no
 * map (perf's map__srcline asks nothing then: a deferred cookie, an
 * address no mmap covers).  One copy per text.  NULL on ENOMEM.
 */
static const char *srcline_of(struct ds_report *r, const struct ds_cc_frame *f)
{
	char buf[1024];

	if (f->cookie || (!f->kernel && !f->map_end))
		return intern_text(r, "??:0");
	ds_cc_frame__srcline(f, 0, true, buf, sizeof(buf));
	return intern_text(r, buf);
}

/* perf's "trace" key: the sample's tracepoint text ("N/A" for another event's, as perf); NULL on ENOMEM. */
static const char *trace_of(struct ds_report *r, const struct ds_profile_sample *s)
{
	char buf[4096], *big;
	const char *text, *t;
	size_t n;

	if (s->evsel->attr.type != DS_PERF_TYPE_TRACEPOINT)
		return intern_text(r, "N/A");
	big = NULL;
	text = buf;
	if ((n = ds_profile__tracepoint_text(r->profile, s->ev, s->thread, buf, sizeof(buf))) >= sizeof(buf)) {
		if (!(big = malloc(n + 1)))   /* a long text (a big array): once more, whole */
			return NULL;
		ds_profile__tracepoint_text(r->profile, s->ev, s->thread, big, n + 1);
		text = big;
	}
	t = intern_text(r, text);
	free(big);
	return t;
}

static void key_of(struct ds_report *r, const struct ds_profile_sample *s, const struct ds_cc_frame *f, bool rel,
		   struct entry *key)
{
	*key = (struct entry){ .br = NONE, .evsel = s->evsel, .comm = dsi_report_keeps_comm(r) ? dsi_report_keep(r, s->comm) : NULL, .pid = s->tid,
			       .dso = dsi_report_keep(r, f->dso),
			       .sym = f->cookie ? NULL : dsi_report_keep(r, f->sym), .addr = f->ip, .level = f->kernel ? 'k' : '.' };
	key->sdso = dsi_report_short_dso(r, key->dso);
	key->dso_unknown = key->dso[0] == '[' && !strcmp(key->dso, "[unknown]");
	/* the flat profile names the symbol-table symbol, as perf's does (a
	 * clone "f.constprop.0" whose DWARF says "f" stays "f.constprop.0") */
	if (rel && !f->cookie && f->elf_sym)
		key->sym = dsi_report_keep(r, f->elf_sym);
	/* perf prints an address with no symbol inside its map (map__map_ip; a module's too, the kernel's is the identity) */
	if (!key->sym && rel && (!f->kernel || f->map_end) && !f->cookie)
		key->addr = f->addr;
	key->start = !key->sym ? key->addr : f->kernel ? f->ip - f->offset : f->addr - f->offset;
	/*
	 * perf's _hist_entry__sym_snprintf adds to a data object's name "+0x"
	 * he->ip - map__unmap_ip(map, sym->start), he->ip its first sample's:
	 * for the sample's own frame a map-relative address less an absolute
	 * one, wrapped; for a caller (--children) the callchain's absolute
	 * address, so the true offset
	 */
	key->object = key->sym && f->object && !f->kernel;
	key->obj_off = rel ? f->offset - (f->map_start - f->map_pgoff) : f->offset;
	key->end = key->start + (key->sym ? f->sym_size : 0);
	/* a failed copy (ENOMEM) leaves the entry without its line: printed "?" */
	if (dsi_report_uses(r, SORT_SRCLINE))
		key->srcline = srcline_of(r, f);
	if (dsi_report_uses(r, SORT_TRACE))
		key->trace = trace_of(r, s);
	key->cpu = (int32_t)s->cpu;
}

/*
 * The frame of the sample's ip, as perf's flat profile takes it (from the
 * sample, not its callchain): false if the sample has no ip.  Rare (a user
 * sample whose deferred chain never came), so resolved each time.
 */
static bool sample_ip_frame(const struct ds_profile_sample *s, struct ds_cc_frame *f)
{
	const struct ds_sample *smp = &s->ev->sample;
	struct ds_resolved res;
	size_t last;

	if (!(s->evsel->attr.sample_type & DS_SAMPLE_IP) || !s->machine)
		return false;
	ds_machine__resolve(s->machine, s->thread, smp->cpumode, smp->ip, &res);
	last = res.nr_frames ? res.nr_frames - 1 : 0;
	/* the out-of-line function's frame, its symbol's size with it (perf compares symbols by their ends) */
	*f = ds_resolved__frame(&res, last);
	f->elf_sym = res.frames[0].elf_name;
	return true;
}

/* perf's --children entry of an inlined frame reads "name (inlined)". */
static const char *inlined_name(struct ds_report *r, const char *sym)
{
	bool found;
	uint64_t *v = dsi_hashmap__upsert(&r->inlined_names, (uintptr_t)sym, 0, &found);
	char *n;

	if (!v)
		return NULL;
	if (found)
		return (const char *)(uintptr_t)*v;
	if (asprintf(&n, "%s (inlined)", sym) < 0) {
		dsi_hashmap__del(&r->inlined_names, (uintptr_t)sym, NULL);
		return NULL;
	}
	*v = (uintptr_t)n;
	return n;
}

/* perf's latency of a sample: its period over the tasks running with it, scaled by 1000. */
static uint64_t sample_latency(const struct ds_profile_sample *s)
{
	return s->period * 1000 / (s->parallelism ? s->parallelism : 1);
}

/* Is @evsel a leader or member of a group in perf's group view (setup_groups)? */
bool dsi_report_in_group(const struct ds_report *r, const struct ds_evsel *evsel)
{
	return r->groups && evsel->idx >= 0 && evsel->idx < 64 && r->group_leader[evsel->idx] >= 0;
}

static const struct ds_evsel *group_leader_of(const struct ds_report *r, const struct ds_evsel *evsel)
{
	return ds_reader__evsel(r->reader, (size_t)r->group_leader[evsel->idx]);
}

/*
 * Does a sample of @evsel go into the call graph?  Not a group member's:
 * its leader's section shows the leader's graphs only.
 */
static bool draws_graph(const struct ds_report *r, const struct ds_evsel *evsel)
{
	return r->graph && !(dsi_report_in_group(r, evsel) && r->group_slot[evsel->idx]);
}

/* With r->rec_on: entry @e credited along the path at @at (SIZE_MAX: none) kept for the sample's cmemo. */
static void rec_credit(struct ds_report *r, const struct entry *e, bool graph, size_t at)
{
	uint32_t *v;

	if (!r->rec_on || !r->rec_ok)
		return;
	/* a graph path that could not be remembered (no shape, too long): no cmemo */
	if ((graph && at == SIZE_MAX) || !(v = dsi_grow(r->rec, &r->cap_rec, r->nr_rec + 2, sizeof(*v), 64))) {
		r->rec_ok = false;
		return;
	}
	r->rec = v;
	v[r->nr_rec++] = (uint32_t)(e - r->ents);
	v[r->nr_rec++] = at == SIZE_MAX ? NONE : (uint32_t)at;
}

/* --children: the key of caller frame @i of @s (an inlined one's "name (inlined)"); false on ENOMEM. */
static bool caller_key(struct ds_report *r, const struct ds_profile_sample *s, size_t i, struct entry *key)
{
	key_of(r, s, &s->frames[i], false, key);
	key->inlined = s->frames[i].inlined && key->sym;
	return !key->inlined || (key->sym = inlined_name(r, key->sym));
}

static int add_children(struct ds_report *r, const struct ds_profile_sample *s, struct entry *self, bool own_kernel)
{
	long n = (long)s->nr_frames;
	bool graph = draws_graph(r, s->evsel);
	size_t at = SIZE_MAX;

	self->stamp = r->seq;
	self->acc += s->period;
	self->lat_acc += sample_latency(s);
	if (graph && (r->caller ? dsi_report_add_chain_at(r, self, s, n - 1, 0, &at) : dsi_report_add_chain_at(r, self, s, 0, n - 1, &at)))
		return -ENOMEM;
	rec_credit(r, self, graph, at);
	/*
	 * perf's level of a cumulative entry, set when the entry is made: '.'
	 * for a frame in a map (kernel ones too); a frame in none keeps the
	 * level before it in the walk (caller first by default), the sample's
	 * own at first ('k' for a kernel sample: @own_kernel, its own frame's,
	 * which a chain cut from its root by --max-stack does not hold).
	 */
	char level = n && own_kernel ? 'k' : '.';
	/*
	 * perf's max_depth of an entry's call chain: the frames of the chain
	 * from the entry's first place in the walk on (the whole chain for the
	 * sample's own entry); it orders entries of one thread with equal
	 * Children.  A deferred cookie counts, as in perf's (the order of
	 * tail.defer's and mixz.defer's ties says so).
	 */
	if (self->depth < (uint32_t)n)
		self->depth = (uint32_t)n;

	for (long j = 0; j < n; j++) {
		long i = r->caller ? n - 1 - j : j;
		uint32_t depth = (uint32_t)(n - j);
		struct entry key, *e;

		if (!caller_key(r, s, (size_t)i, &key))
			return -ENOMEM;
		if (strcmp(s->frames[i].dso, "[unknown]"))
			level = '.';
		key.level = level;
		/* perf's he_cache: a frame equal to one the sample added already (recursion) adds nothing */
		if (dsi_report_in_he_cache(r, &key))
			continue;
		e = dsi_report_find_entry_tree(r, &key);
		if (!e || !dsi_report_he_cache_add(r, e))
			return -ENOMEM;
		if (e->stamp == r->seq)
			continue;
		e->stamp = r->seq;
		e->acc += s->period;
		e->lat_acc += sample_latency(s);
		if (e->depth < depth)
			e->depth = depth;
		at = SIZE_MAX;
		if (graph && (r->caller ? dsi_report_add_chain_at(r, e, s, i, 0, &at) : dsi_report_add_chain_at(r, e, s, i, n - 1, &at)))
			return -ENOMEM;
		rec_credit(r, e, graph, at);
	}
	return 0;
}

/* The pid only counts when entries are told apart by it. */
static int32_t memo_pid(const struct ds_report *r, const struct ds_profile_sample *s)
{
	return dsi_report_uses(r, SORT_PID) ? s->tid : -1;
}

/* The comm a memo is for: none when no entry keeps one (keeps_comm). */
static const char *memo_comm(const struct ds_report *r, const struct ds_profile_sample *s)
{
	return dsi_report_keeps_comm(r) ? s->comm : NULL;
}

static uint64_t memo_hash(const struct ds_report *r, const struct ds_profile_sample *s)
{
	return dsi_hash64(s->shape_id * 0x9e3779b97f4a7c15ULL ^ (uintptr_t)s->evsel * 0xc2b2ae3d27d4eb4fULL ^
			 ((uintptr_t)memo_comm(r, s) ^ (uint64_t)(uint32_t)memo_pid(r, s) << 48) * 0x165667b19e3779f9ULL ^
			 s->ip_only);
}

static bool memo_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct ds_report *r = ctx;
	const struct memo *m = &r->memo[id];
	const struct ds_profile_sample *s = key;

	return m->shape_id == s->shape_id && m->evsel == s->evsel && m->comm == memo_comm(r, s) && m->pid == memo_pid(r, s) &&
	       m->cc == !s->ip_only;
}

/*
 * Without --children a sample adds to one entry and one path, both fixed
 * by its chain's shape, event, comm and (when sorted by it) pid: a repeat
 * of those finds them here.
 */
static struct memo *memo_find(struct ds_report *r, const struct ds_profile_sample *s)
{
	uint32_t id = dsi_idmap__find(&r->memo_ids, memo_hash(r, s), memo_eq, r, s);

	return id == NONE ? NULL : &r->memo[id];
}

static void memo_add(struct ds_report *r, const struct ds_profile_sample *s, const struct entry *e, size_t path)
{
	struct memo *m = dsi_grow(r->memo, &r->cap_memo, r->nr_memo + 1, sizeof(*m), 1024);
	uint64_t k = memo_hash(r, s);

	if (!m || r->nr_memo >= NONE - 1)
		return;   /* no memo: the next repeat takes the long way, same result */
	r->memo = m;
	if (dsi_idmap__add(&r->memo_ids, k, (uint32_t)r->nr_memo) < 0)
		return;
	r->memo[r->nr_memo++] = (struct memo){ .shape_id = s->shape_id, .evsel = s->evsel, .comm = memo_comm(r, s),
					       .pid = memo_pid(r, s), .cc = !s->ip_only, .ent = (uint32_t)(e - r->ents),
					       .path = path };
}

/* The index of @evsel among r->evsels, added when new; SIZE_MAX for an index no reader gives (EVENTS_MAX). */
size_t dsi_report_event_index(struct ds_report *r, const struct ds_evsel *evsel)
{
	size_t ev;

	if (evsel->idx < 0 || evsel->idx >= EVENTS_MAX)
		return SIZE_MAX;
	if (r->ev_slot[evsel->idx])
		return r->ev_slot[evsel->idx] - 1u;
	if (r->nr_evsels == EVENTS_MAX)
		return SIZE_MAX;
	ev = r->nr_evsels++;
	r->ev_names[ev] = dsi_report_keep(r, evsel->name);
	r->evsels[ev] = evsel;
	r->ev_slot[evsel->idx] = (uint16_t)(ev + 1);
	return ev;
}

/*
 * A sample whose chain's shape was seen before, counted from the memo of
 * its entry and graph path; false when it has none (@cc: the sample has a
 * callchain).  Not with --children (a callchain's every caller is an
 * entry), nor with srcline keys (a shape hides the addresses that tell
 * source lines apart).
 */
/*
 * The chain does not start at the sample's ip: a kernel sample of an
 * event that leaves the kernel out of its chains (--user-callchains).
 * perf's entry is the ip's, so one shape may go to several entries.
 */
static bool chain_misses_ip(const struct ds_profile_sample *s)
{
	return s->nr_frames && s->frames[0].ip != s->ev->sample.ip && !s->frames[0].cookie;
}

static bool count_from_memo(struct ds_report *r, const struct ds_profile_sample *s, bool cc)
{
	struct memo *m;
	struct entry *e;

	if (r->children || r->sym_tree || !s->shape_id || dsi_report_uses(r, SORT_SRCLINE) || dsi_report_uses(r, SORT_TRACE) ||
	    dsi_report_uses(r, SORT_CPU) || chain_misses_ip(s))
		return false;
	m = memo_find(r, s);
	if (!m)
		return false;
	e = &r->ents[m->ent];
	e->self += s->period;
	e->samples++;
	e->acc += s->period;
	e->lat_self += sample_latency(s);
	e->lat_acc += sample_latency(s);
	if (m->path != SIZE_MAX && dsi_report_path_add(r, m->path, s))
		r->error = -ENOMEM;
	return true;
}

/*
 * --children: a sample whose every entry and path is that of an earlier
 * one of its key (its shape, event, comm, pid sorted by it).  A shape
 * fixes every frame's names, and the addresses of those without a symbol;
 * what it leaves free that entries compare (each symbol's start and end:
 * two local functions of one name) is checked frame by frame.  Made with
 * the hash map, the entries a sample finds stay what its keys find; made
 * in perf's tree of entries, they are what its searches find as long as
 * the tree stays as it was (r->ent_epoch).  Not with the keys whose values
 * a shape does not fix (srcline, trace, cpu).
 */
static bool cmemo_wanted(const struct ds_report *r, const struct ds_profile_sample *s, bool cc)
{
	return r->children && cc && s->shape_id && s->nr_frames && s->nr_frames < NONE && !dsi_report_uses(r, SORT_SRCLINE) &&
	       !dsi_report_uses(r, SORT_TRACE) && !dsi_report_uses(r, SORT_CPU) && !chain_misses_ip(s) && !s->frames[leaf_frame(s)].cookie;
}

/* Frame @f's symbol span as the entries compare it (key_of's start and end). */
static void frame_span(const struct ds_cc_frame *f, uint64_t *span)
{
	span[0] = f->kernel ? f->ip - f->offset : f->addr - f->offset;
	span[1] = span[0] + f->sym_size;
}

static bool cmemo_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct ds_report *r = ctx;
	const struct cmemo *m = &r->cmemo[id];
	const struct ds_profile_sample *s = key;

	return m->shape_id == s->shape_id && m->evsel == s->evsel && m->comm == memo_comm(r, s) &&
	       m->pid == memo_pid(r, s);
}

/* Was a node on the way from the root to entry @x moved since @epoch? */
static bool etree_way_moved(const struct ds_report *r, uint32_t x, uint32_t epoch)
{
	for (; x != NONE; x = r->etree[x].parent)
		if (r->ent_moved[x] > epoch)
			return true;
	return false;
}

/* Is @want what perf's search of the tree finds for @key: without a search while its way did not move since @epoch? */
static bool still_finds(struct ds_report *r, const struct entry *key, uint32_t want, uint32_t epoch)
{
	return !etree_way_moved(r, want, epoch) || dsi_report_search_entry_tree(r, key) == want;
}

/* Was a node on the way to one of the @n entries @found moved since @epoch? */
static bool ways_moved(const struct ds_report *r, const uint32_t *found, uint32_t n, uint32_t epoch)
{
	for (uint32_t k = 0; k < n; k++)
		if (etree_way_moved(r, found[k], epoch))
			return true;
	return false;
}

/*
 * Do the searches count_sample makes for @s find what @m's found (the @n
 * entries @found)?  Its steps taken again: the frames the he_cache skips
 * told by the entries found before them, a search made again where its
 * way moved.  The he_cache is left as the memo's.
 */
static bool searches_find_again(struct ds_report *r, const struct cmemo *m, const struct ds_profile_sample *s,
				const uint32_t *found, uint32_t n)
{
	long nr = (long)s->nr_frames;
	uint32_t k = 1, *v;
	struct entry key;

	if (!n || !(v = dsi_grow(r->he_cache, &r->cap_he_cache, n, sizeof(*v), 64)))
		return false;
	r->he_cache = v;
	memcpy(r->he_cache, found, n * sizeof(*found));
	key_of(r, s, &s->frames[m->leaf], true, &key);
	if (!still_finds(r, &key, found[0], m->epoch))
		return false;
	for (long j = 0; j < nr; j++) {
		long i = r->caller ? nr - 1 - j : j;

		r->nr_he_cache = k;
		if (!caller_key(r, s, (size_t)i, &key))
			return false;
		if (dsi_report_in_he_cache(r, &key))
			continue;
		if (k == n || !still_finds(r, &key, found[k], m->epoch))
			return false;
		k++;
	}
	return k == n;
}

/*
 * Does perf's search of the tree still find what @m's searches found, for
 * @s (whose frames are those @m was made of: cmemo_valid)?  A search takes
 * the way from the root to what it finds, so it does while no rotation
 * moved a node on that way (a new leaf is on no such way).  Where one
 * moved, the sample's searches are made again: all found as before, its
 * count takes the same steps, so its memo holds.
 */
static bool cmemo_tree_holds(struct ds_report *r, struct cmemo *m, const struct ds_profile_sample *s)
{
	const uint32_t *found = r->citems + m->items + 2 * (size_t)m->nr_items;

	if (m->epoch == r->ent_epoch)
		return true;
	if (m->epoch < r->tree_epoch)
		return false;   /* made with the hash map, before the tree */
	if (ways_moved(r, found, m->nr_found, m->epoch) && !searches_find_again(r, m, s, found, m->nr_found))
		return false;
	m->epoch = r->ent_epoch;
	return true;
}

/* Does @m hold what @s adds to (its frames' spans, its own frame, the tree's searches)? */
static bool cmemo_valid(struct ds_report *r, struct cmemo *m, const struct ds_profile_sample *s)
{
	const uint64_t *sp = r->cspans + m->spans;
	uint64_t span[2];

	if (!s->chain_id || s->chain_id != m->chain_id) {
		if (m->nr_frames != s->nr_frames || m->leaf != leaf_frame(s))
			return false;
		for (size_t i = 0; i < s->nr_frames; i++) {
			frame_span(&s->frames[i], span);
			if (span[0] != sp[2 * i] || span[1] != sp[2 * i + 1])
				return false;
		}
		m->chain_id = s->chain_id;
	}
	/* (the frames first: the searches made again take them) */
	return !r->etree_on || cmemo_tree_holds(r, m, s);
}

/*
 * The run's sums into its cmemo's entries and paths, as its samples would
 * have added them one by one: nothing else counted meanwhile, so no node
 * was made and no path changed (see children_from_memo).
 */
void dsi_report_flush_run(struct ds_report *r)
{
	const struct cmemo *m;
	const uint32_t *it;

	if (!r->run)
		return;
	m = &r->cmemo[r->run - 1];
	it = r->citems + m->items;
	for (uint32_t k = 0; k < m->nr_items; k++) {
		struct entry *e = &r->ents[it[2 * k]];

		e->acc += r->run_period;
		e->lat_acc += r->run_lat;
		if (it[2 * k + 1] != NONE)
			dsi_report_path_add_pending(r, it[2 * k + 1], r->run_period);
	}
	r->run = 0;
}

/*
 * @s counted from its cmemo, as count_sample would count it; false when it
 * has none that holds.
 *
 * A run: a sample from the cmemo of the one before with the same chain
 * (its chain id), where counting that one made no node, adds to each of
 * its paths as a pending sum alone.  A path of no mixed node was checked
 * at the mix epoch of the sample before, which no walk since moved; one
 * through a mixed node took its known way with these addresses, or
 * walked with them and kept its comparisons, and no child came since
 * (dsi_report_path_add).  So its sums are kept once for the run, put
 * into the entries and paths before anything else counts (flush_run).
 */
static bool children_from_memo(struct ds_report *r, const struct ds_profile_sample *s, bool cc)
{
	uint64_t lat = sample_latency(s);
	struct cmemo *m;
	const uint32_t *it;
	struct entry *e;
	uint32_t id;
	size_t nodes;

	if (!cmemo_wanted(r, s, cc) || (id = dsi_idmap__find(&r->cmemo_ids, memo_hash(r, s), cmemo_eq, r, s)) == NONE)
		return false;
	m = &r->cmemo[id];
	if (!cmemo_valid(r, m, s))
		return false;
	e = &r->ents[m->own];
	e->self += s->period;
	e->samples++;
	e->lat_self += lat;
	if (r->last_hit == id + 1 && s->chain_id && s->chain_id == r->last_chain) {
		if (r->run != id + 1) {
			r->run = id + 1;
			r->run_period = r->run_lat = 0;
		}
		r->run_period += s->period;
		r->run_lat += lat;
		return true;
	}
	dsi_report_flush_run(r);
	nodes = r->nr_nodes;
	it = r->citems + m->items;
	for (uint32_t k = 0; k < m->nr_items; k++) {
		e = &r->ents[it[2 * k]];
		e->acc += s->period;
		e->lat_acc += lat;
		if (it[2 * k + 1] != NONE && dsi_report_path_add(r, it[2 * k + 1], s))
			r->error = -ENOMEM;
	}
	/* (a sample that made nodes starts no run: a path walked before them may walk again) */
	r->last_hit = r->nr_nodes == nodes && !r->error ? id + 1 : 0;
	r->last_chain = s->chain_id;
	return true;
}

/*
 * What count_sample recorded for @s (r->rec, and the entries found: its
 * he_cache) kept as its key's cmemo (a new one, or the old one's place),
 * as of ent_epoch @epoch (before it counted).
 */
static void cmemo_store(struct ds_report *r, const struct ds_profile_sample *s, uint32_t epoch)
{
	uint32_t n = (uint32_t)(r->nr_rec / 2), id, nf = r->etree_on ? (uint32_t)r->nr_he_cache : 0;
	uint64_t k = memo_hash(r, s);
	struct cmemo *m;

	if (!n || r->nr_he_cache > NONE / 4)
		return;
	id = dsi_idmap__find(&r->cmemo_ids, k, cmemo_eq, r, s);
	if (id == NONE) {
		uint64_t *sp = dsi_grow(r->cspans, &r->cap_cspans, r->nr_cspans + 2 * s->nr_frames, sizeof(*sp), 1024);

		if (!sp)
			return;
		r->cspans = sp;
		if (!(m = dsi_grow(r->cmemo, &r->cap_cmemo, r->nr_cmemo + 1, sizeof(*m), 256)) || r->nr_cmemo >= NONE - 1)
			return;
		r->cmemo = m;
		if (dsi_idmap__add(&r->cmemo_ids, k, (uint32_t)r->nr_cmemo) < 0)
			return;
		id = (uint32_t)r->nr_cmemo++;
		r->cmemo[id] = (struct cmemo){ .shape_id = s->shape_id, .evsel = s->evsel, .comm = memo_comm(r, s),
					       .pid = memo_pid(r, s), .nr_frames = (uint32_t)s->nr_frames,
					       .spans = r->nr_cspans };
		r->nr_cspans += 2 * s->nr_frames;
	}
	m = &r->cmemo[id];
	if (2 * n + nf > m->cap_words) {
		uint32_t *v = dsi_grow(r->citems, &r->cap_citems, r->nr_citems + 2 * (size_t)n + nf, sizeof(*v), 1024);

		m->nr_items = 0;   /* (a memo without items is never used: no own entry) */
		if (!v)
			return;
		r->citems = v;
		m->items = r->nr_citems;
		m->cap_words = 2 * n + nf;
		r->nr_citems += 2 * (size_t)n + nf;
	}
	memcpy(r->citems + m->items, r->rec, 2 * (size_t)n * sizeof(*r->rec));
	memcpy(r->citems + m->items + 2 * (size_t)n, r->he_cache, nf * sizeof(*r->he_cache));
	m->nr_items = n;
	m->nr_found = nf;
	m->own = r->rec[0];
	m->leaf = (uint32_t)leaf_frame(s);
	m->epoch = epoch;
	m->chain_id = s->chain_id;
	for (size_t i = 0; i < s->nr_frames; i++)
		frame_span(&s->frames[i], r->cspans + m->spans + 2 * i);
}

/*
 * The frame of the sample's own address (perf's al): its chain's leaf, but
 * where the chain does not start there (a bare cookie; a kernel sample of
 * an event that leaves the kernel out of its chains, --user-callchains)
 * the ip resolved into *@at_ip.  @s has frames.
 */
static const struct ds_cc_frame *own_frame(const struct ds_profile_sample *s, struct ds_cc_frame *at_ip)
{
	const struct ds_cc_frame *leaf = &s->frames[leaf_frame(s)];

	return (leaf->cookie || chain_misses_ip(s)) && sample_ip_frame(s, at_ip) ? at_ip : leaf;
}

/*
 * A sample counted in its entry (its own address's, as perf), its callers'
 * entries (--children) or its graph path, then memoized by shape.  0 or
 * -ENOMEM.
 */
static int count_sample(struct ds_report *r, const struct ds_profile_sample *s, bool cc)
{
	struct ds_cc_frame at_ip;
	const struct ds_cc_frame *own = own_frame(s, &at_ip);
	struct entry key, *e;
	size_t path = SIZE_MAX;
	bool graph = draws_graph(r, s->evsel);

	key_of(r, s, own, true, &key);
	if (!(e = r->children || r->sym_tree ? dsi_report_find_entry_tree(r, &key) : dsi_report_find_entry(r, &key)))
		return -ENOMEM;
	e->self += s->period;
	e->samples++;
	e->lat_self += sample_latency(s);
	r->nr_he_cache = 0;
	if (r->children && cc)
		return dsi_report_he_cache_add(r, e) ? add_children(r, s, e, own->kernel) : -ENOMEM;
	e->acc += s->period;
	e->lat_acc += sample_latency(s);
	if (graph && cc && (r->caller ? dsi_report_add_chain_at(r, e, s, (long)s->nr_frames - 1, 0, &path)
				 : dsi_report_add_chain_at(r, e, s, 0, (long)s->nr_frames - 1, &path)))
		return -ENOMEM;
	/* a graph path that could not be remembered: no memo, every sample walks it */
	if (s->shape_id && (!graph || !cc || path != SIZE_MAX) && !chain_misses_ip(s))
		memo_add(r, s, e, path);
	return 0;
}

static bool in_names(const struct name_list *l, const char *name)
{
	for (size_t i = 0; name && i < l->n; i++)
		if (!strcmp(l->v[i], name))
			return true;
	return false;
}

/* Does the sample's own address (perf's al) have a symbol? */
static bool own_frame_resolved(const struct ds_profile_sample *s)
{
	struct ds_cc_frame at_ip;
	const struct ds_cc_frame *f = own_frame(s, &at_ip);

	return f->sym && !f->cookie;
}

/* --dsos, -S: does the sample's own address (perf's al) lie in one of the DSOs and symbols named? */
static bool own_frame_wanted(const struct ds_report *r, const struct ds_profile_sample *s)
{
	const struct ds_cc_frame *f;
	struct ds_cc_frame at_ip;

	if (!r->dsos.n && !r->syms.n)
		return true;
	if (!s->nr_frames)
		return false;
	f = own_frame(s, &at_ip);
	if (r->dsos.n && (!strcmp(f->dso, "[unknown]") ||
			  !(in_names(&r->dsos, dsi_report_short_dso(r, f->dso)) || in_names(&r->dsos, f->dso))))
		return false;
	return !r->syms.n || (!f->cookie && in_names(&r->syms, f->elf_sym ? f->elf_sym : f->sym));
}

/*
 * -U as perf: a sample whose own address has no symbol is dropped before
 * it counts anywhere; in the others, callchain frames without a symbol are
 * left out (perf appends none for them).  @s, or its copy in @t with
 * those frames gone (no shape: its memo is not @s's); NULL to drop it,
 * or when out of memory (r->error set).
 */
static const struct ds_profile_sample *unresolved_hidden(struct ds_report *r, const struct ds_profile_sample *s,
							 struct ds_profile_sample *t)
{
	size_t n = 0;

	if (!r->hide_unresolved || s->filtered)
		return s;
	if (!s->nr_frames || !own_frame_resolved(s))
		return NULL;
	struct ds_cc_frame *v = dsi_grow(r->resolved, &r->cap_resolved, s->nr_frames, sizeof(*v), 64);

	if (!v) {
		r->error = -ENOMEM;
		return NULL;
	}
	r->resolved = v;
	for (size_t i = 0; i < s->nr_frames; i++)
		if (s->frames[i].sym && !s->frames[i].cookie)
			v[n++] = s->frames[i];
	*t = *s;
	t->frames = v;
	t->nr_frames = n;
	t->shape_id = 0;
	t->frame_ids = NULL;
	t->chain_id = 0;
	return t;
}

/* What the entries, their call graphs and their indexes hold, in bytes (their arrays' capacities). */
static size_t report_held(const struct ds_report *r)
{
	size_t ids = r->ent_ids.cap + r->nkey_ids.cap + r->path_ids.cap + r->memo_ids.cap + r->cmemo_ids.cap;

	return r->cap_ents * sizeof(*r->ents) + r->cap_nodes * sizeof(*r->nodes) + r->cap_nrb * sizeof(*r->nrb) +
	       r->cap_nkeys * sizeof(*r->nkeys) + r->cap_paths * sizeof(*r->paths) + r->cap_memo * sizeof(*r->memo) +
	       r->cap_etree * sizeof(*r->etree) + r->cap_gcols * sizeof(*r->gcols) + r->cap_fkeys * sizeof(*r->fkeys) +
	       ids * sizeof(struct dsi_idmap_slot) + r->node_trie.cap * sizeof(struct dsi_trie_slot) +
	       r->cap_brs * sizeof(*r->brs) + dsi_strset__mem(&r->texts) + r->cap_cmemo * sizeof(*r->cmemo) +
	       r->cap_citems * sizeof(*r->citems) + r->cap_cspans * sizeof(*r->cspans) + r->cap_rec * sizeof(*r->rec) +
	       r->cap_ipdeps * sizeof(*r->ipdeps) + r->cap_ipcs * sizeof(*r->ipcs) + r->cap_moved * sizeof(*r->ent_moved);
}

/*
 * @s with its comm as the report keeps it: a task no record named is
 * ":TID", which the walk hands over in a buffer of its own
 * (transient_comms): its one copy here (made while the report has room),
 * in *@copy.  NULL when there is no copy: past the bound (max_held), or
 * ENOMEM (r->error).
 */
static const struct ds_profile_sample *kept_comm(struct ds_report *r, const struct ds_profile_sample *s,
						 struct ds_profile_sample *copy)
{
	const char *c;

	if (!dsi_report_keeps_comm(r) || !s->comm || s->comm[0] != ':')
		return s;
	if (!(c = r->full ? find_text(r, s->comm) : intern_text(r, s->comm))) {
		if (!r->full)
			r->error = -ENOMEM;
		return NULL;
	}
	*copy = *s;
	copy->comm = c;
	return copy;
}

/* Count @s into its entries, or past the bound (max_held) into the totals alone. */
static int count_kept(struct ds_report *r, const struct ds_profile_sample *s, bool cc)
{
	int ret;

	if (count_from_memo(r, s, cc))   /* (adds to what is there) */
		return 0;
	if (r->full) {
		r->unkept++;
		return 0;
	}
	if (children_from_memo(r, s, cc)) {
		ret = r->error;
	} else {
		uint32_t epoch = r->ent_epoch;

		dsi_report_flush_run(r);
		r->last_hit = 0;
		r->rec_on = cmemo_wanted(r, s, cc);
		r->rec_ok = true;
		r->nr_rec = 0;
		ret = count_sample(r, s, cc);
		/* (as of the tree before the sample: a rotation while it counted may have moved what it found) */
		if (r->rec_on && !ret && r->rec_ok)
			cmemo_store(r, s, epoch);
		r->rec_on = false;
	}
	if (!(r->seq & 255) && report_held(r) > r->max_held)
		r->full = true;
	return ret;
}

/* perf's level of a sample's cpumode, as its symbol column prints it */
static char cpumode_level(uint16_t cpumode)
{
	switch (cpumode) {
	case DS_MISC_KERNEL: return 'k';
	case DS_MISC_HYPERVISOR: return 'H';
	case DS_MISC_GUEST_KERNEL: return 'g';
	case DS_MISC_GUEST_USER: return 'u';
	default: return '.';
	}
}

/*
 * A branch's target as perf's branch view takes it for its sample view's
 * keys (iter_next_branch_entry): the map and symbol of the target @res as
 * dsi_branch_side__resolve found it (@mapped: in a map), and its address as
 * sampled, not map-relative.
 */
static struct ds_cc_frame branch_target(const struct ds_resolved *res, bool mapped)
{
	size_t last = res->nr_frames ? res->nr_frames - 1 : 0;
	struct ds_cc_frame f;

	if (!mapped)
		return (struct ds_cc_frame){ .ip = res->ip, .addr = res->ip, .dso = "[unknown]" };
	f = ds_resolved__frame(res, last);
	f.sym = res->frames[0].elf_name ? res->frames[0].elf_name : res->frames[last].name;   /* perf's: the symbol table's */
	return f;
}

/*
 * A sample's branches into the entries (branch_keys): each an entry of
 * weight 1 keyed by the sample's comm, thread and cpu and by its target;
 * the symbol column at the sample's level.  The sample counts once in its
 * event's "Samples", each branch once in its event count.
 */
static int count_branches(struct ds_report *r, const struct ds_profile_sample *s)
{
	const struct ds_sample *smp = &s->ev->sample;
	size_t ev = dsi_report_event_index(r, s->evsel);
	struct ds_profile_sample named;

	if (ev == SIZE_MAX || !smp->branch || !smp->branch_nr || !s->machine)
		return 0;
	dsi_report_flush_run(r);
	r->last_hit = 0;
	/* (NULL past the bound, or on ENOMEM: r->error) */
	const struct ds_profile_sample *k = kept_comm(r, s, &named);

	if (!k && r->error)
		return r->error;
	r->machine = s->machine;
	uint64_t latency = sample_latency(s);

	r->ev_passed[ev]++;
	r->ev_samples[ev]++;
	for (uint64_t i = 0; i < smp->branch_nr; i++) {
		/* perf_branch_entry: from, to, flags (cycles in bits 4 to 19) */
		const uint64_t *b = (const uint64_t *)smp->branch + 3 * i;
		struct ds_cc_frame f;
		struct entry key, *e;

		r->ev_passed_period[ev]++;
		r->ev_period[ev]++;
		r->seq++;
		if (r->full || !k) {
			r->unkept++;
			continue;
		}
		/* the ends into the slot past the kept ones: the entry's if it is new */
		struct branch_ends *brs = r->nr_brs < NONE ? dsi_grow(r->brs, &r->cap_brs, r->nr_brs + 1, sizeof(*brs), 256) : NULL;
		struct ds_resolved res;
		bool mapped;

		if (!brs)
			return r->error = -ENOMEM;
		r->brs = brs;
		dsi_branch_side__resolve(k, b[0], &brs[r->nr_brs].from, &res);
		mapped = dsi_branch_side__resolve(k, b[1], &brs[r->nr_brs].to, &res);
		brs[r->nr_brs].cycles = (uint16_t)(b[2] >> 4);
		f = branch_target(&res, mapped);
		key_of(r, k, &f, false, &key);
		key.level = cpumode_level(smp->cpumode);
		key.br = (uint32_t)r->nr_brs;
		if (!(e = r->sym_tree ? dsi_report_find_entry_tree(r, &key) : dsi_report_find_entry(r, &key)))
			return r->error = -ENOMEM;
		r->nr_brs += e->br == key.br;
		e->self++;
		e->acc++;
		e->samples++;
		e->lat_self += latency;
		if (!(r->seq & 255) && report_held(r) > r->max_held)
			r->full = true;
	}
	return 0;
}

int ds_report__add_sample(struct ds_report *r, const struct ds_profile_sample *s)
{
	struct ds_profile_sample copy, named;
	size_t ev;
	bool cc, shown;

	if (!r->reader || r->finished)
		return dsi_error(-EINVAL, "report: %s", r->finished ? "finished: no more samples" : "not attached to a profile");

	/* at the first sample: a pipe's GROUP_DESC comes as a record, before it */
	if (!r->groups_read) {
		r->groups_read = true;
		dsi_report_setup_groups(r);
	}
	if (r->branch_keys)
		return count_branches(r, s);
	if (!s->nr_frames && !s->filtered)
		return 0;
	/*
	 * perf sets up the cumulative profile before a pipe's events are
	 * known, so it has none there (the call graph keeps --children's
	 * caller order).
	 */
	if (!r->seq && r->children && r->reader && ds_reader__info(r->reader)->pipe)
		r->children = false;
	if ((ev = dsi_report_event_index(r, s->evsel)) == SIZE_MAX)
		return 0;
	if (dsi_report_in_group(r, s->evsel) && dsi_report_event_index(r, group_leader_of(r, s->evsel)) == SIZE_MAX)
		return 0;   /* the leader's section holds the member's column */
	if (!(s = unresolved_hidden(r, s, &copy)))
		return r->error;
	r->ev_passed[ev]++;
	r->ev_passed_period[ev] += s->period;
	/* perf has no call graph, nor a cumulative profile, without recorded callchains (hidden samples' count) */
	cc = s->evsel->attr.sample_type & DS_SAMPLE_CALLCHAIN;
	r->any_callchain |= cc;
	r->machine = s->machine;
	shown = !s->filtered && own_frame_wanted(r, s);
	/* a sample a filter hides counts in the totals as perf's do, but with --percentage relative */
	if (shown || !r->relative) {
		r->ev_samples[ev]++;
		r->ev_period[ev] += s->period;
		r->ev_latency[ev] += sample_latency(s);
	}
	if (!shown)
		return 0;
	r->seq++;
	cc = cc && !s->ip_only;   /* an empty chain: the entry alone, no graph under it */
	if (!(s = kept_comm(r, s, &named))) {
		r->unkept += !r->error;
		return r->error;
	}
	return count_kept(r, s, cc);
}

