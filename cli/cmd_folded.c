// SPDX-License-Identifier: MIT
/*
 * dstack folded: one line per distinct stack, "comm;outer;...;inner count",
 * named the way FlameGraph's stackcollapse-perf.pl names `perf script`
 * frames (with --kernel): offsets dropped, an unknown symbol shown as its
 * DSO's base name in brackets, inlined functions as frames of their own,
 * kernel frames suffixed "_[k]", C++ argument lists cut.  Stacks are kept
 * in a tree (one node per distinct prefix, found through a trie keyed by
 * interned texts), so a sample allocates nothing once its path exists.
 * Memory stays within the budget ($DSTACK_MEMORY_BUDGET): past half of it
 * the tree's stacks go to a tally (util/spill.h) and the tree starts
 * again, and the tally, past a quarter, spills sorted runs to disk and
 * merges them, summing the counts of a stack met in several trees.  A
 * recording of countless comms (a task per sample) prints in bounded
 * memory; the output is the same whichever way it was kept.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include "util/grow.h"
#include "util/hashmap.h"
#include "util/idmap.h"
#include "util/strset.h"
#include "util/trie.h"
#include "util/outbuf.h"
#include "util/spill.h"
#include "samples.h"
#include "export_common.h"

#define NONE UINT32_MAX
#define CHECK_EVERY 4096                     /* new nodes between two looks at the tree's size */

struct fnode {
	const char *text;          /* the frame as printed (ours) */
	uint32_t parent;
	uint64_t count;            /* stacks ending here */
};

struct folded {
	struct walk_opts wo;
	bool period;
	struct fnode *nodes;
	size_t nr, cap;
	struct dsi_trie edges;      /* (parent, text) -> node */
	struct dsi_idmap name_ids;  /* frame identity -> index in names */
	struct frame_name {
		const void *sym, *dso; /* interned: compared as pointers */
		uint8_t kind;          /* kernel * 2 + inlined */
		const char *text;      /* printed */
	} *names;
	size_t nr_names, cap_names;
	struct dsi_strset texts;   /* one copy per distinct text */
	/* the last text of each frame identity, direct-mapped: most frames repeat */
	struct recent_text {
		const char *sym, *dso, *text;
		uint8_t flags;
	} recent[1024];
	/* (comm node, chain id) -> index in memo: a repeated chain is one lookup */
	struct dsi_idmap leaves;
	struct leaf_memo {
		uint64_t chain_id;
		uint32_t root, leaf;
	} *memo;
	size_t nr_memo, cap_memo;
	char last_comm[256];       /* the last comm seen, and its text (NULL: none) */
	const char *last_text;
	size_t tree_max;           /* bytes the tree may hold before it goes to the tally */
	size_t check_at;           /* nr at which the size is looked at next */
	struct dsi_tally *tally;   /* the stacks of the trees before this one, and at the end all */
	char *line;                /* a stack's text being made */
	size_t line_cap;
};

static bool memo_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct leaf_memo *m = &((const struct folded *)ctx)->memo[id], *k = key;

	return m->chain_id == k->chain_id && m->root == k->root;
}

static uint64_t memo_hash(uint32_t root, uint64_t chain_id)
{
	return dsi_hash_pair(chain_id, root);
}

/* The remembered leaf for @root and @chain_id, else NONE. */
static uint32_t memo_leaf(struct folded *fo, uint32_t root, uint64_t chain_id)
{
	struct leaf_memo key = { .chain_id = chain_id, .root = root };
	uint32_t id = dsi_idmap__find(&fo->leaves, memo_hash(root, chain_id), memo_eq, fo, &key);

	return id == NONE ? NONE : fo->memo[id].leaf;
}

/* Remember @leaf (memo_leaf found none); failing to (ENOMEM) only costs the next lookup. */
static void memo_keep(struct folded *fo, uint32_t root, uint64_t chain_id, uint32_t leaf)
{
	if (fo->nr_memo >= CLI_CHAIN_MEMO_MAX) {
		dsi_idmap__exit(&fo->leaves);
		fo->nr_memo = 0;
	}
	struct leaf_memo *n = dsi_grow(fo->memo, &fo->cap_memo, fo->nr_memo + 1, sizeof(*n), 1024);

	if (!n || fo->nr_memo >= NONE - 1)
		return;
	fo->memo = n;
	if (dsi_idmap__add(&fo->leaves, memo_hash(root, chain_id), (uint32_t)fo->nr_memo) < 0)
		return;
	fo->memo[fo->nr_memo++] = (struct leaf_memo){ .chain_id = chain_id, .root = root, .leaf = leaf };
}

