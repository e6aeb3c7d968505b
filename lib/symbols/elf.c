// SPDX-License-Identifier: MIT
/*
 * ELF side of the symbol resolver: build-id, PT_LOAD segments, function
 * symbols (.symtab and .dynsym, else .dynsym alone) with perf's fix-ups,
 * and the synthesized "name@plt" symbols for .plt, .plt.sec and .plt.got.
 *
 * All addresses here are ELF virtual addresses.  perf keeps DSO symbols as
 * file offsets (it "adjusts" them when vaddr != offset) and converts the
 * sample's file offset the other way; working in vaddr space and converting
 * the sample's offset through PT_LOAD gives the same printed offsets.
 *
 * libelf bounds-checks what it hands out (elf_getdata, elf_strptr,
 * gelf_getsym); the rest (counts, entry sizes, instruction bytes) is checked
 * here, so a corrupt file yields fewer symbols, never a crash.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <gelf.h>
#include <elfutils/libdw.h>

#include "util/grow.h"
#include "util/io.h"
#include "symbols/symbols_int.h"

#define PLT_NAME_MAX 1023   /* perf formats "name@plt" into a 1024-byte buffer */

/* A growable list of raw symbols, plus what the PLT passes need. */
/* The symbols as loaded, each logged as perf's insert into its tree (@log). */
struct rawvec {
	struct ds_rawsym *v;
	size_t nr, cap;
	uint32_t next_id;          /* the next symbol's order */
	struct dsi_symlog *log;
};

static bool rawvec_push(struct rawvec *rv, const struct ds_rawsym *s)
{
	struct ds_rawsym *v = dsi_grow(rv->v, &rv->cap, rv->nr + 1, sizeof(*v), 256);

	if (!v)
		return false;
	rv->v = v;
	rv->v[rv->nr] = *s;
	rv->v[rv->nr].order = rv->next_id;
	dsi_symlog__insert(rv->log, rv->next_id++, s->start, s->name);
	rv->nr++;
	return true;
}

Elf_Scn *dsi_elf__section(Elf *elf, const char *name, GElf_Shdr *shdr, size_t *idx)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *n;

		if (!gelf_getshdr(scn, shdr))
			continue;
		n = elf_strptr(elf, shstrndx, shdr->sh_name);
		if (n && !strcmp(n, name)) {
			if (idx)
				*idx = elf_ndxscn(scn);
			return scn;
		}
	}
	return NULL;
}

static Elf_Scn *section_by_type(Elf *elf, Elf64_Word type, GElf_Shdr *shdr)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, shdr) && shdr->sh_type == type)
			return scn;
	return NULL;
}

/* ---- opening, build-id, segments -------------------------------------- */

int dsi_elf__open(struct ds_elf_image *img, const char *path)
{
	memset(img, 0, sizeof(*img));
	img->dbg_fd = -1;
	img->fd = dsi_open_regular(path);
	if (img->fd < 0)
		return -errno;
	img->elf = elf_begin(img->fd, ELF_C_READ_MMAP, NULL);
	if (!img->elf || elf_kind(img->elf) != ELF_K_ELF) {
		dsi_elf__close(img);
		return -ENOEXEC;
	}
	return 0;
}

int dsi_elf__open_memory(struct ds_elf_image *img, void *buf, size_t len)
{
	memset(img, 0, sizeof(*img));
	img->fd = -1;
	img->dbg_fd = -1;
	img->elf = elf_memory(buf, len);
	if (!img->elf || elf_kind(img->elf) != ELF_K_ELF) {
		dsi_elf__close(img);
		return -ENOEXEC;
	}
	return 0;
}

void dsi_elf__close(struct ds_elf_image *img)
{
	if (img->dwarf)
		dwarf_end(img->dwarf);
	free(img->cu_ranges);
	img->cu_ranges = NULL;
	img->nr_cu_ranges = 0;
	if (img->elf)
		elf_end(img->elf);
	if (img->fd >= 0)
		close(img->fd);
	if (img->dbg_elf)
		elf_end(img->dbg_elf);
	if (img->dbg_fd >= 0)
		close(img->dbg_fd);
	dsi_symtab__drop_tree(&img->symtab);
	free(img->symtab.syms);
	free(img->segs);
	dsi_strblock__free(&img->names);
	memset(img, 0, sizeof(*img));
	img->fd = -1;
	img->dbg_fd = -1;
}

