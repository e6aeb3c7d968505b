// SPDX-License-Identifier: MIT
/*
 * dstack report: the flat profile of `perf report --stdio` (Overhead,
 * Command, Shared Object, Symbol) with a call graph under each entry, or
 * with --children the cumulative profile.  Entries and call-graph nodes
 * live in growing arrays found through hash maps keyed by interned
 * pointers, so a sample costs no allocation once its paths were seen.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include "cli.h"
#include "util/grow.h"
#include "util/hashmap.h"
#include "util/idmap.h"
#include "util/strset.h"
#include "util/units.h"
#include "util/trie.h"
#include "util/outbuf.h"
#include "header.h"
#include "progress.h"
#include "report_branch.h"
#include "report_text.h"
#include "samples.h"

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
	uint64_t start;            /* not part of the key: the symbol's start in its DSO (perf orders equal call-graph branches by it) */
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
	const char *srcline;           /* --sort srcline: perf's text, ours (one copy per text) */
	const char *trace;             /* --sort trace: the tracepoint's text, ours (one copy per text) */
	uint64_t addr;                 /* printed when sym is NULL */
	int32_t pid;                   /* the thread's tid: perf's "pid" sort key is the thread */
	int32_t cpu;                   /* --sort cpu: the sample's, -1 if it does not say */
	char level;                    /* 'k' or '.' as the entry was first seen */
	bool inlined;                  /* --children: an inlined function's entry (sym ends " (inlined)") */
	uint64_t self, acc, samples;
	uint64_t lat_self, lat_acc;        /* perf's latency: period * 1000 / parallelism, summed */
	uint64_t stamp;                /* last sample that added to acc (one add per sample) */
	uint32_t root;                 /* call-graph root node */
	uint32_t depth;                /* --children: perf's callchain max_depth (frames from it on, most) */
	uint64_t start;                /* the symbol's start (perf's collapsed order), the address with none */
	uint64_t end;                  /* the symbol's end (an inlined function's: the one it is in) */
	bool merged;                   /* --children: merged into an equal entry as perf collapses */
	bool object;                   /* sym is a data object: perf prints "sym+0xOFF" (obj_off) */
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

struct report {
	struct walk_opts wo;
	const struct ds_reader *reader;   /* the recording's, during the walk and the printing */
	bool children, graph, caller;
	bool in_tree;                      /* entries go into perf's output tree (tree_order) */
	bool any_callchain;                /* a sample of an event that records callchains was seen */
	struct ds_machine *machine;        /* the walk's: a thread's newest comm, at print time */
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
	bool header, header_only;          /* --header, --header-only: the recording's header first */
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
	struct name_list { char **v; size_t n; } dsos, syms;
	int col[SORT_MAX], nr_col;          /* the sort keys shown: a filter of one value hides its key's column
					     * (it still tells entries apart: a --children caller's DSO) */
	bool latency;                      /* perf's Latency columns: context-switch records (and, printing, a parallelism above 1) */
	struct ds_profile *profile;        /* the walk's: tracepoint texts */
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
        /* library string -> our copy (the library's die with the walk) */
	uint64_t seq;
	/* the events seen, in the order of their first samples (every event a reader can hold) */
	const struct ds_evsel *evsels[EVENTS_MAX];  /* compared only: they die with the walk */
	const char *ev_names[EVENTS_MAX];
	uint64_t ev_samples[EVENTS_MAX], ev_period[EVENTS_MAX], ev_latency[EVENTS_MAX];   /* the totals shown */
	uint64_t ev_passed[EVENTS_MAX];    /* samples past the CPU and time filters: the event has a section */
	uint64_t ev_passed_period[EVENTS_MAX];   /* their period: the call graphs' total, relative or not */
	bool relative;                     /* --percentage relative: the totals of the samples shown only */
	uint16_t ev_slot[EVENTS_MAX];      /* by the event's index in the file: its place above + 1, 0 if none yet */
	size_t nr_evsels;
	int error;
	struct outbuf *out;
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

static bool uses(const struct report *r, int key)
{
	return r->sort_mask & (1u << key);
}

/*
 * Does an entry keep its comm: sorted by comm, or by pid (shown "pid:comm")?
 * The walk interns no ":TID" (transient_comms): the report copies those
 * it keeps (kept_comm), so a task per sample leaves behind no name but
 * those of the entries it has room for.
 */
static bool keeps_comm(const struct report *r)
{
	return uses(r, SORT_COMM) || uses(r, SORT_PID);
}

static const char *short_dso(const struct report *r, const char *dso);
static int cmp_collapsed(const void *pa, const void *pb, void *ctx);

/* Two branches equal by the branch keys sorted by (dso_from ... cycles) */
static bool branch_ends_eq(const struct report *r, const struct branch_ends *a, const struct branch_ends *b)
{
	return (!uses(r, SORT_DSO_FROM) || branch_dso__eq(&a->from, &b->from)) &&
	       (!uses(r, SORT_DSO_TO) || branch_dso__eq(&a->to, &b->to)) &&
	       (!uses(r, SORT_SYM_FROM) || branch_side__eq(&a->from, &b->from)) &&
	       (!uses(r, SORT_SYM_TO) || branch_side__eq(&a->to, &b->to)) &&
	       (!uses(r, SORT_CYCLES) || a->cycles == b->cycles);
}

static uint64_t branch_ends_hash(const struct report *r, const struct branch_ends *b, uint64_t h)
{
	if (uses(r, SORT_DSO_FROM))
		h = dsi_hash_pair(h, b->from.dso ? dsi_hash_str(b->from.dso) : 0);
	if (uses(r, SORT_DSO_TO))
		h = dsi_hash_pair(h, b->to.dso ? dsi_hash_str(b->to.dso) : 0);
	if (uses(r, SORT_SYM_FROM))
		h = dsi_hash_pair(h, branch_side__hash(&b->from));
	if (uses(r, SORT_SYM_TO))
		h = dsi_hash_pair(h, branch_side__hash(&b->to));
	return uses(r, SORT_CYCLES) ? dsi_hash_pair(h, b->cycles) : h;
}

static bool entry_eq(const struct report *r, const struct entry *a, const struct entry *b)
{
	if (a->evsel != b->evsel)
		return false;
	if (uses(r, SORT_COMM) && a->comm != b->comm)
		return false;
	if (uses(r, SORT_PID) && a->pid != b->pid)
		return false;
	/* perf tells objects apart by their short names: two "perf" binaries are one */
	if (uses(r, SORT_DSO) && a->dso != b->dso && strcmp(short_dso(r, a->dso), short_dso(r, b->dso)))
		return false;
	if (uses(r, SORT_SYM) && (a->sym != b->sym || (!a->sym && a->addr != b->addr)))
		return false;
	/* perf's symbol key tells the DSOs of two symbols apart when no dso key does (free@plt of two objects) */
	if (uses(r, SORT_SYM) && !uses(r, SORT_DSO) && a->sym && a->dso != b->dso &&
	    strcmp(short_dso(r, a->dso), short_dso(r, b->dso)))
		return false;
	/* perf's inlined function is one per function it is inlined in (its symbol's start) */
	if (uses(r, SORT_SYM) && a->inlined && a->start != b->start)
		return false;
	if (uses(r, SORT_SRCLINE) && a->srcline != b->srcline)
		return false;
	if (uses(r, SORT_TRACE) && a->trace != b->trace)
		return false;
	if (uses(r, SORT_CPU) && a->cpu != b->cpu)
		return false;
	return r->brs ? branch_ends_eq(r, &r->brs[a->br], &r->brs[b->br]) : true;
}

static uint64_t entry_hash(const struct report *r, const struct entry *e)
{
	uint64_t h = dsi_hash64((uintptr_t)e->evsel);

	if (uses(r, SORT_COMM))
		h = dsi_hash_pair(h, (uintptr_t)e->comm);
	if (uses(r, SORT_PID))
		h = dsi_hash_pair(h, (uint64_t)(uint32_t)e->pid);
	if (uses(r, SORT_DSO))
		h = dsi_hash_pair(h, dsi_hash_str(short_dso(r, e->dso)));
	if (uses(r, SORT_SYM))
		h = dsi_hash_pair(h, e->sym ? (uintptr_t)e->sym ^ (e->inlined ? e->start : 0) : e->addr);
	if (uses(r, SORT_SYM) && !uses(r, SORT_DSO) && e->sym)
		h = dsi_hash_pair(h, dsi_hash_str(short_dso(r, e->dso)));
	if (uses(r, SORT_SRCLINE))
		h = dsi_hash_pair(h, (uintptr_t)e->srcline);
	if (uses(r, SORT_TRACE))
		h = dsi_hash_pair(h, (uintptr_t)e->trace);
	if (uses(r, SORT_CPU))
		h = dsi_hash_pair(h, (uint64_t)(uint32_t)e->cpu);
	return r->brs ? branch_ends_hash(r, &r->brs[e->br], h) : h;
}

/* Our copy of a string interned by the machine (stable pointer during the walk). */
/*
 * Names come from the machine and the symbol tables, which live until the
 * walk ends; the report is printed before that (walk_finish), so they
 * are used as they are: equal names are equal pointers (interned).
 */
static const char *keep(struct report *r, const char *s)
{
	(void)r;
	return s;
}

/* Room for one more node: false on ENOMEM. */
static bool node_room(struct report *r)
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

static uint32_t new_node(struct report *r, uint32_t parent, uint32_t key)
{
	if (!node_room(r))
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

static bool nkey_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct nkey *a = &((const struct report *)ctx)->nkeys[id], *b = key;

	/* perf's match_chain(): inlined functions are one by name, whatever their DSO (libc's and ld.so's __GI_munmap) */
	if (a->inlined && b->inlined && a->sym && b->sym)
		return a->sym == b->sym;
	return a->sym == b->sym && a->dso == b->dso && a->ip == b->ip && a->inlined == b->inlined;
}

/*
 * Where perf's DSO object for @f's DSO would sort: perf orders equal
 * call-graph branches of different DSOs by the objects' addresses, which
 * follow the order it made them in: none (no map) first, the kernel's
 * (made at start), its modules', then the user maps' DSOs as they were
 * first mapped.
 */
static uint32_t dso_rank(const struct report *r, const struct ds_cc_frame *f)
{
	unsigned seq;

	if (f->kernel)
		return r->machine && f->dso == ds_machine__kernel_dso(r->machine) ? 1 : 2;
	seq = r->machine ? ds_machine__map_name_seq(r->machine, f->dso) : 0;
	if (seq)
		return 3 + seq;
	return strcmp(f->dso, "[unknown]") ? 3 : 0;
}

/* @key's index in r->nkeys (nkey_eq), added if new; NONE on ENOMEM. */
static uint32_t intern_nkey(struct report *r, const struct nkey *key)
{
	struct nkey *n = dsi_grow(r->nkeys, &r->cap_nkeys, r->nr_nkeys + 1, sizeof(*n), 1024);
	uint64_t k;
	uint32_t id;
	bool added;

	if (!n || r->nr_nkeys >= NONE - 1)
		return NONE;
	r->nkeys = n;
	k = key->inlined && key->sym ? dsi_hash64((uintptr_t)key->sym ^ 1)   /* by name alone (nkey_eq) */
				     : dsi_hash64((uintptr_t)key->dso * 0x9e3779b97f4a7c15ULL ^
						  (key->sym ? (uintptr_t)key->sym ^ key->inlined : key->ip) *
						  0xc2b2ae3d27d4eb4fULL);
	id = dsi_idmap__find_or_add(&r->nkey_ids, k, nkey_eq, r, key, (uint32_t)r->nr_nkeys, &added);
	if (added)
		r->nkeys[r->nr_nkeys++] = *key;
	return id;
}

/* The nkey of frame @f (names are interned: compared as pointers), added if new; NONE on ENOMEM. */
static uint32_t nkey_of(struct report *r, const struct ds_cc_frame *f)
{
	struct nkey key = { .sym = f->cookie ? NULL : keep(r, f->sym), .dso = keep(r, f->dso), .inlined = f->inlined };

	key.ip = key.sym ? 0 : f->ip;
	key.start = !key.sym ? f->ip : f->kernel ? f->ip - f->offset : f->addr - f->offset;
	key.dso_rank = dso_rank(r, f);
	return intern_nkey(r, &key);
}

/* The nkey of frame @i of @s: worked out once per machine frame id when the sample has them. */
static uint32_t frame_nkey(struct report *r, const struct ds_profile_sample *s, size_t i)
{
	uint32_t id, key;

	if (!s->frame_ids)
		return nkey_of(r, &s->frames[i]);
	id = s->frame_ids[i];
	if (id >= r->cap_fkeys) {
		uint32_t *n = dsi_grow_zeroed(r->fkeys, &r->cap_fkeys, (size_t)id + 1, sizeof(*n), 1024);

		if (!n)
			return nkey_of(r, &s->frames[i]);
		r->fkeys = n;
	}
	if (r->fkeys[id])
		return r->fkeys[id] - 1;
	key = nkey_of(r, &s->frames[i]);
	if (key != NONE)
		r->fkeys[id] = key + 1;
	return key;
}

/*
 * --children: perf's order is not a sort.  Its comparison of equal Children
 * looks at the chains' depths only within one thread, so it is no order
 * across threads, and the result is where perf's red-black trees put the
 * entries: built here the same way (tree_order, struct rbn).
 */

static void rb_rotate(struct rbn *t, uint32_t *root, uint32_t x, bool left)
{
	uint32_t y = left ? t[x].right : t[x].left, p = t[x].parent;
	uint32_t m = left ? t[y].left : t[y].right;

	if (left) {
		t[x].right = m;
		t[y].left = x;
	} else {
		t[x].left = m;
		t[y].right = x;
	}
	if (m != NONE)
		t[m].parent = x;
	t[y].parent = p;
	t[x].parent = y;
	if (p == NONE)
		*root = y;
	else if (t[p].left == x)
		t[p].left = y;
	else
		t[p].right = y;
}

/*
 * Node @z below @p (left of it if @left; the root when @p is NONE), then
 * rebalanced as perf's rb_insert_color.  Whether that rotated (moved
 * nodes that were there); with @moved (room for 3), the nodes a rotation
 * moved into it, as many as *@nr_moved.
 */
static bool rb_link_moved(struct rbn *t, uint32_t *root, uint32_t z, uint32_t p, bool left, uint32_t *moved,
			  size_t *nr_moved)
{
	uint32_t x;
	bool rotated = false;

	t[z] = (struct rbn){ .left = NONE, .right = NONE, .parent = p, .red = true };
	if (p == NONE)
		*root = z;
	else if (left)
		t[p].left = z;
	else
		t[p].right = z;
	x = z;
	while (t[x].parent != NONE && t[t[x].parent].red) {
		uint32_t q = t[x].parent, g = t[q].parent;
		bool ql = t[g].left == q;
		uint32_t u = ql ? t[g].right : t[g].left;

		if (u != NONE && t[u].red) {
			t[q].red = t[u].red = false;
			t[g].red = true;
			x = g;
			continue;
		}
		if (moved) {   /* (what the rotations below move: x, its parent and grandparent) */
			moved[0] = x;
			moved[1] = q;
			moved[2] = g;
			*nr_moved = 3;
		}
		if (x == (ql ? t[q].right : t[q].left)) {
			rb_rotate(t, root, q, ql);
			x = q;
			q = t[x].parent;
		}
		t[q].red = false;
		t[g].red = true;
		rb_rotate(t, root, g, !ql);
		rotated = true;
	}
	t[*root].red = false;
	return rotated;
}

static bool rb_link(struct rbn *t, uint32_t *root, uint32_t z, uint32_t p, bool left)
{
	return rb_link_moved(t, root, z, p, left, NULL, NULL);
}

static uint8_t nkey_kind(const struct nkey *k)
{
	return !k->sym ? KIND_ADDR : k->inlined ? KIND_INLINED : KIND_SYM;
}

/* perf's order of two frames' DSO objects (see dso_rank()) */
static int dso_order(const struct nkey *a, const struct nkey *b)
{
	if (a->dso_rank != b->dso_rank)
		return a->dso_rank < b->dso_rank ? -1 : 1;
	return a->dso == b->dso ? 0 : strcmp(a->dso, b->dso);
}

/*
 * perf's match_chain() of a tree node's frame (@a, the node made at @aip)
 * with a chain's frame (@b at @bip): 0 when equal (the chain goes on
 * below the node), < 0 when the node comes first (the search goes left:
 * a node's children read in descending order), > 0 otherwise.  Inlined
 * functions compare by name (equal names are one, whatever their DSOs),
 * two other symbols by DSO then start, and a frame without a symbol by
 * DSO then address.
 */
static int chain_match(const struct nkey *a, uint64_t aip, const struct nkey *b, uint64_t bip)
{
	int c;

	if (a->sym && b->sym) {
		if (a->inlined || b->inlined)
			return a->sym == b->sym ? 0 : strcmp(a->sym, b->sym);
		if ((c = dso_order(a, b)))
			return c;
		return (a->start > b->start) - (a->start < b->start);
	}
	if ((c = dso_order(a, b)))
		return c;
	return (aip > bip) - (aip < bip);
}

static bool mixed(uint8_t kinds)
{
	return kinds & (kinds - 1);
}

/*
 * The child of @parent that a chain's frame (nkey @key at @ip) goes to,
 * made if perf's search of the children's tree finds none (perf's
 * append_chain_children): NONE on ENOMEM.  A new child is linked where the
 * search ended.
 */
/*
 * After a child of @parent was made: the map holds each child of a parent
 * of one kind of children once it has more than TRIE_MIN (all of them
 * when it gets there).  False on ENOMEM.
 */
static bool kids_mapped(struct report *r, uint32_t parent)
{
	const struct node *p = &r->nodes[parent];
	bool added;

	if (mixed(p->kinds) || p->nkids <= TRIE_MIN)
		return true;
	for (uint32_t c = p->first_child; c != NONE; c = r->nodes[c].next_sibling) {
		if (dsi_trie__child(&r->node_trie, parent, r->nodes[c].key, c, &added) == NONE)
			return false;
		if (p->nkids != TRIE_MIN + 1)
			break;   /* (the others are in: only the newest is new) */
	}
	return true;
}

/* A comparison of the walk's frame r->walk_d by its address with a node's address @aip, outcome @sign. */
static void walk_cmp_note(struct report *r, uint64_t aip, int sign)
{
	struct ipcmp *v;

	if (!r->walking)
		return;
	if (!(v = dsi_grow(r->wcmp, &r->cap_wcmp, r->nr_wcmp + 1, sizeof(*v), 16))) {
		r->wcmp_lost = true;
		return;
	}
	r->wcmp = v;
	v[r->nr_wcmp++] = (struct ipcmp){ .aip = aip, .d = r->walk_d, .sign = sign };
}

static uint32_t child_at(struct report *r, uint32_t parent, uint32_t key, uint64_t ip)
{
	uint32_t x, at = NONE, z;
	uint8_t kinds;
	bool left = false;

	/*
	 * children of one kind: perf's search is an order, there is one child
	 * a key, and the newest child (often the only one) is asked first,
	 * then the map of many children (a few are searched in their tree)
	 */
	if (!mixed(r->nodes[parent].kinds) && (x = r->nodes[parent].first_child) != NONE &&
	    (r->nodes[x].key == key ||
	     (r->nodes[parent].nkids > TRIE_MIN && (x = dsi_trie__find(&r->node_trie, parent, key)) != NONE)))
		return x;
	for (x = r->nodes[parent].kids_root; x != NONE;) {
		const struct nkey *a = &r->nkeys[r->nodes[x].key], *b = &r->nkeys[key];
		int c = chain_match(a, r->nodes[x].ip, b, ip);

		/* (a frame with a symbol compared by its address: path_add) */
		if (!a->sym && b->sym && !dso_order(a, b))
			walk_cmp_note(r, r->nodes[x].ip, c);
		if (!c)
			return x;
		at = x;
		left = c < 0;
		x = left ? r->nrb[x].left : r->nrb[x].right;
	}
	if ((z = new_node(r, parent, key)) == NONE)
		return NONE;
	r->nodes[z].ip = ip;
	rb_link(r->nrb, &r->nodes[parent].kids_root, z, at, left);
	kinds = r->nodes[parent].kinds | nkey_kind(&r->nkeys[key]);
	if (mixed(kinds) && !mixed(r->nodes[parent].kinds))
		r->mix_epoch++;
	r->nodes[parent].kinds = kinds;
	return kids_mapped(r, parent) ? z : NONE;
}

/* perf's comparison of two entries (pointers to entry pointers) in report @ctx, as qsort_r's */
typedef int (*entry_cmp)(const void *, const void *, void *ctx);

/* Node x's entry in a tree: the trees of lists (node x: list[x]) and of r->ents (node x: ents[x]). */
typedef const struct entry *(*rb_entry_at)(const void *base, uint32_t x);

static const struct entry *list_at(const void *base, uint32_t x) { return ((struct entry *const *)base)[x]; }
static const struct entry *ents_at(const void *base, uint32_t x) { return &((const struct entry *)base)[x]; }

/*
 * perf's walk of the tree at @root for @key (@cmp < 0: left of a node;
 * node x's entry: @at(@base, x)).  With @find it stops at a node it finds
 * equal (returned), as perf's searches do; without, equal goes right, as
 * its insertions do.  NONE otherwise, with the parent and side to link a
 * new node at.
 */
static uint32_t rb_descend(const struct report *r, const struct rbn *t, uint32_t root, rb_entry_at at,
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

/* Node @z (entry @in[z]) into the red-black tree at *@root as perf's go (@cmp < 0: left of a node; equal: right). */
static void rb_insert(const struct report *r, struct rbn *t, uint32_t *root, struct entry **in, uint32_t z,
		      entry_cmp cmp)
{
	uint32_t p;
	bool left;

	rb_descend(r, t, *root, list_at, in, in[z], cmp, false, &p, &left);
	rb_link(t, root, z, p, left);
}

static bool entry_id_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct report *r = ctx;

	return entry_eq(r, &r->ents[id], key);
}

static struct entry *find_entry(struct report *r, const struct entry *key)
{
	struct entry *e = dsi_grow(r->ents, &r->cap_ents, r->nr_ents + 1, sizeof(*e), 1024);
	uint32_t id;
	bool added;

