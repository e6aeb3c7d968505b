// SPDX-License-Identifier: MIT
/*
 * Rust symbol names as perf 7.2 prints them: the v0 scheme ("_R...", RFC
 * 2603; every std of a recent toolchain) in the short form perf and
 * rustc-demangle's "{:#}" give (no crate hashes, no type suffixes on
 * constants), and the legacy scheme ("_ZN...17h<hash>E") with its hash and
 * "$LT$"-style escapes undone.  Written here because no bookworm library
 * the project links does it as perf does: libiberty (linked for C++)
 * prints some v0 names otherwise (`&'a mut T` where perf 7.2 prints
 * `&mut 'a T`: 16 of 20,161 names of rustc 1.95's librustc_driver).
 * Every name comes from a file: lengths, back references and nesting are
 * checked, and a name that does not parse is left as it is (NULL).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "symbols/symbols_int.h"

#define OUT_MAX 4096   /* a longer name stays mangled */
#define DEPTH_MAX 200  /* nesting, back references included */

struct v0 {
	const char *s;      /* after "_R" */
	size_t len, pos;
	char out[OUT_MAX];
	size_t n;
	unsigned quiet;     /* > 0: parse without printing (an impl's path) */
	unsigned depth;
	unsigned bound;     /* lifetimes bound by enclosing binders */
	bool bad;
};

static void put(struct v0 *d, const char *s, size_t n)
{
	if (d->quiet || d->bad)
		return;
	if (d->n + n >= OUT_MAX) {
		d->bad = true;
		return;
	}
	memcpy(d->out + d->n, s, n);
	d->n += n;
}

static void puts_(struct v0 *d, const char *s)
{
	put(d, s, strlen(s));
}

static void putu(struct v0 *d, uint64_t v)
{
	char buf[24];

	put(d, buf, (size_t)snprintf(buf, sizeof(buf), "%llu", (unsigned long long)v));
}

static int peek(const struct v0 *d)
{
	return d->pos < d->len ? (unsigned char)d->s[d->pos] : 0;
}

static bool eat(struct v0 *d, char c)
{
	if (peek(d) != c)
		return false;
	d->pos++;
	return true;
}

/* <base-62-number>: "_" is 0, digits then "_" their value plus one */
static uint64_t base62(struct v0 *d)
{
	uint64_t v = 0;

	if (eat(d, '_'))
		return 0;
	for (;;) {
		int c = peek(d), k;

		if (c == '_')
			break;
		if (c >= '0' && c <= '9')
			k = c - '0';
		else if (c >= 'a' && c <= 'z')
			k = 10 + c - 'a';
		else if (c >= 'A' && c <= 'Z')
			k = 36 + c - 'A';
		else {
			d->bad = true;
			return 0;
		}
		if (v > (UINT64_MAX - 62) / 62) {
			d->bad = true;
			return 0;
		}
		v = v * 62 + (uint64_t)k;
		d->pos++;
	}
	d->pos++;
	return v + 1;
}

/* ["s" <base-62-number>]: a disambiguator, 0 if none */
static uint64_t disambiguator(struct v0 *d)
{
	return eat(d, 's') ? base62(d) + 1 : 0;
}

/* <undisambiguated-identifier>: its bytes (punycode, "u", is not read: bad) */
static bool ident(struct v0 *d, const char **name, size_t *n)
{
	uint64_t len = 0;

	if (peek(d) == 'u' || peek(d) < '0' || peek(d) > '9') {
		d->bad = true;
		return false;
	}
	if (eat(d, '0')) {
		len = 0;
	} else {
		while (peek(d) >= '0' && peek(d) <= '9') {
			len = len * 10 + (uint64_t)(peek(d) - '0');
			if (len > d->len) {
				d->bad = true;
				return false;
			}
			d->pos++;
		}
	}
	eat(d, '_');
	if (len > d->len - d->pos) {
		d->bad = true;
		return false;
	}
	*name = d->s + d->pos;
	*n = (size_t)len;
	d->pos += (size_t)len;
	return true;
}

static void path(struct v0 *d, bool in_value);
static void type(struct v0 *d);

static bool enter(struct v0 *d)
{
	if (d->bad || ++d->depth > DEPTH_MAX) {
		d->bad = true;
		return false;
	}
	return true;
}

