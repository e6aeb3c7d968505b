// SPDX-License-Identifier: MIT
/*
 * Text symbol files: kallsyms ("ADDR TYPE NAME [\t[module]]") and JIT maps
 * (/tmp/perf-PID.map: "START SIZE NAME", hex).
 *
 * A JIT map is read in chunks and parsed line by line; only the names of
 * the symbols kept are copied.  kallsyms (8 MB, 2*10^5 lines, read once per
 * run and most of a short run's time) is indexed in place: one pass, 64
 * bytes at a time, finds the line ends; the usual line is parsed with SSE2
 * and no scanning; the index records each kept symbol's address and where
 * its name lies, and a name is copied when first hit.  Page faults are
 * dear in a VM, so the index and the text are prefaulted in steps.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <elf.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "util/grow.h"
#include "util/io.h"
#include "util/prefault.h"
#include "symbols/symbols_int.h"

#define CHUNK (256u << 10)
#define NAME_MAX_LEN ((1u << 20) - 1)   /* a longer name (a hostile line) is cut */
/* a file is scanned through a buffer this big.  A bigger one scans faster
 * when the same file is loaded again and again in one process, but a
 * command loads it once, in a fresh process, where a bigger buffer is
 * fresh memory to fault and out of L2 (docs/performance.md) */
#define SCAN_CHUNK (64u << 10)

/* @name (@n bytes, NUL added) copied into @blocks; NULL on ENOMEM. */
static const char *copy_name(struct ds_strblock **blocks, const char *name, size_t n)
{
	return ds_strblock__add(blocks, name, n < NAME_MAX_LEN ? n : NAME_MAX_LEN);
}

static const char *keep_name(struct ds_textsyms *ks, const char *name)
{
	return copy_name(&ks->names, name, strlen(name));
}

static signed char hex_digit[256];

static int hexval(char c)
{
	return hex_digit[(unsigned char)c];
}

static void init_types(void);

/* The lookup tables (idempotent; the first load runs before any thread could). */
static void init_tables_once(void)
{
	init_types();
	memset(hex_digit, -1, sizeof(hex_digit));
	for (int i = 0; i < 10; i++)
		hex_digit['0' + i] = (signed char)i;
	for (int i = 0; i < 6; i++)
		hex_digit['a' + i] = hex_digit['A' + i] = (signed char)(10 + i);
}

/* The tables, built once whatever thread asks first (the kernel's loads on a helper). */
void ds_kallsyms__init_tables(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, init_tables_once);
}

static void init_hex(void)
{
	ds_kallsyms__init_tables();
}

/* Parse hex at *p (an optional "0x" too); false if there are no digits. */
static bool parse_hex(char **p, uint64_t *val)
{
	char *s = *p;
	uint64_t v = 0;
	int d, n = 0;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X') && hexval(s[2]) >= 0)
		s += 2;
	while ((d = hexval(*s)) >= 0) {
		v = v << 4 | (uint64_t)d;
		s++;
		n++;
	}
	*p = s;
	*val = v;
	return n > 0;
}

static char *skip_blanks(char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	return s;
}

/* The types perf's symbol_type__filter() keeps (text, weak, data, bss, ...). */
static bool kept_type[256];

static void init_types(void)
{
	for (const char *t = "TtWwDdBbulN1"; *t; t++)
		kept_type[(unsigned char)*t] = true;
}

static bool kallsyms_type_kept(char t)
{
	return kept_type[(unsigned char)t];
}

/* One perf map line "START SIZE NAME". */
static bool perfmap_line(char *line, struct ds_rawsym *r)
{
	char *p = skip_blanks(line);
	uint64_t start, size;

	if (!parse_hex(&p, &start) || (*p != ' ' && *p != '\t'))
		return false;
	p = skip_blanks(p);
	if (!parse_hex(&p, &size) || (*p != ' ' && *p != '\t'))
		return false;
	p = skip_blanks(p);
	if (!*p)
		return false;
	*r = (struct ds_rawsym){ .start = start, .size = size, .name = p,
				 .bind = STB_GLOBAL, .type = STT_FUNC };
	return true;
}

/* Adds one parsed line to @raw (grown as needed); false on ENOMEM. */
static bool add_line(struct ds_textsyms *ks, char *line, bool (*parse)(char *line, struct ds_rawsym *r),
		     struct ds_rawsym **raw, size_t *nr, size_t *cap)
{
	struct ds_rawsym r;

	if (!parse(line, &r))
		return true;
	if (*nr == *cap) {
		size_t ncap = *cap ? *cap * 2 : 4096;
		struct ds_rawsym *n = realloc(*raw, ncap * sizeof(**raw));

		if (!n)
			return false;
		*raw = n;
		*cap = ncap;
	}
	r.name = keep_name(ks, r.name);
	if (!r.name)
		return false;
	r.order = (uint32_t)*nr;
	(*raw)[(*nr)++] = r;
	return true;
}

/* The finished symbols as the table, built in @raw's memory (a ds_sym is smaller). */
static bool to_table(struct ds_textsyms *ks, struct ds_rawsym *raw, size_t nr)
{
	struct ds_sym *syms = (struct ds_sym *)(void *)raw, *shrunk;

	_Static_assert(sizeof(struct ds_sym) <= sizeof(struct ds_rawsym), "in-place table");
	for (size_t i = 0; i < nr; i++) {
		struct ds_rawsym r = raw[i];

		syms[i] = (struct ds_sym){ .start = r.start, .end = r.start + r.size, .name = r.name };
	}
	shrunk = realloc(syms, (nr ? nr : 1) * sizeof(*syms));
	ks->tab.syms = shrunk ? shrunk : syms;
	ks->tab.nr = nr;
	return true;
}

