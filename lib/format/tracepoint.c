// SPDX-License-Identifier: MIT
/*
 * Tracepoint formats and their text (see include/dstack/tracepoint.h).
 *
 * perf 7.2 prints a tracepoint sample through libtraceevent, so the
 * contract here is libtraceevent's observable behaviour, written anew:
 *  - numbers are read from the raw data unsigned, at the field's size
 *    (1, 2, 4 or 8 bytes; other sizes read as 0), and all arithmetic is on
 *    unsigned 64-bit values; a cast only masks to u8/u16/u32/char/short/int;
 *  - an identifier the print fmt names but the format cannot define
 *    (vmemmap_base, IOPRIO_CLASS_NONE) evaluates to 0, and as a
 *    __print_flags/__print_symbolic value it matches nothing (except that a
 *    flag list prints such an entry for a value of 0);
 *  - %d/%u/%x take the value cast to the conversion's size, %s of a field
 *    of the size of a long prints it in hex, %p prints "(nil)" or 0x...,
 *    %pS/%ps a kernel symbol (+0xoff for S), else the address;
 *  - a print fmt with an unknown function is not printed: the text is
 *    "[FAILED TO PARSE]" and each field " name=value".
 * Nothing here is copied from libtraceevent; it was read to learn what
 * perf's output is.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dstack/tracepoint.h"
#include "util/grow.h"
#include "util/error.h"
#include "util/hashmap.h"

enum {
	F_SIGNED = 1, F_ARRAY = 2, F_DYNAMIC = 4, F_RELATIVE = 8,
	F_STRING = 16, F_POINTER = 32, F_LONG = 64,
};

struct tp_field {
	char *name, *type;
	uint32_t offset, size, elsize, arraylen;
	unsigned flags;
	bool common;
};

enum node_kind {
	N_ATOM, N_STR, N_FIELD, N_CAST, N_OP, N_FLAGS, N_SYMBOL,
	N_GETSTR, N_DYNARR, N_DYNARR_LEN, N_HEX, N_HEXSTR, N_INTARR,
};

struct flag_sym {
	char *value, *str;
};

struct node {
	enum node_kind kind;
	char op[4];               /* N_OP: "+", "<<", "[", "?" (b is the ":"), unary "-" (a NULL) */
	int prio;                 /* N_OP: libtraceevent's priority, 0 for unary, "?" and "[" */
	char *text;               /* atom, string literal, cast type, flags' delimiter */
	const struct tp_field *field;
	struct node *a, *b, *c;   /* operands */
	struct flag_sym *syms;
	size_t nr_syms;
	struct node *all;         /* every node of an event, for freeing */
};

enum piece_kind { P_TEXT, P_NUM, P_PTR, P_STR };

struct piece {
	enum piece_kind kind;
	char fmt[32];             /* the conversion as written ("%-16s", "%08lx") */
	int ls;                   /* length modifiers: -2 hh, -1 h, 0, 1 l/z, 2 ll/L */
	char conv;                /* conversion character */
	char *text;               /* P_TEXT */
	struct node *arg, *len_arg;
};

struct ds_tp_event {
	const struct ds_tp_set *set;   /* the printk formats, NULL for an event of its own */
	char *system, *name;
	uint64_t id;
	int long_size;
	bool swap;
	struct tp_field *fields;
	size_t nr_fields;
	bool failed;
	struct piece *pieces;
	size_t nr_pieces;
	struct node *nodes;
};

struct printk_fmt {
	uint64_t addr;
	char *text;
};

struct ds_tp_set {
	struct printk_fmt *printk;   /* sorted by address */
	size_t nr_printk;
	struct ds_tp_event **events;
	size_t nr_events;
	struct dsi_hashmap by_id;  /* id -> index */
};

/* ---- small helpers ---------------------------------------------------- */

struct sbuf {
	char *p;
	size_t cap, len;          /* len may run past cap: the length wanted */
};

static void sb_put(struct sbuf *s, const char *str, size_t n)
{
	if (s->len < s->cap) {
		size_t room = s->cap - s->len;

		memcpy(s->p + s->len, str, n < room ? n : room);
	}
	s->len += n;
}

static void sb_puts(struct sbuf *s, const char *str)
{
	sb_put(s, str, strlen(str));
}

