/* SPDX-License-Identifier: MIT */
/*
 * dstack symbols: address -> symbol for user DSOs (ELF, via libelf and libdw)
 * and for the kernel (a kallsyms file).
 *
 * Ownership:
 *   - A ds_symbols object owns every ds_dso it hands out; they live until
 *     ds_symbols__delete().  Names returned in ds_frame are interned and live
 *     as long as the ds_symbols object; callers never free them.
 *   - Nothing is loaded until first needed (a DSO's ELF is opened on its first
 *     lookup) and nothing is loaded twice.
 *
 * Errors: constructors return NULL and set errno; a DSO whose file is
 * missing, unreadable, corrupt, or whose build-id does not match is not an
 * error: its lookups just find nothing (and one warning is logged through
 * ds_log).  Hostile ELF files must never crash or hang the loader.
 */
#ifndef DSTACK_SYMBOLS_H
#define DSTACK_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

struct ds_symbols;
struct ds_dso;
struct ds_debuginfod_opts;
struct ds_debuginfod_req;

struct ds_symbols_opts {
	const char *symfs;        /* root prepended to DSO paths, or NULL */
	const char *kallsyms;     /* kallsyms file, or NULL for /proc/kallsyms */
	bool no_inline;           /* do not expand inlined frames from DWARF */
	bool no_demangle;         /* keep C++ names mangled */
	/*
	 * libdebuginfod's cache (include/dstack/debuginfod.h), or NULL: a
	 * binary with no installed debug file takes CACHE/BUILD-ID/debuginfo
	 * from there (fetched before by ds_debuginfod__fetch).
	 */
	const char *debuginfod_cache;
	/*
	 * Debug files asked of debuginfod servers (NULL: never; its strings
	 * are copied): for a binary that lacks a .symtab or DWARF here and has
	 * no installed debug file, by its build-id, whichever record gave it
	 * (the header's table, an MMAP2 record, else the binary's own note).  Asked once per DSO, at its
	 * first load (its first lookup, on the caller's thread: the lookup
	 * waits for the answer, within the opts' timeout), or before, for the
	 * DSOs handed to ds_symbols__debuginfod_ahead().  A fetched file is
	 * used at once (from @debuginfod_cache, which must be set too).  A
	 * binary not found is not asked: a debug file does not give the
	 * binary's file offsets, which the samples' addresses are.
	 */
	const struct ds_debuginfod_opts *debuginfod;
	/*
	 * What came of each DSO's request (once per DSO asked; NULL: not
	 * said): @r's path, build-id and result, valid during the call.
	 */
	void (*debuginfod_done)(void *ctx, const struct ds_debuginfod_req *r);
	void *debuginfod_ctx;
};

/* One printed frame of a resolved address. */
struct ds_frame {
	const char *name;         /* symbol name (demangled), NULL if unknown */
	uint64_t offset;          /* address - symbol start */
	bool inlined;             /* an inlined function (perf prints "(inlined)") */
	const char *elf_name;     /* the symbol-table symbol holding the address (perf
				     report's name for a sample), NULL if unknown */
	uint64_t size;            /* that symbol's size (end - start; 0 if unknown): perf's
				     inlined functions take the range of the one they are in */
	bool object;              /* a data object (STT_OBJECT): perf report prints it with an offset */
};

struct ds_symbols *ds_symbols__new(const struct ds_symbols_opts *opts);
void ds_symbols__delete(struct ds_symbols *syms);

/*
 * The DSO at @path (as recorded in an MMAP/MMAP2 record, e.g.
 * "/usr/lib/x86_64-linux-gnu/libc.so.6"); @build_id (may be NULL, @bid_len 0)
 * is the recorded build-id; if both it and the file's are known and differ,
 * the file is not used.  Returns the same object for the same path.  Never
 * NULL except on allocation failure.
 */
struct ds_dso *ds_symbols__dso(struct ds_symbols *syms, const char *path,
			       const uint8_t *build_id, size_t bid_len);

/*
 * A DSO named @name (in messages) whose ELF is read from @file itself,
 * never under the symfs: an image kept outside the recorded paths (the
 * vDSO's, in perf's build-id cache or a memory file).  The same object for
 * the same @name; NULL on allocation failure.
 */
struct ds_dso *ds_symbols__dso_file(struct ds_symbols *syms, const char *name, const char *file,
				    const uint8_t *build_id, size_t bid_len);

/*
 * The debug files of @dsos (the binaries a recording's header lists as
 * sampled) asked now, the opts' jobs at once, where they are wanted
 * (ds_debuginfod__wanted; see ds_symbols_opts.debuginfod), each said
 * through debuginfod_done; a DSO asked here is not asked again at its
 * load.  Nothing without ds_symbols_opts.debuginfod.  0, or -ENOMEM.
 */
int ds_symbols__debuginfod_ahead(struct ds_symbols *syms, struct ds_dso *const *dsos, size_t n);

/*
 * Changes whenever results handed out before may no longer hold (a file
 * dropped for a build-id learnt too late): callers caching resolutions
 * compare it.
 */
uint64_t ds_symbols__generation(const struct ds_symbols *syms);

/* Record a build-id learnt later (e.g. from the HEADER_BUILD_ID feature). */
void ds_dso__set_build_id(struct ds_dso *dso, const uint8_t *build_id, size_t bid_len);

const char *ds_dso__path(const struct ds_dso *dso);

/*
 * Open and read the DSO's file now rather than at its first
 * ds_dso__resolve(), e.g. while waiting for something else.  A file not
 * found, or with another build-id, is warned about at that first resolve,
 * not here: a DSO loaded ahead may never be asked for.  True if the file
 * is usable.
 */
bool ds_dso__load(struct ds_dso *dso);