static bool load_lines(struct ds_textsyms *ks, const char *path,
		       bool (*parse)(char *line, struct ds_rawsym *r))
{
	struct ds_rawsym *raw = NULL;
	size_t nr = 0, cap = 0, have = 0;
	char *buf = malloc(CHUNK + 1);
	int fd = ds_open_regular(path);
	bool eof = false;

	init_hex();
	memset(ks, 0, sizeof(*ks));
	if (fd < 0 || !buf)
		goto fail;
	while (!eof) {
		ssize_t n = read(fd, buf + have, CHUNK - have);
		char *p = buf, *end, *nl;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			goto fail;
		eof = n == 0;
		have += (size_t)n;
		end = buf + have;
		*end = '\0';
		for (; (nl = memchr(p, '\n', (size_t)(end - p))); p = nl + 1) {
			*nl = '\0';
			if (!add_line(ks, p, parse, &raw, &nr, &cap))
				goto fail;
		}
		/* the last line without a newline; or one longer than a chunk, cut */
		if (p < end && (eof || (p == buf && have == CHUNK))) {
			if (!add_line(ks, p, parse, &raw, &nr, &cap))
				goto fail;
			p = end;
		}
		have = (size_t)(end - p);
		memmove(buf, p, have);
	}
	close(fd);
	free(buf);
	nr = ds_rawsym__finish(raw, nr);
	if (to_table(ks, raw, nr))
		return true;
	raw = NULL;
fail:
	if (fd >= 0)
		close(fd);
	free(buf);
	free(raw);
	ds_textsyms__exit(ks);
	return false;
}

/* ---- kernel symbols, indexed in place ---------------------------------- */

/* @path opened if it is a regular file (its *@st filled), else read whole (/proc/kallsyms). */
static bool kallsyms_text(struct ds_kallsyms *ks, const char *path, struct stat *st)
{
	int fd = ds_open_regular(path);

	if (fd < 0)
		return false;
	if (!fstat(fd, st) && S_ISREG(st->st_mode) && st->st_size > 0) {
		ks->len = (size_t)st->st_size;
		ks->fd = fd;   /* scanned through a buffer, names read with pread */
		ks->fd_open = true;
		return true;
	}
	close(fd);
	ks->text = ds_read_file(path, &ks->len);
	return ks->text != NULL;
}

#ifndef __SSE2__
/* Eight validated hex digits (ASCII, most significant first) in @x to their value. */
static uint32_t swar_hex8(uint64_t x)
{
	uint64_t d = (x & 0x0f0f0f0f0f0f0f0fULL) + ((x >> 6) & 0x0101010101010101ULL) * 9;

	d = ((d & 0x0f000f000f000f00ULL) >> 8) | ((d & 0x000f000f000f000fULL) << 4);
	d = ((d & 0x00ff000000ff0000ULL) >> 16) | ((d & 0x000000ff000000ffULL) << 8);
	d = ((d & 0x0000ffff00000000ULL) >> 32) | ((d & 0x000000000000ffffULL) << 16);
	return (uint32_t)d;
}
#endif

/* The 16 hex digits at @s (16 readable bytes); false if one is not a digit. */
static inline bool hex16(const char *s, uint64_t *v)
{
#ifdef __SSE2__
	const __m128i flip = _mm_set1_epi8((char)0x80);
	__m128i c = _mm_loadu_si128((const __m128i *)(const void *)s);
	__m128i dig = _mm_xor_si128(_mm_sub_epi8(c, _mm_set1_epi8('0')), flip);
	__m128i let = _mm_xor_si128(_mm_sub_epi8(_mm_or_si128(c, _mm_set1_epi8(0x20)), _mm_set1_epi8('a')), flip);
	/* unsigned "< 10" and "< 6" as signed compares of the values flipped by 0x80 */
	__m128i ok = _mm_or_si128(_mm_cmplt_epi8(dig, _mm_set1_epi8((char)(0x80 + 10))),
				  _mm_cmplt_epi8(let, _mm_set1_epi8((char)(0x80 + 6))));
	/* digit values: low nibble, +9 for letters (bit 6 set) */
	__m128i letter = _mm_and_si128(_mm_srli_epi16(c, 6), _mm_set1_epi8(1));
	__m128i val = _mm_add_epi8(_mm_and_si128(c, _mm_set1_epi8(0x0f)),
				   _mm_add_epi8(_mm_slli_epi16(letter, 3), letter));
	/* each 16-bit lane holds two digits, first in the low byte: one byte value */
	__m128i pair = _mm_or_si128(_mm_and_si128(_mm_slli_epi16(val, 4), _mm_set1_epi16(0xf0)),
				    _mm_srli_epi16(val, 8));
	uint64_t be;

	if (_mm_movemask_epi8(ok) != 0xffff)
		return false;
	be = (uint64_t)_mm_cvtsi128_si64(_mm_packus_epi16(pair, pair));
	*v = __builtin_bswap64(be);   /* the first pair is the most significant byte */
	return true;
#else
	uint64_t a, b;

	for (int i = 0; i < 16; i++)
		if (hexval(s[i]) < 0)
			return false;
	memcpy(&a, s, 8);
	memcpy(&b, s + 8, 8);
	*v = (uint64_t)swar_hex8(a) << 32 | swar_hex8(b);
	return true;
#endif
}