/*
 * Our copy of @s, the same pointer for the same text: different symbols
 * can print the same (overloads once their argument lists are cut), and
 * their stacks must merge.
 */
static const char *intern_text(struct folded *fo, const char *s)
{
	return dsi_strset__intern(&fo->texts, s);
}

static bool name_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct frame_name *a = &((const struct folded *)ctx)->names[id], *b = key;

	return a->sym == b->sym && a->dso == b->dso && a->kind == b->kind;
}

static uint64_t name_hash(const struct frame_name *n)
{
	return dsi_hash_pair(dsi_hash_pair((uintptr_t)n->sym, (uintptr_t)n->dso), n->kind);
}

/* The text remembered for @key (its identity), NULL if none. */
static const char *name_find(const struct folded *fo, const struct frame_name *key)
{
	uint32_t id = dsi_idmap__find(&fo->name_ids, name_hash(key), name_eq, fo, key);

	return id == NONE ? NULL : fo->names[id].text;
}

/* Remember @text for @key (name_find found none): @text, NULL on ENOMEM. */
static const char *name_keep(struct folded *fo, const struct frame_name *key, const char *text)
{
	struct frame_name *n = dsi_grow(fo->names, &fo->cap_names, fo->nr_names + 1, sizeof(*n), 256);

	if (!n || !text || fo->nr_names >= NONE - 1)
		return NULL;
	fo->names = n;
	if (dsi_idmap__add(&fo->name_ids, name_hash(key), (uint32_t)fo->nr_names) < 0)
		return NULL;
	n[fo->nr_names] = *key;
	n[fo->nr_names++].text = text;
	return text;
}

