/* SPDX-License-Identifier: MIT */
/*
 * Internals shared by the symbols_*.c files: a string interner, sorted
 * symbol tables, and the per-format loaders (ELF, DWARF inlines, kallsyms,
 * perf-PID.map).  Nothing here is part of the public API.
 */
#ifndef DSTACK_SYMBOLS_INT_H
#define DSTACK_SYMBOLS_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <libelf.h>
#include <elfutils/libdw.h>

#include "util/hashmap.h"

/* ---- string interning ------------------------------------------------ */

struct ds_istr;

/* Equal strings get the same pointer; they live until ds_intern__exit(). */
struct ds_intern {
	struct ds_hashmap map;     /* string hash -> struct ds_istr * (chained) */
	struct ds_istr *all;       /* every string, for freeing */
};

const char *ds_intern__str(struct ds_intern *in, const char *s, size_t len);
/* Intern @s, demangled first when it is a C++ name ("_Z...") and @demangle. */
const char *ds_intern__sym(struct ds_intern *in, const char *s, bool demangle);
/* @s demangled (malloc'd, the caller frees) if it is a C++ name that demangles, else NULL. Thread-safe. */
char *ds_demangle(const char *s);

/*
 * Strings that live as long as their owner (an ELF image's made-up PLT
 * names, the names a kallsyms or perf map keeps): blocks freed together.
 * Not interned, so a loader on another thread can make them.
 */
struct ds_strblock;
const char *ds_strblock__add(struct ds_strblock **blocks, const char *s, size_t len);
void ds_strblock__free(struct ds_strblock **blocks);
void ds_intern__exit(struct ds_intern *in);

/* ---- symbol tables --------------------------------------------------- */

/*
 * The tables below are sorted by an address: the index just past the last
 * element whose uint64_t at @key_off is <= @addr (0: none is), for
 * DS_UPPER_BOUND(array, n, field, addr).
 */
static inline size_t ds_upper_bound(const void *base, size_t n, size_t size, size_t key_off, uint64_t addr)
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
	ds_upper_bound((v), (n), sizeof(*(v)), offsetof(__typeof__(*(v)), field), (addr))

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
	/*
	 * The name binutils' addr2line gives the address when no DWARF
	 * function covers it (perf 7.2's inline lookup falls back to it): of
	 * the symbols starting here, the first function in symbol-table
	 * order.  NULL if it is @name's symbol; raw/demangle as @name's.
	 */
	const char *a2l_name;
	bool a2l_raw, a2l_demangle;
};

struct ds_symtab {
	struct ds_sym *syms;       /* sorted by start */
	size_t nr;
};

/* The symbol with start <= addr < end, or NULL. */
const struct ds_sym *ds_symtab__find(const struct ds_symtab *t, uint64_t addr);

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
	/* ds_rawsym__finish: addr2line's pick among the symbols of this start (struct ds_sym) */
	const char *a2l_name;
	bool a2l_raw, a2l_demangle;
	uint8_t a2l_type;
};

/*
 * Sort @raw by (start, order), give zero-sized symbols the next start as end,
 * then keep one symbol per start (perf's symbols__fixup_end and
 * symbols__fixup_duplicate; the last one gets at most a page).
 * Returns the new count; raw[i].size becomes end - start.
 */
size_t ds_rawsym__finish(struct ds_rawsym *raw, size_t nr);

/* ---- ELF ------------------------------------------------------------- */

struct ds_load_seg {
	uint64_t off, filesz, vaddr;
};

struct ds_elf_image {
	int fd;
	Elf *elf;
	Dwarf *dwarf;              /* NULL without .debug_info */
	struct ds_symtab symtab;
	struct ds_load_seg *segs;
	size_t nr_segs;
	uint8_t build_id[64];
	size_t bid_len;
	/* a separate debug file (/usr/lib/debug/...) when the binary is stripped */
	int dbg_fd;
	Elf *dbg_elf;
	struct ds_strblock *names; /* the made-up "name@plt" names */
	const char *bad;           /* after a failed ds_elf__load: what is wrong (a static string) */
};

/*
 * Open @path: 0, -errno if it cannot be opened, -ENOEXEC if it is not an
 * ELF file (the caller says so: a loader on another thread stays quiet).
 */
int ds_elf__open(struct ds_elf_image *img, const char *path);
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
void ds_srcline_cache__free(struct ds_srcline_cache *c);
/* Where @d's line cache hangs, for symbols/srcline.c (freed with the image). */
struct ds_srcline_cache **ds_dso__srclines(struct ds_dso *d);

bool ds_elf__load(struct ds_elf_image *img, bool demangle, const char *root, const char *path,
		  const char *dicache);
void ds_elf__close(struct ds_elf_image *img);
/* File offset -> ELF virtual address through PT_LOAD; false if outside. */
bool ds_elf__off_to_vaddr(const struct ds_elf_image *img, uint64_t off, uint64_t *vaddr);
/*
 * The loaded image of @d (loading it if needed), NULL if it has no usable
 * file (none, or another build-id): the unwinder reads its tables,
 * symbols/srcline.c its DWARF.
 */
struct ds_dso;
const struct ds_elf_image *ds_dso__image(struct ds_dso *d);