/* perf's kallsyms filter on the line @l (length @n, at file offset @off): the symbol's address and name offset. */
static bool index_line(const char *l, size_t off, size_t n, struct ds_ksym *out)
{
	const char *end = l + n, *s = l, *name, *tab;
	uint64_t addr = 0;
	int d, digits = 0;

	if (n > 17 && s[16] == ' ' && hex16(s, &addr)) {
		/* the usual line: exactly 16 digits */
		s += 16;
		digits = 16;
		goto type;
	}
	if (end - s > 2 && s[0] == '0' && (s[1] | 0x20) == 'x' && hexval(s[2]) >= 0)
		s += 2;
	while (s < end && (d = hexval(*s)) >= 0) {
		addr = addr << 4 | (uint64_t)d;
		s++;
		digits++;
	}
type:
	if (!digits || s == end || *s != ' ')
		return false;
	while (s < end && (*s == ' ' || *s == '\t'))
		s++;
	if (end - s < 2 || s[1] != ' ' || !kallsyms_type_kept(s[0]))
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

static int ksym_cmp(const void *pa, const void *pb)
{
	const struct ds_ksym *a = pa, *b = pb;

	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	return a->name_off < b->name_off ? -1 : a->name_off > b->name_off;
}

/*
 * The kept symbols, in file order (sorted tells whether that is address
 * order too).  The array lives in one reservation of address space sized
 * for the worst case, populated POPULATE_STEP at a time as it fills: in a
 * VM one populate call for a step costs much less than a fault for each
 * of its pages.  When the reservation fails, a malloc'd array grows instead.
 */
#define POPULATE_STEP (256u << 10)

struct ksym_vec {
	struct ds_ksym *v;
	size_t nr, cap;
	size_t populated;          /* bytes of a reservation populated so far */
	bool reserved;             /* v is a reservation of cap entries */
	bool sorted;
};

/* A reservation for every line @len bytes of text can hold ("0 T a\n": 6 bytes). */
static void ksym_reserve(struct ksym_vec *k, size_t len)
{
	size_t cap = len / 6 + 2;
	void *m;

	if (cap > SIZE_MAX / sizeof(*k->v))
		return;
	m = mmap(NULL, cap * sizeof(*k->v), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED)
		return;
	k->v = m;
	k->cap = cap;
	k->reserved = true;
}

static bool ksym_grow(struct ksym_vec *k)
{
	size_t ncap = k->cap ? k->cap * 2 : 4096;
	struct ds_ksym *n;

	if (k->reserved)
		return false;   /* cannot happen: the reservation holds every line */
	n = realloc(k->v, ncap * sizeof(*n));
	if (!n)
		return false;
	k->v = n;
	k->cap = ncap;
	return true;
}

static inline bool ksym_push(struct ksym_vec *k, struct ds_ksym e)
{
	if (k->nr == k->cap && !ksym_grow(k))
		return false;
	if (k->reserved && (k->nr + 1) * sizeof(*k->v) > k->populated) {
		ds_prefault_write((char *)k->v + k->populated, POPULATE_STEP);
		k->populated += POPULATE_STEP;
	}
	if (k->nr && e.start < k->v[k->nr - 1].start)
		k->sorted = false;
	k->v[k->nr++] = e;
	return true;
}

/* The index into @ks, its spare capacity given back. */
static void ksym_finish(struct ds_kallsyms *ks, struct ksym_vec *k)
{
	ks->v = k->v;
	ks->nr = k->nr;
	ks->v_reserved = k->reserved;
	ks->v_bytes = k->cap * sizeof(*k->v);
	if (k->reserved) {
		size_t page = ds_page_size();
		size_t keep = (k->nr * sizeof(*k->v) + page - 1) / page * page;

		if (keep < ks->v_bytes) {
			munmap((char *)k->v + keep, ks->v_bytes - keep);
			ks->v_bytes = keep;
		}
		if (!keep) {
			ks->v = NULL;
			ks->v_reserved = false;
		}
	} else if (k->nr) {
		struct ds_ksym *v = realloc(k->v, k->nr * sizeof(*v));

		ks->v = v ? v : k->v;
	}
	if (!k->sorted && ks->nr > 1)   /* none: v may be NULL, and qsort(NULL, 0) is undefined */
		qsort(ks->v, ks->nr, sizeof(*ks->v), ksym_cmp);
}

static void ksym_free(struct ksym_vec *k)
{
	if (k->reserved)
		munmap(k->v, k->cap * sizeof(*k->v));
	else
		free(k->v);
}

/*
 * The usual line, "%016lx T name\n" with no tab (no module): parsed without
 * the general path's scanning.  False when the line is not of that shape,
 * and then index_line() decides.
 */
static inline bool usual_line(const char *l, size_t off, size_t n, bool has_tab, struct ds_ksym *out, bool *keep)
{
	uint64_t addr;

	if (has_tab || n < 20 || l[16] != ' ' || l[18] != ' ' || l[19] == ' ' || !hex16(l, &addr))
		return false;
	*keep = kallsyms_type_kept(l[17]) && l[19] != '$' && l[19] != '\0';
	*out = (struct ds_ksym){ .start = addr, .name_off = off + 19 };
	return true;
}

static inline bool add_kallsyms_line(struct ksym_vec *k, const char *l, size_t off, size_t n, bool has_tab)
{
	struct ds_ksym e;
	bool keep;

	if (!usual_line(l, off, n, has_tab, &e, &keep))
		keep = index_line(l, off, n, &e);
	return !keep || ksym_push(k, e);
}

/* Bit i set when @p[i] is a newline or a tab (64 readable bytes). */
static uint64_t line_marks(const char *p)
{
#ifdef __SSE2__
	uint64_t m = 0;

#pragma GCC unroll 4   /* -O2 kept the loop, whose overhead was a large share of this function */
	for (int i = 0; i < 4; i++) {
		__m128i c = _mm_loadu_si128((const __m128i *)(const void *)(p + 16 * i));
		unsigned x = (unsigned)_mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(c, _mm_set1_epi8('\n')),
								     _mm_cmpeq_epi8(c, _mm_set1_epi8('\t'))));

		m |= (uint64_t)x << (16 * i);
	}
	return m;
#else
	uint64_t m = 0;

	for (int i = 0; i < 64; i++)
		if (p[i] == '\n' || p[i] == '\t')
			m |= 1ULL << i;
	return m;
#endif
}

#define ALWAYS_INLINE inline __attribute__((always_inline))

