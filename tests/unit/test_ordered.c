// SPDX-License-Identifier: MIT
/*
 * Ordering unit tests: interleaved per-CPU runs cut into rounds come out in
 * (time, file order); a record older than what was delivered comes out in
 * the next flush and is counted; ties keep file order; a deliver error
 * stops the flush and nothing leaks.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "stream/ordered.h"
#include "check.h"

struct rec {
	struct ds_event_header hdr;
	uint64_t time, id;
};

struct sink {
	uint64_t time[200000], id[200000];
	size_t n;
	size_t fail_at;  /* deliver returns -EIO at this count (0: never) */
};

static int collect(void *ctx, const struct ds_ordered_item *it)
{
	const struct ds_event_header *hdr = it->hdr;
	uint64_t offset = it->offset;
	struct sink *s = ctx;
	struct rec r;

	memcpy(&r, hdr, sizeof(r));
	if (s->fail_at && s->n + 1 == s->fail_at)
		return -EIO;
	s->time[s->n] = r.time;
	s->id[s->n] = offset;
	s->n++;
	return 0;
}

static int queue(struct ds_ordered *o, uint64_t time, uint64_t id)
{
	struct rec r = { .hdr = { .type = 9, .size = sizeof(r) }, .time = time, .id = id };

	return dsi_ordered__queue(o, &r.hdr, id, time);
}

/*
 * ncpu buffers drained in rounds, as perf's recorder does: in a round each
 * CPU's records are ascending times within the round's window (ties across
 * CPUs happen), and the CPUs' runs follow one another in the file.
 */
static void test_rounds(int ncpu, int per_round, int rounds, unsigned seed)
{
	static struct sink s;
	struct ds_ordered o;
	uint64_t id = 0;
	bool ordered = true;

	memset(&s, 0, sizeof(s));
	srand(seed);
	dsi_ordered__init(&o, collect, &s);
	for (int r = 0; r < rounds; r++) {
		for (int c = 0; c < ncpu; c++) {
			uint64_t t = (uint64_t)r * 100000;

			for (int i = 0; i < per_round; i++) {
				t += (uint64_t)(rand() % 7);
				if (queue(&o, t, id++))
					ordered = false;
			}
		}
		if (dsi_ordered__round(&o))
			ordered = false;
	}
	CHECK(dsi_ordered__flush_all(&o) == 0, "flush_all");
	CHECK(s.n == id, "delivered %zu of %llu", s.n, (unsigned long long)id);
	for (size_t i = 1; i < s.n; i++)
		if (s.time[i] < s.time[i - 1] || (s.time[i] == s.time[i - 1] && s.id[i] < s.id[i - 1]))
			ordered = false;
	CHECK(ordered, "%d cpus x %d x %d rounds: out of order", ncpu, per_round, rounds);
	CHECK(o.nr_unordered == 0, "nothing counted late (%llu)", (unsigned long long)o.nr_unordered);
	dsi_ordered__exit(&o);
}

/* Random times, no rounds: one sort of everything at the end. */
static void test_random(size_t n)
{
	static struct sink s;
	struct ds_ordered o;
	bool ordered = true;

	memset(&s, 0, sizeof(s));
	srand(7);
	dsi_ordered__init(&o, collect, &s);
	for (size_t i = 0; i < n; i++)
		queue(&o, (uint64_t)(rand() % 1000), i);
	CHECK(dsi_ordered__flush_all(&o) == 0, "flush_all");
	CHECK(s.n == n, "delivered %zu of %zu", s.n, n);
	for (size_t i = 1; i < s.n; i++)
		if (s.time[i] < s.time[i - 1] || (s.time[i] == s.time[i - 1] && s.id[i] < s.id[i - 1]))
			ordered = false;
	CHECK(ordered, "random %zu: out of order", n);
	dsi_ordered__exit(&o);
}

/* A record older than what a round delivered: delivered late, counted. */
static void test_late(void)
{
	static struct sink s;
	struct ds_ordered o;

	memset(&s, 0, sizeof(s));
	dsi_ordered__init(&o, collect, &s);
	queue(&o, 10, 0);
	queue(&o, 20, 1);
	dsi_ordered__round(&o);           /* flushes nothing: limit is the previous round's */
	CHECK(s.n == 0, "first round delivers nothing (%zu)", s.n);
	queue(&o, 30, 2);
	dsi_ordered__round(&o);           /* up to 20 */
	CHECK(s.n == 2 && s.time[0] == 10 && s.time[1] == 20, "second round delivers 10, 20 (%zu)", s.n);
	queue(&o, 15, 3);                /* older than 20: late */
	queue(&o, 40, 4);
	dsi_ordered__round(&o);           /* up to 30 */
	CHECK(s.n == 4 && s.time[2] == 15 && s.time[3] == 30, "late 15 then 30 (%zu)", s.n);
	CHECK(o.nr_unordered == 1, "one late record (%llu)", (unsigned long long)o.nr_unordered);
	dsi_ordered__flush_all(&o);
	CHECK(s.n == 5 && s.time[4] == 40, "flush_all delivers 40");
	dsi_ordered__exit(&o);
}

/* deliver fails: the flush stops there, exit releases the rest. */
static void test_error(void)
{
	static struct sink s;
	struct ds_ordered o;

	memset(&s, 0, sizeof(s));
	s.fail_at = 3;
	dsi_ordered__init(&o, collect, &s);
	for (uint64_t i = 0; i < 10; i++)
		queue(&o, 100 - i, i);
	CHECK(dsi_ordered__flush_all(&o) == -EIO, "error returned");
	CHECK(s.n == 2 && s.time[0] == 91 && s.time[1] == 92, "two delivered before the error (%zu)", s.n);
	dsi_ordered__exit(&o);
}

/*
 * A byte budget and no rounds at all: the queue never holds more than the
 * budget, every record is delivered once, and what comes older than what
 * went early is counted.  Records arrive in 8 interleaved ascending runs.
 */
static void test_budget(void)
{
	static struct sink s;
	struct ds_ordered o;
	size_t n = 100000, peak = 0, late = 0, errs = 0;
	uint64_t newest = 0;

	memset(&s, 0, sizeof(s));
	dsi_ordered__init(&o, collect, &s);
	o.budget = 64 << 10;
	for (size_t i = 0; i < n; i++) {
		errs += queue(&o, (i % 8) * 1000 + i / 8, i) != 0;
		if (o.held > peak)
			peak = o.held;
	}
	CHECK(!errs, "%zu queue errors", errs);
	CHECK(peak <= o.budget, "held at most the budget: %zu of %zu", peak, o.budget);
	CHECK(o.nr_early > 0, "records went early: %llu", (unsigned long long)o.nr_early);
	CHECK(dsi_ordered__flush_all(&o) == 0 && s.n == n, "all %zu delivered (%zu)", n, s.n);
	for (size_t i = 0; i < s.n; i++) {
		late += s.time[i] < newest;
		if (s.time[i] > newest)
			newest = s.time[i];
	}
	CHECK(late > 0 && late <= o.nr_unordered, "%zu delivered late, %llu counted", late,
	      (unsigned long long)o.nr_unordered);
	CHECK(o.held == 0, "nothing held at the end: %zu", o.held);
	dsi_ordered__exit(&o);
}

int main(void)
{
	test_budget();
	test_rounds(1, 100, 50, 1);
	test_rounds(2, 700, 30, 2);
	test_rounds(8, 300, 20, 3);
	test_rounds(64, 3, 200, 4);
	test_random(100000);
	test_random(1);
	test_late();
	test_error();
	printf("test_ordered: %d passed, %d failed\n", passed, failed);
	return failed != 0;
}
