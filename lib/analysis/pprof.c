// SPDX-License-Identifier: MIT
/*
 * pprof (dstack/export.h): the samples as a gzip-compressed profile.proto,
 * encoded by hand, on the stack model (its string ids are the string
 * table's).  Values: samples/count and cpu/nanoseconds (the period) for clock
 * events, events/count otherwise.  A Location is one address with its
 * inlined functions as Line entries, innermost first; Functions are
 * (name, dso) pairs; Mappings are the recorded file maps (range, offset,
 * file, build-id) the frames fell in, plus one per other DSO (the kernel)
 * spanning the addresses seen in it.
 * Lines carry their source line and Functions their source file where
 * DWARF gives them (else the binary's path), for go tool pprof's -lines,
 * -list and source views.
 * Labels: "comm" (string), "pid", "tid" and, when recorded, "cpu" (numbers).
 *
 * For continuous-profiling systems (Pyroscope, Parca, Grafana): the
 * mapping of the main binary (the file the most stacks start in) is the
 * first; with several events, each is a pair of sample types of its own
 * ("EVENT_samples"/count and EVENT with its unit), a sample of one event
 * zero in the others' (or one profile per event: ds_pprof_write_opts.event);
 * time_nanos is the wall clock
 * of the first sample, worked out from the file's last write (the end of
 * the recording, perf's "captured on") less the recording's span, and
 * duration_nanos that span (the header's sample times, else the samples').
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>
#include "dstack/export.h"
#include "dstack/stacks.h"
#include "analysis/analysis_int.h"
#include "analysis/stacks_int.h"
#include "analysis/wbuf.h"
#include "util/grow.h"
#include "util/spill.h"

#define DEFAULT_MEMORY ((size_t)1 << 30)


struct pb {
	uint8_t *b;
	size_t len, cap;
	int err;
};

/* @d may be NULL when @n is 0 (an empty sub-message never allocated): nothing to copy then */
static void pb_put(struct pb *p, const void *d, size_t n)
{
	if (p->err || !n)
		return;
	uint8_t *nb = n <= SIZE_MAX - p->len ? dsi_grow(p->b, &p->cap, p->len + n, 1, 4096) : NULL;

	if (!nb) {
		p->err = ENOMEM;
		return;
	}
	p->b = nb;
	memcpy(p->b + p->len, d, n);
	p->len += n;
}

static void pb_varint(struct pb *p, uint64_t v)
{
	uint8_t b[10];
	size_t n = 0;

	do {
		b[n++] = (uint8_t)((v & 0x7f) | (v >= 0x80 ? 0x80 : 0));
		v >>= 7;
	} while (v);
	pb_put(p, b, n);
}

/* Field @f as a varint (wire type 0); zero values are left out, as proto3 does. */
static void pb_uint(struct pb *p, unsigned f, uint64_t v)
{
	if (!v)
		return;
	pb_varint(p, (uint64_t)f << 3);
	pb_varint(p, v);
}

/* Field @f with length-delimited content @d (wire type 2). */
static void pb_bytes(struct pb *p, unsigned f, const void *d, size_t n)
{
	pb_varint(p, (uint64_t)f << 3 | 2);
	pb_varint(p, n);
	pb_put(p, d, n);
}

/* Append the message built in @sub as field @f of @p, and empty @sub. */
static void pb_msg(struct pb *p, unsigned f, struct pb *sub)
{
	if (sub->err)
		p->err = sub->err;
	pb_bytes(p, f, sub->b, sub->len);
	sub->len = 0;
}

struct mapping {
	uint64_t start, limit, offset;
	uint32_t dso, build_id;      /* string ids; build_id 0 ("") when none */
};

/*
 * The samples, aggregated: in x->samples while they fit a quarter of the
 * budget.  Past it (a long recording of countless tasks: a sample per
 * (stack, comm, pid, tid, cpu)) they go, and every later sample with
 * them, to a tally per event keyed by struct skey and the comm's text
 * (util/spill.h), which spills sorted runs to disk and sums equal samples
 * when read; comms are then no longer interned.  What the profile needs
 * of every sample is kept on the way: the events in order of first
 * sample, each one's first period, and the samples per stack (the main
 * binary).
 */
struct store {
	struct ds_stacks *x;
	size_t budget;
	uint32_t *events;            /* event name string ids, in order of first sample */
	uint64_t *first_period;      /* per event: its first sample's period per sample */
	struct dsi_tally **tallies;  /* per event, once spilled */
	size_t nr_events, cap_events, cap_periods, cap_tallies;
	uint64_t *stack_count;       /* per stack: its samples */
	size_t cap_stacks;
	size_t noted;                /* x->samples noted so far */
	bool spilled;
	int err;                     /* the spill's failure (in msg) */
	const char *tmpdir;          /* where the tallies spill */
	char msg[512];               /* a spill file's first failure as text (said by ds_errmsg()), "" none */
	int msg_err;                 /* its errno */
	char key[512];               /* a key being made: struct skey, then the comm */
};