__attribute__((format(printf, 2, 3)))
static void sb_printf(struct sbuf *s, const char *fmt, ...)
{
	char tmp[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n > 0)
		sb_put(s, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

static char *xstrndup(const char *s, size_t n)
{
	char *d = malloc(n + 1);

	if (d) {
		memcpy(d, s, n);
		d[n] = 0;
	}
	return d;
}

/* ---- reading raw data -------------------------------------------------- */

struct raw {
	const uint8_t *p;
	size_t size;
	bool swap;
};

static uint64_t read_num(const struct raw *r, uint64_t off, uint32_t size)
{
	uint8_t b[8];
	uint64_t v = 0;

	if (off > r->size || size > r->size - off)
		return 0;
	if (size != 1 && size != 2 && size != 4 && size != 8)
		return 0;
	memcpy(b, r->p + off, size);
	if (r->swap)
		for (uint32_t i = 0; i < size / 2; i++) {
			uint8_t t = b[i];

			b[i] = b[size - 1 - i];
			b[size - 1 - i] = t;
		}
	switch (size) {
	case 1: v = b[0]; break;
	case 2: { uint16_t x; memcpy(&x, b, 2); v = x; break; }
	case 4: { uint32_t x; memcpy(&x, b, 4); v = x; break; }
	default: memcpy(&v, b, 8); break;
	}
	return v;
}

/* Where a __data_loc/__rel_loc field's data lies; false if outside the raw data. */
static bool dyn_loc(const struct raw *r, const struct tp_field *f, uint32_t *off, uint32_t *len)
{
	uint64_t v = read_num(r, f->offset, f->size);
	uint32_t o, l;

	if (f->size == 2) {   /* old kernels: an offset only, a NUL-terminated string */
		o = (uint32_t)v;
		l = 0;
		if (o <= r->size)
			l = (uint32_t)strnlen((const char *)r->p + o, r->size - o);
	} else {
		o = (uint32_t)(v & 0xffff);
		l = (uint32_t)(v >> 16) & 0xffff;
	}
	if (f->flags & F_RELATIVE)
		o += f->offset + f->size;
	if (o > r->size || l > r->size - o) {
		*off = 0;
		*len = 0;
		return false;
	}
	*off = o;
	*len = l;
	return true;
}

/* ---- format file: fields ----------------------------------------------- */

static bool type_is_long(const char *t)
{
	size_t n = strlen(t);

	if (n < 4 || strcmp(t + n - 4, "long"))
		return false;
	return n == 4 || (t[n - 5] == ' ' && !(n >= 9 && !strcmp(t + n - 9, "long long")));
}

/*
 * The type of a declaration "TYPE NAME[N]": the text from @decl to the
 * spaces before @name, then the brackets [@br, @br_end) (empty when not an
 * array), as libtraceevent keeps them.  NULL when out of memory.
 */
static char *field_type_new(const char *decl, const char *name, const char *br, const char *br_end)
{
	const char *te = name;
	size_t tl, bl = (size_t)(br_end - br);
	char *type;

	while (te > decl && te[-1] == ' ')
		te--;
	tl = (size_t)(te - decl);
	type = malloc(tl + bl + 1);
	if (type) {
		memcpy(type, decl, tl);
		memcpy(type + tl, br, bl);
		type[tl + bl] = 0;
	}
	return type;
}

/*
 * The declaration [@decl, @end) "TYPE NAME" or "TYPE NAME[N]" into
 * f->name, f->type and (arrays) F_ARRAY and f->arraylen.  False when it
 * has no name, a ']' without '[', or memory runs out.
 */
static bool parse_field_decl(const char *decl, const char *end, struct tp_field *f)
{
	const char *name_end = end, *br, *name;

	while (name_end > decl && name_end[-1] == ' ')
		name_end--;
	br = name_end;
	if (br > decl && br[-1] == ']') {
		const char *lb = br;

		while (lb > decl && *lb != '[')
			lb--;
		if (*lb != '[')
			return false;
		f->flags |= F_ARRAY;
		f->arraylen = (uint32_t)strtoul(lb + 1, NULL, 0);
		br = lb;
	}
	name = br;
	while (name > decl && (isalnum((unsigned char)name[-1]) || name[-1] == '_'))
		name--;
	if (name == br)
		return false;
	f->name = xstrndup(name, (size_t)(br - name));
	f->type = field_type_new(decl, name, br, name_end);
	return f->name && f->type;
}

/* Whether @type, without its brackets and trailing spaces, is a "long" (not "long long"). */
static bool base_type_is_long(const char *type)
{
	const char *br = strchr(type, '[');
	char base[128];
	size_t bl = br ? (size_t)(br - type) : strlen(type);

	if (bl >= sizeof(base))
		return false;
	memcpy(base, type, bl);
	base[bl] = 0;
	while (bl && base[bl - 1] == ' ')
		base[--bl] = 0;
	return type_is_long(base);
}

/* The flags f->type implies: dynamic (__data_loc, __rel_loc), string, pointer, long. */
static void field_type_flags(struct tp_field *f)
{
	if (!strncmp(f->type, "__data_loc", 10))
		f->flags |= F_DYNAMIC;
	if (!strncmp(f->type, "__rel_loc", 9))
		f->flags |= F_DYNAMIC | F_RELATIVE;
	if (strstr(f->type, "char["))
		f->flags |= F_STRING;
	if (strchr(f->type, '*'))
		f->flags |= F_POINTER;
	if (base_type_is_long(f->type))
		f->flags |= F_LONG;
}

/*
 * The "\toffset:N;\tsize:N;\tsigned:N;" attributes in [@k, @end) into @f;
 * other keys are skipped.  False when a value is longer than 31 bytes.
 */
static bool parse_field_attrs(const char *k, const char *end, struct tp_field *f)
{
	char num[32];

	while (k < end) {
		const char *colon = memchr(k, ':', (size_t)(end - k));
		const char *semi;
		size_t nl;

		if (!colon)
			break;
		semi = memchr(colon, ';', (size_t)(end - colon));
		if (!semi)
			break;
		nl = (size_t)(semi - colon - 1);
		if (nl >= sizeof(num))
			return false;
		memcpy(num, colon + 1, nl);
		num[nl] = 0;
		while (k < colon && isspace((unsigned char)*k))
			k++;
		if (!strncmp(k, "offset", 6))
			f->offset = (uint32_t)strtoul(num, NULL, 0);
		else if (!strncmp(k, "size", 4))
			f->size = (uint32_t)strtoul(num, NULL, 0);
		else if (!strncmp(k, "signed", 6) && strtoul(num, NULL, 0))
			f->flags |= F_SIGNED;
		k = semi + 1;
	}
	return true;
}

/* The element size of a dynamic array's type "__data_loc TYPE[]": its size if TYPE is a plain one, else 4. */
static uint32_t dynamic_elsize(const struct tp_field *f)
{
	const char *t = f->type + ((f->flags & F_RELATIVE) ? 9 : 10);

	while (*t == ' ')
		t++;
	return strstr(t, "long long") || strstr(t, "64") ? 8 :
	       strstr(t, "long") ? 8 : strstr(t, "short") || strstr(t, "16") ? 2 :
	       strstr(t, "char") || strstr(t, "8") ? 1 : 4;
}

/* f->elsize, once the type and the size are known; a 2-byte __data_loc is a string. */
static void field_set_elsize(struct tp_field *f)
{
	if ((f->flags & F_DYNAMIC) && f->size == 2)
		f->flags |= F_STRING | F_ARRAY;
	if (!(f->flags & (F_ARRAY | F_DYNAMIC)))
		f->elsize = f->size;
	else if (f->arraylen)
		f->elsize = f->size / f->arraylen;
	else if (f->flags & F_STRING)
		f->elsize = 1;
	else if (f->flags & F_DYNAMIC)
		f->elsize = dynamic_elsize(f);
}

/*
 * One "field:TYPE NAME[N];\toffset:N;\tsize:N;\tsigned:N;" line into @f
 * (zeroed by the caller).  False when malformed; @f may then hold what was
 * parsed so far (the caller frees it).
 */
static bool parse_field_line(const char *line, size_t len, struct tp_field *f)
{
	const char *semi = memchr(line, ';', len);

	if (!semi || len < 7)
		return false;
	if (!parse_field_decl(line + 6, semi, f))
		return false;
	field_type_flags(f);
	if (!parse_field_attrs(semi + 1, line + len, f))
		return false;
	field_set_elsize(f);
	return true;
}

static const struct tp_field *find_field(const struct ds_tp_event *ev, const char *name, size_t n)
{
	/* the event's own fields first, then the common ones (libtraceevent's "any field") */
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < ev->nr_fields; i++) {
			const struct tp_field *f = &ev->fields[i];

			if (f->common == (pass == 1) && strlen(f->name) == n && !memcmp(f->name, name, n))
				return f;
		}
	return NULL;
}

/* ---- print fmt: tokens ------------------------------------------------- */

enum tok_kind { T_END, T_IDENT, T_NUM, T_STR, T_OP, T_BAD };

struct lexer {
	const char *p, *end;
	enum tok_kind kind;
	const char *tok;
	size_t len;
};

static void lex_next(struct lexer *lx)
{
	static const char *const ops2[] = { "->", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||" };
	const char *p = lx->p;

	while (p < lx->end && isspace((unsigned char)*p))
		p++;
	lx->tok = p;
	if (p >= lx->end) {
		lx->kind = T_END;
		lx->len = 0;
		lx->p = p;
		return;
	}
	if (isalpha((unsigned char)*p) || *p == '_') {
		while (p < lx->end && (isalnum((unsigned char)*p) || *p == '_'))
			p++;
		lx->kind = T_IDENT;
	} else if (isdigit((unsigned char)*p)) {
		while (p < lx->end && (isalnum((unsigned char)*p) || *p == '.'))
			p++;
		lx->kind = T_NUM;
	} else if (*p == '"') {
		p++;
		while (p < lx->end && *p != '"') {
			if (*p == '\\' && p + 1 < lx->end)
				p++;
			p++;
		}
		if (p >= lx->end) {
			lx->kind = T_BAD;
			lx->p = lx->end;
			return;
		}
		p++;
		lx->kind = T_STR;
	} else if (*p == '\'') {   /* a character constant: its value as a number */
		const char *q = memchr(p + 1, '\'', (size_t)(lx->end - p - 1));

		if (!q) {
			lx->kind = T_BAD;
			lx->p = lx->end;
			return;
		}
		p = q + 1;
		lx->kind = T_NUM;
	} else {
		lx->kind = T_OP;
		p++;
		for (size_t i = 0; i < sizeof(ops2) / sizeof(ops2[0]); i++)
			if (lx->end - lx->tok >= 2 && !memcmp(lx->tok, ops2[i], 2)) {
				p = lx->tok + 2;
				break;
			}
	}
	lx->len = (size_t)(p - lx->tok);
	lx->p = p;
}

static bool is_op(const struct lexer *lx, const char *op)
{
	return lx->kind == T_OP && lx->len == strlen(op) && !memcmp(lx->tok, op, lx->len);
}

static bool is_ident(const struct lexer *lx, const char *id)
{
	return lx->kind == T_IDENT && lx->len == strlen(id) && !memcmp(lx->tok, id, lx->len);
}

/* ---- print fmt: expressions -------------------------------------------- */

struct parser {
	struct lexer lx;
	struct ds_tp_event *ev;
	bool failed;
	int depth;
};

static struct node *node_new(struct parser *ps, enum node_kind k)
{
	struct node *n = calloc(1, sizeof(*n));

	if (!n) {
		ps->failed = true;
		return NULL;
	}
	n->kind = k;
	n->all = ps->ev->nodes;
	ps->ev->nodes = n;
	return n;
}

static bool expect(struct parser *ps, const char *op)
{
	if (!is_op(&ps->lx, op)) {
		ps->failed = true;
		return false;
	}
	lex_next(&ps->lx);
	return true;
}

/* A string literal (and any adjacent ones), escapes kept as written. */
static char *take_string(struct parser *ps)
{
	char *s = NULL;
	size_t len = 0;

	while (ps->lx.kind == T_STR) {
		size_t n = ps->lx.len - 2;
		char *ns = realloc(s, len + n + 1);

		if (!ns) {
			free(s);
			ps->failed = true;
			return NULL;
		}
		s = ns;
		memcpy(s + len, ps->lx.tok + 1, n);
		len += n;
		s[len] = 0;
		lex_next(&ps->lx);
	}
	return s;
}

/*
 * The arguments are parsed the way libtraceevent parses them, quirks
 * included, because perf prints what that parse evaluates to: a primary,
 * then each operator in turn.  An operator whose right operand is itself
 * an operation of lower precedence (even one in parentheses) is rotated
 * over it, so "f & (A | B)" evaluates as "(f & A) | B"; a following
 * operator of higher precedence applies to the right operand only, and
 * the right side of "?:" is a primary.  In-place rewrites of a node keep
 * its place in the event's list of nodes.
 */
static void p_arg(struct parser *ps, struct node *n);
static void p_op(struct parser *ps, struct node *n);

static bool cur_delim(const struct lexer *lx, char c)
{
	return lx->kind == T_OP && lx->len == 1 && *lx->tok == c;
}

/* an operator token: libtraceevent's OP class ("(", ")" and "," are delimiters) */
static bool cur_op(const struct lexer *lx)
{
	return lx->kind == T_OP && !(lx->len == 1 && strchr("(),", *lx->tok));
}

static bool cur_item(const struct lexer *lx)
{
	return lx->kind == T_IDENT || lx->kind == T_NUM;
}

static int op_prio(const char *op)
{
	static const struct { const char *op; int prio; } t[] = {
		{ "~", 4 }, { "!", 4 }, { "*", 6 }, { "/", 6 }, { "%", 6 }, { "+", 7 }, { "-", 7 },
		{ "<<", 8 }, { ">>", 8 }, { "<", 9 }, { ">", 9 }, { "<=", 9 }, { ">=", 9 }, { "==", 10 },
		{ "!=", 10 }, { "&", 11 }, { "^", 12 }, { "|", 13 }, { "&&", 14 }, { "||", 15 }, { "?", 16 },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (!strcmp(op, t[i].op))
			return t[i].prio;
	return -1;
}

/* Move n's contents to a new node and return it; n is left empty. */
static struct node *node_move(struct parser *ps, struct node *n)
{
	struct node *m = node_new(ps, N_ATOM);
	struct node *keep;

	if (!m)
		return NULL;
	keep = m->all;
	*m = *n;
	m->all = keep;
	keep = n->all;
	memset(n, 0, sizeof(*n));
	n->all = keep;
	return m;
}

static void node_swap(struct node *x, struct node *y)
{
	struct node t = *x;
	struct node *xa = x->all, *ya = y->all;

	*x = *y;
	*y = t;
	x->all = xa;
	y->all = ya;
}

/* an argument: a primary and the operators after it */
static struct node *p_full(struct parser *ps)
{
	struct node *n = node_new(ps, N_ATOM);

	if (!n)
		return NULL;
	p_arg(ps, n);
	if (!ps->failed && cur_op(&ps->lx))
		p_op(ps, n);
	return ps->failed ? NULL : n;
}

static const struct tp_field *field_arg(struct parser *ps)
{
	const struct tp_field *f = NULL;

	if (ps->lx.kind == T_IDENT)
		f = find_field(ps->ev, ps->lx.tok, ps->lx.len);
	if (!f)
		ps->failed = true;
	else
		lex_next(&ps->lx);
	return f;
}

static void parse_syms(struct parser *ps, struct node *n);

static bool expect_comma(struct parser *ps)
{
	return expect(ps, ",");
}

/*
 * __print_dynamic_array(field, el_size) (Linux 6.13; syscall tracepoints'
 * user buffers): the kernel's shorthand for __print_array(
 * __get_dynamic_array(field), __get_dynamic_array_len(field) / el_size,
 * el_size), which libtraceevent prints alike.
 */
static void parse_dynamic_array(struct parser *ps, struct node *n)
{
	struct node *arr = node_new(ps, N_DYNARR), *len = node_new(ps, N_DYNARR_LEN), *div = node_new(ps, N_OP);

	n->kind = N_INTARR;
	if (!arr || !len || !div)
		return;
	arr->field = len->field = field_arg(ps);
	if (!arr->field || !expect_comma(ps) || !(n->c = p_full(ps)))
		return;
	strcpy(div->op, "/");
	div->prio = op_prio("/");
	div->a = len;
	div->b = n->c;
	n->a = arr;
	n->b = div;
}

/* A function call's arguments into n; the lexer is past the '('. */
static void parse_call(struct parser *ps, struct node *n, const char *name, size_t nlen)
{
#define IS(s) (nlen == strlen(s) && !memcmp(name, s, nlen))
	if (IS("__print_flags") || IS("__print_flags_u64")) {
		n->kind = N_FLAGS;
		if (!(n->a = p_full(ps)) || !expect_comma(ps))
			return;
		if (ps->lx.kind != T_STR) {
			ps->failed = true;
			return;
		}
		n->text = take_string(ps);
		if (!expect_comma(ps))
			return;
		parse_syms(ps, n);
	} else if (IS("__print_symbolic") || IS("__print_symbolic_u64")) {
		n->kind = N_SYMBOL;
		if (!(n->a = p_full(ps)) || !expect_comma(ps))
			return;
		parse_syms(ps, n);
	} else if (IS("__get_str") || IS("__get_rel_str")) {
		n->kind = N_GETSTR;
		n->field = field_arg(ps);
	} else if (IS("__get_dynamic_array") || IS("__get_rel_dynamic_array")) {
		n->kind = N_DYNARR;
		n->field = field_arg(ps);
	} else if (IS("__get_dynamic_array_len") || IS("__get_rel_dynamic_array_len")) {
		n->kind = N_DYNARR_LEN;
		n->field = field_arg(ps);
	} else if (IS("__print_hex") || IS("__print_hex_str")) {
		n->kind = IS("__print_hex") ? N_HEX : N_HEXSTR;
		if (!(n->a = p_full(ps)) || !expect_comma(ps))
			return;
		n->b = p_full(ps);
	} else if (IS("__print_array")) {
		n->kind = N_INTARR;
		if (!(n->a = p_full(ps)) || !expect_comma(ps) || !(n->b = p_full(ps)) || !expect_comma(ps))
			return;
		n->c = p_full(ps);
	} else if (IS("__print_dynamic_array")) {
		parse_dynamic_array(ps, n);
	} else {
		/* libtraceevent fails the whole print fmt on a function it does not know */
		ps->failed = true;
		return;
	}
#undef IS
	if (ps->failed || !expect(ps, ")"))
		return;
	if ((n->kind == N_HEX || n->kind == N_HEXSTR || n->kind == N_INTARR) &&
	    (!n->a || (n->a->kind != N_DYNARR && n->a->kind != N_FIELD)))
		ps->failed = true;
}

static void p_paren(struct parser *ps, struct node *n)
{
	struct lexer *lx = &ps->lx;

	p_arg(ps, n);
	if (!ps->failed && cur_op(lx))
		p_op(ps, n);
	if (ps->failed || !expect(ps, ")"))
		return;
	if (cur_item(lx) || lx->kind == T_STR || cur_delim(lx, '(')) {
		/* "(type) item": a cast; what was in the parentheses must be a name */
		struct node *item;

		if (n->kind != N_ATOM) {
			ps->failed = true;
			return;
		}
		item = node_new(ps, N_ATOM);
		if (!item)
			return;
		n->kind = N_CAST;
		n->a = item;
		p_arg(ps, item);
	}
}

/*
 * The parse functions below leave ps->depth as they found it when they
 * succeed; a failure (ps->failed, never cleared) ends the parse, so what
 * the depth is then does not matter.
 */

/* "REC->name": a field (an unknown name reads 0). */
static void p_field_ref(struct parser *ps, struct node *n)
{
	struct lexer *lx = &ps->lx;

	lex_next(lx);
	if (!expect(ps, "->"))
		return;
	if (lx->kind != T_IDENT) {
		ps->failed = true;
		return;
	}
	n->kind = N_FIELD;
	n->field = find_field(ps->ev, lx->tok, lx->len);
	lex_next(lx);
}

/* "__builtin_expect(cond, N)", the lexer past its '(': the condition, a primary. */
static void p_builtin_expect(struct parser *ps, struct node *n)
{
	struct lexer *lx = &ps->lx;

	p_arg(ps, n);
	if (ps->failed || !expect(ps, ","))
		return;
	if (!cur_item(lx))
		ps->failed = true;
	else
		lex_next(lx);
	expect(ps, ")");
}

/*
 * An atom, [@name, @name + @nlen) and the words that follow it ("unsigned
 * long"), joined by single spaces.  NULL when out of memory.
 */
static char *take_words(struct lexer *lx, const char *name, size_t nlen)
{
	size_t len = nlen;
	char *t = xstrndup(name, nlen);

	while (t && cur_item(lx)) {
		char *nt = realloc(t, len + lx->len + 2);

		if (!nt) {
			free(t);
			return NULL;
		}
		t = nt;
		t[len++] = ' ';
		memcpy(t + len, lx->tok, lx->len);
		len += lx->len;
		t[len] = 0;
		lex_next(lx);
	}
	return t;
}

/* A name: a function call, __builtin_expect() or an atom of one or more words. */
static void p_name(struct parser *ps, struct node *n)
{
	struct lexer *lx = &ps->lx;
	const char *name = lx->tok;
	size_t nlen = lx->len;

	lex_next(lx);
	if (cur_delim(lx, '(') && nlen == 16 && !memcmp(name, "__builtin_expect", 16)) {
		lex_next(lx);
		p_builtin_expect(ps, n);
	} else if (cur_delim(lx, '(')) {
		lex_next(lx);
		parse_call(ps, n, name, nlen);
	} else {
		n->kind = N_ATOM;
		n->text = take_words(lx, name, nlen);
		if (!n->text)
			ps->failed = true;
	}
}

/* A unary operator (~ ! + -): its operand is a primary; a tighter binary operator after it applies to the operand. */
static void p_unary(struct parser *ps, struct node *n)
{
	struct lexer *lx = &ps->lx;

	n->kind = N_OP;
	n->op[0] = *lx->tok;
	n->prio = 0;
	lex_next(lx);
	if (!(n->b = node_new(ps, N_ATOM)))
		return;
	p_arg(ps, n->b);
	if (!ps->failed && cur_op(lx) && !is_op(lx, ":")) {
		if (op_prio((char[3]){ lx->tok[0], lx->len > 1 ? lx->tok[1] : 0, 0 }) > n->prio)
			p_op(ps, n);
	}
}

/* A primary: a field, a call, an atom, a string, a parenthesized expression or cast, a unary operation. */
static void p_arg(struct parser *ps, struct node *n)
{
	struct lexer *lx = &ps->lx;

	if (ps->failed || ++ps->depth > 200) {
		ps->failed = true;
		return;
	}
	if (is_ident(lx, "REC")) {
		p_field_ref(ps, n);
	} else if (cur_item(lx)) {
		p_name(ps, n);
	} else if (lx->kind == T_STR) {
		n->kind = N_STR;
		n->text = take_string(ps);
	} else if (cur_delim(lx, '(')) {
		lex_next(lx);
		p_paren(ps, n);
	} else if (cur_op(lx) && lx->len == 1 && strchr("~!+-", *lx->tok)) {
		p_unary(ps, n);
	} else {
		ps->failed = true;
	}
	ps->depth--;
}

static void p_cond(struct parser *ps, struct node *q)
{
	struct node *then = node_new(ps, N_ATOM), *els = node_new(ps, N_ATOM), *colon = node_new(ps, N_OP);

	if (!then || !els || !colon)
		return;
	p_arg(ps, then);
	while (!ps->failed && cur_op(&ps->lx) && !is_op(&ps->lx, ":"))
		p_op(ps, then);
	if (ps->failed || !expect(ps, ":"))
		return;
	p_arg(ps, els);   /* a primary: what follows applies to the whole "?:" */
	colon->op[0] = ':';
	colon->a = then;
	colon->b = els;
	q->b = colon;
}

/*
 * @n becomes the operator node "@op" (at @prio) whose left operand is what
 * @n was; the lexer moves past the operator.  The left operand, or NULL
 * when out of memory.
 */
static struct node *op_node_over(struct parser *ps, struct node *n, const char *op, int prio)
{
	struct node *left = node_move(ps, n);

	if (!left)
		return NULL;
	n->kind = N_OP;
	strcpy(n->op, op);
	n->a = left;
	n->prio = prio;
	lex_next(&ps->lx);
	return left;
}

/* "left[index]": the index is a primary, as libtraceevent reads it. */
static void p_index(struct parser *ps, struct node *n)
{
	if (!op_node_over(ps, n, "[", 0))
		return;
	if (!(n->b = node_new(ps, N_ATOM)))
		return;
	p_arg(ps, n->b);
	if (!ps->failed)
		expect(ps, "]");
}

/* "(type *)": the atom before the star gets it, and @n is that atom again.  False when it cannot. */
static bool p_pointer_type(struct node *n, struct node *left)
{
	size_t l = left->text ? strlen(left->text) : 0;
	char *t;

	if (left->kind != N_ATOM || !(t = realloc(left->text, l + 3)))
		return false;
	memcpy(t + l, " *", 3);
	left->text = t;
	node_swap(n, left);
	return true;
}

/*
 * "left OP right", right a primary; when right is itself an operation that
 * binds more loosely, the tree rotates so that OP takes left and right's
 * left operand.  Its right operand into *right (NULL after a cast's
 * "(type *)").  False when nothing may follow (the cast, or a failure).
 */
static bool p_binary(struct parser *ps, struct node *n, const char *op, struct node **right)
{
	struct node *left = op_node_over(ps, n, op, op_prio(op)), *r;

	if (!left)
		return false;
	if (!strcmp(op, "*") && cur_delim(&ps->lx, ')')) {
		if (!p_pointer_type(n, left))
			ps->failed = true;
		return false;
	}
	if (!(r = node_new(ps, N_ATOM)))
		return false;
	p_arg(ps, r);
	if (ps->failed)
		return false;
	if (r->kind == N_OP && op_prio(n->op) < op_prio(r->op)) {
		/* rotate: n takes right's operator, with (left n right.a) as its left */
		n->b = r->a;
		node_swap(n, r);
		n->a = r;
	} else {
		n->b = r;
	}
	*right = r;
	return true;
}

/*
 * The operator after "n OP right": it applies to the whole of @n when it
 * binds more loosely than OP (or OP had no right operand, as ?: and []),
 * else to @right.
 */
static void p_next_op(struct parser *ps, struct node *n, struct node *right)
{
	struct lexer *lx = &ps->lx;
	char next[4] = { 0 };

	if (lx->len > 2) {
		ps->failed = true;
		return;
	}
	memcpy(next, lx->tok, lx->len);
	if (op_prio(next) > n->prio || !right)
		p_op(ps, n);
	else
		p_op(ps, right);
}

/* The operator at the lexer, applied to @n (its left operand), then the operators that follow. */
static void p_op(struct parser *ps, struct node *n)
{
	struct lexer *lx = &ps->lx;
	struct node *right = NULL;
	char op[4] = { 0 };
	bool more = true;

	if (ps->failed || ++ps->depth > 200 || lx->len > 2) {
		ps->failed = true;
		return;
	}
	memcpy(op, lx->tok, lx->len);
	if (!strcmp(op, "?")) {
		if (op_node_over(ps, n, "?", 0))
			p_cond(ps, n);
	} else if (!strcmp(op, "[")) {
		p_index(ps, n);
	} else if (op_prio(op) > 4) {
		more = p_binary(ps, n, op, &right);
	} else {
		ps->failed = true;   /* libtraceevent fails the print fmt on an unknown operator */
	}
	if (more && !ps->failed && cur_op(lx) && !is_op(lx, ":"))
		p_next_op(ps, n, right);
	ps->depth--;
}

/* ---- evaluation -------------------------------------------------------- */

static uint64_t cast_value(uint64_t v, const char *type)
{
	size_t n = strlen(type);

	if (n && type[n - 1] == '*')
		return v;
	if (!strncmp(type, "struct", 6))
		return v;
	if (!strcmp(type, "u8") || !strcmp(type, "s8"))
		return v & 0xff;
	if (!strcmp(type, "u16") || !strcmp(type, "s16"))
		return v & 0xffff;
	if (!strcmp(type, "u32") || !strcmp(type, "s32"))
		return v & 0xffffffff;
	if (!strncmp(type, "unsigned ", 9))
		type += 9;
	if (!strcmp(type, "char"))
		return v & 0xff;
	if (!strcmp(type, "short"))
		return v & 0xffff;
	if (!strcmp(type, "int"))
		return v & 0xffffffff;
	return v;
}

/* The value a constant expression has when the format is parsed (flag tables). */
static int64_t eval_const(const struct node *n, int depth)
{
	int64_t l, r;

	if (!n || depth > 200)
		return 0;
	switch (n->kind) {
	case N_ATOM: return (int64_t)strtoll(n->text, NULL, 0);
	case N_CAST: return (int64_t)cast_value((uint64_t)eval_const(n->a, depth + 1), n->text);
	case N_OP: break;
	default: return 0;
	}
	if (n->op[0] == '?')
		return n->b && eval_const(n->a, depth + 1) ? eval_const(n->b->a, depth + 1) :
		       n->b ? eval_const(n->b->b, depth + 1) : 0;
	l = eval_const(n->a, depth + 1);
	r = eval_const(n->b, depth + 1);
	switch (n->op[0]) {
	case '!': return n->op[1] ? l != r : !r;
	case '~': return ~r;
	case '|': return n->op[1] ? l || r : l | r;
	case '&': return n->op[1] ? l && r : l & r;
	case '^': return l ^ r;
	case '<': return n->op[1] == '<' ? (int64_t)((uint64_t)l << (r & 63)) : n->op[1] ? l <= r : l < r;
	case '>': return n->op[1] == '>' ? l >> (r & 63) : n->op[1] ? l >= r : l > r;
	case '=': return l == r;
	case '+': return (int64_t)((uint64_t)l + (uint64_t)r);
	case '-': return (int64_t)((uint64_t)l - (uint64_t)r);
	case '*': return (int64_t)((uint64_t)l * (uint64_t)r);
	case '/': return r && !(l == INT64_MIN && r == -1) ? l / r : 0;
	case '%': return r && !(l == INT64_MIN && r == -1) ? l % r : 0;
	default: return 0;
	}
}

/* A flag table entry's value or string as libtraceevent keeps it: an atom's text, else the number. */
static char *const_text(struct parser *ps, const struct node *n)
{
	char buf[32];
	const struct node *in = n;

	if (!n)
		return NULL;
	while (in->kind == N_CAST && in->a)
		in = in->a;
	if (n->kind == N_STR || in->kind == N_ATOM) {
		char *s = strdup(n->kind == N_STR ? n->text : in->text);

		if (!s)
			ps->failed = true;
		return s;
	}
	if (n->kind != N_OP && n->kind != N_CAST) {
		ps->failed = true;
		return NULL;
	}
	snprintf(buf, sizeof(buf), "%" PRId64, eval_const(n, 0));
	return strdup(buf);
}

static void parse_syms(struct parser *ps, struct node *n)
{
	struct lexer *lx = &ps->lx;

	while (!ps->failed && is_op(lx, "{")) {
		struct flag_sym fs;
		struct flag_sym *ns;
		struct node *v, *s;

		lex_next(lx);
		v = p_full(ps);
		if (!v || !expect(ps, ","))
			return;
		if (!(s = node_new(ps, N_ATOM)))
			return;
		p_arg(ps, s);   /* the string: a primary */
		if (ps->failed)
			return;
		if (!expect(ps, "}"))
			return;
		fs.value = const_text(ps, v);
		fs.str = const_text(ps, s);
		ns = realloc(n->syms, (n->nr_syms + 1) * sizeof(*ns));
		if (!fs.value || !fs.str || !ns) {
			free(fs.value);
			free(fs.str);
			if (ns)
				n->syms = ns;
			ps->failed = true;
			return;
		}
		n->syms = ns;
		n->syms[n->nr_syms++] = fs;
		if (!is_op(lx, ","))
			break;
		lex_next(lx);
	}
}

struct ctx {
	const struct ds_tp_event *ev;
	struct raw raw;
	ds_tp_resolve_fn resolve;
	void *rctx;
	int depth;
};

static uint64_t eval_num(struct ctx *c, const struct node *n);

static uint64_t eval_index(struct ctx *c, const struct node *n)
{
	const struct node *l = n->a, *cast = NULL;
	uint64_t idx = eval_num(c, n->b), v;
	uint64_t off;
	uint32_t size = (uint32_t)c->ev->long_size;

	while (l && l->kind == N_CAST) {
		if (!cast)
			cast = l;
		l = l->a;
	}
	if (!l)
		return 0;
	if (l->kind == N_DYNARR && l->field) {
		uint32_t o, len;

		dyn_loc(&c->raw, l->field, &o, &len);
		off = o + idx;
		if (l->field->elsize)
			size = l->field->elsize;
	} else if (l->kind == N_FIELD && l->field) {
		size = l->field->elsize;
		off = l->field->offset + idx * l->field->elsize;
	} else {
		return 0;
	}
	v = read_num(&c->raw, off, size);
	return cast ? cast_value(v, cast->text) : v;
}

static uint64_t eval_num(struct ctx *c, const struct node *n)
{
	uint64_t l, r, v = 0;

	if (!n || ++c->depth > 400)
		return 0;
	switch (n->kind) {
	case N_ATOM:
		v = strtoull(n->text, NULL, 0);
		break;
	case N_FIELD:
		v = n->field ? read_num(&c->raw, n->field->offset, n->field->size) : 0;
		break;
	case N_CAST:
		v = cast_value(eval_num(c, n->a), n->text);
		break;
	case N_DYNARR_LEN: {
		uint32_t o, len = 0;

		if (n->field)
			dyn_loc(&c->raw, n->field, &o, &len);
		v = len;
		break;
	}
	case N_OP:
		if (n->op[0] == '[') {
			v = eval_index(c, n);
			break;
		}
		if (n->op[0] == '?') {
			if (n->b && n->b->op[0] == ':')
				v = eval_num(c, n->a) ? eval_num(c, n->b->a) : eval_num(c, n->b->b);
			break;
		}
		l = eval_num(c, n->a);
		r = eval_num(c, n->b);
		switch (n->op[0]) {
		case '!': v = n->op[1] ? l != r : !r; break;
		case '~': v = ~r; break;
		case '|': v = n->op[1] ? l || r : (l | r); break;
		case '&': v = n->op[1] ? l && r : (l & r); break;
		case '^': v = l ^ r; break;
		case '<': v = n->op[1] == '<' ? l << (r & 63) : n->op[1] ? l <= r : l < r; break;
		case '>': v = n->op[1] == '>' ? l >> (r & 63) : n->op[1] ? l >= r : l > r; break;
		case '=': v = l == r; break;
		case '+': v = l + r; break;
		case '-': v = l - r; break;
		case '*': v = l * r; break;
		case '/': v = r ? l / r : 0; break;
		case '%': v = r ? l % r : 0; break;
		default: v = 0; break;
		}
		break;
	default:   /* strings, flags, dynamic arrays: no number */
		v = 0;
		break;
	}
	c->depth--;
	return v;
}

/* libtraceevent's reading of a flag table value: a number, a known softirq/hrtimer name, else -1. */
static int64_t flag_value(const char *s)
{
	static const struct { const char *name; int v; } known[] = {
		{ "HI_SOFTIRQ", 0 }, { "TIMER_SOFTIRQ", 1 }, { "NET_TX_SOFTIRQ", 2 }, { "NET_RX_SOFTIRQ", 3 },
		{ "BLOCK_SOFTIRQ", 4 }, { "IRQ_POLL_SOFTIRQ", 5 }, { "TASKLET_SOFTIRQ", 6 },
		{ "SCHED_SOFTIRQ", 7 }, { "HRTIMER_SOFTIRQ", 8 }, { "RCU_SOFTIRQ", 9 },
		{ "HRTIMER_NORESTART", 0 }, { "HRTIMER_RESTART", 1 },
	};

	if (isdigit((unsigned char)s[0]))
		return (int64_t)strtoull(s, NULL, 0);
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (!strcmp(known[i].name, s))
			return known[i].v;
	return -1;
}

/* A string through the conversion as written ("%s", "%-16s", "%.*s"). */
static void put_str(struct sbuf *s, const struct piece *pc, int len_arg, const char *str)
{
	char tmp[1024];
	int n;

	if (!strcmp(pc->fmt, "%s")) {
		sb_puts(s, str);
		return;
	}
	/* the piece's format holds only flags, digits, '.', '*' and 's' (checked when parsed) */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
	n = pc->len_arg ? snprintf(tmp, sizeof(tmp), pc->fmt, len_arg, str) : snprintf(tmp, sizeof(tmp), pc->fmt, str);
#pragma GCC diagnostic pop
	if (n > 0)
		sb_put(s, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

static const char *printk_text(const struct ds_tp_set *set, uint64_t addr)
{
	size_t lo = 0, hi = set ? set->nr_printk : 0;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (set->printk[mid].addr == addr)
			return set->printk[mid].text;
		if (set->printk[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* Bytes @p[0..@len) as a C string through the conversion, cut to 1023 bytes. */
static void put_bytes(struct sbuf *s, const struct piece *pc, int len_arg, const uint8_t *p, size_t len)
{
	char buf[1024];

	if (len >= sizeof(buf))
		len = sizeof(buf) - 1;
	memcpy(buf, p, len);
	buf[len] = 0;
	put_str(s, pc, len_arg, buf);
}

/*
 * A field as a string: a pointer-sized scalar is a printk format's address
 * (its text when the tracing data names it, else the address in hex); else
 * the field's bytes, up to its end or the record's.
 */
static void print_field_str(struct ctx *c, struct sbuf *s, const struct piece *pc, int len_arg,
			    const struct tp_field *f)
{
	size_t len;

	if (!f)
		return;
	if (!(f->flags & F_ARRAY) && f->size == (uint32_t)c->ev->long_size) {
		uint64_t addr = read_num(&c->raw, f->offset, f->size);
		const char *text = printk_text(c->ev->set, addr);

		if (text)
			sb_puts(s, text);
		else
			sb_printf(s, "%" PRIx64, addr);
		return;
	}
	if (f->offset > c->raw.size)
		return;
	len = f->size ? f->size : c->raw.size - f->offset;
	if (len > c->raw.size - f->offset)
		len = c->raw.size - f->offset;
	put_bytes(s, pc, len_arg, c->raw.p + f->offset, len);
}

/*
 * __print_flags(): the names of the flags set in the value, joined by the
 * node's delimiter, then what no name covers in hex; a zero value prints
 * the first name whose value is not a number libtraceevent knows.
 */
static void print_flags(struct ctx *c, struct sbuf *s, const struct piece *pc, int len_arg,
			const struct node *n)
{
	uint64_t val = eval_num(c, n->a);
	bool printed = false;

	for (size_t i = 0; i < n->nr_syms; i++) {
		int64_t fv = flag_value(n->syms[i].value);

		if (!val && fv < 0) {
			put_str(s, pc, len_arg, n->syms[i].str);
			break;
		}
		if (fv > 0 && (val & (uint64_t)fv) == (uint64_t)fv) {
			if (printed && n->text)
				sb_puts(s, n->text);
			put_str(s, pc, len_arg, n->syms[i].str);
			printed = true;
			val &= ~(uint64_t)fv;
		}
	}
	if (val) {
		if (printed && n->text)
			sb_puts(s, n->text);
		sb_printf(s, "0x%" PRIx64, val);
	}
}

/* __print_symbolic(): the name of the value, else the value in hex. */
static void print_symbolic(struct ctx *c, struct sbuf *s, const struct piece *pc, int len_arg,
			   const struct node *n)
{
	uint64_t val = eval_num(c, n->a);

	for (size_t i = 0; i < n->nr_syms; i++)
		if ((int64_t)val == flag_value(n->syms[i].value)) {
			put_str(s, pc, len_arg, n->syms[i].str);
			return;
		}
	sb_printf(s, "0x%" PRIx64, val);
}

/* __get_str(): the dynamic string up to its NUL or its end; nothing when empty or outside the record. */
static void print_dynamic_str(struct ctx *c, struct sbuf *s, const struct piece *pc, int len_arg,
			      const struct tp_field *f)
{
	uint32_t o, len;

	if (!f || !dyn_loc(&c->raw, f, &o, &len) || !len)
		return;
	len = (uint32_t)strnlen((const char *)c->raw.p + o, len);
	put_bytes(s, pc, len_arg, c->raw.p + o, len);
}

/* Where an array argument's bytes start: a dynamic array's data or a field's offset (0 if neither). */
static uint32_t array_offset(struct ctx *c, const struct node *arr)
{
	uint32_t o = 0, len;

	if (arr->kind == N_DYNARR && arr->field)
		dyn_loc(&c->raw, arr->field, &o, &len);
	else if (arr->kind == N_FIELD && arr->field)
		o = arr->field->offset;
	return o;
}

/*
 * __print_array(): "{0x1,0x2}", elements of 1, 2, 4 or 8 bytes; another
 * element size prints "BAD SIZE" with one byte per element, as
 * libtraceevent does.  At most 4096 elements.
 */
static void print_int_array(struct ctx *c, struct sbuf *s, const struct node *n)
{
	uint32_t o = array_offset(c, n->a);
	uint64_t cnt = eval_num(c, n->b), el = eval_num(c, n->c);
	uint32_t es = el == 1 || el == 2 || el == 4 || el == 8 ? (uint32_t)el : 1;

	sb_put(s, "{", 1);
	for (uint64_t i = 0; i < cnt && i < 4096; i++) {
		if (i)
			sb_put(s, ",", 1);
		if (es != el)
			sb_printf(s, "BAD SIZE:%" PRIu64 " 0x%" PRIx64, el, read_num(&c->raw, o, 1));
		else
			sb_printf(s, "0x%" PRIx64, read_num(&c->raw, o, es));
		o += es;
	}
	sb_put(s, "}", 1);
}

/* __print_hex() (bytes apart) and __print_hex_str() (bytes together): at most 4096 bytes. */
static void print_hex(struct ctx *c, struct sbuf *s, const struct node *n)
{
	uint32_t o = array_offset(c, n->a);
	uint64_t cnt = eval_num(c, n->b);

	for (uint64_t i = 0; i < cnt && i < 4096; i++) {
		if (i && n->kind == N_HEX)
			sb_put(s, " ", 1);
		sb_printf(s, "%02" PRIx64, read_num(&c->raw, o + i, 1));
	}
}

/*
 * Argument @n printed as a string through @pc.  Nodes nest at most 400
 * deep; past that (hostile formats) it prints nothing, and the depth
 * is not given back: the record's later arguments stop at the guard too.
 */
static void print_str_arg(struct ctx *c, struct sbuf *s, const struct piece *pc, int len_arg, const struct node *n)
{
	if (!n || ++c->depth > 400)
		return;
	switch (n->kind) {
	case N_ATOM:
	case N_STR:
		put_str(s, pc, len_arg, n->text);
		break;
	case N_FIELD:
		print_field_str(c, s, pc, len_arg, n->field);
		break;
	case N_FLAGS:
		print_flags(c, s, pc, len_arg, n);
		break;
	case N_SYMBOL:
		print_symbolic(c, s, pc, len_arg, n);
		break;
	case N_GETSTR:
		print_dynamic_str(c, s, pc, len_arg, n->field);
		break;
	case N_HEX:
	case N_HEXSTR:
		print_hex(c, s, n);
		break;
	case N_INTARR:
		print_int_array(c, s, n);
		break;
	case N_OP:   /* the only operator a string takes: ?: */
		if (n->op[0] == '?' && n->b && n->b->op[0] == ':')
			print_str_arg(c, s, pc, len_arg, eval_num(c, n->a) ? n->b->a : n->b->b);
		break;
	default:   /* casts, other operators, bare dynamic arrays: nothing */
		break;
	}
	c->depth--;
}

static void print_num(struct ctx *c, struct sbuf *s, const struct piece *pc, int len_arg)
{
	uint64_t v = eval_num(c, pc->arg);
	char fmt[40];
	size_t fl = strlen(pc->fmt);
	long long sv;
	unsigned long long uv;

	/* the conversion without its length modifiers, then "ll" and the conversion */
	size_t k = 0;

	for (size_t i = 0; i + 1 < fl; i++)
		if (!strchr("hlLzZjt", pc->fmt[i]))
			fmt[k++] = pc->fmt[i];
	fmt[k++] = 'l';
	fmt[k++] = 'l';
	fmt[k++] = pc->conv;
	fmt[k] = 0;
	switch (pc->ls) {
	case -2: sv = (signed char)v; uv = (unsigned char)v; break;
	case -1: sv = (short)v; uv = (unsigned short)v; break;
	case 0: sv = (int)v; uv = (unsigned int)v; break;
	default: sv = (long long)v; uv = v; break;
	}
	if (pc->conv == 'c') {
		char ch[2] = { (char)v, 0 };
		struct piece p2 = *pc;

		strcpy(p2.fmt, "%s");
		put_str(s, &p2, len_arg, ch);
		return;
	}
	char tmp[128];
	int n;

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
	if (pc->conv == 'd' || pc->conv == 'i')
		n = pc->len_arg ? snprintf(tmp, sizeof(tmp), fmt, len_arg, sv) : snprintf(tmp, sizeof(tmp), fmt, sv);
	else
		n = pc->len_arg ? snprintf(tmp, sizeof(tmp), fmt, len_arg, uv) : snprintf(tmp, sizeof(tmp), fmt, uv);
#pragma GCC diagnostic pop
	if (n > 0)
		sb_put(s, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

static void print_ptr(struct ctx *c, struct sbuf *s, const struct piece *pc)
{
	const char *p = strchr(pc->fmt, 'p');
	char ext = p ? p[1] : 0;
	uint64_t v;

	if (pc->arg && pc->arg->kind == N_STR) {
		sb_puts(s, pc->arg->text);
		return;
	}
	v = eval_num(c, pc->arg);
	if (ext == 'S' || ext == 's' || ext == 'F' || ext == 'f') {
		uint64_t start = 0;
		const char *sym = c->resolve ? c->resolve(c->rctx, v, &start) : NULL;

		if (sym) {
			sb_puts(s, sym);
			if (ext == 'S' || ext == 'F')
				sb_printf(s, "+0x%" PRIx64, v - start);
		} else if (c->ev->long_size == 4) {
			sb_printf(s, "0x%" PRIx32, (uint32_t)v);
		} else {
			sb_printf(s, "0x%" PRIx64, v);
		}
		return;
	}
	if (!v)
		sb_puts(s, "(nil)");
	else
		sb_printf(s, "0x%" PRIx64, v);
}

/* ---- print fmt: the format string -------------------------------------- */

static bool add_piece(struct ds_tp_event *ev, const struct piece *p)
{
	struct piece *n = realloc(ev->pieces, (ev->nr_pieces + 1) * sizeof(*n));

	if (!n)
		return false;
	ev->pieces = n;
	ev->pieces[ev->nr_pieces++] = *p;
	return true;
}

/* Literal text up to the next conversion, with its escapes as printf would read them. */
static bool add_text(struct ds_tp_event *ev, const char *f, size_t *i)
{
	size_t cap = strlen(f + *i) + 1, len = 0;
	char *t = malloc(cap);
	struct piece pc = { .kind = P_TEXT };

	if (!t)
		return false;
	while (f[*i]) {
		char ch = f[*i];

		if (ch == '\\' && f[*i + 1]) {
			char e = f[++*i];

			t[len++] = e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e;
		} else if (ch == '%') {
			if (f[*i + 1] != '%')
				break;
			t[len++] = '%';
			++*i;
		} else {
			t[len++] = ch;
		}
		++*i;
	}
	t[len] = 0;
	pc.text = t;
	if (!add_piece(ev, &pc)) {
		free(t);
		return false;
	}
	return true;
}

/*
 * The flags, width, precision and length modifiers after the '%' at
 * fmt[*i], up to the conversion character (*i then on it): pc->ls counts
 * the l's less the h's, a '*' takes the next argument as pc->len_arg.
 * False when the format ends first, or at a second '*' or one without its
 * argument.
 */
static bool parse_conv_modifiers(const char *fmt, size_t *i, struct piece *pc, struct node **args,
				 size_t nr_args, size_t *ai)
{
	for (++*i; fmt[*i]; ++*i) {
		char ch = fmt[*i];

		if (ch == 'h')
			pc->ls--;
		else if (ch == 'l')
			pc->ls++;
		else if (ch == 'L')
			pc->ls = 2;
		else if (ch == 'z' || ch == 'Z')
			pc->ls = 1;
		else if (ch == '*') {
			if (*ai >= nr_args || pc->len_arg)
				return false;
			pc->len_arg = args[(*ai)++];
		} else if (!strchr("#.0123456789-+ ", ch))
			break;
	}
	return fmt[*i] != 0;
}

/*
 * A width or precision over 9999, written in @fmt or given by a '*'
 * argument, made 9999: a conversion prints at most 1023 characters here
 * (put_str's, print_num's buffers) either way, and snprintf spends seconds
 * padding a hostile "%999999999d" into them.
 */
enum { MAX_WIDTH = 9999 };

static void cap_widths(char *fmt)
{
	char *out = fmt;

	for (const char *p = fmt; *p;) {
		size_t n = *p >= '1' && *p <= '9' ? strspn(p, "0123456789") : 0;

		if (n > 4) {
			memcpy(out, "9999", 4);
			out += 4;
			p += n;
		} else if (n) {
			memmove(out, p, n);
			out += n;
			p += n;
		} else {
			*out++ = *p++;
		}
	}
	*out = 0;
}

static int cap_width_arg(int w)
{
	return w > MAX_WIDTH ? MAX_WIDTH : w < -MAX_WIDTH ? -MAX_WIDTH : w;
}

/* libtraceevent prints an unknown conversion @conv as ">c<" and takes no argument. */
static bool add_unknown_conversion(struct ds_tp_event *ev, char conv)
{
	struct piece t = { .kind = P_TEXT };
	char txt[4] = { '>', conv, '<', 0 };

	if (!(t.text = strdup(txt)) || !add_piece(ev, &t)) {
		free(t.text);
		return false;
	}
	return true;
}

/*
 * The print fmt's format string into ev->pieces: literal text, and one
 * piece per conversion with its argument from @args.  False when it cannot
 * be rendered as libtraceevent would (then the raw fields are printed).
 */
static bool parse_print_fmt(struct ds_tp_event *ev, const char *fmt, struct node **args, size_t nr_args)
{
	size_t ai = 0, i = 0;

	while (fmt[i]) {
		struct piece pc = { .kind = P_NUM };
		size_t start = i, fl;

		if (fmt[i] != '%' || fmt[i + 1] == '%') {
			if (!add_text(ev, fmt, &i))
				return false;
			continue;
		}
		if (!parse_conv_modifiers(fmt, &i, &pc, args, nr_args, &ai))
			return false;
		pc.conv = fmt[i];
		if (pc.conv == 'p') {
			pc.kind = P_PTR;
			if (fmt[i + 1] && strchr("FfSs", fmt[i + 1]))
				i++;
			else if (isalpha((unsigned char)fmt[i + 1]))
				return false;   /* %pM, %pI4, %pU...: not rendered here: raw fields instead */
		} else if (pc.conv == 's') {
			pc.kind = P_STR;
		} else if (!strchr("cduixXo", pc.conv)) {
			if (!add_unknown_conversion(ev, pc.conv))
				return false;
			i++;
			continue;
		}
		if (pc.ls < -2 || pc.ls > 2 || ai >= nr_args)
			return false;
		fl = i + 1 - start;
		if (fl >= sizeof(pc.fmt))
			return false;
		memcpy(pc.fmt, fmt + start, fl);
		pc.fmt[fl] = 0;
		cap_widths(pc.fmt);
		if (pc.kind == P_STR && strchr(pc.fmt, '#'))
			return false;
		pc.arg = args[ai++];
		i++;
		if (!add_piece(ev, &pc))
			return false;
	}
	return true;
}

static void parse_print(struct ds_tp_event *ev, const char *text, size_t len)
{
	struct parser ps = { .ev = ev };
	struct node **args = NULL;
	size_t nr = 0;
	char *fmt;

	ps.lx.p = text;
	ps.lx.end = text + len;
	lex_next(&ps.lx);
	if (ps.lx.kind != T_STR) {
		ev->failed = true;
		return;
	}
	fmt = take_string(&ps);
	while (!ps.failed && fmt && is_op(&ps.lx, ",")) {
		struct node **na = realloc(args, (nr + 1) * sizeof(*na));

		if (!na) {
			ps.failed = true;
			break;
		}
		args = na;
		lex_next(&ps.lx);
		args[nr] = p_full(&ps);
		if (!args[nr])
			ps.failed = true;
		nr++;
	}
	if (ps.lx.kind != T_END)
		ps.failed = true;
	if (ps.failed || !fmt || !parse_print_fmt(ev, fmt, args, nr))
		ev->failed = true;
	free(fmt);
	free(args);
}

/* ---- events ------------------------------------------------------------ */

void ds_tp_event__delete(struct ds_tp_event *ev)
{
	if (!ev)
		return;
	for (size_t i = 0; i < ev->nr_fields; i++) {
		free(ev->fields[i].name);
		free(ev->fields[i].type);
	}
	free(ev->fields);
	for (size_t i = 0; i < ev->nr_pieces; i++)
		free(ev->pieces[i].text);
	free(ev->pieces);
	for (struct node *n = ev->nodes, *next; n; n = next) {
		next = n->all;
		for (size_t i = 0; i < n->nr_syms; i++) {
			free(n->syms[i].value);
			free(n->syms[i].str);
		}
		free(n->syms);
		free(n->text);
		free(n);
	}
	free(ev->system);
	free(ev->name);
	free(ev);
}

struct ds_tp_event *ds_tp_event__parse(const char *system, const char *text, size_t len, int long_size)
{
	struct ds_tp_event *ev = calloc(1, sizeof(*ev));
	const char *p = text, *end = text + len, *print = NULL;
	bool common = true;

	if (!ev)
		return NULL;
	ev->long_size = long_size == 4 ? 4 : 8;
	ev->system = strdup(system ? system : "");
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end, *s = p;

		while (s < le && (*s == ' ' || *s == '\t'))
			s++;
		if (s == le && ev->nr_fields)
			common = false;   /* the blank line after the common fields */
		if (le - s > 6 && !memcmp(s, "name: ", 6) && !ev->name) {
			ev->name = xstrndup(s + 6, (size_t)(le - s - 6));
		} else if (le - s > 4 && !memcmp(s, "ID: ", 4)) {
			ev->id = strtoull(s + 4, NULL, 0);
		} else if (le - s > 6 && !memcmp(s, "field:", 6)) {
			struct tp_field f = { .common = common };
			struct tp_field *nf;

			if (!parse_field_line(s, (size_t)(le - s), &f) ||
			    !(nf = realloc(ev->fields, (ev->nr_fields + 1) * sizeof(*nf)))) {
				free(f.name);
				free(f.type);
				ds_tp_event__delete(ev);
				return NULL;
			}
			if (f.name && strncmp(f.name, "common_", 7))
				f.common = false;
			ev->fields = nf;
			ev->fields[ev->nr_fields++] = f;
		} else if (le - s > 10 && !memcmp(s, "print fmt:", 10)) {
			print = s + 10;
			break;   /* the print fmt runs to the end */
		}
		p = nl ? nl + 1 : end;
	}
	if (!ev->name || !ev->system || !ev->nr_fields) {
		ds_tp_event__delete(ev);
		return NULL;
	}
	if (print) {
		const char *pe = end;

		while (pe > print && isspace((unsigned char)pe[-1]))
			pe--;
		parse_print(ev, print, (size_t)(pe - print));
	} else {
		ev->failed = true;
	}
	return ev;
}

const char *ds_tp_event__system(const struct ds_tp_event *ev) { return ev->system; }
const char *ds_tp_event__name(const struct ds_tp_event *ev) { return ev->name; }
uint64_t ds_tp_event__id(const struct ds_tp_event *ev) { return ev->id; }
bool ds_tp_event__printable(const struct ds_tp_event *ev) { return !ev->failed; }

static bool printable_array(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len && p[i]; i++)
		if (!isprint(p[i]) && !isspace(p[i]))
			return false;
	return true;
}

/* A field as libtraceevent prints it when the print fmt is not used. */
static void print_field_raw(struct ctx *c, struct sbuf *s, const struct tp_field *f)
{
	const struct raw *r = &c->raw;

	if (f->flags & F_ARRAY || f->flags & F_DYNAMIC) {
		uint32_t off = f->offset, len = f->size;

		if (f->flags & F_DYNAMIC)
			dyn_loc(r, f, &off, &len);
		if (off > r->size || len > r->size - off) {
			off = 0;
			len = 0;
		}
		if ((f->flags & F_STRING) && printable_array(r->p + off, len)) {
			sb_put(s, (const char *)r->p + off, strnlen((const char *)r->p + off, len));
		} else {
			sb_puts(s, "ARRAY[");
			for (uint32_t i = 0; i < len; i++)
				sb_printf(s, i ? ", %02x" : "%02x", r->p[off + i]);
			sb_puts(s, "]");
		}
		return;
	}
	uint64_t v = read_num(r, f->offset, f->size);

	if (f->flags & F_POINTER)
		sb_printf(s, "0x%" PRIx64, v);
	else if (f->flags & F_SIGNED) {
		switch (f->size) {
		case 4:
			if (f->flags & F_LONG)
				sb_printf(s, "0x%x", (unsigned)(int)v);
			else
				sb_printf(s, "%d", (int)v);
			break;
		case 2: sb_printf(s, "%2d", (short)v); break;
		case 1: sb_printf(s, "%1d", (signed char)v); break;
		default: sb_printf(s, "%lld", (long long)v); break;
		}
	} else if (f->flags & F_LONG) {
		sb_printf(s, "0x%" PRIx64, v);
	} else {
		sb_printf(s, "%" PRIu64, v);
	}
}

size_t ds_tp_event__format(const struct ds_tp_event *ev, const void *raw, size_t raw_size,
			   ds_tp_resolve_fn resolve, void *rctx, char *buf, size_t cap)
{
	struct sbuf s = { buf, cap ? cap - 1 : 0, 0 };
	struct ctx c = { .ev = ev, .raw = { raw ? raw : (const void *)"", raw ? raw_size : 0, ev->swap }, .resolve = resolve, .rctx = rctx };

	if (ev->failed) {
		sb_puts(&s, "[FAILED TO PARSE]");
		for (size_t i = 0; i < ev->nr_fields; i++) {
			if (ev->fields[i].common)
				continue;
			sb_printf(&s, " %s=", ev->fields[i].name);
			print_field_raw(&c, &s, &ev->fields[i]);
		}
	} else {
		for (size_t i = 0; i < ev->nr_pieces; i++) {
			const struct piece *pc = &ev->pieces[i];
			int len_arg = pc->len_arg ? cap_width_arg((int)eval_num(&c, pc->len_arg)) : -1;

			switch (pc->kind) {
			case P_TEXT: sb_puts(&s, pc->text); break;
			case P_NUM: print_num(&c, &s, pc, len_arg); break;
			case P_PTR: print_ptr(&c, &s, pc); break;
			case P_STR: print_str_arg(&c, &s, pc, len_arg, pc->arg); break;
			}
		}
	}
	if (cap)
		buf[s.len < cap ? s.len : cap - 1] = 0;
	return s.len;
}

static const struct tp_field *field_named(const struct ds_tp_event *ev, const char *name)
{
	return find_field(ev, name, strlen(name));
}

bool ds_tp_event__field_u64(const struct ds_tp_event *ev, const char *name, const void *raw,
			    size_t raw_size, uint64_t *val)
{
	const struct tp_field *f = field_named(ev, name);
	struct raw r = { raw, raw_size, ev->swap };

	if (!f || (f->flags & (F_ARRAY | F_DYNAMIC)) || f->offset > raw_size || f->size > raw_size - f->offset ||
	    (f->size != 1 && f->size != 2 && f->size != 4 && f->size != 8))
		return false;
	*val = read_num(&r, f->offset, f->size);
	if ((f->flags & F_SIGNED) && f->size < 8 && (*val >> (f->size * 8 - 1)) & 1)
		*val |= ~0ULL << (f->size * 8);
	return true;
}

bool ds_tp_event__field_str(const struct ds_tp_event *ev, const char *name, const void *raw,
			    size_t raw_size, char *buf, size_t cap)
{
	const struct tp_field *f = field_named(ev, name);
	size_t n;

	if (!f || !cap || !(f->flags & F_ARRAY) || (f->flags & F_DYNAMIC) || f->offset > raw_size ||
	    f->size > raw_size - f->offset)
		return false;
	n = strnlen((const char *)raw + f->offset, f->size);
	if (n >= cap)
		n = cap - 1;
	memcpy(buf, (const char *)raw + f->offset, n);
	buf[n] = 0;
	return true;
}

/* ---- the tracing-data blob --------------------------------------------- */

struct blob {
	const uint8_t *p;
	size_t len, pos;
	bool swap;
	char *err;
	size_t errlen;
};

__attribute__((format(printf, 2, 3)))
static bool blob_fail(struct blob *b, const char *fmt, ...)
{
	char what[200];
	va_list ap;

	if (!b->errlen)
		return false;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	snprintf(b->err, b->errlen, "offset %#zx in the tracing data: %s", b->pos, what);
	return false;
}

static bool blob_num(struct blob *b, size_t size, uint64_t *v)
{
	struct raw r = { b->p, b->len, b->swap };

	if (b->len - b->pos < size)
		return blob_fail(b, "%zu-byte number past the end (%zu bytes)", size, b->len);
	*v = read_num(&r, b->pos, (uint32_t)size);
	b->pos += size;
	return true;
}

static bool blob_string(struct blob *b, const char **s)
{
	const uint8_t *nul = memchr(b->p + b->pos, 0, b->len - b->pos);

	if (!nul)
		return blob_fail(b, "unterminated string");
	*s = (const char *)b->p + b->pos;
	b->pos = (size_t)(nul - b->p) + 1;
	return true;
}

/* A u64 size and that many bytes: *p, *n. */
static bool blob_chunk(struct blob *b, const uint8_t **p, size_t *n)
{
	uint64_t sz = 0;

	if (!blob_num(b, 8, &sz))
		return false;
	if (sz > b->len - b->pos) {
		b->pos -= 8;
		return blob_fail(b, "section of %" PRIu64 " bytes past the end (%zu bytes)", sz, b->len);
	}
	*p = b->p + b->pos;
	*n = (size_t)sz;
	b->pos += (size_t)sz;
	return true;
}

void ds_tp_set__delete(struct ds_tp_set *set)
{
	if (!set)
		return;
	for (size_t i = 0; i < set->nr_events; i++)
		ds_tp_event__delete(set->events[i]);
	for (size_t i = 0; i < set->nr_printk; i++)
		free(set->printk[i].text);
	free(set->printk);
	free(set->events);
	dsi_hashmap__exit(&set->by_id);
	free(set);
}

static bool set_add(struct ds_tp_set *set, struct ds_tp_event *ev)
{
	struct ds_tp_event **n = realloc(set->events, (set->nr_events + 1) * sizeof(*n));

	if (!n)
		return false;
	set->events = n;
	if (dsi_hashmap__set(&set->by_id, ev->id, set->nr_events))
		return false;
	set->events[set->nr_events++] = ev;
	return true;
}

static int printk_cmp(const void *a, const void *b)
{
	const struct printk_fmt *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/*
 * Lines "ADDR : \"text\"": the strings trace_printk-style events point to
 * (rcu_utilization's "Start context switch"), kept as libtraceevent keeps
 * them: the quotes and a final "\n" dropped.
 */
static void parse_printk(struct ds_tp_set *set, const char *p, size_t len)
{
	const char *end = p + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *le = nl ? nl : end;
		const char *colon = memchr(p, ':', (size_t)(le - p));
		struct printk_fmt *n;

		if (colon && le - colon >= 2) {
			const char *t = colon + 2, *te = le;
			char num[24];
			size_t nl2 = (size_t)(colon - p) < sizeof(num) - 1 ? (size_t)(colon - p) : sizeof(num) - 1;

			memcpy(num, p, nl2);
			num[nl2] = 0;
			if (t < te && *t == '"')
				t++;
			if (te > t && te[-1] == '"')
				te--;
			if (te - t >= 2 && te[-2] == '\\' && te[-1] == 'n')
				te -= 2;
			n = realloc(set->printk, (set->nr_printk + 1) * sizeof(*n));
			if (!n)
				break;
			set->printk = n;
			n[set->nr_printk].addr = strtoull(num, NULL, 16);
			if (!(n[set->nr_printk].text = xstrndup(t, (size_t)(te - t))))
				break;
			set->nr_printk++;
		}
		p = nl ? nl + 1 : end;
	}
	if (set->nr_printk)
		qsort(set->printk, set->nr_printk, sizeof(*set->printk), printk_cmp);
}

/*
 * The tracing data's head: magic, version, byte order (into b->swap), long
 * size (4 or 8, into *long_size), page size, and the header_page and
 * header_event sections (skipped).  False, b's error set, when malformed.
 */
static bool read_set_head(struct blob *b, int *long_size)
{
	static const uint8_t magic[10] = { 0x17, 0x08, 0x44, 't', 'r', 'a', 'c', 'i', 'n', 'g' };
	const char *version = NULL, *s = NULL;
	const uint8_t *chunk;
	size_t clen;
	uint64_t v;

	if (b->len < sizeof(magic) || memcmp(b->p, magic, sizeof(magic)))
		return blob_fail(b, "no tracing-data magic");
	b->pos = sizeof(magic);
	if (!blob_string(b, &version) || b->len - b->pos < 6) {
		if (b->len - b->pos < 6)
			blob_fail(b, "header cut short");
		return false;
	}
	b->swap = b->p[b->pos] != (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__);
	*long_size = b->p[b->pos + 1];
	b->pos += 2;
	if (*long_size != 4 && *long_size != 8)
		return blob_fail(b, "long size %d is neither 4 nor 8", *long_size);
	if (!blob_num(b, 4, &v))   /* page size */
		return false;
	/* header_page, header_event: a name and a section each */
	for (int i = 0; i < 2; i++)
		if (!blob_string(b, &s) || !blob_chunk(b, &chunk, &clen))
			return false;
	return true;
}

/* ftrace's own events' formats: skipped.  False when malformed. */
static bool skip_ftrace_formats(struct blob *b)
{
	const uint8_t *chunk;
	size_t clen;
	uint64_t nev;

	if (!blob_num(b, 4, &nev))
		return false;
	for (uint64_t i = 0; i < nev; i++)
		if (!blob_chunk(b, &chunk, &clen))
			return false;
	return true;
}

/*
 * The systems' event formats into @set; a format that cannot be read is
 * left out (its samples print no fields).  False, b's error set, when
 * malformed or out of memory.
 */
static bool read_system_formats(struct blob *b, struct ds_tp_set *set, int long_size)
{
	const uint8_t *chunk;
	size_t clen;
	uint64_t nsys, nev;

	if (!blob_num(b, 4, &nsys))
		return false;
	for (uint64_t i = 0; i < nsys; i++) {
		const char *sys = NULL;

		if (!blob_string(b, &sys) || !blob_num(b, 4, &nev))
			return false;
		for (uint64_t j = 0; j < nev; j++) {
			struct ds_tp_event *ev;

			if (!blob_chunk(b, &chunk, &clen))
				return false;
			ev = ds_tp_event__parse(sys, (const char *)chunk, clen, long_size);
			if (!ev)
				continue;
			ev->swap = b->swap;
			ev->set = set;
			if (!set_add(set, ev)) {
				ds_tp_event__delete(ev);
				return blob_fail(b, "out of memory");
			}
		}
	}
	return true;
}

/* kallsyms (not used: perf resolves through its own kernel map), then the printk formats; both optional. */
static void read_printk_formats(struct blob *b, struct ds_tp_set *set)
{
	uint64_t v;

	if (b->len - b->pos >= 4 && blob_num(b, 4, &v) && v <= b->len - b->pos) {
		b->pos += (size_t)v;
		if (b->len - b->pos >= 4 && blob_num(b, 4, &v) && v <= b->len - b->pos)
			parse_printk(set, (const char *)b->p + b->pos, (size_t)v);
	}
}

struct ds_tp_set *ds_tp_set__parse(const void *data, size_t len)
{
	char err[256] = "";
	struct blob b = { data, len, 0, false, err, sizeof(err) };
	struct ds_tp_set *set = calloc(1, sizeof(*set));
	int long_size = 0;

	if (!set) {
		dsi_error(-ENOMEM, "out of memory");
		return NULL;
	}
	dsi_hashmap__init(&set->by_id);
	if (!read_set_head(&b, &long_size) || !skip_ftrace_formats(&b) ||
	    !read_system_formats(&b, set, long_size)) {
		ds_tp_set__delete(set);
		dsi_error(-EBADMSG, "%s", err[0] ? err : "the tracing data cannot be read");
		errno = EBADMSG;
		return NULL;
	}
	read_printk_formats(&b, set);
	return set;
}

const struct ds_tp_event *ds_tp_set__find(const struct ds_tp_set *set, uint64_t id)
{
	const uint64_t *idx = set ? dsi_hashmap__find(&set->by_id, id) : NULL;

	return idx ? set->events[*idx] : NULL;
}

size_t ds_tp_set__nr_events(const struct ds_tp_set *set)
{
	return set ? set->nr_events : 0;
}

/* ---- recording: tracefs ------------------------------------------------ */

static const char *const tracefs_dirs[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };

/* A tracefs file whole (they are small): malloc'd, NULL and errno if none. */
static char *tracefs_read(const char *rel, size_t *len)
{
	for (size_t d = 0; d < sizeof(tracefs_dirs) / sizeof(tracefs_dirs[0]); d++) {
		char path[512];
		FILE *f;
		char *buf = NULL;
		size_t cap = 0, n = 0, got;

		snprintf(path, sizeof(path), "%s/%s", tracefs_dirs[d], rel);
		f = fopen(path, "re");
		if (!f)
			continue;
		do {
			if (n == cap) {
				char *nb = dsi_grow(buf, &cap, cap + 1, 1, 4096);

				if (!nb) {
					free(buf);
					fclose(f);
					errno = ENOMEM;
					return NULL;
				}
				buf = nb;
			}
			got = fread(buf + n, 1, cap - n, f);
			n += got;
		} while (got && n < (64u << 20));
		fclose(f);
		*len = n;
		return buf;
	}
	errno = ENOENT;
	return NULL;
}

int ds_tracefs__event_id(const char *sys, const char *name, uint64_t *id)
{
	char rel[256], *text;
	size_t len;

	snprintf(rel, sizeof(rel), "events/%s/%s/id", sys, name);
	text = tracefs_read(rel, &len);
	if (!text)
		return dsi_error(-errno, "tracefs %s: %s", rel, strerror(errno));
	text[len ? len - 1 : 0] = 0;
	*id = strtoull(text, NULL, 10);
	free(text);
	return *id ? 0 : dsi_error(-EINVAL, "tracefs %s: not an event id", rel);
}

struct out {
	uint8_t *p;
	size_t len, cap;
	bool failed;
};

static void out_put(struct out *o, const void *p, size_t n)
{
	if (o->failed)
		return;
	uint8_t *np = n <= SIZE_MAX - o->len ? dsi_grow(o->p, &o->cap, o->len + n, 1, 256) : NULL;

	if (!np) {
		o->failed = true;
		return;
	}
	o->p = np;
	memcpy(o->p + o->len, p, n);
	o->len += n;
}

static void out_u32(struct out *o, uint32_t v) { out_put(o, &v, 4); }
static void out_u64(struct out *o, uint64_t v) { out_put(o, &v, 8); }

/* "name\0", u64 size, the tracefs file's bytes */
static bool out_file(struct out *o, const char *name, const char *rel)
{
	size_t len;
	char *text = tracefs_read(rel, &len);

	if (!text)
		return false;
	if (name)
		out_put(o, name, strlen(name) + 1);
	out_u64(o, len);
	out_put(o, text, len);
	free(text);
	return true;
}

void *ds_tracefs__tracing_data(const char *const *events, size_t nr, size_t *len)
{
	struct out o = { 0 };
	uint8_t endian = __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__, lsize = (uint8_t)sizeof(long);
	uint32_t nsys = 0;
	char rel[256];

	out_put(&o, "\x17\x08\x44tracing0.6", 14);
	out_put(&o, &endian, 1);
	out_put(&o, &lsize, 1);
	out_u32(&o, 4096);
	if (!out_file(&o, "header_page", "events/header_page") || !out_file(&o, "header_event", "events/header_event"))
		goto fail;
	out_u32(&o, 0);   /* no ftrace events */
	/* the systems: each event's, in the order first named */
	for (size_t i = 0; i < nr; i++) {
		const char *c = strchr(events[i], ':');
		bool seen = false;

		for (size_t j = 0; c && j < i; j++)
			seen |= !strncmp(events[j], events[i], (size_t)(c - events[i]) + 1);
		nsys += c && !seen;
	}
	out_u32(&o, nsys);
	for (size_t i = 0; i < nr; i++) {
		const char *c = strchr(events[i], ':');
		size_t sl = c ? (size_t)(c - events[i]) : 0;
		bool seen = false;
		uint32_t count = 0;

		for (size_t j = 0; c && j < i; j++)
			seen |= !strncmp(events[j], events[i], sl + 1);
		if (!c || seen)
			continue;
		out_put(&o, events[i], sl);
		out_put(&o, "", 1);
		for (size_t j = i; j < nr; j++)
			count += !strncmp(events[j], events[i], sl + 1);
		out_u32(&o, count);
		for (size_t j = i; j < nr; j++) {
			if (strncmp(events[j], events[i], sl + 1))
				continue;
			snprintf(rel, sizeof(rel), "events/%.*s/%s/format", (int)sl, events[j], events[j] + sl + 1);
			if (!out_file(&o, NULL, rel))
				goto fail;
		}
	}
	out_u32(&o, 0);   /* kallsyms: perf resolves through its own kernel map */
	out_u32(&o, 0);   /* printk formats */
	out_u64(&o, 0);   /* saved cmdlines */
	if (o.failed) {
		errno = ENOMEM;
		goto fail;
	}
	*len = o.len;
	return o.p;
fail:
	{
		int e = errno ? errno : EIO;

		dsi_error(-e, "cannot read the tracepoint formats from tracefs: %s", strerror(e));
		free(o.p);
		errno = e;
	}
	return NULL;
}