int dsi_note_build_id(const uint8_t *p, size_t size, uint8_t *bid, size_t *bid_len)
{
	for (size_t at = 0; at <= size && size - at >= sizeof(Elf64_Nhdr);) {   /* padding may pass the end */
		Elf64_Nhdr nh;   /* the same 12 bytes in both ELF classes */
		size_t name = sizeof(nh), desc;

		memcpy(&nh, p + at, sizeof(nh));
		if (nh.n_namesz > size || nh.n_descsz > size)
			break;
		desc = name + ((nh.n_namesz + 3) & ~3u);
		if (desc + nh.n_descsz > size - at)
			break;
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && !memcmp(p + at + name, "GNU", 4) &&
		    nh.n_descsz && nh.n_descsz <= 20) {
			memcpy(bid, p + at + desc, nh.n_descsz);
			*bid_len = nh.n_descsz;
			return 0;
		}
		at += desc + ((nh.n_descsz + 3) & ~3u);
	}
	return -ENOENT;
}

/* First NT_GNU_BUILD_ID "GNU" note in @data. */
static bool note_build_id(Elf *elf, Elf_Data *data, struct ds_elf_image *img)
{
	size_t off = 0, name_off, desc_off;
	GElf_Nhdr nh;

	while (data && (off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
		const char *name = (const char *)data->d_buf + name_off;

		if (nh.n_type != NT_GNU_BUILD_ID || nh.n_namesz != 4 || memcmp(name, "GNU", 4))
			continue;
		img->bid_len = nh.n_descsz < sizeof(img->build_id) ? nh.n_descsz : sizeof(img->build_id);
		memcpy(img->build_id, (const char *)data->d_buf + desc_off, img->bid_len);
		return true;
	}
	(void)elf;
	return false;
}

/* NT_GNU_BUILD_ID from the note sections, else from PT_NOTE segments. */
static void read_build_id(struct ds_elf_image *img)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	size_t nph;

	while ((scn = elf_nextscn(img->elf, scn)))
		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_NOTE &&
		    note_build_id(img->elf, elf_getdata(scn, NULL), img))
			return;
	if (elf_getphdrnum(img->elf, &nph))
		return;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(img->elf, (int)i, &ph) || ph.p_type != PT_NOTE)
			continue;
		if (note_build_id(img->elf, elf_getdata_rawchunk(img->elf, (int64_t)ph.p_offset,
								  ph.p_filesz, ELF_T_NHDR), img))
			return;
	}
}

static bool read_segments(struct ds_elf_image *img)
{
	size_t nph;

	if (elf_getphdrnum(img->elf, &nph))
		return false;
	img->segs = calloc(nph ? nph : 1, sizeof(*img->segs));
	if (!img->segs)
		return false;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(img->elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		img->segs[img->nr_segs++] = (struct ds_load_seg){
			.off = ph.p_offset, .filesz = ph.p_filesz, .memsz = ph.p_memsz, .vaddr = ph.p_vaddr,
		};
	}
	return true;
}

bool dsi_elf__off_to_vaddr(const struct ds_elf_image *img, uint64_t off, uint64_t *vaddr)
{
	/* the file bytes first: a segment's memory past them may lie over the next one's offsets */
	for (int memory = 0; memory < 2; memory++)
		for (size_t i = 0; i < img->nr_segs; i++) {
			const struct ds_load_seg *s = &img->segs[i];

			if (off >= s->off && off - s->off < (memory ? s->memsz : s->filesz)) {
				*vaddr = off - s->off + s->vaddr;
				return true;
			}
		}
	return false;
}

/* ---- ELF symbols ------------------------------------------------------ */

/* perf keeps functions and "labels" (named NOTYPE symbols in a text section). */
static bool want_sym(Elf *elf, size_t shstrndx, const GElf_Sym *s)
{
	int type = GELF_ST_TYPE(s->st_info);
	int vis = GELF_ST_VISIBILITY(s->st_other);
	Elf_Scn *scn;
	GElf_Shdr sh;
	const char *secname;

	if (!s->st_name || s->st_shndx == SHN_UNDEF || s->st_shndx >= SHN_LORESERVE)
		return false;
	if (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_NOTYPE)
		return false;
	scn = elf_getscn(elf, s->st_shndx);
	if (!scn || !gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_ALLOC))
		return false;
	if (type != STT_NOTYPE)
		return true;
	if (vis == STV_HIDDEN || vis == STV_INTERNAL)
		return false;
	secname = elf_strptr(elf, shstrndx, sh.sh_name);
	return secname && strstr(secname, "text");
}

/* A named, defined data object (perf's elf_sym__is_object). */
static bool is_object(const GElf_Sym *s)
{
	return GELF_ST_TYPE(s->st_info) == STT_OBJECT && s->st_name && s->st_shndx != SHN_UNDEF;
}

