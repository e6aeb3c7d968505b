/* SPDX-License-Identifier: MIT */
/*
 * The report model's insides (dstack/report.h), shared by the files of
 * lib/analysis/report*.c, hist.c, callgraph.c and collapse.c:
 *   hist.c          entries: keys, hashing, perf's tree of entries as it searches it
 *   callgraph.c     call-graph nodes, their trees of children, the paths' memo
 *   report_sample.c a sample's intake: keys, --children, the memos, the filters, branches
 *   collapse.c      perf's sort comparators, its collapse and merge, the group view's pairing
 *   report_print.c  the --stdio printers
 *   report.c        the object, its options, setup, --stats, the entry iterator
 */
#ifndef DSTACK_ANALYSIS_REPORT_INT_H
#define DSTACK_ANALYSIS_REPORT_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "dstack/machine.h"
#include "dstack/profile.h"
#include "dstack/reader.h"
#include "dstack/report.h"
#include "util/hashmap.h"
#include "util/idmap.h"
#include "util/strset.h"
#include "util/grow.h"
#include "util/trie.h"
#include "analysis/report_branch.h"
#include "wbuf.h"

#define NONE UINT32_MAX
#define GROUP_MAX 8   /* members of an event group shown side by side (perf's group view) */
#define EVENTS_MAX 4096   /* events a report counts: as many as the reader takes from a file */
/* the sort keys; from SORT_DSO_FROM on, the branch view's (report_branch.h), of a branch's ends */
enum { SORT_COMM, SORT_DSO, SORT_SYM, SORT_PID, SORT_SRCLINE, SORT_TRACE, SORT_CPU,
       SORT_DSO_FROM, SORT_DSO_TO, SORT_SYM_FROM, SORT_SYM_TO, SORT_CYCLES, SORT_MAX };

/* What tells call-graph nodes apart (perf's function key): dso and symbol, else address. */
struct nkey {
	const char *sym, *dso;     /* sym NULL: no symbol (or a deferred cookie) */
	uint64_t ip;               /* the frame's address when sym is NULL, else 0 */
	bool inlined;
	uint64_t start;            /* the symbol's start in its DSO: a key of a symbol not inlined (perf orders equal call-graph branches by it) */
	uint32_t dso_rank;         /* not part of the key: the DSO's place in perf's order of its DSO objects (see dso_rank()) */
};

/*
 * One call-graph node: a frame (its nkey's index) under its parent.  A
 * node's children are also a red-black tree (r->nrb, by node index) built
 * and searched as perf's tree of a node's children (child_at): perf's
 * comparison there is no order when the children mix kinds (inlined
 * functions by name, others by symbol start, frames without a symbol by
 * address), so its searches can miss an equal child and make a second
 * one, and the tree's order is what orders equal weights when printing.
 * Where the children are of one kind the comparison is an order, a key
 * has one child, and the search finds what its newest child or (past
 * TRIE_MIN children) node_trie finds by (parent, key).
 */
struct node {
	uint32_t key;              /* index in nkeys; NONE for an entry's root */
	uint32_t parent, first_child, next_sibling;
	uint32_t kids_root;        /* the root of the tree of children (in r->nrb), NONE if none */
	uint8_t kinds;             /* the children's kinds (KIND_*): more than one, and searches walk the tree */
	uint16_t nkids;            /* its children, counted up to NKIDS_MAX (then: unknown) */
	uint64_t hit, cumul;       /* period ending here, period through here */
	uint64_t ip;               /* the address of the chain that made the node (perf's callchain_list ip,
				      what frames without a symbol compare with) */
};

#define NKIDS_MAX UINT16_MAX
/* children a parent has before its search goes through node_trie (fewer: its tree, a few steps) */
#define TRIE_MIN 4

/* A node key's kind in perf's comparison of call-graph frames (chain_match) */
enum { KIND_ADDR = 1, KIND_SYM = 2, KIND_INLINED = 4 };

