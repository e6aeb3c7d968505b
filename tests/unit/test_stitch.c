// SPDX-License-Identifier: MIT
/*
 * Stitcher unit tests on hand-built record sequences: record before and
 * after the sample, tid mismatch, new cookie, exit, end of input,
 * duplicates, missing tid, in-place user chain, output order.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dstack/stitch.h"
#include "check.h"

/* A fake evsel: IP|TID|TIME|CALLCHAIN, sample_id_all, defer_callchain. */
static struct ds_evsel evsel = {
	.attr = { .sample_type = DS_SAMPLE_IP | DS_SAMPLE_TID | DS_SAMPLE_TIME | DS_SAMPLE_CALLCHAIN,
		  .flags = (1ULL << DS_ATTR_SAMPLE_ID_ALL) | (1ULL << DS_ATTR_DEFER_CALLCHAIN) },
	.name = "cpu-clock",
	.sample_id_size = 16,
};

/* What the callback saw. */
struct seen {
	uint32_t type, tid;
	uint64_t time;
	enum ds_stitch_state stitch;
	uint64_t record_time;
	bool cookie_passed;
	uint64_t chain[16];
	uint64_t nr;
};
static struct seen out[64];
static int nout;
static uint32_t filler_tid;   /* (not 0) its events are not kept, its samples counted in nfiller */
static int nfiller;

static int collect(void *ctx, const struct ds_event *ev)
{
	struct seen *s;

	(void)ctx;
	if (filler_tid && ev->sample.tid == filler_tid) {
		nfiller += ev->hdr->type == DS_REC_SAMPLE;
		return 0;
	}
	if (nout == 64)
		return 0;   /* (only the first are kept) */
	s = &out[nout++];
	s->type = ev->hdr->type;
	s->tid = ev->sample.tid;
	s->time = ev->sample.time;
	s->stitch = ev->stitch;
	s->record_time = ev->record_time;
	s->cookie_passed = ev->cookie_passed;
	s->nr = ev->sample.callchain_nr < 16 ? ev->sample.callchain_nr : 16;
	if (ev->sample.callchain)
		memcpy(s->chain, ev->sample.callchain, s->nr * 8);
	return 0;
}

static uint64_t buf[64][32];
static int nbuf;

/* Build and push a sample: kernel ips then optional deferred marker. */
static void sample(struct ds_stitcher *st, uint32_t tid, uint64_t time, uint64_t cookie, bool user_inplace)
{
	uint64_t *r = buf[nbuf++ % 64];   /* (a record pushed is the stitcher's copy) */
	struct ds_event ev = { .evsel = &evsel };
	size_t n = 0;

	r[1] = 0x1111;                      /* ip */
	r[2] = (uint64_t)tid << 32 | tid;   /* pid, tid */
	r[3] = time;
	uint64_t *cc = &r[4], *ips = &r[5];

	ips[n++] = DS_CONTEXT_KERNEL;
	ips[n++] = 0xffffffff81000000ULL + time;
	if (user_inplace) {
		ips[n++] = DS_CONTEXT_USER;
		ips[n++] = 0x401000;
	} else if (cookie) {
		ips[n++] = DS_CONTEXT_USER_DEFERRED;
		ips[n++] = cookie;
	}
	*cc = n;
	struct ds_event_header h = { DS_REC_SAMPLE, DS_MISC_KERNEL, (uint16_t)(8 * (5 + n)) };

	memcpy(r, &h, 8);
	ev.hdr = (const struct ds_event_header *)r;
	ev.sample.tid = ev.sample.pid = tid;
	ev.sample.has_tid = true;
	ev.sample.time = time;
	ev.sample.callchain = ips;
	ev.sample.callchain_nr = n;
	CHECK(ds_stitcher__push(st, &ev) == 0, "push sample");
}

