// SPDX-License-Identifier: MIT
/*
 * A process's maps (lib/process/maps.c), through the machine as MMAP
 * records build them, against a plain reference: an address belongs to
 * the newest map covering it, at that map's file offset.  Random maps that
 * overlap heavily (cut heads, tails, holes, maps dropped whole) past many
 * chunk splits; then 100,000 maps mapped from the top down (each new one
 * first: one sorted array moved every map for each, quadratic), a forked
 * child's copy, and the bound on maps held at once.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dstack/event.h"
#include "dstack/machine.h"
#include "dstack/profile.h"
#include "dstack/reader.h"
#include "check.h"

struct ref {
	uint64_t start, end, pgoff;
};

static uint64_t seed = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void)
{
	seed ^= seed << 13;
	seed ^= seed >> 7;
	seed ^= seed << 17;
	return seed;
}

static struct ds_evsel evsel;

/* An MMAP record of [start, start + len) at file offset @pgoff, named @name (< 8 bytes), into @m for task @pid. */
static int mmap_named(struct ds_machine *m, int32_t pid, uint64_t start, uint64_t len, uint64_t pgoff, const char *name)
{
	struct {
		struct ds_event_header h;
		uint32_t pid, tid;
		uint64_t start, len, pgoff;
		char name[8];
	} r = { { .type = DS_REC_MMAP, .misc = DS_MISC_USER, .size = sizeof(r) }, (uint32_t)pid, (uint32_t)pid,
		start, len, pgoff, "" };
	struct ds_event ev = { .hdr = &r.h, .evsel = &evsel };

	snprintf(r.name, sizeof(r.name), "%s", name);
	return ds_machine__process(m, &ev);
}

/* An anonymous map (mmap_named). */
static int mmap_rec(struct ds_machine *m, int32_t pid, uint64_t start, uint64_t len, uint64_t pgoff)
{
	return mmap_named(m, pid, start, len, pgoff, "//anon");
}

/* @n addresses in [lo, hi): each resolves as the newest of refs[0 .. nr) covering it, or to nothing. */
static int check_addrs(struct ds_thread *t, const struct ref *refs, size_t nr, uint64_t lo, uint64_t hi, int n)
{
	int bad = 0;

	for (int k = 0; k < n; k++) {
		uint64_t a = lo + rnd() % (hi - lo);
		const struct ref *want = NULL;
		const struct ds_map *got = ds_thread__find_map(t, a);

		for (size_t i = nr; i-- > 0 && !want;)
			if (refs[i].start <= a && a < refs[i].end)
				want = &refs[i];
		if (!want != !got || (got && (a < got->start || a >= got->end ||
					       a - got->start + got->pgoff != a - want->start + want->pgoff)))
			bad++;
	}
	return bad;
}

static void check_random(void)
{
	enum { NR = 20000, LO = 0x10000, SPAN = 4 << 20 };
	struct ds_machine *m = ds_machine__new(NULL);
	struct ref *refs = calloc(NR, sizeof(*refs));
	struct ds_thread *t;
	int bad = 0, err = 0;

	if (!m || !refs) {
		CHECK(0, "out of memory");
		return;
	}
	for (size_t i = 0; i < NR && !err; i++) {
		uint64_t start = LO + rnd() % SPAN, len = 1 + rnd() % (i % 10 == 0 ? 512 << 10 : 16 << 10);

		refs[i] = (struct ref){ start, start + len, (uint64_t)i << 32 };
		err = mmap_rec(m, 7, start, len, refs[i].pgoff);
		if (i % 1000 == 999 && (t = ds_machine__thread(m, 7, 7)))
			bad += check_addrs(t, refs, i + 1, LO - 4096, LO + SPAN + (600 << 10), 500);
	}
	CHECK(!err, "random maps: %d", err);
	t = ds_machine__thread(m, 7, 7);
	CHECK(t && !(bad += check_addrs(t, refs, NR, LO - 4096, LO + SPAN + (600 << 10), 20000)),
	      "random overlapping maps: %d of 30000 addresses resolve otherwise than the newest map covering them", bad);

	/* a fork: the child's copy resolves the same, and a map of its own changes only its */
	struct {
		struct ds_event_header h;
		uint32_t pid, ppid, tid, ptid;
		uint64_t time;
	} fork = { { .type = DS_REC_FORK, .size = sizeof(fork) }, 8, 7, 8, 7, 1 };
	struct ds_event fev = { .hdr = &fork.h, .evsel = &evsel };
	struct ds_thread *child;

	CHECK(!ds_machine__process(m, &fev), "fork");
	child = ds_machine__thread(m, 8, 8);
	CHECK(child && !check_addrs(child, refs, NR, LO, LO + SPAN, 5000), "the forked child's maps resolve as its parent's");
	if (child && !mmap_rec(m, 8, LO, SPAN, 1ULL << 62)) {
		const struct ds_map *p = ds_machine__thread(m, 7, 7) ? ds_thread__find_map(ds_machine__thread(m, 7, 7), LO + 5) : NULL;
		const struct ds_map *c = ds_thread__find_map(ds_machine__thread(m, 8, 8), LO + 5);

		CHECK(c && c->pgoff == (1ULL << 62) && (!p || p->pgoff != (1ULL << 62)),
		      "a map in the child covers its own maps only");
	}
	ds_machine__delete(m);
	free(refs);
}