/* A data object perf puts in its symbol tree: in a section of the image. */
static bool want_object(Elf *elf, const GElf_Sym *s)
{
	Elf_Scn *scn;
	GElf_Shdr sh;

	return is_object(s) && s->st_shndx < SHN_LORESERVE && (scn = elf_getscn(elf, s->st_shndx)) &&
	       gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_ALLOC);
}

/*
 * The functions, text labels and data objects (perf's tree holds them
 * too: struct ds_rawsym) of symbol table @scn into @rv, in table order,
 * @dyn for the .dynsym perf reads after .symtab; *@objects counts its data
 * objects (whether perf loads any symbol decides its PLT's).
 */
static bool load_symtab(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, bool demangle, struct rawvec *rv,
			size_t *objects, bool dyn)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t entsz = gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT);
	size_t shstrndx, n;

	if (sh->sh_type == SHT_NOBITS)
		return true;   /* a debug file's copy of .dynsym: perf reads nothing there */
	if (!data || !entsz || elf_getshdrstrndx(elf, &shstrndx))
		return false;
	n = data->d_size / entsz;
	for (size_t i = 1; i < n; i++) {
		struct ds_rawsym r = { 0 };
		const char *name;
		GElf_Sym s;

		if (!gelf_getsym(data, (int)i, &s))
			continue;
		*objects += is_object(&s);
		r.object = want_object(elf, &s);
		if (!r.object && !want_sym(elf, shstrndx, &s))
			continue;
		name = elf_strptr(elf, sh->sh_link, s.st_name);
		if (!name || !*name)
			continue;
		r.name = name;   /* in the file until its first hit (struct ds_sym) */
		r.raw = true;
		r.dyn = dyn;
		r.demangle = demangle && (!strncmp(name, "_Z", 2) || !strncmp(name, "_R", 2));
		r.start = s.st_value;
		r.size = s.st_size;
		r.bind = GELF_ST_BIND(s.st_info);
		r.type = GELF_ST_TYPE(s.st_info);
		if (!rawvec_push(rv, &r))
			return false;
	}
	return true;
}

/* ---- PLT synthesis ---------------------------------------------------- */

struct plt_ctx {
	Elf *elf;
	GElf_Ehdr eh;
	struct ds_elf_image *img;  /* owns the names made here */
	bool demangle;
	struct rawvec *rv;
	size_t nr_elf;             /* rv->v[0..nr_elf) are the finished ELF symbols */
	size_t plt_hdr;            /* index of the ".plt" header symbol */
	uint32_t plt_hdr_id;       /* the header's order (rv's log) */
	bool syms_from_debug;      /* the binary is stripped: its symbols are its debug file's */
};

static bool is_x86(const struct plt_ctx *c)
{
	return c->eh.e_machine == EM_386 || c->eh.e_machine == EM_X86_64;
}

static bool push_plt(struct plt_ctx *c, uint64_t start, uint64_t size, const char *name)
{
	struct ds_rawsym r = { .start = start, .size = size, .bind = STB_GLOBAL, .type = STT_FUNC };
	size_t len = strlen(name);

	r.name = dsi_strblock__add(&c->img->names, name, len > PLT_NAME_MAX ? PLT_NAME_MAX : len);
	r.raw = true;
	return r.name && rawvec_push(c->rv, &r);
}

/* "name@plt", the name demangled first if @demangle (perf prints it so). */
static void plt_format(char *buf, size_t sz, const char *name, bool demangle)
{
	char *dm = demangle ? dsi_demangle(name) : NULL;

	snprintf(buf, sz, "%s@plt", dm ? dm : name);
	free(dm);
}

/* "sym@plt" for symbol @idx of @symdata, "" if it has no name. */
static void plt_name(struct plt_ctx *c, Elf_Data *symdata, size_t strndx, size_t idx,
		     char *buf, size_t sz)
{
	const char *name = NULL;
	GElf_Sym s;

	buf[0] = '\0';
	if (gelf_getsym(symdata, (int)idx, &s))
		name = elf_strptr(c->elf, strndx, s.st_name);
	if (!name || !*name)
		return;
	plt_format(buf, sz, name, c->demangle);
}

