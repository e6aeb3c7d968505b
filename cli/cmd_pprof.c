// SPDX-License-Identifier: MIT
/*
 * dstack pprof: the samples as a gzip-compressed profile.proto, encoded by
 * hand.  Values: samples/count and cpu/nanoseconds (the period) for clock
 * events, events/count otherwise.  A Location is one address with its
 * inlined functions as Line entries, innermost first; Functions are
 * (name, dso) pairs; Mappings are the recorded file maps (range, offset,
 * file, build-id) the frames fell in, plus one per other DSO (the kernel)
 * spanning the addresses seen in it.
 * Labels: "comm" (string), "pid" and "tid" (numbers).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include "cli.h"
#include "dstack/event.h"
#include "export_common.h"

struct pb {
	uint8_t *b;
	size_t len, cap;
	int err;
};

static void pb_put(struct pb *p, const void *d, size_t n)
{
	if (p->err)
		return;
	if (p->len + n > p->cap) {
		size_t ncap = p->cap ? p->cap : 4096;

		while (ncap < p->len + n)
			ncap *= 2;
		uint8_t *nb = realloc(p->b, ncap);

		if (!nb) {
			p->err = ENOMEM;
			return;
		}
		p->b = nb;
		p->cap = ncap;
	}
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

struct pprof {
	struct xdata *x;
	struct pb out, msg, sub, packed;
	struct ds_hashmap locs;      /* hash of (ip, func chain) -> location id */
	uint64_t *loc_key_off;       /* location id - 1 -> (ents offset << 16 | length) */
	size_t nr_locs, cap_locs;
	struct mapping *maps;        /* x->maps first, then the DSO spans */
	size_t nr_maps;
	uint32_t *map_of_dso;        /* dso string id -> span mapping id (0: none) */
	uint64_t *loc_ids;           /* scratch: one sample's location ids */
};

static uint64_t chain_hash(const struct xent *e, size_t n)
{
	uint64_t h = ds_hash_pair(e[0].ip, e[n - 1].map);

	for (size_t i = 0; i < n; i++)
		h = ds_hash_pair(h, e[i].func);
	return ds_hash64(h);
}

static bool same_chain(const struct xdata *x, uint64_t key, const struct xent *e, size_t n)
{
	const struct xent *o = x->ents + (key >> 16);

	if ((key & 0xffff) != n || o[0].ip != e[0].ip || o[n - 1].map != e[n - 1].map)
		return false;
	for (size_t i = 0; i < n; i++)
		if (o[i].func != e[i].func)
			return false;
	return true;
}

/* The location id of the frames e[0 .. n) (one address, innermost first). */
static uint64_t location_id(struct pprof *pp, size_t off, size_t n)
{
	const struct xent *e = pp->x->ents + off;
	uint64_t k = chain_hash(e, n);

	for (;;) {
		bool found;
		uint64_t *v = ds_hashmap__upsert(&pp->locs, k, 0, &found);

		if (!v)
			return 0;
		if (found) {
			if (same_chain(pp->x, pp->loc_key_off[*v - 1], e, n))
				return *v;
			k = ds_hash64(k + 1);
			continue;
		}
		if (pp->nr_locs == pp->cap_locs) {
			size_t ncap = pp->cap_locs ? pp->cap_locs * 2 : 1024;
			uint64_t *nk = realloc(pp->loc_key_off, ncap * sizeof(*nk));

			if (!nk) {
				ds_hashmap__del(&pp->locs, k, NULL);
				return 0;
			}
			pp->loc_key_off = nk;
			pp->cap_locs = ncap;
		}
		pp->loc_key_off[pp->nr_locs] = (uint64_t)off << 16 | n;
		*v = ++pp->nr_locs;
		return *v;
	}
}

