// SPDX-License-Identifier: MIT
/*
 * jitdump files read directly (format: perf's tools/perf/util/jitdump.h,
 * learnt from there and written here): a 40-byte header (magic "JiTD" in
 * the writer's byte order, version, header size, ELF machine, pid,
 * timestamp, flags), then records of a 16-byte prefix (id, total size,
 * timestamp) and their fields.  Only the records' fixed parts and names
 * are read into memory; code, unwinding and debug-info bytes stay in the
 * file, found by offset when an image is built (dsi_jitdump__elf) or a
 * line asked (dsi_jitdump__srcline).
 *
 * As perf inject --jit, the last unwinding record goes with the next code
 * load, and stays for the loads after it while its .eh_frame_hdr is empty;
 * a debug-info record goes with the next load only.
 */
#include <dwarf.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dstack/event.h"
#include "dstack/reader.h"
#include "util/error.h"
#include "util/grow.h"
#include "util/io.h"
#include "symbols/jitdump.h"
#include "symbols/symbols_int.h"

#define JIT_MAGIC 0x4A695444u
#define JIT_MAGIC_SWAPPED 0x4454694Au
#define HEADER_SIZE 40u
#define PREFIX_SIZE 16u
#define LOAD_FIXED (PREFIX_SIZE + 40u)      /* pid, tid, vma, code_addr, code_size, code_index */
#define MOVE_FIXED (PREFIX_SIZE + 48u)      /* pid, tid, vma, old, new, code_size, code_index */
#define UNWIND_FIXED (PREFIX_SIZE + 24u)    /* unwinding_size, eh_frame_hdr_size, mapped_size */
#define DEBUG_FIXED (PREFIX_SIZE + 16u)     /* code_addr, nr_entry */
#define DEBUG_ENTRY 16u                     /* addr, lineno, discrim; then the file name */
#define MAX_DEBUG_SIZE (16u << 20)          /* a larger debug record's lines are not read */
#define FLAG_ARCH_TIMESTAMP 1ull
#define MAX_CODE_SIZE (64u << 20)           /* a larger code record is skipped: images stay bounded */
#define WINDOW (1u << 20)

enum { JIT_CODE_LOAD, JIT_CODE_MOVE, JIT_CODE_DEBUG_INFO, JIT_CODE_CLOSE, JIT_CODE_UNWINDING_INFO };

/* ---- reading through a window ------------------------------------------- */

struct win {
	int fd;
	uint64_t file_size;
	uint8_t *buf;
	uint64_t off;              /* file offset of buf[0] */
	size_t len;                /* valid bytes */
};

