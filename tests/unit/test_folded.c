// SPDX-License-Identifier: MIT
/*
 * The folded export (ds_folded, dstack/export.h) through the public API:
 * the text of each stack (comm spaces, kernel suffix, argument lists cut,
 * Go methods kept, ';' and quotes), stacks of equal text merged, sorted
 * output, --period weights, folded text added as such, the same output
 * under a memory bound small enough to restart the tree and spill to disk
 * many times, and a failing stream: its errno returned, nothing written
 * after it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "dstack/export.h"
#include "dstack/log.h"
#include "stack_samples.h"
#include "mem_stream.h"
#include "check.h"

static char ev[] = "cycles";
static const int machine;

/* A stream into memory; fails with fail_errno once more than fail_after bytes were asked for. */

static void feed(struct ds_folded *fo, int copies)
{
	struct test_sample t;
	struct ds_cc_frame a[] = { ts_kernel(0xffff10, "do_syscall_64"), ts_user(0x10, "foo(int)", "/bin/a"),
				   ts_user(0x20, "main", "/bin/a") };
	struct ds_cc_frame b[] = { ts_user(0x11, "foo(long)", "/bin/a"), ts_user(0x20, "main", "/bin/a") };
	struct ds_cc_frame c[] = { ts_user(0x30, "net/http.(*Client).Do", "/bin/go"), ts_user(0x40, NULL, "/lib/libc.so.6"),
				   ts_user(0x50, "a;b\"c'", NULL) };

	for (int i = 0; i < copies; i++) {
		char comm[32];

		/* 5000 comms: stacks enough to restart a small tree, and to spill */
		snprintf(comm, sizeof(comm), "my task %d", i % 5000);
		ds_folded__add(fo, ts_make(&t, &machine, comm, 1, 10, 1, ev, 0, a, 3));
		ds_folded__add(fo, ts_make(&t, &machine, comm, 1, 5, 2, ev, 2, b, 2));
		ds_folded__add(fo, ts_make(&t, &machine, "go", 2, 1, 3, ev, 3, c, 3));
	}
}

static char *fold(size_t memory, bool period, int copies)
{
	struct ds_folded_opts o = { .sz = sizeof(o), .memory = memory, .period = period, .tmpdir = getenv("TMPDIR") };
	struct ds_folded *fo = ds_folded__new(&o);
	struct mem m = { 0 };
	int err;

	feed(fo, copies);
	err = ds_folded__write(fo, mem_write, &m);
	CHECK(!err, "write: %d", err);
	CHECK(ds_folded__write(fo, mem_write, &m) == -EINVAL, "a second write refused");
	ds_folded__delete(fo);
	return m.buf;
}

static void test_text(void)
{
	char *got = fold(0, false, 1);
	const char *want =
		"go;a:bc;[libc.so.6];net/http.(*Client).Do 1\n"
		"my_task_0;main;foo 1\n"
		"my_task_0;main;foo;do_syscall_64_[k] 1\n";

	CHECK(got && !strcmp(got, want), "folded text:\n%s\nwant:\n%s", got, want);
	free(got);
	got = fold(0, true, 1);
	want = "go;a:bc;[libc.so.6];net/http.(*Client).Do 1\n"
	       "my_task_0;main;foo 5\n"
	       "my_task_0;main;foo;do_syscall_64_[k] 10\n";
	CHECK(got && !strcmp(got, want), "--period:\n%s", got);
	free(got);
}

static void test_bounded(void)
{
	char *big = fold(0, false, 20000), *small = fold(1, false, 20000);   /* 1 byte: the least there is */

	CHECK(big && small && !strcmp(big, small), "the same output in bounded memory");
	CHECK(big && strstr(big, "\nmy_task_6;main;foo 4\n") && strstr(big, "go;a:bc;[libc.so.6];net/http.(*Client).Do 20000\n"),
	      "counts summed across trees");
	free(big);
	free(small);
}

/* Spilling to a directory that is not there: the adds or the write fail, and say where. */
static void test_spill_failure(void)
{
	struct ds_folded_opts o = { .sz = sizeof(o), .memory = 1, .tmpdir = "/nonexistent-dstack-dir" };
	struct ds_folded *fo = ds_folded__new(&o);
	struct test_sample t;
	struct ds_cc_frame a[] = { ts_user(0x20, "main", "/bin/a") };
	struct mem m = { 0 };
	int err = 0;

	for (int i = 0; i < 40000 && !err; i++) {
		char comm[32];

		snprintf(comm, sizeof(comm), "task %d", i);
		err = ds_folded__add(fo, ts_make(&t, &machine, comm, 1, 1, 1, ev, 0, a, 1));
	}
	if (!err)
		err = ds_folded__write(fo, mem_write, &m);
	CHECK(err == -ENOENT && strstr(ds_errmsg(), "/nonexistent-dstack-dir"), "spill failure: %d %s", err, ds_errmsg());
	ds_folded__delete(fo);
	free(m.buf);
}

static void test_text_input(void)
{
	struct ds_folded_opts o = { .sz = sizeof(o) };
	struct ds_folded *fo = ds_folded__new(&o);
	struct mem m = { 0 };
	struct test_sample t;
	struct ds_cc_frame a[] = { ts_user(0x20, "main", "/bin/a") };

	CHECK(!ds_folded__add_text(fo, "x;main", 6, 3), "add text");
	CHECK(!ds_folded__add(fo, ts_make(&t, &machine, "x", 1, 1, 1, ev, 0, a, 1)), "add sample");
	CHECK(!ds_folded__add_text(fo, "a;b", 3, 1), "add text");
	CHECK(!ds_folded__write(fo, mem_write, &m) && m.buf && !strcmp(m.buf, "a;b 1\nx;main 4\n"), "text and samples merged: %s",
	      m.buf);
	ds_folded__delete(fo);
	free(m.buf);
}

static void test_failing_stream(void)
{
	struct ds_folded_opts o = { .sz = sizeof(o) };
	struct ds_folded *fo = ds_folded__new(&o);
	struct mem m = { .fail_after = 0, .fail_errno = ENOSPC };
	int err;

	feed(fo, 30000);   /* more than one buffer of text */
	err = ds_folded__write(fo, mem_write, &m);
	CHECK(err == -ENOSPC, "the stream's errno: %d", err);
	CHECK(m.calls_after_fail == 1 && m.len == 0, "nothing asked of the stream after its failure: %d calls",
	      m.calls_after_fail);
	ds_folded__delete(fo);
}

static void test_tidy(void)
{
	char a[] = "std::vector<int>::push_back(int const&)", b[] = "(anonymous namespace)::f(int)", c[] = "main.(*T).M";

	ds_folded__tidy(a);
	ds_folded__tidy(b);
	ds_folded__tidy(c);
	CHECK(!strcmp(a, "std::vector<int>::push_back"), "%s", a);
	CHECK(!strcmp(b, "(anonymous namespace)::f"), "%s", b);
	CHECK(!strcmp(c, "main.(*T).M"), "%s", c);
}

int main(void)
{
	test_text();
	test_bounded();
	test_text_input();
	test_spill_failure();
	test_failing_stream();
	test_tidy();
	printf("folded: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