/* What a scan does with each line: a constant in each caller, so the scan loop is specialised. */
enum scan_mode { SCAN_INDEX, SCAN_CHECK };

static ALWAYS_INLINE bool index_one(void *ctx, const char *l, size_t off, size_t n, bool has_tab);
static ALWAYS_INLINE bool check_one(void *ctx, const char *l, size_t off, size_t n, bool has_tab);

/* One line (@l, @n bytes, at file offset @off; @has_tab: a tab in it); false stops the scan. */
static ALWAYS_INLINE bool on_line(enum scan_mode mode, void *ctx, const char *l, size_t off, size_t n, bool has_tab)
{
	return mode == SCAN_CHECK ? check_one(ctx, l, off, n, has_tab) : index_one(ctx, l, off, n, has_tab);
}

/*
 * The whole lines in @buf (@len bytes, at file offset @base), 64 bytes at a
 * time: newlines end lines, tabs are noted (module lines only, in a real
 * file); at @eof the last line needs no newline.  *@used: the bytes taken
 * (a partial line stays).  Inlined into each caller with its own @fn, so
 * the per-line work is inline.  False when that stopped it.
 */
static ALWAYS_INLINE bool scan_buf(const char *buf, size_t len, size_t base, bool eof, size_t *used,
				   enum scan_mode mode, void *ctx)
{
	size_t start = 0, tab = SIZE_MAX;

	for (size_t b = 0; b < len; b += 64) {
		uint64_t m = 0;

		if (b + 64 <= len)
			m = line_marks(buf + b);
		else   /* the last bytes, one at a time */
			for (size_t i = b; i < len; i++)
				if (buf[i] == '\n' || buf[i] == '\t')
					m |= 1ULL << (i - b);
		for (; m; m &= m - 1) {
			size_t pos = b + (size_t)__builtin_ctzll(m);

			if (buf[pos] == '\t') {
				tab = pos;
				continue;
			}
			if (!on_line(mode, ctx, buf + start, base + start, pos - start, tab != SIZE_MAX && tab >= start))
				return false;
			start = pos + 1;
		}
	}
	if (eof && start < len) {
		if (!on_line(mode, ctx, buf + start, base + start, len - start, tab != SIZE_MAX && tab >= start))
			return false;
		start = len;
	}
	*used = start;
	return true;
}

/*
 * Every line of the kallsyms text: of the file through a SCAN_CHUNK buffer
 * (copying it is cheaper than mapping 8 MB page by page), or of the text
 * in memory.  A line longer than the buffer (no real one is) is passed
 * cut, marked as having a tab, and the rest of it skipped.
 */
static ALWAYS_INLINE bool scan_lines(struct ds_kallsyms *ks, enum scan_mode mode, void *ctx)
{
	size_t have = 0, base = 0, used;
	bool ok = true, skipping = false;
	char *buf;

	if (!ks->fd_open)
		return scan_buf(ks->text, ks->len, 0, true, &used, mode, ctx);
	buf = ds_malloc_populated(SCAN_CHUNK);
	if (!buf)
		return false;
	for (;;) {
		ssize_t got = ds_pread_full(ks->fd, buf + have, SCAN_CHUNK - have, base + have);
		size_t len = have + (got > 0 ? (size_t)got : 0);
		bool eof = got <= 0;

		if (got < 0 && !(ok = false))
			break;
		if (skipping) {   /* the rest of an over-long line */
			const char *nl = memchr(buf, '\n', len);

			used = nl ? (size_t)(nl - buf) + 1 : len;
			skipping = !nl;
		} else if (!(ok = scan_buf(buf, len, base, eof, &used, mode, ctx))) {
			break;
		} else if (!used && len == SCAN_CHUNK) {
			if (!(ok = on_line(mode, ctx, buf, base, len, true)))
				break;
			used = len;
			skipping = true;
		}
		if (eof)
			break;
		memmove(buf, buf + used, len - used);
		have = len - used;
		base += used;
	}
	free(buf);
	return ok;
}

static ALWAYS_INLINE bool index_one(void *ctx, const char *l, size_t off, size_t n, bool has_tab)
{
	return add_kallsyms_line(ctx, l, off, n, has_tab);
}

