// SPDX-License-Identifier: MIT
/*
 * Kernel symbols from a kallsyms text ("ADDR TYPE NAME [\t[module]]"), by
 * perf's rules: the types symbol_type__filter() keeps, no module lines, no
 * '$' names; in a same-address group the last one listed wins, and the
 * last symbol ends a page past its page.
 *
 * The text (8 MB, 2*10^5 lines, read once per run and most of a short
 * run's time) is never parsed into a table when it can be helped: one
 * scan (kallsyms_scan.h) checks that it is sorted, as a real one is, and
 * samples every SAMPLE_EVERY-th line; a lookup then searches the samples
 * and reads a few lines of the text.  A text that is not sorted, or a
 * lookup that would walk too far, gets the full index instead: every kept
 * symbol's address and where its name lies.  Either way a name is copied
 * when first hit.  A regular file is scanned through a buffer and mapped
 * for the lookups; anything else (/proc/kallsyms) is read whole.  As with
 * the binaries libelf maps, a file cut short under a running dstack may
 * end it (SIGBUS); one rewritten in place shows as lines that are not as
 * checked, and the search leaves for the full index.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "util/grow.h"
#include "util/io.h"
#include "symbols/kallsyms_scan.h"
#include "symbols/symbols_int.h"

/* a longer name (a hostile line) is cut: a real one is under the kernel's KSYM_NAME_LEN, 512 */
#define NAME_MAX_LEN 1024u

/* ---- lines ------------------------------------------------------------- */

/* The types perf's symbol_type__filter() keeps (text, weak, data, bss, ...). */
static const bool kept_type[256] = {
	['T'] = true, ['t'] = true, ['W'] = true, ['w'] = true, ['D'] = true, ['d'] = true,
	['B'] = true, ['b'] = true, ['u'] = true, ['l'] = true, ['N'] = true, ['1'] = true,
};

static bool type_kept(char t)
{
	return kept_type[(unsigned char)t];
}

/* The address at the start of the line @l (@n bytes) into *@addr, *@s past it; false if none. */
static bool line_address(const char *l, size_t n, const char **s, uint64_t *addr)
{
	const char *p = l, *end = l + n;
	int d, digits = 0;

	*addr = 0;
	if (n > 17 && l[16] == ' ' && ds_hex16(l, addr)) {   /* the usual line: exactly 16 digits */
		*s = l + 16;
		return true;
	}
	if (end - p > 2 && p[0] == '0' && (p[1] | 0x20) == 'x' && ds_hexval(p[2]) >= 0)
		p += 2;
	while (p < end && (d = ds_hexval(*p)) >= 0) {
		*addr = *addr << 4 | (uint64_t)d;
		p++;
		digits++;
	}
	*s = p;
	return digits > 0;
}

/* perf's kallsyms filter on the line @l (length @n, at file offset @off): the symbol's address and name offset. */
static bool index_line(const char *l, size_t off, size_t n, struct ds_ksym *out)
{
	const char *end = l + n, *s, *name, *tab;
	uint64_t addr;

	if (!line_address(l, n, &s, &addr) || s == end || *s != ' ')
		return false;
	while (s < end && (*s == ' ' || *s == '\t'))
		s++;
	if (end - s < 2 || s[1] != ' ' || !type_kept(s[0]))
		return false;
	for (name = s + 1; name < end && (*name == ' ' || *name == '\t'); name++)
		;
	tab = memchr(name, '\t', (size_t)(end - name));
	if (tab && memchr(tab, '[', (size_t)(end - tab)))
		return false;   /* "\t[module]": module symbols belong to module maps */
	if (name == (tab ? tab : end) || name[0] == '$' || name[0] == '\0')
		return false;
	*out = (struct ds_ksym){ .start = addr, .name_off = off + (uint64_t)(name - l) };
	return true;
}