/* The finished ELF symbol starting exactly at @addr, or NULL. */
static const struct ds_rawsym *elf_sym_at(const struct plt_ctx *c, uint64_t addr)
{
	size_t lo = 0, hi = c->nr_elf;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (c->rv->v[mid].start < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < c->nr_elf && c->rv->v[lo].start == addr ? &c->rv->v[lo] : NULL;
}

/* An IRELATIVE slot has no symbol: perf names it after the IFUNC at its addend. */
static void ifunc_name(struct plt_ctx *c, const GElf_Rela *ra, bool is_rela, char *buf, size_t sz)
{
	const struct ds_rawsym *s;

	if (c->eh.e_machine != EM_X86_64 || !is_rela ||
	    GELF_R_TYPE(ra->r_info) != R_X86_64_IRELATIVE)
		return;
	s = elf_sym_at(c, (uint64_t)ra->r_addend);
	if (s && (s->type == STT_GNU_IFUNC || s->ifunc_alias))
		plt_format(buf, sz, s->name, s->demangle);
}

/* perf's get_plt_sizes() for x86, else the section's entry size. */
static bool plt_sizes(const struct plt_ctx *c, const GElf_Shdr *sh, uint64_t *hdr, uint64_t *ent)
{
	*ent = sh->sh_entsize;
	if (is_x86(c) && *ent != 8 && *ent != 16)
		*ent = sh->sh_addralign == 8 ? 8 : 16;
	*hdr = *ent;
	return *ent != 0;
}

struct relent {
	GElf_Rela r;               /* REL entries get r_addend = 0 */
};

static int relent_cmp(const void *pa, const void *pb)
{
	const struct relent *a = pa, *b = pb;

	return a->r.r_offset < b->r.r_offset ? -1 : a->r.r_offset > b->r.r_offset;
}

/* The relocations of .rela.plt/.rel.plt, sorted by GOT slot on x86 like perf. */
static struct relent *read_plt_relocs(struct plt_ctx *c, Elf_Scn *scn, const GElf_Shdr *sh,
				      size_t *nr)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	bool is_rela = sh->sh_type == SHT_RELA;
	struct relent *v;
	size_t n;

	if (!d || !sh->sh_entsize)
		return NULL;
	n = sh->sh_size / sh->sh_entsize;
	if (n > d->d_size / (is_rela ? sizeof(Elf32_Rela) : sizeof(Elf32_Rel)))
		return NULL;   /* sh_size lies about the data */
	v = calloc(n ? n : 1, sizeof(*v));
	if (!v)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		GElf_Rel rel;

		if (is_rela) {
			if (!gelf_getrela(d, (int)i, &v[i].r))
				memset(&v[i].r, 0, sizeof(v[i].r));
		} else if (gelf_getrel(d, (int)i, &rel)) {
			v[i].r.r_offset = rel.r_offset;
			v[i].r.r_info = rel.r_info;
		}
	}
	if (is_x86(c) && n > 1)
		qsort(v, n, sizeof(*v), relent_cmp);
	*nr = n;
	return v;
}

/* Truncate an ELF symbol that fix-up extended over the start of .plt. */
static void truncate_before(struct plt_ctx *c, uint64_t addr)
{
	for (size_t i = 0; i < c->nr_elf; i++) {
		struct ds_rawsym *s = &c->rv->v[i];

		if (s->start < addr && s->start + s->size > addr)
			s->size = addr - s->start;
	}
}

/* .plt.got: "jmp *disp(%rip)" entries; name them from .rela.dyn GLOB_DAT slots. */
static uint64_t plt_got_target(const uint8_t *p, size_t avail)
{
	static const uint8_t endbr64[] = { 0xf3, 0x0f, 0x1e, 0xfa };
	size_t n = 0;
	int32_t disp;

	if (avail >= 4 && !memcmp(p, endbr64, 4))
		n += 4;
	if (n < avail && p[n] == 0xf2)   /* bnd prefix */
		n++;
	if (n + 6 > avail || p[n] != 0xff || p[n + 1] != 0x25)
		return 0;
	memcpy(&disp, p + n + 2, 4);
	return n + 6 + (uint64_t)(int64_t)disp;   /* relative to the entry start */
}

/* .rela.dyn relocations that name a symbol, sorted by GOT slot. */
struct got_slots {
	struct relent *v;
	size_t nr;
	Elf_Data *symd;
	size_t strndx;
};

static void got_slots_load(struct plt_ctx *c, struct got_slots *g)
{
	GElf_Shdr sh, symsh;
	Elf_Scn *scn = dsi_elf__section(c->elf, ".rela.dyn", &sh, NULL), *symscn;
	Elf_Data *d;
	size_t n;

	memset(g, 0, sizeof(*g));
	if (!scn || sh.sh_type != SHT_RELA || !sh.sh_entsize || !sh.sh_link)
		return;
	symscn = elf_getscn(c->elf, sh.sh_link);
	d = elf_getdata(scn, NULL);
	if (!symscn || !gelf_getshdr(symscn, &symsh) || !d || !(g->symd = elf_getdata(symscn, NULL)))
		return;
	g->strndx = symsh.sh_link;
	n = d->d_size / sizeof(Elf32_Rela);   /* an upper bound whatever the class */
	if (sh.sh_size / sh.sh_entsize < n)
		n = sh.sh_size / sh.sh_entsize;
	g->v = calloc(n ? n : 1, sizeof(*g->v));
	if (!g->v)
		return;
	for (size_t i = 0; i < n; i++)
		if (gelf_getrela(d, (int)i, &g->v[g->nr].r) && GELF_R_SYM(g->v[g->nr].r.r_info))
			g->nr++;
	if (g->nr > 1)
		qsort(g->v, g->nr, sizeof(*g->v), relent_cmp);
}

