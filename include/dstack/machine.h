/* SPDX-License-Identifier: MIT */
/*
 * dstack machine: threads and address maps rebuilt from COMM, FORK, EXIT,
 * MMAP and MMAP2 records (fed in time order), and address -> frames
 * resolution through them and ds_symbols.
 *
 * Ownership: the machine owns its threads, maps and interned strings; all
 * pointers it returns live until ds_machine__delete().  It does not own
 * the ds_symbols it was given.
 * Errors: ds_machine__new returns NULL on ENOMEM; ds_machine__process
 * returns 0 or -ENOMEM (malformed records are ignored: the session already
 * validated them).
 */
#ifndef DSTACK_MACHINE_H
#define DSTACK_MACHINE_H

#include <stdbool.h>
#include <stdint.h>
#include "dstack/event.h"
#include "dstack/symbols.h"

struct ds_machine;
struct ds_thread;

struct ds_map {
	uint64_t start, end, pgoff;
	const char *name;          /* as recorded; interned */
	struct ds_dso *dso;        /* NULL for anonymous and special maps */
	bool jit;                  /* anonymous: may have /tmp/perf-PID.map symbols */
	bool identity;             /* addresses are not file offsets (anon, heap, stack) */
};

/* One resolved callchain entry (or sample ip). */
struct ds_resolved {
	uint64_t ip;
	const char *dso;           /* name to print ("[kernel.kallsyms]", path, "[unknown]") */
	size_t nr_frames;          /* >= 1 */
	struct ds_frame frames[64]; /* innermost first; name NULL = unknown */
	bool kernel;
	uint64_t addr;             /* in the DSO's file (perf's map__map_ip); ip if no map */
	uint64_t map_start, map_end, map_pgoff; /* the map holding ip; all 0 if none */
	const struct ds_dso *dso_obj; /* its file (NULL: anonymous, kernel, none) */
};

struct ds_machine *ds_machine__new(struct ds_symbols *syms);
void ds_machine__delete(struct ds_machine *m);

/* The vDSO's two images: the one 64-bit tasks map ("[vdso]"), and i386 tasks' ("[vdso32]"). */
enum ds_vdso_kind { DS_VDSO_64, DS_VDSO_32 };

/*
 * The vDSO is in no file: @fn gives its image of a kind (NULL: none) when
 * a [vdso] (or [vdso32]) map first needs it, once per kind, so that what
 * the recording says of it (its header's features, which a pipe delivers
 * as records) is known by then.  Those maps resolve and unwind through
 * that image.  @ctx must outlive the machine's use of it.
 */
typedef struct ds_dso *(*ds_vdso_finder)(void *ctx, enum ds_vdso_kind kind);
void ds_machine__set_vdso_finder(struct ds_machine *m, ds_vdso_finder fn, void *ctx);
/* The DSO a user map's addresses resolve in: its file's, a vDSO map's image, or NULL. */
struct ds_dso *ds_machine__map_dso(struct ds_machine *m, const struct ds_map *map);

/* Update threads and maps from a COMM/FORK/EXIT/MMAP/MMAP2 event. */
int ds_machine__process(struct ds_machine *m, const struct ds_event *ev);

/*
 * The thread for @pid/@tid, created (with comm ":TID") if never seen;
 * NULL on ENOMEM.  The machine owns it.  It stays valid until the next
 * call that may create or replace a thread (this one for another tid, or
 * ds_machine__process): past 65,536 threads of tids that no record
 * introduced and that nothing changed since, the oldest of them are
 * forgotten (and made again, the same, when asked for), but never the
 * thread found last.  Its names (ds_thread__comm, ds_thread__comm_at) live
 * as long as the machine, but for the placeholder ":TID" of a thread that
 * no COMM named (nor a parent's name): that one lives in the thread, and
 * ds_machine__intern() keeps a copy for longer.
 */
