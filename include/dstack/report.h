/* SPDX-License-Identifier: MIT */
/*
 * perf report's model: the hist entries of `perf report --stdio` (Overhead
 * or Children and Self, by the sort keys: comm, dso, symbol, pid, cpu,
 * srcline, trace), the call graph under each entry in every -g form,
 * perf's cumulative profile (--children), the filters of the report
 * (--dsos, -S, -U, --percentage), the group view of events recorded as a
 * group, the branch view of recordings with branch stacks, and --stats.
 * Fed the resolved samples of a profile (dstack/profile.h), then printed
 * as perf 7.2 prints it, or read entry by entry:
 *
 *   struct ds_report *r = ds_report__new(&opts);
 *   err = ds_report__attach(r, profile);
 *   ... ds_report__add_sample(r, sample) from a ds_profile_sample_fn ...
 *   err = ds_report__print(r, ds_write_stdio, stdout);
 *   ds_report__delete(r);
 *
 * perf's output needs perf's reading: the profile opened with
 * ds_profile_opts.perf_order (entries are made, and ties kept, in perf's
 * order of samples), max_stack_from_root where the call graphs are caller first
 * (opts.caller), and transient_comms if it likes (the report copies the
 * ":TID" comms it keeps).  examples/top.c is a whole program.
 *
 * Lifetimes.  A report reads its profile's reader, machine and names
 * (symbol and DSO names are the profile's, not copied): it is attached
 * to a profile after ds_profile__open, fed by that profile's run, and
 * printed and read before ds_profile__close (freeing it may come after).  Entries (ds_report__entry) live until
 * the report is freed.  One thread at a time; reports are independent of
 * each other (the report keeps no state outside its object).
 *
 * Memory: what the entries and call graphs hold is bounded by
 * opts.memory (0: 1 GiB); past it a sample counts in the totals only
 * (ds_report__stats: unkept), as a filtered one does.  A sample costs no
 * allocation once its entry and call-graph path were seen.
 *
 * Errors (dstack/log.h): 0 or a negative errno, why said for ds_errmsg();
 * the constructor returns NULL with errno set.  Output goes to a
 * ds_write_fn (dstack/export.h); its first failure ends the output and is
 * returned.
 */
#ifndef DSTACK_REPORT_H
#define DSTACK_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "dstack/export.h"
#include "dstack/profile.h"

struct ds_report;
struct ds_report_entry;

/* -g's print type: perf's graph, fractal, flat and folded call graphs */
enum ds_report_graph_mode {
	DS_REPORT_GRAPH,
	DS_REPORT_FRACTAL,
	DS_REPORT_FLAT,
	DS_REPORT_FOLDED,
};

struct ds_report_opts {
	size_t sz;                 /* sizeof(struct ds_report_opts) */
	/*
	 * perf's --sort text ("comm,dso,sym"; perf's prefixes of its key
	 * names, case aside; ds_report__check_sort).  NULL: comm,dso,symbol,
	 * or trace for a recording of tracepoints only, or the branch view's.
	 */
	const char *sort;
	bool children;             /* the cumulative profile (perf's default where callchains were recorded) */
	bool no_graph;             /* -g none: no call graphs */
	bool graph_given;          /* -g given (refused for a recording without callchains) */
	bool caller;               /* call graphs caller first (-g caller) */
	enum ds_report_graph_mode graph_mode;
	bool graph_period;         /* -g ...,period: values as periods */
	double graph_min;          /* -g's threshold in percent; < 0: percent_limit's if set, else 0.5 */
	double percent_limit;      /* --percent-limit: entries and branches below it hidden */
	bool relative;             /* --percentage relative */
	bool show_samples;         /* -n: the Samples column */
	bool show_period;          /* --show-total-period: the Period column */
	bool hide_unresolved;      /* -U */
	bool no_branch_stack;      /* --no-branch-stack: the samples of a recording with branch stacks */
	bool stats;                /* --stats: fed with ds_report__add_event, prints the record counts */
	bool quiet;                /* -q: the entries without perf's "#" comments */
	/*
	 * The filters of the run that feeds the report (the profile's hook):
	 * a single --comm is named in the header and its column left out;
	 * thread filters and a time mode other than DS_PROFILE_CPU turn the
	 * branch view away; the --time text is shown in each section's head.
	 * The strings must outlive the report.
	 */
	const char *const *comms;
	size_t nr_comms;
	bool thread_filter;        /* --pid or --tid given */
	enum ds_profile_time_mode time_mode;
	const char *time_str;      /* NULL: none */
	/* --dsos and -S: only samples whose own frame is in one of them (must outlive the report) */
	const char *const *dsos;
	size_t nr_dsos;
	const char *const *symbols;
	size_t nr_symbols;
	size_t memory;             /* bytes the entries may hold (0: 1 GiB) */
};