/* A node of a red-black tree kept in an array (the index is the node), linked as perf's rbtree. */
struct rbn {
	uint32_t left, right, parent;
	bool red;
};

struct entry {
	const struct ds_evsel *evsel;
	const char *comm, *dso, *sym;  /* dso: as recorded (interned); sym NULL: unknown */
	const char *sdso;              /* dso's short name (dsi_report_short_dso), kept for the comparisons */
	const char *srcline;           /* --sort srcline: perf's text, ours (one copy per text) */
	const char *trace;             /* --sort trace: the tracepoint's text, ours (one copy per text) */
	uint64_t addr;                 /* printed when sym is NULL */
	int32_t pid;                   /* the thread's tid: perf's "pid" sort key is the thread */
	int32_t cpu;                   /* --sort cpu: the sample's, -1 if it does not say */
	char level;                    /* 'k' or '.' as the entry was first seen */
	bool inlined;                  /* --children: an inlined function's entry (sym ends " (inlined)") */
	bool dso_unknown;              /* dso is "[unknown]" (no map): perf's DSO key puts it last */
	bool merged;                   /* --children: merged into an equal entry as perf collapses */
	bool object;                   /* sym is a data object: perf prints "sym+0xOFF" (obj_off) */
	uint64_t self, acc, samples;
	uint64_t lat_self, lat_acc;        /* perf's latency: period * 1000 / parallelism, summed */
	uint64_t stamp;                /* last sample that added to acc (one add per sample) */
	uint32_t root;                 /* call-graph root node */
	uint32_t depth;                /* --children: perf's callchain max_depth (frames from it on, most) */
	uint64_t start;                /* the symbol's start (perf's collapsed order), the address with none */
	uint64_t end;                  /* the symbol's end (an inlined function's: the one it is in) */
	uint64_t obj_off;
	uint32_t br;                   /* the branch view's: its branch's ends (index in r->brs), else NONE */
};

/*
 * --children: what a sample adds to, by what determines it (its shape,
 * event, comm and, sorted by it, pid): its own entry, then each entry it
 * credits with the path under it (children_from_memo).
 */
struct cmemo {
	uint64_t shape_id;
	uint64_t chain_id;         /* the last chain whose frames were checked (equal ids, equal frames), 0 none */
	const struct ds_evsel *evsel;
	const char *comm;
	int32_t pid;
	uint32_t leaf;             /* the own frame's index in the chain (leaf_frame) */
	uint32_t nr_frames;
	uint32_t epoch;            /* r->ent_epoch it was made at (tree searches: valid while equal) */
	uint32_t own;              /* the own entry's index */
	uint32_t nr_items, nr_found, cap_words;
	size_t items;              /* offset in citems: nr_items (entry, path) pairs, then the nr_found
				      entries its searches found (its he_cache) */
	size_t spans;              /* offset in cspans: each frame's symbol start and end */
};

/* A sample's entry and call-graph path, by what determines them. */
struct memo {
	uint64_t shape_id;
	const struct ds_evsel *evsel;
	const char *comm;
	int32_t pid;               /* -1 when the entries do not sort by pid */
	bool cc;                   /* made by a sample with a callchain: one without (its chain
				      discarded) has the same shape but no path */
	uint32_t ent;
	size_t path;       /* offset in paths, SIZE_MAX if none */
};