/* The full index of the text into @k; false on ENOMEM. */
static bool index_text(struct ds_kallsyms *ks, struct ksym_vec *k)
{
	return scan_lines(ks, SCAN_INDEX, k);
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

/* The 16 characters at @s are lower-case hex digits (16 readable bytes). */
static inline bool hex16_lower(const char *s)
{
#ifdef __SSE2__
	const __m128i flip = _mm_set1_epi8((char)0x80);
	__m128i c = _mm_loadu_si128((const __m128i *)(const void *)s);
	__m128i dig = _mm_xor_si128(_mm_sub_epi8(c, _mm_set1_epi8('0')), flip);
	__m128i let = _mm_xor_si128(_mm_sub_epi8(c, _mm_set1_epi8('a')), flip);
	__m128i ok = _mm_or_si128(_mm_cmplt_epi8(dig, _mm_set1_epi8((char)(0x80 + 10))),
				  _mm_cmplt_epi8(let, _mm_set1_epi8((char)(0x80 + 6))));

	return _mm_movemask_epi8(ok) == 0xffff;
#else
	for (int i = 0; i < 16; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
#endif
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

static ALWAYS_INLINE bool check_one(void *ctx, const char *l, size_t off, size_t n, bool has_tab)
{
	struct sorted_check *c = ctx;
	uint64_t hi, lo;

	if (has_tab)
		return module_line(l, n);   /* any other tab: not the usual shape */
	if (n < 20 || l[16] != ' ' || l[18] != ' ' || l[19] == ' ' || !hex16_lower(l))
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
		struct ds_ksample *nv = ds_grow(c->v, &c->cap, c->nr + 1, sizeof(*nv), 1024);

		if (!nv)
			return false;
		c->v = nv;
		hex16(l, &c->v[c->nr].key);
		c->v[c->nr++].off = off;
	}
	return true;
}

/* The sorted text searched in place with @samples (taken) from now on (a file read in chunks, see struct kview). */
static void search_in_place(struct ds_kallsyms *ks, struct ds_ksample *samples, size_t nr, size_t tail)
{
	ks->samples = samples;
	ks->nr_samples = nr;
	ks->tail = tail;
	ks->in_place = true;
}

/* True when the text can be searched in place (then ks->samples is set). */
static bool check_sorted(struct ds_kallsyms *ks)
{
	struct sorted_check c = { 0 };

	if (!scan_lines(ks, SCAN_CHECK, &c) || !c.nr) {
		free(c.v);
		return false;
	}
	search_in_place(ks, c.v, c.nr, c.tail);
	return true;
}

/* ---- the check's result, kept across runs ------------------------------ */

/*
 * A sorted file's samples and tail, kept in the cache directory under the
 * file's device and inode, with its size, mtime and ctime: ctime changes
 * with every write to the file and cannot be set back, so a changed file
 * never matches.  A later run on the same file then reads the kept check
 * (every SAMPLE_EVERY-th line's key and offset) instead of reading and
 * checking the whole text.  The cache file is an input like any other:
 * every field is checked and any mismatch only costs the full check; a
 * lookup also finds its sample's line holding the sample's key, or leaves
 * the search in place.
 */
#define KCACHE_MAGIC "dstackK1"

struct kcache_head {
	char magic[8];
	uint64_t dev, ino, size, mtime_ns, ctime_ns;
	uint64_t tail, nr_samples;
};

static void kcache_ident(const struct stat *st, struct kcache_head *h)
{
	memset(h, 0, sizeof(*h));
	memcpy(h->magic, KCACHE_MAGIC, sizeof(h->magic));
	h->dev = (uint64_t)st->st_dev;
	h->ino = (uint64_t)st->st_ino;
	h->size = (uint64_t)st->st_size;
	h->mtime_ns = (uint64_t)st->st_mtim.tv_sec * 1000000000u + (uint64_t)st->st_mtim.tv_nsec;
	h->ctime_ns = (uint64_t)st->st_ctim.tv_sec * 1000000000u + (uint64_t)st->st_ctim.tv_nsec;
}

/* The cache file's path for the file @st describes, in ks->cache_path; false if there is none. */
static bool kcache_path(struct ds_kallsyms *ks, const char *dir, const struct stat *st)
{
	if (!dir || !*dir || !S_ISREG(st->st_mode))
		return false;
	ks->cache_path = NULL;
	if (asprintf(&ks->cache_path, "%s/kallsyms-%llx-%llx.idx", dir, (unsigned long long)st->st_dev,
		     (unsigned long long)st->st_ino) < 0) {
		ks->cache_path = NULL;
		return false;
	}
	return true;
}

/* The samples of a cache file that matches @want (nr_samples and tail
 * filled in from it); NULL if there is none or it does not hold. */
static struct ds_ksample *kcache_read(const char *path, struct kcache_head *want)
{
	int fd = ds_open_regular(path);
	struct kcache_head h;
	struct stat st;
	struct ds_ksample *v = NULL;
	uint64_t n;

	/* the file's samples are read straight into the array (one populated
	 * block, not a fault per page of two arrays in a fresh process) */
	_Static_assert(sizeof(struct ds_ksample) == 16 && offsetof(struct ds_ksample, key) == 0 &&
		       offsetof(struct ds_ksample, off) == 8, "cache samples are the file's: u64 key, u64 offset");

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) || ds_pread_full(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h) ||
	    memcmp(h.magic, want->magic, sizeof(h.magic)) || h.dev != want->dev || h.ino != want->ino ||
	    h.size != want->size || h.mtime_ns != want->mtime_ns || h.ctime_ns != want->ctime_ns)
		goto out;
	n = h.nr_samples;
	/* a sample is a line of at least 20 bytes, all before the tail */
	if (!n || h.tail > h.size || n > h.tail / 20 + 1 ||
	    (uint64_t)st.st_size != sizeof(h) + n * sizeof(*v))
		goto out;
	v = ds_malloc_populated(n * sizeof(*v));
	if (!v || ds_pread_full(fd, v, n * sizeof(*v), sizeof(h)) != (ssize_t)(n * sizeof(*v)))
		goto bad;
	for (uint64_t i = 0; i < n; i++)
		if (v[i].off >= h.tail || (i && (v[i].off <= v[i - 1].off || v[i].key < v[i - 1].key)))
			goto bad;
	want->tail = h.tail;
	want->nr_samples = n;
	goto out;
bad:
	free(v);
	v = NULL;
out:
	close(fd);
	return v;
}

/* Searched in place with the samples a cache file holds for @st; false if none. */
static bool kcache_load(struct ds_kallsyms *ks, const struct stat *st)
{
	struct kcache_head h;
	struct ds_ksample *v;

	kcache_ident(st, &h);
	v = kcache_read(ks->cache_path, &h);
	if (!v)
		return false;
	ks->from_cache = true;
	search_in_place(ks, v, (size_t)h.nr_samples, (size_t)h.tail);
	return true;
}

/* mkdir -p @dir (one component at a time); false if it is not a directory after. */
static bool make_dirs(const char *dir)
{
	char *d = strdup(dir);
	struct stat st;

	if (!d)
		return false;
	for (char *p = d + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		mkdir(d, 0700);
		*p = '/';
	}
	mkdir(d, 0700);
	free(d);
	return !stat(dir, &st) && S_ISDIR(st.st_mode);
}