static void check_descending(void)
{
	enum { NR = 100000 };
	struct ds_machine *m = ds_machine__new(NULL);
	uint64_t base = 0x100000000000ULL;
	int err = 0, bad = 0;
	struct ds_thread *t;

	for (uint64_t i = NR; i-- > 0 && !err;)
		err = mmap_rec(m, 9, base + i * 0x10000, 0x1000, i << 12);
	t = ds_machine__thread(m, 9, 9);
	CHECK(!err && t, "descending maps: %d", err);
	for (uint64_t k = 0; t && k < 20000; k++) {
		uint64_t i = rnd() % NR, a = base + i * 0x10000 + rnd() % 0x2000;
		const struct ds_map *got = ds_thread__find_map(t, a);
		bool in = a < base + i * 0x10000 + 0x1000;

		if (in != (got != NULL) || (got && got->pgoff != i << 12))
			bad++;
	}
	CHECK(!bad, "100000 maps mapped top down: %d of 20000 lookups wrong", bad);
	ds_machine__delete(m);
}

/* An EXIT record of task @pid. */
static int exit_rec(struct ds_machine *m, int32_t pid)
{
	struct {
		struct ds_event_header h;
		uint32_t pid, ppid, tid, ptid;
		uint64_t time;
	} r = { { .type = DS_REC_EXIT, .size = sizeof(r) }, (uint32_t)pid, 1, (uint32_t)pid, 1, 5 };
	struct ds_event ev = { .hdr = &r.h, .evsel = &evsel, .sample.time = 5 };

	return ds_machine__process(m, &ev);
}

/*
 * The bound on maps held (ds_machine__set_max_maps): a long recording's
 * processes that come, map and exit never reach it (the exited let go of
 * theirs); live ones past it have their new maps counted, not kept.
 */
static void check_bound(void)
{
	struct ds_machine *m = ds_machine__new(NULL);
	int err = 0, bad = 0;

	ds_machine__set_max_maps(m, 1000);
	for (int32_t pid = 100; pid < 5100 && !err; pid++) {   /* 5,000 processes of 10 maps, one after another */
		for (uint64_t k = 0; k < 10 && !err; k++)
			err = mmap_rec(m, pid, 0x400000 + k * 0x10000, 0x1000, k << 12);
		struct ds_thread *t = ds_machine__thread(m, pid, pid);

		bad += !t || !ds_thread__find_map(t, 0x400000 + 9 * 0x10000);
		err = err ? err : exit_rec(m, pid);
	}
	CHECK(!err && !bad && !ds_machine__maps_dropped(m),
	      "5000 processes of 10 maps under a bound of 1000: %d without their maps, %llu dropped", bad,
	      (unsigned long long)ds_machine__maps_dropped(m));
	for (int32_t pid = 10000; pid < 10200 && !err; pid++)   /* 200 live ones: 2000 maps */
		for (uint64_t k = 0; k < 10 && !err; k++)
			err = mmap_rec(m, pid, 0x400000 + k * 0x10000, 0x1000, k << 12);
	CHECK(!err && ds_machine__maps_dropped(m) == 1000, "past the bound, live: %llu of 2000 maps dropped (want 1000)",
	      (unsigned long long)ds_machine__maps_dropped(m));
	ds_machine__delete(m);
}

/*
 * perf script forgets a thread at its EXIT and resolves later samples of
 * its tid with a new thread's maps: those mapped after the EXIT (an exec's
 * image, whose EXIT comes before), not the old ones.
 */
