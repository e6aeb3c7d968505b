// SPDX-License-Identifier: MIT
/*
 * Shared pieces of the symbol loaders: string interning (with C++
 * demangling), perf's end fix-up and duplicate elimination, and lookup in a
 * sorted symbol array.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <elf.h>
#include <libiberty/demangle.h>

#include "util/io.h"
#include "util/grow.h"
#include "symbols/symbols_int.h"


struct ds_istr {
	struct ds_istr *next_hash;   /* same hash bucket */
	struct ds_istr *next_all;
	size_t len;
	char str[];
};

static uint64_t str_hash(const char *s, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL;   /* FNV-1a, finished by splitmix */

	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3ULL;
	return dsi_hash64(h);
}

const char *dsi_intern__str(struct ds_intern *in, const char *s, size_t len)
{
	uint64_t h = str_hash(s, len);
	uint64_t *slot = dsi_hashmap__find(&in->map, h);
	struct ds_istr *is;

	for (is = slot ? (struct ds_istr *)(uintptr_t)*slot : NULL; is; is = is->next_hash)
		if (is->len == len && !memcmp(is->str, s, len))
			return is->str;
	is = malloc(sizeof(*is) + len + 1);
	if (!is)
		return NULL;
	memcpy(is->str, s, len);
	is->str[len] = '\0';
	is->len = len;
	is->next_hash = slot ? (struct ds_istr *)(uintptr_t)*slot : NULL;
	if (dsi_hashmap__set(&in->map, h, (uint64_t)(uintptr_t)is)) {
		free(is);
		return NULL;
	}
	is->next_all = in->all;
	in->all = is;
	return is->str;
}

/*
 * perf calls the __cxa_demangle of the libstdc++ it runs with; that is
 * libiberty's v3 demangler with these options.  bookworm's libstdc++
 * (GCC 12) prints C++20's requires-clauses and operators in template
 * arguments otherwise than newer ones do; its libiberty (GCC 13's) prints
 * what Debian sid's libstdc++ (GCC 16), perf 7.2's, prints.
 */
char *dsi_demangle_cxx(const char *s)
{
	return cplus_demangle_v3(s, DMGL_PARAMS | DMGL_TYPES);
}

char *dsi_demangle(const char *s)
{
	char *dm;

	/* perf tries Rust's schemes first ("_R", and "_ZN...E" with no parameters after) */
	if (!strncmp(s, "_R", 2) || !strncmp(s, "_ZN", 3)) {
		dm = dsi_demangle_rust(s);
		if (dm || s[1] == 'R')
			return dm;
	}
	/* perf only hands "_Z" names to the C++ demangler */
	return strncmp(s, "_Z", 2) ? NULL : dsi_demangle_cxx(s);
}

const char *dsi_intern__sym(struct ds_intern *in, const char *s, bool demangle)
{
	const char *ret;
	char *dm = demangle ? dsi_demangle(s) : NULL;

	if (!dm)
		return dsi_intern__str(in, s, strlen(s));
	ret = dsi_intern__str(in, dm, strlen(dm));
	free(dm);
	return ret;
}

/* ---- strings owned by an image ---------------------------------------- */

#define STRBLOCK_SIZE (64u << 10)   /* a bigger string gets a block of its own */

struct ds_strblock {
	struct ds_strblock *next;
	size_t used, cap;
	char data[];
};

const char *dsi_strblock__add(struct ds_strblock **blocks, const char *s, size_t len)
{
	struct ds_strblock *b = *blocks;
	char *dst;

	if (!b || b->cap - b->used < len + 1) {
		size_t cap = len + 1 > STRBLOCK_SIZE ? len + 1 : STRBLOCK_SIZE;

		b = malloc(sizeof(*b) + cap);
		if (!b)
			return NULL;
		b->next = *blocks;
		b->used = 0;
		b->cap = cap;
		*blocks = b;
	}
	dst = b->data + b->used;
	memcpy(dst, s, len);
	dst[len] = '\0';
	b->used += len + 1;
	return dst;
}

void dsi_strblock__free(struct ds_strblock **blocks)
{
	while (*blocks) {
		struct ds_strblock *next = (*blocks)->next;

		free(*blocks);
		*blocks = next;
	}
}