/* A check to keep, copied aside (ds_kallsyms__load_unkept): written by ds_kallsyms__keep_check. */
struct kcache_job {
	char *path, *dir;
	struct kcache_head head;
	struct ds_ksample *samples;
};

static void kcache_job_free(struct kcache_job *j)
{
	if (!j)
		return;
	free(j->path);
	free(j->dir);
	free(j->samples);
	free(j);
}

/* The samples just checked, copied aside to keep for the next run; NULL on ENOMEM (then not kept). */
static struct kcache_job *kcache_job(const struct ds_kallsyms *ks, const char *dir, const struct stat *st)
{
	struct kcache_job *j = calloc(1, sizeof(*j));

	if (!j)
		return NULL;
	kcache_ident(st, &j->head);
	j->head.tail = ks->tail;
	j->head.nr_samples = ks->nr_samples;
	j->path = strdup(ks->cache_path);
	j->dir = strdup(dir);
	j->samples = malloc(ks->nr_samples * sizeof(*ks->samples));
	if (!j->path || !j->dir || !j->samples) {
		kcache_job_free(j);
		return NULL;
	}
	memcpy(j->samples, ks->samples, ks->nr_samples * sizeof(*ks->samples));
	return j;
}

/* Keep the samples of @j for the next run (best effort: written aside, then renamed). */
static void kcache_write(const struct kcache_job *j)
{
	size_t bytes = j->head.nr_samples * sizeof(*j->samples);
	char *tmp = NULL;
	int fd;
	bool ok;

	if (!make_dirs(j->dir) || asprintf(&tmp, "%s.%d.tmp", j->path, (int)getpid()) < 0)
		return;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		free(tmp);
		return;
	}
	ok = write(fd, &j->head, sizeof(j->head)) == (ssize_t)sizeof(j->head) &&
	     write(fd, j->samples, bytes) == (ssize_t)bytes;   /* the file's layout (see kcache_read) */
	ok = !close(fd) && ok;
	if (!ok || rename(tmp, j->path))
		unlink(tmp);
	free(tmp);
}

void ds_kallsyms__keep_check(struct ds_kallsyms *ks)
{
	struct kcache_job *j = ks->keep;

	ks->keep = NULL;
	if (j)
		kcache_write(j);
	kcache_job_free(j);
}

/*
 * A lookup reads the text through a view: the bytes [off, off + n) at buf.
 * A file's lookups read it in aligned 16 KiB chunks with pread, each kept
 * for the lookups after (a report's walks fall in few chunks): touching
 * pages of a mapping costs a fault each, dear in a VM, and a pread for
 * every walk costs more than a kept chunk (docs/performance.md).  A walk
 * leaving its chunk looks again with the chunks on both sides, then
 * through a mapping of the whole text.
 */
struct kview {
	const char *buf;
	size_t off, n;
	size_t len;                /* the whole text's */
};

#define KCHUNK (16u << 10)

/* The line at @p (in the view): its length in *@n; false if it runs past the view. */
static bool vline(const struct kview *v, size_t p, size_t *n)
{
	const char *l = v->buf + (p - v->off), *nl;

	if (p >= v->off + v->n)
		return false;
	nl = memchr(l, '\n', v->off + v->n - p);
	if (nl)
		*n = (size_t)(nl - l);
	else if (v->off + v->n == v->len)
		*n = v->len - p;   /* the text's last line */
	else
		return false;
	return true;
}

/* The start of the line before the one at @p (> 0) in *@q; false if it is not in the view. */
static bool vprev(const struct kview *v, size_t p, size_t *q)
{
	const char *nl;

	if (p - 1 <= v->off) {
		*q = 0;
		return v->off == 0;
	}
	nl = memrchr(v->buf, '\n', p - 1 - v->off);
	if (!nl) {
		*q = 0;
		return v->off == 0;
	}
	*q = v->off + (size_t)(nl - v->buf) + 1;
	return true;
}

static const char *vat(const struct kview *v, size_t p)
{
	return v->buf + (p - v->off);
}

/*
 * The symbol for @addr in the sorted text, by the index's rules (the last
 * kept line with address <= addr; it ends where the next kept line starts),
 * looked for from sample @lo - 1 (the last sample <= addr; @lo > 0) through
 * @v: 1 and *@out, *@out_end; 0 if none; -1 if the walk grew too long (or
 * the text is not as checked); -2 if it left the view.
 */
static int find_in_place(const struct ds_kallsyms *ks, const struct kview *v, size_t lo, uint64_t addr,
			 struct ds_ksym *out, uint64_t *out_end)
{
	size_t p, q = ks->tail, n, walked = 0, last = SIZE_MAX, last_n = 0;
	bool found = false;
	struct ds_ksym e;
	uint64_t key = 0;

	/* the sample's line holds the sample's key (a cached sample was not
	 * checked by this run; a file changed under us shows here too) */
	p = ks->samples[lo - 1].off;
	if ((p && (p - 1 < v->off || p - 1 >= v->off + v->n)) || !vline(v, p, &n))
		return -2;
	if ((p && *vat(v, p - 1) != '\n') || n < 20 || !hex16(vat(v, p), &key) || key != ks->samples[lo - 1].key)
		return -1;
	/* forward over the lines <= addr, only reading their addresses */
	for (; p < ks->tail; p += n + 1) {
		if (!vline(v, p, &n))
			return -2;
		if (++walked > WALK_MAX)
			return -1;
		if (module_line(vat(v, p), n))
			continue;
		if (n < 16 || !hex16(vat(v, p), &key))
			return -1;   /* not as checked: the file changed under us */
		if (key > addr) {
			q = p;
			break;
		}
		last = p;
		last_n = n;
	}
	/* the last kept line <= addr: nearly always the last of them, else back from there */
	if (last != SIZE_MAX)
		found = index_line(vat(v, last), last, last_n, out);
	for (p = last != SIZE_MAX ? last : ks->samples[lo - 1].off; !found && p > 0;) {
		if (!vprev(v, p, &p) || !vline(v, p, &n))
			return -2;
		if (++walked > WALK_MAX)
			return -1;
		found = index_line(vat(v, p), p, n, out);
	}
	if (!found)
		return 0;
	/* the end: the next kept line, else a page past the last one's page */
	uint64_t end = ((out->start + 4095) & ~4095ULL) + 4096;

