// SPDX-License-Identifier: MIT
/*
 * bench/stitch_bench: cost per record of the stitcher alone, at 10^5, 10^6
 * and 10^7 records (it should not grow with the stream).
 *
 *   stitch_bench [MAX_RECORDS]     (default 10000000)
 *
 * The stream is synthetic but shaped like a real recording: 100 000
 * threads; 64 kernel entries in flight at once on distinct threads, their
 * samples interleaved; each entry has 1-50 samples (kernel chain of 8 ips,
 * then PERF_CONTEXT_USER_DEFERRED + cookie) and one CALLCHAIN_DEFERRED
 * record (12 user ips), after its samples or, one time in ten, before them.
 * Records are built as real perf.data bytes and parsed with the library's
 * event parser, as the session does.  Generation alone is timed too and
 * subtracted; the run fails if any sample comes out unstitched.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "dstack/abi.h"
#include "dstack/event.h"
#include "dstack/stitch.h"

#define NR_THREADS 100000
#define IN_FLIGHT 64
#define KERNEL_IPS 8
#define USER_IPS 12

struct entry {
	uint32_t tid;
	uint64_t cookie;
	int samples_left;
	bool record_first, record_sent;
};

struct gen {
	struct ds_evsel evsel;
	uint64_t *next_cookie;        /* [0]: entries so far */
	uint8_t *busy;                /* tid has an entry in flight */
	struct entry fl[IN_FLIGHT];
	uint64_t rng, now;
	bool closing;                 /* end of stream: finish the entries in flight, start none */
	int active;
	uint64_t buf[64];
};

static uint64_t rnd(struct gen *g)
{
	g->rng ^= g->rng << 13;
	g->rng ^= g->rng >> 7;
	g->rng ^= g->rng << 17;
	return g->rng;
}

static void new_entry(struct gen *g, struct entry *e)
{
	uint32_t tid;

	if (g->closing) {
		e->tid = 0;
		g->active--;
		return;
	}
	do
		tid = 1000 + (uint32_t)(rnd(g) % NR_THREADS);
	while (g->busy[tid - 1000]);
	g->busy[tid - 1000] = 1;
	e->tid = tid;
	/* like the kernel's: a global counter (with the cpu in the low bits), unique per entry */
	e->cookie = ++g->next_cookie[0] << 12 | (tid & 1);
	e->samples_left = 1 + (int)(rnd(g) % 50);
	e->record_first = rnd(g) % 10 == 0;
	e->record_sent = false;
}

/* sample_type TID|TIME|CALLCHAIN|IDENTIFIER|PERIOD, sample_id_all: the corpus layout, trimmed. */
static void gen_init(struct gen *g)
{
	memset(g, 0, sizeof(*g));
	g->evsel.attr.type = 1;
	g->evsel.attr.size = DS_ATTR_SIZE_MAX;
	g->evsel.attr.sample_type = DS_SAMPLE_IDENTIFIER | DS_SAMPLE_IP | DS_SAMPLE_TID | DS_SAMPLE_TIME |
				    DS_SAMPLE_CPU | DS_SAMPLE_PERIOD | DS_SAMPLE_CALLCHAIN;
	g->evsel.attr.flags = (1ULL << DS_ATTR_SAMPLE_ID_ALL) | (1ULL << DS_ATTR_DEFER_CALLCHAIN) |
			      (1ULL << DS_ATTR_DEFER_OUTPUT);
	g->evsel.sample_id_size = ds_evsel__id_trailer_size(&g->evsel);
	g->next_cookie = calloc(NR_THREADS, sizeof(*g->next_cookie));
	g->busy = calloc(NR_THREADS, 1);
	if (!g->next_cookie || !g->busy)
		exit(1);
	g->rng = 0x9e3779b97f4a7c15ULL;
	for (int i = 0; i < IN_FLIGHT; i++)
		new_entry(g, &g->fl[i]);
	g->active = IN_FLIGHT;
}

static void put_header(struct gen *g, uint32_t type, size_t words)
{
	struct ds_event_header h = { .type = type, .misc = 0, .size = (uint16_t)(words * 8) };
	memcpy(&g->buf[0], &h, sizeof(h));
}

static size_t put_sample(struct gen *g, const struct entry *e)
{
	size_t n = 1;

	g->buf[n++] = 0;                                   /* identifier */
	g->buf[n++] = 0xffffffff81000000ULL;               /* ip */
	g->buf[n++] = (uint64_t)e->tid << 32 | e->tid;     /* pid, tid */
	g->buf[n++] = g->now;                              /* time */
	g->buf[n++] = 0;                                   /* cpu, res */
	g->buf[n++] = 100000;                              /* period */
	g->buf[n++] = KERNEL_IPS + 2;                      /* callchain nr */
	g->buf[n++] = DS_CONTEXT_KERNEL;
	for (int i = 0; i < KERNEL_IPS - 1; i++)          /* marker + 7 ips */
		g->buf[n++] = 0xffffffff81000000ULL + (uint64_t)i * 64;
	g->buf[n++] = DS_CONTEXT_USER_DEFERRED;
	g->buf[n++] = e->cookie;
	put_header(g, DS_REC_SAMPLE, n);
	return n;
}