static void deferred(struct ds_stitcher *st, int64_t tid, uint64_t time, uint64_t cookie, uint64_t user_ip)
{
	uint64_t *r = buf[nbuf++ % 64];
	struct ds_event ev = { .evsel = &evsel };
	struct ds_event_header h = { DS_REC_CALLCHAIN_DEFERRED, DS_MISC_USER, 8 * (1 + 2 + 2 + 2) };

	r[1] = cookie;
	r[2] = 2;
	r[3] = DS_CONTEXT_USER;
	r[4] = user_ip;
	r[5] = (uint64_t)tid << 32 | (uint32_t)tid;
	r[6] = time;
	memcpy(r, &h, 8);
	ev.hdr = (const struct ds_event_header *)r;
	ev.sample.time = time;
	if (tid >= 0) {
		ev.sample.tid = ev.sample.pid = (uint32_t)tid;
		ev.sample.has_tid = true;
	} else {
		ev.sample.tid = ev.sample.pid = (uint32_t)-1;
	}
	CHECK(ds_stitcher__push(st, &ev) == 0, "push deferred");
}

static void task_exit(struct ds_stitcher *st, uint32_t tid, uint64_t time)
{
	uint64_t *r = buf[nbuf++];
	struct ds_event ev = { .evsel = &evsel };
	struct ds_event_header h = { DS_REC_EXIT, 0, 8 + 24 + 16 };

	memcpy(r, &h, 8);
	r[1] = (uint64_t)tid << 32 | tid;
	r[2] = (uint64_t)tid << 32 | tid;
	r[3] = time;
	r[4] = (uint64_t)tid << 32 | tid;
	r[5] = time;
	ev.hdr = (const struct ds_event_header *)r;
	ev.sample.tid = ev.sample.pid = tid;
	ev.sample.has_tid = true;
	ev.sample.time = time;
	CHECK(ds_stitcher__push(st, &ev) == 0, "push exit");
}

static void reset(void)
{
	nout = 0;
	nbuf = 0;
	filler_tid = 0;
	nfiller = 0;
}

static struct ds_stitcher *start(void)
{
	reset();
	return ds_stitcher__new(NULL, collect, NULL);
}

static bool has_user(const struct seen *s, uint64_t ip)
{
	for (uint64_t i = 0; i + 1 < s->nr; i++)
		if (s->chain[i] == DS_CONTEXT_USER && s->chain[i + 1] == ip)
			return true;
	return false;
}

static void test_after(void)
{
	struct ds_stitcher *st = start();

	sample(st, 10, 100, 0x100000001, false);
	sample(st, 10, 200, 0x100000001, false);
	CHECK(nout == 0, "pending samples are held (got %d)", nout);
	deferred(st, 10, 300, 0x100000001, 0x4000);
	CHECK(nout == 3, "released with the record (got %d)", nout);
	CHECK(out[0].stitch == DS_STITCH_AFTER && has_user(&out[0], 0x4000), "first stitched after");
	CHECK(out[1].stitch == DS_STITCH_AFTER && has_user(&out[1], 0x4000), "second stitched after");
	CHECK(out[0].nr == 4 && out[0].chain[0] == DS_CONTEXT_KERNEL, "merged chain is kernel, USER, ips");
	/* report names the thread as at the record (an exec in between: the new comm) */
	CHECK(out[0].record_time == 300 && out[1].record_time == 300 && out[0].time == 100,
	      "stitched after: the record's time (%llu), the sample's own kept", (unsigned long long)out[0].record_time);
	CHECK(out[2].record_time == 0, "the record itself: no record_time");
	CHECK(ds_stitcher__stats(st)->stitched_after == 2, "stat after");
	ds_stitcher__delete(st);
}

/*
 * A sample after its record is stitched with it, and (time order) waits,
 * holding what follows, until perf 7.2 would print it: its task's next
 * record (record_time: that record's), its EXIT or the end (DS_NO_TIME:
 * held to the end), or a grace period without either (0: its own time).
 */