	for (p = q; p < ks->tail; p += n + 1) {
		if (!vline(v, p, &n))
			return -2;
		if (++walked > WALK_MAX)
			return -1;
		if (index_line(vat(v, p), p, n, &e)) {
			end = e.start;
			break;
		}
	}
	*out_end = end;
	return addr < end;
}

/* The whole text in memory (a file mapped on first need); false if it cannot be. */
static bool whole_text(struct ds_kallsyms *ks)
{
	void *m;

	if (ks->text)
		return true;
	m = mmap(NULL, ks->len, PROT_READ, MAP_PRIVATE, ks->fd, 0);
	if (m == MAP_FAILED)
		return false;
	ks->text = m;
	ks->mapped = true;
	madvise(ks->text, ks->len, MADV_RANDOM);   /* a line or two here and there */
	return true;
}

/* Chunk @i of the file (KCHUNK bytes, fewer at its end), read once; NULL if it cannot be. */
static const char *chunk(struct ds_kallsyms *ks, uint64_t i, size_t *n)
{
	uint64_t off = i * KCHUNK, *slot = ds_hashmap__find(&ks->chunks, i);
	size_t want = ks->len - off < KCHUNK ? ks->len - off : KCHUNK;
	char *c;

	*n = want;
	if (slot)
		return (const char *)(uintptr_t)*slot;
	c = malloc(KCHUNK);
	if (!c)
		return NULL;
	if (ds_pread_full(ks->fd, c, want, off) != (ssize_t)want || ds_hashmap__set(&ks->chunks, i, (uintptr_t)c) < 0) {
		free(c);
		return NULL;
	}
	return c;
}

/* A view of the chunks @first..@last, copied together in @buf when more than one; false if unreadable. */
static bool chunk_view(struct ds_kallsyms *ks, uint64_t first, uint64_t last, char *buf, struct kview *v)
{
	size_t n;

	*v = (struct kview){ .off = first * KCHUNK, .len = ks->len };
	for (uint64_t i = first; i <= last; i++) {
		const char *c = chunk(ks, i, &n);

		if (!c)
			return false;
		if (first == last)
			v->buf = c;
		else
			memcpy(buf + v->n, c, n);
		v->n += n;
	}
	if (first != last)
		v->buf = buf;
	return true;
}

/* find_in_place() through the chunk of sample @lo - 1, then its neighbours too, else the whole text. */
static int find_windowed(struct ds_kallsyms *ks, size_t lo, uint64_t addr, struct ds_ksym *out, uint64_t *end)
{
	struct kview v;
	int r = -2;

	if (!ks->text) {
		uint64_t i = ks->samples[lo - 1].off / KCHUNK, last = (ks->len - 1) / KCHUNK;
		char *three = NULL;

		if (chunk_view(ks, i, i, NULL, &v))
			r = find_in_place(ks, &v, lo, addr, out, end);
		if (r == -2 && (three = malloc(3 * KCHUNK)) &&
		    chunk_view(ks, i ? i - 1 : 0, i < last ? i + 1 : last, three, &v))
			r = find_in_place(ks, &v, lo, addr, out, end);
		free(three);
	}
	if (r != -2)
		return r;
	if (!whole_text(ks))
		return -1;
	v = (struct kview){ .buf = ks->text, .off = 0, .n = ks->len, .len = ks->len };
	r = find_in_place(ks, &v, lo, addr, out, end);
	return r == -2 ? -1 : r;
}

/* A symbol found before in sample block @b that holds @addr, or NULL. */
static const struct ds_khit *hit_find(const struct ds_kallsyms *ks, size_t b, uint64_t addr)
{
	for (uint32_t i = ks->hit_head ? ks->hit_head[b] : 0; i; i = ks->hits[i - 1].next) {
		const struct ds_khit *h = &ks->hits[i - 1];

		if (h->start <= addr && addr < h->end)
			return h;
	}
	return NULL;
}

/* Remember a symbol found for an address in sample block @b (best effort: a
 * failed allocation only costs the next lookup its walk). */
static void hit_add(struct ds_kallsyms *ks, size_t b, uint64_t start, uint64_t end, const char *name)
{
	struct ds_khit *n;

	if (!ks->hit_head && !(ks->hit_head = calloc(ks->nr_samples, sizeof(*ks->hit_head))))
		return;
	if (ks->nr_hits >= UINT32_MAX - 1 ||
	    !(n = ds_grow(ks->hits, &ks->cap_hits, ks->nr_hits + 1, sizeof(*n), 256)))
		return;
	ks->hits = n;
	n[ks->nr_hits] = (struct ds_khit){ .start = start, .end = end, .name = name, .next = ks->hit_head[b] };
	ks->hit_head[b] = (uint32_t)++ks->nr_hits;
}

/* Leave the in-place search for the full index (text still mapped); false on ENOMEM. */
static bool to_full_index(struct ds_kallsyms *ks)
{
	struct ksym_vec k = { .sorted = true };

	ksym_reserve(&k, ks->len);
	if (!index_text(ks, &k)) {
		ksym_free(&k);
		return false;
	}
	ksym_finish(ks, &k);
	free(ks->samples);
	ks->samples = NULL;
	ks->nr_samples = 0;
	free(ks->hit_head);
	ks->hit_head = NULL;
	ks->in_place = false;
	if (ks->mapped) {   /* names are read with pread from now on */
		munmap(ks->text, ks->len);
		ks->text = NULL;
		ks->mapped = false;
	}
	return true;
}

