// SPDX-License-Identifier: MIT
/*
 * The interned stack model (dstack/stacks.h) through its public API:
 * equal stacks are one, found again by chain id; frame keys are shared
 * between stacks; cookie frames have no entry; a sample of another
 * machine does not take a stack remembered for the same chain id of the
 * first; aggregation counts equal samples once; the sample callback and
 * the full hook see what they are documented to; the opts' size field.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "dstack/stacks.h"
#include "stack_samples.h"
#include "check.h"

static char ev_cycles[] = "cycles", ev_clock[] = "cpu-clock";
static const int machine_a, machine_b;

static const char *frame_name(const struct ds_stacks *st, const struct ds_stacks_entry *e)
{
	return ds_stacks__str(st, ds_stacks__frame(st, e->frame)->name);
}

static void test_interning(void)
{
	struct ds_stacks_opts o = { .sz = sizeof(o) };
	struct ds_stacks *st = ds_stacks__new(&o);
	struct test_sample t;
	struct ds_cc_frame f1[] = { ts_user(0x10, "leaf", "/bin/a"), ts_user(0x20, "main", "/bin/a") };
	struct ds_cc_frame f2[] = { ts_user(0x11, "leaf", "/bin/a"), ts_user(0x20, "main", "/bin/a") };
	struct ds_cc_frame f3[] = { ts_kernel(0xffff1, "schedule"),
				    { .ip = 0x1234, .cookie = true, .dso = "[unknown]" }, ts_user(0x30, NULL, "/lib/libc.so.6") };
	uint32_t a, b, c, d;
	size_t len;
	const struct ds_stacks_entry *e;

	CHECK(st != NULL, "new");
	CHECK(!ds_stacks__intern(st, ts_make(&t, &machine_a, "a", 1, 1, 5, ev_cycles, 7, f1, 2), &a), "intern 1");
	CHECK(!ds_stacks__intern(st, ts_make(&t, &machine_a, "a", 1, 1, 6, ev_cycles, 0, f1, 2), &b), "intern 1 again");
	CHECK(a == b, "an equal stack is one: %u %u", a, b);
	CHECK(!ds_stacks__intern(st, ts_make(&t, &machine_a, "a", 1, 1, 6, ev_cycles, 8, f2, 2), &c), "intern 2");
	CHECK(c != a && ds_stacks__nr_stacks(st) == 2, "another ip, another stack");
	e = ds_stacks__stack(st, c, &len);
	CHECK(len == 2 && e[0].ip == 0x11 && !strcmp(frame_name(st, &e[0]), "leaf") && !strcmp(frame_name(st, &e[1]), "main"),
	      "entries callee first");
	CHECK(ds_stacks__nr_frames(st) == 2, "frame keys shared: %zu", ds_stacks__nr_frames(st));
	/* chain id 7 on the same machine: the remembered stack, whatever the frames */
	CHECK(!ds_stacks__intern(st, ts_make(&t, &machine_a, "a", 1, 1, 6, ev_cycles, 7, f2, 2), &d) && d == a,
	      "by chain id: %u", d);
	/* chain id 7 from another machine: its own frames */
	CHECK(!ds_stacks__intern(st, ts_make(&t, &machine_b, "a", 1, 1, 6, ev_cycles, 7, f2, 2), &d) && d == c,
	      "another machine's chain id 7: %u, want %u", d, c);
	CHECK(!ds_stacks__intern(st, ts_make(&t, &machine_b, "b", 2, 1, 6, ev_cycles, 9, f3, 3), &d), "intern 3");
	e = ds_stacks__stack(st, d, &len);
	CHECK(len == 2 && ds_stacks__frame(st, e[0].frame)->kernel && !strcmp(frame_name(st, &e[0]), "schedule") &&
	      !strcmp(frame_name(st, &e[1]), "[libc.so.6]"), "cookie dropped, a symbol-less frame named by its DSO");
	CHECK(!strcmp(ds_stacks__str(st, DS_STACKS_STR_EMPTY), ""), "string 0 is empty");
	ds_stacks__delete(st);
}