/* Frames sharing the address of e[0] are one location: inlined ones, then the real function. */
static size_t location_len(const struct xdata *x, const struct xent *e, size_t left)
{
	size_t n = 1;

	while (n < left && n < 0xffff && e[n].ip == e[0].ip && x->funcs[e[n - 1].func].inlined)
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

static int encode_samples(struct pprof *pp, uint32_t s_comm, uint32_t s_pid, uint32_t s_tid)
{
	struct xdata *x = pp->x;

	for (size_t i = 0; i < x->nr_samples; i++) {
		const struct xsample *s = &x->samples[i];
		const struct xstack *st = &x->stacks[s->stack];
		size_t nr = 0;

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
		pb_varint(&pp->packed, s->count);
		pb_varint(&pp->packed, s->period);
		pb_msg(&pp->msg, 2, &pp->packed);
		label(pp, s_comm, s->comm, 0);
		label(pp, s_pid, 0, s->pid);
		label(pp, s_tid, 0, s->tid);
		pb_msg(&pp->out, 2, &pp->msg);
	}
	return 0;
}

/*
 * The recorded file maps, then one mapping per other DSO (the kernel;
 * "[unknown]" has none) spanning the addresses seen in it.
 */
static int build_mappings(struct pprof *pp, uint32_t empty)
{
	struct xdata *x = pp->x;

	pp->map_of_dso = calloc(x->nr_strs + 1, sizeof(*pp->map_of_dso));
	pp->maps = calloc(x->nr_maps + x->nr_strs + 1, sizeof(*pp->maps));
	if (!pp->map_of_dso || !pp->maps)
		return ENOMEM;
	for (size_t m = 0; m < x->nr_maps; m++) {
		const struct xmap *xm = &x->maps[m];
		bool has_bid = x->strs[xm->build_id][0] != 0;

		pp->maps[m] = (struct mapping){ xm->start, xm->end, xm->pgoff, xm->file,
						has_bid ? xm->build_id : empty };
	}
	pp->nr_maps = x->nr_maps;
	for (size_t l = 0; l < pp->nr_locs; l++) {
		size_t n = pp->loc_key_off[l] & 0xffff;
		const struct xent *e = x->ents + (pp->loc_key_off[l] >> 16);
		const struct xfunc *f = &x->funcs[e[n - 1].func];
		uint32_t *m = &pp->map_of_dso[f->dso];

		if (e[n - 1].map || !strcmp(x->strs[f->dso], "[unknown]"))
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

static void encode_tables(struct pprof *pp)
{
	struct xdata *x = pp->x;

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
		const struct xent *e = x->ents + (pp->loc_key_off[l] >> 16);
		size_t n = pp->loc_key_off[l] & 0xffff;

		pb_uint(&pp->msg, 1, l + 1);
		pb_uint(&pp->msg, 2, e[n - 1].map ? e[n - 1].map : pp->map_of_dso[x->funcs[e[n - 1].func].dso]);
		pb_uint(&pp->msg, 3, e->ip);
		for (size_t i = 0; i < n; i++) {
			pb_uint(&pp->sub, 1, e[i].func + 1);
			pb_msg(&pp->msg, 4, &pp->sub);
		}
		pb_msg(&pp->out, 4, &pp->msg);
	}
	for (size_t f = 0; f < x->nr_funcs; f++) {
		pb_uint(&pp->msg, 1, f + 1);
		pb_uint(&pp->msg, 2, x->funcs[f].name);
		pb_uint(&pp->msg, 3, x->funcs[f].name);
		pb_uint(&pp->msg, 4, x->funcs[f].dso);
		pb_msg(&pp->out, 5, &pp->msg);
	}
}

static void encode_times(struct pprof *pp)
{
	if (pp->x->time_first <= pp->x->time_last) {
		pb_uint(&pp->out, 9, pp->x->time_first);
		pb_uint(&pp->out, 10, pp->x->time_last - pp->x->time_first);
	}
}

static bool is_clock(const struct xdata *x)
{
	for (size_t i = 0; i < x->nr_samples; i++) {
		const char *n = x->strs[x->samples[i].evsel_name];

		if (strcmp(n, "cpu-clock") && strcmp(n, "task-clock"))
			return false;
	}
	return true;
}

static int encode_profile(struct pprof *pp)
{
	struct xdata *x = pp->x;
	bool clock = is_clock(x);
	uint32_t empty = xdata_str(x, ""); /* string_table[0] must be "" */
	uint32_t s_samples = xdata_str(x, "samples"), s_count = xdata_str(x, "count");
	/* --off-cpu/--wall: the values are waits (and clock samples) in ns */
	uint32_t s_cpu = xdata_str(x, x->time_mode == WALK_OFFCPU ? "off-cpu" : x->time_mode == WALK_WALL ? "wall" :
				   clock ? "cpu" : "events");
	uint32_t s_ns = xdata_str(x, clock || x->time_mode != WALK_CPU ? "nanoseconds" : "count");
	uint32_t s_comm = xdata_str(x, "comm"), s_pid = xdata_str(x, "pid"), s_tid = xdata_str(x, "tid");
	uint64_t period = 0;
	size_t longest = 0;
	int err;

	if (empty == UINT32_MAX || s_samples == UINT32_MAX || s_count == UINT32_MAX || s_cpu == UINT32_MAX ||
	    s_ns == UINT32_MAX || s_comm == UINT32_MAX || s_pid == UINT32_MAX || s_tid == UINT32_MAX)
		return ENOMEM;
	for (size_t i = 0; i < x->nr_stacks; i++)
		longest = x->stacks[i].len > longest ? x->stacks[i].len : longest;
	period = x->first_period;
	pp->loc_ids = malloc((longest + 1) * sizeof(*pp->loc_ids));
	if (!pp->loc_ids)
		return ENOMEM;
	value_type(pp, 1, s_samples, s_count);
	value_type(pp, 1, s_cpu, s_ns);
	if ((err = encode_samples(pp, s_comm, s_pid, s_tid)) || (err = build_mappings(pp, empty)))
		return err;
	encode_tables(pp);
	/* the string table: id 0 must be "", which the ids above never are */
	if (empty == 0) {
		for (size_t i = 0; i < x->nr_strs; i++)
			pb_bytes(&pp->out, 6, x->strs[i], strlen(x->strs[i]));
	} else {
		return EINVAL;
	}
	encode_times(pp);
	value_type(pp, 11, s_cpu, s_ns);
	pb_uint(&pp->out, 12, period);
	return pp->out.err ? pp->out.err : pp->msg.err;
}

static int write_gzip(const struct pb *p, int fd)
{
	z_stream z = { 0 };
	uint8_t buf[1 << 16];
	int zr;

	if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return ENOMEM;
	z.next_in = p->b;
	z.avail_in = (uInt)p->len;
	do {
		z.next_out = buf;
		z.avail_out = sizeof(buf);
		zr = deflate(&z, Z_FINISH);
		size_t n = sizeof(buf) - z.avail_out;

		for (size_t w = 0; w < n;) {
			ssize_t r = write(fd, buf + w, n - w);

			if (r < 0 && errno == EINTR)
				continue;
			if (r < 0) {
				deflateEnd(&z);
				return errno;
			}
			w += (size_t)r;
		}
	} while (zr == Z_OK);
	deflateEnd(&z);
	return zr == Z_STREAM_END ? 0 : EIO;
}

int cmd_pprof(int argc, char **argv)
{
	struct xdata x = { 0 };
	struct pprof pp = { .x = &x };
	const char *output;
	int fd, err, ret;

	/* "" first, so that string id 0 is the empty string */
	x.aggregate = true;   /* a profile.proto's samples add up: equal ones are one */
	if (xdata_str(&x, "") != 0) {
		fprintf(stderr, "dstack pprof: out of memory\n");
		return EXIT_INPUT;
	}
	ret = export_collect("pprof", "profile.pb.gz", argc, argv, &x, &fd, &output);
	if (ret == -1 || (ret == EXIT_USAGE && fd < 0)) {
		xdata_free(&x);
		return ret == -1 ? EXIT_OK : ret;
	}
	if (x.nr_samples > UINT32_MAX / 2 || x.nr_ents >= (1ULL << 47))
		err = EOVERFLOW;
	else if (!(err = encode_profile(&pp)))
		err = write_gzip(&pp.out, fd);
	int fin = export_finish("pprof", fd, output, err);

	free(pp.out.b);
	free(pp.msg.b);
	free(pp.sub.b);
	free(pp.packed.b);
	free(pp.loc_key_off);
	free(pp.maps);
	free(pp.map_of_dso);
	free(pp.loc_ids);
	ds_hashmap__exit(&pp.locs);
	xdata_free(&x);
	return ret != EXIT_OK ? ret : fin;
}
