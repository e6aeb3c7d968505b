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
#include <elf.h>

#include "symbols_int.h"

#define CHUNK (256u << 10)
#define NAME_BLOCK (1u << 20)

struct ds_name_block {
	struct ds_name_block *next;
	size_t used;
	char data[NAME_BLOCK];
};

/* @name copied into the blocks of @ks; NULL on ENOMEM. */
static const char *keep_name(struct ds_textsyms *ks, const char *name)
{
	size_t n = strlen(name) + 1;
	struct ds_name_block *b = ks->names;
	char *dst;

	if (n > NAME_BLOCK)
		n = NAME_BLOCK;   /* a hostile line: cut (the last byte becomes the NUL) */
	if (!b || b->used + n > NAME_BLOCK) {
		b = malloc(sizeof(*b));
		if (!b)
			return NULL;
		b->next = ks->names;
		b->used = 0;
		ks->names = b;
	}
	dst = b->data + b->used;
	memcpy(dst, name, n - 1);
	dst[n - 1] = '\0';
	b->used += n;
	return dst;
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
	char u = (char)toupper((unsigned char)t);

	return u == 'T' || u == 'W' || u == 'D' || u == 'B' ||
	       t == 'u' || t == 'l' || t == 'N' || t == '1';
}

/* perf's kallsyms2elf_binding(): only 'W' is weak, upper case is global. */
static uint8_t kallsyms_bind(char t)
{
	if (t == 'W')
		return STB_WEAK;
	return isupper((unsigned char)t) ? STB_GLOBAL : STB_LOCAL;
}

/* One kallsyms line into @r; false to skip it. */
static bool kallsyms_line(char *line, struct ds_rawsym *r)
{
	char *p = line, *name, *tab;
	uint64_t addr;
	char type;

	if (!parse_hex(&p, &addr) || *p != ' ')
		return false;
	p = skip_blanks(p);
	type = *p;
	if (!type || p[1] != ' ' || !kallsyms_type_kept(type))
		return false;
	name = skip_blanks(p + 1);
	tab = strchr(name, '\t');   /* the line is NUL-terminated: short scan */
	if (tab) {
		/* "\t[module]": module symbols belong to module maps, not loaded */
		if (strchr(tab, '['))
			return false;
		*tab = '\0';
	}
	if (!*name || name[0] == '$')   /* perf drops ARM module-local "$x" names */
		return false;
	*r = (struct ds_rawsym){
		.start = addr, .name = name, .bind = kallsyms_bind(type),
		.type = (toupper((unsigned char)type) == 'T' || toupper((unsigned char)type) == 'W')
			? STT_FUNC : STT_OBJECT,
	};
	return true;
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

bool ds_kallsyms__load(struct ds_textsyms *ks, const char *path)
{
	return load_lines(ks, path, true, kallsyms_line);
}

bool ds_perfmap__load(struct ds_textsyms *ks, const char *path)
{
	return load_lines(ks, path, false, perfmap_line);
}

void ds_textsyms__exit(struct ds_textsyms *ks)
{
	while (ks->names) {
		struct ds_name_block *next = ks->names->next;

		free(ks->names);
		ks->names = next;
	}
	free(ks->tab.syms);
	memset(ks, 0, sizeof(*ks));
}
