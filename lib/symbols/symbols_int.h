/* SPDX-License-Identifier: MIT */
/*
 * Internals shared by the files of lib/symbols/: a string interner, sorted
 * symbol tables, and the per-format loaders (ELF, DWARF inlines, kallsyms,
 * perf-PID.map).  Nothing here is part of the public API.
 */
#ifndef DSTACK_SYMBOLS_INT_H
#define DSTACK_SYMBOLS_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <gelf.h>
#include <libelf.h>
#include <elfutils/libdw.h>

#include "util/hashmap.h"

/* ---- string interning ------------------------------------------------ */

struct ds_istr;

/* Equal strings get the same pointer; they live until dsi_intern__exit(). */
struct ds_intern {
	struct dsi_hashmap map;     /* string hash -> struct ds_istr * (chained) */
	struct ds_istr *all;       /* every string, for freeing */
};

const char *dsi_intern__str(struct ds_intern *in, const char *s, size_t len);
/* Intern @s, demangled first when it is a C++ name ("_Z...") and @demangle. */
const char *dsi_intern__sym(struct ds_intern *in, const char *s, bool demangle);
/*
 * A Rust name (demangle_rust.c) as perf 7.2 prints it, malloc'd: v0
 * ("_R...") or legacy ("_ZN...E", hash left out); NULL for another name
 * or one that does not parse.
 */
char *dsi_demangle_rust(const char *s);
/* @s demangled (malloc'd, the caller frees) if it is a C++ name that demangles, else NULL. Thread-safe. */
char *dsi_demangle(const char *s);
/* The C++ demangler alone, as perf's __cxa_demangle: malloc'd, or NULL. */
char *dsi_demangle_cxx(const char *s);

/*
 * Strings that live as long as their owner (an ELF image's made-up PLT
 * names, the names a kallsyms or perf map keeps): blocks freed together.
 * Not interned, so a loader on another thread can make them.
 */
struct ds_strblock;
const char *dsi_strblock__add(struct ds_strblock **blocks, const char *s, size_t len);
void dsi_strblock__free(struct ds_strblock **blocks);
void dsi_intern__exit(struct ds_intern *in);

/* ---- symbol tables --------------------------------------------------- */

/*
 * The tables below are sorted by an address: the index just past the last
 * element whose uint64_t at @key_off is <= @addr (0: none is), for
 * DS_UPPER_BOUND(array, n, field, addr).
 */