static void test_before(void)
{
	struct ds_stitcher *st = start();

	deferred(st, 10, 100, 0x200000001, 0x5000);
	sample(st, 10, 150, 0x200000001, false);
	CHECK(nout == 1, "a sample stitched before waits for its task's next record (got %d)", nout);
	sample(st, 20, 160, 0, false);
	CHECK(nout == 1, "what follows it waits too (got %d)", nout);
	deferred(st, 10, 200, 0x300000001, 0x6000);
	CHECK(nout == 4 && out[1].stitch == DS_STITCH_BEFORE && out[1].record_time == 200 &&
	      has_user(&out[1], 0x5000) && out[2].tid == 20 && out[3].type == DS_REC_CALLCHAIN_DEFERRED,
	      "record before the sample is used; released by the task's next record, in time order");
	ds_stitcher__delete(st);

	st = start();
	deferred(st, 10, 100, 0x200000001, 0x5000);
	sample(st, 10, 150, 0x200000001, false);
	task_exit(st, 10, 170);
	CHECK(nout == 3 && out[1].stitch == DS_STITCH_BEFORE && out[1].record_time == DS_NO_TIME,
	      "its task exits: held to the end (record_time %llx)", (unsigned long long)out[1].record_time);
	ds_stitcher__delete(st);

	st = start();
	deferred(st, 10, 100, 0x200000001, 0x5000);
	sample(st, 10, 150, 0x200000001, false);
	sample(st, 20, 150 + 100 * 1000 * 1000, 0, false);
	CHECK(nout == 1, "within the grace period it waits (got %d)", nout);
	sample(st, 20, 151 + 100 * 1000 * 1000, 0, false);
	CHECK(nout == 4 && out[1].stitch == DS_STITCH_BEFORE && out[1].record_time == 0,
	      "no record of its task for the grace period: its own time (got %d)", nout);
	ds_stitcher__delete(st);

	st = start();
	deferred(st, 10, 100, 0x200000001, 0x5000);
	sample(st, 10, 150, 0x200000001, false);
	CHECK(ds_stitcher__flush(st) == 0 && nout == 2 && out[1].record_time == DS_NO_TIME,
	      "the end: held to the end");
	ds_stitcher__delete(st);
}

static void test_tid_mismatch_and_order(void)
{
	struct ds_stitcher *st = start();

	sample(st, 10, 100, 0x300000001, false);
	sample(st, 11, 110, 0, true);          /* other tid, complete: must wait behind tid 10 */
	deferred(st, 11, 120, 0x300000001, 0x6000); /* same cookie, wrong tid */
	CHECK(nout == 0, "a record of another tid does not resolve (got %d)", nout);
	deferred(st, 10, 130, 0x300000001, 0x7000);
	CHECK(nout == 4, "all released in order (got %d)", nout);
	CHECK(out[0].time == 100 && out[1].time == 110 && out[2].time == 120 && out[3].time == 130,
	      "time order kept");
	CHECK(has_user(&out[0], 0x7000), "stitched with its own tid's record");
	CHECK(ds_stitcher__stats(st)->inplace_user == 1, "in-place user chain counted");
	ds_stitcher__delete(st);
}

static void test_new_cookie(void)
{
	struct ds_stitcher *st = start();

	sample(st, 10, 100, 0x400000001, false);
	sample(st, 10, 200, 0x500000001, false); /* a new kernel entry: 0x4 can never come */
	CHECK(nout == 0, "old cookie given up, held until its task's next record decides how perf prints it");
	deferred(st, 10, 250, 0x500000001, 0x8000);
	CHECK(nout == 3 && out[0].stitch == DS_STITCH_UNRESOLVED, "old cookie released unresolved");
	CHECK(out[0].cookie_passed && out[0].record_time == 250,
	      "old cookie given up at the record (perf prints it as an address, the thread as it is then)");
	CHECK(out[1].stitch == DS_STITCH_AFTER && !out[1].cookie_passed, "new cookie stitched");
	/* a record of another cookie gives the pending sample up too */
	sample(st, 10, 300, 0x600000001, false);
	deferred(st, 10, 350, 0x700000001, 0x9000);
	CHECK(nout == 5 && out[3].stitch == DS_STITCH_UNRESOLVED && out[3].cookie_passed,
	      "a record of another cookie gives the sample up");
	ds_stitcher__delete(st);

	/* no record of the task ever again (perf inject drops them): perf
	 * prints the given-up samples at the end, with "(cookie)" */
	st = start();
	sample(st, 10, 100, 0x400000001, false);
	sample(st, 10, 200, 0x500000001, false);
	sample(st, 20, 150 + 100 * 1000 * 1000, 0, false);
	sample(st, 10, 300 + 100 * 1000 * 1000, 0x600000001, false);
	CHECK(nout == 0, "given up samples wait past the grace period (got %d)", nout);
	CHECK(ds_stitcher__flush(st) == 0 && nout == 4, "the end delivers them (got %d)", nout);
	CHECK(out[0].time == 100 && out[1].time == 200 && out[2].tid == 20 && out[3].time > out[2].time,
	      "in time order");
	CHECK(!out[0].cookie_passed && out[0].record_time == DS_NO_TIME &&
	      !out[1].cookie_passed && out[1].record_time == DS_NO_TIME,
	      "held to the end: the cookie kept, the thread as it is at the end");
	ds_stitcher__delete(st);

	/* its task exits: no later record, held to the end as well */
	st = start();
	sample(st, 10, 100, 0x400000001, false);
	sample(st, 10, 200, 0x500000001, false);
	task_exit(st, 10, 250);
	CHECK(nout >= 1 && out[0].time == 100 && !out[0].cookie_passed && out[0].record_time == DS_NO_TIME,
	      "exited: the given-up sample keeps its cookie, printed as at the end");
	ds_stitcher__delete(st);
}