void dsi_intern__exit(struct ds_intern *in)
{
	while (in->all) {
		struct ds_istr *next = in->all->next_all;

		free(in->all);
		in->all = next;
	}
	dsi_hashmap__exit(&in->map);
}

/* ---- perf's symbol fix-ups -------------------------------------------- */

static int rawsym_cmp(const void *pa, const void *pb)
{
	const struct ds_rawsym *a = pa, *b = pb;

	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	/* perf's rbtree puts equal starts in insertion order */
	return a->order < b->order ? -1 : a->order > b->order;
}

static int underscores(const char *s)
{
	int n = 0;

	while (s[n] == '_')
		n++;
	return n;
}

/* perf's choose_best_symbol() on names as printed: true if @a beats @b (a came first). */
static bool first_is_best_named(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);

	if (underscores(a) != underscores(b))
		return underscores(a) < underscores(b);
	return la != lb ? la > lb : true;
}

/* perf's choose_best_symbol(): true if @a beats @b (a came first). */
static bool first_is_best(const struct ds_rawsym *a, const struct ds_rawsym *b)
{
	if ((a->size > 0) != (b->size > 0))
		return a->size > 0;
	if ((a->bind == STB_WEAK) != (b->bind == STB_WEAK))
		return b->bind == STB_WEAK;
	if ((a->bind == STB_GLOBAL) != (b->bind == STB_GLOBAL))
		return a->bind == STB_GLOBAL;
	if (!a->demangle && !b->demangle)
		return first_is_best_named(a->name, b->name);
	/* perf compares the demangled names: made for this rare tie only */
	char *da = a->demangle ? dsi_demangle(a->name) : NULL, *db = b->demangle ? dsi_demangle(b->name) : NULL;
	bool best = first_is_best_named(da ? da : a->name, db ? db : b->name);

	free(da);
	free(db);
	return best;
}

/* Zero-sized symbols end where the next one starts (symbols__fixup_end). */
static void fixup_end(struct ds_rawsym *raw, size_t nr)
{
	for (size_t i = 0; i + 1 < nr; i++)
		if (raw[i].size == 0)
			raw[i].size = raw[i + 1].start - raw[i].start;
	if (nr && raw[nr - 1].size == 0) {
		uint64_t s = raw[nr - 1].start;

		/* the last one: up to one page past its page, not to infinity */
		raw[nr - 1].size = ((s + 4095) & ~4095ULL) + 4096 - s;
	}
}

static bool a2l_is_func(uint8_t type)
{
	return type == STT_FUNC || type == STT_GNU_IFUNC;
}

/*
 * binutils' addr2line, for an address no DWARF function covers, names the
 * symbol that starts nearest below it (elf_find_function's better_fit, for
 * an address at the start): among those of one start, in symbol-table
 * order, one of size 0 gives way to a sized one (Go's runtime.text to
 * internal/cpu.Initialize), a sized one to a smaller one, and of one size
 * a function comes before anything else, then the first.  @r starts a
 * group of its start (the lowest order: the sort is by start, then order).
 */
static void a2l_take(struct ds_a2l_pick *p, const struct ds_rawsym *r)
{
	*p = (struct ds_a2l_pick){ .name = r->name, .raw = r->raw, .demangle = r->demangle, .type = r->type,
				   .size = r->elf_size };
}

static void a2l_first(struct ds_rawsym *r)
{
	a2l_take(&r->a2l, r);
	r->a2l0 = r->a2l;
}

/* bfd's size of a symbol: 0 is taken as 1 */
static uint64_t a2l_len(uint64_t size)
{
	return size ? size : 1;
}

/* Of one size, a function before anything else */
static bool a2l_func_over(const struct ds_a2l_pick *cur, const struct ds_rawsym *x)
{
	return !a2l_is_func(cur->type) && a2l_is_func(x->type);
}

/* Whether addr2line takes @x over its pick @cur at the symbols' very start, where every one covers */
static bool a2l0_better(const struct ds_a2l_pick *cur, const struct ds_rawsym *x)
{
	return a2l_len(x->elf_size) < a2l_len(cur->size) ||
	       (a2l_len(x->elf_size) == a2l_len(cur->size) && a2l_func_over(cur, x));
}