struct ds_report {
	/* the run's filters (ds_report_opts; the strings are the caller's) */
	const char *const *comms;
	size_t nr_comms;
	bool thread_filter;
	enum ds_profile_time_mode time_mode;
	const char *time_str;
	bool quiet;                        /* -q: perf prints the entries only */
	bool sort_refused;                 /* the branch view turned away for the options (ds_report__branch_view_refused) */
	bool finished;                     /* ds_report__finish done: the sections' entries in r->order */
	uint32_t *order;                   /* the entries as printed (indexes in ents), by section */
	size_t nr_order, cap_order;
	size_t *sec_start;                 /* by section: its first entry in order, then the end */
	size_t *sec_ev;                    /* by section: its event (index in evsels) */
	size_t nr_secs;
	const struct ds_reader *reader;   /* the profile's (ds_report__attach): its events, its features */
	bool children, graph, caller;
	bool in_tree;                      /* entries go into perf's output tree (tree_order) */
	bool any_callchain;                /* a sample of an event that records callchains was seen */
	struct ds_machine *machine;        /* the samples': a thread's newest comm, at print time */
	double percent_limit;
	int sort[SORT_MAX], nr_sort;
	unsigned sort_mask;                /* bit SORT_x set when x is a sort key (asked per sample) */
	bool sort_sym_first;               /* the --sort text begins "sym": perf leaves the entry's frame out of its graph */
	bool no_branch_stack;              /* --no-branch-stack: perf's sample view of branch-stack data, asked for */
	/*
	 * perf's branch view (branch_view_setup): an entry per branch, of
	 * weight 1, keyed by its sample, its target (the sample view's keys
	 * dso and symbol) and its ends (the branch keys, report_branch.h);
	 * perf's default keys comm,dso_from,symbol_from,symbol_to,cycles
	 * unless --sort says (count_branches)
	 */
	bool branch_keys;
	bool branch_latency;               /* branch_keys: perf orders equal counts by latency, shown or not */
	struct branch_ends *brs;           /* the entries' branches (entry.br), and room for a key's */
	size_t nr_brs, cap_brs;
	bool ipc_columns;                  /* the --sort text names "symbol": perf adds its (empty) IPC columns */
	uint64_t lost_samples;
	bool stats;                        /* --stats: the records read, by type, and each event's samples */
	uint64_t stat_samples[EVENTS_MAX], stat_lost[EVENTS_MAX];   /* --stats: by event index */
	bool sort_given;                   /* --sort: else perf's default for the recording's events */
	bool graph_given;                  /* -g caller/callee */
	enum { GM_GRAPH, GM_FRACTAL, GM_FLAT, GM_FOLDED } graph_mode;   /* -g's print type */
	bool graph_period;                 /* -g ...,period: values as periods, not percents */
	double graph_pct;                  /* the threshold in force while a section prints */
	bool show_samples;                 /* -n: perf's Samples column */
	bool show_period;                  /* --show-total-period: perf's Period column (self period) */
	bool hide_unresolved;              /* -U: samples at no symbol dropped, frames without one left out */
	struct ds_cc_frame *resolved;      /* -U: a sample's frames with a symbol (reused) */
	size_t cap_resolved;
	double graph_min;                  /* -g's threshold in percent; < 0: --percent-limit's, else 0.5 */
	/* perf's --dsos and -S/--symbols: only samples whose own address lies in one of these (by
	 * short or full name; by symbol-table name), the others counted in the totals as perf does */
	struct name_list { const char *const *v; size_t n; } dsos, syms;
	int col[SORT_MAX], nr_col;          /* the sort keys shown: a filter of one value hides its key's column
					     * (it still tells entries apart: a --children caller's DSO) */
	bool latency;                      /* perf's Latency columns: context-switch records (and, printing, a parallelism above 1) */
	struct ds_profile *profile;        /* attached: tracepoint texts, --stats' counter reads and totals */
	/*
	 * perf's group view (events recorded as a group, -e '{a,b}'): the
	 * leader's section shows each member's entries in a column of its own,
	 * and the leader's call graphs.  Members keep entries of their own
	 * (perf's hists of each event) that are paired with the leader's when
	 * printing (link_group).  By event index in the file: the leader's
	 * index and the member's place, or -1 outside any group.
	 */
	bool groups;
	int group_leader[64], group_slot[64], group_size[64];
	bool groups_read;              /* setup_groups done (at the first sample) */
	char group_name[64][64];
	/* by entry index of a leader's entry: member k's paired entry's index + 1, 0 for none ([0] unused) */
	struct group_cols { uint32_t pair[GROUP_MAX]; } *gcols;
	size_t nr_gcols, cap_gcols;