struct ds_thread *ds_machine__thread(struct ds_machine *m, int32_t pid, int32_t tid);
const char *ds_thread__comm(const struct ds_thread *t);
/* The comm the thread had at @time (perf's comm history). */
const char *ds_thread__comm_at(const struct ds_thread *t, uint64_t time);
/* The time of the thread's EXIT record, 0 if none came (a FORK or COMM after it clears it). */
uint64_t ds_thread__exit_time(const struct ds_thread *t);
/*
 * Has the thread exited by @when (past its EXIT's time; @when DS_NO_TIME:
 * has an EXIT without a time been processed, a recording without
 * timestamps, where the order of events is all there is)?
 */
bool ds_thread__exited_by(const struct ds_thread *t, uint64_t when);
int32_t ds_thread__pid(const struct ds_thread *t);

/*
 * The thread perf script finds @t's addresses in at @when.  perf script
 * forgets a thread at its EXIT; a record of that tid after it makes a new
 * thread, which has its process's maps when it is not a leader itself (a
 * fresh recording showed them even after the leader's EXIT), else those
 * mapped after the EXIT (an exec's image: its EXIT comes before).  So: @t
 * until its EXIT, then @t for such a thread, else a thread with the maps
 * mapped after @t's EXIT (none: its user addresses are "[unknown]"),
 * owned by @m and valid until the next call.  NULL only on ENOMEM.
 */
struct ds_thread *ds_machine__script_thread(struct ds_machine *m, struct ds_thread *t, uint64_t when);

/*
 * Resolve @ip seen in @cpumode (DS_MISC_KERNEL / DS_MISC_USER ...) for
 * thread @t into @out.  Returns whether a map of that mode holds it (the
 * thread's, or the kernel's: its image or a module); else @out is
 * "[unknown]", the address itself.
 */
bool ds_machine__resolve(struct ds_machine *m, struct ds_thread *t, uint16_t cpumode,
			 uint64_t ip, struct ds_resolved *out);

/*
 * An address a sample names besides its ip (a branch's ends, a data
 * address), by one of perf's two rules for them, which its commands print
 * differently (so both are kept):
 *  - ds_machine__resolve_any (perf report's branch view, ip__resolve_ams):
 *    the first of user, then kernel, whose maps hold @addr; *@level is
 *    perf's '.', 'k', or 'H' when none does (perf's next tries are guest
 *    modes, which a host recording does not take);
 *  - ds_machine__resolve_fb (perf script's thread__find_map_fb): in
 *    @cpumode, else in the mode its value says (the top half is the
 *    kernel's); guest and hypervisor modes are not tried.
 * Whether a map holds it; else @out is "[unknown]" as ds_machine__resolve's.
 */
bool ds_machine__resolve_any(struct ds_machine *m, struct ds_thread *t, uint64_t addr,
			     struct ds_resolved *out, char *level);
bool ds_machine__resolve_fb(struct ds_machine *m, struct ds_thread *t, uint16_t cpumode,
			    uint64_t addr, struct ds_resolved *out);

/*
 * Bound the maps all address spaces hold at once to @max (0, the default:
 * none; ds_profile sets it from its memory budget).  Past it the tasks
 * that exited let go of their maps first (a long recording's countless
 * short processes); then a task's MMAP record is not kept (its addresses
 * resolve to no map) but counted by ds_machine__maps_dropped: a flood of
 * maps, hostile or a JIT's, does not grow memory without end.
 */
void ds_machine__set_max_maps(struct ds_machine *m, size_t max);
/*
 * The recording's TSC conversion (its reader's ds_header_info.time_conv,
 * filled as the TIME_CONV record is read; it must outlive the machine's
 * use): a jitdump of TSC timestamps maps its code at the times it gives.
 * Without one (NULL, or none in the recording), such a dump's code is
 * mapped at the dump's own mmap, said once.
 */
struct ds_time_conv;
void ds_machine__set_time_conv(struct ds_machine *m, const struct ds_time_conv *tc);
uint64_t ds_machine__maps_dropped(const struct ds_machine *m);

