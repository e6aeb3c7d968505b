/* SPDX-License-Identifier: MIT */
/*
 * The interned stack model: the samples of a profile (dstack/profile.h)
 * kept after the profile is gone, every string copied once, every frame
 * key (its name, DSO, kernel and inlined flags) numbered once, every
 * distinct stack (its entries, callee first) stored once and found again
 * by the machine's chain id, so that a repeated sample costs a lookup and
 * allocates nothing.  The exports (dstack/export.h) build on it.
 *
 *   struct ds_stacks *st = ds_stacks__new(&opts);
 *   ... ds_stacks__add(st, sample) from a ds_profile_sample_fn ...
 *   ds_stacks__frame(st, id), ds_stacks__stack(st, id, &len), ...
 *   ds_stacks__delete(st);
 *
 * Ids: strings, frames, maps, stacks and kept samples are numbered from 0
 * in the order they were first seen; string 0 is "" (DS_STACKS_STR_EMPTY).
 * Everything an accessor returns belongs to the model and stays valid
 * until the next ds_stacks__add (arrays may move as they grow) or
 * ds_stacks__delete.
 *
 * Errors: functions return 0 or a negative errno (-ENOMEM, or what a
 * callback of the caller's returned); ds_stacks__new returns NULL and sets
 * errno.  After a failed ds_stacks__add the model holds what it held
 * before that sample (at worst strings or frames nothing refers to).
 *
 * A model is used by one thread at a time and holds no global state:
 * models are independent of each other.
 */
#ifndef DSTACK_STACKS_H
#define DSTACK_STACKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "dstack/profile.h"

struct ds_stacks;

#define DS_STACKS_STR_EMPTY 0u

/* A frame key: what the exports name a function by. */
struct ds_stacks_frame {
	uint32_t name;              /* string id: the symbol, else "[dso base name]", else "[unknown]" */
	uint32_t dso;               /* string id: its DSO's path ("[unknown]" if none) */
	bool kernel, inlined;
	uint32_t src;               /* string id of its source file (opts.srclines), DS_STACKS_STR_EMPTY unknown */
};

/* One entry of a stack: an address and its frame. */
struct ds_stacks_entry {
	uint64_t ip;
	uint32_t frame;             /* frame id */
	uint32_t map;               /* map id + 1 (opts.maps); 0: no file map (kernel, anonymous, none) */
	uint32_t src, line;         /* its source file (string id; opts.srclines) and line, 0: unknown */
};

/* A file mapping an entry's address was in, as recorded (MMAP/MMAP2). */
struct ds_stacks_map {
	uint64_t start, end, pgoff;
	uint32_t file;              /* string id */
	uint32_t build_id;          /* string id of the hex build-id; "" when unknown */
};

/* A sample as the model keeps it (or hands it to opts.sample_fn). */
struct ds_stacks_sample {
	uint64_t time, period;      /* time: DS_NO_TIME when absent (aggregated: the first one's) */
	uint64_t count;             /* samples this stands for: 1 unless aggregated */
	int32_t pid, tid;
	int32_t cpu;                /* -1: not recorded */
	uint32_t comm;              /* string id; DS_STACKS_STR_EMPTY with opts.comms_to_fn */
	uint32_t event;             /* string id of its event's name ("unknown" if none) */
	uint32_t stack;             /* stack id */
};

/*
 * A sample handed over instead of kept (opts.sample_fn): @comm is its
 * comm's text, valid during the call.  A nonzero return stops
 * ds_stacks__add, which returns it.
 */
typedef int (*ds_stacks_sample_fn)(void *ctx, const struct ds_stacks_sample *s, const char *comm);

/*
 * Called by ds_stacks__add when the kept samples reach opts.max_samples:
 * the caller takes them (ds_stacks__samples) and may empty them
 * (ds_stacks__clear_samples) or hand the rest elsewhere
 * (ds_stacks__set_sample_fn).  0, or a negative errno that
 * ds_stacks__add returns.
 */
typedef int (*ds_stacks_full_fn)(void *ctx, struct ds_stacks *st);

