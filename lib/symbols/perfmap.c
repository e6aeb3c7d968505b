// SPDX-License-Identifier: MIT
/*
 * JIT symbol maps (/tmp/perf-PID.map: "START SIZE NAME" per line, hex),
 * read in chunks and parsed line by line; only the names of the symbols
 * kept are copied.  The symbols then go through perf's end fix-up and
 * de-duplication (dsi_rawsym__finish) into a sorted table.
 */
#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/io.h"
#include "symbols/kallsyms_scan.h"
#include "util/grow.h"
#include "symbols/symbols_int.h"

#define CHUNK (256u << 10)
#define NAME_MAX_LEN ((1u << 20) - 1)   /* a longer name (a hostile line) is cut */

/* Parse hex at *p (an optional "0x" too); false if there are no digits. */
static bool parse_hex(char **p, uint64_t *val)
{
	char *s = *p;
	uint64_t v = 0;
	int d, n = 0;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X') && ds_hexval(s[2]) >= 0)
		s += 2;
	while ((d = ds_hexval(*s)) >= 0) {
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

/* One line "START SIZE NAME" into *@r (its name still in the line); false if it is not one. */
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

/* The symbols read so far, before the fix-up. */
struct rawsyms {
	struct ds_rawsym *v;
	size_t nr, cap;
};

/* Adds the symbol of one line, its name copied into @names; false on ENOMEM. */
static bool add_line(struct ds_strblock **names, struct rawsyms *raw, char *line)
{
	struct ds_rawsym r;
	size_t n;

	if (!perfmap_line(line, &r))
		return true;
	struct ds_rawsym *v = dsi_grow(raw->v, &raw->cap, raw->nr + 1, sizeof(*v), 4096);

	if (!v)
		return false;
	raw->v = v;
	n = strlen(r.name);
	r.name = dsi_strblock__add(names, r.name, n < NAME_MAX_LEN ? n : NAME_MAX_LEN);
	if (!r.name)
		return false;
	r.order = (uint32_t)raw->nr;
	raw->v[raw->nr++] = r;
	return true;
}

/* The finished symbols as @ts's table, built in @raw's memory (a ds_sym is smaller). */
static void to_table(struct ds_textsyms *ts, struct ds_rawsym *raw, size_t nr)
{
	struct ds_sym *syms = (struct ds_sym *)(void *)raw, *shrunk;

	_Static_assert(sizeof(struct ds_sym) <= sizeof(struct ds_rawsym), "in-place table");
	for (size_t i = 0; i < nr; i++) {
		struct ds_rawsym r = raw[i];

		syms[i] = (struct ds_sym){ .start = r.start, .end = r.start + r.size, .name = r.name };
	}
	shrunk = realloc(syms, (nr ? nr : 1) * sizeof(*syms));
	ts->tab.syms = shrunk ? shrunk : syms;
	ts->tab.nr = nr;
}

/*
 * Every line of @fd through @buf (CHUNK + 1 bytes); a line longer than a
 * chunk is cut, and its rest read as the next line.  False on a read error
 * or ENOMEM.
 */
static bool read_lines(int fd, char *buf, struct ds_strblock **names, struct rawsyms *raw)
{
	size_t have = 0;
	bool eof = false;

	while (!eof) {
		ssize_t n = read(fd, buf + have, CHUNK - have);
		char *p = buf, *end, *nl;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return false;
		eof = n == 0;
		have += (size_t)n;
		end = buf + have;
		*end = '\0';
		for (; (nl = memchr(p, '\n', (size_t)(end - p))); p = nl + 1) {
			*nl = '\0';
			if (!add_line(names, raw, p))
				return false;
		}
		/* the last line without a newline; or one longer than a chunk, cut */
		if (p < end && (eof || (p == buf && have == CHUNK))) {
			if (!add_line(names, raw, p))
				return false;
			p = end;
		}
		have = (size_t)(end - p);
		memmove(buf, p, have);
	}
	return true;
}

bool dsi_perfmap__load(struct ds_textsyms *ts, const char *path)
{
	struct rawsyms raw = { 0 };
	char *buf = malloc(CHUNK + 1);
	int fd = dsi_open_regular(path);
	bool ok;

	memset(ts, 0, sizeof(*ts));
	ok = fd >= 0 && buf && read_lines(fd, buf, &ts->names, &raw);
	if (fd >= 0)
		close(fd);
	free(buf);
	if (!ok) {
		free(raw.v);
		dsi_textsyms__exit(ts);
		return false;
	}
	to_table(ts, raw.v, dsi_rawsym__finish(raw.v, raw.nr, NULL));
	return true;
}

void dsi_textsyms__exit(struct ds_textsyms *ts)
{
	dsi_strblock__free(&ts->names);
	dsi_symtab__drop_tree(&ts->tab);
	free(ts->tab.syms);
	memset(ts, 0, sizeof(*ts));
}