/*
 * Check a --sort text: 0; -EINVAL for an unknown key or -ENOTSUP for a
 * perf key dstack does not have, said for ds_errmsg(); -ENOENT (nothing
 * said) for a text of no key.
 */
int ds_report__check_sort(const char *sort);

/*
 * A report with @opts (NULL: perf report's defaults, --children and a
 * threshold of 0.5%; the strings it points at are kept, not copied).
 * NULL with errno: EINVAL for a --sort that does not check (said), ENOMEM.
 */
struct ds_report *ds_report__new(const struct ds_report_opts *opts);
/* Free it and its entries.  NULL is fine. */
void ds_report__delete(struct ds_report *r);

/*
 * Attach the report to the profile @p whose samples it is fed, once,
 * before its run: the recording's events settle perf's choices (the
 * branch view, the sort by trace of a recording of tracepoints only, the
 * latency columns).  0; -EINVAL with -g on a recording without
 * callchains, or a --sort key of the branch view the recording does not
 * take (said, without a command's prefix); -EALREADY.
 */
int ds_report__attach(struct ds_report *r, struct ds_profile *p);

/*
 * After ds_report__attach: the recording has branch stacks, but the
 * report shows its samples because of options the branch view does not
 * take (perf's view is the branch view; a command says so).
 */
bool ds_report__branch_view_refused(const struct ds_report *r);

/* Count sample @s (a ds_profile_sample_fn's).  0, or a negative errno: ENOMEM; EINVAL before attach or after finish. */
int ds_report__add_sample(struct ds_report *r, const struct ds_profile_sample *s);
/* opts.stats: count event @ev (a ds_event_fn's of ds_profile__for_each_event).  0 or a negative errno. */
int ds_report__add_event(struct ds_report *r, const struct ds_event *ev);

/*
 * The adding is over: the entries merged and sorted as perf prints them
 * (each event's section in the file's order of events).  Called by
 * ds_report__print and ds_report__entry_count when not yet; once.
 * 0 or -ENOMEM.
 */
int ds_report__finish(struct ds_report *r);

/*
 * Print it as `perf report --stdio` does, from its "# Total Lost
 * Samples" on (the header and perf's note about it are the caller's),
 * or with opts.stats the record counts.  0, the write's negative errno,
 * or -ENOMEM.  Once.
 */
int ds_report__print(struct ds_report *r, ds_write_fn fn, void *ctx);

/* Did any sample pass the filters of the run (else perf says "no samples" and prints no section)? */
bool ds_report__has_samples(const struct ds_report *r);

struct ds_report_stats {
	uint64_t samples;          /* samples (the branch view: branches) shown */
	uint64_t unkept;           /* of those, counted in the totals only (past opts.memory) */
	size_t entries;            /* the entries made (a group's members' included) */
	bool branch_view;          /* the entries are branches */
};
void ds_report__stats(const struct ds_report *r, struct ds_report_stats *st);

/*
 * The entries in the order printed (after ds_report__finish): each
 * event's section in turn, within one as perf sorts it.  A group's
 * members have no entries of their own here (their periods are the
 * leader's entries' columns).  Entries below opts.percent_limit are
 * included.  @i past the count: NULL.
 */
size_t ds_report__entry_count(struct ds_report *r);
const struct ds_report_entry *ds_report__entry(struct ds_report *r, size_t i);

/* The entry's event name. */
const char *ds_report_entry__event(const struct ds_report_entry *e);
/*
 * The symbol column's text as printed ("[.] name", "[k] name", a data
 * object's "name+0xOFF", an address without a symbol) into @buf, cut to
 * @n - 1 bytes and NUL-terminated (@n > 0); returns the whole text's
 * length, as snprintf.
 */
size_t ds_report_entry__symbol(const struct ds_report_entry *e, char *buf, size_t n);
/* The symbol's name (NULL: no symbol), the DSO as recorded (NULL: none), the comm (NULL: not a sort key) */
const char *ds_report_entry__sym(const struct ds_report_entry *e);
const char *ds_report_entry__dso(const struct ds_report_entry *e);
const char *ds_report_entry__comm(const struct ds_report_entry *e);
/*
 * Its own period (Self), its cumulative one (Children; the self period
 * where the report has no cumulative profile: without opts.children, or
 * callchains, or on a pipe, as perf), its samples
 */
uint64_t ds_report_entry__self(const struct ds_report_entry *e);
uint64_t ds_report_entry__children(const struct ds_report_entry *e);
uint64_t ds_report_entry__samples(const struct ds_report_entry *e);
/* Its event's total period, what perf's percentages are of (with opts.relative: of the samples shown) */
uint64_t ds_report__total_period(const struct ds_report *r, const struct ds_report_entry *e);

#endif
