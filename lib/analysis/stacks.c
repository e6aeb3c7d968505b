// SPDX-License-Identifier: MIT
/* The interned stack model (dstack/stacks.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dstack/event.h"
#include "dstack/stacks.h"
#include "dstack/symbols.h"
#include "util/grow.h"
#include "util/hashmap.h"
#include "util/idmap.h"
#include "util/strset.h"
#include "analysis/stacks_int.h"

/* Room for one more element of @size in *@arr, whose index must be an id (below UINT32_MAX): 0 or -ENOMEM. */
static int room(void **arr, size_t nr, size_t *cap, size_t size)
{
	void *n = nr < UINT32_MAX - 1 ? dsi_grow(*arr, cap, nr + 1, size, 1024) : NULL;

	if (!n)
		return -ENOMEM;
	*arr = n;
	return 0;
}

struct ds_stacks *ds_stacks__new(const struct ds_stacks_opts *opts)
{
	struct ds_stacks *st = calloc(1, sizeof(*st));

	if (!st) {
		errno = ENOMEM;
		return NULL;
	}
	if (opts)
		memcpy(&st->o, opts, opts->sz < sizeof(st->o) ? opts->sz : sizeof(st->o));
	st->o.sz = sizeof(st->o);
	if (!st->o.chain_memo_max)
		st->o.chain_memo_max = 1u << 16;
	dsi_hashmap__init(&st->chain_stacks);
	st->time_first = UINT64_MAX;
	if (dsi_strset__add(&st->strs, "") != DS_STACKS_STR_EMPTY) {
		ds_stacks__delete(st);
		errno = ENOMEM;
		return NULL;
	}
	return st;
}

void ds_stacks__delete(struct ds_stacks *st)
{
	if (!st)
		return;
	dsi_strset__exit(&st->strs);
	free(st->frames);
	free(st->maps);
	free(st->ents);
	free(st->stacks);
	free(st->samples);
	dsi_idmap__exit(&st->frame_ids);
	dsi_idmap__exit(&st->map_ids);
	dsi_idmap__exit(&st->stack_ids);
	dsi_idmap__exit(&st->sample_ids);
	dsi_hashmap__exit(&st->chain_stacks);
	dsi_idmap__exit(&st->ptr_ids);
	free(st->ptrs);
	free(st);
}

void ds_stacks__end_source(struct ds_stacks *st)
{
	dsi_hashmap__exit(&st->chain_stacks);
	dsi_hashmap__init(&st->chain_stacks);
	memset(st->recent, 0, sizeof(st->recent));
	dsi_idmap__exit(&st->ptr_ids);
	st->nr_ptrs = 0;
	st->machine = NULL;
}

uint32_t ds_stacks__intern_str(struct ds_stacks *st, const char *s)
{
	return dsi_strset__add(&st->strs, s);
}

const char *ds_stacks__str(const struct ds_stacks *st, uint32_t id)
{
	return st->strs.strs[id];
}

size_t ds_stacks__nr_strs(const struct ds_stacks *st)
{
	return st->strs.nr;
}

/* "[libc.so.6]": frame @f of no symbol named by its DSO's short name. */
static uint32_t frame_name(struct ds_stacks *st, const struct ds_cc_frame *f)
{
	char buf[512], short_name[256];

	if (f->sym)
		return ds_stacks__intern_str(st, f->sym);
	if (!f->dso || !strcmp(f->dso, "[unknown]"))
		return ds_stacks__intern_str(st, "[unknown]");
	snprintf(buf, sizeof(buf), "[%s]", ds_dso__short_name(f->dso, f->kernel, short_name, sizeof(short_name)));
	return ds_stacks__intern_str(st, buf);
}

static bool frame_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct ds_stacks_frame *g = &((const struct ds_stacks *)ctx)->frames[id], *f = key;

	return g->name == f->name && g->dso == f->dso && g->kernel == f->kernel && g->inlined == f->inlined;
}