/*
 * A later kernel entry's sample stamped between an earlier entry's (seen
 * on perf 7.2 recordings of threads: cookie 0x683's sample at 46.549 s
 * among 0x681's, whose record came at 46.570 s): perf 7.2 holds them all
 * to the task's next record and matches each by cookie, so the earlier
 * entry's samples are stitched and the later one's is given up there.
 * In time order and in perf's.
 */
static void test_interleaved_cookies(void)
{
	for (int po = 0; po < 2; po++) {
		struct ds_stitcher_opts o = { .perf_order = po, .max_held_bytes = 1ULL << 30 };
		struct ds_stitcher *st;

		nout = nbuf = 0;
		st = ds_stitcher__new(&o, collect, NULL);
		sample(st, 10, 100, 0x68100000002, false);
		sample(st, 10, 110, 0x68300000002, false);   /* the later entry, stamped early */
		sample(st, 10, 120, 0x68100000002, false);
		CHECK(nout == 0, "%s: all held for the task's next record (got %d)", po ? "perf order" : "time order", nout);
		deferred(st, 10, 130, 0x68100000002, 0x7f00);
		CHECK(nout == 4, "%s: all released at the record (got %d)", po ? "perf order" : "time order", nout);
		for (int i = 0; i < 3 && nout >= 3; i++) {
			bool early = out[i].time == 110;

			CHECK(early ? out[i].stitch == DS_STITCH_UNRESOLVED && out[i].cookie_passed && out[i].record_time == 130
				    : out[i].stitch == DS_STITCH_AFTER && has_user(&out[i], 0x7f00),
			      "%s: sample at %llu: %s", po ? "perf order" : "time order", (unsigned long long)out[i].time,
			      early ? "the later entry's given up at the record" : "stitched with its entry's record");
		}
		/* the later entry's own samples, after: stitched with its record */
		sample(st, 10, 140, 0x68300000002, false);
		deferred(st, 10, 150, 0x68300000002, 0x7f10);
		CHECK(nout == 6 && out[4].stitch == DS_STITCH_AFTER && has_user(&out[4], 0x7f10),
		      "%s: the later entry's next sample stitched with its record", po ? "perf order" : "time order");
		/* 8 kernel entries whose records never come: all held to the task's next record */
		for (uint64_t k = 0; k < 8; k++)
			sample(st, 10, 200 + k, 0x70000000001 + (k << 32), false);
		deferred(st, 10, 300, 0x70700000001, 0x7f20);
		CHECK(ds_stitcher__flush(st) == 0 && nout == 15,
		      "%s: 8 cookies pending, every sample delivered (got %d)", po ? "perf order" : "time order", nout);
		ds_stitcher__delete(st);
	}
}