/* "B" <base-62-number>: parse what it points to (before it), then come back */
static void backref(struct v0 *d, void (*fn)(struct v0 *, bool), bool arg)
{
	size_t at = d->pos - 1;
	uint64_t to = base62(d);
	size_t back;

	if (d->bad || to >= at) {
		d->bad = true;
		return;
	}
	back = d->pos;
	d->pos = (size_t)to;
	fn(d, arg);
	d->pos = back;
}

static void type_arg(struct v0 *d, bool unused)
{
	(void)unused;
	type(d);
}

static void lifetime(struct v0 *d, uint64_t lt)
{
	char buf[24];

	if (!lt) {
		puts_(d, "'_");
		return;
	}
	if (lt > d->bound) {
		d->bad = true;
		return;
	}
	if (d->bound - lt < 26) {
		buf[0] = '\'';
		buf[1] = (char)('a' + (d->bound - lt));
		put(d, buf, 2);
	} else {
		puts_(d, "'_");
		putu(d, d->bound - lt);
	}
}

/* ["G" <base-62-number>]: "for<'a, 'b> ", lifetimes bound from here on */
static unsigned binder(struct v0 *d)
{
	uint64_t n;

	if (!eat(d, 'G'))
		return 0;
	n = base62(d) + 1;
	if (d->bad || n > 64) {
		d->bad = true;
		return 0;
	}
	puts_(d, "for<");
	for (uint64_t i = 0; i < n; i++) {
		if (i)
			puts_(d, ", ");
		d->bound++;
		lifetime(d, 1);
	}
	puts_(d, "> ");
	return (unsigned)n;
}

static void const_value(struct v0 *d, bool unused);

/* a constant's value: integers in decimal (no type suffix), bool, char, "_" */
static void const_data(struct v0 *d, int ty)
{
	bool neg = eat(d, 'n');
	uint64_t v = 0;
	unsigned digits = 0;

	while (peek(d) != '_') {
		int c = peek(d), k = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? 10 + c - 'a' : -1;

		if (k < 0 || ++digits > 16) {
			d->bad = true;
			return;
		}
		v = v << 4 | (uint64_t)k;
		d->pos++;
	}
	d->pos++;
	if (ty == 'b') {
		puts_(d, v == 0 ? "false" : v == 1 ? "true" : "?");
		d->bad |= v > 1;
	} else if (ty == 'c') {
		char buf[8];

		if (v < 0x20 || v >= 0x7f || v == '\'' || v == '\\') {
			d->bad = true;   /* escapes are not written out here: left mangled */
			return;
		}
		put(d, buf, (size_t)snprintf(buf, sizeof(buf), "'%c'", (char)v));
	} else {
		if (neg)
			puts_(d, "-");
		putu(d, v);
	}
}

static void const_value(struct v0 *d, bool unused)
{
	int c;

	(void)unused;
	if (!enter(d))
		return;
	c = peek(d);
	d->pos++;
	if (c == 'p')
		puts_(d, "_");
	else if (c == 'B')
		backref(d, const_value, false);
	else if (strchr("abchijlmnostxy", c) && c)
		const_data(d, c);
	else
		d->bad = true;   /* structured constants: left mangled */
	d->depth--;
}

/* {<generic-arg>} "E": "a, b" (lifetimes, types, constants) */
static void generic_arg_list(struct v0 *d)
{
	bool first = true;

	while (!d->bad && !eat(d, 'E')) {
		if (!first)
			puts_(d, ", ");
		first = false;
		if (peek(d) == 0)
			d->bad = true;
		else if (eat(d, 'L'))
			lifetime(d, base62(d));
		else if (eat(d, 'K'))
			const_value(d, false);
		else
			type(d);
	}
}

/* {<generic-arg>} "E", "<a, b>" */
static void generic_args(struct v0 *d)
{
	puts_(d, "<");
	generic_arg_list(d);
	puts_(d, ">");
}

/* {<type>} "E": "a, b"; how many */
static unsigned type_list(struct v0 *d)
{
	unsigned n = 0;

	while (!d->bad && !eat(d, 'E')) {
		if (n++)
			puts_(d, ", ");
		if (!peek(d))
			d->bad = true;
		else
			type(d);
	}
	return n;
}

