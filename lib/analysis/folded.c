// SPDX-License-Identifier: MIT
/*
 * Folded stacks (dstack/export.h).  The samples' stacks are interned by
 * the stack model (dstack/stacks.h); above it a tree of printed texts,
 * one node per distinct prefix "comm;outer;...", found through a trie
 * keyed by interned texts, and a memo from (comm node, chain id or stack
 * id) to the leaf, so that a repeated sample is one lookup and a sample
 * allocates nothing once its path exists.  Past
 * half of the memory the tree's stacks go to a tally (util/spill.h) and
 * the tree and model start again; the tally, past a quarter, spills
 * sorted runs to disk and merges them, summing the counts of a stack met
 * in several trees.  The output is the same whichever way it was kept.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dstack/export.h"
#include "dstack/stacks.h"
#include "analysis/stacks_int.h"
#include "analysis/wbuf.h"
#include "util/grow.h"
#include "util/hashmap.h"
#include "util/idmap.h"
#include "util/spill.h"
#include "util/strset.h"
#include "util/trie.h"

#define NONE UINT32_MAX
#define CHECK_EVERY 4096              /* new nodes between two looks at the tree's size */
#define DEFAULT_MEMORY ((size_t)1 << 30)
#define RECENT_TEXTS 1024         /* direct-mapped */
#define MEMO_MAX (1u << 16)      /* (comm node, chain id) pairs remembered before the memo starts again */

struct fnode {
	const char *text;          /* the frame as printed (interned in texts) */
	uint32_t parent;
	uint64_t count;            /* stacks ending here */
};

/* A leaf found for (comm node, the sample's chain id): a repeated sample costs this one lookup. */
struct leaf_memo {
	uint64_t key;
	uint32_t root, leaf;
};

struct ds_folded {
	struct ds_folded_opts o;
	struct ds_stacks *model;
	struct fnode *nodes;
	size_t nr, cap;
	struct dsi_trie edges;      /* (parent, text) -> node */
	const char **frame_text;   /* by the model's frame id: printed, NULL not yet */
	/* a frame's text by its (sym, dso, flags) pointers, before the model is asked: most frames repeat */
	struct recent_text { const char *sym, *dso, *text; uint32_t flags; } recent[RECENT_TEXTS];
	size_t cap_frame_text;
	struct dsi_strset texts;   /* one copy per distinct text */
	struct dsi_idmap leaves;    /* (comm node, key) -> index in memo */
	const void *machine;       /* whose chain ids the memo holds */
	struct leaf_memo *memo;
	size_t nr_memo, cap_memo;
	char last_comm[256];       /* the last comm seen, and its text (NULL: none) */
	const char *last_text;
	size_t tree_max;           /* bytes the tree and model may hold before they go to the tally */
	size_t check_at;           /* nr at which the size is looked at next */
	struct dsi_tally *tally;   /* the stacks of the trees before this one, and at the end all */
	char *line;                /* a stack's text being made */
	size_t line_cap;
	bool written;
	char error[512];           /* a spill file's first failure (said by ds_errmsg()), "" none */
	int error_err;             /* its negative errno */
};

static struct ds_stacks *new_model(void)
{
	struct ds_stacks_opts mo = { .sz = sizeof(mo) };

	return ds_stacks__new(&mo);
}

struct ds_folded *ds_folded__new(const struct ds_folded_opts *opts)
{
	struct ds_folded *fo = calloc(1, sizeof(*fo));
	size_t mem;

	if (!fo) {
		errno = ENOMEM;
		return NULL;
	}
	if (opts)
		memcpy(&fo->o, opts, opts->sz < sizeof(fo->o) ? opts->sz : sizeof(fo->o));
	fo->o.sz = sizeof(fo->o);
	mem = fo->o.memory ? fo->o.memory : DEFAULT_MEMORY;
	fo->tree_max = mem / 2;
	fo->check_at = CHECK_EVERY;
	if (!(fo->model = new_model()) || !(fo->tally = dsi_tally__new_in(mem / 4, fo->o.tmpdir))) {
		ds_folded__delete(fo);
		errno = ENOMEM;
		return NULL;
	}
	return fo;
}

