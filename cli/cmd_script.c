// SPDX-License-Identifier: MIT
/*
 * dstack script: samples with stitched callchains, in the text format of
 * `perf script` 7.2 (default fields: comm, tid, [cpu], time, period, event,
 * and the callchain as "ip sym+off (dso)" lines, inlined frames expanded).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include "dstack/log.h"
#include "dstack/machine.h"
#include "dstack/session.h"
#include "dstack/tracepoint.h"
#include "grow.h"
#include "hashmap.h"
#include "outbuf.h"
#include "samples.h"

/*
 * Formatted frame lines, direct-mapped by frame: a profile prints few
 * distinct frames many times (kernel.fp: 1,036 distinct in 460,244), so
 * most lines are one memcpy instead of two hex conversions and four copies.
 * The names are interned (equal pointers for equal names) and live as long
 * as the machine, so a slot is valid while its key fields are equal.  A
 * slot names its line in a dense array that grows as slots are first used:
 * a short profile touches a few pages, not the whole table (a page fault
 * costs ~10 us in a VM).
 */
#define FRAME_CACHE_BITS 12
#define FRAME_CACHE_SLOTS (1u << FRAME_CACHE_BITS)
#define FRAME_TEXT_MAX 112

struct frame_line {
	uint64_t ip, offset;
	const char *sym, *dso;
	bool inlined, cookie;
	uint8_t len;               /* 0: empty slot */
	char text[FRAME_TEXT_MAX];
};

/*
 * Formatted callchains, by the machine's chain id (equal ids, equal
 * frames): a profile prints its chains over and over, so most samples
 * print theirs as one copy.  The text lives in a bounded arena; when it is
 * full the epoch moves on and it refills.
 */
#define CHAIN_TEXT_BITS 12
#define CHAIN_TEXT_ARENA (1u << 20)
#define CHAIN_TEXT_MAX (16u << 10)   /* longer chains are printed each time */

struct chain_text {
	uint64_t id;
	uint32_t off, len, epoch;
};

struct script {
	struct outbuf *out;
	struct ds_machine *machine;
	bool no_merge;
	unsigned max_stack;
	uint32_t *line_of;         /* FRAME_CACHE_SLOTS: index + 1 into lines, 0 none; NULL: no cache */
	struct frame_line *lines;
	size_t nr_lines, cap_lines;
	struct chain_text *chains;  /* 1 << CHAIN_TEXT_BITS, or NULL (no cache) */
	char *chain_arena;          /* CHAIN_TEXT_ARENA bytes */
	size_t chain_used;
	uint32_t chain_epoch;       /* from 1: a zeroed slot is stale */
	struct trace_text tt;       /* tracepoint samples' text */
};

/* The cached line for @slot, which has none yet; NULL on ENOMEM (then not cached). */
static struct frame_line *line_alloc(struct script *sc, uint32_t *slot)
{
	struct frame_line *n = ds_grow(sc->lines, &sc->cap_lines, sc->nr_lines + 1, sizeof(*n), 256);

	if (!n)
		return NULL;
	sc->lines = n;
	*slot = (uint32_t)++sc->nr_lines;
	return &sc->lines[*slot - 1];
}

static void print_start(struct script *sc, const struct ds_event *ev, struct ds_thread *t)
{
	struct outbuf *o = sc->out;
	const struct ds_sample *s = &ev->sample;
	const char *comm = !t ? ":-1" : s->time == DS_NO_TIME ? ds_thread__comm(t) : ds_thread__comm_at(t, s->time);

	if (ev->evsel->attr.sample_type & DS_SAMPLE_CALLCHAIN) {
		outbuf_puts(o, comm);
		outbuf_putc(o, ' ');
	} else {
		size_t n = strlen(comm);

		for (; n < 16; n++)
			outbuf_putc(o, ' ');
		outbuf_puts(o, comm);
		outbuf_putc(o, ' ');
	}
	if (s->has_tid) {
		outbuf_dec(o, s->tid == (uint32_t)-1 ? 0 : s->tid, 7, ' ');
		outbuf_putc(o, ' ');
	}
	if (s->has_cpu) {
		outbuf_putc(o, '[');
		outbuf_dec(o, s->cpu, 3, '0');
		outbuf_puts(o, "] ");
	}
	if (s->time != DS_NO_TIME) {
		outbuf_dec(o, s->time / 1000000000ULL, 5, ' ');
		outbuf_putc(o, '.');
		outbuf_dec(o, (s->time % 1000000000ULL) / 1000, 6, '0');
		outbuf_puts(o, ": ");
	}
}

static void format_frame(struct outbuf *o, const struct ds_cc_frame *f)
{
	outbuf_putc(o, '\t');
	outbuf_hex(o, f->ip, 16);
	if (f->cookie) {
		outbuf_puts(o, " (cookie) ([unknown])\n");
		return;
	}
	outbuf_putc(o, ' ');
	if (f->sym) {
		outbuf_puts(o, f->sym);
		outbuf_puts(o, "+0x");
		outbuf_hex(o, f->offset, 0);
	} else {
		outbuf_puts(o, "[unknown]");
	}
	outbuf_puts(o, " (");
	outbuf_puts(o, f->inlined ? "inlined" : f->dso);
	outbuf_puts(o, ")\n");
}