bool ds_kallsyms__load(struct ds_kallsyms *ks, const char *path, const char *cache_dir)
{
	bool ok = ds_kallsyms__load_unkept(ks, path, cache_dir);

	ds_kallsyms__keep_check(ks);
	return ok;
}

bool ds_kallsyms__load_unkept(struct ds_kallsyms *ks, const char *path, const char *cache_dir)
{
	struct ksym_vec k = { .sorted = true };
	struct stat st;
	bool cached;

	init_hex();
	memset(ks, 0, sizeof(*ks));
	ds_hashmap__init(&ks->names);
	ds_hashmap__init(&ks->chunks);
	if (!kallsyms_text(ks, path, &st))
		return false;
	cached = ks->fd_open && kcache_path(ks, cache_dir, &st);
	if (cached && kcache_load(ks, &st))
		return true;
	if (check_sorted(ks)) {
		if (cached)
			ks->keep = kcache_job(ks, cache_dir, &st);
		return true;
	}
	ksym_reserve(&k, ks->len);
	if (!index_text(ks, &k)) {
		ksym_free(&k);
		ds_kallsyms__exit(ks);
		return false;
	}
	ksym_finish(ks, &k);
	return true;
}

/*
 * The name at @off in a chunk a lookup has read already, if the chunk holds
 * it to its end or to @max bytes (the walk that found the symbol read its
 * line there: no second read of it); NULL if not.
 */
static const char *name_in_chunk(const struct ds_kallsyms *ks, uint64_t off, size_t max)
{
	const uint64_t *slot = ds_hashmap__find(&ks->chunks, off / KCHUNK);
	size_t in = (size_t)(off % KCHUNK), held;
	const char *n;

	if (!slot)
		return NULL;
	held = (size_t)(ks->len - (off - in) < KCHUNK ? ks->len - (off - in) : KCHUNK) - in;
	n = (const char *)(uintptr_t)*slot + in;
	if (held >= max)
		return n;
	for (size_t i = 0; i < held; i++)
		if (n[i] == '\n' || n[i] == '\t')
			return n;
	return NULL;
}

/* The name at @off (up to a newline or a tab), from the text or the file; NULL on error. */
static const char *read_name(struct ds_kallsyms *ks, uint64_t off)
{
	char buf[1024];
	const char *n;
	size_t avail;

	if (off >= ks->len)
		return NULL;
	avail = ks->len - (size_t)off;
	if (ks->text) {
		n = ks->text + off;
	} else if ((n = name_in_chunk(ks, off, avail < sizeof(buf) ? avail : sizeof(buf)))) {
		avail = avail < sizeof(buf) ? avail : sizeof(buf);   /* as the pread below would read */
	} else {
		ssize_t got = pread(ks->fd, buf, avail < sizeof(buf) ? avail : sizeof(buf), (off_t)off);

		if (got <= 0)
			return NULL;
		n = buf;
		avail = (size_t)got;   /* a longer name is cut (a real one is under 512 bytes) */
	}
	const char *stop = n;

	while (stop < n + avail && *stop != '\n' && *stop != '\t')
		stop++;
	return copy_name(&ks->blocks, n, (size_t)(stop - n));
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

bool ds_kallsyms__find(struct ds_kallsyms *ks, uint64_t addr, const char **name, uint64_t *start)
{
	struct ds_ksym k;
	uint64_t end = 0;
	size_t lo = 0;
	int r = -1;

	if (ks->in_place) {
		const struct ds_khit *h;

		lo = DS_UPPER_BOUND(ks->samples, ks->nr_samples, key, addr);   /* past the last sample <= addr */
		if (lo == 0)
			return false;   /* before the first line */
		if ((h = hit_find(ks, lo - 1, addr))) {
			*name = h->name;
			*start = h->start;
			return true;
		}
		r = find_windowed(ks, lo, addr, &k, &end);
		if (r < 0 && !to_full_index(ks))
			return false;
	}
	if (r < 0 && !find_indexed(ks, addr, &k))
		return false;
	if (r == 0)
		return false;
	/* names by their offset in the text: the same key for both searches */
	uint64_t *slot = ds_hashmap__find(&ks->names, k.name_off);

	if (slot) {
		*name = (const char *)(uintptr_t)*slot;
	} else {
		*name = read_name(ks, k.name_off);
		if (!*name || ds_hashmap__set(&ks->names, k.name_off, (uint64_t)(uintptr_t)*name) < 0)
			return false;
	}
	*start = k.start;
	if (r > 0)
		hit_add(ks, lo - 1, k.start, end, *name);
	return true;
}

void ds_kallsyms__exit(struct ds_kallsyms *ks)
{
	if (ks->mapped)
		munmap(ks->text, ks->len);
	else
		free(ks->text);
	if (ks->fd_open)
		close(ks->fd);
	if (ks->v_reserved)
		munmap(ks->v, ks->v_bytes);
	else
		free(ks->v);
	free(ks->samples);
	free(ks->cache_path);
	kcache_job_free(ks->keep);
	free(ks->hits);
	free(ks->hit_head);
	ds_hashmap__exit(&ks->names);
	{
		size_t it = 0;
		uint64_t k, v;

		while (ds_hashmap__next(&ks->chunks, &it, &k, &v))
			free((void *)(uintptr_t)v);
		ds_hashmap__exit(&ks->chunks);
	}
	ds_strblock__free(&ks->blocks);
	memset(ks, 0, sizeof(*ks));
}

bool ds_perfmap__load(struct ds_textsyms *ks, const char *path)
{
	return load_lines(ks, path, perfmap_line);
}

void ds_textsyms__exit(struct ds_textsyms *ks)
{
	ds_strblock__free(&ks->names);
	free(ks->tab.syms);
	memset(ks, 0, sizeof(*ks));
}