/* An empty tree and model, their memory freed (their stacks are in the tally). */
static void tree_reset(struct ds_folded *fo)
{
	dsi_strset__exit(&fo->texts);
	dsi_trie__exit(&fo->edges);
	dsi_idmap__exit(&fo->leaves);
	free(fo->memo);
	free(fo->nodes);
	free(fo->frame_text);
	fo->memo = NULL;
	fo->nodes = NULL;
	fo->frame_text = NULL;
	fo->nr_memo = fo->cap_memo = fo->nr = fo->cap = fo->cap_frame_text = 0;
	fo->check_at = CHECK_EVERY;
	fo->last_text = NULL;
	fo->machine = NULL;
	memset(fo->recent, 0, sizeof(fo->recent));   /* (their texts were freed) */
}

void ds_folded__delete(struct ds_folded *fo)
{
	if (!fo)
		return;
	tree_reset(fo);
	ds_stacks__delete(fo->model);
	dsi_tally__delete(fo->tally);
	free(fo->line);
	free(fo);
}

void ds_folded__tidy(char *s)
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

/*
 * The printed text of the model's frame @id, made once: different frames
 * can print the same (overloads once their argument lists are cut), and
 * their stacks must merge, so texts are interned.  NULL on ENOMEM.
 */
static const char *frame_text(struct ds_folded *fo, uint32_t id)
{
	if (id < fo->cap_frame_text && fo->frame_text[id])
		return fo->frame_text[id];

	const char **t = dsi_grow_zeroed(fo->frame_text, &fo->cap_frame_text, (size_t)id + 1, sizeof(*t), 1024);
	const struct ds_stacks_frame *f;
	const char *dso;
	char buf[4096];

	if (!t)
		return NULL;
	fo->frame_text = t;
	if (t[id])
		return t[id];
	f = ds_stacks__frame(fo->model, id);
	dso = ds_stacks__str(fo->model, f->dso);
	snprintf(buf, sizeof(buf), "%s", ds_stacks__str(fo->model, f->name));
	ds_folded__tidy(buf);
	if (f->kernel && !f->inlined && strcmp(dso, "[unknown]") && strlen(buf) + 4 < sizeof(buf))
		strcat(buf, "_[k]");
	return t[id] = dsi_strset__intern(&fo->texts, buf);
}

/*
 * The command as the root frame: spaces become '_' as in stackcollapse-perf.pl.
 * Found by its text: a comm may be valid during its sample only, and a
 * task per sample must not leave a name per task behind.
 */
static const char *comm_text(struct ds_folded *fo, const char *comm)
{
	char buf[sizeof(fo->last_comm)];

	if (fo->last_text && !strcmp(fo->last_comm, comm))
		return fo->last_text;
	snprintf(buf, sizeof(buf), "%s", comm);
	for (char *p = buf; *p; p++)
		if (*p == ' ')
			*p = '_';
	fo->last_text = dsi_strset__intern(&fo->texts, buf);
	snprintf(fo->last_comm, sizeof(fo->last_comm), "%s", comm);
	return fo->last_text;
}

/* The node of @text under @parent (NONE: a root), made if new; NONE on ENOMEM. */
static uint32_t node_for(struct ds_folded *fo, uint32_t parent, const char *text)
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

static bool memo_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct leaf_memo *m = &((const struct ds_folded *)ctx)->memo[id], *k = key;

	return m->key == k->key && m->root == k->root;
}

/* The remembered leaf for @root and @key, else NONE. */
static uint32_t memo_leaf(struct ds_folded *fo, uint32_t root, uint64_t key)
{
	struct leaf_memo k = { .root = root, .key = key };
	uint32_t id = dsi_idmap__find(&fo->leaves, dsi_hash_pair(key, root), memo_eq, fo, &k);

	return id == NONE ? NONE : fo->memo[id].leaf;
}