	/* the entry's root is made first, so nothing can fail once it is in the map */
	if (!e || r->nr_ents >= NONE - 1 || !node_room(r))
		return NULL;
	r->ents = e;
	id = dsi_idmap__find_or_add(&r->ent_ids, entry_hash(r, key), entry_id_eq, r, key, (uint32_t)r->nr_ents,
				   &added);
	if (id == NONE)
		return NULL;
	if (added) {
		e = &r->ents[r->nr_ents++];
		*e = *key;
		e->root = new_node(r, NONE, NONE);
	}
	return &r->ents[id];
}

static size_t event_index(struct report *r, const struct ds_evsel *evsel);
static void setup_groups(struct report *r);

/* Room for the tree links of entry @z. */
static bool etree_room(struct report *r, size_t z)
{
	size_t cap = r->cap_etree;
	struct rbn *t = dsi_grow(r->etree, &r->cap_etree, z + 1, sizeof(*t), 1024);
	uint32_t *m;

	if (!t)
		return false;
	r->etree = t;
	if (!(m = dsi_grow_zeroed(r->ent_moved, &r->cap_moved, r->cap_etree, sizeof(*m), 1024))) {
		r->cap_etree = cap;   /* (the next call grows both) */
		return false;
	}
	r->ent_moved = m;
	return true;
}

/* Entry @z into its event's tree as perf's search places a new one. */
static void etree_add(struct report *r, size_t ev, uint32_t z)
{
	uint32_t p;
	bool left;

	rb_descend(r, r->etree, r->ein_root[ev], ents_at, r->ents, &r->ents[z], cmp_collapsed, false, &p, &left);
	rb_link(r->etree, &r->ein_root[ev], z, p, left);
}

/* The event trees of the entries made so far (made as they came: the hash map's entries are what perf's search made). */
static bool etree_start(struct report *r)
{
	if (!r->ein_root && !(r->ein_root = malloc(EVENTS_MAX * sizeof(*r->ein_root))))
		return false;
	if (!etree_room(r, r->nr_ents))
		return false;
	for (size_t i = 0; i < EVENTS_MAX; i++)
		r->ein_root[i] = NONE;
	for (size_t z = 0; z < r->nr_ents; z++)
		etree_add(r, event_index(r, r->ents[z].evsel), (uint32_t)z);
	r->etree_on = true;
	r->tree_epoch = ++r->ent_epoch;
	return true;
}

/*
 * --children: @key's entry as perf's search of its event's tree finds it
 * (struct report's etree), made if none; until the first inlined entry,
 * the hash map's (the same).
 */
static struct entry *find_entry_tree(struct report *r, const struct entry *key)
{
	size_t ev = event_index(r, key->evsel);
	uint32_t x, z;
	struct entry *e;

	/* (without memory for the trees, the hash map's lookups go on) */
	if (ev == SIZE_MAX || (!r->etree_on && ((!key->inlined && !r->sym_tree) || !etree_start(r))))
		return find_entry(r, key);
	uint32_t p;
	bool left;

	x = rb_descend(r, r->etree, r->ein_root[ev], ents_at, r->ents, key, cmp_collapsed, true, &p, &left);
	if (x != NONE)
		return &r->ents[x];
	e = dsi_grow(r->ents, &r->cap_ents, r->nr_ents + 1, sizeof(*e), 1024);
	if (!e || r->nr_ents >= NONE - 1 || !node_room(r) || !etree_room(r, r->nr_ents))
		return NULL;
	r->ents = e;
	z = (uint32_t)r->nr_ents++;
	e = &r->ents[z];
	*e = *key;
	e->root = new_node(r, NONE, NONE);
	/*
	 * where the search ended: a search that found an entry before finds it
	 * still, and one for this key finds it, unless nodes moved
	 */
	uint32_t moved[3];
	size_t nr_moved = 0;