/* The user map of @t holding @addr, or NULL; valid until the thread's maps change. */
const struct ds_map *ds_thread__find_map(struct ds_thread *t, uint64_t addr);

/* One printed frame of a callchain, callee first. */
struct ds_cc_frame {
	uint64_t ip;               /* the callchain entry (the cookie for a cookie frame) */
	const char *sym;           /* NULL when unknown */
	uint64_t offset;           /* ip - symbol start */
	const char *dso;           /* DSO of the address ("[unknown]" if none) */
	bool inlined;              /* a function inlined at ip (perf prints "(inlined)") */
	bool kernel;
	bool cookie;               /* an unresolved deferred user chain: ip is the cookie */
	const char *elf_sym;       /* the symbol-table name at ip (perf report's flat profile
				      names it, even where DWARF names the function otherwise) */
	uint64_t sym_size;         /* that symbol's size (ds_frame's size) */
	uint64_t addr;             /* as in ds_resolved */
	uint64_t map_start, map_end, map_pgoff;
	const struct ds_dso *dso_obj;
	bool object;               /* sym is a data object (ds_frame's) */
};

/*
 * Frame @k (< @r->nr_frames; 0: the innermost of the address's inline
 * chain) of a resolved address, as a callchain prints it: the one way a
 * ds_resolved becomes a ds_cc_frame.  Its strings are @r's.
 */
struct ds_cc_frame ds_resolved__frame(const struct ds_resolved *r, size_t k);

/*
 * @f's srcline as perf 7.2 prints it (implemented in symbols/srcline.c):
 * "file:line" (the file's base name) from DWARF for frame @depth of the
 * frame's inline chain (0: the innermost; see ds_dso__srcline), else
 * with @with_sym "sym+offset" (decimal; perf report --sort srcline), else
 * "dso[hexaddr]" (the map-relative address; what perf script -F +srcline
 * prints, as it asks with no symbol).  Into @buf (always terminated);
 * returns the text's length.
 */
size_t ds_cc_frame__srcline(const struct ds_cc_frame *f, unsigned depth, bool with_sym, char *buf, size_t n);

/*
 * How many frames @f's address resolved to (its inline chain, innermost
 * first, the out-of-line function last; implemented in symbols/srcline.c):
 * 1 for a kernel frame, a cookie or a frame of no binary.  A chain's frames
 * of one address are that many in a row, @f the first: the depth of each
 * in its chain is what ds_cc_frame__srcline() takes.  (Telling the chains
 * apart by the "inlined" mark does not work: an address's innermost frame
 * can carry its function's own name, unmarked, as perf names it.)
 */
size_t ds_cc_frame__inline_chain(const struct ds_cc_frame *f);

/* A callchain as ds_machine__callchain() resolved it. */
struct ds_callchain {
	const struct ds_cc_frame *frames; /* callee first; the machine's, valid until its next
					     ds_machine__callchain() (may be NULL when nr is 0) */
	size_t nr;
	/*
	 * An id for these frames, so that a caller can cache what it makes of
	 * them (script caches their text): equal ids mean equal frames, and an
	 * id is never reused.  0 when the chain has none (it was not cached:
	 * too long, or symbols changed).
	 */
	uint64_t id;
	/*
	 * With DS_CALLCHAIN_SHAPE, the shape of these frames: equal shapes mean
	 * frames equal in everything but the addresses of frames that have a
	 * symbol (and the maps they were found in): the same names, DSOs,
	 * inlining, modes, and for frames with no symbol the same ip and addr.
	 * Many processes running the same code share shapes, so aggregating by
	 * shape (report's call graph) does the work once.  Shapes are kept for
	 * the machine's life, up to 4 MiB of frame ids; 0 when there was none
	 * to give (and always for a chain left with a deferred cookie, unique
	 * by nature) or it was not asked for.
	 */
	uint64_t shape;
};

