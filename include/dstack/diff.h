/* SPDX-License-Identifier: MIT */
/*
 * The diff of two profiles: BASE (side 0) and NEW (side 1), each the
 * samples of a recording (dstack/profile.h) or the lines of a
 * folded-stacks file ("frame;frame;... count": what `dstack folded`,
 * stackcollapse-perf.pl and inferno write).  Both go into one tree of
 * stacks, root first (the comm, then the frames outermost first), every
 * node with its self and inclusive weight on each side; frames are named
 * as dstack/stacks.h's frame keys name them.  Only one event is compared:
 * opts.event, else the first one added; the others' samples are counted.
 *
 *   struct ds_diff *d = ds_diff__new(&opts);
 *   ds_diff__begin_side(d, 0, "base.data", false);  ... ds_diff__add(d, sample) ...
 *   ds_diff__begin_side(d, 1, "new.folded", true);  ... ds_diff__add_folded(d, line, len) ...
 *   ds_diff__write_report(d, &ropts, fn, ctx);      (or __write_folded, __write_flamegraph)
 *   ds_diff__delete(d);
 *
 * Outputs (to a ds_write_fn, dstack/export.h; the first failed write ends
 * it and is returned):
 *  - the report delta: per sort key (comm, dso, sym) the baseline share,
 *    the new share, their difference and (children) the difference of the
 *    inclusive shares, by the size of the change; shares are of each
 *    side's total weight (counts: the weights themselves);
 *  - the folded diff, "stack BASE NEW" per stack (FlameGraph's
 *    difffolded.pl; normalize: BASE scaled to NEW's total, as its -n);
 *  - the differential flame graph (SVG): frames sized by NEW, red where a
 *    frame's share grew, blue where it shrank.
 * Writing ends adding; any output may be written, any number of times.
 *
 * Errors: 0 or a negative errno; ds_diff__new returns NULL and sets errno.
 * A diff is used by one thread at a time; diffs are independent.
 */
#ifndef DSTACK_DIFF_H
#define DSTACK_DIFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "dstack/export.h"
#include "dstack/profile.h"

struct ds_diff;

struct ds_diff_opts {
	size_t sz;                /* sizeof(struct ds_diff_opts) */
	bool by_comm;             /* stacks start at their comm; else one root (the report without comm needs none) */
	bool by_period;           /* a sample weighs its period, else 1 (folded lines weigh their count) */
	const char *event;        /* the event compared (NULL: the first one added); copied */
};

#define DS_DIFF_SORT_COMM 1u
#define DS_DIFF_SORT_DSO 2u
#define DS_DIFF_SORT_SYM 4u

struct ds_diff_report_opts {
	size_t sz;                /* sizeof(struct ds_diff_report_opts) */
	unsigned sort;            /* DS_DIFF_SORT_* (0 in a zeroed struct: invalid; NULL opts: dso,sym) */
	bool children;            /* also the change of each key's inclusive share */
	bool counts;              /* weights instead of percentages of each side's total */
};

struct ds_diff *ds_diff__new(const struct ds_diff_opts *opts);
void ds_diff__delete(struct ds_diff *d);
/*
 * What follows goes to side @side (0: BASE, 1: NEW), named @name in the
 * report's header (copied), a folded-stacks file's lines if
 * @folded_text, else a recording's samples.  It forgets what it
 * remembered of the previous recording (call it between two).  0 or -EINVAL.
 */
int ds_diff__begin_side(struct ds_diff *d, int side, const char *name, bool folded_text);
/* A sample of the side's recording.  0 or a negative errno (-EINVAL: the side takes folded lines). */
int ds_diff__add(struct ds_diff *d, const struct ds_profile_sample *s);
/*
 * One line of the side's folded-stacks file, @len bytes ("\n" or "\r\n" at
 * its end taken off): 0, 1 for an empty line (skipped), -EINVAL for a line
 * that is not "stack count" (a NUL byte, no count, a count that is not a
 * number >= 0), -ENOMEM.
 */
int ds_diff__add_folded(struct ds_diff *d, const char *line, size_t len);
/* The event compared (NULL: none yet), valid while @d lives. */
const char *ds_diff__event(const struct ds_diff *d);
int ds_diff__write_report(struct ds_diff *d, const struct ds_diff_report_opts *opts, ds_write_fn fn, void *ctx);
int ds_diff__write_folded(struct ds_diff *d, bool normalize, ds_write_fn fn, void *ctx);
int ds_diff__write_flamegraph(struct ds_diff *d, ds_write_fn fn, void *ctx);

#endif