static uint32_t frame_id_slow(struct ds_stacks *st, const struct ds_cc_frame *f)
{
	uint32_t name = frame_name(st, f), dso = ds_stacks__intern_str(st, f->dso ? f->dso : "[unknown]"), id;
	struct ds_stacks_frame key = { name, dso, f->kernel, f->inlined, DS_STACKS_STR_EMPTY };
	bool added;

	if (key.name == UINT32_MAX || key.dso == UINT32_MAX ||
	    room((void **)&st->frames, st->nr_frames, &st->cap_frames, sizeof(*st->frames)))
		return UINT32_MAX;
	id = dsi_idmap__find_or_add(&st->frame_ids, dsi_hash_pair(dsi_hash_pair(key.name, key.dso),
								(uint64_t)f->kernel * 2 + f->inlined),
				   frame_eq, st, &key, (uint32_t)st->nr_frames, &added);
	if (added)
		st->frames[st->nr_frames++] = key;
	return id;
}

static bool ptr_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct recent *p = &((const struct ds_stacks *)ctx)->ptrs[id], *k = key;

	return p->sym == k->sym && p->dso == k->dso && p->flags == k->flags;
}

/*
 * The frame id of @f (key @k) by its string pointers (the machine's
 * strings are interned and live as long as it does), else by their
 * texts, then remembered by pointer (failing to, on ENOMEM, costs the
 * next lookup).
 */
static uint32_t frame_id_by_ptr(struct ds_stacks *st, const struct ds_cc_frame *f, const struct recent *k)
{
	uint64_t h = dsi_hash_pair(dsi_hash_pair((uintptr_t)k->sym, (uintptr_t)k->dso), k->flags);
	uint32_t id = dsi_idmap__find(&st->ptr_ids, h, ptr_eq, st, k);

	if (id != DSI_IDMAP_NONE)
		return st->ptrs[id].id;
	if ((id = frame_id_slow(st, f)) == UINT32_MAX ||
	    room((void **)&st->ptrs, st->nr_ptrs, &st->cap_ptrs, sizeof(*st->ptrs)) ||
	    dsi_idmap__add(&st->ptr_ids, h, (uint32_t)st->nr_ptrs) < 0)
		return id;
	st->ptrs[st->nr_ptrs] = *k;
	st->ptrs[st->nr_ptrs++].id = id;
	return id;
}

/*
 * The frame id of @f: by its string pointers first (the machine's strings
 * are interned and live as long as it does), else by their texts.
 */
static uint32_t frame_id(struct ds_stacks *st, const struct ds_cc_frame *f)
{
	uint32_t flags = 1u | (uint32_t)f->kernel << 1 | (uint32_t)f->inlined << 2;
	struct recent *r = &st->recent[(((uintptr_t)f->sym ^ (uintptr_t)f->dso << 7) * 0x9e3779b97f4a7c15ULL) >> 54];
	uint32_t id;

	if (r->flags == flags && r->sym == f->sym && r->dso == f->dso)
		return r->id;
	id = frame_id_slow(st, f);
	if (id != UINT32_MAX)
		*r = (struct recent){ f->sym, f->dso, flags, id };
	return id;
}

/*
 * (The caller has a direct-mapped cache of its own, with recent's index:
 * what misses there misses in recent too, so the map by pointer serves.)
 */
uint32_t dsi_stacks__frame_id(struct ds_stacks *st, const void *machine, const struct ds_cc_frame *f)
{
	struct recent k = { f->sym, f->dso, 1u | (uint32_t)f->kernel << 1 | (uint32_t)f->inlined << 2, 0 };

	if (machine != st->machine) {
		ds_stacks__end_source(st);
		st->machine = machine;
	}
	return frame_id_by_ptr(st, f, &k);
}

static uint32_t build_id_str(struct ds_stacks *st, const struct ds_dso *dso)
{
	static const char hex[] = "0123456789abcdef";
	char buf[2 * 64 + 1];
	size_t len = 0;
	const uint8_t *bid = ds_dso__build_id(dso, &len);

	if (len > 64)
		len = 64;
	for (size_t i = 0; i < len; i++) {
		buf[2 * i] = hex[bid[i] >> 4];
		buf[2 * i + 1] = hex[bid[i] & 15];
	}
	buf[2 * len] = 0;
	return ds_stacks__intern_str(st, buf);
}

static bool map_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct ds_stacks_map *m = &((const struct ds_stacks *)ctx)->maps[id], *k = key;

	return m->start == k->start && m->end == k->end && m->pgoff == k->pgoff && m->file == k->file;
}

