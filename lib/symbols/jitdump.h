/* SPDX-License-Identifier: MIT */
/*
 * jitdump files (jit-PID.dump: CPython's -X perf_jit, node's --perf-prof,
 * Java's and .NET's agents), read directly: their code loads and moves,
 * each with the unwinding information (.eh_frame, .eh_frame_hdr) that came
 * before it, and the ELF image perf inject --jit writes for a code load
 * (jitted-PID-N.so), built in memory for the symbols and the unwinder or
 * written out by dstack inject --jit.  Internal to the library: symbols.c
 * keeps the dumps, process/maps.c maps their code at its timestamps.
 *
 * Every byte of a dump is hostile: each record's size is checked against
 * the file, each field against its record; the first problem is kept as
 * one line (dsi_jitdump.problem) naming the file and the record's offset.
 * A record that cannot be framed (a size past the end, smaller than its
 * prefix) ends the read with everything before it kept; a record that is
 * framed but wrong (code past its record, addresses no process has) is
 * skipped.  At most DSI_JIT_MAX_CODES code records are kept.
 */
#ifndef DSTACK_JITDUMP_H
#define DSTACK_JITDUMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "dstack/jitdump.h"

#define DSI_JIT_MAX_CODES (1u << 18)   /* ~800 bytes each once mapped (its DSO, map, name): ~200 MiB at most */
#define DSI_JIT_NAME_MAX 4096           /* a longer symbol name is cut */
/* Where perf 7.2's jitted ELF puts .text: after the ELF header and its one program header. */
#define DSI_JIT_TEXT_OFFSET DS_JIT_TEXT_OFFSET

/* A code load or move is the API's struct ds_jit_code (dstack/jitdump.h). */

struct dsi_jitdump {
	char *path;                /* the file read (under the symfs) */
	char *recorded;            /* the path its MMAP recorded (dsi_symbols__jitdump's; NULL: path) */
	int fd;                    /* kept open: code bytes are read when an image is built */
	uint64_t file_size;
	bool swap;                 /* written in the other byte order */
	uint32_t pid, elf_mach, version;
	uint64_t flags;
	bool arch_time;            /* JITDUMP_FLAGS_ARCH_TIMESTAMP: the codes' times are the TSC's */
	struct ds_jit_code *codes;
	size_t nr, cap;
	uint64_t nr_problems;      /* records skipped or reads ended (problem names the first) */
	char problem[512];         /* "" or the one line said about the file */
	struct ds_strblock *names;
};

/*
 * Read the dump at @path (opened as a regular file).  0 with *@jd filled
 * (maybe with a problem line and fewer codes); -errno when it cannot be
 * opened (problem set too) or no memory.  dsi_jitdump__exit frees it.
 */
int dsi_jitdump__read(struct dsi_jitdump *jd, const char *path);
void dsi_jitdump__exit(struct dsi_jitdump *jd);

/*
 * Code @c's time on the recording's clock: its record's timestamp, or for
 * a dump of TSC timestamps that converted by @tc (the recording's
 * TIME_CONV, as perf inject converts it); DS_NO_TIME when it has them and
 * @tc is NULL or empty (perf inject then injects nothing of the dump).
 */
struct ds_time_conv;
uint64_t dsi_jitdump__time(const struct dsi_jitdump *jd, const struct ds_jit_code *c, const struct ds_time_conv *tc);

/*
 * The source line perf 7.2 prints for code @c of @jd at @text_addr, an
 * address of its jitted ELF's .text (DSI_JIT_TEXT_OFFSET + the offset in
 * the code), from the debug-info record its load took (what addr2line
 * reads in the .debug_line perf inject --jit writes of it): 1 with
 * *@file (its name as the dump wrote it, cut to @file_size; "??" when none
 * was named) and *@line; 0 when no row holds the address (perf: "??:0");
 * -ENOENT when the code has no debug info; -EIO, -ENOMEM.
 */
int dsi_jitdump__srcline(const struct dsi_jitdump *jd, const struct ds_jit_code *c, uint64_t text_addr,
			 char *file, size_t file_size, unsigned *line);

/*
 * Whether @path names a jitdump as perf detects one: its base name is
 * "jit-PID.dump" with PID decimal and equal to @pid (any when @pid is 0,
 * a system-wide synthesized map).
 */
bool dsi_jitdump__name_matches(const char *path, uint32_t pid);

/*
 * The ELF image perf inject --jit writes for code record @c of @jd
 * (ET_DYN, one PT_LOAD of .text at DSI_JIT_TEXT_OFFSET, .eh_frame and
 * .eh_frame_hdr where the dump gave them, one function symbol, a GNU
 * build-id from the code's bytes and address), malloc'd into *@buf;
 * @with_lines: also the .debug_line, .debug_info and .debug_abbrev perf
 * writes of the load's debug-info record (for the files inject writes;
 * the library reads lines from the record itself, dsi_jitdump__srcline).
 * 0, or -errno (the code's bytes cannot be read: -EIO; -ENOMEM).
 * @bid (20 bytes) receives the build-id when not NULL.
 */
int dsi_jitdump__elf(const struct dsi_jitdump *jd, const struct ds_jit_code *c, bool with_lines, uint8_t **buf,
		     size_t *len, uint8_t bid[20]);

/*
 * The dump whose MMAP recorded @recorded, read once (under the symfs) and
 * kept by @syms; its problem line said then.  NULL if it cannot be read.
 */
struct ds_symbols;
struct ds_dso;
const struct dsi_jitdump *dsi_symbols__jitdump(struct ds_symbols *syms, const char *recorded);
/*
 * The DSO named @name (perf's jitted-PID-N.so path) of code @c of @jd:
 * its symbols and CFI are the image dsi_jitdump__elf builds.  The same
 * object for the same name (a move maps its load's); NULL on ENOMEM.
 */
struct ds_dso *dsi_symbols__jit_dso(struct ds_symbols *syms, const char *name, const struct dsi_jitdump *jd,
				    const struct ds_jit_code *c);

#endif