/* @n bytes at file offset @off (n <= WINDOW), NULL if the file does not hold them or a read fails. */
static const uint8_t *win_get(struct win *w, uint64_t off, size_t n)
{
	if (off > w->file_size || n > w->file_size - off || n > WINDOW)
		return NULL;
	if (off >= w->off && off - w->off + n <= w->len)
		return w->buf + (off - w->off);
	size_t want = w->file_size - off < WINDOW ? (size_t)(w->file_size - off) : WINDOW, got = 0;

	while (got < want) {
		ssize_t r = pread(w->fd, w->buf + got, want - got, (off_t)(off + got));

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	w->off = off;
	w->len = got;
	return got >= n ? w->buf : NULL;
}

static uint32_t rd32(const struct dsi_jitdump *jd, const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return jd->swap ? __builtin_bswap32(v) : v;
}

static uint64_t rd64(const struct dsi_jitdump *jd, const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return jd->swap ? __builtin_bswap64(v) : v;
}

/* ---- problems ------------------------------------------------------------ */

static void say(struct dsi_jitdump *jd, uint64_t off, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The first problem, as its line's start; later ones are only counted (the line says how many). */
static void say(struct dsi_jitdump *jd, uint64_t off, const char *fmt, ...)
{
	char what[256];
	va_list ap;

	if (jd->nr_problems++)
		return;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	snprintf(jd->problem, sizeof(jd->problem), "jitdump %s: offset %#llx: %s", jd->path,
		 (unsigned long long)off, what);
}

/* ---- records --------------------------------------------------------------- */

/* The unwinding data that goes with the next code load (perf inject's rule). */
struct unwind_state {
	uint64_t off, size, hdr_size, mapped;
	bool have;
};

/* The debug-info record that goes with the next code load (perf inject's rule too); nr 0: none. */
struct debug_state {
	uint64_t off, size, nr;
};

/* Whether [addr, addr + size) can be code of a process of the dump's machine. */
static bool user_range(const struct dsi_jitdump *jd, uint64_t addr, uint64_t size)
{
	uint64_t top = jd->elf_mach == EM_386 || jd->elf_mach == EM_ARM ? 1ull << 32 : 1ull << 57;

	return size && addr < top && size <= top - addr;
}

static struct ds_jit_code *new_code(struct dsi_jitdump *jd)
{
	struct ds_jit_code *v = dsi_grow(jd->codes, &jd->cap, jd->nr + 1, sizeof(*v), 256);

	if (!v)
		return NULL;
	jd->codes = v;
	return memset(&v[jd->nr], 0, sizeof(*v));
}

static uint64_t map_len(uint64_t size, const struct unwind_state *u)
{
	return u->have && u->mapped ? ((size + 7) & ~7ull) + u->mapped : size;
}

/* A JIT_CODE_LOAD at @off of @size bytes: 1 kept, 0 skipped, -ENOMEM. */
static int read_load(struct dsi_jitdump *jd, struct win *w, uint64_t off, uint32_t size, uint64_t time,
		     struct unwind_state *u, struct debug_state *dbg)
{
	const uint8_t *p = win_get(w, off, LOAD_FIXED);
	uint64_t addr, csize, name_max;
	struct ds_jit_code *c;

	if (size < LOAD_FIXED || !p) {
		say(jd, off, "code load record of %u bytes, smaller than its fields: skipped", size);
		return 0;
	}
	addr = rd64(jd, p + 32);
	csize = rd64(jd, p + 40);
	if (csize > size - LOAD_FIXED - 1) {   /* the name's NUL at least lies between fields and code */
		say(jd, off, "code size %#llx past the end of its record (%u bytes): skipped",
		    (unsigned long long)csize, size);
		return 0;
	}
	if (!user_range(jd, addr, csize) || csize > MAX_CODE_SIZE) {
		say(jd, off, "code at %#llx of %#llx bytes outside any process's addresses: skipped",
		    (unsigned long long)addr, (unsigned long long)csize);
		return 0;
	}
	name_max = size - LOAD_FIXED - csize;
	if (name_max > DSI_JIT_NAME_MAX)
		name_max = DSI_JIT_NAME_MAX;
	const uint8_t *np = win_get(w, off + LOAD_FIXED, (size_t)name_max);
	const uint8_t *nul = np ? memchr(np, 0, (size_t)name_max) : NULL;

	if (!np || (!nul && name_max < DSI_JIT_NAME_MAX)) {
		say(jd, off + LOAD_FIXED, "code load's name not terminated in its record: skipped");
		return 0;
	}
	if (!(c = new_code(jd)))
		return -ENOMEM;
	c->name = dsi_strblock__add(&jd->names, (const char *)np, nul ? (size_t)(nul - np) : (size_t)name_max);
	if (!c->name)
		return -ENOMEM;
	p = win_get(w, off, LOAD_FIXED);   /* the name's read may have moved the window */
	c->time = time;
	c->pid = rd32(jd, p + 16);
	c->tid = rd32(jd, p + 20);
	c->addr = addr;
	c->size = csize;
	c->index = rd64(jd, p + 48);
	c->code_off = off + size - csize;
	c->rec_off = off;
	c->map_len = map_len(csize, u);
	if (u->have) {
		c->unw_off = u->off;
		c->unw_size = u->size;
		c->unw_hdr_size = u->hdr_size;
		if (u->hdr_size)   /* perf keeps an unwinding record without a header for the next loads */
			u->have = false;
	}
	if (dbg->nr) {
		c->dbg_off = dbg->off;
		c->dbg_size = dbg->size;
		c->dbg_nr = dbg->nr;
		dbg->nr = 0;
	}
	jd->nr++;
	return 1;
}

/* The code load a move names by its index (the latest before it), or NULL. */
static const struct ds_jit_code *load_of(const struct dsi_jitdump *jd, uint64_t index)
{
	for (size_t i = jd->nr; i-- > 0;)
		if (!jd->codes[i].move && jd->codes[i].index == index)
			return &jd->codes[i];
	return NULL;
}

static int read_move(struct dsi_jitdump *jd, struct win *w, uint64_t off, uint32_t size, uint64_t time,
		     const struct unwind_state *u)
{
	const uint8_t *p = win_get(w, off, MOVE_FIXED);
	const struct ds_jit_code *load;
	struct ds_jit_code *c;
	uint64_t addr, csize, index;

	if (size < MOVE_FIXED || !p) {
		say(jd, off, "code move record of %u bytes, smaller than its fields: skipped", size);
		return 0;
	}
	addr = rd64(jd, p + 40);
	csize = rd64(jd, p + 48);
	index = rd64(jd, p + 56);
	load = load_of(jd, index);
	if (!user_range(jd, addr, csize) || !load || load->size != csize) {
		say(jd, off, "code move to %#llx of %#llx bytes %s: skipped", (unsigned long long)addr,
		    (unsigned long long)csize, load ? "outside any process's addresses" : "of no code loaded before");
		return 0;
	}
	size_t li = (size_t)(load - jd->codes);

	if (!(c = new_code(jd)))
		return -ENOMEM;
	load = &jd->codes[li];
	*c = *load;
	c->move = true;
	c->time = time;
	c->pid = rd32(jd, p + 16);
	c->tid = rd32(jd, p + 20);
	c->addr = addr;
	c->map_len = map_len(csize, u);
	c->rec_off = off;
	jd->nr++;
	return 1;
}

static void read_unwinding(struct dsi_jitdump *jd, struct win *w, uint64_t off, uint32_t size, struct unwind_state *u)
{
	const uint8_t *p = win_get(w, off, UNWIND_FIXED);
	uint64_t usize, hsize, mapped;

	if (size < UNWIND_FIXED || !p) {
		say(jd, off, "unwinding record of %u bytes, smaller than its fields: skipped", size);
		return;
	}
	usize = rd64(jd, p + 16);
	hsize = rd64(jd, p + 24);
	mapped = rd64(jd, p + 32);
	if (usize > size - UNWIND_FIXED || hsize > usize || mapped > MAX_CODE_SIZE) {
		say(jd, off, "unwinding data of %#llx bytes (header %#llx, mapped %#llx) past its record of %u bytes: skipped",
		    (unsigned long long)usize, (unsigned long long)hsize, (unsigned long long)mapped, size);
		return;
	}
	*u = (struct unwind_state){ .off = off + UNWIND_FIXED, .size = usize, .hdr_size = hsize, .mapped = mapped,
				    .have = true };
}

/* A JIT_CODE_DEBUG_INFO: kept for the next load (its entries are read when a line is asked). */
static void read_debug(struct dsi_jitdump *jd, struct win *w, uint64_t off, uint32_t size, struct debug_state *dbg)
{
	const uint8_t *p = win_get(w, off, DEBUG_FIXED);

	if (size < DEBUG_FIXED || !p) {
		say(jd, off, "debug-info record of %u bytes, smaller than its fields: skipped", size);
		return;
	}
	*dbg = (struct debug_state){ .off = off + DEBUG_FIXED, .size = size - DEBUG_FIXED, .nr = rd64(jd, p + 24) };
}

static int read_header(struct dsi_jitdump *jd, struct win *w, uint64_t *first)
{
	const uint8_t *p = win_get(w, 0, HEADER_SIZE);
	uint32_t magic, hsize;

	if (!p) {
		say(jd, 0, "truncated: %llu bytes, not a whole header", (unsigned long long)jd->file_size);
		return -EINVAL;
	}
	memcpy(&magic, p, 4);
	if (magic != JIT_MAGIC && magic != JIT_MAGIC_SWAPPED) {
		say(jd, 0, "not a jitdump (magic %#x)", magic);
		return -EINVAL;
	}
	jd->swap = magic == JIT_MAGIC_SWAPPED;
	jd->version = rd32(jd, p + 4);
	hsize = rd32(jd, p + 8);
	jd->elf_mach = rd32(jd, p + 12);
	jd->pid = rd32(jd, p + 20);
	jd->flags = rd64(jd, p + 32);
	if (hsize < HEADER_SIZE || hsize > jd->file_size) {
		say(jd, 8, "header size %u %s", hsize, hsize < HEADER_SIZE ? "smaller than the header" : "past the end of the file");
		return -EINVAL;
	}
	if (jd->flags & ~FLAG_ARCH_TIMESTAMP) {
		say(jd, 32, "unknown flags %#llx: not read", (unsigned long long)jd->flags);
		return -EINVAL;
	}
	/* TSC timestamps: kept as they are, placed on the recording's clock by dsi_jitdump__time */
	jd->arch_time = (jd->flags & FLAG_ARCH_TIMESTAMP) != 0;
	*first = hsize;
	return 0;
}

static int read_records(struct dsi_jitdump *jd, struct win *w, uint64_t off)
{
	struct unwind_state u = { 0 };
	struct debug_state dbg = { 0 };
	int err = 0;

	while (off < jd->file_size && !err) {
		const uint8_t *p = win_get(w, off, PREFIX_SIZE);
		uint32_t id, size;
		uint64_t time;

		if (!p) {
			say(jd, off, "truncated record prefix (%llu bytes left): the rest not read",
			    (unsigned long long)(jd->file_size - off));
			return 0;
		}
		id = rd32(jd, p);
		size = rd32(jd, p + 4);
		time = rd64(jd, p + 8);
		if (size < PREFIX_SIZE || size > jd->file_size - off) {
			say(jd, off, "record size %u %s (file size %#llx): the rest not read", size,
			    size < PREFIX_SIZE ? "smaller than its prefix" : "past the end of the file",
			    (unsigned long long)jd->file_size);
			return 0;
		}
		if (jd->nr >= DSI_JIT_MAX_CODES && (id == JIT_CODE_LOAD || id == JIT_CODE_MOVE)) {
			say(jd, off, "more than %u code records: the rest not read", DSI_JIT_MAX_CODES);
			return 0;
		}
		switch (id) {
		case JIT_CODE_LOAD: err = read_load(jd, w, off, size, time, &u, &dbg); break;
		case JIT_CODE_MOVE: err = read_move(jd, w, off, size, time, &u); break;
		case JIT_CODE_DEBUG_INFO: read_debug(jd, w, off, size, &dbg); break;
		case JIT_CODE_UNWINDING_INFO: read_unwinding(jd, w, off, size, &u); break;
		default: break;   /* close, and records of later versions: not needed (perf skips the unknown) */
		}
		err = err < 0 ? err : 0;
		off += size;
	}
	return err;
}

int dsi_jitdump__read(struct dsi_jitdump *jd, const char *path)
{
	struct win w = { 0 };
	struct stat st;
	uint64_t first = 0;
	int err;

	memset(jd, 0, sizeof(*jd));
	jd->fd = -1;
	if (!(jd->path = strdup(path)))
		return -ENOMEM;
	jd->fd = dsi_open_regular(path);
	if (jd->fd < 0 || fstat(jd->fd, &st)) {
		err = -errno;
		snprintf(jd->problem, sizeof(jd->problem), "jitdump %s: %s: its code has no symbols", path, strerror(errno));
		return err;
	}
	jd->file_size = (uint64_t)st.st_size;
	w.fd = jd->fd;
	w.file_size = jd->file_size;
	if (!(w.buf = malloc(WINDOW)))
		return -ENOMEM;
	err = read_header(jd, &w, &first);
	if (!err)
		err = read_records(jd, &w, first);
	else
		err = 0;   /* a bad header: said, no codes */
	free(w.buf);
	if (jd->nr_problems > 1) {
		size_t n = strlen(jd->problem);

		snprintf(jd->problem + n, sizeof(jd->problem) - n, " (%llu problems in all)",
			 (unsigned long long)jd->nr_problems);
	}
	return err;
}

void dsi_jitdump__exit(struct dsi_jitdump *jd)
{
	if (jd->fd >= 0)
		close(jd->fd);
	free(jd->path);
	free(jd->recorded);
	free(jd->codes);
	dsi_strblock__free(&jd->names);
	memset(jd, 0, sizeof(*jd));
	jd->fd = -1;
}

uint64_t dsi_jitdump__time(const struct dsi_jitdump *jd, const struct ds_jit_code *c, const struct ds_time_conv *tc)
{
	if (!jd->arch_time)
		return c->time;
	return tc ? ds_time_conv__perf_time(tc, c->time) : DS_NO_TIME;
}

bool dsi_jitdump__name_matches(const char *path, uint32_t pid)
{
	const char *b = strrchr(path, '/');
	uint64_t v = 0;
	const char *p;

	b = b ? b + 1 : path;
	if (strncmp(b, "jit-", 4) || b[4] < '0' || b[4] > '9')
		return false;
	for (p = b + 4; *p >= '0' && *p <= '9'; p++)
		if ((v = v * 10 + (uint64_t)(*p - '0')) > UINT32_MAX)
			return false;
	return !strcmp(p, ".dump") && (!pid || v == pid);
}

/* ---- the ELF image ----------------------------------------------------------- */

static bool pread_all(int fd, void *buf, size_t n, uint64_t off)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = pread(fd, (uint8_t *)buf + got, n - got, (off_t)(off + got));

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return false;
		got += (size_t)r;
	}
	return true;
}