static const char *basic_type(int c)
{
	switch (c) {
	case 'a': return "i8";
	case 'b': return "bool";
	case 'c': return "char";
	case 'd': return "f64";
	case 'e': return "str";
	case 'f': return "f32";
	case 'h': return "u8";
	case 'i': return "isize";
	case 'j': return "usize";
	case 'l': return "i32";
	case 'm': return "u32";
	case 'n': return "i128";
	case 'o': return "u128";
	case 's': return "i16";
	case 't': return "u16";
	case 'u': return "()";
	case 'v': return "...";
	case 'x': return "i64";
	case 'y': return "u64";
	case 'z': return "!";
	case 'p': return "_";
	default: return NULL;
	}
}

/* "F" <fn-sig>: [binder] ["U"] ["K" abi] {type} "E" ret */
static void fn_sig(struct v0 *d)
{
	unsigned bound = binder(d);

	if (eat(d, 'U'))
		puts_(d, "unsafe ");
	if (eat(d, 'K')) {
		if (eat(d, 'C')) {
			puts_(d, "extern \"C\" ");
		} else {
			const char *name;
			size_t n;

			if (!ident(d, &name, &n))
				return;
			puts_(d, "extern \"");
			for (size_t i = 0; i < n; i++)
				put(d, name[i] == '_' ? "-" : name + i, 1);
			puts_(d, "\" ");
		}
	}
	puts_(d, "fn(");
	type_list(d);
	puts_(d, ")");
	if (eat(d, 'u')) {
		/* returns (): nothing shown */
	} else {
		puts_(d, " -> ");
		type(d);
	}
	d->bound -= bound;
}

/*
 * A path that may end in generic arguments, printed with them left open
 * ("Fn<(A,)", "Iterator") so that associated types can follow; returns
 * whether it left a "<" open.
 */
static bool path_open(struct v0 *d)
{
	if (eat(d, 'B')) {
		size_t at = d->pos - 1;
		uint64_t to = base62(d);
		size_t back = d->pos;
		bool open;

		if (d->bad || to >= at || !enter(d)) {
			d->bad = true;
			return false;
		}
		d->pos = (size_t)to;
		open = path_open(d);
		d->pos = back;
		d->depth--;
		return open;
	}
	if (eat(d, 'I')) {
		path(d, false);
		puts_(d, "<");
		generic_arg_list(d);
		return true;
	}
	path(d, false);
	return false;
}

/* "D" <dyn-bounds> <lifetime>: "dyn A + B<Item = T> + 'a" */
static void dyn_bounds(struct v0 *d)
{
	unsigned bound = binder(d);
	bool first = true;

	puts_(d, "dyn ");
	while (!d->bad && !eat(d, 'E')) {
		bool open;

		if (!first)
			puts_(d, " + ");
		first = false;
		if (!peek(d)) {
			d->bad = true;
			break;
		}
		open = path_open(d);
		while (!d->bad && eat(d, 'p')) {
			const char *name;
			size_t n;

			puts_(d, open ? ", " : "<");
			open = true;
			if (!ident(d, &name, &n))
				break;
			put(d, name, n);
			puts_(d, " = ");
			type(d);
		}
		if (open)
			puts_(d, ">");
	}
	d->bound -= bound;
	if (!eat(d, 'L')) {
		d->bad = true;
		return;
	}
	{
		uint64_t lt = base62(d);

		if (lt) {
			puts_(d, " + ");
			lifetime(d, lt);
		}
	}
}

static void type(struct v0 *d)
{
	int c = peek(d);
	const char *basic = basic_type(c);

	if (!enter(d))
		return;
	if (basic) {
		d->pos++;
		puts_(d, basic);
		d->depth--;
		return;
	}
	d->pos++;
	switch (c) {
	case 'R':
	case 'Q':
		puts_(d, c == 'R' ? "&" : "&mut ");
		if (eat(d, 'L')) {
			uint64_t lt = base62(d);

			if (lt) {
				lifetime(d, lt);
				puts_(d, " ");
			}
		}
		type(d);
		break;
	case 'P':
		puts_(d, "*const ");
		type(d);
		break;
	case 'O':
		puts_(d, "*mut ");
		type(d);
		break;
	case 'A':
		puts_(d, "[");
		type(d);
		puts_(d, "; ");
		const_value(d, false);
		puts_(d, "]");
		break;
	case 'S':
		puts_(d, "[");
		type(d);
		puts_(d, "]");
		break;
	case 'T':
		puts_(d, "(");
		puts_(d, type_list(d) == 1 ? ",)" : ")");
		break;
	case 'F':
		fn_sig(d);
		break;
	case 'D':
		dyn_bounds(d);
		break;
	case 'B':
		backref(d, type_arg, false);
		break;
	default:
		d->pos--;
		path(d, false);
		break;
	}
	d->depth--;
}