	struct entry *ents;
	size_t nr_ents, cap_ents;
	struct dsi_idmap ent_ids;          /* entry (by entry_eq) -> index in ents */
	/*
	 * Sorted by symbol but not by DSO: perf compares two entries without a
	 * symbol by address alone, others by DSO first, which is no order, so
	 * its search can miss an entry and make a second one (measured: a
	 * Python recording's --sort cpu,symbol, _Py_Dealloc twice).  Such a
	 * report searches the trees from its first entry, --children or not.
	 */
	bool sym_tree;
	/*
	 * --children: each event's entries in perf's tree of entries as they
	 * come (its hists' entries_in), searched the way perf searches it:
	 * its comparison is no order where an inlined function's entry takes
	 * part (by name against the others, by address among those), so a
	 * search can miss an equal entry and make a second one, which perf's
	 * collapse then merges (tree_order) or prints twice.
	 */
	bool etree_on;                    /* since the first inlined function's entry (before it, perf's
					   search finds what the hash map finds, without its cost) */
	struct rbn *etree;                /* by entry index */
	size_t cap_etree;
	uint32_t *ein_root;               /* by event (event_index) */
	uint32_t *he_cache;               /* the sample's entries so far (perf's he_cache) */
	size_t nr_he_cache, cap_he_cache;
	struct node *nodes;
	size_t nr_nodes, cap_nodes;
	struct rbn *nrb;                  /* by node index: its place in its parent's tree of children */
	size_t cap_nrb;
	uint32_t mix_epoch;               /* counts the nodes whose children came to mix kinds (path_add) */
	/*
	 * The comparisons of a frame with a symbol by its address that a
	 * path's walk made (child_at, path_walk): its frame, the node's
	 * address, the outcome; kept by path (ipdeps, path record word 11)
	 */
	bool walking;                     /* a path_walk is on (child_at's other callers keep nothing) */
	uint32_t walk_d;                  /* the walk's frame child_at searches for */
	struct ipcmp { uint64_t aip; uint32_t d; int32_t sign; } *wcmp;
	size_t nr_wcmp, cap_wcmp;
	bool wcmp_lost;                   /* one could not be kept (ENOMEM): the walk is not known */
	struct ipdep { size_t at; uint32_t nr, cap; } *ipdeps;   /* nr UINT32_MAX: not known */
	size_t nr_ipdeps, cap_ipdeps;
	struct ipcmp *ipcs;               /* the ipdeps' comparisons */
	size_t nr_ipcs, cap_ipcs;
	struct dsi_trie node_trie;         /* (parent, nkey) -> child, for parents of one kind of children
					     and more than TRIE_MIN of them */
	struct nkey *nkeys;
	size_t nr_nkeys, cap_nkeys;
	struct dsi_idmap nkey_ids;         /* nkey -> index in nkeys */
	uint32_t *fkeys;                  /* machine frame id -> nkey index + 1 (0: not yet) */
	size_t cap_fkeys;
	struct dsi_idmap path_ids;         /* (root, shape id, range) -> offset in paths */
	uint32_t *paths;                  /* records: PATH_HEAD words, then n nodes */
	size_t nr_paths, cap_paths;
	struct dsi_hashmap inlined_names;  /* sym -> "sym (inlined)" (malloc'd) */
	/*
	 * dsi_report_short_dso's answers: interned DSO name -> its short name.
	 * Through a pointer (to short_dso_map) because the comparisons ask
	 * with the report const.  A DSO's short name is fixed once samples
	 * come (the machine lists the header's kernel names before them).
	 */
	struct dsi_hashmap *short_dsos;
	struct dsi_hashmap short_dso_map;
	struct dsi_strset texts;          /* our copies, one per text (source lines, tracepoint texts, comms) */
	struct dsi_idmap memo_ids;         /* (shape id, evsel, comm, pid) -> index in memo */
	struct dsi_idmap cmemo_ids;        /* --children: the same key -> index in cmemo */
	struct cmemo *cmemo;
	size_t nr_cmemo, cap_cmemo;
	uint32_t *citems;                 /* cmemo's (entry, path offset or NONE) pairs */
	size_t nr_citems, cap_citems;
	uint64_t *cspans;                 /* cmemo's frame spans (two words a frame) */
	size_t nr_cspans, cap_cspans;
	/*
	 * --children: a run of samples of one chain from one cmemo, one after
	 * the other (children_from_memo): 1 + its index (0: none) and what the
	 * run added, not yet in its entries and paths (dsi_report_flush_run);
	 * last_hit: 1 + the cmemo the sample before came from without making a
	 * node (0: none), last_chain its chain id.
	 */
	uint32_t run, last_hit;
	uint64_t last_chain, run_period, run_lat;
	/*
	 * Moves when perf's tree of entries changes in a way that can change
	 * what a search finds: its start, and an entry made in it whose
	 * linking moved nodes (a rotation; a new leaf changes no search that
	 * found an entry, and one for its key now finds it).  The hash map's
	 * finds never change (an entry, once made, is what an equal key finds).
	 */
	uint32_t ent_epoch;
	uint32_t tree_epoch;              /* ent_epoch when the tree started */
	uint32_t *ent_moved;              /* by entry: ent_epoch when a rotation last moved it, 0 never */
	size_t cap_moved;
	bool rec_on, rec_ok;              /* count_sample records what it credits (rec), for a cmemo */
	uint32_t *rec;
	size_t nr_rec, cap_rec;
	struct memo *memo;                /* what a sample with that key adds to (no --children) */
	size_t nr_memo, cap_memo;
	/* the samples (the branch view: branches) shown so far, counted or not */
	uint64_t seq;
	/* the events seen, in the order of their first samples (every event a reader can hold) */
	const struct ds_evsel *evsels[EVENTS_MAX];  /* compared only: they die with the profile */
	const char *ev_names[EVENTS_MAX];
	uint64_t ev_samples[EVENTS_MAX], ev_period[EVENTS_MAX], ev_latency[EVENTS_MAX];   /* the totals shown */
	uint64_t ev_passed[EVENTS_MAX];    /* samples past the CPU and time filters: the event has a section */
	uint64_t ev_passed_period[EVENTS_MAX];   /* their period: the call graphs' total, relative or not */
	bool relative;                     /* --percentage relative: the totals of the samples shown only */
	uint16_t ev_slot[EVENTS_MAX];      /* by the event's index in the file: its place above + 1, 0 if none yet */
	size_t nr_evsels;
	int error;
	struct dsi_wbuf *out;              /* while printing */
	/*
	 * The bound on what the entries and their call graphs hold (the
	 * memory budget; an array's last doubling may take them half as far
	 * again): past it a sample that would make more counts in the totals
	 * only (as a filtered one), said once at the end.  Recordings of real
	 * work hold a few MiB (15 MiB --children of 25,000 samples of the
	 * corpus); countless tasks and comms (hostile) get there.
	 */
	size_t max_held;
	bool full;
	uint64_t unkept;                   /* samples counted in the totals only */
};