static inline size_t dsi_upper_bound(const void *base, size_t n, size_t size, size_t key_off, uint64_t addr)
{
	const unsigned char *b = base;
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t key;

		memcpy(&key, b + mid * size + key_off, sizeof(key));
		if (key <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

#define DS_UPPER_BOUND(v, n, field, addr) \
	dsi_upper_bound((v), (n), sizeof(*(v)), offsetof(__typeof__(*(v)), field), (addr))

struct ds_sym {
	uint64_t start;
	uint64_t end;              /* exclusive */
	const char *name;          /* interned or owned by the table's buffer; if raw, by the ELF image */
	/*
	 * @name still points into the ELF image (its string table, or its
	 * made-up PLT names): interned at its first hit (ds_dso__resolve),
	 * demangled first if @demangle.  Loading a file interns none of its
	 * thousands of names, touches nothing shared (so it can run on another
	 * thread), and only interned names escape the image.
	 */
	bool raw, demangle;
	bool object;               /* a data object (perf's tree holds them: a data address's name) */
	/*
	 * The name binutils' addr2line gives the address when no DWARF
	 * function covers it (perf 7.2's inline lookup falls back to it): of
	 * the symbols starting here, by size (one of size 0 gives way to a
	 * sized one), then a function, then symbol-table order (bfd's
	 * better_fit).  At the very start a symbol of size 0 covers the
	 * address and wins (Go's runtime.text over internal/cpu.Initialize):
	 * a2l0_name.  NULL where it is @name's symbol; raw/demangle as @name's.
	 */
	const char *a2l_name, *a2l0_name;
	bool a2l_raw, a2l_demangle, a2l0_raw, a2l0_demangle;
};

struct ds_symtab {
	struct ds_sym *syms;       /* sorted by start */
	size_t nr;
	struct ds_symtree *tree;   /* perf's tree where symbols overlap (symtree.c), else NULL */
};

/*
 * The symbol perf 7.2 finds for @addr: the one with start <= addr < end,
 * or where symbols overlap, the one perf's tree descent meets (maybe
 * none); NULL if none.
 */
const struct ds_sym *dsi_symtab__find(const struct ds_symtab *t, uint64_t addr);
/* The symbol starting nearest at or below @addr, whether it reaches @addr or not (NULL: none). */
const struct ds_sym *dsi_symtab__nearest(const struct ds_symtab *t, uint64_t addr);

/*
 * perf's inserts into and erases from its symbol tree, in its order, kept
 * while a table is loaded (each symbol as loaded, the erases of
 * dsi_rawsym__finish, the PLT's symbols).  @id: the symbol's place in the
 * insert order (struct ds_rawsym's order).  Owned by the loader;
 * dsi_symlog__exit frees it.
 */
struct dsi_symop {
	uint64_t start;
	const char *name;          /* the symbol's name pointer: finds it in the table */
	uint32_t id;
	bool erase;
};

struct dsi_symlog {
	struct dsi_symop *ops;
	size_t nr, cap;
	uint32_t nr_ids;
	bool failed;               /* an op could not be kept: no replay */
};

void dsi_symlog__insert(struct dsi_symlog *log, uint32_t id, uint64_t start, const char *name);
void dsi_symlog__erase(struct dsi_symlog *log, uint32_t id);
void dsi_symlog__exit(struct dsi_symlog *log);

/* Whether symbols of @tab overlap, or share a start: perf's tree then decides the lookup. */
bool dsi_symtab__overlaps(const struct ds_symtab *tab);
/*
 * Build @tab's tree by replaying @log; @end_by_id: each symbol's end as
 * finished (objects too, which the table lacks), by id.  False without
 * memory (the table then has no tree, and the lookup is a binary search).
 */
bool dsi_symtab__replay(struct ds_symtab *tab, const struct dsi_symlog *log, const uint64_t *end_by_id);
const struct ds_sym *dsi_symtree__find(const struct ds_symtab *tab, uint64_t ip);
void dsi_symtab__drop_tree(struct ds_symtab *tab);
/* Unit tests: 0 if @tab's tree keeps the red-black rules, with its root and black height. */
int dsi_symtab__tree_check(const struct ds_symtab *tab, uint32_t *root, uint32_t *height);

/* A symbol candidate before end fix-up and de-duplication (perf's rules). */
struct ds_rawsym {
	uint64_t start;
	uint64_t size;             /* 0 when unknown */
	const char *name;
	bool raw, demangle;        /* as struct ds_sym's */
	uint32_t order;            /* position in the source table: ties keep the first */
	uint8_t bind;              /* STB_* */
	uint8_t type;              /* STT_* */
	bool ifunc_alias;          /* survived a duplicate that was an IFUNC */
	/*
	 * perf loads data objects and, after .symtab, the .dynsym too into
	 * its tree: they take part in its end fix-up and de-duplication (and
	 * shape the tree), and name the addresses they hold (a page fault's
	 * data address); addr2line (its pick below) reads the functions of
	 * .symtab alone
	 */
	bool object, dyn;
	bool finished;             /* went through dsi_rawsym__finish already */
	/* dsi_rawsym__finish: addr2line's pick among the symbols of this start (struct ds_sym) */
	struct ds_a2l_pick {
		const char *name;
		bool raw, demangle;
		uint8_t type;
		uint64_t size;     /* its elf_size */
	} a2l, a2l0;               /* past the start, and at the very start (struct ds_sym) */
	uint64_t elf_size;         /* st_size as the file gives it (0 stays 0) */
};

/*
 * Sort @raw by (start, order), give zero-sized symbols the next start as end,
 * then keep one symbol per start (perf's symbols__fixup_end and
 * symbols__fixup_duplicate; the last one gets at most a page).
 * Returns the new count; raw[i].size becomes end - start.  @raw's orders
 * are the order perf inserts them in; its erases go to @log if given.
 * Called again after more symbols were added (perf's .dynsym pass), it
 * fixes up and de-duplicates the whole set, as perf does its tree.
 */
size_t dsi_rawsym__finish(struct ds_rawsym *raw, size_t nr, struct dsi_symlog *log);

/* ---- ELF ------------------------------------------------------------- */

struct ds_load_seg {
	uint64_t off, filesz, memsz, vaddr;
};

struct ds_elf_image {
	int fd;
	Elf *elf;
	Dwarf *dwarf;              /* NULL without .debug_info */
	struct ds_cu_range *cu_ranges; /* the CUs' address ranges, by start, where the file has no
				      .debug_aranges (Go's binaries): dsi_dwarf__addrdie's index */
	size_t nr_cu_ranges;
	struct ds_symtab symtab;
	struct ds_load_seg *segs;
	size_t nr_segs;
	uint8_t build_id[64];
	size_t bid_len;
	/* a separate debug file (/usr/lib/debug/...) when the binary is stripped */
	int dbg_fd;
	Elf *dbg_elf;
	bool dbg_fetched;          /* that debug file is libdebuginfod's (the @dicache of dsi_elf__load) */
	bool has_symtab;           /* the symbols came from a .symtab (the file's or its debug file's) */
	struct ds_strblock *names; /* the made-up "name@plt" names */
	const char *bad;           /* after a failed dsi_elf__load: what is wrong (a static string) */
};

/*
 * Open @path: 0, -errno if it cannot be opened, -ENOEXEC if it is not an
 * ELF file (the caller says so: a loader on another thread stays quiet).
 */
int dsi_elf__open(struct ds_elf_image *img, const char *path);
/*
 * Symbols (+ PLT), program headers. false on a corrupt file.  When the
 * file has no .symtab or no DWARF, they are taken from its debug file if
 * one is installed, found as gdb and perf find it: by build-id
 * (@root/usr/lib/debug/.build-id/xx/yyyy.debug), else by .gnu_debuglink
 * next to @path, in its .debug/ directory, or under @root/usr/lib/debug.
 * @root is the symfs ("" or NULL for none); @path the binary's own path
 * (as recorded, without the symfs).  A debug file whose build-id differs
 * is not used.  Touches nothing outside @img (names stay raw: struct
 * ds_sym), so images load on any thread; @demangle marks the C++ names.
 * @dicache (NULL: none): libdebuginfod's cache, CACHE/HEX/debuginfo tried
 * after the installed debug files.
 */
/* ---- source lines (symbols/srcline.c) ---------------------------------- */

struct ds_srcline_cache;
struct ds_dso;
void dsi_srcline_cache__free(struct ds_srcline_cache *c);
/* Where @d's line cache hangs, for symbols/srcline.c (freed with the image). */
struct ds_srcline_cache **dsi_dso__srclines(struct ds_dso *d);

/* The ELF image in @buf (kept by the caller until dsi_elf__close): 0, or -ENOEXEC. */
int dsi_elf__open_memory(struct ds_elf_image *img, void *buf, size_t len);
bool dsi_elf__load(struct ds_elf_image *img, bool demangle, const char *root, const char *path,
		  const char *dicache);
void dsi_elf__close(struct ds_elf_image *img);
/* File offset -> ELF virtual address through PT_LOAD; false if outside. */
/*
 * The first GNU build-id note ("GNU", NT_GNU_BUILD_ID, 1-20 bytes) among
 * the ELF notes (4-byte aligned) in the @size bytes at @p: an image's
 * PT_NOTE segment, or the running kernel's /sys/kernel/notes.  0, or
 * -ENOENT when there is none whole.
 */
int dsi_note_build_id(const uint8_t *p, size_t size, uint8_t *bid, size_t *bid_len);
/*
 * The ELF address of file offset @off (a map's pgoff arithmetic): in a
 * PT_LOAD's file bytes, else past them in its memory (.bss: a data
 * address of a page fault, in the page mapped from the file or beyond).
 */
bool dsi_elf__off_to_vaddr(const struct ds_elf_image *img, uint64_t off, uint64_t *vaddr);
/* @elf's first section named @name, its header in *@shdr (and index in *@idx unless NULL); NULL if none. */
Elf_Scn *dsi_elf__section(Elf *elf, const char *name, GElf_Shdr *shdr, size_t *idx);
/*
 * The loaded image of @d (loading it if needed), NULL if it has no usable
 * file (none, or another build-id): the unwinder reads its tables,
 * symbols/srcline.c its DWARF.
 */
struct ds_dso;
const struct ds_elf_image *dsi_dso__image(struct ds_dso *d);
/* Whether @d is the code of a jitdump (symbols/jitdump.h), whose image is built in memory; false for NULL. */
bool dsi_dso__is_jitdump(const struct ds_dso *d);
/* The jitdump code @d is, its dump into *@jd; NULL (and *@jd untouched) for any other DSO. */
struct dsi_jitdump;
struct ds_jit_code;
const struct ds_jit_code *dsi_dso__jit_code(const struct ds_dso *d, const struct dsi_jitdump **jd);

/* ---- DWARF inline chains ---------------------------------------------- */

struct ds_inline_frame {
	const char *name;          /* interned, NULL if the DIE has no name */
	uint64_t die;              /* the function's DIE offset: it names the instance */
	uint64_t low;              /* the first address of its first range */
	bool unlinked;             /* a language that mangles names, but no linkage name */
};

/* What lookups in one Dwarf keep: names demangled once, each CU's scopes by address. */
struct ds_dwarf_cache {
	struct dsi_hashmap names;   /* DWARF string address -> interned name */
	struct dsi_hashmap cus;     /* CU DIE offset -> its scopes (symbols/dwarf.c) */
	struct dsi_hashmap a2l;     /* unlinked function DIE -> what addr2line names it now (symbols.c) */
};

void dsi_dwarf_cache__init(struct ds_dwarf_cache *c);
void dsi_dwarf_cache__exit(struct ds_dwarf_cache *c);

/*
 * The code scopes (subprograms, inlined instances, lexical blocks...)
 * holding @pc below @parent, outermost first, appended to @chain from *@n
 * on: at most @max of them, no deeper than @max levels (hostile trees are
 * cut).  true once one was found.  The walk dwarf__inlines() and the
 * source lines (symbols/srcline.c) share, so their frames go together.
 */
bool dsi_dwarf__scopes_at(Dwarf_Die *parent, uint64_t pc, Dwarf_Die *chain, size_t *n, size_t max, unsigned depth);

/*
 * The functions containing @vaddr, innermost first (inlined subroutines, then
 * the subprogram).  Returns the count (<= @max), 0 if DWARF knows nothing.
 * @cache: kept for @dw between lookups; NULL walks the DIEs every time
 * (the same result: the tests compare the two).
 */
/*
 * The compile unit holding @vaddr into *@cu, as dwarf_addrdie finds it;
 * in a file without .debug_aranges (Go's) by the CUs' own ranges, indexed
 * when the file was loaded (dsi_dwarf__index_cus).  NULL if none.
 */
Dwarf_Die *dsi_dwarf__addrdie(const struct ds_elf_image *img, uint64_t vaddr, Dwarf_Die *cu);
/*
 * How much of scope chain @chain (outermost first, @n of them) binutils'
 * addr2line sees, which perf 7.2's inline lookup runs: it takes no range
 * of a function given as DW_FORM_rnglistx (clang's DWARF 5 for an inlined
 * instance in pieces), so the innermost such functions (and the blocks
 * around them) are not found; found ones still name them as callers.
 */
size_t dsi_dwarf__a2l_depth(Dwarf_Die *chain, size_t n);
/* Build @img's CU index when its DWARF has no address ranges table (see cu_ranges). */
void dsi_dwarf__index_cus(struct ds_elf_image *img);
size_t dsi_dwarf__inlines(const struct ds_elf_image *img, uint64_t vaddr, struct ds_intern *in, bool demangle,
			 struct ds_dwarf_cache *cache, struct ds_inline_frame *out, size_t max);

/* ---- kallsyms (symbols/kallsyms.c) and perf maps (symbols/perfmap.c) -- */

/* A JIT map (/tmp/perf-PID.map) read whole: its symbols and their names. */
struct ds_textsyms {
	struct ds_strblock *names;    /* the kept names, copied once */
	struct ds_symtab tab;
};

/*
 * Kernel symbols (kallsyms), searched without copying the text: a sorted
 * text (a real one) in place, from samples of its lines; any other through
 * the full index of its kept symbols (address, where the name lies).  A
 * regular file is scanned through a buffer, then mapped; anything else
 * (/proc/kallsyms) is read into memory.  Names are copied when first hit.
 * The same symbols and ends either way: in a same-address group the last
 * one listed wins (perf's end fix-up gives only it a size).
 */
struct ds_kallsyms {
	char *text;                /* the whole text: mapped (a regular file) or malloc'd */
	size_t len;
	bool mapped;
	int fd;                    /* a regular file's, when fd_open: scanned again for the full index */
	bool fd_open;
	bool in_place;             /* sorted: searched through samples (else v) */
	struct ds_ksample { uint64_t key; uint64_t off; } *samples;   /* every 32nd ordered line */
	size_t nr_samples;
	size_t tail;               /* just past the last ordered (non-module) line */
	struct ds_ksym { uint64_t start; uint64_t name_off; } *v;   /* the full index, sorted by (start, name_off) */
	size_t nr;
	struct ds_kmodsym { uint64_t start, name_off, mod_off; uint32_t mod_len; } *mods;   /* module lines, by address */
	size_t nr_mods;
	bool mods_read;            /* mods built (on the first module lookup) */
	struct dsi_hashmap names;   /* name offset -> the name, copied on first use */
	struct ds_strblock *blocks;   /* the names copied */
};

/* Load @path; false if it cannot be read (or no memory). */
bool dsi_kallsyms__load(struct ds_kallsyms *ks, const char *path);
/* Did the text list a symbol (a file of no kallsyms line lists none)? */
static inline bool dsi_kallsyms__any(const struct ds_kallsyms *ks)
{
	return ks->in_place ? ks->nr_samples > 0 : ks->nr > 0;
}
/* The symbol containing @addr: its name and start; false if none. */
bool dsi_kallsyms__find(struct ds_kallsyms *ks, uint64_t addr, const char **name, uint64_t *start);
/*
 * The symbol of module @module (@len bytes, without brackets) containing
 * @addr: its name and start; false if none (or no memory).
 */
bool dsi_kallsyms__find_module(struct ds_kallsyms *ks, const char *module, size_t len, uint64_t addr,
			       const char **name, uint64_t *start);
/* The address of the function symbol @name (type T or t), as perf's kallsyms__get_function_start; false if none. */
bool dsi_kallsyms__function_addr(const struct ds_kallsyms *ks, const char *name, uint64_t *addr);
void dsi_kallsyms__exit(struct ds_kallsyms *ks);
/* Load the JIT map @path; false if it cannot be read (or no memory). */
bool dsi_perfmap__load(struct ds_textsyms *ts, const char *path);
void dsi_textsyms__exit(struct ds_textsyms *ts);

/* Read a whole file, NUL-terminated; NULL on failure (errno set). */
char *dsi_read_file(const char *path, size_t *len);

#endif
