/* SPDX-License-Identifier: MIT */
/*
 * Machine internals shared by the files that make it up:
 *   machine.c    the machine itself, string interning, the sideband dispatch
 *   threads.c    threads and their comm history (COMM, FORK, EXIT)
 *   maps.c       address maps (MMAP, MMAP2) and address -> frames resolution
 *   callchain.c  callchain resolution behind the frame and chain caches
 *   shapes.c     the shape table (frames equal for every analysis, counted once)
 */
#ifndef DSTACK_MACHINE_INT_H
#define DSTACK_MACHINE_INT_H

#include "dstack/machine.h"
#include "util/hashmap.h"
#include "util/idmap.h"
#include "util/strset.h"

/*
 * The maps of a process, sorted by address and shared by its threads
 * (refcounted): in chunks of at most DS_MAPS_CHUNK, themselves in order,
 * so that a new map costs at most a chunk's move whatever the number of
 * maps (one sorted array made a recording of descending MMAPs quadratic).
 * A lookup is a binary search over the chunks and in one, behind a
 * last-hit cache, so the common run of ips in one DSO costs a compare.
 */
#define DS_MAPS_CHUNK 256

struct ds_maps_chunk {
	size_t nr, cap;
	struct ds_map v[];
};

struct ds_maps {
	uint32_t refs;
	struct ds_maps_chunk **c;  /* none empty */
	size_t nr_chunks, cap_chunks;
	size_t nr;                 /* maps in all */
	size_t last_c, last_i;     /* last-hit cache (checked: may be stale) */
	uint64_t stamp;            /* new on every change (a clone without JIT maps starts with its source's): keys the frame and chain caches */
	size_t *live;              /* the machine's count of the maps all sets hold, kept by these (NULL: none) */
};

struct comm_entry {
	uint64_t time;             /* from when this comm holds */
	const char *comm;
};

struct ds_thread {
	int32_t pid, tid;
	const char *comm;          /* the newest: interned, or placeholder */
	struct comm_entry *comms;  /* history, oldest first: samples printed late get the comm of their time */
	size_t nr_comms, cap_comms;
	bool comm_set;             /* a real comm replaced the ":TID" placeholder */
	uint64_t exit_time;        /* its EXIT record's, 0 while it has none */
	bool exited_untimed;       /* an EXIT without a time came (a recording without timestamps) */
	struct ds_maps *maps;
	struct ds_maps *reborn;    /* mapped after its EXIT: perf's new thread's maps (ds_machine__script_thread); NULL: none */
	char placeholder[16];      /* ":TID", the comm until one is set: not interned (its thread may be forgotten) */
};

struct callchain_cache;

struct ds_machine {
	struct ds_symbols *syms;
	struct dsi_hashmap threads;     /* tid -> struct ds_thread * */
	struct ds_thread *last_thread; /* the one found last: samples come in runs of one thread */
	struct ds_thread *forgotten;   /* ds_machine__script_thread's for an exited thread: its maps those
					  mapped after the EXIT (a thread's reborn), else forgotten_maps */
	struct ds_maps *forgotten_maps;
	int32_t *fresh;                /* ring of the tids of threads made unintroduced (threads.c) */
	size_t fresh_head, fresh_nr;
	struct dsi_strset strings;     /* interned: our copies, one per string */
	struct dsi_hashmap map_names;   /* interned user map name -> its order of first mmap (1, 2, ...) */
	struct ds_maps kmaps;          /* kernel and module maps */
	const char *kernel_dso;        /* interned: the kernel image's DSO name (ds_machine__kernel_dso) */
	bool kernel_listed;            /* kernel_dso is the build-id table's (ds_machine__list_dso) */
	struct dsi_hashmap kernel_names; /* interned listed kernel-space DSO name -> its interned short name */
	struct dsi_hashmap listed_modules; /* interned "[module]" -> the interned path the build-id table lists */
	struct callchain_cache *callchains; /* ds_machine__callchain's buffer and caches */
	struct ds_dso *vdso[2];        /* the vDSO images by enum ds_vdso_kind, or NULL */
	bool vdso_asked[2];            /* the finder was asked for that image */
	ds_vdso_finder vdso_finder;    /* ds_machine__set_vdso_finder's */
	void *vdso_ctx;
	size_t live_maps;              /* held by every map set (their live) */
	size_t max_maps;               /* ds_machine__set_max_maps's bound (0: none) */
	uint64_t maps_dropped;         /* task MMAP records not kept past it */
	int32_t *exited;               /* tids that exited since the last release of their maps (fewer than threads) */
	size_t nr_exited, cap_exited;
	/*
	 * The code of the jitdumps seen (process/jitmaps.c), each to be
	 * mapped at its timestamp as perf inject --jit's MMAP2 records are:
	 * sorted by time from jit_next on.
	 */
	struct dsi_jit_pending *jit_q;
	size_t jit_nr, jit_next, jit_cap;
	uint64_t jit_seq;
	const struct ds_time_conv *time_conv;   /* the recording's, for dumps of TSC times (NULL: none) */
};