/*
 * The usual line, "%016lx T name\n" with no tab (no module): parsed without
 * index_line()'s scanning.  False when the line is not of that shape, and
 * then index_line() decides.
 */
static inline bool usual_line(const char *l, size_t off, size_t n, bool has_tab, struct ds_ksym *out, bool *keep)
{
	uint64_t addr;

	if (has_tab || n < 20 || l[16] != ' ' || l[18] != ' ' || l[19] == ' ' || !ds_hex16(l, &addr))
		return false;
	*keep = type_kept(l[17]) && l[19] != '$' && l[19] != '\0';
	*out = (struct ds_ksym){ .start = addr, .name_off = off + 19 };
	return true;
}

/* A module line ("...\t[mod]"): never a kernel symbol here, and not in order. */
static bool module_line(const char *l, size_t n)
{
	const char *tab;

	if (!n || l[n - 1] != ']')   /* the usual line: no scan */
		return false;
	tab = memchr(l, '\t', n);
	return tab && memchr(tab, '[', n - (size_t)(tab - l));
}

/* ---- the text ---------------------------------------------------------- */

/* @path opened if it is a regular file (ks->fd), else read whole (/proc/kallsyms); false if neither. */
static bool open_text(struct ds_kallsyms *ks, const char *path)
{
	struct stat st;
	int fd = dsi_open_regular(path);

	if (fd < 0)
		return false;
	if (!fstat(fd, &st) && S_ISREG(st.st_mode) && st.st_size > 0) {
		ks->len = (size_t)st.st_size;
		ks->fd = fd;
		ks->fd_open = true;
		return true;
	}
	close(fd);
	ks->text = dsi_read_file(path, &ks->len);
	return ks->text != NULL;
}

/* The file, scanned already, mapped for the lookups; false if it cannot be. */
static bool map_text(struct ds_kallsyms *ks)
{
	void *m;

	if (!ks->fd_open)
		return true;   /* read whole */
	m = mmap(NULL, ks->len, PROT_READ, MAP_PRIVATE, ks->fd, 0);
	if (m == MAP_FAILED)
		return false;
	ks->text = m;
	ks->mapped = true;
	madvise(m, ks->len, MADV_RANDOM);   /* a line or two here and there */
	return true;
}

/* Every line of the text to @on_line: the file through a buffer, or the text read whole. */
static DS_ALWAYS_INLINE bool scan_text(const struct ds_kallsyms *ks, ds_kline_fn *on_line, void *ctx)
{
	size_t used;

	if (ks->fd_open)
		return ds_kscan_file(ks->fd, on_line, ctx);
	return ds_kscan_buf(ks->text, ks->len, 0, true, &used, on_line, ctx);
}

/* The line at offset @p (< the text's length): its length. */
static size_t line_len(const struct ds_kallsyms *ks, size_t p)
{
	const char *nl = memchr(ks->text + p, '\n', ks->len - p);

	return nl ? (size_t)(nl - (ks->text + p)) : ks->len - p;
}

/* The start of the line before the one at offset @p (> 0). */
static size_t line_before(const struct ds_kallsyms *ks, size_t p)
{
	const char *nl = p - 1 > 0 ? memrchr(ks->text, '\n', p - 1) : NULL;

	return nl ? (size_t)(nl - ks->text) + 1 : 0;
}

/* The name at @off (up to a newline or a tab, at most NAME_MAX_LEN bytes), copied; NULL on error. */
static const char *copy_name(struct ds_kallsyms *ks, uint64_t off)
{
	const char *n, *stop, *end;

	if (off >= ks->len)
		return NULL;
	n = ks->text + off;
	end = ks->len - off < NAME_MAX_LEN ? ks->text + ks->len : n + NAME_MAX_LEN;
	for (stop = n; stop < end && *stop != '\n' && *stop != '\t'; stop++)
		;
	return dsi_strblock__add(&ks->blocks, n, (size_t)(stop - n));
}