/* Remember @leaf (memo_leaf found none); failing to (ENOMEM) only costs the next lookup. */
static void memo_keep(struct ds_folded *fo, uint32_t root, uint64_t key, uint32_t leaf)
{
	if (fo->nr_memo >= MEMO_MAX) {
		dsi_idmap__exit(&fo->leaves);
		fo->nr_memo = 0;
	}
	struct leaf_memo *n = dsi_grow(fo->memo, &fo->cap_memo, fo->nr_memo + 1, sizeof(*n), 1024);

	if (!n)
		return;
	fo->memo = n;
	if (dsi_idmap__add(&fo->leaves, dsi_hash_pair(key, root), (uint32_t)fo->nr_memo) < 0)
		return;
	fo->memo[fo->nr_memo++] = (struct leaf_memo){ .key = key, .root = root, .leaf = leaf };
}

/*
 * The text of frame @f of a sample of @machine: the machine's strings are
 * interned, so a (sym, dso, flags) seen before is known by its pointers;
 * else the model's frame id names it.  NULL on ENOMEM.
 */
static const char *sample_frame_text(struct ds_folded *fo, const void *machine, const struct ds_cc_frame *f)
{
	uint32_t flags = 1u | (uint32_t)f->kernel << 1 | (uint32_t)f->inlined << 2, id;
	struct recent_text *r = &fo->recent[(((uintptr_t)f->sym ^ (uintptr_t)f->dso << 7) * 0x9e3779b97f4a7c15ULL) >> 54];
	const char *text;

	if (r->flags == flags && r->sym == f->sym && r->dso == f->dso)
		return r->text;
	id = dsi_stacks__frame_id(fo->model, machine, f);
	if (id == NONE || !(text = frame_text(fo, id)))
		return NULL;
	*r = (struct recent_text){ f->sym, f->dso, text, flags };
	return text;
}

/*
 * The leaf of the path of @s's frames (outermost first) under @root; NONE
 * on ENOMEM.  The model gives the frames' ids only: the tree is the
 * stack, so the model keeps no entries or stacks for it.
 */
static uint32_t path_leaf(struct ds_folded *fo, uint32_t root, const struct ds_profile_sample *s)
{
	uint32_t n = root;

	for (size_t i = s->nr_frames; n != NONE && i-- > 0;) {
		if (s->frames[i].cookie)
			continue; /* an unresolved deferred chain has no frames to show */
		const char *text = sample_frame_text(fo, s->machine, &s->frames[i]);

		n = text ? node_for(fo, n, text) : NONE;
	}
	return n;
}

/* The spill file's failure kept as text: @err returned. */
static int tally_failed(struct ds_folded *fo, int err)
{
	const char *msg = dsi_tally__error(fo->tally);

	if (msg && !fo->error[0]) {
		snprintf(fo->error, sizeof(fo->error), "%s", msg);
		fo->error_err = err;
	}
	return err;
}

/* A public call's result, a failure said for ds_errmsg(). */
static int said(const struct ds_folded *fo, int err)
{
	return err ? dsi_export_failed(err, fo->error_err, fo->error) : 0;
}

/* The tree's and model's memory, near enough: their arrays and tables as allocated, and texts. */
static size_t tree_bytes(const struct ds_folded *fo)
{
	return fo->cap * sizeof(*fo->nodes) + fo->edges.cap * sizeof(*fo->edges.slots) +
	       fo->cap_frame_text * sizeof(*fo->frame_text) + dsi_strset__mem(&fo->texts) +
	       fo->cap_memo * sizeof(*fo->memo) + fo->leaves.cap * sizeof(*fo->leaves.slots) +
	       ds_stacks__mem(fo->model);
}