/* The same past the start (where one of size 0 does not reach) */
static bool a2l_better(const struct ds_a2l_pick *cur, const struct ds_rawsym *x)
{
	if (!cur->size)
		return x->elf_size > 0;
	if (!x->elf_size)
		return false;
	return x->elf_size < cur->size || (x->elf_size == cur->size && a2l_func_over(cur, x));
}

/* Whether addr2line (reading .symtab alone, functions and labels) weighs @r. */
static bool a2l_sees(const struct ds_rawsym *r)
{
	return !r->object && !r->dyn;
}

size_t dsi_rawsym__finish(struct ds_rawsym *raw, size_t nr, struct dsi_symlog *log)
{
	size_t out = 0;

	if (!nr)
		return 0;
	/* symbol files often come sorted: check before sorting */
	for (size_t i = 1; i < nr; i++)
		if (rawsym_cmp(&raw[i - 1], &raw[i]) > 0) {
			qsort(raw, nr, sizeof(*raw), rawsym_cmp);
			break;
		}
	for (size_t i = 0; i < nr; i++)
		if (!raw[i].finished)
			raw[i].elf_size = raw[i].size;
	fixup_end(raw, nr);
	if (!raw[0].finished)
		a2l_first(&raw[0]);
	for (size_t i = 1; i < nr; i++) {
		struct ds_rawsym *cur = &raw[out];

		if (raw[i].start != cur->start) {
			raw[++out] = raw[i];
			if (!raw[out].finished)
				a2l_first(&raw[out]);
			continue;
		}
		struct ds_a2l_pick a2l = cur->a2l, a2l0 = cur->a2l0;

		if (a2l_sees(&raw[i]) && a2l_better(&a2l, &raw[i]))
			a2l_take(&a2l, &raw[i]);
		if (a2l_sees(&raw[i]) && a2l0_better(&a2l0, &raw[i]))
			a2l_take(&a2l0, &raw[i]);
		/* perf erases the loser from its tree, in this order */
		if (first_is_best(cur, &raw[i])) {
			if (log)
				dsi_symlog__erase(log, raw[i].order);
			cur->ifunc_alias |= raw[i].type == STT_GNU_IFUNC;
		} else {
			bool alias = cur->type == STT_GNU_IFUNC;

			if (log)
				dsi_symlog__erase(log, cur->order);
			*cur = raw[i];
			cur->ifunc_alias |= alias;
		}
		cur->a2l = a2l;
		cur->a2l0 = a2l0;
	}
	for (size_t i = 0; i <= out; i++)
		raw[i].finished = true;
	return out + 1;
}

const struct ds_sym *dsi_symtab__nearest(const struct ds_symtab *t, uint64_t addr)
{
	size_t lo = DS_UPPER_BOUND(t->syms, t->nr, start, addr);   /* first symbol with start > addr */

	return lo ? &t->syms[lo - 1] : NULL;
}

const struct ds_sym *dsi_symtab__find(const struct ds_symtab *t, uint64_t addr)
{
	if (t->tree)
		return dsi_symtree__find(t, addr);
	size_t lo = DS_UPPER_BOUND(t->syms, t->nr, start, addr);   /* first symbol with start > addr */

	if (lo == 0)
		return NULL;
	if (addr < t->syms[lo - 1].end)
		return &t->syms[lo - 1];
	return NULL;
}

/* Read until EOF: /proc files report a size of 0, so the size is only a hint. */
char *dsi_read_file(const char *path, size_t *lenp)
{
	struct stat st;
	size_t len = 0, cap;
	char *buf = NULL;
	int fd = dsi_open_regular(path);

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		errno = EINVAL;
		goto fail;
	}
	cap = (size_t)st.st_size + 1 > 65536 ? (size_t)st.st_size + 1 : 65536;
	buf = malloc(cap);
	if (!buf)
		goto fail;
	for (;;) {
		ssize_t n;

		if (len + 1 == cap) {
			char *nb = dsi_grow(buf, &cap, cap + 1, 1, cap);

			if (!nb)
				goto fail;
			buf = nb;
		}
		n = read(fd, buf + len, cap - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			goto fail;
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	close(fd);
	*lenp = len;
	return buf;
fail:
	free(buf);
	close(fd);
	return NULL;
}
