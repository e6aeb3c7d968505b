// SPDX-License-Identifier: MIT
/* The sample store and command line the export commands share (export_common.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "cli.h"
#include "dstack/event.h"
#include "dstack/symbols.h"
#include "export_common.h"
#include "util/grow.h"
#include "util/outbuf.h"

/*
 * Room for one more element of @size in *@arr, whose index must be an id
 * (below UINT32_MAX): 0 or -ENOMEM.
 */
static int room(void **arr, size_t nr, size_t *cap, size_t size)
{
	void *n = nr < UINT32_MAX - 1 ? dsi_grow(*arr, cap, nr + 1, size, 1024) : NULL;

	if (!n)
		return -ENOMEM;
	*arr = n;
	return 0;
}

uint32_t xdata_str(struct xdata *x, const char *s)
{
	return dsi_strset__add(&x->strs, s);
}

/* The name shown for a frame: its symbol, else "[dso base name]", else "[unknown]". */
const char *frame_dso_label(const struct ds_cc_frame *f, char *buf, size_t n)
{
	char short_name[256];

	snprintf(buf, n, "[%s]", ds_dso__short_name(f->dso, f->kernel, short_name, sizeof(short_name)));
	return buf;
}

static uint32_t frame_name(struct xdata *x, const struct ds_cc_frame *f)
{
	char buf[512];

	if (f->sym)
		return xdata_str(x, f->sym);
	if (!f->dso || !strcmp(f->dso, "[unknown]"))
		return xdata_str(x, "[unknown]");
	return xdata_str(x, frame_dso_label(f, buf, sizeof(buf)));
}

static bool func_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct xfunc *g = &((const struct xdata *)ctx)->funcs[id], *f = key;

	return g->name == f->name && g->dso == f->dso && g->kernel == f->kernel && g->inlined == f->inlined;
}

static uint32_t func_id(struct xdata *x, const struct ds_cc_frame *f)
{
	uint32_t name = frame_name(x, f), dso = xdata_str(x, f->dso ? f->dso : "[unknown]"), id;
	struct xfunc key = { name, dso, f->kernel, f->inlined, XSTR_EMPTY };
	bool added;

	if (key.name == UINT32_MAX || key.dso == UINT32_MAX ||
	    room((void **)&x->funcs, x->nr_funcs, &x->cap_funcs, sizeof(*x->funcs)))
		return UINT32_MAX;
	id = ds_idmap__find_or_add(&x->func_ids, dsi_hash_pair(dsi_hash_pair(key.name, key.dso),
							      (uint64_t)f->kernel * 2 + f->inlined),
				   func_eq, x, &key, (uint32_t)x->nr_funcs, &added);
	if (added)
		x->funcs[x->nr_funcs++] = key;
	return id;
}

static uint32_t build_id_str(struct xdata *x, const struct ds_dso *dso)
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
	return xdata_str(x, buf);
}

static bool map_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct xmap *m = &((const struct xdata *)ctx)->maps[id], *k = key;

	return m->start == k->start && m->end == k->end && m->pgoff == k->pgoff && m->file == k->file;
}

/* The map id + 1 of a frame's file mapping, 0 if it has none; UINT32_MAX on ENOMEM. */
static uint32_t map_id(struct xdata *x, const struct ds_cc_frame *f)
{
	if (!f->dso_obj || f->kernel)
		return 0;
	struct xmap key = { f->map_start, f->map_end, f->map_pgoff, xdata_str(x, f->dso), 0 };
	uint64_t k = dsi_hash_pair(dsi_hash_pair(key.start, key.end), dsi_hash_pair(key.pgoff, key.file));
	uint32_t id;

	if (key.file == UINT32_MAX ||
	    room((void **)&x->maps, x->nr_maps, &x->cap_maps, sizeof(*x->maps)))
		return UINT32_MAX;
	id = ds_idmap__find(&x->map_ids, k, map_eq, x, &key);
	if (id != DS_IDMAP_NONE)
		return id + 1;
	/* (the build id's string is made after the file's, as ids are numbered in order) */
	key.build_id = build_id_str(x, f->dso_obj);
	if (key.build_id == UINT32_MAX || ds_idmap__add(&x->map_ids, k, (uint32_t)x->nr_maps) < 0)
		return UINT32_MAX;
	x->maps[x->nr_maps] = key;
	return (uint32_t)x->nr_maps++ + 1;
}

static uint64_t ents_hash(const struct xent *e, size_t n)
{
	uint64_t h = n;

	for (size_t i = 0; i < n; i++)
		h = dsi_hash_pair(h ^ e[i].ip, (uint64_t)e[i].func << 32 | e[i].map);
	return h;
}