static void test_exit_and_end(void)
{
	struct ds_stitcher *st = start();

	sample(st, 20, 100, 0x600000001, false);
	task_exit(st, 20, 150);
	sample(st, 21, 160, 0, false);
	CHECK(nout == 0, "held through the exit grace period");
	sample(st, 21, 150 + 200000000ULL, 0, false); /* 200 ms later */
	CHECK(nout == 4 && out[0].stitch == DS_STITCH_UNRESOLVED && !out[0].cookie_passed,
	      "released after exit grace, its cookie kept (got %d)", nout);
	sample(st, 22, 400000000ULL, 0x700000001, false);
	CHECK(ds_stitcher__flush(st) == 0 && nout == 5 && out[4].stitch == DS_STITCH_UNRESOLVED && !out[4].cookie_passed,
	      "end of input releases unresolved");
	CHECK(ds_stitcher__stats(st)->unresolved == 2, "unresolved counted");
	ds_stitcher__delete(st);
}

static void test_exit_then_record(void)
{
	struct ds_stitcher *st = start();

	sample(st, 30, 100, 0x800000001, false);
	task_exit(st, 30, 150);
	deferred(st, 30, 160, 0x800000001, 0x9000); /* written after the task's exit */
	CHECK(nout == 3 && out[0].stitch == DS_STITCH_AFTER, "record after EXIT still stitches");
	ds_stitcher__delete(st);
}

static void test_duplicates_and_tidless(void)
{
	struct ds_stitcher *st = start();

	deferred(st, 40, 100, 0x900000001, 0xa000);
	deferred(st, 40, 101, 0x900000001, 0xa000);
	CHECK(ds_stitcher__stats(st)->duplicate_records == 1, "duplicate record counted");
	sample(st, 41, 110, 0xa00000001, false);
	deferred(st, -1, 120, 0xa00000001, 0xb000);
	CHECK(nout == 4 && out[2].stitch == DS_STITCH_AFTER && has_user(&out[2], 0xb000),
	      "tid-less record matched by cookie");
	CHECK(ds_stitcher__stats(st)->tidless_records == 1, "tid-less counted");
	ds_stitcher__delete(st);
}

/* Many tids, one cookie (hostile): each sample still gets its own tid's chain. */
static void test_shared_cookie(void)
{
	struct ds_stitcher *st = start();
	int ok = 1;

	for (uint32_t t = 50; t < 60; t++)
		sample(st, t, 100 + t, 0x500000001, false);
	for (uint32_t t = 59; t >= 50; t--)
		deferred(st, t, 200 + (60 - t), 0x500000001, 0x1000 + t);
	CHECK(nout == 20, "all 20 released (got %d)", nout);
	for (int i = 0; i < nout; i++)
		if (out[i].type == DS_REC_SAMPLE && !has_user(&out[i], 0x1000 + out[i].tid))
			ok = 0;
	CHECK(ok, "every sample stitched with its own tid's record");
	CHECK(ds_stitcher__stats(st)->unresolved == 0, "none unresolved");
	ds_stitcher__delete(st);
}

/*
 * perf's order: a non-deferred sample goes out at once, past the held
 * ones; a task's samples go out at its next record (matched or not),
 * another task's stay; what waits at the end goes out oldest first.
 */
static void test_perf_order(void)
{
	struct ds_stitcher_opts o = { .perf_order = true, .max_held_bytes = 1ULL << 30 };
	struct ds_stitcher *st;

	nout = nbuf = 0;
	st = ds_stitcher__new(&o, collect, NULL);
	sample(st, 10, 100, 0x300000001, false);
	sample(st, 20, 110, 0x400000001, false);
	sample(st, 30, 120, 0, false);                 /* kernel only: not deferred */
	CHECK(nout == 1 && out[0].tid == 30, "the plain sample first (got %d, tid %u)", nout, out[0].tid);
	deferred(st, 20, 130, 0x400000001, 0x6000);
	CHECK(nout == 3 && out[1].tid == 20 && out[1].stitch == DS_STITCH_AFTER && has_user(&out[1], 0x6000) &&
	      out[2].type == DS_REC_CALLCHAIN_DEFERRED, "tid 20's sample at its record, then the record");
	sample(st, 20, 140, 0x400000001, false);       /* after its record: stitched, waits for the next one */
	CHECK(nout == 3, "a sample stitched before its task's next record waits (got %d)", nout);
	deferred(st, 20, 150, 0x500000001, 0x7000);    /* another cookie: releases it */
	CHECK(nout == 5 && out[3].time == 140 && out[3].stitch == DS_STITCH_BEFORE && has_user(&out[3], 0x6000) &&
	      out[3].record_time == 150, "released by the task's next record (its time), stitched with its own");
	CHECK(ds_stitcher__flush(st) == 0 && nout == 6 && out[5].tid == 10 && out[5].stitch == DS_STITCH_UNRESOLVED &&
	      out[5].record_time == DS_NO_TIME, "tid 10's sample at the end, unresolved (got %d)", nout);
	ds_stitcher__delete(st);
}