/* The map id + 1 of a frame's file mapping, 0 if it has none; UINT32_MAX on ENOMEM. */
static uint32_t map_id(struct ds_stacks *st, const struct ds_cc_frame *f)
{
	if (!st->o.maps || !f->dso_obj || f->kernel)
		return 0;
	struct ds_stacks_map key = { f->map_start, f->map_end, f->map_pgoff, ds_stacks__intern_str(st, f->dso), 0 };
	uint64_t k = dsi_hash_pair(dsi_hash_pair(key.start, key.end), dsi_hash_pair(key.pgoff, key.file));
	uint32_t id;

	if (key.file == UINT32_MAX || room((void **)&st->maps, st->nr_maps, &st->cap_maps, sizeof(*st->maps)))
		return UINT32_MAX;
	id = dsi_idmap__find(&st->map_ids, k, map_eq, st, &key);
	if (id != DSI_IDMAP_NONE)
		return id + 1;
	/* (the build id's string is made after the file's, as ids are numbered in order) */
	key.build_id = build_id_str(st, f->dso_obj);
	if (key.build_id == UINT32_MAX || dsi_idmap__add(&st->map_ids, k, (uint32_t)st->nr_maps) < 0)
		return UINT32_MAX;
	st->maps[st->nr_maps] = key;
	return (uint32_t)st->nr_maps++ + 1;
}

static uint64_t ents_hash(const struct ds_stacks_entry *e, size_t n)
{
	uint64_t h = n;

	for (size_t i = 0; i < n; i++)
		h = dsi_hash_pair(h ^ e[i].ip, (uint64_t)e[i].frame << 32 | e[i].map);
	return h;
}

/* Is stack @id the one of the entries just appended at ents[*key ..]? */
static bool stack_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct ds_stacks *st = ctx;
	const struct dsi_stack *s = &st->stacks[id];
	size_t off = *(const size_t *)key, len = st->nr_ents - off;
	const struct ds_stacks_entry *a, *b;

	if (s->len != len)
		return false;
	if (!len)
		return true;   /* (ents may be NULL: no pointer arithmetic on it) */
	a = st->ents + s->off;
	b = st->ents + off;
	for (size_t i = 0; i < len; i++)
		if (a[i].ip != b[i].ip || a[i].frame != b[i].frame || a[i].map != b[i].map)
			return false;
	return true;
}

/*
 * The stack of the entries just appended at ents[off ..]: an equal one
 * seen before (the entries appended are dropped), else a new one.
 * UINT32_MAX on ENOMEM.
 */
static uint32_t intern_stack(struct ds_stacks *st, size_t off)
{
	size_t len = st->nr_ents - off;
	/* an empty first stack leaves ents NULL, and NULL + 0 is undefined */
	const struct ds_stacks_entry *e = len ? st->ents + off : NULL;
	uint32_t id;
	bool added;

	if (room((void **)&st->stacks, st->nr_stacks, &st->cap_stacks, sizeof(*st->stacks)))
		return UINT32_MAX;
	id = dsi_idmap__find_or_add(&st->stack_ids, dsi_hash64(ents_hash(e, len)), stack_eq, st, &off,
				   (uint32_t)st->nr_stacks, &added);
	if (added)
		st->stacks[st->nr_stacks++] = (struct dsi_stack){ off, len };
	else if (id != UINT32_MAX)
		st->nr_ents = off;   /* an equal stack: the entries appended are dropped */
	return id;
}

/*
 * The source position of frame @i of @s (frame @fid), from DWARF: its
 * depth in its address's inline chain (the chain's first frame at
 * *@group, *@glen long) names which.  0, or UINT32_MAX on ENOMEM; the
 * line in *@line.
 */
static uint32_t entry_src(struct ds_stacks *st, const struct ds_profile_sample *s, size_t i, uint32_t fid,
			  size_t *group, size_t *glen, uint32_t *line)
{
	const struct ds_cc_frame *f = &s->frames[i];
	struct ds_srcline sl;
	uint32_t src;

	if (i - *group >= *glen) {
		*group = i;
		*glen = i + 1 < s->nr_frames && s->frames[i + 1].ip == f->ip ? ds_cc_frame__inline_chain(f) : 1;
	}
	if (f->kernel || !f->dso_obj || ds_dso__srcline(f->dso_obj, f->addr, (unsigned)(i - *group), &sl) || !sl.line)
		return DS_STACKS_STR_EMPTY;
	if ((src = ds_stacks__intern_str(st, sl.file)) == UINT32_MAX)
		return UINT32_MAX;
	*line = sl.line;
	if (fid != UINT32_MAX && st->frames[fid].src == DS_STACKS_STR_EMPTY)
		st->frames[fid].src = src;
	return src;
}