	if (rb_link_moved(r->etree, &r->ein_root[ev], z, p, left, moved, &nr_moved)) {
		r->ent_epoch++;
		for (size_t i = 0; i < nr_moved; i++)
			r->ent_moved[moved[i]] = r->ent_epoch;
	}
	return e;
}

/* Is @key equal, by perf's comparison, to an entry this sample added to already (its he_cache)? */
static bool in_he_cache(const struct report *r, const struct entry *key)
{
	/* before the tree, an equal entry is the one found: its stamp tells */
	for (size_t i = 0; r->etree_on && i < r->nr_he_cache; i++) {
		const struct entry *c = &r->ents[r->he_cache[i]];

		/* the quick check first: most entries differ by symbol */
		if (key->sym && c->sym && !key->inlined && !c->inlined && key->start != c->start)
			continue;
		if (!cmp_collapsed(&key, &c, (void *)r))
			return true;
	}
	return false;
}

static bool he_cache_add(struct report *r, const struct entry *e)
{
	uint32_t *v = dsi_grow(r->he_cache, &r->cap_he_cache, r->nr_he_cache + 1, sizeof(*v), 64);

	if (!v)
		return false;
	r->he_cache = v;
	r->he_cache[r->nr_he_cache++] = (uint32_t)(e - r->ents);
	return true;
}

/* @period along @nodes (@n of them, from @root down): each one's cumul, the last one's hit. */
static void credit(struct report *r, uint32_t root, const uint32_t *nodes, size_t n, uint64_t period)
{
	r->nodes[root].cumul += period;
	for (size_t d = 0; d < n; d++)
		r->nodes[nodes[d]].cumul += period;
	r->nodes[n ? nodes[n - 1] : root].hit += period;
}

/* Add @period along the frames from..to of @s (either direction) under @e's root, now. */
static int add_chain_nodes(struct report *r, struct entry *e, const struct ds_profile_sample *s, long from, long to,
			   uint64_t period)
{
	long step = from <= to ? 1 : -1;
	uint32_t n = e->root, key;

	r->nodes[n].cumul += period;
	for (long i = from; i != to + step; i += step) {
		key = frame_nkey(r, s, (size_t)i);
		n = key == NONE ? NONE : child_at(r, n, key, s->frames[i].ip);
		if (n == NONE)
			return -ENOMEM;
		r->nodes[n].cumul += period;
	}
	r->nodes[n].hit += period;
	return 0;
}

/*
 * A chain's path under an entry, remembered by the chain's shape: a
 * profile repeats its chains (and many processes run the same code), and
 * the same shape under the same root walks the same nodes (keyed by names,
 * and by address only where there is no name) as long as no node on the
 * way has children of mixed kinds (the only ones where perf's search can
 * miss, child_at).  So a repeat adds its period to the path's pending sum,
 * credited to its nodes when that may change (a node came to mix kinds
 * somewhere: r->mix_epoch moved) and before printing (flush_paths); a path
 * through a mixed node walks its nodes for every sample, as perf does.
 * The graph is built as the samples come, so its trees are perf's.
 *
 * A path through a mixed node keeps its nodes and a pending sum too while
 * its walk cannot come out otherwise: no node on its way got a child
 * since its last walk (a search's outcome depends on the trees of
 * children it meets and the frames it compares; children only come, so
 * the sum of their numbers along the way tells), and each comparison that
 * walk made of a frame with a symbol by its address (the one thing of a
 * chain its shape leaves free that a search reads) comes out the same for
 * this sample's address (path_keep_cmps).
 *
 * A path record: root, shape id (2 words), from, to, n, pending period (2
 * words), the mix epoch its nodes were checked at, a flag (walks every
 * sample), the number of nodes at its last walk, its comparisons by
 * address (path_keep_cmps), the sum of the children of the nodes it searched
 * (UINT32_MAX: not known); then its n nodes.  Its frames' keys and
 * addresses are those of the sample at hand (of its shape).
 */
#define PATH_HEAD 13

static size_t path_words(uint32_t n)
{
	return PATH_HEAD + (size_t)n;
}

static uint32_t *path_nodes(uint32_t *p) { return p + PATH_HEAD; }

static uint32_t *path_room(struct report *r, size_t words)
{
	uint32_t *n = dsi_grow(r->paths, &r->cap_paths, r->nr_paths + words, sizeof(*n), 4096);

	if (!n)
		return NULL;
	r->paths = n;
	return n + r->nr_paths;
}

static uint64_t path_pending(const uint32_t *p)
{
	return (uint64_t)p[7] << 32 | p[6];
}

static void path_set_pending(uint32_t *p, uint64_t v)
{
	p[6] = (uint32_t)v;
	p[7] = (uint32_t)(v >> 32);
}

/*
 * The index in sample @s (of path @p's shape) of the path's frame @d.
 * Where a node's children mix kinds perf compares a frame without a
 * symbol by address with the frame searched for, so a chain of one shape
 * (frames by name) can walk another way in another process (ld.so mapped
 * elsewhere, its functions with and without symbols side by side): the
 * walk takes the sample's own addresses.
 */
/* The children of the nodes path @p searches (its root, its nodes but the last), UINT32_MAX if not known. */
static uint32_t path_kids(const struct report *r, uint32_t *p)
{
	const uint32_t *nodes = path_nodes(p);
	uint32_t sum = 0;

	if (p[5] >= UINT32_MAX / NKIDS_MAX)
		return UINT32_MAX;
	for (uint32_t d = 0; d < p[5]; d++) {
		uint16_t k = r->nodes[d ? nodes[d - 1] : p[0]].nkids;

		if (k == NKIDS_MAX)
			return UINT32_MAX;
		sum += k;
	}
	return sum;
}

static size_t walk_frame(const uint32_t *p, uint32_t d)
{
	long from = (int32_t)p[3], to = (int32_t)p[4];

	return (size_t)(from <= to ? from + (long)d : from - (long)d);
}

/*
 * The comparisons by address of the walk just made (r->wcmp) kept for
 * path @p (word 11: none, else its ipdep's index + 1; UINT32_MAX: not
 * known, the path walks every sample).
 */
static void path_keep_cmps(struct report *r, uint32_t *p)
{
	struct ipdep *dep;

	if (p[11] == UINT32_MAX)
		return;
	if (!p[11]) {
		if (!r->nr_wcmp && !r->wcmp_lost)
			return;
		dep = r->nr_ipdeps < UINT32_MAX - 1 ?
		      dsi_grow(r->ipdeps, &r->cap_ipdeps, r->nr_ipdeps + 1, sizeof(*dep), 64) : NULL;
		if (!dep) {
			p[11] = UINT32_MAX;
			return;
		}
		r->ipdeps = dep;
		r->ipdeps[r->nr_ipdeps] = (struct ipdep){ 0 };
		p[11] = (uint32_t)++r->nr_ipdeps;
	}
	dep = &r->ipdeps[p[11] - 1];
	if (r->wcmp_lost || r->nr_wcmp >= UINT32_MAX) {
		dep->nr = UINT32_MAX;
		return;
	}
	if (r->nr_wcmp > dep->cap) {
		struct ipcmp *v = dsi_grow(r->ipcs, &r->cap_ipcs, r->nr_ipcs + r->nr_wcmp, sizeof(*v), 64);

		if (!v) {
			dep->nr = UINT32_MAX;
			return;
		}
		r->ipcs = v;
		dep->at = r->nr_ipcs;
		dep->cap = (uint32_t)r->nr_wcmp;
		r->nr_ipcs += r->nr_wcmp;
	}
	memcpy(r->ipcs + dep->at, r->wcmp, r->nr_wcmp * sizeof(*r->wcmp));
	dep->nr = (uint32_t)r->nr_wcmp;
}

/* Would path @p's last walk compare sample @s's frames by address as it compared its own? */
static bool path_cmps_same(const struct report *r, const uint32_t *p, const struct ds_profile_sample *s)
{
	const struct ipdep *dep;

	if (!p[11])
		return true;
	if (p[11] == UINT32_MAX || (dep = &r->ipdeps[p[11] - 1])->nr == UINT32_MAX)
		return false;
	for (uint32_t k = 0; k < dep->nr; k++) {
		const struct ipcmp *c = &r->ipcs[dep->at + k];
		uint64_t ip = s->frames[walk_frame(p, c->d)].ip;

		if ((c->aip > ip) - (c->aip < ip) != c->sign)
			return false;
	}
	return true;
}

/*
 * Path @p's nodes found (made where new) by perf's search from its root,
 * for the chain of sample @s, then @period along them.  With @known, the
 * path's nodes are those of an earlier search: as long as this one takes
 * the same way, a node whose children are of one kind leads to the same
 * child (child_at), unsearched.
 */
static int path_walk(struct report *r, uint32_t *p, const struct ds_profile_sample *s, uint64_t period, bool known)
{
	uint32_t *nodes = path_nodes(p), n = p[0], key;

	r->nr_wcmp = 0;
	r->wcmp_lost = false;
	r->walking = true;
	for (uint32_t d = 0; d < p[5]; d++) {
		size_t i = walk_frame(p, d);

		if (known && !mixed(r->nodes[n].kinds)) {
			n = nodes[d];
			continue;
		}
		r->walk_d = d;
		if ((key = frame_nkey(r, s, i)) == NONE || (n = child_at(r, n, key, s->frames[i].ip)) == NONE) {
			r->walking = false;
			return -ENOMEM;
		}
		known = known && n == nodes[d];
		nodes[d] = n;
	}
	r->walking = false;
	p[10] = (uint32_t)r->nr_nodes;
	path_keep_cmps(r, p);
	p[12] = path_kids(r, p);
	credit(r, p[0], nodes, p[5], period);
	return 0;
}

/* Path @p's pending period credited to its nodes. */
static void path_flush(struct report *r, uint32_t *p)
{
	if (path_pending(p))
		credit(r, p[0], path_nodes(p), p[5], path_pending(p));
	path_set_pending(p, 0);
}

/* Whether a node on path @p has children of mixed kinds (its search may find another node). */
static bool path_mixed(const struct report *r, uint32_t *p)
{
	const uint32_t *nodes = path_nodes(p);

	for (uint32_t d = 0; d < p[5]; d++)
		if (mixed(r->nodes[d ? nodes[d - 1] : p[0]].kinds))
			return true;
	return false;
}

/* Sample @s's period along the path at offset @off, as perf's search of each sample would: 0 or -ENOMEM. */
static int path_add(struct report *r, size_t off, const struct ds_profile_sample *s)
{
	uint64_t period = s->period;
	uint32_t *p = r->paths + off;

	if (!p[9] && p[8] != r->mix_epoch) {
		path_flush(r, p);
		p[9] = path_mixed(r, p);
		p[8] = r->mix_epoch;
	}
	/* a mixed path's walk, unless it would take the way it took (see above) */
	if (p[9] && (!path_cmps_same(r, p, s) ||
		     (p[10] != r->nr_nodes && (p[12] == UINT32_MAX || p[12] != path_kids(r, p))))) {
		path_flush(r, p);
		return path_walk(r, p, s, period, true);
	}
	p[10] = (uint32_t)r->nr_nodes;
	path_set_pending(p, path_pending(p) + period);
	return 0;
}

/* Every path's pending period credited to its nodes (before printing). */
static void flush_paths(struct report *r)
{
	for (size_t off = 0; off < r->nr_paths; off += path_words(r->paths[off + 5]))
		path_flush(r, r->paths + off);
}

/* What a path is found by: the words p[0 .. 4] of its record. */
struct path_key {
	uint32_t root;
	uint64_t shape_id;
	long from, to;
};

static bool path_eq(const void *ctx, uint32_t off, const void *key)
{
	const uint32_t *p = ((const struct report *)ctx)->paths + off;
	const struct path_key *k = key;

	return p[0] == k->root && p[1] == (uint32_t)k->shape_id && p[2] == (uint32_t)(k->shape_id >> 32) &&
	       p[3] == (uint32_t)k->from && p[4] == (uint32_t)k->to;
}

static int add_chain_at(struct report *r, struct entry *e, const struct ds_profile_sample *s, long from, long to,
			size_t *at)
{
	long len = (from <= to ? to - from : from - to) + 1;
	uint64_t k = dsi_hash_pair(s->shape_id ^ (uint64_t)e->root << 40, (uint64_t)from << 32 | (uint32_t)to);
	struct path_key key = { e->root, s->shape_id, from, to };
	uint32_t *p, off;

	*at = SIZE_MAX;
	/* (paths past 2^32 words have offsets the id map cannot hold: the graph takes them at once) */
	if (!s->shape_id || !s->frame_ids || (uint64_t)len > UINT32_MAX - PATH_HEAD || r->nr_paths >= NONE)
		return add_chain_nodes(r, e, s, from, to, s->period);
	off = dsi_idmap__find(&r->path_ids, k, path_eq, r, &key);
	if (off != NONE) {
		*at = off;
		return path_add(r, off, s);
	}
	p = path_room(r, path_words((uint32_t)len));
	if (!p)
		return -ENOMEM;
	p[0] = e->root;
	p[1] = (uint32_t)s->shape_id;
	p[2] = (uint32_t)(s->shape_id >> 32);
	p[3] = (uint32_t)from;
	p[4] = (uint32_t)to;
	p[5] = (uint32_t)len;
	path_set_pending(p, 0);
	p[11] = 0;
	if (path_walk(r, p, s, s->period, false) || dsi_idmap__add(&r->path_ids, k, (uint32_t)r->nr_paths) < 0)
		return -ENOMEM;
	p[8] = r->mix_epoch;
	p[9] = path_mixed(r, p);
	*at = r->nr_paths;
	r->nr_paths += path_words((uint32_t)len);
	return 0;
}

/* The flat profile's frame: the sample ip's own symbol, not a function inlined there. */
static size_t leaf_frame(const struct ds_profile_sample *s)
{
	size_t i = 0;

	while (i + 1 < s->nr_frames && s->frames[i].inlined && s->frames[i + 1].ip == s->frames[0].ip)
		i++;
	return i;
}

/* @text's copy if there is one (intern_text), else NULL. */
static const char *find_text(const struct report *r, const char *text)
{
	uint32_t id = dsi_strset__find(&r->texts, text);

	return id == NONE ? NULL : dsi_strset__str(&r->texts, id);
}

/* @text's one copy; NULL on ENOMEM. */
static const char *intern_text(struct report *r, const char *text)
{
	return dsi_strset__intern(&r->texts, text);
}

/*
 * perf's srcline of a frame (ds_cc_frame__srcline): "file:line" from
 * DWARF, else "sym+offset", else "dso[address]"; "??:0" for a frame in no
 * map (perf's map__srcline asks nothing then: a deferred cookie, an
 * address no mmap covers).  One copy per text.  NULL on ENOMEM.
 */
static const char *srcline_of(struct report *r, const struct ds_cc_frame *f)
{
	char buf[1024];

	if (f->cookie || (!f->kernel && !f->map_end))
		return intern_text(r, "??:0");
	ds_cc_frame__srcline(f, 0, true, buf, sizeof(buf));
	return intern_text(r, buf);
}

/* perf's "trace" key: the sample's tracepoint text ("N/A" for another event's, as perf); NULL on ENOMEM. */
static const char *trace_of(struct report *r, const struct ds_profile_sample *s)
{
	char buf[4096], *big;
	const char *text, *t;
	size_t n;

	if (s->evsel->attr.type != DS_PERF_TYPE_TRACEPOINT)
		return intern_text(r, "N/A");
	if (!(text = walk_trace_text(r->profile, s->ev, s->thread, buf, sizeof(buf), &n, &big)))
		return NULL;
	t = intern_text(r, text);
	free(big);
	return t;
}

static void key_of(struct report *r, const struct ds_profile_sample *s, const struct ds_cc_frame *f, bool rel,
		   struct entry *key)
{
	*key = (struct entry){ .br = NONE, .evsel = s->evsel, .comm = keeps_comm(r) ? keep(r, s->comm) : NULL, .pid = s->tid,
			       .dso = keep(r, f->dso),
			       .sym = f->cookie ? NULL : keep(r, f->sym), .addr = f->ip, .level = f->kernel ? 'k' : '.' };
	/* the flat profile names the symbol-table symbol, as perf's does (a
	 * clone "f.constprop.0" whose DWARF says "f" stays "f.constprop.0") */
	if (rel && !f->cookie && f->elf_sym)
		key->sym = keep(r, f->elf_sym);
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
	if (uses(r, SORT_SRCLINE))
		key->srcline = srcline_of(r, f);
	if (uses(r, SORT_TRACE))
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
static const char *inlined_name(struct report *r, const char *sym)
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
static bool in_group(const struct report *r, const struct ds_evsel *evsel)
{
	return r->groups && evsel->idx >= 0 && evsel->idx < 64 && r->group_leader[evsel->idx] >= 0;
}

static const struct ds_evsel *group_leader_of(const struct report *r, const struct ds_evsel *evsel)
{
	return ds_reader__evsel(r->reader, (size_t)r->group_leader[evsel->idx]);
}

/*
 * Does a sample of @evsel go into the call graph?  Not a group member's:
 * its leader's section shows the leader's graphs only.
 */
static bool draws_graph(const struct report *r, const struct ds_evsel *evsel)
{
	return r->graph && !(in_group(r, evsel) && r->group_slot[evsel->idx]);
}

/* With r->rec_on: entry @e credited along the path at @at (SIZE_MAX: none) kept for the sample's cmemo. */
static void rec_credit(struct report *r, const struct entry *e, bool graph, size_t at)
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

static int add_children(struct report *r, const struct ds_profile_sample *s, struct entry *self, bool own_kernel)
{
	long n = (long)s->nr_frames;
	bool graph = draws_graph(r, s->evsel);
	size_t at = SIZE_MAX;

	self->stamp = r->seq;
	self->acc += s->period;
	self->lat_acc += sample_latency(s);
	if (graph && (r->caller ? add_chain_at(r, self, s, n - 1, 0, &at) : add_chain_at(r, self, s, 0, n - 1, &at)))
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

		key_of(r, s, &s->frames[i], false, &key);
		if (strcmp(s->frames[i].dso, "[unknown]"))
			level = '.';
		key.level = level;
		key.inlined = s->frames[i].inlined && key.sym;
		if (key.inlined && !(key.sym = inlined_name(r, key.sym)))
			return -ENOMEM;
		/* perf's he_cache: a frame equal to one the sample added already (recursion) adds nothing */
		if (in_he_cache(r, &key))
			continue;
		e = find_entry_tree(r, &key);
		if (!e || !he_cache_add(r, e))
			return -ENOMEM;
		if (e->stamp == r->seq)
			continue;
		e->stamp = r->seq;
		e->acc += s->period;
		e->lat_acc += sample_latency(s);
		if (e->depth < depth)
			e->depth = depth;
		at = SIZE_MAX;
		if (graph && (r->caller ? add_chain_at(r, e, s, i, 0, &at) : add_chain_at(r, e, s, i, n - 1, &at)))
			return -ENOMEM;
		rec_credit(r, e, graph, at);
	}
	return 0;
}

/* The pid only counts when entries are told apart by it. */
static int32_t memo_pid(const struct report *r, const struct ds_profile_sample *s)
{
	return uses(r, SORT_PID) ? s->tid : -1;
}

/* The comm a memo is for: none when no entry keeps one (keeps_comm). */
static const char *memo_comm(const struct report *r, const struct ds_profile_sample *s)
{
	return keeps_comm(r) ? s->comm : NULL;
}

static uint64_t memo_hash(const struct report *r, const struct ds_profile_sample *s)
{
	return dsi_hash64(s->shape_id * 0x9e3779b97f4a7c15ULL ^ (uintptr_t)s->evsel * 0xc2b2ae3d27d4eb4fULL ^
			 ((uintptr_t)memo_comm(r, s) ^ (uint64_t)(uint32_t)memo_pid(r, s) << 48) * 0x165667b19e3779f9ULL ^
			 s->ip_only);
}

static bool memo_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct report *r = ctx;
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
static struct memo *memo_find(struct report *r, const struct ds_profile_sample *s)
{
	uint32_t id = dsi_idmap__find(&r->memo_ids, memo_hash(r, s), memo_eq, r, s);

