/* SPDX-License-Identifier: MIT */
/*
 * dstack jitdump: the jit-PID.dump files JIT runtimes write for perf
 * (CPython's -X perf_jit, node's --perf-prof, Java's and .NET's agents).
 *
 * Reading a recording (ds_profile, ds_machine) needs none of this: a
 * process's mmap of its jitdump is seen and its code mapped at each code
 * load's timestamp, named and unwound as perf inject --jit's output would
 * be.  This is for writing what perf inject --jit writes: one ELF file per
 * code load (jitted-PID-N.so: .text, one symbol, the dump's .eh_frame and
 * .eh_frame_hdr where it has them, a build-id), and the facts of the MMAP2
 * record that maps it.
 *
 * Ownership: a ds_jitdump owns its codes and their names until
 * ds_jitdump__close().  Every dump is hostile: sizes are checked against
 * the file and fields against their records, and everything before a
 * record that cannot be framed is kept.
 *
 * Errors (dstack/log.h): damage is not a failure: the dump opens with
 * the codes read before it.  Whether it was read whole is the dump's
 * status, as a writer's is (ds_writer__status): ds_jitdump__status()
 * returns 0, or a negative errno with ds_errmsg() saying the one line
 * (the first problem, naming the file and the offset, and how many there
 * were).  The dump says nothing itself, through the log hook or
 * otherwise: a reader of the recording (ds_machine) that maps the same
 * dump warns about it, and a caller with both prints one line.
 */
#ifndef DSTACK_JITDUMP_PUBLIC_H
#define DSTACK_JITDUMP_PUBLIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ds_jitdump;

/* One code load or move of a dump, in file order. */
struct ds_jit_code {
	uint64_t time;             /* the record's timestamp as written (ds_jitdump__code_time: on the recording's clock) */
	uint64_t addr, size;       /* the code (a move: its new address) */
	uint64_t map_len;          /* the MMAP2's length: size, or ALIGN_8(size) + the unwinding's mapped size */
	uint64_t index;            /* code_index: names jitted-PID-INDEX.so */
	uint32_t pid, tid;
	const char *name;          /* the symbol (owned by the dump) */
	bool move;                 /* JIT_CODE_MOVE (its load's image, mapped anew) */
	/* where its bytes lie in the file (ds_jitdump__write_elf reads them) */
	uint64_t code_off, unw_off, unw_size, unw_hdr_size, rec_off;
	/* the debug-info record before its load (JIT_CODE_DEBUG_INFO, perf's
	 * rule: the next load takes it): its entries' offset and bytes, and
	 * how many it says it holds; dbg_nr 0: none */
	uint64_t dbg_off, dbg_size, dbg_nr;
};

/* The file offset where perf's jitted ELF puts .text, the MMAP2's pgoff. */
#define DS_JIT_TEXT_OFFSET 0x80u

/* Whether @path is a jitdump perf would inject for @pid's mmap: "jit-PID.dump", PID == @pid (any for 0). */
bool ds_jitdump__is_marker(const char *path, uint32_t pid);

/*
 * Read @path.  NULL only without memory (errno ENOMEM); a file that cannot
 * be read gives a dump with no codes and that status.
 */
struct ds_jitdump *ds_jitdump__open(const char *path);
void ds_jitdump__close(struct ds_jitdump *jd);
/*
 * 0 if the file was read whole, else -errno (the file could not be read)
 * or -EBADMSG (damage: the codes before it kept), ds_errmsg() saying the
 * line "jitdump FILE: offset 0xN: what" again.
 */
int ds_jitdump__status(const struct ds_jitdump *jd);
size_t ds_jitdump__nr_codes(const struct ds_jitdump *jd);
/* Code @i (< nr_codes), valid until close. */
const struct ds_jit_code *ds_jitdump__code(const struct ds_jitdump *jd, size_t i);
/*
 * When code @i is mapped from, on the recording's clock: its timestamp
 * (CLOCK_MONOTONIC, perf record -k mono's), or where the dump's are the
 * CPU's time stamp counter (JITDUMP_FLAGS_ARCH_TIMESTAMP, Java's agent
 * with JITDUMP_USE_ARCH_TIMESTAMP=1) that converted by @tc, the
 * recording's TIME_CONV (ds_header_info.time_conv).  DS_NO_TIME for
 * such a dump when @tc is NULL or has no conversion (time_mult 0), and
 * for @i past the codes.
 */
struct ds_time_conv;
uint64_t ds_jitdump__code_time(const struct ds_jitdump *jd, size_t i, const struct ds_time_conv *tc);
/*
 * Write code @i's ELF file to @path (created or truncated, mode 0644), as
 * perf inject --jit writes it; its 20-byte build-id into @bid if not NULL.
 * 0, or -errno (-EIO: the dump no longer holds the code's bytes).
 */
int ds_jitdump__write_elf(const struct ds_jitdump *jd, size_t i, const char *path, uint8_t bid[20]);

#endif