static bool got_slot_name(struct plt_ctx *c, const struct got_slots *g, uint64_t slot,
			  char *buf, size_t sz)
{
	struct relent key = { .r.r_offset = slot };
	const struct relent *hit;

	if (!g->nr)
		return false;
	hit = bsearch(&key, g->v, g->nr, sizeof(*g->v), relent_cmp);
	if (!hit)
		return false;
	plt_name(c, g->symd, g->strndx, GELF_R_SYM(hit->r.r_info), buf, sz);
	return buf[0] != '\0';
}

static bool synth_plt_got(struct plt_ctx *c)
{
	char buf[PLT_NAME_MAX + 1];
	struct got_slots g;
	GElf_Shdr sh;
	Elf_Scn *scn = dsi_elf__section(c->elf, ".plt.got", &sh, NULL);
	Elf_Data *d;
	uint64_t size;
	bool ok = true;

	if (!scn || !sh.sh_entsize || sh.sh_type == SHT_NOBITS || !(d = elf_getdata(scn, NULL)))
		return true;
	size = sh.sh_size < d->d_size ? sh.sh_size : d->d_size;   /* never past the data */
	got_slots_load(c, &g);
	for (uint64_t i = 0; ok && i < size; i += sh.sh_entsize) {
		uint64_t tgt = 0;

		buf[0] = '\0';
		if (c->eh.e_machine == EM_X86_64)
			tgt = plt_got_target((const uint8_t *)d->d_buf + i, d->d_size - i);
		if (!tgt || !got_slot_name(c, &g, sh.sh_addr + i + tgt, buf, sizeof(buf)))
			snprintf(buf, sizeof(buf), "offset_%#llx@plt",
				 (unsigned long long)(sh.sh_offset + i));
		ok = push_plt(c, sh.sh_addr + i, sh.sh_entsize, buf);
	}
	free(g.v);
	return ok;
}

/*
 * One "name@plt" per relocation, in GOT order, from @start on (@foff: the
 * same place as a file offset, which perf uses in "offset_0x...@plt").
 */
static bool synth_plt_entries(struct plt_ctx *c, Elf_Scn *relscn, const GElf_Shdr *relsh,
			      uint64_t start, uint64_t foff, uint64_t ent, uint64_t plt_size,
			      uint64_t hdr, bool lazy)
{
	char buf[PLT_NAME_MAX + 1];
	GElf_Shdr symsh = { 0 };
	/*
	 * No linked symbol table: a static binary stripped (its .rela.plt
	 * linked to the .symtab strip removed), whose IRELATIVE slots name no
	 * symbol anyway; its symbols came from its debug file, and the slots
	 * are named as in the binary before it was stripped.  A binary not
	 * stripped whose PLT relocations link no table (binutils' i386 static
	 * links) gets no PLT symbols, as in perf 7.2 ([unknown]).
	 */
	if (!relsh->sh_link && !c->syms_from_debug)
		return true;
	Elf_Scn *symscn = relsh->sh_link ? elf_getscn(c->elf, relsh->sh_link) : NULL;
	Elf_Data *symd = NULL;
	struct relent *rel;
	size_t n = 0;

	if (relsh->sh_link && (!symscn || !gelf_getshdr(symscn, &symsh) ||
			       (symsh.sh_type != SHT_DYNSYM && symsh.sh_type != SHT_SYMTAB) ||
			       !(symd = elf_getdata(symscn, NULL))))
		return true;
	rel = read_plt_relocs(c, relscn, relsh, &n);
	if (!rel)
		return true;
	if (lazy && n * ent == plt_size) {
		/* as many slots as relocations: no header after all, drop ".plt" */
		struct ds_rawsym *h = &c->rv->v[c->plt_hdr];

		memmove(h, h + 1, (c->rv->nr - c->plt_hdr - 1) * sizeof(*h));
		c->rv->nr--;
		dsi_symlog__erase(c->rv->log, c->plt_hdr_id);
	} else if (lazy) {
		start += hdr;
		foff += hdr;
	}
	for (size_t i = 0; i < n; i++, start += ent, foff += ent) {
		buf[0] = '\0';
		if (symd)
			plt_name(c, symd, symsh.sh_link, GELF_R_SYM(rel[i].r.r_info), buf, sizeof(buf));
		if (!buf[0])
			ifunc_name(c, &rel[i].r, relsh->sh_type == SHT_RELA, buf, sizeof(buf));
		if (!buf[0])
			snprintf(buf, sizeof(buf), "offset_%#llx@plt", (unsigned long long)foff);
		if (!push_plt(c, start, ent, buf)) {
			free(rel);
			return false;
		}
	}
	free(rel);
	return true;
}