/* Is stack @id the one of the frames just appended at ents[*key ..]? */
static bool stack_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct xdata *x = ctx;
	const struct xstack *st = &x->stacks[id];
	size_t off = *(const size_t *)key, len = x->nr_ents - off;
	const struct xent *a, *b;

	if (st->len != len)
		return false;
	if (!len)
		return true;   /* (ents may be NULL: no pointer arithmetic on it) */
	a = x->ents + st->off;
	b = x->ents + off;
	for (size_t i = 0; i < len; i++)
		if (a[i].ip != b[i].ip || a[i].func != b[i].func || a[i].map != b[i].map)
			return false;
	return true;
}

/*
 * The stack of the frames just appended at ents[off ..]: an equal one
 * seen before (the frames appended are dropped), else a new one.
 * UINT32_MAX on ENOMEM.
 */
static uint32_t intern_stack(struct xdata *x, size_t off)
{
	size_t len = x->nr_ents - off;
	/* fuzz finding: an empty first stack leaves ents NULL, and NULL + 0 is undefined */
	const struct xent *e = len ? x->ents + off : NULL;
	uint32_t id;
	bool added;

	if (room((void **)&x->stacks, x->nr_stacks, &x->cap_stacks, sizeof(*x->stacks)))
		return UINT32_MAX;
	id = ds_idmap__find_or_add(&x->stack_ids, dsi_hash64(ents_hash(e, len)), stack_eq, x, &off,
				   (uint32_t)x->nr_stacks, &added);
	if (added)
		x->stacks[x->nr_stacks++] = (struct xstack){ off, len };
	else if (id != UINT32_MAX)
		x->nr_ents = off;   /* an equal stack: the frames appended are dropped */
	return id;
}

/* The stack of @s's frames: by its chain id when the machine gave one. UINT32_MAX on ENOMEM. */
static uint32_t stack_of(struct xdata *x, const struct ds_profile_sample *s)
{
	uint64_t *v = s->chain_id ? dsi_hashmap__find(&x->chain_stacks, s->chain_id) : NULL;
	size_t off = x->nr_ents;
	uint32_t id;

	if (v)
		return (uint32_t)*v;
	size_t group = 0, len = 0;   /* the current address's inline chain: its first frame, its length */

	for (size_t i = 0; i < s->nr_frames; i++) {
		const struct ds_cc_frame *f = &s->frames[i];
		uint32_t fid, map, src = XSTR_EMPTY, line = 0;
		struct xent *e;
		struct ds_srcline sl;

		if (f->cookie)
			continue; /* an unresolved deferred chain has no frames to show */
		if (i - group >= len) {
			group = i;
			len = i + 1 < s->nr_frames && s->frames[i + 1].ip == f->ip ? ds_cc_frame__inline_chain(f) : 1;
		}
		fid = func_id(x, f);
		map = map_id(x, f);
		/* the source position of this frame of its inline chain, from DWARF */
		if (!f->kernel && f->dso_obj && !ds_dso__srcline(f->dso_obj, f->addr, (unsigned)(i - group), &sl) &&
		    sl.line && (src = xdata_str(x, sl.file)) != UINT32_MAX) {
			line = sl.line;
			if (fid != UINT32_MAX && x->funcs[fid].src == XSTR_EMPTY)
				x->funcs[fid].src = src;
		}
		if (fid == UINT32_MAX || map == UINT32_MAX || src == UINT32_MAX ||
		    !(e = dsi_grow(x->ents, &x->cap_ents, x->nr_ents + 1, sizeof(*e), 1024)))
			return UINT32_MAX;
		x->ents = e;
		x->ents[x->nr_ents++] = (struct xent){ f->ip, fid, map, src, line };
	}
	id = intern_stack(x, off);
	if (dsi_hashmap__count(&x->chain_stacks) >= CLI_CHAIN_MEMO_MAX) {
		dsi_hashmap__exit(&x->chain_stacks);
		dsi_hashmap__init(&x->chain_stacks);
	}
	if (id != UINT32_MAX && s->chain_id && dsi_hashmap__set(&x->chain_stacks, s->chain_id, id) < 0)
		return UINT32_MAX;
	return id;
}

static uint64_t sample_key(const struct xsample *xs)
{
	return dsi_hash_pair(dsi_hash_pair(xs->stack, (uint64_t)xs->comm << 32 | xs->evsel_name),
			    ((uint64_t)(uint32_t)xs->pid << 32 | (uint32_t)xs->tid) ^ (uint64_t)(uint32_t)xs->cpu << 17);
}

