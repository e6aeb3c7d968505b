// SPDX-License-Identifier: MIT
/*
 * Source lines of user frames from DWARF (ds_dso__srcline, symbols.h):
 * the innermost from the line table, the frames an address is inlined
 * into from the inlined scopes' call sites.  Per DSO, every address asked
 * keeps its positions (one probe when asked again) and each file name is
 * kept once.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include "dstack/machine.h"
#include "dstack/symbols.h"
#include "util/grow.h"
#include "util/hashmap.h"
#include "util/strset.h"
#include "symbols/symbols_int.h"
#include "symbols/jitdump.h"

#define MAX_DEPTH 64

struct ds_srcline_cache {
	struct dsi_hashmap at;        /* file offset -> pool index << 8 | count */
	struct ds_srcline *pool;
	size_t nr, cap;
	struct dsi_strset names;     /* our copies of the file names, one per name */
};

void dsi_srcline_cache__free(struct ds_srcline_cache *c)
{
	if (!c)
		return;
	dsi_strset__exit(&c->names);
	dsi_hashmap__exit(&c->at);
	free(c->pool);
	free(c);
}

/* A file of the CU's line table by its index (DW_AT_call_file), NULL if none. */
static const char *call_file(Dwarf_Die *cu, Dwarf_Die *scope)
{
	Dwarf_Attribute a;
	Dwarf_Word idx;
	Dwarf_Files *files;
	size_t nfiles;

	if (!dwarf_attr(scope, DW_AT_call_file, &a) || dwarf_formudata(&a, &idx) ||
	    dwarf_getsrcfiles(cu, &files, &nfiles) || idx >= nfiles)
		return NULL;
	return dwarf_filesrc(files, idx, NULL, NULL);
}

/* A symbol bfd's elf_find_function weighs: its start, size (0 taken as 1) and whether it is a function. */
struct a2l_fit {
	uint64_t off, size;
	bool func, found;
};

/*
 * bfd's better_fit(): the symbol starting nearest below the address wins,
 * whether it reaches the address or not (a call's return address just
 * past a function's end is named after it); of one start, the one that
 * reaches it, a function before an untyped one, then the smaller.
 */
static bool a2l_better_fit(const struct a2l_fit *cur, uint64_t off, uint64_t size, bool func, uint64_t vaddr)
{
	if (off > vaddr || (cur->found && off < cur->off))
		return false;
	if (!cur->found || off > cur->off)
		return true;
	if (cur->off + cur->size <= vaddr)
		return size > cur->size;
	if (off + size <= vaddr)
		return false;
	if (cur->func != func)
		return func;
	return size < cur->size;
}

/*
 * The source file of the function holding @vaddr by the symbol table
 * alone, what binutils' addr2line falls back on for code no DWARF unit
 * covers: a local function's STT_FILE symbol (crtstuff.c's), "??" for a
 * global one (_start); NULL when no function of .symtab is in the
 * address's section below it.  The function is bfd's best fit
 * (a2l_better_fit).  Untyped symbols count as functions, as they do for
 * addr2line: an assembler's local label (".L413", size 0, in a static
 * binary's libc-start.o) is nearer than the global function around it,
 * and names its file; a hidden local one of size 0 (annobin's) does not.
 */
static const char *symtab_file(Elf *elf, uint64_t vaddr)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	size_t shndx = 0;

	/* the section of the address: a function elsewhere does not hold it (.plt after .init) */
	while (elf && (scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_ALLOC) && sh.sh_addr <= vaddr &&
		    vaddr < sh.sh_addr + sh.sh_size) {
			shndx = elf_ndxscn(scn);
			break;
		}
	if (!shndx)
		return NULL;
	scn = NULL;

	while (elf && (scn = elf_nextscn(elf, scn))) {
		Elf_Data *d;
		const char *file = NULL, *best_file = NULL;
		struct a2l_fit best = { 0 };
		/* bfd's: a global symbol takes the FILE before it unless a FILE came after other symbols */
		enum { NOTHING_SEEN, SYMBOL_SEEN, FILE_AFTER_SYMBOL } state = NOTHING_SEEN;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || !sh.sh_entsize ||
		    !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			bool local;

			if (!gelf_getsym(d, (int)i, &sym))
				break;
			local = GELF_ST_BIND(sym.st_info) == STB_LOCAL;
			if (!i)
				continue;   /* the null symbol: not one of bfd's */
			if (GELF_ST_TYPE(sym.st_info) == STT_FILE) {
				file = elf_strptr(elf, sh.sh_link, sym.st_name);
				if (state == SYMBOL_SEEN)
					state = FILE_AFTER_SYMBOL;
				continue;
			}
			if (GELF_ST_TYPE(sym.st_info) == STT_SECTION)
				continue;
			if (state == NOTHING_SEEN)
				state = SYMBOL_SEEN;
			int type = GELF_ST_TYPE(sym.st_info);
			bool func = type == STT_FUNC || type == STT_GNU_IFUNC;
			uint64_t size = sym.st_size ? sym.st_size : 1;

			if ((!func && type != STT_NOTYPE) || sym.st_shndx != shndx)
				continue;
			if (!sym.st_size && local && type == STT_NOTYPE && GELF_ST_VISIBILITY(sym.st_other) == STV_HIDDEN)
				continue;
			if (a2l_better_fit(&best, sym.st_value, size, func, vaddr)) {
				best = (struct a2l_fit){ .off = sym.st_value, .size = size, .func = func, .found = true };
				best_file = file && (local || state != FILE_AFTER_SYMBOL) ? file : "??";   /* an unnamed FILE names "" */
			}
		}
		if (best.found)
			return best_file;
	}
	return NULL;
}