/* perf's dso__synthesize_plt_symbols(), in vaddr space. */
static bool synth_plt(struct plt_ctx *c)
{
	GElf_Shdr plt, sec, relsh;
	Elf_Scn *relscn;
	uint64_t hdr, ent, start, foff;
	bool lazy = true;

	if (!dsi_elf__section(c->elf, ".plt", &plt, NULL))
		return true;
	truncate_before(c, plt.sh_addr);
	if (!plt_sizes(c, &plt, &hdr, &ent))
		return true;
	c->plt_hdr = c->rv->nr;
	c->plt_hdr_id = c->rv->next_id;
	if (!push_plt(c, plt.sh_addr, hdr, ".plt"))
		return false;
	if (is_x86(c) && !synth_plt_got(c))
		return false;
	start = plt.sh_addr;
	foff = plt.sh_offset;
	if (is_x86(c) && dsi_elf__section(c->elf, ".plt.sec", &sec, NULL)) {
		if (!plt_sizes(c, &sec, &hdr, &ent))
			return true;
		/* the IBT layout: .plt is all header, the entries are in .plt.sec */
		c->rv->v[c->plt_hdr].size = plt.sh_size;
		start = sec.sh_addr;
		foff = sec.sh_offset;
		lazy = false;
	}
	relscn = dsi_elf__section(c->elf, ".rela.plt", &relsh, NULL);
	if (!relscn)
		relscn = dsi_elf__section(c->elf, ".rel.plt", &relsh, NULL);
	if (!relscn || (relsh.sh_type != SHT_RELA && relsh.sh_type != SHT_REL))
		return true;
	return synth_plt_entries(c, relscn, &relsh, start, foff, ent, plt.sh_size, hdr, lazy);
}

/* ---- putting it together ---------------------------------------------- */

static int sym_cmp(const void *pa, const void *pb)
{
	const struct ds_sym *a = pa, *b = pb;

	return a->start < b->start ? -1 : a->start > b->start;
}

/*
 * Sort @v (@n symbols by start) when it is a few sorted runs: merged, the
 * first run's symbol first on equal starts, which is what a stable sort
 * gives.  False (nothing done) for more runs, or no memory.
 */
static bool merge_runs(struct ds_sym *v, size_t n)
{
	size_t ends[8], nr = 0;
	struct ds_sym *tmp;

	for (size_t i = 1; i <= n; i++)
		if (i == n || v[i - 1].start > v[i].start) {
			if (nr == sizeof(ends) / sizeof(*ends))
				return false;
			ends[nr++] = i;
		}
	if (nr < 2)
		return true;
	tmp = malloc(n * sizeof(*tmp));
	if (!tmp)
		return false;
	for (size_t r = 1; r < nr; r++) {   /* v[0, ends[r-1]) is sorted: take in run r */
		size_t a = 0, b = ends[r - 1], k = 0;

		while (a < ends[r - 1] && b < ends[r])
			tmp[k++] = v[b].start < v[a].start ? v[b++] : v[a++];
		while (a < ends[r - 1])
			tmp[k++] = v[a++];
		while (b < ends[r])
			tmp[k++] = v[b++];
		memcpy(v, tmp, k * sizeof(*v));
	}
	free(tmp);
	return true;
}

static bool to_symtab(struct ds_elf_image *img, const struct rawvec *rv)
{
	struct ds_sym *syms = calloc(rv->nr ? rv->nr : 1, sizeof(*syms));
	bool sorted = true;
	size_t n = 0;

	if (!syms)
		return false;
	for (size_t i = 0; i < rv->nr; i++) {
		syms[n++] = (struct ds_sym){
			.start = rv->v[i].start,
			.end = rv->v[i].start + rv->v[i].size,
			.name = rv->v[i].name,
			.raw = rv->v[i].raw,
			.demangle = rv->v[i].demangle,
			.object = rv->v[i].object,
			/* only where addr2line would name another symbol of this start */
			.a2l_name = rv->v[i].a2l.name != rv->v[i].name ? rv->v[i].a2l.name : NULL,
			.a2l_raw = rv->v[i].a2l.raw,
			.a2l_demangle = rv->v[i].a2l.demangle,
			.a2l0_name = rv->v[i].a2l0.name != rv->v[i].name ? rv->v[i].a2l0.name : NULL,
			.a2l0_raw = rv->v[i].a2l0.raw,
			.a2l0_demangle = rv->v[i].a2l0.demangle,
		};
		sorted = sorted && (n == 1 || syms[n - 2].start <= syms[n - 1].start);
	}
	/* the ELF symbols come sorted (dsi_rawsym__finish), the PLT entries
	 * after them may not be: the runs are merged, where a qsort of every
	 * symbol was a large share of loading libc (docs/performance.md) */
	if (!sorted && n > 1 && !merge_runs(syms, n))
		qsort(syms, n, sizeof(*syms), sym_cmp);
	img->symtab.syms = syms;
	img->symtab.nr = n;
	return true;
}