static size_t put_record(struct gen *g, const struct entry *e)
{
	size_t n = 1;

	g->buf[n++] = e->cookie;
	g->buf[n++] = USER_IPS + 1;
	g->buf[n++] = DS_CONTEXT_USER;
	for (int i = 0; i < USER_IPS; i++)
		g->buf[n++] = 0x401000 + (uint64_t)i * 16;
	g->buf[n++] = (uint64_t)e->tid << 32 | e->tid;     /* trailer: pid, tid */
	g->buf[n++] = g->now;                              /* time */
	g->buf[n++] = 0;                                   /* cpu */
	g->buf[n++] = 0;                                   /* identifier */
	put_header(g, DS_REC_CALLCHAIN_DEFERRED, n);
	return n;
}

/* Next record of the stream into g->buf, as an event. */
static void next_event(struct gen *g, struct ds_event *ev)
{
	struct entry *e;
	const char *why;
	bool done = false;

	do
		e = &g->fl[rnd(g) % IN_FLIGHT];
	while (!e->tid);

	g->now += 1000;
	if (e->record_first && !e->record_sent) {
		put_record(g, e);
		e->record_sent = true;
	} else if (e->samples_left > 0) {
		put_sample(g, e);
		done = --e->samples_left == 0 && e->record_sent;
	} else {
		put_record(g, e);
		done = true;
	}
	if (done) {
		g->busy[e->tid - 1000] = 0;
		new_entry(g, e);
	}
	memset(ev, 0, sizeof(*ev));
	ev->hdr = (const struct ds_event_header *)g->buf;
	ev->evsel = &g->evsel;
	if (ev->hdr->type == DS_REC_SAMPLE)
		ds_sample__parse(&g->evsel, ev->hdr, &ev->sample, &why);
	else
		ds_sample_id__parse(&g->evsel, ev->hdr, &ev->sample, &why);
}

struct sink {
	uint64_t samples, unstitched, ips;
};

static int consume(void *ctx, const struct ds_event *ev)
{
	struct sink *s = ctx;

	if (ev->hdr->type != DS_REC_SAMPLE)
		return 0;
	s->samples++;
	s->ips += ev->sample.callchain_nr;
	if (ev->stitch != DS_STITCH_BEFORE && ev->stitch != DS_STITCH_AFTER)
		s->unstitched++;
	return 0;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Seconds to generate (and, with @st, stitch) @n records. */
static double run(uint64_t n, bool stitch, struct sink *sink, struct ds_stitch_stats *stats)
{
	struct gen *g = malloc(sizeof(*g));
	struct ds_stitcher *st = NULL;
	struct ds_event ev;
	uint64_t sum = 0;

	if (!g)
		exit(1);
	gen_init(g);
	if (stitch && !(st = ds_stitcher__new(NULL, consume, sink)))
		exit(1);
	double t0 = now_s();
	for (uint64_t i = 0; i < n; i++) {
		next_event(g, &ev);
		if (st) {
			if (ds_stitcher__push(st, &ev))
				exit(1);
		} else {
			sum += ev.sample.tid;
		}
	}
	g->closing = true;
	while (g->active) {
		next_event(g, &ev);
		if (st && ds_stitcher__push(st, &ev))
			exit(1);
	}
	if (st && ds_stitcher__flush(st))
		exit(1);
	double t = now_s() - t0;
	if (st) {
		*stats = *ds_stitcher__stats(st);
		ds_stitcher__delete(st);
	}
	if (sum == 1)
		puts("");                                       /* keep the loop */
	free(g->next_cookie);
	free(g->busy);
	free(g);
	return t;
}

int main(int argc, char **argv)
{
	uint64_t max = argc > 1 ? strtoull(argv[1], NULL, 0) : 10000000;
	int fail = 0;
	double first = 0;

	printf("%12s %10s %10s %12s %10s %8s\n", "records", "total_s", "gen_s", "ns/record", "unstitched", "max_held");
	for (uint64_t n = 100000; n <= max; n *= 10) {
		struct sink sink = { 0 };
		struct ds_stitch_stats stats;
		/* the best of a few runs: one run of 20 ms on a shared VM is mostly noise */
		int runs = n <= 100000 ? 7 : 3;
		double tg = 1e30, ts = 1e30;

		for (int r = 0; r < runs; r++) {
			double g = run(n, false, NULL, NULL);

			memset(&sink, 0, sizeof(sink));
			double t = run(n, true, &sink, &stats);

			tg = g < tg ? g : tg;
			ts = t < ts ? t : ts;
		}
		double per = (ts - tg) * 1e9 / (double)n;

		printf("%12" PRIu64 " %10.3f %10.3f %12.1f %10" PRIu64 " %8" PRIu64 "\n",
		       n, ts, tg, per, sink.unstitched, stats.max_held);
		if (sink.unstitched || sink.samples != stats.samples)
			fail = 1;
		if (!first)
			first = per;
		else if (per > first * 1.2)
			printf("  note: %.0f%% above the 10^5 cost\n", (per / first - 1) * 100);
	}
	if (fail)
		printf("FAIL: samples left unstitched\n");
	return fail;
}