/* Positions at @vaddr, innermost first, into @out; their number (0: none). */
/*
 * A position as perf 7.2 keeps it from addr2line's "FILE:LINE": cut at
 * the first ':' (its filename_split), the line read from what follows by
 * strtoul with base 0.  A name with a colon (node's "node:internal/util",
 * a JIT runtime's garbage name) so becomes the part before it, line 0 or
 * the digits after it; any other name is as it is.
 */
static struct ds_srcline a2l_position(struct ds_srcline_cache *c, const char *file, unsigned line)
{
	const char *colon = strchr(file, ':');
	char rest[64], *name;
	struct ds_srcline pos;

	if (!colon)
		return (struct ds_srcline){ dsi_strset__intern(&c->names, file), line };
	snprintf(rest, sizeof(rest), "%s:%u", colon + 1, line);
	if (!(name = strndup(file, (size_t)(colon - file))))
		return (struct ds_srcline){ NULL, 0 };
	pos = (struct ds_srcline){ dsi_strset__intern(&c->names, name), (unsigned)strtoul(rest, NULL, 0) };
	free(name);
	return pos;
}

/*
 * A jitdump code's line from its debug-info record (dsi_jitdump__srcline):
 * one position ("??", 0 where no row holds it); none without a record.
 */
static size_t compute_jit(struct ds_srcline_cache *c, const struct dsi_jitdump *jd, const struct ds_jit_code *jc,
			  uint64_t vaddr, struct ds_srcline *out)
{
	char file[DSI_JIT_NAME_MAX];
	unsigned line = 0;
	int rc = dsi_jitdump__srcline(jd, jc, vaddr, file, sizeof(file), &line);

	if (rc < 0)
		return 0;
	out[0] = a2l_position(c, rc ? file : "??", rc ? line : 0);
	return out[0].file ? 1 : 0;
}

static size_t compute(struct ds_srcline_cache *c, const struct ds_elf_image *img, uint64_t vaddr,
		      struct ds_srcline *out)
{
	Dwarf *dw = img->dwarf;
	Dwarf_Die cu, chain[MAX_DEPTH];   /* a few KB of stack */
	Dwarf_Line *l;
	const char *f;
	int lineno = 0;
	size_t n = 0, nc;

	if (!dw)
		return 0;
	if (!dsi_dwarf__addrdie(img, vaddr, &cu)) {
		/* a binary with DWARF, code outside it (_start, crtstuff.c): its file by the
		 * symbol table, else "??", line 0 (addr2line's "crtstuff.c:?", "??:?") */
		f = symtab_file(img->dbg_elf ? img->dbg_elf : img->elf, vaddr);
		if (!f && img->dbg_elf)
			f = symtab_file(img->elf, vaddr);
		if (!f)
			return 0;
		out[0] = a2l_position(c, f, 0);
		return out[0].file ? 1 : 0;
	}
	nc = 0;
	dsi_dwarf__scopes_at(&cu, vaddr, chain, &nc, MAX_DEPTH, 0);
	nc = dsi_dwarf__a2l_depth(chain, nc);
	/*
	 * a unit holds the address but says no line (an assembler file, or
	 * asm() in a C one): line 0 of "??", or, when no function of the unit
	 * holds it either, of the symbol table's file (ld.so's _dl_start_user:
	 * an unnamed FILE, so ":0"), as addr2line
	 */
	if (!(l = dwarf_getsrc_die(&cu, vaddr)) || !(f = dwarf_linesrc(l, NULL, NULL)) || dwarf_lineno(l, &lineno)) {
		f = nc ? NULL : symtab_file(img->dbg_elf ? img->dbg_elf : img->elf, vaddr);
		if (!f)
			f = "??";
		lineno = 0;
	}
	out[n++] = a2l_position(c, f, lineno > 0 ? (unsigned)lineno : 0);
	/* from the innermost inlined instance out: where each was called, up to the function */
	for (size_t i = nc; i-- > 0 && n < MAX_DEPTH;) {
		int tag = dwarf_tag(&chain[i]);
		Dwarf_Attribute a;
		Dwarf_Word line;

		if (tag == DW_TAG_subprogram)
			break;
		if (tag != DW_TAG_inlined_subroutine)
			continue;
		if (!(f = call_file(&cu, &chain[i])) || !dwarf_attr(&chain[i], DW_AT_call_line, &a) ||
		    dwarf_formudata(&a, &line))
			break;
		out[n++] = a2l_position(c, f, (unsigned)line);
	}
	for (size_t i = 0; i < n; i++)
		if (!out[i].file)
			return i;   /* out of memory keeping a name: what was kept */
	return n;
}