/* Samples of tids 1 and 2 (test_sweep) into out[]; the others counted. */
static int nother;

static int collect_two(void *ctx, const struct ds_event *ev)
{
	if (ev->hdr->type == DS_REC_SAMPLE && (ev->sample.tid == 1 || ev->sample.tid == 2) && nout < 64)
		return collect(ctx, ev);
	nother += ev->hdr->type == DS_REC_SAMPLE;
	return 0;
}

/*
 * 150,000 tasks that each sample, get their record and exit leave task
 * states that hold nothing: swept (past 65,536) while tid 1 keeps its
 * chain (a record before its sample) and tid 2 its pending sample, both
 * still stitched after the sweeps moved their states.
 */
static void test_sweep(void)
{
	struct ds_stitcher *st;
	uint64_t t = 10;

	/* perf's order: only deferred samples wait (in time order, everything behind tid 2's would);
	 * what the ring keeps behind tid 2's sample passes the default 32 MiB: 1 GiB */
	struct ds_stitcher_opts o = { .perf_order = true, .max_held_bytes = 1ULL << 30 };

	nout = nbuf = nother = 0;
	st = ds_stitcher__new(&o, collect_two, NULL);
	for (uint32_t tid = 1000; tid < 151000; tid++) {
		/* tids 1 and 2 after the first 10,000 tasks: a sweep moves their states */
		if (tid == 11000) {
			nbuf = 0;
			deferred(st, 1, t++, 0x71, 0x401111);    /* tid 1: its record first */
			sample(st, 2, t++, 0x92, false);         /* tid 2: waits for its record */
		}
		nbuf = 2;   /* (rows 0 and 1 stay: the stitcher may hold them) */
		sample(st, tid, t++, 0x1000 + tid, false);
		deferred(st, tid, t++, 0x1000 + tid, 0x402222);
		task_exit(st, tid, t++);
	}
	nbuf = 2;
	sample(st, 1, t++, 0x71, false);         /* tid 1's kernel entry of that record */
	deferred(st, 2, t++, 0x92, 0x403333);    /* tid 2's record */
	task_exit(st, 1, t++);
	task_exit(st, 2, t++);
	CHECK(ds_stitcher__flush(st) == 0, "flush");
	CHECK(nother == 150000, "the other tasks' samples: %d", nother);
	CHECK(nout == 2, "samples of tids 1 and 2: %d", nout);
	for (int i = 0; i < nout; i++) {
		if (out[i].tid == 1)
			CHECK(out[i].stitch == DS_STITCH_BEFORE && has_user(&out[i], 0x401111),
			      "tid 1 stitched with its record before it (state %d)", out[i].stitch);
		else
			CHECK(out[i].stitch == DS_STITCH_AFTER && has_user(&out[i], 0x403333),
			      "tid 2 stitched with its record after it (state %d)", out[i].stitch);
	}
	ds_stitcher__delete(st);
}

/*
 * A task asleep in the kernel after its sample (its record written when it
 * wakes, seconds later) must not cost its stack: past the bound the sample
 * is set aside, the events behind it go on, and its record still stitches
 * it (delivered then, before the record, as perf 7.2 prints it).  In
 * perf's order the same, the filler being deferred samples each released
 * by its record (the FIFO's slots behind the sleeper were what filled it).
 */
