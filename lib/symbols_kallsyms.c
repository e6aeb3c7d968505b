// SPDX-License-Identifier: MIT
/*
 * Text symbol files: kallsyms ("ADDR TYPE NAME [\t[module]]") and JIT maps
 * (/tmp/perf-PID.map: "START SIZE NAME", hex).  Each file is read into one
 * buffer and parsed in place (names are NUL-terminated where they lie), so
 * an 8 MB kallsyms costs two allocations plus the symbol array.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <elf.h>

#include "symbols_int.h"

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (char)(c | 0x20);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
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

static size_t count_lines(const char *buf)
{
	size_t n = 1;

	for (const char *p = buf; (p = strchr(p, '\n')); p++)
		n++;
	return n;
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

/* Cut the line at its end; returns the next line. */
static char *end_line(char *s)
{
	char *nl = strchr(s, '\n');

	if (!nl)
		return s + strlen(s);
	*nl = '\0';
	return nl + 1;
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
	tab = strchr(name, '\t');
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

static bool to_table(struct ds_textsyms *ks, struct ds_rawsym *raw, size_t nr)
{
	ks->tab.syms = calloc(nr ? nr : 1, sizeof(*ks->tab.syms));
	if (!ks->tab.syms)
		return false;
	for (size_t i = 0; i < nr; i++)
		ks->tab.syms[i] = (struct ds_sym){
			.start = raw[i].start, .end = raw[i].start + raw[i].size, .name = raw[i].name,
		};
	ks->tab.nr = nr;
	return true;
}

static bool load_lines(struct ds_textsyms *ks, const char *path, bool kallsyms,
		       bool (*parse)(char *line, struct ds_rawsym *r))
{
	struct ds_rawsym *raw;
	size_t len, nr = 0;
	char *p, *next;
	bool ok;

	memset(ks, 0, sizeof(*ks));
	ks->buf = ds_read_file(path, &len);
	if (!ks->buf)
		return false;
	raw = malloc(count_lines(ks->buf) * sizeof(*raw));
	if (!raw)
		goto fail;
	for (p = ks->buf; *p; p = next) {
		next = end_line(p);
		if (parse(p, &raw[nr])) {
			raw[nr].order = (uint32_t)nr;
			nr++;
		}
	}
	nr = ds_rawsym__finish(raw, nr, kallsyms);
	ok = to_table(ks, raw, nr);
	free(raw);
	if (ok)
		return true;
fail:
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
	free(ks->tab.syms);
	free(ks->buf);
	memset(ks, 0, sizeof(*ks));
}
