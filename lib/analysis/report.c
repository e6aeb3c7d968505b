// SPDX-License-Identifier: MIT
/*
 * The report object (dstack/report.h): its options, its setup from the
 * recording (sort keys, the group view, the branch view), --stats, and the
 * entries read by programs.  The model is hist.c, callgraph.c,
 * report_sample.c and collapse.c; the printers report_print.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "dstack/event.h"
#include "dstack/features.h"
#include "dstack/log.h"
#include "dstack/session.h"
#include "profile/profile_int.h"
#include "util/error.h"
#include "analysis/report_int.h"

/*
 * perf's sort keys, in the order of its table: a key given is the first
 * whose name it begins (case aside), so "sym" is "symbol" and "s" too.
 */
static const struct { const char *name; int key; } sort_names[] = {
	{ "pid", SORT_PID }, { "comm", SORT_COMM }, { "dso", SORT_DSO }, { "symbol", SORT_SYM },
	{ "parent", -1 }, { "cpu", SORT_CPU }, { "socket", -1 }, { "srcline", SORT_SRCLINE }, { "srcfile", -1 },
	{ "local_weight", -1 }, { "weight", -1 }, { "transaction", -1 }, { "trace", SORT_TRACE },
	/* the branch view's (after all of perf's others: "dso" is dso, "dso_" dso_from) */
	{ "dso_from", SORT_DSO_FROM }, { "dso_to", SORT_DSO_TO }, { "symbol_from", SORT_SYM_FROM },
	{ "symbol_to", SORT_SYM_TO }, { "mispredict", -1 }, { "in_tx", -1 }, { "abort", -1 },
	{ "cycles", SORT_CYCLES }, { "srcline_from", -1 }, { "srcline_to", -1 }, { "ipc_lbr", -1 },
	{ "addr_from", -1 }, { "addr_to", -1 },
};

static int sort_key_of(const char *t)
{
	size_t n = strlen(t);

	for (size_t i = 0; n && i < sizeof(sort_names) / sizeof(*sort_names); i++)
		if (!strncasecmp(t, sort_names[i].name, n))
			return sort_names[i].key >= 0 ? sort_names[i].key : -2;
	return -1;
}