/*
 * Where symbols overlap, perf's tree decides which one an address finds:
 * it is rebuilt from the load's log (symbols/symtree.c).  Without memory
 * the lookup stays a binary search.
 */
static void replay_tree(struct ds_elf_image *img, const struct rawvec *rv)
{
	uint64_t *end_by_id;

	if (rv->log->failed || !dsi_symtab__overlaps(&img->symtab))
		return;
	end_by_id = calloc(rv->next_id ? rv->next_id : 1, sizeof(*end_by_id));
	if (!end_by_id)
		return;
	for (size_t i = 0; i < rv->nr; i++)
		if (rv->v[i].order < rv->next_id)
			end_by_id[rv->v[i].order] = rv->v[i].start + rv->v[i].size;
	dsi_symtab__replay(&img->symtab, rv->log, end_by_id);
	free(end_by_id);
}

static bool has_dwarf(Elf *elf)
{
	GElf_Shdr sh;

	return dsi_elf__section(elf, ".debug_info", &sh, NULL) && sh.sh_type != SHT_NOBITS;
}

/* Open @file as the debug file of @img: an ELF with the same build-id (if both have one). */
static bool try_debug_file(struct ds_elf_image *img, const char *file)
{
	struct ds_elf_image dbg;

	if (access(file, R_OK) || dsi_elf__open(&dbg, file))
		return false;
	read_build_id(&dbg);
	if (!img->bid_len || dbg.bid_len != img->bid_len || memcmp(dbg.build_id, img->build_id, img->bid_len)) {
		/* no build-id to match: a debuglink file is taken on its name alone, as gdb does */
		if (img->bid_len || dbg.bid_len) {
			dsi_elf__close(&dbg);
			return false;
		}
	}
	img->dbg_fd = dbg.fd;
	img->dbg_elf = dbg.elf;
	return true;
}

/* The name in .gnu_debuglink, or NULL. */
static const char *debuglink(Elf *elf)
{
	GElf_Shdr sh;
	Elf_Scn *scn = dsi_elf__section(elf, ".gnu_debuglink", &sh, NULL);
	Elf_Data *d = scn && sh.sh_type == SHT_PROGBITS ? elf_getdata(scn, NULL) : NULL;

	if (!d || !d->d_buf || !d->d_size || !memchr(d->d_buf, 0, d->d_size))
		return NULL;
	return d->d_buf;
}

static void find_debug_file(struct ds_elf_image *img, const char *root, const char *path, const char *dicache)
{
	char file[4096];
	const char *link = debuglink(img->elf), *slash = path ? strrchr(path, '/') : NULL;
	int dir_len = slash ? (int)(slash - path) : 0;

	root = root ? root : "";
	if (img->bid_len >= 2) {
		int n = snprintf(file, sizeof(file), "%s/usr/lib/debug/.build-id/%02x/", root, img->build_id[0]);

		for (size_t i = 1; i < img->bid_len && n + 3 < (int)sizeof(file); i++)
			n += snprintf(file + n, sizeof(file) - (size_t)n, "%02x", img->build_id[i]);
		if (n + 7 < (int)sizeof(file) && (strcpy(file + n, ".debug"), try_debug_file(img, file)))
			return;
		/* fetched from debuginfod: libdebuginfod's cache, CACHE/HEX/debuginfo */
		if (dicache) {
			n = snprintf(file, sizeof(file), "%s/", dicache);
			for (size_t i = 0; i < img->bid_len && n + 3 < (int)sizeof(file); i++)
				n += snprintf(file + n, sizeof(file) - (size_t)n, "%02x", img->build_id[i]);
			if (n + 11 < (int)sizeof(file) && (strcpy(file + n, "/debuginfo"), try_debug_file(img, file))) {
				img->dbg_fetched = true;
				return;
			}
		}
	}
	if (!link || !slash || strchr(link, '/'))
		return;
	if ((snprintf(file, sizeof(file), "%s%.*s/%s", root, dir_len, path, link) < (int)sizeof(file) &&
	     strcmp(file + strlen(root), path) && try_debug_file(img, file)) ||
	    (snprintf(file, sizeof(file), "%s%.*s/.debug/%s", root, dir_len, path, link) < (int)sizeof(file) &&
	     try_debug_file(img, file)))
		return;
	if (snprintf(file, sizeof(file), "%s/usr/lib/debug%.*s/%s", root, dir_len, path, link) < (int)sizeof(file))
		try_debug_file(img, file);
}