static void path(struct v0 *d, bool in_value)
{
	int c = peek(d);

	if (!enter(d))
		return;
	d->pos++;
	switch (c) {
	case 'C': {
		const char *name;
		size_t n;

		disambiguator(d);
		if (ident(d, &name, &n))
			put(d, name, n);
		break;
	}
	case 'N': {
		int ns = peek(d);
		const char *name;
		size_t n;
		uint64_t dis;

		if (!((ns >= 'a' && ns <= 'z') || (ns >= 'A' && ns <= 'Z'))) {
			d->bad = true;
			break;
		}
		d->pos++;
		path(d, in_value);
		dis = disambiguator(d);
		if (!ident(d, &name, &n))
			break;
		if (ns >= 'A' && ns <= 'Z') {
			puts_(d, "::{");
			if (ns == 'C')
				puts_(d, "closure");
			else if (ns == 'S')
				puts_(d, "shim");
			else
				put(d, (const char *)&(char){ (char)ns }, 1);
			if (n) {
				puts_(d, ":");
				put(d, name, n);
			}
			puts_(d, "#");
			putu(d, dis);
			puts_(d, "}");
		} else if (n) {
			puts_(d, "::");
			put(d, name, n);
		}
		break;
	}
	case 'M':
	case 'X':
	case 'Y':
		if (c != 'Y') {   /* the impl's own path is not shown */
			disambiguator(d);
			d->quiet++;
			path(d, false);
			d->quiet--;
		}
		puts_(d, "<");
		type(d);
		if (c != 'M') {
			puts_(d, " as ");
			path(d, false);
		}
		puts_(d, ">");
		break;
	case 'I':
		path(d, in_value);
		if (in_value)
			puts_(d, "::");
		generic_args(d);
		break;
	case 'B':
		backref(d, path, in_value);
		break;
	default:
		d->bad = true;
		break;
	}
	d->depth--;
}

static size_t without_llvm_suffix(const char *s);

/* "_R..." in v0's short form; NULL when @s is no v0 name or does not parse */
static char *demangle_v0(const char *s)
{
	struct v0 *d;
	const char *suffix;
	size_t end;
	char *ret = NULL;

	if (strncmp(s, "_R", 2) || (s[2] >= '0' && s[2] <= '9'))   /* an encoding version: none known */
		return NULL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	d->s = s + 2;
	/* a vendor suffix: ".llvm.<hex>" alone is dropped, as rustc-demangle
	 * does; any other (".cold", ".llvm.123.cold" of a BOLTed library) is
	 * printed after the name, as perf 7.2 prints it */
	end = without_llvm_suffix(d->s);
	suffix = memchr(d->s, '.', end);
	d->len = suffix ? (size_t)(suffix - d->s) : end;
	if (peek(d) >= 'A' && peek(d) <= 'Z') {
		path(d, true);
		if (!d->bad && d->pos < d->len) {   /* the instantiating crate: not shown */
			d->quiet++;
			path(d, false);
			d->quiet--;
		}
	} else {
		d->bad = true;
	}
	if (!d->bad && d->pos == d->len) {
		if (suffix)
			put(d, suffix, end - (size_t)(suffix - d->s));
		if (!d->bad) {
			d->out[d->n] = 0;
			ret = strdup(d->out);
		}
	}
	free(d);
	return ret;
}

/* ---- legacy: "_ZN" <len><ident>... "E" -------------------------------- */

/* The end of @s without an LLVM ".llvm.<hex>" suffix (rustc-demangle drops it) */
static size_t without_llvm_suffix(const char *s)
{
	const char *l = strstr(s, ".llvm.");

	if (!l)
		return strlen(s);
	for (const char *c = l + 6; *c; c++)
		if (!((*c >= '0' && *c <= '9') || (*c >= 'A' && *c <= 'F') || *c == '@'))
			return strlen(s);
	return (size_t)(l - s);
}