static void test_samples(void)
{
	struct ds_stacks_opts o = { .sz = sizeof(o), .aggregate = true };
	struct ds_stacks *st = ds_stacks__new(&o);
	struct test_sample t;
	struct ds_cc_frame f1[] = { ts_user(0x10, "leaf", "/bin/a") };
	const struct ds_stacks_sample *s;
	uint64_t first, last;
	size_t n;

	CHECK(!ds_stacks__time_span(st, &first, &last), "no time yet");
	for (int i = 0; i < 5; i++)
		CHECK(!ds_stacks__add(st, ts_make(&t, &machine_a, "a", 1, 100, 10 + (uint64_t)i, ev_cycles, 3, f1, 1)), "add");
	CHECK(!ds_stacks__add(st, ts_make(&t, &machine_a, "a", 2, 50, 40, ev_cycles, 3, f1, 1)), "add pid 2");
	CHECK(!ds_stacks__add(st, ts_make(&t, &machine_a, "a", 1, 7, 4, ev_clock, 3, f1, 1)), "add other event");
	s = ds_stacks__samples(st, &n);
	CHECK(n == 3, "aggregated into 3: %zu", n);
	CHECK(n == 3 && s[0].count == 5 && s[0].period == 500 && s[0].time == 10 && s[1].pid == 2 && s[1].period == 50 &&
	      !strcmp(ds_stacks__str(st, s[2].event), "cpu-clock") && !strcmp(ds_stacks__str(st, s[0].comm), "a"),
	      "counts, periods, first times, events");
	CHECK(ds_stacks__time_span(st, &first, &last) && first == 4 && last == 40, "span %llu..%llu",
	      (unsigned long long)first, (unsigned long long)last);
	CHECK(ds_stacks__first_period(st) == 100, "first period");
	ds_stacks__clear_samples(st);
	ds_stacks__samples(st, &n);
	CHECK(n == 0, "cleared");
	CHECK(!ds_stacks__add(st, ts_make(&t, &machine_a, "a", 1, 100, 10, ev_cycles, 3, f1, 1)), "add after clear");
	ds_stacks__samples(st, &n);
	CHECK(n == 1, "one again");
	CHECK(ds_stacks__mem(st) > 0, "mem");
	ds_stacks__delete(st);
}

struct seen {
	int calls;
	char comm[32];
	uint64_t period;
	int ret;
};

static int on_sample(void *ctx, const struct ds_stacks_sample *s, const char *comm)
{
	struct seen *v = ctx;

	v->calls++;
	snprintf(v->comm, sizeof(v->comm), "%s", comm);
	v->period += s->period;
	return v->ret;
}

static int on_full(void *ctx, struct ds_stacks *st)
{
	size_t n;

	ds_stacks__samples(st, &n);
	*(size_t *)ctx += n;
	ds_stacks__clear_samples(st);
	return 0;
}

static void test_hooks(void)
{
	struct seen v = { 0 };
	struct ds_stacks_opts o = { .sz = sizeof(o), .sample_fn = on_sample, .sample_ctx = &v, .comms_to_fn = true };
	struct ds_stacks *st = ds_stacks__new(&o);
	struct test_sample t;
	struct ds_cc_frame f1[] = { ts_user(0x10, "leaf", "/bin/a") };
	size_t n, full = 0;

	CHECK(!ds_stacks__add(st, ts_make(&t, &machine_a, "task 1", 1, 3, 1, ev_cycles, 0, f1, 1)), "add");
	CHECK(v.calls == 1 && !strcmp(v.comm, "task 1") && v.period == 3, "handed over with its comm");
	/* "", the event, the symbol, the DSO: no comm */
	CHECK(ds_stacks__nr_strs(st) == 4, "the comm not interned: %zu strings", ds_stacks__nr_strs(st));
	v.ret = -ECANCELED;
	CHECK(ds_stacks__add(st, ts_make(&t, &machine_a, "x", 1, 3, 1, ev_cycles, 0, f1, 1)) == -ECANCELED,
	      "the callback's return");
	ds_stacks__samples(st, &n);
	CHECK(n == 0, "none kept");
	ds_stacks__delete(st);

	/* the full hook, and opts of an older, smaller size (the later fields zero) */
	struct ds_stacks_opts o2 = { .sz = sizeof(o2), .full_fn = on_full, .full_ctx = &full, .max_samples = 4 };
	st = ds_stacks__new(&o2);
	for (int i = 0; i < 10; i++)
		CHECK(!ds_stacks__add(st, ts_make(&t, &machine_a, "a", 1, 1, 1, ev_cycles, 0, f1, 1)), "add");
	ds_stacks__samples(st, &n);
	CHECK(full == 8 && n == 2, "full twice: %zu taken, %zu left", full, n);
	ds_stacks__delete(st);
	o2.sz = offsetof(struct ds_stacks_opts, aggregate);
	o2.aggregate = true;   /* beyond sz: not read */
	st = ds_stacks__new(&o2);
	for (int i = 0; i < 2; i++)
		ds_stacks__add(st, ts_make(&t, &machine_a, "a", 1, 1, 1, ev_cycles, 0, f1, 1));
	ds_stacks__samples(st, &n);
	CHECK(n == 2, "a field beyond sz is not read");
	ds_stacks__delete(st);
	st = ds_stacks__new(NULL);
	CHECK(st != NULL, "NULL opts");
	ds_stacks__delete(st);
}

int main(void)
{
	test_interning();
	test_samples();
	test_hooks();
	printf("stacks: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
