// SPDX-License-Identifier: MIT
/*
 * Text symbol files: kallsyms ("ADDR TYPE NAME [\t[module]]") and JIT maps
 * (/tmp/perf-PID.map: "START SIZE NAME", hex).  A file is read in chunks
 * and parsed line by line; only the names of the symbols kept are copied,
 * into blocks, so an 8 MB kallsyms costs about its text names (3 MB) and
 * the symbol array, never the whole file at once.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <elf.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "symbols_int.h"

#define CHUNK (256u << 10)
#define NAME_BLOCK (1u << 20)

struct ds_name_block {
	struct ds_name_block *next;
	size_t used;
	char data[NAME_BLOCK];
};

/* @name (@n bytes, NUL added) copied into @blocks; NULL on ENOMEM. */
static const char *copy_name(struct ds_name_block **blocks, const char *name, size_t n)
{
	struct ds_name_block *b = *blocks;
	char *dst;

	n++;

	if (n > NAME_BLOCK)
		n = NAME_BLOCK;   /* a hostile line: cut (the last byte becomes the NUL) */
	if (!b || b->used + n > NAME_BLOCK) {
		b = malloc(sizeof(*b));
		if (!b)
			return NULL;
		b->next = *blocks;
		b->used = 0;
		*blocks = b;
	}
	dst = b->data + b->used;
	memcpy(dst, name, n - 1);
	dst[n - 1] = '\0';
	b->used += n;
	return dst;
}

static const char *keep_name(struct ds_textsyms *ks, const char *name)
{
	return copy_name(&ks->names, name, strlen(name));
}

static void free_blocks(struct ds_name_block **blocks)
{
	while (*blocks) {
		struct ds_name_block *next = (*blocks)->next;

		free(*blocks);
		*blocks = next;
	}
}

static signed char hex_digit[256];

static int hexval(char c)
{
	return hex_digit[(unsigned char)c];
}