static void test_set_aside(void)
{
	for (int po = 0; po < 2; po++) {
		struct ds_stitcher_opts o = { .perf_order = po, .max_held_bytes = 1u << 20 };
		struct ds_stitcher *st;
		const int n = 20000;

		reset();
		filler_tid = 20;
		st = ds_stitcher__new(&o, collect, NULL);
		sample(st, 10, 100, 0x900000001, false);
		for (int i = 0; i < n; i++) {
			sample(st, 20, 200 + 2 * (uint64_t)i, po ? 0x900000100 + (uint64_t)i : 0, false);
			if (po)
				deferred(st, 20, 201 + 2 * (uint64_t)i, 0x900000100 + (uint64_t)i, 0x3000);
		}
		CHECK(nfiller > n / 2, "order %d: the events behind the sleeper went on (%d of %d)", po, nfiller, n);
		CHECK(ds_stitcher__stats(st)->set_aside == 1 && ds_stitcher__stats(st)->released_early == 0,
		      "order %d: set aside %llu, given up %llu", po,
		      (unsigned long long)ds_stitcher__stats(st)->set_aside,
		      (unsigned long long)ds_stitcher__stats(st)->released_early);
		int before = nout;

		deferred(st, 10, 1000000, 0x900000001, 0x7000);
		CHECK(nout > before && out[before].tid == 10 && out[before].type == DS_REC_SAMPLE &&
		      out[before].stitch == DS_STITCH_AFTER && has_user(&out[before], 0x7000) &&
		      out[before].record_time == 1000000 && out[before].time == 100,
		      "order %d: its record stitches it, delivered before the record", po);
		CHECK(ds_stitcher__flush(st) == 0 && nfiller == n, "order %d: every filler sample out (%d)", po, nfiller);
		CHECK(ds_stitcher__stats(st)->unresolved == 0, "order %d: nothing unresolved", po);
		ds_stitcher__delete(st);
	}
}

/*
 * The store set aside has an eighth of the bound: past it, the oldest pending
 * samples are given up as before (and counted); those set aside still
 * match their records, and an EXIT or the end gives the rest up.
 */
static void test_set_aside_full(void)
{
	struct ds_stitcher_opts o = { .max_held_bytes = 1u << 20 };
	struct ds_stitcher *st;
	const int sleepers = 4000;
	uint64_t t = 100;

	reset();
	filler_tid = 20;
	st = ds_stitcher__new(&o, collect, NULL);
	for (int i = 0; i < sleepers; i++) {
		sample(st, 1000 + (uint32_t)i, t++, 0xa00000000 + (uint64_t)i, false);
		for (int k = 0; k < 8; k++)
			sample(st, 20, t++, 0, false);
	}
	const struct ds_stitch_stats *ss = ds_stitcher__stats(st);

	CHECK(ss->set_aside > 0 && ss->released_early > 0 && ss->set_aside + ss->released_early <= (uint64_t)sleepers,
	      "aside %llu, given up %llu", (unsigned long long)ss->set_aside, (unsigned long long)ss->released_early);
	/* the first was set aside (the store was empty), the newest is in the FIFO */
	nout = 0;   /* (what was given up is counted above) */
	deferred(st, 1000, t++, 0xa00000000, 0x7100);
	CHECK(nout > 0 && out[0].tid == 1000 && out[0].stitch == DS_STITCH_AFTER && has_user(&out[0], 0x7100),
	      "the first sleeper, set aside, stitched by its record");
	deferred(st, 1000 + sleepers - 1, t++, 0xa00000000 + sleepers - 1, 0x7200);
	CHECK(ds_stitcher__flush(st) == 0, "flush");
	CHECK(ss->stitched_after == 2 && ss->unresolved == (uint64_t)sleepers - 2,
	      "the others unresolved at the end (stitched %llu, unresolved %llu)",
	      (unsigned long long)ss->stitched_after, (unsigned long long)ss->unresolved);
	CHECK(nfiller == sleepers * 8, "every filler sample out (%d)", nfiller);
	ds_stitcher__delete(st);
}

int main(void)
{
	test_after();
	test_before();
	test_tid_mismatch_and_order();
	test_new_cookie();
	test_interleaved_cookies();
	test_exit_and_end();
	test_exit_then_record();
	test_duplicates_and_tidless();
	test_shared_cookie();
	test_perf_order();
	test_sweep();
	test_set_aside();
	test_set_aside_full();
	printf("test_stitch: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