static void check_script_thread(void)
{
	struct ds_machine *m = ds_machine__new(NULL);
	struct ds_thread *t, *st;
	int err;

	err = mmap_rec(m, 50, 0x400000, 0x1000, 0);          /* the old image */
	err = err ? err : exit_rec(m, 50);
	err = err ? err : mmap_rec(m, 50, 0x7f0000000000, 0x1000, 1ULL << 40);   /* the new one's */
	t = ds_machine__thread(m, 50, 50);
	st = t ? ds_machine__script_thread(m, t, 10) : NULL;
	CHECK(!err && t && st && st != t, "an exited leader: script's thread is another (%d)", err);
	CHECK(st && ds_thread__find_map(st, 0x7f0000000010) && !ds_thread__find_map(st, 0x400010),
	      "script's thread after the EXIT has the maps made after it, not the old ones");
	CHECK(t && ds_thread__find_map(t, 0x400010) && ds_thread__find_map(t, 0x7f0000000010),
	      "the machine's thread keeps both");
	ds_machine__delete(m);
}

/* A task's EXIT record at @time (kept by the caller: its event points into it). */
struct exit_raw {
	struct ds_event_header h;
	uint32_t pid, ppid, tid, ptid;
	uint64_t time;
};

static struct ds_event exit_event(struct exit_raw *r, int32_t pid, uint64_t time)
{
	*r = (struct exit_raw){ { .type = DS_REC_EXIT, .size = sizeof(*r) }, (uint32_t)pid, 1, (uint32_t)pid, 1, time };
	return (struct ds_event){ .hdr = &r->h, .evsel = &evsel, .sample.time = time, .sample.pid = (uint32_t)pid,
				   .sample.tid = (uint32_t)pid };
}

/*
 * Kernels of the 3.x era wrote two EXIT records a task: perf forgets the
 * thread at the first, so script names the second's task ":TID".
 */
static void check_double_exit(void)
{
	struct ds_machine *m = ds_machine__new(NULL);
	struct {
		struct ds_event_header h;
		uint32_t pid, tid;
		char comm[8];
	} c = { { .type = DS_REC_COMM, .size = sizeof(c) }, 70, 70, "wl" };
	struct ds_event cev = { .hdr = &c.h, .evsel = &evsel };
	struct exit_raw r1, r2;
	struct ds_event e1 = exit_event(&r1, 70, 5), e2 = exit_event(&r2, 70, 6);
	char b1[24], b2[24];
	const char *c1 = "", *c2 = "";
	struct ds_thread *t;
	int err = ds_machine__process(m, &cev);

	err = err ? err : ds_machine__process(m, &e1);
	if ((t = ds_machine__thread(m, 70, 70)))
		c1 = ds_thread__script_comm(t, &e1, b1);
	err = err ? err : ds_machine__process(m, &e2);
	if ((t = ds_machine__thread(m, 70, 70)))
		c2 = ds_thread__script_comm(t, &e2, b2);
	CHECK(!err && !strcmp(c1, "wl") && !strcmp(c2, ":70"),
	      "two EXITs of a task: the first names its comm, the second ':TID' ('%s', '%s')", c1, c2);
	ds_machine__delete(m);
}

/* Older kernels wrote the vDSO's address as its pgoff: perf maps it from its start all the same. */
static void check_vdso_pgoff(void)
{
	struct ds_machine *m = ds_machine__new(NULL);
	struct ds_resolved res;
	struct ds_thread *t;
	int err = mmap_named(m, 60, 0x7fff7e2b4000, 0x2000, 0x7fff7e2b4000, "[vdso]");

	t = ds_machine__thread(m, 60, 60);
	if (t)
		ds_machine__resolve(m, t, DS_MISC_USER, 0x7fff7e2b4a31, &res);
	CHECK(!err && t && res.addr == 0xa31 && res.map_pgoff == 0,
	      "a [vdso] map whose pgoff is its address: its addresses are offsets from its start (0x%llx)",
	      t ? (unsigned long long)res.addr : 0ULL);
	ds_machine__delete(m);
}

int main(void)
{
	check_random();
	check_descending();
	check_bound();
	check_script_thread();
	check_vdso_pgoff();
	check_double_exit();
	printf("test_maps: %d passed, %d failed\n", passed, failed);
	return failed != 0;
}