void folded_tidy(char *s)
{
	char *w = s, *paren;

	for (char *p = s; *p; p++)
		if (*p == ';')
			*p = ':';
	/* Go method names such as "net/http.(*Client).Do" keep their parentheses */
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

/* The printed text of a frame, made once per distinct (sym, dso, kind). */
static const char *frame_text_slow(struct folded *fo, const struct ds_cc_frame *f)
{
	struct frame_name key = { .sym = f->sym, .dso = f->dso, .kind = (uint8_t)(f->kernel * 2 + f->inlined) };
	const char *known = name_find(fo, &key);
	char buf[4096];
	bool kernel = f->kernel && !f->inlined && strcmp(f->dso, "[unknown]");

	if (known)
		return known;
	if (f->sym) {
		snprintf(buf, sizeof(buf), "%s", f->sym);
	} else if (!strcmp(f->dso, "[unknown]")) {
		snprintf(buf, sizeof(buf), "[unknown]");
	} else {
		frame_dso_label(f, buf, sizeof(buf));
	}
	folded_tidy(buf);
	if (kernel && strlen(buf) + 4 < sizeof(buf))
		strcat(buf, "_[k]");
	return name_keep(fo, &key, intern_text(fo, buf));
}

/* Names are interned: a frame is (sym, dso, kernel, inlined) by pointer. */
static const char *frame_text(struct folded *fo, const struct ds_cc_frame *f)
{
	uint8_t flags = (uint8_t)(1 | f->kernel << 1 | f->inlined << 2);
	struct recent_text *r = &fo->recent[(((uintptr_t)f->sym ^ (uintptr_t)f->dso << 7) * 0x9e3779b97f4a7c15ULL) >> 54];

	if (r->flags == flags && r->sym == f->sym && r->dso == f->dso)
		return r->text;
	const char *t = frame_text_slow(fo, f);

	if (t)
		*r = (struct recent_text){ f->sym, f->dso, t, flags };
	return t;
}

/*
 * The command as the root frame: spaces become '_' as in stackcollapse-perf.pl.
 * Found by its text: the comm is the sample's only (transient_comms), and
 * a task per sample must not leave a name per task behind.
 */
static const char *comm_text(struct folded *fo, const char *comm)
{
	char buf[sizeof(fo->last_comm)];

	if (fo->last_text && !strcmp(fo->last_comm, comm))
		return fo->last_text;
	snprintf(buf, sizeof(buf), "%s", comm);
	for (char *p = buf; *p; p++)
		if (*p == ' ')
			*p = '_';
	fo->last_text = intern_text(fo, buf);
	snprintf(fo->last_comm, sizeof(fo->last_comm), "%s", comm);
	return fo->last_text;
}

/* The node of @text under @parent (NONE: a root), made if new; NONE on ENOMEM. */
static uint32_t node_for(struct folded *fo, uint32_t parent, const char *text)
{
	struct fnode *n = dsi_grow(fo->nodes, &fo->cap, fo->nr + 1, sizeof(*n), 4096);
	uint32_t id;
	bool added;

	if (!n || fo->nr >= NONE - 1)
		return NONE;
	fo->nodes = n;
	/* texts are interned: a pointer is a text */
	id = dsi_trie__child(&fo->edges, parent, (uintptr_t)text, (uint32_t)fo->nr, &added);
	if (added)
		fo->nodes[fo->nr++] = (struct fnode){ .text = text, .parent = parent };
	return id;
}

static int tree_check(struct folded *fo);

static int on_sample(void *ctx, const struct ds_profile_sample *s)
{
	struct folded *fo = ctx;
	const char *text = comm_text(fo, s->comm);
	uint32_t n;

	if (!text)
		return -ENOMEM;
	n = node_for(fo, NONE, text);
	uint32_t root = n, leaf = NONE;

	if (s->chain_id && n != NONE && (leaf = memo_leaf(fo, root, s->chain_id)) != NONE) {
		fo->nodes[leaf].count += fo->period ? s->period : 1;
		return 0;
	}
	for (size_t i = s->nr_frames; n != NONE && i-- > 0;) {
		if (s->frames[i].cookie)
			continue; /* stackcollapse skips "(cookie)" lines */
		text = frame_text(fo, &s->frames[i]);
		if (!text)
			return -ENOMEM;
		n = node_for(fo, n, text);
	}
	if (n == NONE)
		return -ENOMEM;
	if (s->chain_id)
		memo_keep(fo, root, s->chain_id, n);
	fo->nodes[n].count += fo->period ? s->period : 1;
	return fo->nr >= fo->check_at ? tree_check(fo) : 0;
}

/* The tree's memory, near enough: its arrays and tables as allocated, and its texts. */
static size_t tree_bytes(const struct folded *fo)
{
	return fo->cap * sizeof(*fo->nodes) + fo->edges.cap * sizeof(*fo->edges.slots) +
	       fo->cap_names * sizeof(*fo->names) + fo->name_ids.cap * sizeof(*fo->name_ids.slots) +
	       dsi_strset__mem(&fo->texts) +
	       fo->cap_memo * sizeof(*fo->memo) + fo->leaves.cap * sizeof(*fo->leaves.slots);
}

/* "comm;outer;...;inner" for node @n into fo->line (not NUL-terminated): its length, or -ENOMEM. */
static long stack_text(struct folded *fo, uint32_t n)
{
	size_t len = 0;

	for (uint32_t i = n; i != NONE; i = fo->nodes[i].parent)
		len += strlen(fo->nodes[i].text) + 1;   /* text and ';' */
	char *s = dsi_grow(fo->line, &fo->line_cap, len, 1, 4096);
	size_t pos = --len;

	if (!s)
		return -ENOMEM;
	fo->line = s;
	for (uint32_t i = n; i != NONE; i = fo->nodes[i].parent) {
		size_t l = strlen(fo->nodes[i].text);

		pos -= l;
		memcpy(s + pos, fo->nodes[i].text, l);
		if (pos > 0)
			s[--pos] = ';';
	}
	return (long)len;
}

/* Every stack of the tree with its count, into the tally: 0 or -errno (a spill file's failure said). */
static int tree_to_tally(struct folded *fo)
{
	for (size_t i = 0; i < fo->nr; i++) {
		long len;
		int err;

		if (!fo->nodes[i].count)
			continue;
		if ((len = stack_text(fo, (uint32_t)i)) < 0)
			return (int)len;
		if ((err = dsi_tally__add(fo->tally, fo->line, (size_t)len, fo->nodes[i].count, 0))) {
			if (dsi_tally__error(fo->tally))
				output_failed_as(dsi_tally__error(fo->tally));
			return err;
		}
	}
	return 0;
}

/* An empty tree, its memory freed (its stacks are in the tally). */
static void tree_reset(struct folded *fo)
{
	dsi_strset__exit(&fo->texts);
	free(fo->names);
	dsi_idmap__exit(&fo->name_ids);
	dsi_trie__exit(&fo->edges);
	dsi_idmap__exit(&fo->leaves);
	free(fo->memo);
	free(fo->nodes);
	fo->names = NULL;
	fo->memo = NULL;
	fo->nodes = NULL;
	fo->nr_names = fo->cap_names = 0;
	fo->nr_memo = fo->cap_memo = fo->nr = fo->cap = 0;
	fo->check_at = CHECK_EVERY;
	fo->last_text = NULL;
	memset(fo->recent, 0, sizeof(fo->recent));
}

/* Past its share of the budget, the tree goes to the tally and starts again. */
static int tree_check(struct folded *fo)
{
	int err;

	fo->check_at = fo->nr + CHECK_EVERY;
	if (tree_bytes(fo) <= fo->tree_max)
		return 0;
	err = tree_to_tally(fo);
	tree_reset(fo);
	return err;
}

static int print_folded(struct folded *fo, int fd)
{
	struct outbuf *out = NULL;
	const char *text;
	size_t len;
	uint64_t count;
	int got, ret = tree_to_tally(fo);

	tree_reset(fo);
	if (!ret && !(out = outbuf_new(fd)))
		ret = -ENOMEM;
	while (!ret && !out->error && (got = dsi_tally__next(fo->tally, &text, &len, &count, NULL))) {
		if (got < 0) {
			if (dsi_tally__error(fo->tally))
				output_failed_as(dsi_tally__error(fo->tally));
			ret = got;
			break;
		}
		outbuf_write(out, text, len);
		outbuf_putc(out, ' ');
		outbuf_dec(out, count, 0, ' ');
		outbuf_putc(out, '\n');
	}
	if (out) {
		outbuf_flush(out);
		if (!ret && out->error)
			ret = -out->error;
	}
	outbuf_delete(out);
	return ret;
}

static void folded_usage(FILE *f)
{
	fprintf(f, "usage: dstack folded [-o FILE] [--period] [options]\n"
			"  -o FILE              write to FILE (default stdout)\n"
			"  --period             weight stacks by sample period instead of counting samples\n%s",
		walk_usage());
}

/*
 * The options into @fo and *output (NULL: stdout).  EXIT_OK, EXIT_USAGE
 * after saying why (at the first bad option), or -1 after printing the
 * help.
 */
static int parse_args(struct folded *fo, int argc, char **argv, const char **output)
{
	const char *v;

	for (int i = 1; i < argc; i++) {
		int c = walk_opt(&fo->wo, "folded", argc, argv, &i);

		if (c < 0)
			return EXIT_USAGE;
		else if (c)
			continue;
		else if ((v = opt_value("-o", argc, argv, &i)) || (v = opt_value("--output", argc, argv, &i)))
			*output = strcmp(v, "-") ? v : NULL;   /* "-": stdout, as every -o */
		else if (!strcmp(argv[i], "--period"))
			fo->period = true;
		else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			folded_usage(stdout);
			return -1;
		} else {
			usage_error("folded", "unknown option '%s'", argv[i]);
			folded_usage(stderr);
			return EXIT_USAGE;
		}
	}
	return EXIT_OK;
}