static bool same_frame(const struct frame_line *l, const struct ds_cc_frame *f)
{
	return l->len && l->ip == f->ip && l->sym == f->sym && l->offset == f->offset &&
	       l->dso == f->dso && l->inlined == f->inlined && l->cookie == f->cookie;
}

static void print_frame(struct script *sc, const struct ds_cc_frame *f)
{
	struct outbuf *o = sc->out;
	struct frame_line *l;
	uint32_t *slot;
	unsigned long flushes;
	size_t start;

	if (!sc->line_of) {
		format_frame(o, f);
		return;
	}
	slot = &sc->line_of[((f->ip ^ (uintptr_t)f->sym << 16) * 0x9e3779b97f4a7c15ULL) >> (64 - FRAME_CACHE_BITS)];
	l = *slot ? &sc->lines[*slot - 1] : NULL;
	if (l && same_frame(l, f)) {
		outbuf_write(o, l->text, l->len);
		return;
	}
	if (OUTBUF_SIZE - o->len < 2 * FRAME_TEXT_MAX)
		outbuf_flush(o);
	start = o->len;
	flushes = o->flushes;
	format_frame(o, f);
	/* cache the line if it is short and still whole in the buffer */
	if (o->flushes == flushes && o->len - start < FRAME_TEXT_MAX && (l || (l = line_alloc(sc, slot)))) {
		*l = (struct frame_line){ .ip = f->ip, .offset = f->offset, .sym = f->sym, .dso = f->dso,
					  .inlined = f->inlined, .cookie = f->cookie, .len = (uint8_t)(o->len - start) };
		memcpy(l->text, o->buf + start, l->len);
	}
}

static void keep_chain_text(struct script *sc, struct chain_text *c, uint64_t id, const char *text, size_t len)
{
	if (sc->chain_used + len > CHAIN_TEXT_ARENA) {
		sc->chain_epoch++;   /* every kept chain is stale: refill from the start */
		sc->chain_used = 0;
	}
	memcpy(sc->chain_arena + sc->chain_used, text, len);
	*c = (struct chain_text){ .id = id, .off = (uint32_t)sc->chain_used, .len = (uint32_t)len,
				  .epoch = sc->chain_epoch };
	sc->chain_used += len;
}

static void print_callchain(struct script *sc, struct ds_thread *t, const uint64_t *ips, uint64_t nr)
{
	struct outbuf *o = sc->out;
	size_t n, start;
	const struct ds_cc_frame *f = ds_machine__callchain(sc->machine, t, ips, nr, sc->max_stack, &n);
	uint64_t id = ds_machine__callchain_id(sc->machine);
	struct chain_text *c = id && sc->chains ? &sc->chains[(id * 0x9e3779b97f4a7c15ULL) >> (64 - CHAIN_TEXT_BITS)] : NULL;
	unsigned long flushes;

	if (c && c->id == id && c->epoch == sc->chain_epoch) {
		outbuf_write(o, sc->chain_arena + c->off, c->len);
		return;
	}
	if (c && OUTBUF_SIZE - o->len < CHAIN_TEXT_MAX)
		outbuf_flush(o);   /* so that the chain's text is whole in the buffer */
	start = o->len;
	flushes = o->flushes;
	for (size_t i = 0; i < n; i++)
		print_frame(sc, &f[i]);
	if (c && o->flushes == flushes && o->len - start <= CHAIN_TEXT_MAX)
		keep_chain_text(sc, c, id, o->buf + start, o->len - start);
}

static uint64_t sample_period(const struct ds_event *ev)
{
	if (ev->evsel->attr.sample_type & DS_SAMPLE_PERIOD)
		return ev->sample.period;
	return DS_ATTR_FLAG(&ev->evsel->attr, DS_ATTR_FREQ) ? 0 : ev->evsel->attr.sample_period;
}

/* A tracepoint sample's fields after its event name, as perf prints them (lib/tracepoint.c). */
static void print_trace(struct script *sc, const struct ds_event *ev, struct ds_thread *t)
{
	char buf[4096], *big;
	size_t n = trace_text(&sc->tt, ev, t, buf, sizeof(buf));

	if (n < sizeof(buf)) {
		outbuf_write(sc->out, buf, n);
	} else if ((big = malloc(n + 1))) {   /* a long text (a big array): once more, whole */
		trace_text(&sc->tt, ev, t, big, n + 1);
		outbuf_write(sc->out, big, n);
		free(big);
	} else {
		outbuf_write(sc->out, buf, sizeof(buf) - 1);
	}
}