/* The name at @off, copied on its first use; NULL on error. */
static const char *name_at(struct ds_kallsyms *ks, uint64_t off)
{
	uint64_t *slot = dsi_hashmap__find(&ks->names, off);
	const char *name;

	if (slot)
		return (const char *)(uintptr_t)*slot;
	name = copy_name(ks, off);
	if (!name || dsi_hashmap__set(&ks->names, off, (uint64_t)(uintptr_t)name) < 0)
		return NULL;
	return name;
}

/* ---- the full index ---------------------------------------------------- */

/* The kept symbols, in file order (sorted tells whether that is address order too). */
struct ksym_vec {
	struct ds_ksym *v;
	size_t nr, cap;
	bool sorted;
};

static inline bool ksym_push(struct ksym_vec *k, struct ds_ksym e)
{
	if (k->nr == k->cap) {
		struct ds_ksym *n = dsi_grow(k->v, &k->cap, k->nr + 1, sizeof(*n), 4096);

		if (!n)
			return false;
		k->v = n;
	}
	if (k->nr && e.start < k->v[k->nr - 1].start)
		k->sorted = false;
	k->v[k->nr++] = e;
	return true;
}

static int ksym_cmp(const void *pa, const void *pb)
{
	const struct ds_ksym *a = pa, *b = pb;

	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	return a->name_off < b->name_off ? -1 : a->name_off > b->name_off;
}

/* The index into @ks, sorted by (start, name_off), its spare capacity given back. */
static void ksym_finish(struct ds_kallsyms *ks, struct ksym_vec *k)
{
	struct ds_ksym *v = k->nr ? realloc(k->v, k->nr * sizeof(*v)) : NULL;

	ks->v = v ? v : k->v;
	ks->nr = k->nr;
	if (!k->sorted && ks->nr > 1)   /* none: v may be NULL, and qsort(NULL, 0) is undefined */
		qsort(ks->v, ks->nr, sizeof(*ks->v), ksym_cmp);
}

static DS_ALWAYS_INLINE bool index_one(void *ctx, const char *l, size_t off, size_t n, bool has_tab)
{
	struct ds_ksym e;
	bool keep;

	if (!usual_line(l, off, n, has_tab, &e, &keep))
		keep = index_line(l, off, n, &e);
	return !keep || ksym_push(ctx, e);
}

/* The full index of the text into ks->v; false on ENOMEM or a read error. */
static bool index_text(struct ds_kallsyms *ks)
{
	struct ksym_vec k = { .sorted = true };

	if (!scan_text(ks, index_one, &k)) {
		free(k.v);
		return false;
	}
	ksym_finish(ks, &k);
	return true;
}

/* The symbol of the full index for @addr into *@out; false if none. */
static bool find_indexed(const struct ds_kallsyms *ks, uint64_t addr, struct ds_ksym *out)
{
	/* the last symbol with start <= addr: in a same-address group, the last listed */
	size_t lo = DS_UPPER_BOUND(ks->v, ks->nr, start, addr);

	if (lo == 0)
		return false;
	*out = ks->v[lo - 1];
	uint64_t end = lo < ks->nr ? ks->v[lo].start : ((out->start + 4095) & ~4095ULL) + 4096;

	return addr < end;
}

/* ---- sorted text, searched in place ------------------------------------ */

/*
 * A real kallsyms is sorted by address but for its module lines, and every
 * line is "%016lx T name" in lower case: then 16-character keys compare as
 * the addresses do, and one pass that only compares them (no conversion,
 * no index) proves the text searchable as it is.  The pass keeps the
 * address and offset of every SAMPLE_EVERY-th line; a lookup searches those
 * and then reads a few lines.  A lookup that would walk too far (long runs
 * of lines that are not symbols) builds the full index instead.
 */
#define SAMPLE_EVERY 32
#define WALK_MAX 2048