/* A build-id from the code's address and bytes (perf's is a digest of the same; only its uniqueness matters). */
static void make_build_id(uint64_t addr, const uint8_t *code, size_t n, uint8_t bid[20])
{
	uint64_t h[3] = { 0xcbf29ce484222325ull, 0x84222325cbf29ce4ull ^ addr, 0x9e3779b97f4a7c15ull };

	for (int k = 0; k < 3; k++) {
		for (int i = 0; i < 8; i++)
			h[k] = (h[k] ^ ((addr >> (8 * i)) & 0xff)) * 0x100000001b3ull;
		for (size_t i = 0; i < n; i++)
			h[k] = (h[k] ^ code[i]) * (0x100000001b3ull + 2 * (uint64_t)k);
		h[k] = dsi_hash64(h[k]);
	}
	memcpy(bid, h, 20);
}

static const char shstrtab[] = "\0.text\0.eh_frame\0.eh_frame_hdr\0.shstrtab\0.symtab\0.strtab\0.note.gnu.build-id"
				"\0.debug_line\0.debug_info\0.debug_abbrev";
enum {
	SN_TEXT = 1, SN_EH = 7, SN_EHDR = 17, SN_SHSTR = 31, SN_SYMTAB = 41, SN_STRTAB = 49, SN_NOTE = 57,
	SN_DLINE = 76, SN_DINFO = 88, SN_DABBREV = 100,
};