/* ---- jitmaps.c ---- */

struct dsi_jit_pending {
	uint64_t time, seq;            /* when it is mapped; ties in dump order */
	int32_t pid;
	const struct dsi_jitdump *jd;
	const struct ds_jit_code *code;
};

/*
 * An MMAP of a jitdump (jit-PID.dump, as perf detects it) at @time: its
 * code queued to be mapped at its timestamps.  0 (also when the dump
 * cannot be read: said once), -ENOMEM.
 */
int dsi_machine__jitdump_mmap(struct ds_machine *m, uint32_t pid, const char *path, uint64_t time);
/* Map the queued code whose time is <= @time (DS_NO_TIME: all). 0 or -ENOMEM. */
int dsi_machine__jit_advance(struct ds_machine *m, uint64_t time);
/* The machine's queue freed. */
void dsi_machine__jit_exit(struct ds_machine *m);
/* Insert @nm into @t's maps (maps.c's insertion, counted against the budget). */
struct ds_thread;
int dsi_machine__insert_user_map(struct ds_machine *m, struct ds_thread *t, const struct ds_map *nm);

/* ---- maps.c ---- */

/* An empty map set with one reference and a fresh stamp, counting its maps in *@live (NULL: nowhere). */
void dsi_maps__init(struct ds_maps *mp, size_t *live);
void dsi_maps__exit(struct ds_maps *mp);
/* dsi_maps__init()'d on the heap; NULL on ENOMEM. */
struct ds_maps *dsi_maps__new(size_t *live);
/* Drop a reference; the last one frees @mp (NULL is fine). */
void dsi_maps__put(struct ds_maps *mp);
/* A copy of @src with one reference (a forked process's), counted where @src is; NULL on ENOMEM. */
struct ds_maps *dsi_maps__clone(const struct ds_maps *src);
/* The map holding @addr, or NULL. */
const struct ds_map *dsi_maps__find(struct ds_maps *mp, uint64_t addr);
/*
 * Past the bound on maps: the threads that exited let go of theirs (a
 * process's are freed with the last of its threads), their samples being
 * behind them.  Does nothing when none exited since the last call.
 */
void dsi_machine__release_exited_maps(struct ds_machine *m);
/* An MMAP or MMAP2 record into the kernel's or its thread's maps; 0 or -ENOMEM. */
int dsi_machine__process_mmap(struct ds_machine *m, const struct ds_event *ev);

/* ---- threads.c ---- */

void dsi_thread__delete(struct ds_thread *t);
/* COMM, FORK and EXIT records into the threads; 0 or -ENOMEM. */
int dsi_machine__process_comm(struct ds_machine *m, const struct ds_event *ev);
int dsi_machine__process_fork(struct ds_machine *m, const struct ds_event *ev);
int dsi_machine__process_exit(struct ds_machine *m, const struct ds_event *ev);

/* ---- callchain.c ---- */

/* The callchain buffer and caches of a machine (the caches left out on ENOMEM); NULL on ENOMEM. */
struct callchain_cache *dsi_callchain_cache__new(void);
void dsi_callchain_cache__delete(struct callchain_cache *c);

/* ---- shapes.c ---- */

struct shape_table;

/* An empty table; NULL on ENOMEM. */
struct shape_table *dsi_shape_table__new(void);
void dsi_shape_table__delete(struct shape_table *st);
/* The id of frame @f among the frames seen (dense, from 0), added if new; UINT32_MAX on ENOMEM. */
uint32_t dsi_shape_table__frame_id(struct shape_table *st, const struct ds_cc_frame *f);
/* The shape (index + 1) of the frames with ids @ids, added if new; 0 if none can be kept. */
uint64_t dsi_shape_table__add(struct shape_table *st, const uint32_t *ids, size_t n);
/* See ds_machine__shape_frames() (@st may be NULL: no shapes). */
const uint32_t *dsi_shape_table__frames(const struct shape_table *st, uint64_t shape, size_t *nr);

#endif