/* The samples folded and printed to @fd (closed when it is @output's).  The exit code. */
static int fold_and_print(struct folded *fo, const char *output, int fd)
{
	int ret = walk_samples("folded", &fo->wo, on_sample, fo);
	int err = print_folded(fo, fd);

	if (err == -ENOMEM) {
		fprintf(stderr, "dstack folded: %s\n", strerror(-err));
		ret = EXIT_INPUT;
	} else if (err) {
		ret = EXIT_OUTPUT;   /* reported by the buffer */
	}
	if (output && close(fd) && !err) {   /* a file system may report a failed write only at close */
		output_failed(output, errno);
		ret = EXIT_OUTPUT;
	}
	return ret;
}

static void folded_free(struct folded *fo)
{
	tree_reset(fo);
	dsi_tally__delete(fo->tally);
	free(fo->line);
	free(fo);
}

int cmd_folded(int argc, char **argv)
{
	struct folded *fo = calloc(1, sizeof(*fo));
	const char *output = NULL;
	int ret, fd = STDOUT_FILENO;

	if (!fo) {
		fprintf(stderr, "dstack folded: out of memory\n");
		return EXIT_INPUT;
	}
	walk_opts_init(&fo->wo);
	fo->wo.script_comms = true;
	fo->wo.transient_comms = true;
	ret = parse_args(fo, argc, argv, &output);
	if (ret < 0) {
		free(fo);
		return EXIT_OK;
	}
	if (fo->wo.time_mode != WALK_CPU)
		fo->period = true;   /* --off-cpu/--wall: stacks weigh their ns */
	size_t budget = cli_budget();

	fo->tree_max = budget / 2;
	fo->check_at = CHECK_EVERY;
	if (ret == EXIT_OK && !(fo->tally = dsi_tally__new(budget / 4))) {
		fprintf(stderr, "dstack folded: out of memory\n");
		ret = EXIT_INPUT;
	}
	if (ret == EXIT_OK && output && (fd = open(output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0) {
		fprintf(stderr, "dstack folded: %s: %s\n", output, strerror(errno));
		ret = EXIT_USAGE;
	}
	if (output)
		output_file(output);
	if (ret == EXIT_OK)
		ret = fold_and_print(fo, output, fd);
	folded_free(fo);
	return ret;
}