struct bytes {
	uint8_t *p;
	size_t n, cap;
	bool failed;
};

static int debug_sections(const struct dsi_jitdump *jd, const struct ds_jit_code *c, struct bytes *line,
			  struct bytes *info, struct bytes *abbrev);
static int build_elf(const struct dsi_jitdump *jd, const struct ds_jit_code *c, const struct bytes *const *dbg,
		     uint8_t **out, size_t *out_len, uint8_t bid_out[20]);

static uint64_t align(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

int dsi_jitdump__elf(const struct dsi_jitdump *jd, const struct ds_jit_code *c, bool with_lines, uint8_t **out,
		     size_t *out_len, uint8_t bid_out[20])
{
	struct bytes dl = { 0 }, di = { 0 }, da = { 0 };
	int derr = with_lines && c->dbg_nr ? debug_sections(jd, c, &dl, &di, &da) : -ENOENT;

	const struct bytes *dbg[3] = { &dl, &di, &da };
	/* a record that cannot be read: the image without its lines */
	int err = derr == -ENOMEM ? -ENOMEM : build_elf(jd, c, derr ? NULL : dbg, out, out_len, bid_out);

	free(dl.p);
	free(di.p);
	free(da.p);
	return err;
}

/* The image; @dbg: its .debug_line, .debug_info and .debug_abbrev, or NULL. */
static int build_elf(const struct dsi_jitdump *jd, const struct ds_jit_code *c, const struct bytes *const *dbg,
		     uint8_t **out, size_t *out_len, uint8_t bid_out[20])
{
	uint64_t text = DSI_JIT_TEXT_OFFSET, eh = align(text + c->size, 8), eh_size = 0, hdr_size = 0;
	bool unw = c->unw_size > 0 || c->unw_hdr_size > 0 || c->unw_off;
	size_t name_len = strlen(c->name);
	uint8_t bid[20];

	if (c->code_off == UINT64_MAX || c->size > MAX_CODE_SIZE)
		return -EIO;
	if (unw) {
		eh_size = c->unw_size - c->unw_hdr_size;
		hdr_size = c->unw_hdr_size;
	}
	uint64_t shstr = unw ? eh + eh_size + hdr_size : text + c->size;
	uint64_t symtab = align(shstr + sizeof(shstrtab), 8);
	uint64_t strtab = symtab + 2 * sizeof(Elf64_Sym);
	uint64_t note = align(strtab + name_len + 2, 4);
	uint64_t dline = note + 36, dinfo = dline + (dbg ? dbg[0]->n : 0), dabbrev = dinfo + (dbg ? dbg[1]->n : 0);
	uint64_t shoff = align(dabbrev + (dbg ? dbg[2]->n : 0), 8);
	unsigned nsec = (unw ? 8 : 6) + (dbg ? 3 : 0);
	uint64_t total = shoff + nsec * sizeof(Elf64_Shdr);
	uint8_t *b = calloc(1, (size_t)total);

	if (!b)
		return -ENOMEM;
	if (!pread_all(jd->fd, b + text, (size_t)c->size, c->code_off) ||
	    (unw && !pread_all(jd->fd, b + eh, (size_t)(eh_size + hdr_size), c->unw_off))) {
		free(b);
		return -EIO;
	}
	make_build_id(c->addr, b + text, (size_t)c->size, bid);

	Elf64_Ehdr eh_ = {
		.e_ident = { ELFMAG0, ELFMAG1, ELFMAG2, ELFMAG3, ELFCLASS64, ELFDATA2LSB, EV_CURRENT },
		.e_type = ET_DYN, .e_machine = EM_X86_64, .e_version = EV_CURRENT, .e_entry = text,
		.e_phoff = sizeof(Elf64_Ehdr), .e_shoff = shoff, .e_ehsize = sizeof(Elf64_Ehdr),
		.e_phentsize = sizeof(Elf64_Phdr), .e_phnum = 1, .e_shentsize = sizeof(Elf64_Shdr),
		.e_shnum = (uint16_t)nsec, .e_shstrndx = unw ? 4 : 2,
	};
	Elf64_Phdr ph = { .p_type = PT_LOAD, .p_flags = PF_R | PF_X, .p_offset = text, .p_vaddr = text,
			  .p_paddr = text, .p_filesz = c->size, .p_memsz = c->size, .p_align = 8 };
	Elf64_Sym syms[2] = { { 0 }, { .st_name = 1, .st_info = ELF64_ST_INFO(STB_LOCAL, STT_FUNC), .st_shndx = 1,
				       .st_value = text, .st_size = c->size } };
	Elf64_Shdr sh[11] = { { 0 } };
	unsigned i = 1;

	memcpy(b, &eh_, sizeof(eh_));
	memcpy(b + sizeof(eh_), &ph, sizeof(ph));
	sh[i++] = (Elf64_Shdr){ .sh_name = SN_TEXT, .sh_type = SHT_PROGBITS, .sh_flags = SHF_ALLOC | SHF_EXECINSTR,
				.sh_addr = text, .sh_offset = text, .sh_size = c->size, .sh_addralign = 16 };
	if (unw) {
		sh[i++] = (Elf64_Shdr){ .sh_name = SN_EH, .sh_type = SHT_PROGBITS, .sh_flags = SHF_ALLOC, .sh_addr = eh,
					.sh_offset = eh, .sh_size = eh_size, .sh_addralign = 8 };
		sh[i++] = (Elf64_Shdr){ .sh_name = SN_EHDR, .sh_type = SHT_PROGBITS, .sh_flags = SHF_ALLOC,
					.sh_addr = eh + eh_size, .sh_offset = eh + eh_size, .sh_size = hdr_size,
					.sh_addralign = 1 };
	}
	unsigned strtab_idx = i + 2;

	memcpy(b + shstr, shstrtab, sizeof(shstrtab));
	sh[i++] = (Elf64_Shdr){ .sh_name = SN_SHSTR, .sh_type = SHT_STRTAB, .sh_offset = shstr,
				.sh_size = sizeof(shstrtab), .sh_addralign = 1 };
	memcpy(b + symtab, syms, sizeof(syms));
	sh[i++] = (Elf64_Shdr){ .sh_name = SN_SYMTAB, .sh_type = SHT_SYMTAB, .sh_offset = symtab, .sh_size = sizeof(syms),
				.sh_link = strtab_idx, .sh_info = 2, .sh_addralign = 8, .sh_entsize = sizeof(Elf64_Sym) };
	memcpy(b + strtab + 1, c->name, name_len);
	sh[i++] = (Elf64_Shdr){ .sh_name = SN_STRTAB, .sh_type = SHT_STRTAB, .sh_offset = strtab,
				.sh_size = name_len + 2, .sh_addralign = 1 };
	uint32_t nhdr[3] = { 4, 20, NT_GNU_BUILD_ID };

	memcpy(b + note, nhdr, sizeof(nhdr));
	memcpy(b + note + 12, "GNU", 4);
	memcpy(b + note + 16, bid, 20);
	sh[i++] = (Elf64_Shdr){ .sh_name = SN_NOTE, .sh_type = SHT_NOTE, .sh_flags = SHF_ALLOC, .sh_offset = note,
				.sh_size = 36, .sh_addralign = 4 };
	if (dbg) {
		const uint32_t names[3] = { SN_DLINE, SN_DINFO, SN_DABBREV };
		const uint64_t offs[3] = { dline, dinfo, dabbrev };

		for (unsigned k = 0; k < 3; k++) {
			memcpy(b + offs[k], dbg[k]->p, dbg[k]->n);
			sh[i++] = (Elf64_Shdr){ .sh_name = names[k], .sh_type = SHT_PROGBITS, .sh_offset = offs[k],
						.sh_size = dbg[k]->n, .sh_addralign = 1 };
		}
	}
	memcpy(b + shoff, sh, nsec * sizeof(Elf64_Shdr));
	if (bid_out)
		memcpy(bid_out, bid, 20);
	*out = b;
	*out_len = (size_t)total;
	return 0;
}

/* ---- source lines -------------------------------------------------------------- */

/*
 * perf inject --jit turns a load's debug entries into a DWARF 2 line
 * program (its genelf_debug.c), which addr2line reads for perf's srcline.
 * The program is made here as that writer makes it (line_walk's steps):
 * its header says line_base -5, line_range 242 (written as -14),
 * opcode_base 13; it sets the address to 0x80 (.text), then for each
 * entry defines its file where the name changed (the repeated-name marker
 * "\xff" keeps it), and emits a special opcode where one fits (a line
 * step in [-5, 236] with an address step of 0 or 1), else the line and
 * address advances that changed and a row if anything did; it ends the
 * sequence at the last entry's address.  Addresses are 0x80 plus the
 * entry's offset from the code's start, modulo 2^64, as perf's are.
 */
struct line_walk {
	const struct dsi_jitdump *jd;
	const uint8_t *b;          /* the entries, NUL after the last byte */
	size_t n, q;
	uint64_t i, nr, code_addr;
	uint64_t addr;             /* the line program's state */
	uint32_t line;
	const char *file;          /* NULL: none defined yet */
};

struct line_step {
	uint64_t at;               /* the entry's address */
	uint32_t line;
	const char *name;          /* the entry's (maybe the marker) */
	bool new_file;             /* the name changed: a file defined */
	bool special;              /* a special opcode (a row) */
	bool row;                  /* a row of the line table */
	uint64_t from;             /* the state's address and line before it */
	uint32_t from_line;
};

static bool special_opcode_fits(uint32_t line, uint32_t last_line, uint64_t addr, uint64_t last_addr)
{
	uint32_t step = line - last_line + 5u;
	uint64_t da = addr - last_addr;

	return step < 242u && da <= 1 && step + da * 242u + 13u <= 255u;
}

/* The code's debug entries read into *@buf (malloc'd, NUL after them) and a walk over them. */
static int line_walk_init(struct line_walk *w, const struct dsi_jitdump *jd, const struct ds_jit_code *c, uint8_t **buf)
{
	size_t n = (size_t)c->dbg_size;

	if (!c->dbg_nr || c->dbg_size > MAX_DEBUG_SIZE)
		return -ENOENT;
	if (!(*buf = malloc(n + 1)))
		return -ENOMEM;
	if (!pread_all(jd->fd, *buf, n, c->dbg_off)) {
		free(*buf);
		return -EIO;
	}
	(*buf)[n] = 0;   /* a name cut by the record's end ends there */
	*w = (struct line_walk){ .jd = jd, .b = *buf, .n = n, .nr = c->dbg_nr, .code_addr = c->addr,
				 .addr = DSI_JIT_TEXT_OFFSET, .line = 1 };
	return 0;
}

/* The next entry's step; false after the last (or where the record ends). */
static bool line_walk_next(struct line_walk *w, struct line_step *st)
{
	if (w->i >= w->nr || w->q + DEBUG_ENTRY >= w->n)   /* a name byte at least; b[n] ends it */
		return false;
	st->at = DSI_JIT_TEXT_OFFSET + (rd64(w->jd, w->b + w->q) - w->code_addr);
	st->line = rd32(w->jd, w->b + w->q + 8);
	st->name = (const char *)w->b + w->q + DEBUG_ENTRY;
	st->from = w->addr;
	st->from_line = w->line;
	w->q += DEBUG_ENTRY + strlen(st->name) + 1;
	w->i++;
	st->new_file = (!w->file || strcmp(w->file, st->name)) && strcmp(st->name, "\xff");
	if (st->new_file)
		w->file = st->name;
	st->special = special_opcode_fits(st->line, w->line, st->at, w->addr);
	st->row = st->new_file || st->special || st->line != w->line || st->at != w->addr;
	w->line = st->line;
	w->addr = st->at;
	return true;
}

int dsi_jitdump__srcline(const struct dsi_jitdump *jd, const struct ds_jit_code *c, uint64_t text_addr,
			 char *file, size_t file_size, unsigned *line)
{
	struct line_walk w;
	struct line_step st;
	uint8_t *b;
	uint64_t best_at = 0;
	uint32_t best_line = 0;
	const char *best_file = NULL;
	bool found = false;
	int err = line_walk_init(&w, jd, c, &b);

	if (err)
		return err;
	while (line_walk_next(&w, &st)) {
		/* the last row of the greatest address not above the one asked (addr2line's) */
		if (st.row && st.at <= text_addr && (!found || st.at >= best_at)) {
			best_at = st.at;
			best_line = st.line;
			best_file = w.file;
			found = true;
		}
	}
	/* the sequence ends at the last entry's address: nothing from there on */
	if (found && text_addr >= w.addr)
		found = false;
	if (found) {
		snprintf(file, file_size, "%s", best_file ? best_file : "??");
		*line = best_line;
	}
	free(b);
	return found ? 1 : 0;
}

/* ---- the debug sections perf inject writes of them -------------------------------- */

static void put_bytes(struct bytes *o, const void *p, size_t n)
{
	uint8_t *v;

	if (o->failed || !(v = dsi_grow(o->p, &o->cap, o->n + n, 1, 256))) {
		o->failed = true;
		return;
	}
	o->p = v;
	memcpy(o->p + o->n, p, n);
	o->n += n;
}

static void put_u8(struct bytes *o, uint8_t v)
{
	put_bytes(o, &v, 1);
}

static void put_uleb(struct bytes *o, uint64_t v)
{
	do {
		uint8_t b = v & 0x7f;

		v >>= 7;
		put_u8(o, (uint8_t)(b | (v ? 0x80 : 0)));
	} while (v);
}

static void put_sleb(struct bytes *o, int64_t v)
{
	for (;;) {
		uint8_t b = (uint8_t)(v & 0x7f);

		v >>= 7;   /* arithmetic: the sign kept */
		if ((v == 0 && !(b & 0x40)) || (v == -1 && (b & 0x40))) {
			put_u8(o, b);
			return;
		}
		put_u8(o, b | 0x80);
	}
}

static void put_le(struct bytes *o, uint64_t v, unsigned size)
{
	uint8_t b[8];

	for (unsigned k = 0; k < size; k++)
		b[k] = (uint8_t)(v >> (8 * k));
	put_bytes(o, b, size);
}

static void patch_u32(struct bytes *o, size_t at, uint32_t v)
{
	if (!o->failed)
		for (unsigned k = 0; k < 4; k++)
			o->p[at + k] = (uint8_t)(v >> (8 * k));
}

/* The .debug_line, .debug_info and .debug_abbrev of code @c, as perf inject writes them (x86_64, little-endian). */
static int debug_sections(const struct dsi_jitdump *jd, const struct ds_jit_code *c, struct bytes *line,
			  struct bytes *info, struct bytes *abbrev)
{
	static const uint8_t opcode_lengths[12] = { 0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1 };
	struct line_walk w;
	struct line_step st;
	uint8_t *b;
	uint64_t files = 0;
	int err = line_walk_init(&w, jd, c, &b);

	if (err)
		return err;
	put_le(line, 0, 4);                  /* total length, below */
	put_le(line, 2, 2);                  /* version */
	put_le(line, 0, 4);                  /* header length, below */
	put_u8(line, 1);                     /* minimum instruction length */
	put_u8(line, 1);                     /* default is_stmt */
	put_u8(line, (uint8_t)-5);           /* line_base */
	put_u8(line, (uint8_t)-14);          /* line_range: 242 */
	put_u8(line, 13);                    /* opcode_base */
	put_bytes(line, opcode_lengths, sizeof(opcode_lengths));
	put_u8(line, 0);                     /* no directories */
	put_u8(line, 0);                     /* no files: each defined in the program */
	patch_u32(line, 6, (uint32_t)(line->n - 10));
	put_u8(line, 0);                     /* DW_LNE_set_address 0x80 */
	put_uleb(line, 9);
	put_u8(line, DW_LNE_set_address);
	put_le(line, DSI_JIT_TEXT_OFFSET, 8);
	while (line_walk_next(&w, &st)) {
		if (st.new_file) {
			size_t len = strlen(st.name);

			put_u8(line, 0);             /* DW_LNE_define_file NAME, dir 0, mtime 0, size 0 */
			put_uleb(line, len + 5);
			put_u8(line, DW_LNE_define_file);
			put_bytes(line, st.name, len + 1);
			put_bytes(line, "\0\0", 3);
			put_u8(line, DW_LNS_set_file);
			put_uleb(line, ++files);
		}
		if (st.special) {
			put_u8(line, (uint8_t)((st.line - st.from_line + 5u) + (st.at - st.from) * 242u + 13u));
			continue;
		}
		if (st.line != st.from_line) {
			put_u8(line, DW_LNS_advance_line);
			put_sleb(line, (int32_t)(st.line - st.from_line));
		}
		if (st.at != st.from) {
			put_u8(line, DW_LNS_advance_pc);
			put_uleb(line, st.at - st.from);
		}
		if (st.row)
			put_u8(line, DW_LNS_copy);
	}
	put_bytes(line, "\0\1\1", 3);        /* DW_LNE_end_sequence */
	patch_u32(line, 0, (uint32_t)(line->n - 4));
	free(b);
	/* one unit naming the line program, its abbreviation: compile_unit, children, stmt_list data4 */
	put_le(info, 0, 4);
	put_le(info, 2, 2);
	put_le(info, 0, 4);
	put_u8(info, 8);
	put_uleb(info, 1);
	put_le(info, 0, 4);
	patch_u32(info, 0, (uint32_t)(info->n - 4));
	put_bytes(abbrev, "\x01\x11\x01\x10\x06\0\0\0", 8);
	return line->failed || info->failed || abbrev->failed ? -ENOMEM : 0;
}

/* ---- the API ------------------------------------------------------------------ */

struct ds_jitdump {
	struct dsi_jitdump jd;
	int status;                /* 0, or the read's first problem's negative errno (jd.problem says it) */
};

bool ds_jitdump__is_marker(const char *path, uint32_t pid)
{
	return dsi_jitdump__name_matches(path, pid);
}

struct ds_jitdump *ds_jitdump__open(const char *path)
{
	struct ds_jitdump *d = calloc(1, sizeof(*d));

	int err;

	if (!d)
		return NULL;
	if ((err = dsi_jitdump__read(&d->jd, path)) == -ENOMEM) {
		dsi_jitdump__exit(&d->jd);
		free(d);
		errno = ENOMEM;
		return NULL;
	}
	/* a file that cannot be read: its errno; damage read past: EBADMSG */
	d->status = err < 0 ? err : d->jd.problem[0] ? -EBADMSG : 0;
	return d;
}

void ds_jitdump__close(struct ds_jitdump *d)
{
	if (d) {
		dsi_jitdump__exit(&d->jd);
		free(d);
	}
}

int ds_jitdump__status(const struct ds_jitdump *d)
{
	return d->status ? dsi_error_keep(d->status, d->jd.problem) : 0;
}

size_t ds_jitdump__nr_codes(const struct ds_jitdump *d)
{
	return d->jd.nr;
}

const struct ds_jit_code *ds_jitdump__code(const struct ds_jitdump *d, size_t i)
{
	return i < d->jd.nr ? &d->jd.codes[i] : NULL;
}

uint64_t ds_jitdump__code_time(const struct ds_jitdump *d, size_t i, const struct ds_time_conv *tc)
{
	return i < d->jd.nr ? dsi_jitdump__time(&d->jd, &d->jd.codes[i], tc) : DS_NO_TIME;
}

int ds_jitdump__write_elf(const struct ds_jitdump *d, size_t i, const char *path, uint8_t bid[20])
{
	uint8_t *buf;
	size_t len, done = 0;
	int fd, err;

	if (i >= d->jd.nr)
		return -EINVAL;
	if ((err = dsi_jitdump__elf(&d->jd, &d->jd.codes[i], true, &buf, &len, bid)))
		return err;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		err = -errno;
		free(buf);
		return err;
	}
	while (done < len) {
		ssize_t n = write(fd, buf + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			err = n < 0 ? -errno : -EIO;
			break;
		}
		done += (size_t)n;
	}
	free(buf);
	if (close(fd) && !err)
		err = -errno;
	if (err)
		unlink(path);
	return err;
}