/* The public entry is the model's entry. */
struct ds_report_entry;

static inline bool dsi_report_uses(const struct ds_report *r, int key)
{
	return r->sort_mask & (1u << key);
}

/*
 * Does an entry keep its comm: sorted by comm, or by pid (shown "pid:comm")?
 * A profile with transient_comms interns no ":TID": the report copies those
 * it keeps (kept_comm), so a task per sample leaves behind no name but
 * those of the entries it has room for.
 */
static inline bool dsi_report_keeps_comm(const struct ds_report *r)
{
	return dsi_report_uses(r, SORT_COMM) || dsi_report_uses(r, SORT_PID);
}

/* Room for an entry's symbol column: C++ template names run past a kilobyte, and perf cuts none */
#define SYM_TEXT_MAX 16384

/* perf's comparison of two entries (pointers to entry pointers) in report @ctx, as qsort_r's */
typedef int (*entry_cmp)(const void *, const void *, void *ctx);

/* Node x's entry in a tree: the trees of lists (node x: list[x]) and of r->ents (node x: ents[x]). */
typedef const struct entry *(*rb_entry_at)(const void *base, uint32_t x);

/* An event's entries in a tree as perf's hists keep them: node x's entry in e[x]. */
struct etree {
	struct rbn *t;
	struct entry **e;
	size_t nr;
	uint32_t root;
};