static bool sample_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct xsample *o = &((const struct xdata *)ctx)->samples[id], *xs = key;

	return o->stack == xs->stack && o->comm == xs->comm && o->evsel_name == xs->evsel_name &&
	       o->pid == xs->pid && o->tid == xs->tid && o->cpu == xs->cpu;
}

static int on_sample(void *ctx, const struct ds_profile_sample *s)
{
	struct xdata *x = ctx;
	struct xsample xs = {
		.time = s->ev->sample.time, .period = s->period, .count = 1, .pid = s->pid, .tid = s->tid,
		.cpu = s->ev->sample.has_cpu ? (int32_t)s->ev->sample.cpu : -1,
		.comm = x->comm_to_sink ? XSTR_EMPTY : xdata_str(x, s->comm ? s->comm : ":-1"),
		.evsel_name = xdata_str(x, s->evsel && s->evsel->name ? s->evsel->name : "unknown"),
		.stack = stack_of(x, s),
	};
	uint64_t key = sample_key(&xs);
	struct xsample *n;

	if (xs.comm == UINT32_MAX || xs.evsel_name == UINT32_MAX || xs.stack == UINT32_MAX)
		return -ENOMEM;
	if (!x->first_period)
		x->first_period = xs.period;
	if (xs.time != DS_NO_TIME) {
		x->time_first = xs.time < x->time_first ? xs.time : x->time_first;
		x->time_last = xs.time > x->time_last ? xs.time : x->time_last;
	}
	if (x->sample_sink) {
		x->sink_comm = s->comm ? s->comm : ":-1";
		return x->sample_sink(x->sink_ctx, &xs);
	}
	if (x->aggregate) {
		uint32_t id = ds_idmap__find(&x->sample_ids, key, sample_eq, x, &xs);

		if (id != DS_IDMAP_NONE) {
			x->samples[id].count++;
			x->samples[id].period += xs.period;
			return 0;
		}
	}
	/* (kept one by one, samples are not ids: only aggregated ones are) */
	n = dsi_grow(x->samples, &x->cap_samples, x->nr_samples + 1, sizeof(*n), 1024);
	if (!n || (x->aggregate && x->nr_samples >= UINT32_MAX - 1))
		return -ENOMEM;
	x->samples = n;
	if (x->aggregate && ds_idmap__add(&x->sample_ids, key, (uint32_t)x->nr_samples) < 0)
		return -ENOMEM;
	x->samples[x->nr_samples++] = xs;
	if (x->samples_full && x->nr_samples >= x->max_samples)
		return x->samples_full(x->full_ctx);
	return 0;
}

static void export_usage(FILE *f, const char *cmd, const char *default_out)
{
	fprintf(f, "usage: dstack %s [-o FILE] [options]\n"
			"  -o FILE              write to FILE (default %s; '-' for stdout)\n%s",
		cmd, default_out, walk_usage());
}