/*
 * The DSO's build-id: the recorded one, else the file's if it was opened
 * already; NULL (*@len 0) if neither is known.  Owned by the DSO.
 */
const uint8_t *ds_dso__build_id(const struct ds_dso *dso, size_t *len);

/*
 * Resolve @file_off, an offset into the DSO's file (ip - map start + map
 * pgoff, as perf's map__map_ip), into frames, innermost first, the way
 * perf 7.x prints them with its default inline expansion:
 *   - with DWARF inline info: one frame per function of the inline chain at
 *     that address (innermost first, outermost last); a frame whose name
 *     equals the ELF symbol's is that symbol (inlined = false); any other is
 *     inlined = true with the ELF symbol's start as its start;
 *   - otherwise: the one ELF symbol (.symtab, else .dynsym, plus synthesized
 *     "name@plt" entries) containing the address.
 * Returns the number of frames written (at most @max), 1 with name NULL when
 * nothing is known.  Results are cached per address.
 */
size_t ds_dso__resolve(struct ds_dso *dso, uint64_t file_off,
		       struct ds_frame *frames, size_t max);

/* A source position: the file as DWARF names it, and its line. */
struct ds_srcline {
	const char *file;         /* lives as long as the DSO's file is loaded (its symbols object) */
	unsigned line;
};

/*
 * The source position of frame @depth of ds_dso__resolve()'s frames at
 * @file_off (0: the innermost, from DWARF's line table for that address;
 * each further frame: where the frame before it was inlined, its
 * DW_AT_call_file and DW_AT_call_line), as addr2line -i gives them; a
 * unit that holds the address with no line for it gives file "??" line 0
 * (perf prints "??:0"), a line record of line 0 line 0.  0, or -ENOENT
 * when no DWARF unit holds the address, or no such depth.  Cached per
 * address: a repeated address costs a lookup.
 *
 * perf 7.2 prints a srcline (script -F +srcline, report --sort srcline)
 * as the file's base name, ':', the line ("wl.c:15"); with no line, the
 * symbol and the decimal offset into it ("spin+12"), with no symbol the
 * DSO's base name and the hex address ("libc.so.6[42b20]", the address
 * perf report prints for it).
 */
int ds_dso__srcline(const struct ds_dso *dso, uint64_t file_off, unsigned depth, struct ds_srcline *out);

/*
 * Start loading the kernel's symbols on a helper thread, so that reading
 * the recording overlaps it; the first ds_symbols__kernel() waits for it.
 * Nothing else of @syms is touched by the helper.  Optional: without it the
 * first lookup loads them.  0, or -errno if no thread could be started
 * (then the first lookup loads them as usual).
 */
int ds_symbols__preload_kernel(struct ds_symbols *syms);

/*
 * Start loading the binary @path (as recorded: under the symfs if one is
 * set) on a helper thread, so that its first ds_dso__resolve() finds it
 * loaded (or waits for the load under way) instead of loading it then.
 * Safe to call from any thread, any number of times per path; paths that
 * are not absolute are ignored.  A file that fails to load is loaded
 * again, and warned about, at its first lookup: nothing here warns.
 * 0, or -ENOMEM, or -errno if the helper could not be started (later
 * requests are then ignored and every binary loads at its first lookup).
 */
int ds_symbols__prefetch(struct ds_symbols *syms, const char *path);
/* Wait until every binary requested so far has loaded (or failed to). */
void ds_symbols__prefetch_wait(struct ds_symbols *syms);

/*
 * Kernel: the kallsyms symbol containing @addr of the kernel image, into
 * @frame; false if none.  The address is the recording's: when the
 * kallsyms file lists the image elsewhere (another boot's KASLR offset,
 * known from ds_symbols__kernel_reloc), it is moved by the difference.
 */
bool ds_symbols__kernel(struct ds_symbols *syms, uint64_t addr, struct ds_frame *frame);
/* Whether kernel symbols were read: a kallsyms file that loaded and lists something. */
bool ds_symbols__kernel_known(struct ds_symbols *syms);
/*
 * The same for an address in the map of kernel module @module ("[name]" or
 * "name", as perf names its DSO): the kallsyms lines of that module
 * ("ADDR TYPE NAME\t[name]"), each ending where the next symbol of the
 * file starts if that is the same module's, else a page past its page.
 * Never moved (module addresses are the file's own).
 */
bool ds_symbols__kernel_module(struct ds_symbols *syms, const char *module, uint64_t addr, struct ds_frame *frame);
/*
 * The recording's address of the kernel image's reference symbol @sym
 * (perf's ref_reloc_sym: "_text" in the "[kernel.kallsyms]_text" MMAP,
 * its pgoff).  The first call counts; call it before the first lookup.
 */
void ds_symbols__kernel_reloc(struct ds_symbols *syms, const char *sym, uint64_t addr);

/*
 * The recording's kernel image's build-id (its MMAP2 record's, or the
 * header's "[kernel.kallsyms]" entry).  Without a kallsyms file named
 * (ds_symbols_opts.kallsyms), the running kernel's /proc/kallsyms serves
 * a recording of that kernel only, as perf takes it: when the running
 * kernel has another build-id, kernel addresses resolve to nothing (said
 * once), not to another kernel's symbols.  A recording that names no
 * kernel build-id still gets /proc/kallsyms (perf's last resort).  The
 * first call counts; make it before the first lookup.
 */
void ds_symbols__recorded_kernel(struct ds_symbols *syms, const uint8_t *build_id, size_t bid_len);

/*
 * JIT maps (/tmp/perf-PID.map, under symfs if set): resolve @addr for @pid.
 * false if the file or a matching entry does not exist.
 */
bool ds_symbols__jit(struct ds_symbols *syms, int pid, uint64_t addr, struct ds_frame *frame);

#endif