/* A spilled sample's key: the rest of an aggregated sample but its event (the tally's), then its comm's text. */
struct skey {
	uint32_t stack;
	int32_t pid, tid, cpu;
};

/* Keep the first spill file failure's text and its errno @err (said again by ds_errmsg() when a call fails of it). */
static void tally_failed(struct store *st, const struct dsi_tally *t, int err)
{
	if (dsi_tally__error(t) && !st->msg[0]) {
		snprintf(st->msg, sizeof(st->msg), "%s", dsi_tally__error(t));
		st->msg_err = err;
	}
}

/* Spilled profiles name comms by text: each new one is a string emitted as it is first used (cached by hash). */
#define COMM_CACHE 4096

struct comm_slot {
	char text[28];
	uint32_t id1;                /* string id + 1; 0: empty */
};

struct pprof {
	struct ds_stacks *x;
	struct store *st;
	struct pb out, msg, sub, packed;
	struct dsi_idmap locs;        /* (ip, func chain, map) -> location id */
	uint64_t *loc_key_off;       /* location id - 1 -> (ents offset << 16 | length) */
	size_t nr_locs, cap_locs;
	struct mapping *maps;        /* x->maps first, then the DSO spans */
	size_t nr_maps;
	uint32_t *map_of_dso;        /* dso string id -> span mapping id (0: none) */
	uint64_t *loc_ids;           /* scratch: one sample's location ids */
	uint32_t *map_new_id;        /* x->maps index -> mapping id (the main binary's is 1) */
	ds_write_fn write;           /* the output */
	void *write_ctx;
	enum ds_profile_time_mode time_mode;
	const struct ds_pprof_write_opts *wo;
	uint32_t nr_strings;         /* spilled: strings emitted (ids given) so far */
	struct comm_slot *comms;     /* spilled: COMM_CACHE of them */
	z_stream z;                  /* compressing it (z_on: begun) */
	bool z_on;
	const uint32_t *events;      /* the store's */
	size_t nr_events;
	int only_event;              /* -1: every event; else the index in events of the one written */
};

/*
 * Compress what pp->out holds and write it to pp->fd, then empty it;
 * @finish ends the gzip stream.  The profile is written as it is made,
 * so that its size is not held in memory.  0 or an errno.
 */