struct sorted_check {
	uint64_t prev_hi, prev_lo;   /* the previous ordered line's key, as big-endian halves */
	unsigned since;              /* ordered lines since the last sample */
	struct ds_ksample *v;
	size_t nr, cap;
	size_t tail;                 /* just past the last ordered line */
};

static DS_ALWAYS_INLINE bool check_one(void *ctx, const char *l, size_t off, size_t n, bool has_tab)
{
	struct sorted_check *c = ctx;
	uint64_t hi, lo;

	if (has_tab)
		return module_line(l, n);   /* any other tab: not the usual shape */
	if (n < 20 || l[16] != ' ' || l[18] != ' ' || l[19] == ' ' || !ds_hex16_lower(l))
		return false;
	memcpy(&hi, l, 8);
	memcpy(&lo, l + 8, 8);
	hi = __builtin_bswap64(hi);
	lo = __builtin_bswap64(lo);
	if (c->tail && (hi < c->prev_hi || (hi == c->prev_hi && lo < c->prev_lo)))
		return false;
	c->prev_hi = hi;
	c->prev_lo = lo;
	c->tail = off + n;
	if (c->since++ % SAMPLE_EVERY == 0) {
		struct ds_ksample *nv = dsi_grow(c->v, &c->cap, c->nr + 1, sizeof(*nv), 1024);

		if (!nv)
			return false;
		c->v = nv;
		ds_hex16(l, &c->v[c->nr].key);
		c->v[c->nr++].off = off;
	}
	return true;
}

/* True when the text can be searched in place (then ks->samples is set). */
static bool check_sorted(struct ds_kallsyms *ks)
{
	struct sorted_check c = { 0 };

	if (!scan_text(ks, check_one, &c) || !c.nr) {
		free(c.v);
		return false;
	}
	ks->samples = c.v;
	ks->nr_samples = c.nr;
	ks->tail = c.tail;
	ks->in_place = true;
	return true;
}

/*
 * The last kept line <= @addr from the sample at @p forward, by the index's
 * rules, into *@out; *@next: the first ordered line past @addr (ks->tail if
 * none).  1 if found, 0 if not, -1 if the walk grew too long or the text
 * is not as checked; *@walked counts the lines read.
 */
static int walk_to(const struct ds_kallsyms *ks, size_t p, uint64_t addr, struct ds_ksym *out, size_t *next,
		   unsigned *walked)
{
	size_t n, last = SIZE_MAX, last_n = 0, from = p;
	uint64_t key;

	*next = ks->tail;
	/* forward over the lines <= addr, only reading their addresses */
	for (; p < ks->tail; p += n + 1) {
		if (p >= ks->len || ++*walked > WALK_MAX)
			return -1;
		n = line_len(ks, p);
		if (module_line(ks->text + p, n))
			continue;
		if (n < 16 || !ds_hex16(ks->text + p, &key))
			return -1;   /* not as checked: the file changed under us */
		if (key > addr) {
			*next = p;
			break;
		}
		last = p;
		last_n = n;
	}
	if (last != SIZE_MAX && index_line(ks->text + last, last, last_n, out))
		return 1;
	/* nearly always the last of them, else back from there */
	for (p = last != SIZE_MAX ? last : from; p > 0;) {
		p = line_before(ks, p);
		if (++*walked > WALK_MAX)
			return -1;
		if (index_line(ks->text + p, p, line_len(ks, p), out))
			return 1;
	}
	return 0;
}

/*
 * The end of the symbol *@sym into *@end: the start of the next kept line
 * from @p on, else a page past the symbol's page; false if the walk grew
 * too long.
 */
static bool walk_to_end(const struct ds_kallsyms *ks, size_t p, const struct ds_ksym *sym, uint64_t *end,
			unsigned *walked)
{
	struct ds_ksym e;
	size_t n;

	for (; p < ks->tail; p += n + 1) {
		if (p >= ks->len || ++*walked > WALK_MAX)
			return false;
		n = line_len(ks, p);
		if (index_line(ks->text + p, p, n, &e)) {
			*end = e.start;
			return true;
		}
	}
	*end = ((sym->start + 4095) & ~4095ULL) + 4096;
	return true;
}

