/* SPDX-License-Identifier: MIT */
/*
 * The exports: a profile's stacks written in the formats other tools
 * read, to a stream of the caller's.  Each export is an object fed the
 * resolved samples of a profile (dstack/profile.h) and built on the
 * interned stack model (dstack/stacks.h), then written once:
 *
 *   struct ds_folded *fo = ds_folded__new(&opts);
 *   ... ds_folded__add(fo, sample) from a ds_profile_sample_fn ...
 *   err = ds_folded__write(fo, ds_write_stdio, stdout);
 *   ds_folded__delete(fo);
 *
 * The stream.  Output goes to a write callback (ds_write_fn) in chunks of
 * the export's buffer; ds_write_stdio is one for a FILE *.  The first
 * failed write (the callback's negative errno) ends the output: nothing
 * more is written, and the export returns that errno.  A caller that
 * exits must not report success after it (docs/errors.md).
 *
 * Errors (dstack/log.h): functions return 0 or a negative errno and say
 * why for ds_errmsg(); constructors return NULL and set errno.  A spill
 * file's failure (which step, in which directory) is kept by the export:
 * every later call failing because of it says it again.  A failed write
 * of the output callback is said as its errno's text only: the callback's
 * owner knows the stream and describes it.  After an error other than a
 * failed write an export can only be deleted.
 *
 * Memory: an export holds at most about opts.memory bytes (0: 1 GiB)
 * whatever the input; past it, what it keeps goes to unlinked temporary
 * files in opts.tmpdir (NULL: /tmp), which the library never reads from
 * the environment.  An export is used by one thread at a time; exports are
 * independent of each other.
 */
#ifndef DSTACK_EXPORT_H
#define DSTACK_EXPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "dstack/profile.h"

/* Write @len bytes of @buf: 0, or a negative errno (which ends the output). */
typedef int (*ds_write_fn)(void *ctx, const void *buf, size_t len);

/* A ds_write_fn for a FILE * (@ctx): fwrite, then -errno (-EIO if none) on a short write. */
int ds_write_stdio(void *ctx, const void *buf, size_t len);

/*
 * Folded stacks: one line per distinct stack, "comm;outer;...;inner
 * count", sorted by bytes, named as FlameGraph's stackcollapse-perf.pl
 * names perf script's frames (with --kernel): the symbol with C++
 * argument lists and quotes cut and ';' turned ':', else the DSO's base
 * name in brackets, else "[unknown]"; kernel frames suffixed "_[k]";
 * inlined functions frames of their own; spaces of the comm as '_'.
 * Stacks of equal text merge.
 */
struct ds_folded;

struct ds_folded_opts {
	size_t sz;                /* sizeof(struct ds_folded_opts) */
	bool period;              /* weigh stacks by the samples' periods (ns for waits), else count them */
	size_t memory;            /* bytes it may hold (0: 1 GiB) */
	const char *tmpdir;       /* where it spills past them (NULL: /tmp; must outlive the object) */
};

struct ds_folded *ds_folded__new(const struct ds_folded_opts *opts);
void ds_folded__delete(struct ds_folded *fo);
/* Count @s (its comm and frames as handed over: they are copied).  0 or a negative errno. */
int ds_folded__add(struct ds_folded *fo, const struct ds_profile_sample *s);
/*
 * Count @weight for the stack @text of @len bytes, already folded
 * ("comm;outer;...;inner", no count): what a folded-stacks file holds.
 * 0 or a negative errno.
 */
int ds_folded__add_text(struct ds_folded *fo, const char *text, size_t len, uint64_t weight);
/* Write every stack once, in order; once only (it ends adding).  0 or a negative errno. */
int ds_folded__write(struct ds_folded *fo, ds_write_fn fn, void *ctx);
/*
 * A frame's name as folded prints it, in place: ';' to ':', argument
 * lists cut (Go's "pkg.(*T).M" kept), quotes dropped.
 */
void ds_folded__tidy(char *name);

/*
 * Flame graphs: a self-contained interactive SVG (no network): a frame's
 * name, weight and share on hover, zoom on click, a search that
 * highlights.  The bottom bar is every sample; above a frame the
 * functions it called (inlined functions frames of their own), children
 * sorted by name, user frames warm, kernel frames blue-green, colours
 * from a hash of the name: the same input gives the same file.  Frames
 * narrower than 0.1 pixel are left out (their weight still counts in the
 * frames below them).  The title of each frame: its name, DSO or
 * "(inlined)", the source file and line of its heaviest stack (DWARF),
 * its weight in opts.unit and its share.
 */
struct ds_flamegraph;

struct ds_flamegraph_opts {
	size_t sz;                /* sizeof(struct ds_flamegraph_opts) */
	const char *title;        /* the graph's title (NULL: "Flame Graph"); copied */
	bool period;              /* weigh by the samples' periods (ns for waits), else count them */
	const char *unit;         /* the weight's unit in each frame's title (NULL: "samples"); copied */
};

struct ds_flamegraph *ds_flamegraph__new(const struct ds_flamegraph_opts *opts);
void ds_flamegraph__delete(struct ds_flamegraph *fg);
/* Count @s (its frames copied).  0 or a negative errno. */
int ds_flamegraph__add(struct ds_flamegraph *fg, const struct ds_profile_sample *s);
/* Write the SVG; once only.  0 or a negative errno. */
int ds_flamegraph__write(struct ds_flamegraph *fg, ds_write_fn fn, void *ctx);