static int gz_put(struct pprof *pp, bool finish)
{
	z_stream *z = &pp->z;
	uint8_t buf[1 << 16];
	size_t left = pp->out.len;

	if (pp->out.err || pp->msg.err)
		return pp->out.err ? pp->out.err : pp->msg.err;
	if (!pp->z_on) {
		if (deflateInit2(z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
			return ENOMEM;
		pp->z_on = true;
	}
	z->next_in = pp->out.b;
	z->avail_in = 0;
	for (;;) {
		/* zlib takes at most 4 GiB per call: the rest is fed as it is consumed */
		if (!z->avail_in && left) {
			z->avail_in = (uInt)(left < UINT32_MAX ? left : UINT32_MAX);
			left -= z->avail_in;
		}
		int flush = finish && !left ? Z_FINISH : Z_NO_FLUSH, zr;

		z->next_out = buf;
		z->avail_out = sizeof(buf);
		zr = deflate(z, flush);
		if (zr == Z_STREAM_ERROR)
			return EIO;
		size_t n = sizeof(buf) - z->avail_out;
		int werr = n ? pp->write(pp->write_ctx, buf, n) : 0;

		if (werr)
			return werr < 0 ? -werr : EIO;
		if (flush == Z_FINISH ? zr == Z_STREAM_END : !z->avail_in && !left && z->avail_out)
			break;
	}
	pp->out.len = 0;
	return 0;
}

/* Past a MiB of encoded profile, compress and write it.  0 or an errno. */
static int pb_drain(struct pprof *pp)
{
	return pp->out.len < ((size_t)1 << 20) ? pp->out.err : gz_put(pp, false);
}

static uint64_t chain_hash(const struct ds_stacks_entry *e, size_t n)
{
	uint64_t h = dsi_hash_pair(e[0].ip, e[n - 1].map);

	for (size_t i = 0; i < n; i++)
		h = dsi_hash_pair(h, e[i].frame);
	return dsi_hash64(h);
}

/* A location looked up: its frames e[0 .. n) */
struct loc_key {
	const struct ds_stacks_entry *e;
	size_t n;
};

/* Is location @id (1, 2, ...) the frames of @key? */
static bool same_chain(const void *ctx, uint32_t id, const void *key)
{
	const struct pprof *pp = ctx;
	const struct loc_key *k = key;
	uint64_t at = pp->loc_key_off[id - 1];
	const struct ds_stacks_entry *o = pp->x->ents + (at >> 16), *e = k->e;
	size_t n = k->n;

	if ((at & 0xffff) != n || o[0].ip != e[0].ip || o[n - 1].map != e[n - 1].map)
		return false;
	for (size_t i = 0; i < n; i++)
		if (o[i].frame != e[i].frame)
			return false;
	return true;
}

/* The location id of the frames e[0 .. n) (one address, innermost first). */
static uint64_t location_id(struct pprof *pp, size_t off, size_t n)
{
	struct loc_key key = { pp->x->ents + off, n };
	uint64_t *nk = dsi_grow(pp->loc_key_off, &pp->cap_locs, pp->nr_locs + 1, sizeof(*nk), 1024);
	uint32_t id;
	bool added;

	if (!nk || pp->nr_locs >= DSI_IDMAP_NONE - 1)
		return 0;
	pp->loc_key_off = nk;
	id = dsi_idmap__find_or_add(&pp->locs, chain_hash(key.e, n), same_chain, pp, &key,
				   (uint32_t)pp->nr_locs + 1, &added);
	if (id == DSI_IDMAP_NONE)
		return 0;
	if (added)
		pp->loc_key_off[pp->nr_locs++] = (uint64_t)off << 16 | n;
	return id;
}

/* Frames sharing the address of e[0] are one location: inlined ones, then the real function. */
static size_t location_len(const struct ds_stacks *x, const struct ds_stacks_entry *e, size_t left)
{
	size_t n = 1;

	while (n < left && n < 0xffff && e[n].ip == e[0].ip && x->frames[e[n - 1].frame].inlined)
		n++;
	return n;
}

static void label(struct pprof *pp, uint64_t key, uint64_t str, int64_t num)
{
	pb_uint(&pp->sub, 1, key);
	pb_uint(&pp->sub, 2, str);
	pb_uint(&pp->sub, 3, (uint64_t)num);
	pb_msg(&pp->msg, 3, &pp->sub);
}

static void value_type(struct pprof *pp, unsigned field, uint32_t type, uint32_t unit)
{
	pb_uint(&pp->msg, 1, type);
	pb_uint(&pp->msg, 2, unit);
	pb_msg(&pp->out, field, &pp->msg);
}

static size_t event_index(const struct pprof *pp, uint32_t name)
{
	for (size_t e = 0; e < pp->nr_events; e++)
		if (pp->events[e] == name)
			return e;
	return 0;
}

/*
 * One value pair for all samples: one event (or --per-event), or time
 * (--off-cpu/--wall: waits and clock samples, all in ns); else a pair per
 * event.
 */
static bool one_value(const struct pprof *pp)
{
	return pp->only_event >= 0 || pp->nr_events <= 1 || pp->time_mode != DS_PROFILE_CPU;
}

static int encode_sample(struct pprof *pp, const uint32_t *labels, const struct ds_stacks_sample *s)
{
	struct ds_stacks *x = pp->x;
	const struct dsi_stack *st = &x->stacks[s->stack];
	size_t nr = 0, ev = event_index(pp, s->event), nr_values = one_value(pp) ? 1 : pp->nr_events;

	for (size_t j = 0; j < st->len;) {
		size_t n = location_len(x, x->ents + st->off + j, st->len - j);
		uint64_t id = location_id(pp, st->off + j, n);

		if (!id)
			return ENOMEM;
		pp->loc_ids[nr++] = id;
		j += n;
	}
	for (size_t j = 0; j < nr; j++)
		pb_varint(&pp->packed, pp->loc_ids[j]);
	pb_msg(&pp->msg, 1, &pp->packed);
	for (size_t v = 0; v < nr_values; v++) {
		bool mine = nr_values == 1 || v == ev;

		pb_varint(&pp->packed, mine ? s->count : 0);
		pb_varint(&pp->packed, mine ? s->period : 0);
	}
	pb_msg(&pp->msg, 2, &pp->packed);
	label(pp, labels[0], s->comm, 0);
	label(pp, labels[1], 0, s->pid);
	label(pp, labels[2], 0, s->tid);
	if (s->cpu >= 0)
		label(pp, labels[3], 0, s->cpu);
	pb_msg(&pp->out, 2, &pp->msg);
	return pb_drain(pp);
}

/* The string id of comm @text[0 .. @len) in a spilled profile: cached, else emitted now.  UINT32_MAX: ENOMEM. */
static uint32_t spilled_comm(struct pprof *pp, const char *text, size_t len)
{
	struct comm_slot *c = &pp->comms[dsi_hash64(dsi_hash_bytes(text, len)) % COMM_CACHE];

	if (c->id1 && len < sizeof(c->text) && !memcmp(c->text, text, len) && !c->text[len])
		return c->id1 - 1;
	if (pp->nr_strings >= UINT32_MAX - 1)
		return UINT32_MAX;
	pb_bytes(&pp->out, 6, text, len);
	if (len < sizeof(c->text)) {
		memcpy(c->text, text, len);
		c->text[len] = 0;
		c->id1 = pp->nr_strings + 1;
	}
	return pp->nr_strings++;
}

/* Event @e's spilled samples, summed, in key order (the tally is read once: one profile per event at most). */
static int encode_spilled(struct pprof *pp, const uint32_t *labels, size_t e)
{
	struct dsi_tally *t = e < pp->st->nr_events ? pp->st->tallies[e] : NULL;
	const char *text;
	size_t len;
	uint64_t count, period;
	int got, err;

	while (t && (got = dsi_tally__next(t, &text, &len, &count, &period))) {
		struct skey k;

		if (got < 0) {
			tally_failed(pp->st, t, -got);
			return -got;
		}
		if (len < sizeof(k))
			return EIO;
		memcpy(&k, text, sizeof(k));
		struct ds_stacks_sample xs = { .period = period, .count = count, .pid = k.pid, .tid = k.tid, .cpu = k.cpu,
				      .comm = spilled_comm(pp, text + sizeof(k), len - sizeof(k)),
				      .event = pp->events[e], .stack = k.stack };

		if (xs.comm == UINT32_MAX)
			return ENOMEM;
		if ((err = encode_sample(pp, labels, &xs)))
			return err;
	}
	return 0;
}

static int encode_samples(struct pprof *pp, const uint32_t *labels)
{
	struct ds_stacks *x = pp->x;
	int err;

	if (pp->st->spilled) {
		for (size_t e = 0; e < pp->nr_events; e++)
			if ((pp->only_event < 0 || e == (size_t)pp->only_event) && (err = encode_spilled(pp, labels, e)))
				return err;
		return 0;
	}
	for (size_t i = 0; i < x->nr_samples; i++) {
		const struct ds_stacks_sample *s = &x->samples[i];

		if (pp->only_event >= 0 && event_index(pp, s->event) != (size_t)pp->only_event)
			continue;
		if ((err = encode_sample(pp, labels, s)))
			return err;
	}
	return 0;
}

/* A shared library ("lib.so", "lib.so.6") or a made-up name ("[vdso]", "//anon"). */
static bool not_main(const char *path)
{
	const char *base = strrchr(path, '/'), *so;

	base = base ? base + 1 : path;
	so = strstr(base, ".so");
	return path[0] != '/' || (so && (so[3] == 0 || so[3] == '.'));
}

/*
 * The main binary: of the files the samples' frames fall in (each weighed
 * by the samples of the stacks it is in), the most sampled that is no
 * shared library, else the most sampled; its lowest mapping.  nr_maps
 * when there is no file map.
 */
static size_t main_mapping(const struct pprof *pp)
{
	const struct ds_stacks *x = pp->x;
	uint64_t *by_file = calloc(x->strs.nr + 1, sizeof(*by_file));
	uint32_t best = UINT32_MAX, best_exe = UINT32_MAX;
	size_t main = x->nr_maps;

	if (!by_file)
		return x->nr_maps;   /* out of memory: the recorded order */
	for (size_t i = 0; i < x->nr_stacks && i < pp->st->cap_stacks; i++) {
		const struct dsi_stack *st = &x->stacks[i];

		for (size_t j = 0; j < st->len && pp->st->stack_count[i]; j++) {
			uint32_t m = x->ents[st->off + j].map;

			if (m)
				by_file[x->maps[m - 1].file] += pp->st->stack_count[i];
		}
	}
	for (size_t f = 0; f < x->strs.nr; f++) {
		if (!by_file[f])
			continue;
		if (best == UINT32_MAX || by_file[f] > by_file[best])
			best = (uint32_t)f;
		if (!not_main(x->strs.strs[f]) && (best_exe == UINT32_MAX || by_file[f] > by_file[best_exe]))
			best_exe = (uint32_t)f;
	}
	if (best_exe != UINT32_MAX)
		best = best_exe;
	for (size_t m = 0; m < x->nr_maps && best != UINT32_MAX; m++)
		if (x->maps[m].file == best && (main == x->nr_maps || x->maps[m].start < x->maps[main].start))
			main = m;
	free(by_file);
	return main;
}

/*
 * The recorded file maps (the main binary's first), then one mapping per other DSO (the kernel;
 * "[unknown]" has none) spanning the addresses seen in it.
 */
static int build_mappings(struct pprof *pp, uint32_t empty)
{
	struct ds_stacks *x = pp->x;

	size_t main_map = main_mapping(pp);

	pp->map_of_dso = calloc(x->strs.nr + 1, sizeof(*pp->map_of_dso));
	pp->maps = calloc(x->nr_maps + x->strs.nr + 1, sizeof(*pp->maps));
	pp->map_new_id = calloc(x->nr_maps + 1, sizeof(*pp->map_new_id));
	if (!pp->map_of_dso || !pp->maps || !pp->map_new_id)
		return ENOMEM;
	for (size_t m = 0; m < x->nr_maps; m++) {
		const struct ds_stacks_map *xm = &x->maps[m];
		bool has_bid = x->strs.strs[xm->build_id][0] != 0;
		/* the main binary's mapping moves to the front, those before it one down */
		size_t to = m == main_map ? 0 : m < main_map ? m + 1 : m;

		pp->maps[to] = (struct mapping){ xm->start, xm->end, xm->pgoff, xm->file,
						 has_bid ? xm->build_id : empty };
		pp->map_new_id[m] = (uint32_t)to + 1;
	}
	pp->nr_maps = x->nr_maps;
	for (size_t l = 0; l < pp->nr_locs; l++) {
		size_t n = pp->loc_key_off[l] & 0xffff;
		const struct ds_stacks_entry *e = x->ents + (pp->loc_key_off[l] >> 16);
		const struct ds_stacks_frame *f = &x->frames[e[n - 1].frame];
		uint32_t *m = &pp->map_of_dso[f->dso];

		if (e[n - 1].map || !strcmp(x->strs.strs[f->dso], "[unknown]"))
			continue;
		if (!*m) {
			pp->maps[pp->nr_maps] = (struct mapping){ e->ip, e->ip + 1, 0, f->dso, empty };
			*m = (uint32_t)++pp->nr_maps;
		}
		struct mapping *mp = &pp->maps[*m - 1];

		if (e->ip < mp->start)
			mp->start = e->ip;
		if (e->ip >= mp->limit)
			mp->limit = e->ip + 1;
	}
	return 0;
}

static int encode_tables(struct pprof *pp)
{
	struct ds_stacks *x = pp->x;
	int err;

	for (size_t m = 0; m < pp->nr_maps; m++) {
		pb_uint(&pp->msg, 1, m + 1);
		pb_uint(&pp->msg, 2, pp->maps[m].start);
		pb_uint(&pp->msg, 3, pp->maps[m].limit);
		pb_uint(&pp->msg, 4, pp->maps[m].offset);
		pb_uint(&pp->msg, 5, pp->maps[m].dso);
		pb_uint(&pp->msg, 6, pp->maps[m].build_id);
		pb_uint(&pp->msg, 7, 1);     /* has_functions */
		pb_uint(&pp->msg, 10, 1);    /* has_inline_frames */
		pb_msg(&pp->out, 3, &pp->msg);
	}
	for (size_t l = 0; l < pp->nr_locs; l++) {
		const struct ds_stacks_entry *e = x->ents + (pp->loc_key_off[l] >> 16);
		size_t n = pp->loc_key_off[l] & 0xffff;

		pb_uint(&pp->msg, 1, l + 1);
		pb_uint(&pp->msg, 2, e[n - 1].map ? pp->map_new_id[e[n - 1].map - 1] : pp->map_of_dso[x->frames[e[n - 1].frame].dso]);
		pb_uint(&pp->msg, 3, e->ip);
		for (size_t i = 0; i < n; i++) {
			pb_uint(&pp->sub, 1, e[i].frame + 1);
			pb_uint(&pp->sub, 2, e[i].line);   /* 0 (left out): unknown */
			pb_msg(&pp->msg, 4, &pp->sub);
		}
		pb_msg(&pp->out, 4, &pp->msg);
		if ((err = pb_drain(pp)))
			return err;
	}
	for (size_t f = 0; f < x->nr_frames; f++) {
		pb_uint(&pp->msg, 1, f + 1);
		pb_uint(&pp->msg, 2, x->frames[f].name);
		pb_uint(&pp->msg, 3, x->frames[f].name);
		/* the source file from DWARF (go tool pprof -list reads it), else the binary */
		pb_uint(&pp->msg, 4, x->frames[f].src != DS_STACKS_STR_EMPTY ? x->frames[f].src : x->frames[f].dso);
		pb_msg(&pp->out, 5, &pp->msg);
		if ((err = pb_drain(pp)))
			return err;
	}
	return 0;
}

static void encode_times(struct pprof *pp)
{
	const struct ds_stacks *x = pp->x;
	const struct ds_pprof_write_opts *wo = pp->wo;
	uint64_t span = wo->last_time > wo->first_time ? wo->last_time - wo->first_time :
			x->time_first <= x->time_last ? x->time_last - x->time_first : 0;
	uint64_t start = wo->end_wall_ns > span ? wo->end_wall_ns - span : 0;

	/* no end known (a pipe has no file time): the moment of the conversion stands for it */
	if (!wo->end_wall_ns) {
		struct timespec now;

		clock_gettime(CLOCK_REALTIME, &now);
		start = (uint64_t)now.tv_sec * 1000000000ULL + (uint64_t)now.tv_nsec - span;
	}
	pb_uint(&pp->out, 9, start);
	pb_uint(&pp->out, 10, span);
}

/* The index of event @name in the store, added if new (with its first period @period); SIZE_MAX on ENOMEM. */
static size_t store_event(struct store *st, uint32_t name, uint64_t period)
{
	size_t e = 0;

	while (e < st->nr_events && st->events[e] != name)
		e++;
	if (e < st->nr_events)
		return e;
	uint32_t *ev = dsi_grow(st->events, &st->cap_events, e + 1, sizeof(*ev), 8);

	if (ev)
		st->events = ev;
	uint64_t *fp = ev ? dsi_grow(st->first_period, &st->cap_periods, e + 1, sizeof(*fp), 8) : NULL;

	if (fp)
		st->first_period = fp;
	struct dsi_tally **t = fp ? dsi_grow(st->tallies, &st->cap_tallies, e + 1, sizeof(*t), 8) : NULL;

	if (!t)
		return SIZE_MAX;
	st->tallies = t;
	st->events[e] = name;
	st->first_period[e] = period;
	st->tallies[e] = NULL;
	return st->nr_events++;
}

/* @count more samples of stack @stack (the main binary's weight).  0 or ENOMEM. */
static int count_stack(struct store *st, uint32_t stack, uint64_t count)
{
	uint64_t *sc = dsi_grow_zeroed(st->stack_count, &st->cap_stacks, (size_t)stack + 1, sizeof(*sc), 1024);

	if (!sc)
		return ENOMEM;
	st->stack_count = sc;
	sc[stack] += count;
	return 0;
}

/* Note what the profile needs of x->samples[from ..): events, first periods, samples per stack.  0 or ENOMEM. */
static int store_note(struct store *st, size_t from)
{
	const struct ds_stacks *x = st->x;

	for (size_t i = from; i < x->nr_samples; i++) {
		const struct ds_stacks_sample *s = &x->samples[i];

		if (store_event(st, s->event, s->period / (s->count ? s->count : 1)) == SIZE_MAX ||
		    count_stack(st, s->stack, s->count))
			return ENOMEM;
	}
	st->noted = x->nr_samples;
	return 0;
}

/* Add a sample of event @e, its comm @comm, to the event's tally.  0 or an errno (a spill file's failure said). */
static int store_add(struct store *st, size_t e, const struct ds_stacks_sample *s, const char *comm)
{
	struct skey k = { s->stack, s->pid, s->tid, s->cpu };
	size_t n = strlen(comm);
	int err;

	if (!st->tallies[e] && !(st->tallies[e] = dsi_tally__new_in(st->budget / 4 / (st->nr_events + 1), st->tmpdir)))
		return ENOMEM;
	n = n < sizeof(st->key) - sizeof(k) ? n : sizeof(st->key) - sizeof(k);
	memcpy(st->key, &k, sizeof(k));
	memcpy(st->key + sizeof(k), comm, n);
	if ((err = -dsi_tally__add(st->tallies[e], st->key, sizeof(k) + n, s->count, s->period)))
		tally_failed(st, st->tallies[e], err);
	return err;
}

/* The model's sample callback once spilled: the sample to its event's tally.  0 or -errno. */
static int spill_sample(void *ctx, const struct ds_stacks_sample *s, const char *comm)
{
	struct store *st = ctx;
	size_t e = store_event(st, s->event, s->period / (s->count ? s->count : 1));

	if (e == SIZE_MAX || count_stack(st, s->stack, s->count))
		return st->err = ENOMEM, -ENOMEM;
	st->err = store_add(st, e, s, comm);
	return -st->err;
}

/*
 * Move x->samples to the events' tallies, empty them, and hand every later
 * sample to spill_sample, its comm not interned.  0 or an errno.
 */
static int store_spill(struct store *st)
{
	struct ds_stacks *x = st->x;
	int err = store_note(st, st->noted);

	for (size_t i = 0; i < x->nr_samples && !err; i++) {
		const struct ds_stacks_sample *s = &x->samples[i];

		err = store_add(st, store_event(st, s->event, 0), s, x->strs.strs[s->comm]);
	}
	ds_stacks__clear_samples(x);
	st->noted = 0;
	ds_stacks__set_sample_fn(x, spill_sample, st, true);
	st->spilled = true;
	return err;
}

/* The model's hook when its samples are full: to the tallies with them.  0 or -errno. */
static int samples_full(void *ctx, struct ds_stacks *model)
{
	struct store *st = ctx;

	return st->err = store_spill(st), -st->err;
}

static void store_exit(struct store *st)
{
	for (size_t e = 0; e < st->nr_events; e++)
		dsi_tally__delete(st->tallies[e]);
	free(st->tallies);
	free(st->events);
	free(st->first_period);
	free(st->stack_count);
}

/*
 * The sample types: one event (or --per-event), samples/count and its
 * period (cpu/nanoseconds for a clock, events/count otherwise); several,
 * EVENT_samples/count and EVENT/unit for each.  The period type is the
 * (first) event's.
 */
static int value_types(struct pprof *pp, uint32_t *period_type, uint32_t *period_unit)
{
	struct ds_stacks *x = pp->x;
	size_t first = pp->only_event >= 0 ? (size_t)pp->only_event : 0;
	const char *ev0 = pp->nr_events ? x->strs.strs[pp->events[first]] : "";
	uint32_t s_count = ds_stacks__intern_str(x, "count");

	if (one_value(pp)) {
		uint32_t s_samples = ds_stacks__intern_str(x, "samples");
		bool ns = dsi_is_clock(ev0) || pp->time_mode != DS_PROFILE_CPU;

		/* --off-cpu/--wall: the values are waits (and clock samples) in ns */
		*period_type = ds_stacks__intern_str(x, pp->time_mode == DS_PROFILE_OFFCPU ? "off-cpu" : pp->time_mode == DS_PROFILE_WALL ? "wall" :
					    dsi_is_clock(ev0) ? "cpu" : "events");
		*period_unit = ds_stacks__intern_str(x, ns ? "nanoseconds" : "count");
		if (s_samples == UINT32_MAX || s_count == UINT32_MAX || *period_type == UINT32_MAX ||
		    *period_unit == UINT32_MAX)
			return ENOMEM;
		value_type(pp, 1, s_samples, s_count);
		value_type(pp, 1, *period_type, *period_unit);
		return 0;
	}
	for (size_t e = 0; e < pp->nr_events; e++) {
		char buf[512];
		const char *name = x->strs.strs[pp->events[e]];
		uint32_t t, u = ds_stacks__intern_str(x, dsi_is_clock(name) ? "nanoseconds" : "count");

		snprintf(buf, sizeof(buf), "%s_samples", name);
		t = ds_stacks__intern_str(x, buf);
		if (t == UINT32_MAX || u == UINT32_MAX || s_count == UINT32_MAX)
			return ENOMEM;
		value_type(pp, 1, t, s_count);
		value_type(pp, 1, pp->events[e], u);
		if (!e) {
			*period_type = pp->events[e];
			*period_unit = u;
		}
	}
	return 0;
}

/* The string table, xdata's ids. */
static int encode_strings(struct pprof *pp)
{
	const struct ds_stacks *x = pp->x;
	int err;

	for (size_t i = 0; i < x->strs.nr; i++) {
		pb_bytes(&pp->out, 6, x->strs.strs[i], strlen(x->strs.strs[i]));
		if ((err = pb_drain(pp)))
			return err;
	}
	pp->nr_strings = (uint32_t)x->strs.nr;
	return 0;
}

static int encode_profile(struct pprof *pp)
{
	struct ds_stacks *x = pp->x;
	uint32_t empty = ds_stacks__intern_str(x, ""); /* string_table[0] must be "" */
	uint32_t labels[4] = { ds_stacks__intern_str(x, "comm"), ds_stacks__intern_str(x, "pid"), ds_stacks__intern_str(x, "tid"), ds_stacks__intern_str(x, "cpu") };
	uint32_t s_cpu = 0, s_ns = 0;   /* set by value_types() */
	uint64_t period = 0;
	size_t longest = 0;
	int err;

	if (empty == UINT32_MAX || labels[0] == UINT32_MAX || labels[1] == UINT32_MAX || labels[2] == UINT32_MAX ||
	    labels[3] == UINT32_MAX)
		return ENOMEM;
	for (size_t i = 0; i < x->nr_stacks; i++)
		longest = x->stacks[i].len > longest ? x->stacks[i].len : longest;
	period = x->first_period;
	if (pp->only_event >= 0 && pp->st->spilled)
		period = pp->st->first_period[pp->only_event];
	for (size_t i = 0; pp->only_event >= 0 && !pp->st->spilled && i < x->nr_samples; i++)
		if (x->samples[i].event == pp->events[pp->only_event]) {
			period = x->samples[i].period / (x->samples[i].count ? x->samples[i].count : 1);
			break;
		}
	pp->loc_ids = malloc((longest + 1) * sizeof(*pp->loc_ids));
	if (!pp->loc_ids || (pp->st->spilled && !(pp->comms = calloc(COMM_CACHE, sizeof(*pp->comms)))))
		return ENOMEM;
	if ((err = value_types(pp, &s_cpu, &s_ns)))
		return err;
	/* spilled: the strings first, the comms' after them as the samples name them */
	if (pp->st->spilled && empty == 0 && (err = encode_strings(pp)))
		return err;
	if ((err = encode_samples(pp, labels)) || (err = build_mappings(pp, empty)))
		return err;
	if ((err = encode_tables(pp)))
		return err;
	/* the string table: id 0 must be "", which the ids above never are */
	if (empty != 0)
		return EINVAL;
	if (!pp->st->spilled && (err = encode_strings(pp)))
		return err;
	encode_times(pp);
	value_type(pp, 11, s_cpu, s_ns);
	pb_uint(&pp->out, 12, period);
	return pp->out.err ? pp->out.err : pp->msg.err;
}

static void pprof_free(struct pprof *pp)
{
	if (pp->z_on)
		deflateEnd(&pp->z);
	free(pp->out.b);
	free(pp->msg.b);
	free(pp->sub.b);
	free(pp->packed.b);
	free(pp->loc_key_off);
	free(pp->maps);
	free(pp->map_of_dso);
	free(pp->map_new_id);
	free(pp->loc_ids);
	free(pp->comms);
	dsi_idmap__exit(&pp->locs);
}

/* One profile (every event, or events[only]) written to @fn; 0 or an errno. */
static int write_profile(struct store *st, int only, enum ds_profile_time_mode time_mode,
			 const struct ds_pprof_write_opts *wo, ds_write_fn fn, void *ctx)
{
	struct pprof pp = { .x = st->x, .st = st, .events = st->events, .nr_events = st->nr_events,
			    .only_event = only, .write = fn, .write_ctx = ctx, .time_mode = time_mode, .wo = wo };
	int err;

	if (st->x->nr_samples > UINT32_MAX / 2 || st->x->nr_ents >= (1ULL << 47))
		err = EOVERFLOW;
	else if (!(err = encode_profile(&pp)))
		err = gz_put(&pp, true);
	pprof_free(&pp);
	return err;
}

struct ds_pprof {
	struct ds_pprof_opts o;
	struct store st;
	bool noted;                  /* store_note done (the walk is over) */
	bool written_all;
	bool *written;               /* per event, once noted */
};

struct ds_pprof *ds_pprof__new(const struct ds_pprof_opts *opts)
{
	struct ds_pprof *pp = calloc(1, sizeof(*pp));
	size_t budget;

	if (!pp) {
		errno = ENOMEM;
		return NULL;
	}
	if (opts)
		memcpy(&pp->o, opts, opts->sz < sizeof(pp->o) ? opts->sz : sizeof(pp->o));
	pp->o.sz = sizeof(pp->o);
	budget = pp->o.memory ? pp->o.memory : DEFAULT_MEMORY;
	pp->st.budget = budget;
	pp->st.tmpdir = pp->o.tmpdir;
	struct ds_stacks_opts mo = {
		.sz = sizeof(mo), .srclines = true, .maps = true,
		.aggregate = true,   /* a profile.proto's samples add up: equal ones are one */
		.full_fn = samples_full, .full_ctx = &pp->st,
		.max_samples = budget / 4 / (sizeof(struct ds_stacks_sample) + 16),   /* and their index's slots */
	};

	if (!mo.max_samples)
		mo.max_samples = 1;   /* (0 would be no bound) */

	/* (the model's string 0 is "", as string_table[0] must be) */
	if (!(pp->st.x = ds_stacks__new(&mo))) {
		free(pp);
		errno = ENOMEM;
		return NULL;
	}
	return pp;
}

void ds_pprof__delete(struct ds_pprof *pp)
{
	if (!pp)
		return;
	store_exit(&pp->st);
	ds_stacks__delete(pp->st.x);
	free(pp->written);
	free(pp);
}

/* A public call's result, a failure said for ds_errmsg(). */
static int said(const struct ds_pprof *pp, int err)
{
	return err ? dsi_export_failed(err, -pp->st.msg_err, pp->st.msg) : 0;
}

int ds_pprof__add(struct ds_pprof *pp, const struct ds_profile_sample *s)
{
	if (pp->noted)
		return said(pp, -EINVAL);
	if (pp->st.err)
		return said(pp, -pp->st.err);
	return said(pp, ds_stacks__add(pp->st.x, s));
}

/* The walk is over: what the profile needs of the samples kept in memory noted.  0 or an errno. */
static int note(struct ds_pprof *pp)
{
	int err;

	if (pp->noted)
		return pp->st.err;
	pp->noted = true;
	if (pp->st.err)
		return pp->st.err;
	if (!pp->st.spilled && (err = store_note(&pp->st, 0)))
		return pp->st.err = err;
	if (!(pp->written = calloc(pp->st.nr_events + 1, sizeof(*pp->written))))
		return pp->st.err = ENOMEM;
	return 0;
}

size_t ds_pprof__nr_events(struct ds_pprof *pp)
{
	int err = note(pp);

	if (err) {
		said(pp, -err);
		return 0;
	}
	return pp->st.nr_events;
}

const char *ds_pprof__event(struct ds_pprof *pp, size_t i)
{
	int err = note(pp);

	if (err) {
		said(pp, -err);
		return NULL;
	}
	return i >= pp->st.nr_events ? NULL : ds_stacks__str(pp->st.x, pp->st.events[i]);
}

static int pprof_write(struct ds_pprof *pp, const struct ds_pprof_write_opts *opts, ds_write_fn fn, void *ctx)
{
	struct ds_pprof_write_opts wo = { .sz = sizeof(wo), .event = -1 };
	int err = note(pp);

	if (opts)
		memcpy(&wo, opts, opts->sz < sizeof(wo) ? opts->sz : sizeof(wo));
	if (err)
		return -err;
	if (wo.event >= 0 && (size_t)wo.event >= pp->st.nr_events)
		return -EINVAL;
	/* a spilled event's tally is read once: one profile of it at most */
	if (pp->written_all || (wo.event < 0 ? false : pp->written[wo.event]))
		return -EINVAL;
	if (wo.event < 0)
		pp->written_all = true;
	else
		pp->written[wo.event] = true;
	return -write_profile(&pp->st, wo.event, pp->o.time_mode, &wo, fn, ctx);
}

int ds_pprof__write(struct ds_pprof *pp, const struct ds_pprof_write_opts *opts, ds_write_fn fn, void *ctx)
{
	return said(pp, pprof_write(pp, opts, fn, ctx));
}