/*
 * The symbol for @addr in the sorted text, looked for from the last sample
 * <= addr: 1 and *@out; 0 if none; -1 if the walk grew too long (or the
 * text is not as checked).
 */
static int find_in_place(const struct ds_kallsyms *ks, uint64_t addr, struct ds_ksym *out)
{
	size_t lo = DS_UPPER_BOUND(ks->samples, ks->nr_samples, key, addr), p, next;
	unsigned walked = 0;
	uint64_t key, end;
	int r;

	if (lo == 0)
		return 0;   /* before the first line */
	/* the sample's line holds the sample's key (a file changed under us shows here) */
	p = ks->samples[lo - 1].off;
	if (p >= ks->len)
		return -1;
	if ((p && ks->text[p - 1] != '\n') || line_len(ks, p) < 20 || !ds_hex16(ks->text + p, &key) ||
	    key != ks->samples[lo - 1].key)
		return -1;
	r = walk_to(ks, p, addr, out, &next, &walked);
	if (r <= 0)
		return r;
	if (!walk_to_end(ks, next, out, &end, &walked))
		return -1;
	return addr < end;
}

/* Leave the in-place search for the full index; false on ENOMEM. */
static bool to_full_index(struct ds_kallsyms *ks)
{
	if (!index_text(ks))
		return false;
	free(ks->samples);
	ks->samples = NULL;
	ks->nr_samples = 0;
	ks->in_place = false;
	return true;
}

/* ---- module symbols ---------------------------------------------------- */

/*
 * perf gives every kallsyms symbol its end from the whole set sorted by
 * address (the next symbol's start when that is of the same module, else a
 * page past the symbol's page), then splits the module lines ("ADDR TYPE
 * NAME\t[MOD]") into their modules' maps.  One table of every kept module
 * line, sorted by address, answers a module lookup the same way: the last
 * symbol at or below the address must be of that module and end above it.
 * Built on the first module lookup; a real kallsyms has a few thousand.
 */

/* The module line @l (@n bytes at offset @off) by the kernel lines' filter, into *@out; false if not one. */
static bool module_sym_line(const char *l, size_t off, size_t n, struct ds_kmodsym *out)
{
	const char *end = l + n, *s, *name, *tab, *mod, *close;
	uint64_t addr;

	if (!module_line(l, n) || !line_address(l, n, &s, &addr) || s == end || *s != ' ')
		return false;
	while (s < end && *s == ' ')
		s++;
	if (end - s < 2 || s[1] != ' ' || !type_kept(s[0]))
		return false;
	for (name = s + 1; name < end && *name == ' '; name++)
		;
	tab = memchr(name, '\t', (size_t)(end - name));
	if (!tab || tab == name || name[0] == '$')
		return false;
	mod = memchr(tab, '[', (size_t)(end - tab));
	close = end - 1;   /* module_line(): the line ends in ']' */
	if (!mod || close <= mod + 1)
		return false;
	*out = (struct ds_kmodsym){ .start = addr, .name_off = off + (uint64_t)(name - l),
				    .mod_off = off + (uint64_t)(mod + 1 - l), .mod_len = (uint32_t)(close - mod - 1) };
	return true;
}

static int kmodsym_cmp(const void *pa, const void *pb)
{
	const struct ds_kmodsym *a = pa, *b = pb;

	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	return a->name_off < b->name_off ? -1 : a->name_off > b->name_off;
}