/* hist.c */
uint32_t dsi_report_intern_nkey(struct ds_report *r, const struct nkey *key);
uint32_t dsi_report_frame_nkey(struct ds_report *r, const struct ds_profile_sample *s, size_t i);
const struct entry *dsi_report_list_at(const void *base, uint32_t x);
void dsi_report_rb_insert(const struct ds_report *r, struct rbn *t, uint32_t *root, struct entry **in, uint32_t z,
		      entry_cmp cmp);
struct entry *dsi_report_find_entry(struct ds_report *r, const struct entry *key);
struct entry *dsi_report_find_entry_tree(struct ds_report *r, const struct entry *key);
/* What perf's search of @key's event tree finds now (the trees are on: etree_on), nothing made: NONE if none. */
uint32_t dsi_report_search_entry_tree(struct ds_report *r, const struct entry *key);

/* callgraph.c */
bool dsi_report_rb_link_moved(struct rbn *t, uint32_t *root, uint32_t z, uint32_t p, bool left, uint32_t *moved,
			  size_t *nr_moved);
bool dsi_report_rb_link(struct rbn *t, uint32_t *root, uint32_t z, uint32_t p, bool left);
uint32_t dsi_report_child_at(struct ds_report *r, uint32_t parent, uint32_t key, uint64_t ip);
void dsi_report_credit(struct ds_report *r, uint32_t root, const uint32_t *nodes, size_t n, uint64_t period);
int dsi_report_path_add(struct ds_report *r, size_t off, const struct ds_profile_sample *s);
/* @period into the pending sum of the path at @off: dsi_report_path_add of samples that take no walk. */
void dsi_report_path_add_pending(struct ds_report *r, size_t off, uint64_t period);
void dsi_report_flush_paths(struct ds_report *r);
int dsi_report_add_chain_at(struct ds_report *r, struct entry *e, const struct ds_profile_sample *s, long from, long to,
			size_t *at);

/* sample.c */
bool dsi_report_in_group(const struct ds_report *r, const struct ds_evsel *evsel);
/* A run of samples (struct ds_report's run) into its entries and paths: before anything else counts or reads them. */
void dsi_report_flush_run(struct ds_report *r);
size_t dsi_report_event_index(struct ds_report *r, const struct ds_evsel *evsel);

/* collapse.c */
const char *dsi_report_short_dso(const struct ds_report *r, const char *dso);
int dsi_report_sym_text(const struct entry *e, char *buf, size_t n);
size_t dsi_report_sym_width(const struct ds_report *r, const struct entry *e, char *buf, size_t n);
const struct entry *dsi_report_member_entry(const struct ds_report *r, const struct entry *e, int k);
uint64_t dsi_report_member_period(const struct ds_report *r, const struct entry *e, int k, bool acc);
int dsi_report_cmp_entry(const void *pa, const void *pb, void *ctx);
int dsi_report_cmp_collapsed(const void *pa, const void *pb, void *ctx);
uint32_t dsi_report_rb_first(const struct rbn *t, uint32_t root);
uint32_t dsi_report_rb_next(const struct rbn *t, uint32_t x);
int dsi_report_tree_order(struct ds_report *r, struct entry **list, size_t *nrp, bool collapsed);
int dsi_report_link_group(struct ds_report *r, size_t ev, struct entry **list, size_t *nr);

