/* SPDX-License-Identifier: MIT */
/*
 * report's branch view: what perf report shows by default for a recording
 * made with branch stacks (-b, LBR; the BRANCH_STACK header feature).  An
 * entry per branch, not per sample: keyed by the sample's comm, the
 * source's object, the source's and the target's symbols (an address where
 * there is none) and the branch's cycles, each branch weighing 1.  Columns
 * Command, Source Shared Object, Source Symbol, Target Symbol, Basic Block
 * Cycles; entries by count, then by those keys as perf 7.2 orders them; no
 * call graph.
 *
 * Lifecycle: branch_view__new(), branch_view__add() for each sample the
 * report takes, branch_view__print() once, branch_view__delete().  The view
 * copies every text it keeps: a sample's strings may go with its callback.
 * Memory: past @max_bytes of entries a branch that would make a new entry
 * counts in its event's totals only (branch_view__dropped() says how many).
 *
 * Who may use it: cmd_report.c.
 */
#ifndef DSTACK_CLI_REPORT_BRANCH_H
#define DSTACK_CLI_REPORT_BRANCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "dstack/profile.h"
#include "util/outbuf.h"

struct branch_view;

/*
 * @latency_order: perf's latency is one of its sort keys, as when an event
 * records context switches (report's latency; not a column here).  NULL on
 * ENOMEM.
 */
struct branch_view *branch_view__new(size_t max_bytes, bool latency_order);
void branch_view__delete(struct branch_view *bv);

/* @s's branch stack into the view (a sample without one adds nothing): 0 or -ENOMEM. */
int branch_view__add(struct branch_view *bv, const struct ds_profile_sample *s);

/* Did some event get an entry? */
bool branch_view__any(const struct branch_view *bv);

/*
 * Each event's section, in the order of the file's events: "# Samples:",
 * the event count, the column titles, the entries at or above
 * @percent_limit (percent).  @time_str: --time as given, or NULL.  @quiet:
 * the entries alone (-q).
 */
void branch_view__print(struct branch_view *bv, struct outbuf *o, const char *time_str, double percent_limit,
			bool quiet);

/* Branches counted in the totals only, the memory budget reached. */
uint64_t branch_view__dropped(const struct branch_view *bv);

#endif