bool dsi_elf__load(struct ds_elf_image *img, bool demangle, const char *root, const char *path,
		  const char *dicache)
{
	struct dsi_symlog log = { 0 };
	struct rawvec rv = { .log = &log };
	struct plt_ctx c = { .elf = img->elf, .img = img, .demangle = demangle, .rv = &rv };
	size_t objects = 0;
	GElf_Shdr sh;
	Elf_Scn *scn;
	bool ok = false;

	img->bad = "its ELF header is unreadable";
	if (!gelf_getehdr(img->elf, &c.eh))
		return false;
	/*
	 * Hostile-input finding: libelf opens a file whose section header
	 * table lies past its end as an ELF with no sections, so it loaded
	 * silently with no symbols.  Call it corrupt (the caller warns).
	 */
	size_t fsize = 0;

	img->bad = "its section header table lies outside the file";
	if (!elf_rawfile(img->elf, &fsize) ||
	    (c.eh.e_shnum && (c.eh.e_shoff > fsize ||
			      (uint64_t)c.eh.e_shnum * c.eh.e_shentsize > fsize - c.eh.e_shoff)))
		return false;
	read_build_id(img);
	img->bad = "its program headers are unreadable";
	if (!read_segments(img))
		return false;
	Elf *sym_elf = img->elf;

	scn = section_by_type(img->elf, SHT_SYMTAB, &sh);
	if (!scn || !has_dwarf(img->elf))
		find_debug_file(img, root, path, dicache);
	if (!scn && img->dbg_elf && (scn = section_by_type(img->dbg_elf, SHT_SYMTAB, &sh)))
		sym_elf = img->dbg_elf;
	c.syms_from_debug = sym_elf != img->elf;
	if (!scn)
		scn = section_by_type(img->elf, SHT_DYNSYM, &sh);
	img->bad = scn && sh.sh_type == SHT_DYNSYM ? "its dynamic symbol table (.dynsym) is unreadable"
					    : "its symbol table (.symtab) is unreadable";
	img->has_symtab = scn && sh.sh_type == SHT_SYMTAB;
	if (scn && !load_symtab(sym_elf, scn, &sh, demangle, &rv, &objects, false))
		goto out;
	img->bad = "out of memory, or its PLT is unreadable";
	rv.nr = dsi_rawsym__finish(rv.v, rv.nr, &log);
	/*
	 * perf 7.2 reads the .dynsym of the file it took .symtab from too, and
	 * fixes up its whole tree again: a function only .dynsym names (one
	 * stripped from .symtab) is found, an alias may win over .symtab's
	 */
	if (scn && sh.sh_type == SHT_SYMTAB) {
		GElf_Shdr dsh;
		Elf_Scn *dyn = section_by_type(sym_elf, SHT_DYNSYM, &dsh);

		img->bad = "its dynamic symbol table (.dynsym) is unreadable";
		if (dyn && !load_symtab(sym_elf, dyn, &dsh, demangle, &rv, &objects, true))
			goto out;
		rv.nr = dsi_rawsym__finish(rv.v, rv.nr, &log);
	}
	img->bad = "out of memory, or its PLT is unreadable";
	c.nr_elf = rv.nr;
	/*
	 * perf synthesizes the PLT's symbols only when the symbol tables gave
	 * it some, functions or data objects (dso__load: a stripped binary's
	 * .dynsym of imports alone gives none, and its PLT stubs stay
	 * [unknown]; one that also defines stdout, copied there, gives one).
	 */
	if (((rv.nr || objects) && !synth_plt(&c)) || !to_symtab(img, &rv))
		goto out;
	replay_tree(img, &rv);
	if (has_dwarf(img->elf))
		img->dwarf = dwarf_begin_elf(img->elf, DWARF_C_READ, NULL);
	else if (img->dbg_elf && has_dwarf(img->dbg_elf))
		img->dwarf = dwarf_begin_elf(img->dbg_elf, DWARF_C_READ, NULL);
	dsi_dwarf__index_cus(img);
	ok = true;
	img->bad = NULL;
out:
	dsi_symlog__exit(&log);
	free(rv.v);
	return ok;
}