int ds_dso__srcline(const struct ds_dso *dso, uint64_t file_off, unsigned depth, struct ds_srcline *out)
{
	/* the cache hangs off the DSO: asking is not a change of what the DSO means */
	struct ds_dso *d = (struct ds_dso *)dso;
	struct ds_srcline_cache **cp, *c;
	const struct ds_elf_image *img = d ? dsi_dso__image(d) : NULL;
	const struct dsi_jitdump *jd = NULL;
	const struct ds_jit_code *jc = dsi_dso__jit_code(d, &jd);
	struct ds_srcline tmp[MAX_DEPTH];
	uint64_t *hit, vaddr;
	size_t n;

	if (!img || (!img->dwarf && !(jc && jc->dbg_nr)) || !dsi_elf__off_to_vaddr(img, file_off, &vaddr))
		return -ENOENT;
	cp = dsi_dso__srclines(d);
	if (!(c = *cp) && !(c = *cp = calloc(1, sizeof(*c))))
		return -ENOMEM;
	if ((hit = dsi_hashmap__find(&c->at, file_off))) {
		if (depth >= (*hit & 0xff))
			return -ENOENT;
		*out = c->pool[(*hit >> 8) + depth];
		return 0;
	}
	n = jc && jc->dbg_nr ? compute_jit(c, jd, jc, vaddr, tmp) : compute(c, img, vaddr, tmp);
	struct ds_srcline *np = dsi_grow(c->pool, &c->cap, c->nr + n, sizeof(*np), 256);

	if (np) {
		c->pool = np;
		if (!dsi_hashmap__set(&c->at, file_off, (uint64_t)c->nr << 8 | n)) {
			memcpy(c->pool + c->nr, tmp, n * sizeof(*tmp));
			c->nr += n;
		}
	}
	if (depth >= n)
		return -ENOENT;
	*out = tmp[depth];
	return 0;
}

/* The process of a perf map DSO ("/tmp/perf-PID.map", JIT code's symbols); -1 for any other. */
static long perf_map_pid(const char *dso)
{
	char *end;
	long pid;

	if (strncmp(dso, "/tmp/perf-", 10) || dso[10] < '0' || dso[10] > '9')
		return -1;
	pid = strtol(dso + 10, &end, 10);
	return strcmp(end, ".map") || pid > INT32_MAX ? -1 : pid;
}

size_t ds_cc_frame__inline_chain(const struct ds_cc_frame *f)
{
	struct ds_frame frames[64];   /* as many as a resolved address holds */
	size_t n;

	if (f->cookie || f->kernel || !f->dso_obj)
		return 1;
	/* a lookup of the DSO's per-address cache: the frames the chain was made of */
	n = ds_dso__resolve((struct ds_dso *)f->dso_obj, f->addr, frames, sizeof(frames) / sizeof(*frames));
	return n ? n : 1;
}

/*
 * The address perf prints in "dso[addr]": its "objdump address"
 * (map__rip_2objdump), the offset in the file moved by .text's own
 * address-to-offset difference, whatever section the address is in (a
 * PIE's .plt.sec a page from its offset; an ET_EXEC's every address its
 * own); the offset itself when the file cannot be read.
 */
static uint64_t unknown_line_addr(const struct ds_cc_frame *f)
{
	const struct ds_elf_image *img = f->dso_obj && !f->kernel ? dsi_dso__image((struct ds_dso *)f->dso_obj) : NULL;
	GElf_Shdr sh;

	if (!img || !img->elf || !dsi_elf__section(img->elf, ".text", &sh, NULL))
		return f->addr;
	return f->addr + (sh.sh_addr - sh.sh_offset);
}

size_t ds_cc_frame__srcline(const struct ds_cc_frame *f, unsigned depth, bool with_sym, char *buf, size_t n)
{
	struct ds_srcline sl;
	const char *sym = f->elf_sym ? f->elf_sym : f->sym, *b, *dso = f->dso ? f->dso : "[unknown]";
	char short_name[256];
	long pid;
	int len;

	if (!n)
		return 0;
	if (!f->cookie && !f->kernel && f->dso_obj && !ds_dso__srcline(f->dso_obj, f->addr, depth, &sl))
		len = snprintf(buf, n, "%s:%u", (b = strrchr(sl.file, '/')) ? b + 1 : sl.file, sl.line);
	else if (with_sym && sym && !f->cookie)
		len = snprintf(buf, n, "%s+%llu", sym, (unsigned long long)f->offset);
	else if ((pid = perf_map_pid(dso)) >= 0)   /* perf's short name of a perf map's DSO */
		len = snprintf(buf, n, "[JIT] tid %ld[%llx]", pid, (unsigned long long)f->addr);
	else
		len = snprintf(buf, n, "%s[%llx]", ds_dso__short_name(dso, f->kernel, short_name, sizeof(short_name)),
			       (unsigned long long)unknown_line_addr(f));
	return len < 0 ? 0 : (size_t)len < n ? (size_t)len : n - 1;
}