static void print_sample(struct script *sc, const struct ds_event *ev)
{
	const struct ds_sample *s = &ev->sample;
	struct ds_thread *t = ds_machine__thread(sc->machine, (int32_t)s->pid, (int32_t)s->tid);
	struct outbuf *o = sc->out;

	bool tp = ev->evsel->attr.type == DS_PERF_TYPE_TRACEPOINT;

	print_start(sc, ev, t);
	if (!tp) {   /* perf prints no period for tracepoints, their fields instead */
		outbuf_dec(o, sample_period(ev), 10, ' ');
		outbuf_putc(o, ' ');
	}
	outbuf_puts(o, ev->evsel->name);
	outbuf_puts(o, ": ");
	if (tp)
		print_trace(sc, ev, t);
	if (s->callchain) {
		outbuf_putc(o, '\n');
		print_callchain(sc, t, s->callchain, s->callchain_nr);
	} else if (!tp && ev->evsel->attr.sample_type & DS_SAMPLE_IP) {
		struct ds_resolved r;

		ds_machine__resolve(sc->machine, t, s->cpumode, s->ip, &r);
		for (size_t i = 0; i < r.nr_frames; i++) {
			struct ds_cc_frame f = { .ip = s->ip, .sym = r.frames[i].name, .offset = r.frames[i].offset,
						 .dso = r.dso, .inlined = r.frames[i].inlined };

			print_frame(sc, &f);
		}
	}
	outbuf_putc(o, '\n');
}

static void print_deferred(struct script *sc, const struct ds_event *ev)
{
	struct ds_deferred_event d;
	const char *why;
	const struct ds_sample *s = &ev->sample;
	struct ds_thread *t = ds_machine__thread(sc->machine, (int32_t)s->pid, (int32_t)s->tid);

	if (ds_deferred__parse(ev->evsel, ev->hdr, &d, &why))
		return;
	print_start(sc, ev, t);
	outbuf_puts(sc->out, "DEFERRED CALLCHAIN [cookie: ");
	outbuf_hex(sc->out, d.cookie, 0);
	outbuf_puts(sc->out, "]\n");
	print_callchain(sc, t, d.ips, d.nr);
	outbuf_putc(sc->out, '\n');
}

static int on_event(void *ctx, const struct ds_event *ev)
{
	struct script *sc = ctx;

	switch (ev->hdr->type) {
	case DS_REC_SAMPLE:
		print_sample(sc, ev);
		break;
	case DS_REC_CALLCHAIN_DEFERRED:
		if (sc->no_merge)
			print_deferred(sc, ev);
		break;
	default:
		break;
	}
	return sc->out->error ? -sc->out->error : 0;
}

static void script_usage(void)
{
	fprintf(stderr,
		"usage: dstack script [-i FILE] [--symfs DIR] [--kallsyms FILE] [--no-merge-callchains]\n"
		"                     [--max-stack N] [--no-inline] [--no-demangle]\n");
}

int cmd_script(int argc, char **argv)
{
	struct common_opts co = { .input = "perf.data" };
	struct ds_symbols_opts so = { 0 };
	struct ds_session_opts sopts = { 0 };
	struct script sc = { .max_stack = 127 };
	const char *v;
	struct analysis a;
	int ret;

	for (int i = 1; i < argc; i++) {
		int c = common_opt(&co, argc, argv, &i);

		if (c)
			continue;
		if (!strcmp(argv[i], "--no-merge-callchains")) {
			sc.no_merge = true;
		} else if (!strcmp(argv[i], "--no-inline")) {
			so.no_inline = true;
		} else if (!strcmp(argv[i], "--no-demangle")) {
			so.no_demangle = true;
		} else if ((v = opt_value("--max-stack", argc, argv, &i))) {
			sc.max_stack = (unsigned)strtoul(v, NULL, 0);
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			script_usage();
			return EXIT_OK;
		} else {
			usage_error("script", "unknown option '%s'", argv[i]);
			script_usage();
			return EXIT_USAGE;
		}
	}
	so.symfs = co.symfs;
	so.kallsyms = co.kallsyms;
	sopts.no_stitch = sc.no_merge;
	ret = analysis_open(&a, "script", co.input, &so);
	if (ret)
		return ret;
	sc.machine = a.machine;
	trace_text_init(&sc.tt, a.session, a.machine);
	/* hashed into all over: populated now, not a fault per slot's page later */
	sc.line_of = ds_calloc_populated(FRAME_CACHE_SLOTS, sizeof(*sc.line_of));   /* NULL: no cache, same output */
	sc.chains = ds_calloc_populated(1u << CHAIN_TEXT_BITS, sizeof(*sc.chains));
	sc.chain_arena = malloc(CHAIN_TEXT_ARENA);
	sc.chain_epoch = 1;
	if (!sc.chain_arena) {   /* no chain cache then: same output */
		free(sc.chains);
		sc.chains = NULL;
	}
	sc.out = outbuf_new(STDOUT_FILENO);
	if (!sc.out) {
		fprintf(stderr, "dstack script: out of memory\n");
		ret = EXIT_INPUT;
	} else {
		ret = analysis_run(&a, "script", &sopts, on_event, &sc);
		outbuf_flush(sc.out);
	}
	outbuf_delete(sc.out);
	analysis_finish(&a);
	trace_text_exit(&sc.tt);
	free(sc.line_of);
	free(sc.lines);
	free(sc.chains);
	free(sc.chain_arena);
	return ret;
}