/* ---- DWARF inline chains ---------------------------------------------- */

struct ds_inline_frame {
	const char *name;          /* interned, NULL if the DIE has no name */
	uint64_t die;              /* the function's DIE offset: it names the instance */
	uint64_t low;              /* the first address of its first range */
	bool unlinked;             /* a language that mangles names, but no linkage name */
};

/* What lookups in one Dwarf keep: names demangled once, each CU's scopes by address. */
struct ds_dwarf_cache {
	struct ds_hashmap names;   /* DWARF string address -> interned name */
	struct ds_hashmap cus;     /* CU DIE offset -> its scopes (symbols/dwarf.c) */
	struct ds_hashmap a2l;     /* unlinked function DIE -> what addr2line names it now (symbols.c) */
};

void ds_dwarf_cache__init(struct ds_dwarf_cache *c);
void ds_dwarf_cache__exit(struct ds_dwarf_cache *c);

/*
 * The functions containing @vaddr, innermost first (inlined subroutines, then
 * the subprogram).  Returns the count (<= @max), 0 if DWARF knows nothing.
 * @cache: kept for @dw between lookups; NULL walks the DIEs every time
 * (the same result: the tests compare the two).
 */
size_t ds_dwarf__inlines(Dwarf *dw, uint64_t vaddr, struct ds_intern *in, bool demangle,
			 struct ds_dwarf_cache *cache, struct ds_inline_frame *out, size_t max);

/* ---- kallsyms and perf maps ------------------------------------------ */

/* A text file read whole; symbol names point into it. */
struct ds_textsyms {
	struct ds_strblock *names;    /* the kept names, copied once */
	struct ds_symtab tab;
};

/*
 * Kernel symbols (kallsyms), indexed without copying: one pass records each
 * kept symbol's address and where its name lies in the text (mapped when
 * the file is regular, then unmapped and names read with pread; read into
 * memory otherwise, e.g. /proc/kallsyms); names are copied when first hit.
 * Same symbols and ends as the ds_textsyms path: in a same-address group
 * the last one listed wins (perf's end fix-up gives only it a size).
 */
struct ds_kallsyms {
	char *text;
	size_t len;
	bool mapped;               /* text is an mmap of the file (else malloc'd; NULL once indexed from a file) */
	int fd;                    /* the file, when fd_open: names are pread from it */
	bool fd_open;
	struct ds_ksym { uint64_t start; uint64_t name_off; } *v;   /* sorted by (start, name_off) */
	size_t nr;
	bool v_reserved;           /* v is an mmap of v_bytes (else malloc'd) */
	size_t v_bytes;
	struct ds_hashmap names;   /* name offset -> the name, copied on first use */
	bool in_place;             /* sorted text searched as it is (text mapped; v unused) */
	struct ds_ksample { uint64_t key; uint64_t off; } *samples;   /* every 32nd ordered line */
	size_t nr_samples;
	size_t tail;               /* just past the last ordered (non-module) line */
	/* symbols found in place, chained per sample block (the block of the
	 * address looked up): a block's lookups end at one of its <= 33 lines,
	 * so a chain stays short, and a hit reads no text */
	struct ds_khit { uint64_t start, end; const char *name; uint32_t next; } *hits;
	size_t nr_hits, cap_hits;
	uint32_t *hit_head;        /* per sample block: 1 + its newest hit, 0 for none */
	char *cache_path;          /* where the samples are kept across runs, or NULL */
	struct ds_hashmap chunks;  /* chunk index -> 16 KiB of the file read for lookups */
	bool from_cache;           /* the samples came from there */
	void *keep;                /* a check still to keep there (ds_kallsyms__keep_check), or NULL */
	struct ds_strblock *blocks;   /* the names copied */
};

/* Build the parser's lookup tables (thread-safe; the loads call it too). */
void ds_kallsyms__init_tables(void);
/*
 * Load @path; with @cache_dir (may be NULL), a sorted regular file's
 * check is kept there for later runs and taken from there when the file
 * is unchanged.  False if the file cannot be read (or no memory).
 */
bool ds_kallsyms__load(struct ds_kallsyms *ks, const char *path, const char *cache_dir);
/*
 * The same, but the check to keep in @cache_dir is only copied aside for
 * ds_kallsyms__keep_check(), which writes it: a thread that others wait
 * for tells them the symbols are ready first (the write need not be part
 * of their wait).  keep_check only reads what load_unkept set aside,
 * so it may run while other threads look symbols up.
 */
bool ds_kallsyms__load_unkept(struct ds_kallsyms *ks, const char *path, const char *cache_dir);
void ds_kallsyms__keep_check(struct ds_kallsyms *ks);
/* The symbol containing @addr: its name and start; false if none. */
bool ds_kallsyms__find(struct ds_kallsyms *ks, uint64_t addr, const char **name, uint64_t *start);
void ds_kallsyms__exit(struct ds_kallsyms *ks);
bool ds_perfmap__load(struct ds_textsyms *ks, const char *path);
void ds_textsyms__exit(struct ds_textsyms *ks);

/* Read a whole file, NUL-terminated; NULL on failure (errno set). */
char *ds_read_file(const char *path, size_t *len);

#endif