struct ds_stacks_opts {
	size_t sz;                  /* sizeof(struct ds_stacks_opts): the fields the caller knows */
	bool srclines;              /* entries and frames carry source positions (DWARF; costs a lookup per new entry) */
	bool maps;                  /* entries name their file mapping (the map table) */
	bool aggregate;             /* kept samples equal in stack, comm, event, pid, tid and cpu are one, with a count */
	bool comms_to_fn;           /* comms are not interned: the sample_fn finds the text in its argument */
	ds_stacks_sample_fn sample_fn;   /* NULL: samples are kept (ds_stacks__samples) */
	void *sample_ctx;
	ds_stacks_full_fn full_fn;  /* with max_samples: see ds_stacks_full_fn */
	void *full_ctx;
	size_t max_samples;         /* 0: no bound */
	size_t chain_memo_max;      /* chain ids remembered before the memo starts again (0: 65536) */
};

/* A new, empty model (@opts NULL: the defaults; read during the call, hooks kept).  NULL and errno on error. */
struct ds_stacks *ds_stacks__new(const struct ds_stacks_opts *opts);
/* Frees @st and everything it returned (NULL is fine). */
void ds_stacks__delete(struct ds_stacks *st);

/*
 * Add @s (from ds_profile__for_each_sample) with its own period: its
 * stack interned, then the sample kept, aggregated or handed to the
 * sample_fn.  Cookie frames (unresolved deferred chains) have no entry.
 * The frames' strings are copied; the model remembers chain ids and
 * string pointers only while samples keep coming from the same machine
 * (ds_profile_sample.machine): a sample of another machine forgets them.
 * 0 or a negative errno (see the top of this file).
 */
int ds_stacks__add(struct ds_stacks *st, const struct ds_profile_sample *s);
/*
 * The stack id of @s's frames alone (interned; no sample kept, times not
 * noted).  0 or a negative errno; the id in *@stack.
 */
int ds_stacks__intern(struct ds_stacks *st, const struct ds_profile_sample *s, uint32_t *stack);
/*
 * Forget what the model remembers of the profile its samples came from
 * (chain ids, string pointers): call it before adding samples of another
 * profile opened where a closed one was.
 */
void ds_stacks__end_source(struct ds_stacks *st);

/* The id of string @s, interned (copied) if new; UINT32_MAX on ENOMEM. */
uint32_t ds_stacks__intern_str(struct ds_stacks *st, const char *s);
/* String @id (< ds_stacks__nr_strs). */
const char *ds_stacks__str(const struct ds_stacks *st, uint32_t id);
size_t ds_stacks__nr_strs(const struct ds_stacks *st);

const struct ds_stacks_frame *ds_stacks__frame(const struct ds_stacks *st, uint32_t id);
size_t ds_stacks__nr_frames(const struct ds_stacks *st);
/* Map @id (map ids, not the entries' map + 1). */
const struct ds_stacks_map *ds_stacks__map(const struct ds_stacks *st, uint32_t id);
size_t ds_stacks__nr_maps(const struct ds_stacks *st);
/* Stack @id: its entries, callee first, their number in *@len (NULL when 0). */
const struct ds_stacks_entry *ds_stacks__stack(const struct ds_stacks *st, uint32_t id, size_t *len);
size_t ds_stacks__nr_stacks(const struct ds_stacks *st);

/* The kept samples (aggregated with opts.aggregate), in the order first seen; their number in *@nr. */
const struct ds_stacks_sample *ds_stacks__samples(const struct ds_stacks *st, size_t *nr);
/* Drop the kept samples (their strings and stacks stay). */
void ds_stacks__clear_samples(struct ds_stacks *st);
/* From now on hand samples to @fn (NULL: keep them again), @comms_to_fn as in the opts. */
void ds_stacks__set_sample_fn(struct ds_stacks *st, ds_stacks_sample_fn fn, void *ctx, bool comms_to_fn);

/* The span of the samples added with a time: false when none had one. */
bool ds_stacks__time_span(const struct ds_stacks *st, uint64_t *first, uint64_t *last);
/* The model's memory, near enough: its arrays and tables as allocated, and its strings. */
size_t ds_stacks__mem(const struct ds_stacks *st);
/* The first sample's period (0: no sample yet). */
uint64_t ds_stacks__first_period(const struct ds_stacks *st);

#endif