/* report_print.c */
int dsi_report_print_report(struct ds_report *r);

/* report.c */
void dsi_report_setup_groups(struct ds_report *r);

/* Small helpers of the per-sample path, inline in every file that calls them */

/*
 * Our copy of a string interned by the machine: names come from the
 * machine and the symbol tables, which live until the profile is closed;
 * the report is printed before that (dstack/report.h), so they are used
 * as they are: equal names are equal pointers (interned).
 */
static inline const char *dsi_report_keep(struct ds_report *r, const char *s)
{
	(void)r;
	return s;
}

/* Is @key equal, by perf's comparison, to an entry this sample added to already (its he_cache)? */
static inline bool dsi_report_in_he_cache(const struct ds_report *r, const struct entry *key)
{
	/* before the tree, an equal entry is the one found: its stamp tells */
	for (size_t i = 0; r->etree_on && i < r->nr_he_cache; i++) {
		const struct entry *c = &r->ents[r->he_cache[i]];

		/* the quick check first: most entries differ by symbol */
		if (key->sym && c->sym && !key->inlined && !c->inlined && key->start != c->start)
			continue;
		if (!dsi_report_cmp_collapsed(&key, &c, (void *)r))
			return true;
	}
	return false;
}

static inline bool dsi_report_he_cache_add(struct ds_report *r, const struct entry *e)
{
	uint32_t *v = dsi_grow(r->he_cache, &r->cap_he_cache, r->nr_he_cache + 1, sizeof(*v), 64);

	if (!v)
		return false;
	r->he_cache = v;
	r->he_cache[r->nr_he_cache++] = (uint32_t)(e - r->ents);
	return true;
}

/* Room for one more node: false on ENOMEM. */
static inline bool dsi_report_node_room(struct ds_report *r)
{
	struct node *n = dsi_grow(r->nodes, &r->cap_nodes, r->nr_nodes + 1, sizeof(*n), 4096);
	struct rbn *t;

	if (!n || r->nr_nodes >= NONE - 1)
		return false;
	r->nodes = n;
	if (!(t = dsi_grow(r->nrb, &r->cap_nrb, r->nr_nodes + 1, sizeof(*t), 4096)))
		return false;
	r->nrb = t;
	return true;
}

static inline uint32_t dsi_report_new_node(struct ds_report *r, uint32_t parent, uint32_t key)
{
	if (!dsi_report_node_room(r))
		return NONE;
	r->nodes[r->nr_nodes] = (struct node){ .key = key, .parent = parent, .first_child = NONE, .next_sibling = NONE,
					       .kids_root = NONE };
	if (parent != NONE) {
		r->nodes[parent].nkids += r->nodes[parent].nkids < NKIDS_MAX;
		r->nodes[r->nr_nodes].next_sibling = r->nodes[parent].first_child;
		r->nodes[parent].first_child = (uint32_t)r->nr_nodes;
	}
	return (uint32_t)r->nr_nodes++;
}

/*
 * perf's walk of the tree at @root for @key (@cmp < 0: left of a node;
 * node x's entry: @at(@base, x)).  With @find it stops at a node it finds
 * equal (returned), as perf's searches do; without, equal goes right, as
 * its insertions do.  NONE otherwise, with the parent and side to link a
 * new node at.
 */
static inline uint32_t dsi_report_rb_descend(const struct ds_report *r, const struct rbn *t, uint32_t root, rb_entry_at at,
			   const void *base, const struct entry *key, entry_cmp cmp, bool find, uint32_t *parent,
			   bool *left)
{
	*parent = NONE;
	*left = false;
	for (uint32_t x = root; x != NONE;) {
		const struct entry *ex = at(base, x);
		int c = cmp(&key, &ex, (void *)r);

		if (!c && find)
			return x;
		*parent = x;
		*left = c < 0;
		x = *left ? t[x].left : t[x].right;
	}
	return NONE;
}

#endif