/* A suffix kept as it is (".cold"): ASCII letters, digits and punctuation, after a '.' */
static bool symbol_like(const char *s, size_t n)
{
	if (!n || s[0] != '.')
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] <= ' ' || s[i] > '~')
			return false;
	return true;
}

/* "h" and hex digits: the hash the short form leaves out */
static bool is_hash(const char *s, size_t n)
{
	if (n < 2 || s[0] != 'h')
		return false;
	for (size_t i = 1; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f') || (s[i] >= 'A' && s[i] <= 'F')))
			return false;
	return true;
}

/* One component, its escapes undone ("$LT$" "<", "$u7b$" "{", ".." "::"), into @d */
static void legacy_component(struct v0 *d, const char *s, size_t n)
{
	size_t i = 0;

	if (n >= 2 && s[0] == '_' && s[1] == '$')
		i = 1;
	while (i < n) {
		if (s[i] == '.') {
			bool two = i + 1 < n && s[i + 1] == '.';

			puts_(d, two ? "::" : ".");
			i += two ? 2 : 1;
		} else if (s[i] == '$') {
			const char *end = memchr(s + i + 1, '$', n - i - 1);
			static const char names[][3] = { "SP", "BP", "RF", "LT", "GT", "LP", "RP", "C" };
			static const char chars[] = "@*&<>(),";
			size_t k = end ? (size_t)(end - (s + i + 1)) : 0, j;
			char c = 0;

			for (j = 0; end && j < sizeof(names) / sizeof(*names); j++)
				if (strlen(names[j]) == k && !memcmp(names[j], s + i + 1, k))
					c = chars[j];
			if (!c && end && k >= 2 && k <= 7 && s[i + 1] == 'u') {
				unsigned long v = 0;
				bool hex = true;

				for (size_t h = 2; h <= k; h++) {
					char x = s[i + h];

					hex &= (x >= '0' && x <= '9') || (x >= 'a' && x <= 'f');
					v = v * 16 + (unsigned long)(x <= '9' ? x - '0' : x - 'a' + 10);
				}
				if (hex && v >= 0x20 && v < 0x7f)   /* ASCII only: others stay as they are */
					c = (char)v;
			}
			if (!c)
				break;
			put(d, &c, 1);
			i += k + 2;
		} else {
			size_t j = i;

			while (j < n && s[j] != '$' && s[j] != '.')
				j++;
			put(d, s + i, j - i);
			i = j;
		}
	}
	put(d, s + i, n - i);
}

/*
 * A legacy name in the short form: its components joined by "::", the
 * last left out where it is the hash, escapes undone, a "."-suffix kept;
 * NULL where @s is no such name (a C++ function's parameters follow its
 * "E": C++, not Rust).
 */
static char *demangle_legacy(const char *s)
{
	size_t len = without_llvm_suffix(s), pos = 3, nr = 0, at[64][2];
	struct v0 *d;
	char *ret = NULL;

	if (strncmp(s, "_ZN", 3))
		return NULL;
	while (pos < len && s[pos] != 'E') {
		size_t n = 0;

		if (s[pos] < '0' || s[pos] > '9' || nr == 64)
			return NULL;
		while (pos < len && s[pos] >= '0' && s[pos] <= '9') {
			n = n * 10 + (size_t)(s[pos++] - '0');
			if (n > len)
				return NULL;
		}
		if (n > len - pos)
			return NULL;
		for (size_t i = pos; i < pos + n; i++)
			if ((unsigned char)s[i] & 0x80)
				return NULL;
		at[nr][0] = pos;
		at[nr++][1] = n;
		pos += n;
	}
	if (pos >= len || !nr || (pos + 1 < len && !symbol_like(s + pos + 1, len - pos - 1)))
		return NULL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	if (is_hash(s + at[nr - 1][0], at[nr - 1][1]) && nr > 1)
		nr--;
	for (size_t i = 0; i < nr; i++) {
		if (i)
			puts_(d, "::");
		legacy_component(d, s + at[i][0], at[i][1]);
	}
	put(d, s + pos + 1, len - pos - 1);
	if (!d->bad) {
		d->out[d->n] = 0;
		ret = strdup(d->out);
	}
	free(d);
	return ret;
}

char *dsi_demangle_rust(const char *s)
{
	return !strncmp(s, "_R", 2) ? demangle_v0(s) : demangle_legacy(s);
}