	return id == NONE ? NULL : &r->memo[id];
}

static void memo_add(struct report *r, const struct ds_profile_sample *s, const struct entry *e, size_t path)
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
static size_t event_index(struct report *r, const struct ds_evsel *evsel)
{
	size_t ev;

	if (evsel->idx < 0 || evsel->idx >= EVENTS_MAX)
		return SIZE_MAX;
	if (r->ev_slot[evsel->idx])
		return r->ev_slot[evsel->idx] - 1u;
	if (r->nr_evsels == EVENTS_MAX)
		return SIZE_MAX;
	ev = r->nr_evsels++;
	r->ev_names[ev] = keep(r, evsel->name);
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

static bool count_from_memo(struct report *r, const struct ds_profile_sample *s, bool cc)
{
	struct memo *m;
	struct entry *e;

	if (r->children || r->sym_tree || !s->shape_id || uses(r, SORT_SRCLINE) || uses(r, SORT_TRACE) ||
	    uses(r, SORT_CPU) || chain_misses_ip(s))
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
	if (m->path != SIZE_MAX && path_add(r, m->path, s))
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
static bool cmemo_wanted(const struct report *r, const struct ds_profile_sample *s, bool cc)
{
	return r->children && cc && s->shape_id && s->nr_frames && s->nr_frames < NONE && !uses(r, SORT_SRCLINE) &&
	       !uses(r, SORT_TRACE) && !uses(r, SORT_CPU) && !chain_misses_ip(s) && !s->frames[leaf_frame(s)].cookie;
}

/* Frame @f's symbol span as the entries compare it (key_of's start and end). */
static void frame_span(const struct ds_cc_frame *f, uint64_t *span)
{
	span[0] = f->kernel ? f->ip - f->offset : f->addr - f->offset;
	span[1] = span[0] + f->sym_size;
}

static bool cmemo_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct report *r = ctx;
	const struct cmemo *m = &r->cmemo[id];
	const struct ds_profile_sample *s = key;

	return m->shape_id == s->shape_id && m->evsel == s->evsel && m->comm == memo_comm(r, s) &&
	       m->pid == memo_pid(r, s);
}

/*
 * Does perf's search of the tree still find what @m's searches found?  A
 * search takes the way from the root to what it finds, so it does while
 * no rotation moved a node on that way: a new leaf is on no such way.
 */
static bool cmemo_tree_holds(struct report *r, struct cmemo *m)
{
	const uint32_t *found = r->citems + m->items + 2 * (size_t)m->nr_items;

	if (m->epoch == r->ent_epoch)
		return true;
	if (m->epoch < r->tree_epoch)
		return false;   /* made with the hash map, before the tree */
	for (uint32_t k = 0; k < m->nr_found; k++)
		for (uint32_t x = found[k]; x != NONE; x = r->etree[x].parent)
			if (r->ent_moved[x] > m->epoch)
				return false;
	m->epoch = r->ent_epoch;
	return true;
}

/* Does @m hold what @s adds to (its frames' spans, its own frame, the tree's searches)? */
static bool cmemo_valid(struct report *r, struct cmemo *m, const struct ds_profile_sample *s)
{
	const uint64_t *sp = r->cspans + m->spans;
	uint64_t span[2];

	if (r->etree_on && !cmemo_tree_holds(r, m))
		return false;
	if (s->chain_id && s->chain_id == m->chain_id)
		return true;
	if (m->nr_frames != s->nr_frames || m->leaf != leaf_frame(s))
		return false;
	for (size_t i = 0; i < s->nr_frames; i++) {
		frame_span(&s->frames[i], span);
		if (span[0] != sp[2 * i] || span[1] != sp[2 * i + 1])
			return false;
	}
	m->chain_id = s->chain_id;
	return true;
}

/* @s counted from its cmemo, as count_sample would count it; false when it has none that holds. */
static bool children_from_memo(struct report *r, const struct ds_profile_sample *s, bool cc)
{
	uint64_t lat = sample_latency(s);
	struct cmemo *m;
	const uint32_t *it;
	struct entry *e;
	uint32_t id;

	if (!cmemo_wanted(r, s, cc) || (id = dsi_idmap__find(&r->cmemo_ids, memo_hash(r, s), cmemo_eq, r, s)) == NONE)
		return false;
	m = &r->cmemo[id];
	if (!cmemo_valid(r, m, s))
		return false;
	e = &r->ents[m->own];
	e->self += s->period;
	e->samples++;
	e->lat_self += lat;
	it = r->citems + m->items;
	for (uint32_t k = 0; k < m->nr_items; k++) {
		e = &r->ents[it[2 * k]];
		e->acc += s->period;
		e->lat_acc += lat;
		if (it[2 * k + 1] != NONE && path_add(r, it[2 * k + 1], s))
			r->error = -ENOMEM;
	}
	return true;
}

/*
 * What count_sample recorded for @s (r->rec, and the entries found: its
 * he_cache) kept as its key's cmemo (a new one, or the old one's place),
 * as of ent_epoch @epoch (before it counted).
 */
static void cmemo_store(struct report *r, const struct ds_profile_sample *s, uint32_t epoch)
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
static int count_sample(struct report *r, const struct ds_profile_sample *s, bool cc)
{
	struct ds_cc_frame at_ip;
	const struct ds_cc_frame *own = own_frame(s, &at_ip);
	struct entry key, *e;
	size_t path = SIZE_MAX;
	bool graph = draws_graph(r, s->evsel);

	key_of(r, s, own, true, &key);
	if (!(e = r->children || r->sym_tree ? find_entry_tree(r, &key) : find_entry(r, &key)))
		return -ENOMEM;
	e->self += s->period;
	e->samples++;
	e->lat_self += sample_latency(s);
	r->nr_he_cache = 0;
	if (r->children && cc)
		return he_cache_add(r, e) ? add_children(r, s, e, own->kernel) : -ENOMEM;
	e->acc += s->period;
	e->lat_acc += sample_latency(s);
	if (graph && cc && (r->caller ? add_chain_at(r, e, s, (long)s->nr_frames - 1, 0, &path)
				 : add_chain_at(r, e, s, 0, (long)s->nr_frames - 1, &path)))
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
static bool own_frame_wanted(const struct report *r, const struct ds_profile_sample *s)
{
	const struct ds_cc_frame *f;
	struct ds_cc_frame at_ip;

	if (!r->dsos.n && !r->syms.n)
		return true;
	if (!s->nr_frames)
		return false;
	f = own_frame(s, &at_ip);
	if (r->dsos.n && (!strcmp(f->dso, "[unknown]") ||
			  !(in_names(&r->dsos, short_dso(r, f->dso)) || in_names(&r->dsos, f->dso))))
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
static const struct ds_profile_sample *unresolved_hidden(struct report *r, const struct ds_profile_sample *s,
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
static size_t report_held(const struct report *r)
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
static const struct ds_profile_sample *kept_comm(struct report *r, const struct ds_profile_sample *s,
						 struct ds_profile_sample *copy)
{
	const char *c;

	if (!keeps_comm(r) || !s->comm || s->comm[0] != ':')
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
static int count_kept(struct report *r, const struct ds_profile_sample *s, bool cc)
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
 * branch_side__resolve found it (@mapped: in a map), and its address as
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
static int count_branches(struct report *r, const struct ds_profile_sample *s)
{
	const struct ds_sample *smp = &s->ev->sample;
	size_t ev = event_index(r, s->evsel);
	struct ds_profile_sample named;

	if (ev == SIZE_MAX || !smp->branch || !smp->branch_nr || !s->machine)
		return 0;
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
		branch_side__resolve(k, b[0], &brs[r->nr_brs].from, &res);
		mapped = branch_side__resolve(k, b[1], &brs[r->nr_brs].to, &res);
		brs[r->nr_brs].cycles = (uint16_t)(b[2] >> 4);
		f = branch_target(&res, mapped);
		key_of(r, k, &f, false, &key);
		key.level = cpumode_level(smp->cpumode);
		key.br = (uint32_t)r->nr_brs;
		if (!(e = r->sym_tree ? find_entry_tree(r, &key) : find_entry(r, &key)))
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

static int on_sample(void *ctx, const struct ds_profile_sample *s)
{
	struct report *r = ctx;
	struct ds_profile_sample copy, named;
	size_t ev;
	bool cc, shown;

	/* at the first sample: a pipe's GROUP_DESC comes as a record, before it */
	if (!r->groups_read) {
		r->groups_read = true;
		setup_groups(r);
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
	if ((ev = event_index(r, s->evsel)) == SIZE_MAX)
		return 0;
	if (in_group(r, s->evsel) && event_index(r, group_leader_of(r, s->evsel)) == SIZE_MAX)
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

/* ---- output ------------------------------------------------------------ */

/* perf's short name of a DSO (ds_machine__dso_short_name) */
static const char *short_dso(const struct report *r, const char *dso)
{
	const char *s;

	if (r->machine && (s = ds_machine__dso_short_name(r->machine, dso)))
		return s;
	return ds_dso__short_name(dso, false, NULL, 0);
}

/* Room for an entry's symbol column: C++ template names run past a kilobyte, and perf cuts none */
#define SYM_TEXT_MAX 16384

static int sym_text(const struct entry *e, char *buf, size_t n)
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
static const char *module_dso(const struct report *r, const char *dso)
{
	const char *s = short_dso(r, dso);

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
static size_t sym_width(const struct report *r, const struct entry *e, char *buf, size_t n)
{
	static const char suffix[] = " (inlined)";
	size_t len = (size_t)sym_text(e, buf, n), k = sizeof(suffix) - 1;
	const char *mod;

	if (e->sym && len < n && len >= k + 4 && !strcmp(buf + len - k, suffix))
		len -= k;
	if (e->sym && e->level == 'k' && (mod = module_dso(r, e->dso)))
		len += 1 + strlen(mod);
	return len;
}

static int cmp_collapsed(const void *pa, const void *pb, void *ctx);
static int sym_collapsed(const struct report *r, const struct entry *a, const struct entry *b);

/* Branch key @key (SORT_DSO_FROM ...) of two entries' branches (report_branch.h) */
static int cmp_branch_key(const struct report *r, int key, const struct entry *a, const struct entry *b)
{
	const struct branch_ends *ba, *bb;

	if (!r->brs)
		return 0;
	ba = &r->brs[a->br];
	bb = &r->brs[b->br];
	switch (key) {
	case SORT_DSO_FROM: return branch_dso__cmp(&ba->from, &bb->from);
	case SORT_DSO_TO: return branch_dso__cmp(&ba->to, &bb->to);
	case SORT_SYM_FROM: return branch_side__cmp(&ba->from, &bb->from);
	case SORT_SYM_TO: return branch_side__cmp(&ba->to, &bb->to);
	default: return (ba->cycles < bb->cycles) - (ba->cycles > bb->cycles);   /* perf's: more first */
	}
}

/* The keys perf compares alike as entries come, collapse and are output: comm, pid, srcline, trace, cpu, branch ends. */
static int cmp_plain_key(const struct report *r, int key, const struct entry *a, const struct entry *b)
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
static int dso_cmp(const struct report *r, const struct entry *a, const struct entry *b)
{
	bool ua, ub;

	if (a->dso == b->dso)
		return 0;
	ua = !strcmp(a->dso, "[unknown]");
	ub = !strcmp(b->dso, "[unknown]");
	return ua != ub ? ua - ub : strcmp(short_dso(r, a->dso), short_dso(r, b->dso));
}

/* Member @k's entry paired with @e in its group's section (link_group): @e itself for the leader, NULL if none. */
static const struct entry *member_entry(const struct report *r, const struct entry *e, int k)
{
	size_t i = (size_t)(e - r->ents);
	uint32_t p = k && i < r->nr_gcols ? r->gcols[i].pair[k] : 0;

	return !k ? e : p ? &r->ents[p - 1] : NULL;
}

/* Member @k's self period on @e, or (@acc) its cumulative one, in @e's group section. */
static uint64_t member_period(const struct report *r, const struct entry *e, int k, bool acc)
{
	const struct entry *m = member_entry(r, e, k);

	return !m ? 0 : acc ? m->acc : m->self;
}

static int cmp_entry(const void *pa, const void *pb, void *ctx)
{
	const struct entry *a = *(const struct entry *const *)pa, *b = *(const struct entry *const *)pb;
	const struct report *r = ctx;

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
	for (int k = 1; in_group(r, a->evsel) && k < r->group_size[a->evsel->idx]; k++) {
		uint64_t pa_k = member_period(r, a, k, false), pb_k = member_period(r, b, k, false);

		if (pa_k != pb_k)
			return pa_k > pb_k ? -1 : 1;
	}
	for (int i = 0; i < r->nr_sort; i++) {
		int c = 0;

		switch (r->sort[i]) {
		case SORT_DSO:
			c = dso_cmp(r, a, b);
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
	return r->in_tree ? 0 : cmp_collapsed(pa, pb, ctx);
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
static int sym_collapsed(const struct report *r, const struct entry *a, const struct entry *b)
{
	int c;

	/* two unknown symbols: their addresses alone, not their DSOs */
	if (!a->sym && !b->sym)
		return a->start == b->start ? 0 : (int64_t)(a->start - b->start) < 0 ? -1 : 1;
	if ((c = dso_cmp(r, a, b)))
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
static int cmp_collapsed(const void *pa, const void *pb, void *ctx)
{
	const struct entry *a = *(const struct entry *const *)pa, *b = *(const struct entry *const *)pb;
	const struct report *r = ctx;

	for (int i = 0; i < r->nr_sort; i++) {
		int c = 0;

		switch (r->sort[i]) {
		case SORT_SYM:
			c = sym_collapsed(r, a, b);
			break;
		case SORT_DSO:
			c = dso_cmp(r, a, b);
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
static uint32_t rb_build(const struct report *r, struct rbn *t, struct entry **in, size_t nr, entry_cmp cmp)
{
	uint32_t root = NONE;

	for (uint32_t z = 0; z < nr; z++)
		rb_insert(r, t, &root, in, z, cmp);
	return root;
}

/* The first node of the tree at @root in order (perf's rb_first), NONE if empty. */
static uint32_t rb_first(const struct rbn *t, uint32_t root)
{
	uint32_t x = root;

	while (x != NONE && t[x].left != NONE)
		x = t[x].left;
	return x;
}

/* The node after @x in order (perf's rb_next), NONE after the last. */
static uint32_t rb_next(const struct rbn *t, uint32_t x)
{
	uint32_t c;

	if (t[x].right != NONE)
		return rb_first(t, t[x].right);
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

	for (uint32_t x = rb_first(t, root); x != NONE; x = rb_next(t, x))
		out[k++] = in[x];
	return k;
}

/* The unresolved nkey of a merged frame: @base's DSO at @ip (printed as the address). NONE on ENOMEM. */
static uint32_t nkey_addr(struct report *r, uint32_t base, uint64_t ip)
{
	struct nkey key = { .dso = r->nkeys[base].dso, .ip = ip, .start = ip,
			    .dso_rank = r->nkeys[base].dso_rank };

	return intern_nkey(r, &key);
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
static int merge_graph(struct report *r, struct entry *e, const struct entry *d)
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

				if (key == NONE || (to = child_at(r, to, key, r->nodes[chain[i]].ip)) == NONE)
					goto oom;
				chain[i] = to;
			}
			credit(r, e->root, chain, depth, r->nodes[n].hit);
		}
		/* the children, last first: taken from the end, they come in order */
		for (uint32_t c = rb_first(r->nrb, r->nodes[n].kids_root); c != NONE; c = rb_next(r->nrb, c)) {
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
static void merge_entry(struct report *r, struct entry *e, struct entry *d)
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
static uint32_t rb_find(const struct report *r, const struct rbn *t, uint32_t root, struct entry **in,
			const struct entry *key, entry_cmp cmp)
{
	uint32_t p;
	bool left;

	return rb_descend(r, t, root, list_at, in, key, cmp, true, &p, &left);
}

/*
 * @list (an event's entries as they were made) into perf's collapsed tree:
 * its tree of entries as they come, read into a new one where a key has a
 * collapse of its own (comm, srcline).  @t gets the nodes, node x's entry
 * left in @list[x]; the root is returned.  @tmp: room for @nr.
 */
static uint32_t collapsed_tree(struct report *r, struct rbn *t, struct entry **list, size_t nr, struct entry **tmp)
{
	uint32_t root = rb_build(r, t, list, nr, cmp_collapsed), p;
	bool left;

	if (!uses(r, SORT_COMM) && !uses(r, SORT_SRCLINE))
		return root;
	rb_read(t, root, list, tmp);
	memcpy(list, tmp, nr * sizeof(*tmp));
	if (!r->children && !r->sym_tree)
		return rb_build(r, t, list, nr, cmp_collapsed);
	/* --children, or sym_tree: an entry equal to one already in is merged into it (its duplicates, made as they came) */
	root = NONE;
	for (uint32_t z = 0; z < nr; z++) {
		uint32_t x = rb_descend(r, t, root, list_at, list, list[z], cmp_collapsed, true, &p, &left);

		if (x != NONE)
			merge_entry(r, list[x], list[z]);
		else
			rb_link(t, &root, z, p, left);
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
static int tree_order(struct report *r, struct entry **list, size_t *nrp, bool collapsed)
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
	rb_read(t, rb_build(r, t, tmp, nr, cmp_entry), tmp, list);
	r->in_tree = false;
	free(t);
	free(tmp);
	return 0;
}

/* Room for @more entries (dummies) and their member pairs, without moving them once made.  0 or -ENOMEM. */
static int group_room(struct report *r, size_t more)
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
static struct entry *add_dummy(struct report *r, const struct entry *m, const struct ds_evsel *lead)
{
	struct entry *d = &r->ents[r->nr_ents++];   /* room made by group_room */

	*d = *m;
	d->evsel = lead;
	d->self = d->acc = d->samples = d->lat_self = d->lat_acc = 0;
	d->depth = 0;   /* perf's dummy has an empty chain; @m's root, shared, has no graph: members draw none */
	return d;
}

static void set_pair(struct report *r, const struct entry *e, int k, const struct entry *m)
{
	r->gcols[e - r->ents].pair[k] = (uint32_t)(m - r->ents) + 1;
}

/* An event's entries in a tree as perf's hists keep them: node x's entry in e[x]. */
struct etree {
	struct rbn *t;
	struct entry **e;
	size_t nr;
	uint32_t root;
};

/* The entries of @evsel, as they were made, into @tree's collapsed tree (collapsed_tree). */
static void event_tree(struct report *r, const struct ds_evsel *evsel, struct etree *tree, struct entry **tmp)
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
static void pair_member(struct report *r, const struct ds_evsel *lead, int k, struct etree *lt,
			const struct etree *mt, bool *found)
{
	memset(found, 0, mt->nr * sizeof(*found));
	for (uint32_t x = rb_first(lt->t, lt->root); x != NONE; x = rb_next(lt->t, x)) {
		uint32_t y = rb_find(r, mt->t, mt->root, mt->e, lt->e[x], cmp_collapsed);

		if (y != NONE) {
			set_pair(r, lt->e[x], k, mt->e[y]);
			found[y] = true;
		}
	}
	for (uint32_t y = rb_first(mt->t, mt->root); y != NONE; y = rb_next(mt->t, y)) {
		uint32_t x;

		if (found[y])
			continue;
		if ((x = rb_find(r, lt->t, lt->root, lt->e, mt->e[y], cmp_collapsed)) == NONE) {
			x = (uint32_t)lt->nr;
			lt->e[lt->nr++] = add_dummy(r, mt->e[y], lead);
			rb_insert(r, lt->t, &lt->root, lt->e, x, cmp_collapsed);
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
static int link_group(struct report *r, size_t ev, struct entry **list, size_t *nr)
{
	const struct ds_evsel *lead = r->evsels[ev];
	size_t n = 0;
	int ret = -ENOMEM;

	for (size_t i = 0; i < r->nr_ents; i++)   /* the leader's and members' */
		n += in_group(r, r->ents[i].evsel) && r->group_leader[r->ents[i].evsel->idx] == lead->idx;
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

struct kid {
	uint32_t n;
	uint32_t rank;    /* its place in its parent's tree of children */
};

#define NAME_BUF 1024   /* perf's buffer for a call-graph name */

/*
 * A call-graph node's name into @buf (perf's callchain_list__sym_name into
 * its 1024 bytes: a longer C++ name is cut there, as perf's is).
 */
static const char *node_name(const struct report *r, const struct node *nd, char *buf, size_t len)
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
	const struct node *nodes = ((const struct report *)ctx)->nodes;
	const struct kid *a = pa, *b = pb;

	if (nodes[a->n].cumul != nodes[b->n].cumul)
		return nodes[a->n].cumul > nodes[b->n].cumul ? -1 : 1;
	return (a->rank > b->rank) - (a->rank < b->rank);
}

/* Children of @n worth showing (at least @min), largest first; malloc'ed. */
static struct kid *kids(struct report *r, uint32_t n, uint64_t min, size_t *nr)
{
	size_t nr_children = 0;
	struct kid *v;

	for (uint32_t c = r->nodes[n].first_child; c != NONE; c = r->nodes[c].next_sibling)
		nr_children++;
	v = malloc((nr_children + 1) * sizeof(*v));
	*nr = 0;
	if (!v)
		return NULL;
	for (uint32_t c = rb_first(r->nrb, r->nodes[n].kids_root), i = 0; c != NONE; c = rb_next(r->nrb, c), i++) {
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
static uint32_t run_next(const struct report *r, uint32_t n)
{
	const struct node *x = &r->nodes[n];

	return x->first_child != NONE && r->nodes[x->first_child].next_sibling == NONE && x->hit == 0 ?
	       x->first_child : NONE;
}

static void margin(struct outbuf *o, int extra)
{
	outbuf_puts(o, "            ");
	for (int i = 0; i < extra; i++)
		outbuf_putc(o, ' ');
}

/* A call-graph value: @v's share of @total ("12.34%"), or with -g ...,period the period itself */
static void print_gvalue(const struct report *r, uint64_t v, uint64_t total)
{
	if (r->graph_period) {
		outbuf_printf(r->out, "%llu", (unsigned long long)v);
		return;
	}
	outbuf_fixed2(r->out, total ? v * 100.0 / total : 0.0, 0);
	outbuf_putc(r->out, '%');
}

/* The period under @n's children (perf's children_hit) */
static uint64_t children_hit(const struct report *r, uint32_t n)
{
	return r->nodes[n].cumul - r->nodes[n].hit;
}

/* fractal: the least branch under @n shown, the threshold's share of its children's period (rounded up) */
static uint64_t rel_min(const struct report *r, uint32_t n)
{
	double x = children_hit(r, n) * r->graph_pct / 100.0;
	uint64_t m = (uint64_t)x;

	return m < x ? m + 1 : m;
}

/* "|  |  --12.34%--" and the rest of a graph line's left part, for a branch at @depth */
static void branch_head(struct report *r, int depth, uint64_t mask, bool first, uint64_t v, uint64_t total, int left)
{
	struct outbuf *o = r->out;

	margin(o, left);
	for (int d = 0; d < depth; d++) {
		outbuf_putc(o, mask & (1ULL << d) ? '|' : ' ');
		if (first && d == depth - 1) {
			outbuf_puts(o, "--");
			print_gvalue(r, v, total);
			outbuf_puts(o, "--");
		} else
			outbuf_puts(o, "          ");
	}
}

/*
 * @parent's branches at @depth: shares of @total, those under @min hidden.
 * fractal (perf's graph relative): a branch's total and threshold are its
 * parent's children's period, and what the threshold hid is one "[...]".
 */
static void print_level(struct report *r, uint32_t parent, uint64_t total, uint64_t min, int depth,
			uint64_t mask, int left)
{
	struct outbuf *o = r->out;
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
			outbuf_puts(o, mask & (1ULL << d) ? "|          " : "           ");
		outbuf_putc(o, '\n');
		for (uint32_t n = v[k].n, i = 0; n != NONE; n = run_next(r, n), i++) {
			branch_head(r, depth, nmask, !i, r->nodes[n].cumul, total, left);
			outbuf_puts(o, node_name(r, &r->nodes[n], buf, sizeof(buf)));
			outbuf_putc(o, '\n');
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
		outbuf_puts(o, "[...]\n");
	}
	free(v);
}

static void print_graph(struct report *r, const struct entry *e, uint64_t total, uint64_t min)
{
	struct outbuf *o = r->out;
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
				outbuf_puts(o, "            |\n            ---");
				left = 3;
			} else {
				margin(o, left);
			}
			outbuf_puts(o, node_name(r, &r->nodes[n], buf, sizeof(buf)));
			outbuf_putc(o, '\n');
			wrote = true;
		}
	}
	free(v);
	if (r->graph_mode == GM_FRACTAL)   /* the first branches: shares of the entry's own period */
		print_level(r, root, e->acc, rel_min(r, root), 1, 1, left);
	else
		print_level(r, root, total, min, 1, 1, left);
	if (wrote || o->len != start || o->flushes != flushes)
		outbuf_putc(o, '\n');
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
static bool flat_collect(struct report *r, uint32_t n, uint64_t min, struct flat_list *l, int depth)
{
	bool ok = true;

	if (depth < 4096)
		for (uint32_t c = rb_first(r->nrb, r->nodes[n].kids_root); c != NONE && ok; c = rb_next(r->nrb, c))
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
static void print_flat(struct report *r, const struct entry *e, uint64_t total, uint64_t min)
{
	struct outbuf *o = r->out;
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
			outbuf_putc(o, ' ');
		} else {
			outbuf_puts(o, "           ");
			print_gvalue(r, r->nodes[n].cumul, total);
			outbuf_putc(o, '\n');
		}
		while (depth--) {
			if (!folded)
				outbuf_puts(o, "                ");
			outbuf_puts(o, node_name(r, &r->nodes[path[depth]], buf, sizeof(buf)));
			if (!folded || !depth)
				outbuf_putc(o, '\n');
			else
				outbuf_putc(o, ';');
		}
		if (!folded)
			outbuf_putc(o, '\n');
	}
out:
	free(path);
	free(order);
	free(l.v);
}

/* The newest comm of the thread @tid: perf's "Pid:Command" names the thread as it is at the end. */
static const char *thread_comm(const struct report *r, int32_t tid, const char *fallback)
{
	struct ds_thread *t = r->machine ? ds_machine__thread(r->machine, -1, tid) : NULL;

	return t ? ds_thread__comm(t) : fallback;
}

/* The branch keys' columns in @w widened for @b's ends, as perf sizes them (hists__calc_col_len) */
static void branch_widths(const struct branch_ends *b, size_t *w)
{
	size_t l;

	if ((l = branch_dso__width(&b->from)) > w[SORT_DSO_FROM])
		w[SORT_DSO_FROM] = l;
	if ((l = branch_dso__width(&b->to)) > w[SORT_DSO_TO])
		w[SORT_DSO_TO] = l;
	if ((l = branch_side__width(&b->from)) > w[SORT_SYM_FROM])
		w[SORT_SYM_FROM] = l;
	if ((l = branch_side__width(&b->to)) > w[SORT_SYM_TO])
		w[SORT_SYM_TO] = l;
}

/*
 * The sort columns' widths into @w (SORT_MAX entries): each title's, or
 * wider for the longest value of the section's entries, as perf sizes them.
 */
static void column_widths(const struct report *r, struct entry **list, size_t nr, size_t *w)
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
		if ((l = strlen(short_dso(r, list[i]->dso))) > w[SORT_DSO])
			w[SORT_DSO] = l;
		/* an entry without a symbol widens the object column to an address's 16 digits, as
		 * perf (hists__set_unres_dso_col_len), but not under a --dsos list */
		if (!list[i]->sym && !r->dsos.n && w[SORT_DSO] < 16)
			w[SORT_DSO] = 16;
		if ((l = sym_width(r, list[i], buf, sizeof(buf))) > w[SORT_SYM])
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
static int group_members(const struct report *r, size_t ev)
{
	const struct ds_evsel *e = r->evsels[ev];

	return in_group(r, e) && r->group_slot[e->idx] == 0 ? r->group_size[e->idx] : 0;
}

/* The index of member @k of the group @ev leads among the events seen, SIZE_MAX if it had no sample. */
static size_t member_index(const struct report *r, size_t ev, int k)
{
	const struct ds_evsel *m = ds_reader__evsel(r->reader, (size_t)(r->evsels[ev]->idx + k));

	for (size_t i = 0; i < r->nr_evsels; i++)
		if (r->evsels[i] == m)
			return i;
	return SIZE_MAX;
}

/* Does the section of the group @ev leads show member @k?  perf leaves out a member without samples (--skip-empty). */
static bool member_shown(const struct report *r, size_t ev, int k)
{
	size_t i = member_index(r, ev, k);

	return i != SIZE_MAX && r->ev_passed[i];
}

/* The columns of each kind (Overhead, Samples, ...) in @ev's section: its group's members shown, else 1. */
static int column_count(const struct report *r, size_t ev)
{
	int n = 0;

	for (int k = 0; k < group_members(r, ev); k++)
		n += member_shown(r, ev, k);
	return group_members(r, ev) ? n : 1;
}

/* The group's period (and, with @samples, its samples), summed over its members as perf's header counts them. */
static uint64_t group_total(const struct report *r, size_t ev, uint64_t *samples)
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
static void print_group_title(struct report *r, size_t ev)
{
	struct outbuf *o = r->out;
	const struct ds_evsel *lead = r->evsels[ev];
	uint64_t n;

	group_total(r, ev, &n);
	report_print_unit(o, n);
	outbuf_printf(o, " of events '%s { ", r->group_name[lead->idx]);
	for (int k = 0, first = 1; k < group_members(r, ev); k++) {
		if (!member_shown(r, ev, k))
			continue;
		outbuf_printf(o, "%s%s", first ? "" : ", ", ds_reader__evsel(r->reader, (size_t)(lead->idx + k))->name);
		first = 0;
	}
	outbuf_puts(o, " }'");
}

/* The section's head: samples, event, event count, then the column titles and their dotted rule. */
static void print_section_head(struct report *r, size_t ev, bool first, bool children, const size_t *w)
{
	static const char *const titles[SORT_MAX] = { "Command", "Shared Object", "Symbol", "    Pid:Command", "Source:Line",
						      "Trace output", "CPU", "Source Shared Object",
						      "Target Shared Object", "Source Symbol", "Target Symbol",
						      "Basic Block Cycles" };
	struct outbuf *o = r->out;
	bool group = group_members(r, ev) != 0;
	int cols = column_count(r, ev);

	/* perf's "#" line above the first section only */
	outbuf_puts(o, !first ? "# Samples: " : "#\n# Samples: ");
	if (group) {
		print_group_title(r, ev);
	} else {
		report_print_unit(o, r->ev_samples[ev]);
		outbuf_printf(o, " of event '%s'", r->ev_names[ev] ? r->ev_names[ev] : "?");
	}
	if (r->wo.filter.time_str)
		outbuf_printf(o, " (time slices: %s)", r->wo.filter.time_str);
	outbuf_printf(o, "\n# Event count (approx.): %llu\n#\n# ",
		      (unsigned long long)(group ? group_total(r, ev, NULL) : r->ev_period[ev]));
	if (group && children) {   /* one 8-wide column a member, each title right-aligned over its own */
		outbuf_printf(o, "%*s  %*s", 8 * cols, "Children", 8 * cols, "Self");
	} else if (group) {
		outbuf_printf(o, "%*s", 8 * cols, "Overhead");
	} else if (r->latency)
		outbuf_puts(o, children ? "Children  Latency      Self   Latency" : "Overhead   Latency");
	else
		outbuf_puts(o, children ? "Children      Self" : "Overhead");
	if (r->show_samples)
		outbuf_printf(o, "  %*s", 12 * cols, "Samples");
	if (r->show_period)
		outbuf_printf(o, "  %*s", 12 * cols, "Period");
	/* perf prints each title through a 1024-byte buffer: a wider column's title is cut there */
	for (int i = 0; i < r->nr_col; i++)
		outbuf_printf(o, "  %-*s", (int)(w[r->col[i]] < 1023 ? w[r->col[i]] : 1023), titles[r->col[i]]);
	if (r->ipc_columns)
		outbuf_puts(o, "  IPC   [IPC Coverage]");
	outbuf_puts(o, "\n# ........");
	for (int k = 1; k < cols; k++)
		outbuf_puts(o, "........");
	if (children && r->latency)
		outbuf_puts(o, "  .......");
	if (children)
		report_rule(o, (size_t)cols * 8);
	if (r->latency)
		outbuf_puts(o, "  ........");
	if (r->show_samples)
		report_rule(o, (size_t)cols * 12);
	if (r->show_period)
		report_rule(o, (size_t)cols * 12);
	for (int i = 0; i < r->nr_col; i++) {
		outbuf_puts(o, "  ");
		for (size_t k = 0; k < w[r->col[i]]; k++)
			outbuf_putc(o, '.');
	}
	if (r->ipc_columns)
		outbuf_puts(o, "  ....................");
	outbuf_puts(o, "\n#\n");
}

/* Branch key @key's column of branch @b, padded to its width @w[@key] */
static void branch_column(struct outbuf *o, int key, const struct branch_ends *b, const size_t *w)
{
	char buf[SYM_TEXT_MAX];

	switch (key) {
	case SORT_DSO_FROM:
	case SORT_DSO_TO: {
		const struct branch_side *end = key == SORT_DSO_FROM ? &b->from : &b->to;

		report_column_cut(o, end->dso ? end->dso : "[unknown]", w[key]);
		return;
	}
	case SORT_SYM_FROM:
	case SORT_SYM_TO:
		branch_side__text(key == SORT_SYM_FROM ? &b->from : &b->to, buf, sizeof(buf));
		break;
	default:   /* perf's "%hd" of the cycles, "-" for none */
		if (b->cycles)
			snprintf(buf, sizeof(buf), "%d", (int16_t)b->cycles);
		else
			strcpy(buf, "-");
		break;
	}
	report_column(o, buf, w[key]);
}

/* An entry's sort columns, each padded to its width but a last symbol or source line (as perf). */
static void print_entry_columns(struct report *r, const struct entry *e, const size_t *w)
{
	struct outbuf *o = r->out;
	char buf[SYM_TEXT_MAX];

	for (int k = 0; k < r->nr_col; k++) {
		bool last = k + 1 == r->nr_col && !r->ipc_columns &&
			    (r->col[k] == SORT_SYM || r->col[k] == SORT_SRCLINE || r->col[k] == SORT_TRACE);

		switch (r->col[k]) {
		case SORT_COMM: report_column_cut(o, e->comm, w[SORT_COMM]); break;
		case SORT_DSO: report_column(o, short_dso(r, e->dso), last ? 0 : w[SORT_DSO]); break;
		case SORT_PID:
			snprintf(buf, sizeof(buf), "%7d:%s", e->pid, thread_comm(r, e->pid, e->comm));
			report_column(o, buf, last ? 0 : w[SORT_PID]);
			break;
		case SORT_SYM: {
			size_t len = (size_t)sym_text(e, buf, sizeof(buf));

			/* (not counted in the column's width: perf's is the name's) */
			if (e->object && len < sizeof(buf))
				snprintf(buf + len, sizeof(buf) - len, "+0x%llx", (unsigned long long)e->obj_off);
			report_column(o, buf, last ? 0 : w[SORT_SYM]);
			break;
		}
		case SORT_SRCLINE:
			report_column(o, e->srcline ? e->srcline : "?", last ? 0 : w[SORT_SRCLINE]);
			break;
		case SORT_TRACE:   /* perf's "%-.*s": cut to the column, never padded when last */
			if (last)
				outbuf_printf(o, "  %.*s", (int)w[SORT_TRACE], e->trace ? e->trace : "");
			else
				report_column_cut(o, e->trace ? e->trace : "", w[SORT_TRACE]);
			break;
		case SORT_CPU:   /* perf's "%*.*d": zero-padded to the column ("-001" for none) */
			snprintf(buf, sizeof(buf), "%*.*d", (int)w[SORT_CPU], (int)w[SORT_CPU], e->cpu);
			report_column(o, buf, last ? 0 : w[SORT_CPU]);
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
static void print_member_columns(struct report *r, size_t ev, const struct entry *e, bool acc)
{
	struct outbuf *o = r->out;

	outbuf_puts(o, "  ");
	for (int k = 0; k < group_members(r, ev); k++) {
		size_t i = member_index(r, ev, k);
		uint64_t total = i == SIZE_MAX ? 0 : r->ev_period[i];

		if (!member_shown(r, ev, k))
			continue;
		outbuf_putc(o, ' ');
		outbuf_fixed2(o, total ? member_period(r, e, k, acc) * 100.0 / total : 0.0, 6);
		outbuf_putc(o, '%');
	}
}

/* A group's entry: each member's samples (-n), or with @period its self period (--show-total-period). */
static void print_member_samples(struct report *r, size_t ev, const struct entry *e, bool period)
{
	outbuf_puts(r->out, "  ");
	for (int k = 0; k < group_members(r, ev); k++) {
		const struct entry *m = member_entry(r, e, k);

		if (member_shown(r, ev, k))
			outbuf_printf(r->out, "%12llu", (unsigned long long)(!m ? 0 : period ? m->self : m->samples));
	}
}

/* "  12.34%": @part of @total, the number right-aligned in @width. */
static void print_percent(struct outbuf *o, uint64_t part, uint64_t total, int width)
{
	outbuf_puts(o, "  ");
	outbuf_fixed2(o, total ? part * 100.0 / total : 0.0, width);
	outbuf_putc(o, '%');
}

/* One event's section of the report: its head, then each entry above --percent-limit with its call graph. */
static void print_section(struct report *r, size_t ev, bool first, struct entry **list, size_t nr)
{
	struct outbuf *o = r->out;
	bool children = r->children && r->any_callchain, graph = r->graph && r->any_callchain;
	uint64_t total = r->ev_period[ev], graph_total = r->ev_passed_period[ev];
	/* call-graph branches below 0.5% of the total are hidden, or below --percent-limit as in perf;
	 * with --percentage relative, perf cuts by the shown samples' total but prints shares of all */
	double pct = r->graph_min >= 0 ? r->graph_min : r->percent_limit > 0 ? r->percent_limit : 0.5;
	uint64_t min = (uint64_t)(total * pct / 100);
	size_t w[SORT_MAX];

	r->graph_pct = pct;
	column_widths(r, list, nr, w);
	if (!cli_quiet)   /* -q: perf prints the entries only */
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
			outbuf_printf(o, "  %12llu", (unsigned long long)e->samples);
		if (r->show_period && group_members(r, ev))
			print_member_samples(r, ev, e, true);
		else if (r->show_period)
			outbuf_printf(o, "  %12llu", (unsigned long long)e->self);
		print_entry_columns(r, e, w);
		if (r->ipc_columns && r->branch_keys)
			/* perf's ipc_lbr: its IPC and coverage come from annotating the symbol, which its
			 * stdio report does not do (0 for a symbol, as measured); none without a symbol */
			outbuf_puts(o, e->sym ? "  0.00  [  0.0%]      " : "  -                   ");
		else if (r->ipc_columns)   /* perf's ipc_null: no branch data, no IPC */
			outbuf_puts(o, "  -      -            ");
		outbuf_putc(o, '\n');
		if (graph && (r->graph_mode == GM_FLAT || r->graph_mode == GM_FOLDED))
			print_flat(r, e, graph_total, min);
		else if (graph)
			print_graph(r, e, graph_total, min);
	}
	outbuf_puts(o, "\n\n");
}

/* Did any sample pass the CPU and time filters (the thread filters' count in the totals)? */
static bool any_samples(const struct report *r)
{
	for (size_t i = 0; i < r->nr_evsels; i++)
		if (r->ev_passed[i])
			return true;
	return false;
}

/* Did a sample run beside others (a parallelism above 1): is latency not the overhead? */
static bool latency_differs(const struct report *r)
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
static bool perf_trees(const struct report *r, size_t ev)
{
	return (r->children && r->any_callchain) || (r->sym_tree && !group_members(r, ev));
}

static int print_report(struct report *r)
{
	/* (perf's branch view has no latency column) */
	r->latency = r->latency && !r->branch_keys && latency_differs(r);
	struct entry **list = malloc((r->nr_ents + 1) * sizeof(*list));

	if (!list)
		return -ENOMEM;
	if (r->header && r->reader) {
		outbuf_flush(r->out);
		header_print(stdout, r->wo.common.input, r->reader);
		fflush(stdout);
	} else if (!cli_quiet) {
		outbuf_puts(r->out, "# To display the perf.data header info, please use --header/--header-only options.\n#\n");
	}
	/* a column left out for its single --comm, --dsos or -S value is named here, in the order of the sort keys, as perf does */
	for (int i = 0; i < r->nr_sort; i++) {
		if (r->sort[i] == SORT_COMM && r->wo.filter.nr_comms == 1)
			outbuf_printf(r->out, "# comm: %s\n", r->wo.filter.comms[0]);
		else if (r->sort[i] == SORT_DSO && r->dsos.n == 1)
			outbuf_printf(r->out, "# dso: %s\n", r->dsos.v[0]);
		else if (r->sort[i] == SORT_SYM && r->syms.n == 1)
			outbuf_printf(r->out, "# symbol: %s\n", r->syms.v[0]);
	}
	if (!r->nr_ents && !any_samples(r)) {
		/* no sample (none recorded, or none on the CPUs or times asked): perf says so and ends there */
		outbuf_flush(r->out);
		fprintf(stderr, "Error:\nThe %s data has no samples!\n", r->wo.common.input);
		free(list);
		return 0;
	}
	if (!cli_quiet)
		outbuf_printf(r->out, "#\n# Total Lost Samples: %llu\n", (unsigned long long)r->lost_samples);
	/* sections in the order of the file's events, as perf's evlist (not of their first samples) */
	size_t order[sizeof(r->evsels) / sizeof(*r->evsels)];

	for (size_t i = 0; i < r->nr_evsels; i++) {
		size_t j = i;

		for (; j > 0 && r->evsels[order[j - 1]]->idx > r->evsels[i]->idx; j--)
			order[j] = order[j - 1];
		order[j] = i;
	}
	bool printed = false;

	for (size_t oi = 0; oi < r->nr_evsels; oi++) {
		size_t nr = 0, ev = order[oi];

		if (in_group(r, r->evsels[ev]) && r->group_slot[r->evsels[ev]->idx])
			continue;   /* a group member: a column of its leader's section */
		if (!r->ev_passed[ev])
			continue;   /* no samples (a group's leader whose members alone had some): perf shows none (--skip-empty) */
		if (group_members(r, ev)) {
			if (link_group(r, ev, list, &nr)) {
				free(list);
				return -ENOMEM;
			}
		} else {
			for (size_t i = 0; i < r->nr_ents; i++)
				if (r->ents[i].evsel == r->evsels[ev])
					list[nr++] = &r->ents[i];
		}
		if (nr > 1 && !(perf_trees(r, ev) && tree_order(r, list, &nr, group_members(r, ev)) == 0))
			qsort_r(list, nr, sizeof(*list), cmp_entry, r);
		print_section(r, ev, !printed, list, nr);
		printed = true;
	}
	/* perf's "#" below the lost samples, else the first section's */
	if (!cli_quiet)
		outbuf_puts(r->out, printed ? "#\n" : "#\n#\n");
	free(list);
	return r->error;   /* a call graph print_flat() could not make */
}

/* ---- command line -------------------------------------------------------- */

static void report_usage(FILE *f)
{
	fprintf(f,
		"usage: dstack report [options]\n"
		"  --stdio                  text output (the only output; accepted for perf compatibility)\n"
		"  --children | --no-children  cumulative (caller-inclusive) profile (perf's default\n"
		"                           where callchains were recorded), or self only\n"
		"  --no-branch-stack        the samples of a recording with branch stacks (-b, LBR):\n"
		"                           the only view dstack has of them; without it, a warning\n"
		"  --sort KEY[,KEY...]      pid, comm, dso, symbol, cpu, srcline, trace; perf's\n"
		"                           prefixes (sym); default comm,dso,symbol, or trace\n"
		"                           for a recording of tracepoints only\n"
		"  -g [graph|fractal|flat|folded,][MIN,]caller|callee|none[,percent|period]\n"
		"                           call-graph print type, order (or none) and values\n"
		"                           (default: callee; caller with --children); MIN: the\n"
		"                           smallest branch shown, in percent (default 0.5)\n"
		"  -G, --inverted           perf's alias of -g caller\n"
		"  -U, --hide-unresolved    no sample at an address without a symbol, no such frame\n"
		"  -n, --show-nr-samples    the Samples column\n"
		"  --show-total-period      the Period column (each entry's own period)\n"
		"  --percent-limit P        hide entries and call-graph branches below P%%\n"
		"  --percentage relative|absolute  shares of the samples shown, or of all (default)\n"
		"  --dsos NAME[,...]        only samples in these objects (short or full name); others\n"
		"                           count in the totals, as in perf\n"
		"  -S, --symbols NAME[,...] only samples in these functions (symbol-table names)\n"
		"  --header                 the recording's header first\n"
		"  --header-only            only the recording's header\n"
		"  --stats                  only the records read, by type, and each event's samples\n%s",
		walk_usage());
}

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

static int parse_sort(struct report *r, const char *v)
{
	char tmp[256];

	snprintf(tmp, sizeof(tmp), "%s", v);
	r->nr_sort = 0;
	for (char *t = strtok(tmp, ","); t; t = strtok(NULL, ",")) {
		int k = sort_key_of(t);

		if (k == -2) {
			usage_error("report", "not supported: --sort %s (a perf sort key dstack does not have)", t);
			return -1;
		}
		if (k < 0 || r->nr_sort == SORT_MAX) {
			usage_error("report", "unknown --sort key '%s' (pid, comm, dso, symbol, cpu, srcline, trace; with branch stacks dso_from, dso_to, symbol_from, symbol_to, cycles)", t);
			return -1;
		}
		r->sort[r->nr_sort++] = k;
	}
	/* perf's string tests on its sort order, not on the keys they name */
	r->sort_sym_first = !strncmp(v, "sym", 3);
	r->ipc_columns = strstr(v, "symbol") != NULL;
	return r->nr_sort ? 0 : -1;
}

/*
 * perf's -g/--call-graph of report: a print type (graph, fractal, flat,
 * folded; "none"), an order (caller, callee), the key "function", the
 * values (percent, period) and a number: the smallest branch shown, in
 * percent.  0, or -1 after saying why ("address" and "count" are not
 * done).
 */
static int parse_call_graph(struct report *r, const char *v, const char **order)
{
	char tmp[128], *end;
	bool threshold = false;

	snprintf(tmp, sizeof(tmp), "%s", v);
	for (char *t = strtok(tmp, ","); t; t = strtok(NULL, ",")) {
		if (!strcmp(t, "caller") || !strcmp(t, "callee") || !strcmp(t, "none")) {
			*order = !strcmp(t, "caller") ? "caller" : !strcmp(t, "callee") ? "callee" : "none";
		} else if (!strcmp(t, "graph") || !strcmp(t, "fractal") || !strcmp(t, "flat") || !strcmp(t, "folded")) {
			r->graph_given = true;
			r->graph_mode = !strcmp(t, "graph") ? GM_GRAPH : !strcmp(t, "fractal") ? GM_FRACTAL :
					!strcmp(t, "flat") ? GM_FLAT : GM_FOLDED;
		} else if (!strcmp(t, "function") || !strcmp(t, "percent") || !strcmp(t, "period")) {
			r->graph_given = true;
			if (strcmp(t, "function"))
				r->graph_period = !strcmp(t, "period");
		} else if (!threshold && (r->graph_min = strtod(t, &end), end != t && !*end) && r->graph_min >= 0) {
			threshold = true;
		} else {
			usage_error("report", "-g %s: dstack prints graph, fractal, flat and folded call graphs (caller "
				    "or callee, a threshold in percent, by function, as percents or periods): '%s' is not "
				    "supported", v, t);
			return -1;
		}
	}
	return 0;
}

/* A comma list's names added to @l (perf's strlist; repeated options add up).  0, or -1 when out of memory (said). */
static int add_names(struct name_list *l, const char *v)
{
	char *copy = strdup(v), *save = NULL;

	if (!copy)
		goto oom;
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		char **nv = realloc(l->v, (l->n + 1) * sizeof(*nv));

		if (!nv || !(nv[l->n] = strdup(t))) {
			if (nv)
				l->v = nv;
			free(copy);
			goto oom;
		}
		l->v = nv;
		l->n++;
	}
	free(copy);
	return 0;
oom:
	fprintf(stderr, "dstack report: out of memory\n");
	return -1;
}

static void free_names(struct name_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
}

static int parse_args(struct report *r, int argc, char **argv)
{
	const char *order = NULL, *v;

	for (int i = 1; i < argc; i++) {
		int c = walk_opt(&r->wo, "report", argc, argv, &i);

		if (c < 0)
			return EXIT_USAGE;
		if (c)
			continue;
		if (!strcmp(argv[i], "--stdio")) {
			continue;
		} else if (!strcmp(argv[i], "--children")) {
			r->children = true;
		} else if (!strcmp(argv[i], "--no-children")) {
			r->children = false;
		} else if (!strcmp(argv[i], "--no-branch-stack")) {
			r->no_branch_stack = true;   /* the only view dstack has: say so, warn not */
		} else if ((v = opt_value("--sort", argc, argv, &i)) || (v = opt_value("-s", argc, argv, &i))) {
			if (parse_sort(r, v))
				return EXIT_USAGE;
			r->sort_given = true;
		} else if (!strcmp(argv[i], "-g") && (i + 1 >= argc || argv[i + 1][0] == '-')) {
			r->graph_given = true;   /* perf's -g alone: its default graph */
		} else if ((v = opt_value("-g", argc, argv, &i)) || (v = opt_value("--call-graph", argc, argv, &i))) {
			if (parse_call_graph(r, v, &order))
				return EXIT_USAGE;
		} else if (!strcmp(argv[i], "-G") || !strcmp(argv[i], "--inverted")) {
			if (parse_call_graph(r, "caller", &order))   /* perf's alias of -g caller */
				return EXIT_USAGE;
		} else if ((v = opt_value("--percent-limit", argc, argv, &i))) {
			char *end;

			r->percent_limit = strtod(v, &end);
			if (end == v || *end || r->percent_limit < 0) {
				usage_error("report", "bad --percent-limit '%s'", v);
				return EXIT_USAGE;
			}
		} else if ((v = opt_value("--percentage", argc, argv, &i))) {
			if (strcmp(v, "relative") && strcmp(v, "absolute")) {
				usage_error("report", "--percentage takes relative or absolute, not '%s'", v);
				return EXIT_USAGE;
			}
			r->relative = !strcmp(v, "relative");
		} else if ((v = opt_value("--dsos", argc, argv, &i))) {
			if (add_names(&r->dsos, v))
				return EXIT_FAILURE;
		} else if ((v = opt_value("-S", argc, argv, &i)) || (v = opt_value("--symbols", argc, argv, &i))) {
			if (add_names(&r->syms, v))
				return EXIT_FAILURE;
		} else if (!strcmp(argv[i], "-n") || !strcmp(argv[i], "--show-nr-samples")) {
			r->show_samples = true;
		} else if (!strcmp(argv[i], "--show-total-period")) {
			r->show_period = true;
		} else if (!strcmp(argv[i], "-U") || !strcmp(argv[i], "--hide-unresolved")) {
			r->hide_unresolved = true;
		} else if (!strcmp(argv[i], "--inline")) {
			/* perf's default: inlined functions in the call graph */
		} else if (!strcmp(argv[i], "--header")) {
			r->header = true;
		} else if (!strcmp(argv[i], "--header-only")) {
			r->header_only = true;
		} else if (!strcmp(argv[i], "--stats")) {
			r->stats = true;
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			report_usage(stdout);
			return -1;
		} else {
			usage_error("report", "unknown option '%s'", argv[i]);
			report_usage(stderr);
			return EXIT_USAGE;
		}
	}
	r->graph = !order || strcmp(order, "none");
	r->graph_given |= order && strcmp(order, "none");
	r->caller = order && strcmp(order, "none") ? !strcmp(order, "caller") : r->children;
	/* perf resolves a chain in the order it shows it: past --max-stack, caller first keeps the outermost */
	r->wo.max_stack_from_root = r->caller;
	return EXIT_OK;
}

/* One counter read delivered as a sample of its event (ds_profile__split_reads) */
static int stats_read(void *ctx, const struct ds_evsel *evsel, uint64_t period)
{
	struct report *r = ctx;

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
static int stats_event(void *ctx, const struct ds_event *ev)
{
	struct report *r = ctx;

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
static void print_stats(struct report *r, const struct ds_session_stats *st)
{
	struct outbuf *o = r->out;
	uint64_t total = 0, n[DS_REC_MAX];
	uint32_t compressed = ds_reader__compressed_type(r->reader);

	/* the compressed records count as read, besides the records they hold */
	for (uint32_t t = 0; t < DS_REC_MAX; t++)
		total += n[t] = st->records[t] + (t == compressed ? ds_reader__compressed_records(r->reader) : 0);
	outbuf_printf(o, "\nAggregated stats:\n%20s events: %10llu\n", "TOTAL", (unsigned long long)total);
	for (uint32_t t = 0; t < DS_REC_MAX; t++)
		if (n[t] && stat_type_name(t))
			outbuf_printf(o, "%20s events: %10llu  (%4.1f%%)\n", stat_type_name(t),
				      (unsigned long long)n[t], n[t] * 100.0 / total);
	for (size_t i = 0; i < ds_reader__nr_evsels(r->reader); i++) {
		const struct ds_evsel *e = ds_reader__evsel(r->reader, i);

		if (e->idx < 0 || e->idx >= EVENTS_MAX || (!r->stat_samples[e->idx] && !r->stat_lost[e->idx]))
			continue;
		outbuf_printf(o, "%s stats:\n", e->name);
		if (r->stat_samples[e->idx])
			outbuf_printf(o, "%20s events: %10llu\n", "SAMPLE", (unsigned long long)r->stat_samples[e->idx]);
		if (r->stat_lost[e->idx])
			outbuf_printf(o, "%20s events: %10llu\n", "LOST_SAMPLES", (unsigned long long)r->stat_lost[e->idx]);
	}
}

/* The walk is over, its names still valid: print. */
static void report_at_end(struct report *r, struct ds_profile *p, int status)
{
	struct ds_profile_stats st;
	char size[DSI_SIZE_TEXT];

	ds_profile__stats(p, &st);
	r->lost_samples = st.session.lost_samples;
	if (status != EXIT_OK && !r->nr_ents && !r->stats)
		return;
	r->out = outbuf_new(STDOUT_FILENO);
	if (r->out && r->stats)
		print_stats(r, &st.session);
	else if (!r->out || (flush_paths(r), print_report(r)))
		fprintf(stderr, "dstack report: out of memory\n");
	if (r->out)
		outbuf_flush(r->out);
	outbuf_delete(r->out);
	r->out = NULL;
	if (r->unkept)
		fprintf(stderr, "dstack: %s: the report's entries and call graphs reached %s: %llu of %llu %s "
			"counted in the totals only, in no entry (memory budget: DSTACK_MEMORY_BUDGET)\n",
			r->wo.common.input, dsi_size_text(r->max_held, size), (unsigned long long)r->unkept,
			(unsigned long long)r->seq, r->branch_keys ? "branches" : "samples");
}

/* The report and everything it holds. */
static void report_free(struct report *r)
{
	uint64_t k, v;

	free(r->brs);
	for (size_t i = 0; dsi_hashmap__next(&r->inlined_names, &i, &k, &v);)
		free((void *)(uintptr_t)v);
	dsi_hashmap__exit(&r->inlined_names);
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
	free_names(&r->dsos);
	free_names(&r->syms);
	free(r);
}

/* One group of the file's GROUP_DESC into perf's group view, if it qualifies (setup_groups). */
static void add_group(void *ctx, const char *name, uint32_t leader, uint32_t members)
{
	struct report *r = ctx;
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
static void setup_groups(struct report *r)
{
	for (int i = 0; i < 64; i++)
		r->group_leader[i] = -1;
	header_for_each_group(r->reader, add_group, r);
}

/* Are the --sort keys given ones the branch view takes (the branch keys, and pid, comm, dso, symbol, cpu)? */
static bool branch_sort_keys(const struct report *r)
{
	for (int i = 0; i < r->nr_sort; i++)
		if (r->sort[i] == SORT_SRCLINE || r->sort[i] == SORT_TRACE)
			return false;
	return true;
}

/* Does --sort name a key of the branch view alone (dso_from ... cycles)? */
static bool branch_key_given(const struct report *r)
{
	for (int i = 0; i < r->nr_sort; i++)
		if (r->sort[i] >= SORT_DSO_FROM)
			return true;
	return false;
}

static void settle_sort_keys(struct report *r);

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
static bool branch_view_setup(struct report *r)
{
	static const int defaults[] = { SORT_COMM, SORT_DSO_FROM, SORT_SYM_FROM, SORT_SYM_TO, SORT_CYCLES };
	const struct sample_filter *f = &r->wo.filter;
	bool wanted = !r->no_branch_stack && !r->stats && !ds_reader__info(r->reader)->pipe &&
		      ds_header_info__has_feature(ds_reader__info(r->reader), DS_FEAT_BRANCH_STACK);

	for (size_t i = 0; wanted && i < ds_reader__nr_evsels(r->reader); i++)
		if (ds_reader__evsel(r->reader, i)->attr.sample_type & DS_SAMPLE_STACK_USER)
			wanted = false;
	if (!wanted)
		return !branch_key_given(r);
	if ((r->sort_given && !branch_sort_keys(r)) || r->graph_given || r->show_samples || r->show_period ||
	    r->hide_unresolved || r->relative || r->dsos.n || r->syms.n || f->nr_comms || f->nr_pids ||
	    f->nr_tids || r->wo.time_mode != DS_PROFILE_CPU) {
		fprintf(stderr, "dstack report: the recording has branch stacks; perf report shows its branch view, "
			"which dstack has with its own keys and pid, comm, dso, symbol and cpu, and "
			"without -g, -n, --show-total-period, -U, --percentage, --comm, --pid, --tid, --dsos or -S: "
			"the samples are shown (perf report --no-branch-stack)\n");
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
static bool elided(const struct report *r, int key)
{
	return (key == SORT_COMM && r->wo.filter.nr_comms == 1) || (key == SORT_DSO && r->dsos.n == 1) ||
	       (key == SORT_SYM && r->syms.n == 1);
}

/* The sort keys as shown (r->col: without the elided columns) and as a mask (all of them). */
static void settle_sort_keys(struct report *r)
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
	r->sym_tree = uses(r, SORT_SYM) && !uses(r, SORT_DSO);
}

int cmd_report(int argc, char **argv)
{
	struct report *r = calloc(1, sizeof(*r));
	struct walk w;
	int ret;

	if (!r) {
		fprintf(stderr, "dstack report: out of memory\n");
		return EXIT_INPUT;
	}
	walk_opts_init(&r->wo);
	r->graph_min = -1;
	r->max_held = cli_budget();
	r->children = true;   /* perf's default where callchains were recorded */
	r->wo.want_shapes = true;
	r->nr_sort = 3;
	r->sort[0] = SORT_COMM;
	r->sort[1] = SORT_DSO;
	r->sort[2] = SORT_SYM;
	ret = parse_args(r, argc, argv);
	if (ret) {
		free(r);
		return ret < 0 ? EXIT_OK : ret;
	}
	settle_sort_keys(r);
	r->wo.transient_comms = true;   /* a ":TID" the report keeps, it copies (kept_comm) */
	r->wo.keep_filtered = true;
	/* samples in perf 7.2's order: entries are made as perf makes them (the
	 * first to make one gives its level, [k] or [.]; ties keep that order) */
	r->wo.perf_order = true;
	if (r->header_only) {
		ret = header_print_only("report", r->wo.common.input);
		free(r);
		return ret;
	}
	ret = walk_open(&w, "report", &r->wo);
	if (ret == EXIT_OK) {
		r->reader = ds_profile__reader(w.profile);
		r->profile = w.profile;
		if (r->graph_given && !any_callchains(r->reader)) {
			/* perf refuses too ("Selected -g or --branch-history. But no callchain ...") */
			fprintf(stderr, "dstack report: selected -g, but the recording has no callchains "
				"(was it recorded without -g or --call-graph?)\n");
			walk_finish(&w);
			report_free(r);
			return EXIT_USAGE;
		}
		r->latency = has_switch_records(r->reader);
		if (!branch_view_setup(r)) {
			/* perf's words: its branch keys are no keys of a report of samples */
			fprintf(stderr, "dstack report: --sort: a key of the branch view, which the recording has not "
				"(no branch stacks, or --no-branch-stack and the like)\n");
			walk_finish(&w);
			report_free(r);
			return EXIT_USAGE;
		}
		if (!r->sort_given && all_tracepoints(r->reader)) {
			r->nr_sort = 1;
			r->sort[0] = SORT_TRACE;
			r->sort_mask = 1u << SORT_TRACE;
			r->col[0] = SORT_TRACE;
			r->nr_col = 1;
		}
		ret = r->stats ? walk_run_events(&w, stats_event, r) : walk_run(&w, on_sample, r);
		report_at_end(r, w.profile, ret);
		walk_finish(&w);
	}
	report_free(r);
	return ret;
}
