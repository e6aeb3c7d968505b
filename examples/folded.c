// SPDX-License-Identifier: MIT
/*
 * folded: a recording's folded stacks, the lines `dstack folded` prints,
 * through libdstack's public API only (dstack/profile.h).
 *
 *   folded FILE [SYMFS [KALLSYMS]]
 *
 * One line per distinct stack, "comm;outer;...;inner count", sorted, with
 * the frames named as FlameGraph's stackcollapse-perf.pl names perf
 * script's: the symbol (its C++ argument list cut), else the DSO's base
 * name in brackets, kernel frames suffixed "_[k]".
 *
 * Build against an installed tree (make install PREFIX=$P):
 *   cc -I$P/include folded.c $P/lib/libdstack.a -lelf -ldw -lzstd -lz -lstdc++ -lm -lpthread
 */
#define _POSIX_C_SOURCE 200809L   /* strdup */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dstack/profile.h>

/* A set of stacks: open addressing on the text's hash. */
struct stack {
	char *text;
	uint64_t count;
};

struct folded {
	struct stack *slots;
	size_t nr, cap;               /* cap: a power of two */
	char *buf;                    /* the stack being built */
	size_t len, buf_cap;
};

static uint64_t hash_text(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return h;
}

static int grow_slots(struct folded *fo)
{
	size_t cap = fo->cap ? fo->cap * 2 : 1024;
	struct stack *n = calloc(cap, sizeof(*n));

	if (!n)
		return -ENOMEM;
	for (size_t i = 0; i < fo->cap; i++) {
		size_t k;

		if (!fo->slots[i].text)
			continue;
		for (k = hash_text(fo->slots[i].text) & (cap - 1); n[k].text; k = (k + 1) & (cap - 1))
			;
		n[k] = fo->slots[i];
	}
	free(fo->slots);
	fo->slots = n;
	fo->cap = cap;
	return 0;
}

/* Count @text once more (copied the first time). */
static int add_stack(struct folded *fo, const char *text, uint64_t n)
{
	size_t k;

	if (2 * (fo->nr + 1) > fo->cap && grow_slots(fo))
		return -ENOMEM;
	for (k = hash_text(text) & (fo->cap - 1); fo->slots[k].text; k = (k + 1) & (fo->cap - 1))
		if (!strcmp(fo->slots[k].text, text)) {
			fo->slots[k].count += n;
			return 0;
		}
	fo->slots[k].text = strdup(text);
	if (!fo->slots[k].text)
		return -ENOMEM;
	fo->slots[k].count = n;
	fo->nr++;
	return 0;
}

static int append(struct folded *fo, const char *s)
{
	size_t n = strlen(s);

	if (fo->len + n + 2 > fo->buf_cap) {
		size_t cap = (fo->len + n + 2) * 2;
		char *b = realloc(fo->buf, cap);

		if (!b)
			return -ENOMEM;
		fo->buf = b;
		fo->buf_cap = cap;
	}
	if (fo->len)
		fo->buf[fo->len++] = ';';
	memcpy(fo->buf + fo->len, s, n + 1);
	fo->len += n;
	return 0;
}

/*
 * stackcollapse-perf.pl's tidying of a name: ';' would split the stack,
 * the argument list goes (but Go's "pkg.(*T).M" and C++'s "(anonymous
 * namespace)" keep theirs), quotes go.
 */
static void tidy(char *s)
{
	char *w = s, *paren;

	for (char *p = s; *p; p++)
		if (*p == ';')
			*p = ':';
	paren = strchr(s, '(');
	if (!(paren && strstr(s, ".(") && strstr(paren, ").")))
		for (char *p = s; (p = strchr(p, '(')); p++)
			if (strncmp(p, "(anonymous namespace)", 21)) {
				*p = 0;
				break;
			}
	for (char *p = s; *p; p++)
		if (*p != '"' && *p != '\'')
			*w++ = *p;
	*w = 0;
}

static void frame_text(const struct ds_cc_frame *f, char *buf, size_t cap)
{
	bool kernel = f->kernel && !f->inlined && strcmp(f->dso, "[unknown]");
	const char *base;

	if (f->sym) {
		snprintf(buf, cap, "%s", f->sym);
	} else if (!strcmp(f->dso, "[unknown]")) {
		snprintf(buf, cap, "[unknown]");
	} else {
		base = strrchr(f->dso, '/');
		snprintf(buf, cap, "[%s]", base ? base + 1 : f->dso);
	}
	tidy(buf);
	if (kernel && strlen(buf) + 4 < cap)
		strcat(buf, "_[k]");
}

static int on_sample(void *ctx, const struct ds_profile_sample *s)
{
	struct folded *fo = ctx;
	char text[4096];
	int err;

	/* the command as the root frame, spaces made '_' */
	snprintf(text, 256, "%s", s->comm);
	for (char *p = text; *p; p++)
		if (*p == ' ')
			*p = '_';
	fo->len = 0;
	if ((err = append(fo, text)))
		return err;
	for (size_t i = s->nr_frames; i-- > 0;) {   /* outermost first */
		if (s->frames[i].cookie)
			continue;   /* an unresolved deferred chain: stackcollapse skips "(cookie)" lines */
		frame_text(&s->frames[i], text, sizeof(text));
		if ((err = append(fo, text)))
			return err;
	}
	return add_stack(fo, fo->buf, 1);
}

static int cmp_stack(const void *a, const void *b)
{
	return strcmp(((const struct stack *)a)->text, ((const struct stack *)b)->text);
}

int main(int argc, char **argv)
{
	struct ds_profile_opts opts = {
		.symbols = { .symfs = argc > 2 ? argv[2] : NULL, .kallsyms = argc > 3 ? argv[3] : NULL },
		.script_comms = true,   /* named as perf script names them: folded is its output collapsed */
	};
	struct folded fo = { 0 };
	struct ds_profile *p;
	size_t n = 0;
	int err;

	if (argc < 2 || argc > 4) {
		fprintf(stderr, "usage: %s FILE [SYMFS [KALLSYMS]]\n", argv[0]);
		return 2;
	}
	p = ds_profile__open(argv[1], &opts);   /* why it fails: logged */
	if (!p)
		return 1;
	err = ds_profile__for_each_sample(p, on_sample, &fo);
	/* the stacks read before an error are printed all the same, as dstack folded does */
	for (size_t i = 0; i < fo.cap; i++)
		if (fo.slots[i].text)
			fo.slots[n++] = fo.slots[i];
	if (n > 1)
		qsort(fo.slots, n, sizeof(*fo.slots), cmp_stack);
	for (size_t i = 0; i < n; i++) {
		printf("%s %llu\n", fo.slots[i].text, (unsigned long long)fo.slots[i].count);
		free(fo.slots[i].text);
	}
	free(fo.slots);
	free(fo.buf);
	ds_profile__close(p);
	if (fflush(stdout) || ferror(stdout))
		return 1;
	return err ? 1 : 0;
}
