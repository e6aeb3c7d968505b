/* SPDX-License-Identifier: MIT */
/*
 * User-space unwinding of stack snapshots (perf's --call-graph dwarf:
 * PERF_SAMPLE_REGS_USER + PERF_SAMPLE_STACK_USER), for x86_64 and i386
 * tasks, on any kernel.
 *
 * For each frame the best information the binary has is used: DWARF CFI
 * (.eh_frame, then .debug_frame, of the binary or its debug file), then
 * SFrame (.sframe, versions 2 and 3), then the frame-pointer chain.  The
 * rules of an address range are decoded once per binary and kept: a
 * profile's thousands of samples in the same functions cost a lookup each.
 *
 * The walk reads memory only from the snapshot: a rule that needs a word
 * outside it ends the walk ("left the snapshot").
 */
#ifndef DSTACK_UNWIND_H
#define DSTACK_UNWIND_H

#include <stddef.h>
#include <stdint.h>
#include "dstack/event.h"
#include "dstack/machine.h"

/* How a walk ended. */
enum ds_unwind_end {
	DS_UNWIND_END_OUTERMOST,   /* the outermost frame (return address undefined or 0) */
	DS_UNWIND_END_NO_INFO,     /* no map, no binary, or no rule for an address */
	DS_UNWIND_END_LEFT_STACK,  /* a rule needed memory outside the snapshot */
	DS_UNWIND_END_NO_PROGRESS, /* the stack pointer did not move up (a loop, or garbage) */
	DS_UNWIND_END_MAX_FRAMES,  /* the frame limit */
	DS_UNWIND_END_NO_VDSO,     /* a frame in the vDSO, whose image the recording lacks */
	DS_UNWIND_END_NO_REGS,     /* the sample has no usable registers or stack */
	DS_UNWIND_END__NR
};

/* How a frame's caller was found. */
enum ds_unwind_method {
	DS_UNWIND_CFI,
	DS_UNWIND_SFRAME,
	DS_UNWIND_FP,
	DS_UNWIND_PLT,      /* a PLT stub no CFI covers, by its own code */
	DS_UNWIND_METHOD__NR
};

struct ds_unwind_result {
	size_t nr;                              /* user frames written, innermost first */
	enum ds_unwind_end end;
	unsigned steps[DS_UNWIND_METHOD__NR];   /* callers found by each method */
};

struct ds_unwinder;

/* An unwinder for the threads and binaries of @m (which outlives it). */
struct ds_unwinder *ds_unwinder__new(struct ds_machine *m);
void ds_unwinder__delete(struct ds_unwinder *u);

/* The sample holds a snapshot to unwind (user registers and stack). */
bool ds_unwind__has_snapshot(const struct ds_evsel *evsel, const struct ds_sample *s);

/*
 * Unwind @s of @evsel in thread @t: at most @max user frames into @ips,
 * innermost first, as perf reports them (the first one the sampled
 * address, a caller's its return address - 1, an address interrupted by
 * a signal exact).  Never fails: a walk that cannot start ends with
 * DS_UNWIND_END_NO_REGS and no frame.
 */
void ds_unwinder__unwind(struct ds_unwinder *u, struct ds_thread *t, const struct ds_evsel *evsel,
			 const struct ds_sample *s, uint64_t *ips, size_t max, struct ds_unwind_result *res);

/* The same from registers and a stack copy, maps found through @find. */
struct ds_unwind_regs {
	uint64_t abi;             /* DS_REGS_ABI_32 or _64 */
	uint64_t mask;            /* the perf registers present (sample_regs_user) */
	const uint64_t *regs;     /* their values, lowest bit first */
	unsigned nr_regs;
	const void *stack;        /* a copy of the stack from the SP register up */
	uint64_t stack_size;
};
typedef const struct ds_map *(*ds_unwind_find_map)(void *ctx, uint64_t addr);
void ds_unwinder__unwind_regs(struct ds_unwinder *u, ds_unwind_find_map find, void *ctx,
			      const struct ds_unwind_regs *in, uint64_t *ips, size_t max,
			      struct ds_unwind_result *res);

/*
 * The vDSO is in no file: perf and dstack keep its images in perf's
 * build-id cache, and the recording names them by build-id.  Two kinds
 * (enum ds_vdso_kind, dstack/machine.h): the image every 64-bit task of a
 * kernel maps, and the one i386 tasks map (perf's "[vdso32]").  An unwinder walks through a [vdso] or [vdso32] map
 * with the image its machine was given (ds_machine__set_vdso); without it
 * the walk ends "no-vdso".
 *
 * @buildid_dir is what the program found ($PERF_BUILDID_DIR, else
 * ~/.debug, as perf): the library reads no environment; NULL: none
 * (-ENOENT).  Each returns 0 or -errno.
 */
/* perf's name of @kind's image in maps and build-id tables: "[vdso]", "[vdso32]". */
const char *ds_vdso__name(enum ds_vdso_kind kind);
/* The cache's file of @kind's image of build-id @bid: BUILDID_DIR/[vdso]/HEX/vdso (or [vdso32]/...). */
int ds_vdso__cache_path(const char *buildid_dir, enum ds_vdso_kind kind, const uint8_t *bid, size_t bid_len,
			char *buf, size_t size);
/*
 * Copy the running kernel's @kind image into the cache unless it is
 * there, with perf's .build-id/ link, and give its build-id.  The i386
 * image is read by a child process (a built-in i386 program): -ENOEXEC
 * where this kernel runs no i386 code.
 */
int ds_vdso__keep(const char *buildid_dir, enum ds_vdso_kind kind, uint8_t *bid, size_t *bid_len);
/*
 * This process's (64-bit) vDSO image in a new memory file: its descriptor
 * (close-on-exec; the caller closes it; the file reads as
 * /proc/self/fd/FD while open), or -errno.  Its build-id into @bid.
 */
int ds_vdso__own_file(uint8_t *bid, size_t *bid_len);

/* "outermost", "no-info", ... and "cfi", "sframe", "fp". */
const char *ds_unwind_end__name(enum ds_unwind_end e);
const char *ds_unwind_method__name(enum ds_unwind_method m);

/* perf's name of x86 register @idx ("AX", ... "R15"), NULL if none. */
const char *ds_x86_reg__name(unsigned idx);

#endif