/*
 * pprof's profile.proto, gzip-compressed: values samples/count and the
 * period (cpu/nanoseconds for clock events, events/count otherwise;
 * off-cpu or wall nanoseconds with opts.time_mode); a Location per
 * address with its inlined functions as Lines, innermost first; Functions
 * (name, DSO, the source file from DWARF); Mappings: the recorded file
 * maps (the main binary's first), then one per other DSO (the kernel)
 * spanning its addresses; labels comm, pid, tid and cpu.  With several
 * events each is a pair of sample types of its own, or each a profile of
 * its own (ds_pprof_write_opts.event).  Equal samples are one; past a
 * quarter of opts.memory they go to tallies per event spilled to
 * opts.tmpdir.
 */
struct ds_pprof;

struct ds_pprof_opts {
	size_t sz;                      /* sizeof(struct ds_pprof_opts) */
	enum ds_profile_time_mode time_mode;  /* how the profile's samples were weighed (ds_profile_opts.time_mode) */
	size_t memory;                  /* bytes it may hold (0: 1 GiB) */
	const char *tmpdir;             /* where it spills past them (NULL: /tmp; must outlive the object) */
};

struct ds_pprof_write_opts {
	size_t sz;                      /* sizeof(struct ds_pprof_write_opts) */
	int event;                      /* -1: every event; else only event @event (< ds_pprof__nr_events) */
	/* the recording's span (its header's sample times; 0, 0: the samples') and the wall clock at its end
	 * (ns since the epoch: the file's last write; 0: now) */
	uint64_t first_time, last_time, end_wall_ns;
};

struct ds_pprof *ds_pprof__new(const struct ds_pprof_opts *opts);
void ds_pprof__delete(struct ds_pprof *pp);
/* Count @s (its frames and comm copied).  0 or a negative errno. */
int ds_pprof__add(struct ds_pprof *pp, const struct ds_profile_sample *s);
/* The events sampled, in order of first sample (ends adding); 0 after an error (ds_errmsg() says it). */
size_t ds_pprof__nr_events(struct ds_pprof *pp);
/* Event @i's name (NULL: none such), valid while @pp lives. */
const char *ds_pprof__event(struct ds_pprof *pp, size_t i);
/*
 * Write a profile (@opts NULL: every event, the samples' span, ends now):
 * every event once, or each event once.  Ends adding.  0 or a negative errno.
 */
int ds_pprof__write(struct ds_pprof *pp, const struct ds_pprof_write_opts *opts, ds_write_fn fn, void *ctx);

/*
 * speedscope's file format (https://www.speedscope.app/file-format-schema.json):
 * shared frames (name, file = DSO, "(inlined)"), one "sampled" profile per
 * thread named "comm (tid)" in (pid, tid) order, every sample in recording
 * order with its stack root first, weights = periods, in "nanoseconds"
 * when every event is a clock (cpu-clock, task-clock) else "none".  Every
 * sample is kept (a few words each); past a quarter of opts.memory they
 * are sorted in runs spilled to opts.tmpdir and merged.
 */
struct ds_speedscope;

struct ds_speedscope_opts {
	size_t sz;                /* sizeof(struct ds_speedscope_opts) */
	const char *title;        /* the file's name field (NULL: "perf.data"); copied */
	size_t memory;            /* bytes it may hold (0: 1 GiB) */
	const char *tmpdir;       /* where it spills past them (NULL: /tmp; must outlive the object) */
};

struct ds_speedscope *ds_speedscope__new(const struct ds_speedscope_opts *opts);
void ds_speedscope__delete(struct ds_speedscope *sp);
/* Keep @s (its frames interned, its comm copied).  0 or a negative errno. */
int ds_speedscope__add(struct ds_speedscope *sp, const struct ds_profile_sample *s);
/* Write the file; once only.  After a spill file's failure nothing is written.  0 or a negative errno. */
int ds_speedscope__write(struct ds_speedscope *sp, ds_write_fn fn, void *ctx);

/*
 * The flame graph's drawing, for a tree of the caller's (dstack diff's
 * differential graph): begin with the total weight (the root's width)
 * and the deepest depth drawn, then every frame depth first (a frame
 * after its caller, callees left to right), then end.  @title is the
 * frame's tooltip, @status (NULL: name, weight and share) its status line
 * on hover; frames ds_flame_svg__visible says are too narrow are best
 * left out.
 */
struct ds_flame_svg;

/* A drawing of the graph titled @title to @fn; NULL and errno (ENOMEM) on error. */
struct ds_flame_svg *ds_flame_svg__begin(ds_write_fn fn, void *ctx, const char *title, double total,
					 unsigned depth);
/* Whether a frame of weight @w is wide enough to draw in a graph of @total. */
bool ds_flame_svg__visible(double w, double total);
void ds_flame_svg__frame(struct ds_flame_svg *svg, const char *name, const char *title, const char *status,
			 const char *fill, double offset, double width, unsigned depth, bool kernel);
/* The script and the end written, @svg freed: 0 or the first failed write's negative errno. */
int ds_flame_svg__end(struct ds_flame_svg *svg);

#endif