static void init_hex(void)
{
	if (hex_digit[0])
		return;
	memset(hex_digit, -1, sizeof(hex_digit));
	for (int i = 0; i < 10; i++)
		hex_digit['0' + i] = (signed char)i;
	for (int i = 0; i < 6; i++)
		hex_digit['a' + i] = hex_digit['A' + i] = (signed char)(10 + i);
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
static bool kallsyms_type_kept(char t)
{
	switch (t) {
	case 'T': case 't': case 'W': case 'w': case 'D': case 'd': case 'B': case 'b':
	case 'u': case 'l': case 'N': case '1':
		return true;
	default:
		return false;
	}
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

static bool load_lines(struct ds_textsyms *ks, const char *path, bool kallsyms,
		       bool (*parse)(char *line, struct ds_rawsym *r))
{
	struct ds_rawsym *raw = NULL;
	size_t nr = 0, cap = 0, have = 0;
	char *buf = malloc(CHUNK + 1);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
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
	nr = ds_rawsym__finish(raw, nr, kallsyms);
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

/* The text of @path: mapped if it is a regular file, else read (/proc/kallsyms). */
static bool kallsyms_text(struct ds_kallsyms *ks, const char *path)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return false;
	if (!fstat(fd, &st) && S_ISREG(st.st_mode) && st.st_size > 0) {
		void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);

		close(fd);
		if (m == MAP_FAILED)
			return false;
		ks->text = m;
		ks->len = (size_t)st.st_size;
		ks->mapped = true;
		return true;
	}
	close(fd);
	ks->text = ds_read_file(path, &ks->len);
	return ks->text != NULL;
}

/* Eight validated hex digits (ASCII, most significant first) in @x to their value. */
static uint32_t swar_hex8(uint64_t x)
{
	uint64_t d = (x & 0x0f0f0f0f0f0f0f0fULL) + ((x >> 6) & 0x0101010101010101ULL) * 9;

	d = ((d & 0x0f000f000f000f00ULL) >> 8) | ((d & 0x000f000f000f000fULL) << 4);
	d = ((d & 0x00ff000000ff0000ULL) >> 16) | ((d & 0x000000ff000000ffULL) << 8);
	d = ((d & 0x0000ffff00000000ULL) >> 32) | ((d & 0x000000000000ffffULL) << 16);
	return (uint32_t)d;
}

/* The 16 hex digits at @s (16 readable bytes); false if one is not a digit. */
static bool hex16(const char *s, uint64_t *v)
{
	uint64_t a, b;
#ifdef __SSE2__
	const __m128i flip = _mm_set1_epi8((char)0x80);
	__m128i c = _mm_loadu_si128((const __m128i *)(const void *)s);
	__m128i dig = _mm_xor_si128(_mm_sub_epi8(c, _mm_set1_epi8('0')), flip);
	__m128i let = _mm_xor_si128(_mm_sub_epi8(_mm_or_si128(c, _mm_set1_epi8(0x20)), _mm_set1_epi8('a')), flip);
	/* unsigned "< 10" and "< 6" as signed compares of the values flipped by 0x80 */
	__m128i ok = _mm_or_si128(_mm_cmplt_epi8(dig, _mm_set1_epi8((char)(0x80 + 10))),
				  _mm_cmplt_epi8(let, _mm_set1_epi8((char)(0x80 + 6))));

	if (_mm_movemask_epi8(ok) != 0xffff)
		return false;
#else
	for (int i = 0; i < 16; i++)
		if (hexval(s[i]) < 0)
			return false;
#endif
	memcpy(&a, s, 8);
	memcpy(&b, s + 8, 8);
	*v = (uint64_t)swar_hex8(a) << 32 | swar_hex8(b);
	return true;
}

/* perf's kallsyms filter on the line at @p (length @n): the symbol's address and name offset. */
static bool index_line(const char *text, size_t p, size_t n, struct ds_ksym *out)
{
	const char *l = text + p, *end = l + n, *s = l, *name, *tab;
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
	*out = (struct ds_ksym){ .start = addr, .name_off = (uint64_t)(name - text) };
	return true;
}

static int ksym_cmp(const void *pa, const void *pb)
{
	const struct ds_ksym *a = pa, *b = pb;

	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	return a->name_off < b->name_off ? -1 : a->name_off > b->name_off;
}

/* The mapped text up to @upto is not needed again but for the names hit: out of RSS. */
static void give_back(struct ds_kallsyms *ks, size_t *done, size_t upto)
{
	size_t page;

	if (!ks->mapped || upto < *done + (1u << 20))
		return;   /* the per-line fast path */
	if (upto > ks->len)
		upto = ks->len;
	page = (size_t)sysconf(_SC_PAGESIZE);
	upto = upto / page * page;
	madvise(ks->text + *done, upto - *done, MADV_DONTNEED);
	*done = upto;
}

/* Lines in the text: the index is allocated once, at its final size or close. */
static size_t count_lines(struct ds_kallsyms *ks)
{
	size_t n = 1, done = 0;

	for (const char *p = ks->text, *end = ks->text + ks->len; (p = memchr(p, '\n', (size_t)(end - p))); p++) {
		n++;
		give_back(ks, &done, (size_t)(p - ks->text));
	}
	give_back(ks, &done, ks->len);
	return n;
}

bool ds_kallsyms__load(struct ds_kallsyms *ks, const char *path)
{
	size_t done = 0;
	bool sorted = true;

	init_hex();
	memset(ks, 0, sizeof(*ks));
	if (!kallsyms_text(ks, path))
		return false;
	ks->v = malloc(count_lines(ks) * sizeof(*ks->v));
	if (!ks->v)
		goto fail;
	for (size_t p = 0; p < ks->len;) {
		const char *nl = memchr(ks->text + p, '\n', ks->len - p);
		size_t n = nl ? (size_t)(nl - ks->text) - p : ks->len - p;
		struct ds_ksym e;

		if (index_line(ks->text, p, n, &e)) {
			if (ks->nr && e.start < ks->v[ks->nr - 1].start)
				sorted = false;
			ks->v[ks->nr++] = e;
		}
		p += n + 1;
		give_back(ks, &done, p);
	}
	if (ks->nr) {
		struct ds_ksym *v = realloc(ks->v, ks->nr * sizeof(*v));   /* drop the lines not kept */

		ks->v = v ? v : ks->v;
	}
	if (!sorted)
		qsort(ks->v, ks->nr, sizeof(*ks->v), ksym_cmp);
	ks->names = calloc(ks->nr ? ks->nr : 1, sizeof(*ks->names));
	if (!ks->names)
		goto fail;
	return true;
fail:
	ds_kallsyms__exit(ks);
	return false;
}

bool ds_kallsyms__find(struct ds_kallsyms *ks, uint64_t addr, const char **name, uint64_t *start)
{
	size_t lo = 0, hi = ks->nr;

	/* the last symbol with start <= addr: in a same-address group, the last listed */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ks->v[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return false;
	const struct ds_ksym *k = &ks->v[lo - 1];
	uint64_t end = lo < ks->nr ? ks->v[lo].start : ((k->start + 4095) & ~4095ULL) + 4096;

	if (addr >= end)
		return false;
	if (!ks->names[lo - 1]) {
		const char *n = ks->text + k->name_off, *stop = n;
		const char *text_end = ks->text + ks->len;

		while (stop < text_end && *stop != '\n' && *stop != '\t')
			stop++;
		ks->names[lo - 1] = copy_name(&ks->blocks, n, (size_t)(stop - n));
		if (!ks->names[lo - 1])
			return false;
	}
	*name = ks->names[lo - 1];
	*start = k->start;
	return true;
}

void ds_kallsyms__exit(struct ds_kallsyms *ks)
{
	if (ks->mapped)
		munmap(ks->text, ks->len);
	else
		free(ks->text);
	free(ks->v);
	free(ks->names);
	free_blocks(&ks->blocks);
	memset(ks, 0, sizeof(*ks));
}

bool ds_perfmap__load(struct ds_textsyms *ks, const char *path)
{
	return load_lines(ks, path, false, perfmap_line);
}

void ds_textsyms__exit(struct ds_textsyms *ks)
{
	free_blocks(&ks->names);
	free(ks->tab.syms);
	memset(ks, 0, sizeof(*ks));
}