/* Entry @i of @s's frames appended (room made for it).  0 or -ENOMEM. */
static int append_entry(struct ds_stacks *st, const struct ds_profile_sample *s, size_t i, size_t *group,
			size_t *glen)
{
	const struct ds_cc_frame *f = &s->frames[i];
	uint32_t fid = frame_id(st, f), map = st->o.maps ? map_id(st, f) : 0, src = DS_STACKS_STR_EMPTY, line = 0;

	if (st->o.srclines)
		src = entry_src(st, s, i, fid, group, glen, &line);
	if (fid == UINT32_MAX || map == UINT32_MAX || src == UINT32_MAX)
		return -ENOMEM;
	st->ents[st->nr_ents++] = (struct ds_stacks_entry){ f->ip, fid, map, src, line };
	return 0;
}

int ds_stacks__intern(struct ds_stacks *st, const struct ds_profile_sample *s, uint32_t *stack)
{
	uint64_t *v;
	size_t off = st->nr_ents, group = 0, glen = 0;
	uint32_t id;

	if (s->machine != st->machine) {
		ds_stacks__end_source(st);
		st->machine = s->machine;
	}
	if (s->chain_id && (v = dsi_hashmap__find(&st->chain_stacks, s->chain_id))) {
		*stack = (uint32_t)*v;
		return 0;
	}
	struct ds_stacks_entry *e = dsi_grow(st->ents, &st->cap_ents, st->nr_ents + s->nr_frames, sizeof(*e), 1024);

	if (!e)
		return -ENOMEM;
	st->ents = e;
	for (size_t i = 0; i < s->nr_frames; i++) {
		if (s->frames[i].cookie)
			continue; /* an unresolved deferred chain has no frames to show */
		if (append_entry(st, s, i, &group, &glen)) {
			st->nr_ents = off;
			return -ENOMEM;
		}
	}
	id = intern_stack(st, off);
	if (id == UINT32_MAX) {
		st->nr_ents = off;
		return -ENOMEM;
	}
	if (dsi_hashmap__count(&st->chain_stacks) >= st->o.chain_memo_max) {
		dsi_hashmap__exit(&st->chain_stacks);
		dsi_hashmap__init(&st->chain_stacks);
	}
	if (s->chain_id && dsi_hashmap__set(&st->chain_stacks, s->chain_id, id) < 0)
		return -ENOMEM;
	*stack = id;
	return 0;
}

static uint64_t sample_key(const struct ds_stacks_sample *xs)
{
	return dsi_hash_pair(dsi_hash_pair(xs->stack, (uint64_t)xs->comm << 32 | xs->event),
			    ((uint64_t)(uint32_t)xs->pid << 32 | (uint32_t)xs->tid) ^ (uint64_t)(uint32_t)xs->cpu << 17);
}

static bool sample_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct ds_stacks_sample *o = &((const struct ds_stacks *)ctx)->samples[id], *xs = key;

	return o->stack == xs->stack && o->comm == xs->comm && o->event == xs->event &&
	       o->pid == xs->pid && o->tid == xs->tid && o->cpu == xs->cpu;
}

/* @xs kept: merged into an equal one (aggregating) or appended.  0 or a negative errno. */
static int keep_sample(struct ds_stacks *st, const struct ds_stacks_sample *xs)
{
	uint64_t key = sample_key(xs);
	struct ds_stacks_sample *n;

	if (st->o.aggregate) {
		uint32_t id = dsi_idmap__find(&st->sample_ids, key, sample_eq, st, xs);

		if (id != DSI_IDMAP_NONE) {
			st->samples[id].count++;
			st->samples[id].period += xs->period;
			return 0;
		}
	}
	/* (kept one by one, samples are not ids: only aggregated ones are) */
	n = dsi_grow(st->samples, &st->cap_samples, st->nr_samples + 1, sizeof(*n), 1024);
	if (!n || (st->o.aggregate && st->nr_samples >= UINT32_MAX - 1))
		return -ENOMEM;
	st->samples = n;
	if (st->o.aggregate && dsi_idmap__add(&st->sample_ids, key, (uint32_t)st->nr_samples) < 0)
		return -ENOMEM;
	st->samples[st->nr_samples++] = *xs;
	if (st->o.full_fn && st->o.max_samples && st->nr_samples >= st->o.max_samples)
		return st->o.full_fn(st->o.full_ctx, st);
	return 0;
}