/* "comm;outer;...;inner" for node @n into fo->line (not NUL-terminated): its length, or -ENOMEM. */
static long stack_text(struct ds_folded *fo, uint32_t n)
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

/* Every stack of the tree with its count, into the tally: 0 or a negative errno. */
static int tree_to_tally(struct ds_folded *fo)
{
	for (size_t i = 0; i < fo->nr; i++) {
		long len;
		int err;

		if (!fo->nodes[i].count)
			continue;
		if ((len = stack_text(fo, (uint32_t)i)) < 0)
			return (int)len;
		if ((err = dsi_tally__add(fo->tally, fo->line, (size_t)len, fo->nodes[i].count, 0)))
			return tally_failed(fo, err);
	}
	return 0;
}

/* Past its share of the memory, the tree goes to the tally and starts again, the model too. */
static int tree_check(struct ds_folded *fo)
{
	int err;

	fo->check_at = fo->nr + CHECK_EVERY;
	if (tree_bytes(fo) <= fo->tree_max)
		return 0;
	err = tree_to_tally(fo);
	tree_reset(fo);
	ds_stacks__delete(fo->model);
	if (!(fo->model = new_model()) && !err)
		err = -ENOMEM;
	return err;
}

static int folded_add(struct ds_folded *fo, const struct ds_profile_sample *s)
{
	const char *text;
	uint32_t root, leaf;
	uint64_t w = fo->o.period ? s->period : 1;

	if (!fo->model || fo->written)
		return -EINVAL;
	if (!(text = comm_text(fo, s->comm ? s->comm : ":-1")) || (root = node_for(fo, NONE, text)) == NONE)
		return -ENOMEM;
	/* chain ids are the machine's: another's are other chains */
	if (s->machine != fo->machine) {
		dsi_idmap__exit(&fo->leaves);
		fo->nr_memo = 0;
		memset(fo->recent, 0, sizeof(fo->recent));   /* (and its string pointers are others) */
		fo->machine = s->machine;
	}
	if (!s->chain_id || (leaf = memo_leaf(fo, root, s->chain_id)) == NONE) {
		if ((leaf = path_leaf(fo, root, s)) == NONE)
			return -ENOMEM;
		if (s->chain_id)
			memo_keep(fo, root, s->chain_id, leaf);
	}
	fo->nodes[leaf].count += w;
	return fo->nr >= fo->check_at ? tree_check(fo) : 0;
}

int ds_folded__add(struct ds_folded *fo, const struct ds_profile_sample *s)
{
	return said(fo, folded_add(fo, s));
}

int ds_folded__add_text(struct ds_folded *fo, const char *text, size_t len, uint64_t weight)
{
	int err;

	if (fo->written)
		return said(fo, -EINVAL);
	if ((err = dsi_tally__add(fo->tally, text, len, weight, 0)))
		return said(fo, tally_failed(fo, err));
	return 0;
}

static int folded_write(struct ds_folded *fo, ds_write_fn fn, void *ctx)
{
	struct dsi_wbuf w;
	const char *text;
	size_t len;
	uint64_t count;
	int got, ret;

	if (fo->written)
		return -EINVAL;
	fo->written = true;
	ret = tree_to_tally(fo);
	tree_reset(fo);
	if (!ret)
		ret = dsi_wbuf__init(&w, fn, ctx);
	if (ret)
		return ret;
	while (!w.error && (got = dsi_tally__next(fo->tally, &text, &len, &count, NULL))) {
		if (got < 0) {
			ret = tally_failed(fo, got);
			break;
		}
		dsi_wbuf__write(&w, text, len);
		dsi_wbuf__putc(&w, ' ');
		dsi_wbuf__dec(&w, count);
		dsi_wbuf__putc(&w, '\n');
	}
	got = dsi_wbuf__finish(&w);
	return ret ? ret : got;
}

int ds_folded__write(struct ds_folded *fo, ds_write_fn fn, void *ctx)
{
	return said(fo, folded_write(fo, fn, ctx));
}