int export_open(const char *cmd, const char *default_out, int argc, char **argv, struct export_cmd *c)
{
	const char *v;

	memset(c, 0, sizeof(*c));
	c->cmd = cmd;
	c->output = default_out;
	c->fd = -1;
	walk_opts_init(&c->wo);
	for (int i = 1; i < argc; i++) {
		int r = walk_opt(&c->wo, cmd, argc, argv, &i);

		if (r < 0)
			return EXIT_USAGE;
		if (r)
			continue;
		if ((v = opt_value("-o", argc, argv, &i)) || (v = opt_value("--output", argc, argv, &i))) {
			c->output = v;
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			export_usage(stdout, cmd, default_out);
			return -1;
		} else {
			usage_error(cmd, "unknown option '%s'", argv[i]);
			export_usage(stderr, cmd, default_out);
			return EXIT_USAGE;
		}
	}
	if (!strcmp(c->output, "-"))
		c->fd = STDOUT_FILENO;
	else if ((c->fd = open(c->output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0) {
		fprintf(stderr, "dstack %s: %s: %s\n", cmd, c->output, strerror(errno));
		return EXIT_USAGE;
	}
	if (c->fd != STDOUT_FILENO)
		output_file(c->output);   /* what the output's write errors name */
	c->wo.transient_comms = true;   /* the exports copy what they keep: no pointer is kept */
	return EXIT_OK;
}

int export_walk(struct export_cmd *c, ds_profile_sample_fn fn, void *ctx)
{
	const char *input = c->wo.common.input;
	struct walk w;
	struct stat st;
	int ret = walk_open(&w, c->cmd, &c->wo);

	if (ret == EXIT_OK) {
		const struct ds_header_info *hi = ds_reader__info(ds_profile__reader(w.profile));

		ret = walk_run(&w, fn, ctx);
		if (hi->last_sample_time > hi->first_sample_time) {
			c->hdr_first_time = hi->first_sample_time;
			c->hdr_last_time = hi->last_sample_time;
		}
		walk_finish(&w);
	}
	if (input && strcmp(input, "-") && !stat(input, &st) && S_ISREG(st.st_mode))
		c->file_mtime_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000ULL + (uint64_t)st.st_mtim.tv_nsec;
	return ret;
}

const char *export_title(const struct export_cmd *c)
{
	const char *in = c->wo.common.input ? c->wo.common.input : "perf.data", *slash = strrchr(in, '/');

	return !strcmp(in, "-") ? "stdin" : slash && slash[1] ? slash + 1 : in;
}

int export_collect(const char *cmd, const char *default_out, int argc, char **argv,
		   struct xdata *x, int *fd, const char **output)
{
	struct export_cmd c;
	int ret = export_open(cmd, default_out, argc, argv, &c);

	*fd = c.fd;
	*output = c.output;
	if (ret)
		return ret;
	x->input = c.wo.common.input;
	x->time_mode = c.wo.time_mode;
	if (xdata_str(x, "") != XSTR_EMPTY) {
		fprintf(stderr, "dstack %s: out of memory\n", cmd);
		return EXIT_INPUT;
	}
	x->time_first = UINT64_MAX;
	x->time_last = 0;
	ret = export_walk(&c, on_sample, x);
	x->hdr_first_time = c.hdr_first_time;
	x->hdr_last_time = c.hdr_last_time;
	x->file_mtime_ns = c.file_mtime_ns;
	return ret;
}

int export_finish(const char *cmd, int fd, const char *output, int write_err)
{
	const char *name = fd == STDOUT_FILENO ? "stdout" : output;
	int ret = EXIT_OK;

	if (write_err == ENOMEM) {
		fprintf(stderr, "dstack %s: out of memory\n", cmd);
		ret = EXIT_INPUT;
	} else if (write_err) {
		output_failed(name, write_err);
		ret = EXIT_OUTPUT;
	}
	/* a file system may report a failed write only at close */
	if (fd >= 0 && fd != STDOUT_FILENO && close(fd) && !write_err) {
		output_failed(name, errno);
		ret = EXIT_OUTPUT;
	}
	return ret;
}

void xdata_free(struct xdata *x)
{
	dsi_strset__exit(&x->strs);
	free(x->funcs);
	free(x->maps);
	free(x->ents);
	free(x->stacks);
	free(x->samples);
	dsi_idmap__exit(&x->stack_ids);
	dsi_hashmap__exit(&x->chain_stacks);
	dsi_idmap__exit(&x->sample_ids);
	dsi_idmap__exit(&x->func_ids);
	dsi_idmap__exit(&x->map_ids);
	memset(x, 0, sizeof(*x));
}

bool is_clock(const char *n)
{
	size_t l = !strncmp(n, "cpu-clock", 9) || !strncmp(n, "task-clock", 10) ? (n[0] == 'c' ? 9 : 10) : 0;

	return l && (!n[l] || n[l] == ':' || n[l] == '/');
}

const char *xdata_title(const struct xdata *x)
{
	const char *in = x->input ? x->input : "perf.data", *slash = strrchr(in, '/');

	return !strcmp(in, "-") ? "stdin" : slash && slash[1] ? slash + 1 : in;
}

void json_string(struct outbuf *o, const char *s)
{
	static const char hex[] = "0123456789abcdef";

	outbuf_putc(o, '"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\') {
			outbuf_putc(o, '\\');
			outbuf_putc(o, (char)c);
		} else if (c < 0x20) {
			char e[6] = { '\\', 'u', '0', '0', hex[c >> 4], hex[c & 15] };

			outbuf_write(o, e, 6);
		} else {
			outbuf_putc(o, (char)c);
		}
	}
	outbuf_putc(o, '"');
}

void xml_text(struct outbuf *o, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		switch (c) {
		case '<': outbuf_puts(o, "&lt;"); break;
		case '>': outbuf_puts(o, "&gt;"); break;
		case '&': outbuf_puts(o, "&amp;"); break;
		case '"': outbuf_puts(o, "&quot;"); break;
		case '\'': outbuf_puts(o, "&apos;"); break;
		default:
			/* control characters are not allowed in XML 1.0 */
			outbuf_putc(o, c < 0x20 ? '?' : (char)c);
		}
	}
}

int cli_write_outbuf(void *ctx, const void *buf, size_t len)
{
	struct outbuf *o = ctx;

	outbuf_write(o, buf, len);
	return o->error ? -o->error : 0;
}