int ds_stacks__add(struct ds_stacks *st, const struct ds_profile_sample *s)
{
	const char *comm = s->comm ? s->comm : ":-1";
	struct ds_stacks_sample xs = {
		.time = s->ev->sample.time, .period = s->period, .count = 1, .pid = s->pid, .tid = s->tid,
		.cpu = s->ev->sample.has_cpu ? (int32_t)s->ev->sample.cpu : -1,
		.comm = st->o.comms_to_fn && st->o.sample_fn ? DS_STACKS_STR_EMPTY : ds_stacks__intern_str(st, comm),
		.event = ds_stacks__intern_str(st, s->evsel && s->evsel->name ? s->evsel->name : "unknown"),
	};
	int err;

	if (xs.comm == UINT32_MAX || xs.event == UINT32_MAX)
		return -ENOMEM;
	if ((err = ds_stacks__intern(st, s, &xs.stack)))
		return err;
	if (!st->first_period)
		st->first_period = xs.period;
	if (xs.time != DS_NO_TIME) {
		st->time_first = xs.time < st->time_first ? xs.time : st->time_first;
		st->time_last = xs.time > st->time_last ? xs.time : st->time_last;
	}
	if (st->o.sample_fn)
		return st->o.sample_fn(st->o.sample_ctx, &xs, comm);
	return keep_sample(st, &xs);
}

const struct ds_stacks_frame *ds_stacks__frame(const struct ds_stacks *st, uint32_t id)
{
	return &st->frames[id];
}

size_t ds_stacks__nr_frames(const struct ds_stacks *st)
{
	return st->nr_frames;
}

const struct ds_stacks_map *ds_stacks__map(const struct ds_stacks *st, uint32_t id)
{
	return &st->maps[id];
}

size_t ds_stacks__nr_maps(const struct ds_stacks *st)
{
	return st->nr_maps;
}

const struct ds_stacks_entry *ds_stacks__stack(const struct ds_stacks *st, uint32_t id, size_t *len)
{
	*len = st->stacks[id].len;
	return *len ? st->ents + st->stacks[id].off : NULL;
}

size_t ds_stacks__nr_stacks(const struct ds_stacks *st)
{
	return st->nr_stacks;
}

const struct ds_stacks_sample *ds_stacks__samples(const struct ds_stacks *st, size_t *nr)
{
	*nr = st->nr_samples;
	return st->samples;
}

void ds_stacks__clear_samples(struct ds_stacks *st)
{
	st->nr_samples = 0;
	dsi_idmap__exit(&st->sample_ids);
}

void ds_stacks__set_sample_fn(struct ds_stacks *st, ds_stacks_sample_fn fn, void *ctx, bool comms_to_fn)
{
	st->o.sample_fn = fn;
	st->o.sample_ctx = ctx;
	st->o.comms_to_fn = comms_to_fn;
}

bool ds_stacks__time_span(const struct ds_stacks *st, uint64_t *first, uint64_t *last)
{
	*first = st->time_first;
	*last = st->time_last;
	return st->time_first <= st->time_last;
}

uint64_t ds_stacks__first_period(const struct ds_stacks *st)
{
	return st->first_period;
}

size_t ds_stacks__mem(const struct ds_stacks *st)
{
	return sizeof(*st) + dsi_strset__mem(&st->strs) + st->cap_frames * sizeof(*st->frames) +
	       st->frame_ids.cap * sizeof(*st->frame_ids.slots) + st->cap_maps * sizeof(*st->maps) +
	       st->map_ids.cap * sizeof(*st->map_ids.slots) + st->cap_ents * sizeof(*st->ents) +
	       st->cap_stacks * sizeof(*st->stacks) + st->stack_ids.cap * sizeof(*st->stack_ids.slots) +
	       st->chain_stacks.cap * sizeof(*st->chain_stacks.slots) + st->sample_ids.cap * sizeof(*st->sample_ids.slots) +
	       st->cap_samples * sizeof(*st->samples) +
	       st->cap_ptrs * sizeof(*st->ptrs) + st->ptr_ids.cap * sizeof(*st->ptr_ids.slots);
}