/* ds_machine__callchain() flags */
enum {
	/* work out the chain's shape (a chain's first time only: callers that never ask pay nothing) */
	DS_CALLCHAIN_SHAPE = 1u << 0,
	/*
	 * a chain longer than max_stack keeps its outermost entries, not its
	 * innermost: perf's caller order (report --children, -g caller)
	 * takes them from the root
	 */
	DS_CALLCHAIN_FROM_ROOT = 1u << 1,
	/*
	 * @ips is an unwound chain (ds_user_unwind__chain): every entry after
	 * its PERF_CONTEXT_USER is an address, even one a marker's value (perf
	 * reports an unwound return address of 0 at pc - 1, ffffffffffffffff)
	 */
	DS_CALLCHAIN_UNWOUND = 1u << 2,
};

/*
 * Resolve callchain @ips (context markers switch the mode; entries before
 * the first marker are user addresses, as perf takes them) into frames,
 * expanding inlined functions, into *@out.  At most @max_stack entries are
 * taken (inlined frames do not count, as in perf).  @flags: DS_CALLCHAIN_*.
 */
void ds_machine__callchain(struct ds_machine *m, struct ds_thread *t, const uint64_t *ips, uint64_t nr,
			   unsigned max_stack, unsigned flags, struct ds_callchain *out);

/*
 * The frames of shape @shape (a ds_callchain.shape) as frame ids, *@nr of
 * them in the order of the chain's frames; NULL for shape 0 or one the
 * machine does not have.  Equal ids mean frames equal in everything a
 * shape compares.  Ids are dense (from 0 up to the number of distinct
 * frames seen), so a caller can keep what it works out for a frame in an
 * array indexed by id.  The array is the machine's, valid until the next
 * ds_machine__callchain() with DS_CALLCHAIN_SHAPE.
 */
const uint32_t *ds_machine__shape_frames(const struct ds_machine *m, uint64_t shape, size_t *nr);

/*
 * A binary the header's build-id table lists (@misc and @filename of its
 * entry; perf record lists the ones samples hit): perf 7.2 makes its DSO
 * objects from the table first, so a kernel-space entry names what the
 * kernel's maps show.  A module's path becomes its DSO's name (where its
 * MMAP said "[name]" or a path alike); the first kernel image listed that is
 * not a module (a vmlinux perf record found) names the kernel's DSO.  Call
 * before the data's records.  0, or -ENOMEM.
 */
int ds_machine__list_dso(struct ds_machine *m, uint16_t misc, const char *filename);
/* The kernel image's DSO name (ds_resolved.dso): "[kernel.kallsyms]" unless the build-id table named it. */
const char *ds_machine__kernel_dso(const struct ds_machine *m);
/*
 * perf's short name of DSO name @dso (a ds_resolved.dso), what perf report
 * shows: a listed module's "[name]", "[kernel.vmlinux]" for a kernel image
 * named by a vmlinux path, "[JIT] tid PID" for a perf map, a "[name]" as it
 * is, else the base name.  Interned or within @dso; NULL only on ENOMEM.
 */
const char *ds_machine__dso_short_name(struct ds_machine *m, const char *dso);
/*
 * The same for a frame's DSO name @dso in kernel space (@kernel) or not,
 * without a machine: a module's or a vmlinux path by its name alone, no
 * perf map rule.  Into @buf (@n bytes) when the name is not @dso's own
 * (never outside kernel space: @buf may then be NULL).
 */
const char *ds_dso__short_name(const char *dso, bool kernel, char *buf, size_t n);

/* Intern a string for the machine's lifetime. */
const char *ds_machine__intern(struct ds_machine *m, const char *s);
/*
 * The order in which user map name @name (interned) was first mapped: 1
 * for the first, 2 for the next...; 0 if never (perf makes its DSO objects
 * in this order).
 */
unsigned ds_machine__map_name_seq(const struct ds_machine *m, const char *name);

#endif