/* --sort @v's keys into @sort (SORT_MAX of them), their number in *@nr (ds_report__check_sort's returns). */
static int parse_sort(const char *v, int *sort, int *nr)
{
	char tmp[256], *save = NULL;

	snprintf(tmp, sizeof(tmp), "%s", v);
	*nr = 0;
	for (char *t = strtok_r(tmp, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		int k = sort_key_of(t);

		if (k == -2)
			return dsi_error(-ENOTSUP, "not supported: --sort %s (a perf sort key dstack does not have)", t);
		if (k < 0 || *nr == SORT_MAX)
			return dsi_error(-EINVAL, "unknown --sort key '%s' (pid, comm, dso, symbol, cpu, srcline, trace; "
					 "with branch stacks dso_from, dso_to, symbol_from, symbol_to, cycles)", t);
		sort[(*nr)++] = k;
	}
	return *nr ? 0 : -ENOENT;
}

int ds_report__check_sort(const char *sort)
{
	int keys[SORT_MAX], nr;

	return parse_sort(sort, keys, &nr);
}

/* One counter read delivered as a sample of its event (ds_profile__split_reads) */
static int stats_read(void *ctx, const struct ds_evsel *evsel, uint64_t period)
{
	struct ds_report *r = ctx;

	(void)period;
	if (evsel->idx >= 0 && evsel->idx < EVENTS_MAX)
		r->stat_samples[evsel->idx]++;
	return 0;
}

/*
 * --stats: every sample counts, filters or not (perf's count_sample_event),
 * and LOST_SAMPLES' counts.  A sample that reads counters (leader
 * sampling, -e '{a,b}:S') counts as perf delivers it: once for each
 * counter that grew, under that counter's event.
 */
int ds_report__add_event(struct ds_report *r, const struct ds_event *ev)
{
	if (!r->reader)
		return dsi_error(-EINVAL, "report: not attached to a profile");

	if (!ev->evsel || ev->evsel->idx < 0 || ev->evsel->idx >= EVENTS_MAX)
		return 0;
	if (ev->hdr->type == DS_REC_SAMPLE && (ev->evsel->attr.sample_type & DS_SAMPLE_READ))
		return ds_profile__split_reads(r->profile, ev, stats_read, r);
	if (ev->hdr->type == DS_REC_SAMPLE)
		r->stat_samples[ev->evsel->idx]++;
	else if (ev->hdr->type == DS_REC_LOST_SAMPLES)
		r->stat_lost[ev->evsel->idx] += ds_record__lost(ev->hdr);
	return 0;
}

/* perf's name of a record type: the kernel's, the user ones without "HEADER_" */
static const char *stat_type_name(uint32_t t)
{
	const char *name = ds_record_type__name(t);

	return name && !strncmp(name, "HEADER_", 7) ? name + 7 : name;
}

/*
 * --stats: perf report's event counts (perf_session__fprintf_nr_events,
 * then evlist__fprintf_nr_events): the records read by type, in type
 * order, with their share of all; then each event's samples.
 */
static void print_stats(struct ds_report *r, const struct ds_session_stats *st)
{
	struct dsi_wbuf *o = r->out;
	uint64_t total = 0, n[DS_REC_MAX];
	uint32_t compressed = ds_reader__compressed_type(r->reader);

	/* the compressed records count as read, besides the records they hold */
	for (uint32_t t = 0; t < DS_REC_MAX; t++)
		total += n[t] = st->records[t] + (t == compressed ? ds_reader__compressed_records(r->reader) : 0);
	dsi_wbuf__printf(o, "\nAggregated stats:\n%20s events: %10llu\n", "TOTAL", (unsigned long long)total);
	for (uint32_t t = 0; t < DS_REC_MAX; t++)
		if (n[t] && stat_type_name(t))
			dsi_wbuf__printf(o, "%20s events: %10llu  (%4.1f%%)\n", stat_type_name(t),
				      (unsigned long long)n[t], n[t] * 100.0 / total);
	for (size_t i = 0; i < ds_reader__nr_evsels(r->reader); i++) {
		const struct ds_evsel *e = ds_reader__evsel(r->reader, i);

		if (e->idx < 0 || e->idx >= EVENTS_MAX || (!r->stat_samples[e->idx] && !r->stat_lost[e->idx]))
			continue;
		dsi_wbuf__printf(o, "%s stats:\n", e->name);
		if (r->stat_samples[e->idx])
			dsi_wbuf__printf(o, "%20s events: %10llu\n", "SAMPLE", (unsigned long long)r->stat_samples[e->idx]);
		if (r->stat_lost[e->idx])
			dsi_wbuf__printf(o, "%20s events: %10llu\n", "LOST_SAMPLES", (unsigned long long)r->stat_lost[e->idx]);
	}
}

/* The report and everything it holds. */
void ds_report__delete(struct ds_report *r)
{
	uint64_t k, v;

	if (!r)
		return;

	free(r->brs);
	for (size_t i = 0; dsi_hashmap__next(&r->inlined_names, &i, &k, &v);)
		free((void *)(uintptr_t)v);
	dsi_hashmap__exit(&r->inlined_names);
	dsi_hashmap__exit(&r->short_dso_map);
	dsi_strset__exit(&r->texts);
	dsi_idmap__exit(&r->ent_ids);
	dsi_trie__exit(&r->node_trie);
	dsi_idmap__exit(&r->nkey_ids);
	dsi_idmap__exit(&r->path_ids);
	dsi_idmap__exit(&r->memo_ids);
	free(r->memo);
	dsi_idmap__exit(&r->cmemo_ids);
	free(r->cmemo);
	free(r->citems);
	free(r->cspans);
	free(r->rec);
	free(r->paths);
	free(r->ents);
	free(r->etree);
	free(r->ent_moved);
	free(r->wcmp);
	free(r->ipdeps);
	free(r->ipcs);
	free(r->ein_root);
	free(r->he_cache);
	free(r->nodes);
	free(r->nrb);
	free(r->nkeys);
	free(r->fkeys);
	free(r->gcols);
	free(r->resolved);
	free(r->order);
	free(r->sec_start);
	free(r->sec_ev);
	free(r);
}

/* One group of the file's GROUP_DESC into perf's group view, if it qualifies (setup_groups). */
static void add_group(void *ctx, const char *name, uint32_t leader, uint32_t members)
{
	struct ds_report *r = ctx;
	size_t nr_ev = ds_reader__nr_evsels(r->reader);

	if (members < 2 || members > GROUP_MAX || leader >= nr_ev || leader + members > nr_ev || leader + members > 64)
		return;
	for (uint32_t k = 0; k < members; k++) {
		r->group_leader[leader + k] = (int)leader;
		r->group_slot[leader + k] = (int)k;
	}
	r->group_size[leader] = (int)members;
	/* perf's evsel__group_name: "anon group" for the unnamed */
	snprintf(r->group_name[leader], sizeof(r->group_name[leader]), "%s",
		 strcmp(name, "{anon_group}") ? name : "anon group");
	r->groups = true;
}

/*
 * perf's group view, from the file's GROUP_DESC (name, leader, members:
 * consecutive events), with or without callchains: the leader's section
 * shows every member's columns, and the leader's call graphs.
 */
void dsi_report_setup_groups(struct ds_report *r)
{
	struct ds_feat_iter *it = ds_feat_iter__new(r->reader, DS_FEAT_GROUP_DESC);
	struct ds_feat_rec rec;
	int err;

	for (int i = 0; i < 64; i++)
		r->group_leader[i] = -1;
	if (!it) {
		if (errno != ENOENT)
			ds_warn("%s: header feature %s: %s\n", ds_reader__path(r->reader),
				ds_feature__name(DS_FEAT_GROUP_DESC), strerror(errno));
		return;
	}
	while ((err = ds_feat_iter__next(it, &rec)) > 0)
		add_group(r, rec.group.name, rec.group.leader, rec.group.nr_members);
	if (err < 0)
		ds_warn("%s: %s\n", ds_reader__path(r->reader), ds_errmsg());
	ds_feat_iter__delete(it);
}

/* Are the --sort keys given ones the branch view takes (the branch keys, and pid, comm, dso, symbol, cpu)? */
static bool branch_sort_keys(const struct ds_report *r)
{
	for (int i = 0; i < r->nr_sort; i++)
		if (r->sort[i] == SORT_SRCLINE || r->sort[i] == SORT_TRACE)
			return false;
	return true;
}

/* Does --sort name a key of the branch view alone (dso_from ... cycles)? */
static bool branch_key_given(const struct ds_report *r)
{
	for (int i = 0; i < r->nr_sort; i++)
		if (r->sort[i] >= SORT_DSO_FROM)
			return true;
	return false;
}

static void settle_sort_keys(struct ds_report *r);

/*
 * perf report's branch view: for a file with the BRANCH_STACK feature (a
 * pipe's features come after perf decides) and no event sampling user
 * stacks, unless --no-branch-stack.  Its entries are branches
 * (branch_keys, set here; count_branches), with perf's default keys
 * comm,dso_from,symbol_from,symbol_to,cycles or those --sort gives, and
 * the options that leave its entries as they are; with another it
 * reports the samples, and says so.  False when --sort names a branch key
 * and the view is not taken (perf knows no such key then).
 */
static bool branch_view_setup(struct ds_report *r)
{
	static const int defaults[] = { SORT_COMM, SORT_DSO_FROM, SORT_SYM_FROM, SORT_SYM_TO, SORT_CYCLES };
	bool wanted = !r->no_branch_stack && !r->stats && !ds_reader__info(r->reader)->pipe &&
		      ds_header_info__has_feature(ds_reader__info(r->reader), DS_FEAT_BRANCH_STACK);

	for (size_t i = 0; wanted && i < ds_reader__nr_evsels(r->reader); i++)
		if (ds_reader__evsel(r->reader, i)->attr.sample_type & DS_SAMPLE_STACK_USER)
			wanted = false;
	if (!wanted)
		return !branch_key_given(r);
	if ((r->sort_given && !branch_sort_keys(r)) || r->graph_given || r->show_samples || r->show_period ||
	    r->hide_unresolved || r->relative || r->dsos.n || r->syms.n || r->nr_comms ||
	    r->thread_filter || r->time_mode != DS_PROFILE_CPU) {
		r->sort_refused = true;   /* (ds_report__branch_view_refused: the caller says so) */
		return !branch_key_given(r);
	}
	r->branch_keys = true;
	r->branch_latency = r->latency;
	r->children = false;   /* perf has no cumulative view of branches */
	if (!r->sort_given) {
		memcpy(r->sort, defaults, sizeof(defaults));
		r->nr_sort = (int)(sizeof(defaults) / sizeof(*defaults));
		r->sort_mask = 0;
		settle_sort_keys(r);
	}
	return true;
}

/* Does an event of a recording (not a pipe: its events may come later) record callchains? */
static bool any_callchains(const struct ds_reader *rd)
{
	if (ds_reader__info(rd)->pipe)
		return true;
	for (size_t i = 0; i < ds_reader__nr_evsels(rd); i++)
		if (ds_reader__evsel(rd, i)->attr.sample_type & DS_SAMPLE_CALLCHAIN)
			return true;
	return false;
}

/*
 * perf's latency columns need context-switch records (an event with
 * context_switch), and show only where some sample ran beside others of
 * its process (latency_differs): measured with perf 7.2 on its own
 * recordings (--switch-events of a threaded command: shown, of a single
 * thread: not; -a --switch-events: shown in one of three recordings of one
 * workload, the one whose parallelism rose above 1).
 */
static bool has_switch_records(const struct ds_reader *rd)
{
	for (size_t i = 0; i < ds_reader__nr_evsels(rd); i++)
		if (DS_ATTR_FLAG(&ds_reader__evsel(rd, i)->attr, DS_ATTR_CONTEXT_SWITCH))
			return true;
	return false;
}

/* perf's default sort for a recording of tracepoints only: their text ("trace"). */
static bool all_tracepoints(const struct ds_reader *rd)
{
	size_t n = ds_reader__nr_evsels(rd);

	for (size_t i = 0; i < n; i++)
		if (ds_reader__evsel(rd, i)->attr.type != DS_PERF_TYPE_TRACEPOINT)
			return false;
	return n > 0;
}

/* Is @key's column left out?  perf leaves out the column of a single --comm, --dsos or -S value. */
static bool elided(const struct ds_report *r, int key)
{
	return (key == SORT_COMM && r->nr_comms == 1) || (key == SORT_DSO && r->dsos.n == 1) ||
	       (key == SORT_SYM && r->syms.n == 1);
}

/* The sort keys as shown (r->col: without the elided columns) and as a mask (all of them). */
static void settle_sort_keys(struct ds_report *r)
{
	int n = 0;

	for (int i = 0; i < r->nr_sort; i++)
		n += !elided(r, r->sort[i]);
	/* perf leaves a column out for a filter of one value, but never every column */
	r->nr_col = 0;
	for (int i = 0; i < r->nr_sort; i++)
		if (!n || !elided(r, r->sort[i]))
			r->col[r->nr_col++] = r->sort[i];
	for (int i = 0; i < r->nr_sort; i++)
		r->sort_mask |= 1u << r->sort[i];
	/* perf's IPC column is a key of the symbol too (sort__sym_cmp): entries are one only where it is */
	if (r->ipc_columns)
		r->sort_mask |= 1u << SORT_SYM;
	r->sym_tree = dsi_report_uses(r, SORT_SYM) && !dsi_report_uses(r, SORT_DSO);
}


/* The options of a NULL opts: perf report's defaults */
static const struct ds_report_opts default_opts = {
	.sz = sizeof(struct ds_report_opts),
	.children = true,
	.graph_min = -1,
};

#define DEFAULT_MEMORY ((size_t)1 << 30)

/* @o's fields into @r (a shorter opts of an older caller: the rest zero) */
static int take_opts(struct ds_report *r, const struct ds_report_opts *in)
{
	struct ds_report_opts o = { 0 };

	if (!in)
		in = &default_opts;
	if (in->sz < sizeof(size_t))
		return dsi_error(-EINVAL, "report: opts.sz %zu too small", in->sz);
	memcpy(&o, in, in->sz < sizeof(o) ? in->sz : sizeof(o));
	r->children = o.children;
	r->graph = !o.no_graph;
	r->graph_given = o.graph_given;
	r->caller = o.caller;
	r->graph_mode = o.graph_mode == DS_REPORT_FRACTAL ? GM_FRACTAL : o.graph_mode == DS_REPORT_FLAT ? GM_FLAT :
			o.graph_mode == DS_REPORT_FOLDED ? GM_FOLDED : GM_GRAPH;
	r->graph_period = o.graph_period;
	r->graph_min = o.graph_min;
	r->percent_limit = o.percent_limit;
	r->relative = o.relative;
	r->show_samples = o.show_samples;
	r->show_period = o.show_period;
	r->hide_unresolved = o.hide_unresolved;
	r->no_branch_stack = o.no_branch_stack;
	r->stats = o.stats;
	r->quiet = o.quiet;
	r->comms = o.comms;
	r->nr_comms = o.comms ? o.nr_comms : 0;
	r->thread_filter = o.thread_filter;
	r->time_mode = o.time_mode;
	r->time_str = o.time_str;
	r->dsos = (struct name_list){ o.dsos, o.dsos ? o.nr_dsos : 0 };
	r->syms = (struct name_list){ o.symbols, o.symbols ? o.nr_symbols : 0 };
	r->max_held = o.memory ? o.memory : DEFAULT_MEMORY;
	r->nr_sort = 3;
	r->sort[0] = SORT_COMM;
	r->sort[1] = SORT_DSO;
	r->sort[2] = SORT_SYM;
	if (o.sort) {
		int err = parse_sort(o.sort, r->sort, &r->nr_sort);

		if (err == -ENOENT)
			err = dsi_error(-EINVAL, "--sort '%s': no key", o.sort);
		if (err)
			return err;
		r->sort_given = true;
		/* perf's string tests on its sort order, not on the keys they name */
		r->sort_sym_first = !strncmp(o.sort, "sym", 3);
		r->ipc_columns = strstr(o.sort, "symbol") != NULL;
	}
	return 0;
}

struct ds_report *ds_report__new(const struct ds_report_opts *opts)
{
	struct ds_report *r = calloc(1, sizeof(*r));
	int err;

	if (!r) {
		errno = ENOMEM;
		return NULL;
	}
	if ((err = take_opts(r, opts))) {
		free(r);
		errno = -err;
		return NULL;
	}
	settle_sort_keys(r);
	r->short_dsos = &r->short_dso_map;
	return r;
}

int ds_report__attach(struct ds_report *r, struct ds_profile *p)
{
	if (r->reader)
		return dsi_error(-EALREADY, "report: attached already");
	/* what the report needs of each sample: its memo's key, and the samples the filter hides */
	if (dsi_profile__want_shapes(p, true) || dsi_profile__keep_filtered(p, true))
		return dsi_error(-EALREADY, "report: attached after the profile ran");
	r->reader = ds_profile__reader(p);
	r->profile = p;
	if (r->graph_given && !any_callchains(r->reader))   /* perf refuses too ("Selected -g or --branch-history. But no callchain ...") */
		return dsi_error(-EINVAL, "selected -g, but the recording has no callchains "
				 "(was it recorded without -g or --call-graph?)");
	r->latency = has_switch_records(r->reader);
	if (!branch_view_setup(r))   /* perf's words: its branch keys are no keys of a report of samples */
		return dsi_error(-EINVAL, "--sort: a key of the branch view, which the recording has not "
				 "(no branch stacks, or --no-branch-stack and the like)");
	if (!r->sort_given && all_tracepoints(r->reader)) {
		r->nr_sort = 1;
		r->sort[0] = SORT_TRACE;
		r->sort_mask = 1u << SORT_TRACE;
		r->col[0] = SORT_TRACE;
		r->nr_col = 1;
	}
	return 0;
}

bool ds_report__branch_view_refused(const struct ds_report *r)
{
	return r->sort_refused;
}

int ds_report__print(struct ds_report *r, ds_write_fn fn, void *ctx)
{
	struct dsi_wbuf w;
	struct ds_profile_stats st;
	int err, werr;

	if (!r->reader)
		return dsi_error(-EINVAL, "report: not attached to a profile");
	if ((err = dsi_wbuf__init(&w, fn, ctx)))
		return dsi_error(err, "report: out of memory");
	ds_profile__stats(r->profile, &st);
	r->lost_samples = st.session.lost_samples;
	r->out = &w;
	if (r->stats)
		print_stats(r, &st.session);
	else
		err = dsi_report_print_report(r);
	r->out = NULL;
	werr = dsi_wbuf__finish(&w);
	if (err)
		return err == -ENOMEM ? dsi_error(err, "report: out of memory") : err;
	return werr ? dsi_error_keep(werr, NULL) : 0;
}

void ds_report__stats(const struct ds_report *r, struct ds_report_stats *st)
{
	*st = (struct ds_report_stats){ .samples = r->seq, .unkept = r->unkept, .entries = r->nr_ents,
				     .branch_view = r->branch_keys };
}

size_t ds_report__entry_count(struct ds_report *r)
{
	return ds_report__finish(r) ? 0 : r->nr_order;
}

const struct ds_report_entry *ds_report__entry(struct ds_report *r, size_t i)
{
	if (ds_report__finish(r) || i >= r->nr_order)
		return NULL;
	return (const struct ds_report_entry *)&r->ents[r->order[i]];
}

/* The public entry is the model's entry: a cast, no copy */
static const struct entry *entry_of(const struct ds_report_entry *e)
{
	return (const struct entry *)e;
}

const char *ds_report_entry__event(const struct ds_report_entry *e)
{
	return entry_of(e)->evsel->name;
}

size_t ds_report_entry__symbol(const struct ds_report_entry *e, char *buf, size_t n)
{
	const struct entry *en = entry_of(e);
	int len = dsi_report_sym_text(en, buf, n), more = 0;

	if (len < 0)
		return 0;
	/* a data object's offset, as print_entry_columns prints it */
	if (en->object)
		more = snprintf((size_t)len < n ? buf + len : NULL, (size_t)len < n ? n - (size_t)len : 0, "+0x%llx",
				(unsigned long long)en->obj_off);
	return (size_t)len + (size_t)(more > 0 ? more : 0);
}

const char *ds_report_entry__sym(const struct ds_report_entry *e)
{
	return entry_of(e)->sym;
}

const char *ds_report_entry__dso(const struct ds_report_entry *e)
{
	return entry_of(e)->dso;
}

const char *ds_report_entry__comm(const struct ds_report_entry *e)
{
	return entry_of(e)->comm;
}

uint64_t ds_report_entry__self(const struct ds_report_entry *e)
{
	return entry_of(e)->self;
}

uint64_t ds_report_entry__children(const struct ds_report_entry *e)
{
	return entry_of(e)->acc;
}

uint64_t ds_report_entry__samples(const struct ds_report_entry *e)
{
	return entry_of(e)->samples;
}

uint64_t ds_report__total_period(const struct ds_report *r, const struct ds_report_entry *e)
{
	const struct ds_evsel *ev = entry_of(e)->evsel;

	for (size_t i = 0; i < r->nr_evsels; i++)
		if (r->evsels[i] == ev)
			return r->ev_period[i];
	return 0;
}