/* ks->mods from the text (once); false on ENOMEM. */
static bool read_modules(struct ds_kallsyms *ks)
{
	size_t cap = 0;

	if (ks->mods_read)
		return true;
	for (size_t p = 0, n; p < ks->len; p += n + 1) {
		struct ds_kmodsym e, *v;

		n = line_len(ks, p);
		if (!module_sym_line(ks->text + p, p, n, &e))
			continue;
		if (!(v = dsi_grow(ks->mods, &cap, ks->nr_mods + 1, sizeof(*v), 256)))
			return false;
		ks->mods = v;
		ks->mods[ks->nr_mods++] = e;
	}
	if (ks->nr_mods > 1)
		qsort(ks->mods, ks->nr_mods, sizeof(*ks->mods), kmodsym_cmp);
	ks->mods_read = true;
	return true;
}

static bool same_module(const struct ds_kallsyms *ks, const struct ds_kmodsym *a, const char *module, size_t len)
{
	return a->mod_len == len && !memcmp(ks->text + a->mod_off, module, len);
}

bool dsi_kallsyms__find_module(struct ds_kallsyms *ks, const char *module, size_t len, uint64_t addr,
			       const char **name, uint64_t *start)
{
	const struct ds_kmodsym *sym;
	size_t lo;
	uint64_t end;

	if (!read_modules(ks) || !(lo = DS_UPPER_BOUND(ks->mods, ks->nr_mods, start, addr)))
		return false;
	/* a same-address group: the last listed, as for the kernel's symbols */
	sym = &ks->mods[lo - 1];
	if (!same_module(ks, sym, module, len))
		return false;
	if (lo < ks->nr_mods && same_module(ks, &ks->mods[lo], module, len))
		end = ks->mods[lo].start;
	else
		end = ((sym->start + 4095) & ~4095ULL) + 4096;
	if (addr >= end)
		return false;
	*name = name_at(ks, sym->name_off);
	*start = sym->start;
	return *name != NULL;
}

/* ---- the API ----------------------------------------------------------- */

bool dsi_kallsyms__load(struct ds_kallsyms *ks, const char *path)
{
	memset(ks, 0, sizeof(*ks));
	dsi_hashmap__init(&ks->names);
	if (!open_text(ks, path))
		return false;
	if ((check_sorted(ks) || index_text(ks)) && map_text(ks))
		return true;
	dsi_kallsyms__exit(ks);
	return false;
}

bool dsi_kallsyms__find(struct ds_kallsyms *ks, uint64_t addr, const char **name, uint64_t *start)
{
	struct ds_ksym k;
	int r = ks->in_place ? find_in_place(ks, addr, &k) : -1;

	if (r == 0)
		return false;
	if (r < 0 && ks->in_place && !to_full_index(ks))
		return false;
	if (r < 0 && !find_indexed(ks, addr, &k))
		return false;
	/* names by their offset in the text: the same key for both searches */
	*name = name_at(ks, k.name_off);
	*start = k.start;
	return *name != NULL;
}

bool dsi_kallsyms__function_addr(const struct ds_kallsyms *ks, const char *name, uint64_t *addr)
{
	size_t n = strlen(name);

	for (size_t p = 0; p < ks->len; p += line_len(ks, p) + 1) {
		size_t used = line_len(ks, p);
		const char *l = ks->text + p, *sym;

		if (used && l[used - 1] == '\r')
			used--;
		/* "ADDR T NAME": the type two bytes before the name */
		if (used < n + 3 || memcmp(l + used - n, name, n) || l[used - n - 1] != ' ' ||
		    (l[used - n - 2] != 'T' && l[used - n - 2] != 't') || l[used - n - 3] != ' ')
			continue;
		if (line_address(l, used, &sym, addr))
			return true;
	}
	return false;
}

void dsi_kallsyms__exit(struct ds_kallsyms *ks)
{
	if (ks->mapped)
		munmap(ks->text, ks->len);
	else
		free(ks->text);
	if (ks->fd_open)
		close(ks->fd);
	free(ks->v);
	free(ks->mods);
	free(ks->samples);
	dsi_hashmap__exit(&ks->names);
	dsi_strblock__free(&ks->blocks);
	memset(ks, 0, sizeof(*ks));
}
