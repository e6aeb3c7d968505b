// SPDX-License-Identifier: MIT
/*
 * The speedscope export (ds_speedscope, dstack/export.h) through the
 * public API: shared frames numbered by first appearance, one profile per
 * thread in (pid, tid) order with its samples in recording order, stacks
 * root first, weights and the unit ("nanoseconds" for clocks only); the
 * same file when the samples spill to disk; a spill directory that is not
 * there: the error says it, and nothing is written.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dstack/export.h"
#include "dstack/log.h"
#include "stack_samples.h"
#include "mem_stream.h"
#include "check.h"

static char clock_ev[] = "cpu-clock", cycles[] = "cycles";
static const int machine;

/* @copies rounds of: tid 20 (main <- b), tid 10 (main <- a), with event @ev. */
static char *speedscope(size_t memory, const char *tmpdir, int copies, char *ev, int *err, char **why)
{
	struct ds_speedscope_opts o = { .sz = sizeof(o), .title = "t\"1", .memory = memory, .tmpdir = tmpdir };
	struct ds_speedscope *sp = ds_speedscope__new(&o);
	struct test_sample t;
	struct ds_cc_frame a[] = { ts_user(0x10, "a", "/bin/x"), ts_user(0x20, "main", "/bin/x") };
	struct ds_cc_frame b[] = { ts_user(0x30, "b", "/bin/x"), ts_user(0x20, "main", "/bin/x") };
	struct mem m = { 0 };

	*err = 0;
	for (int i = 0; i < copies && !*err; i++) {
		*err = ds_speedscope__add(sp, ts_make(&t, &machine, "w", 20, 3, 1, ev, 1, b, 2));
		if (!*err)
			*err = ds_speedscope__add(sp, ts_make(&t, &machine, "a very long command name", 10, 5, 2, ev, 2, a, 2));
	}
	if (!*err)
		*err = ds_speedscope__write(sp, mem_write, &m);
	*why = *err ? strdup(ds_errmsg()) : NULL;
	ds_speedscope__delete(sp);
	return m.buf;
}

static void test_file(void)
{
	int err;
	char *why, *got = speedscope(0, NULL, 2, clock_ev, &err, &why);
	const char *want =
		"{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\"shared\":{\"frames\":["
		"{\"name\":\"b\",\"file\":\"/bin/x\"},{\"name\":\"main\",\"file\":\"/bin/x\"},{\"name\":\"a\",\"file\":\"/bin/x\"}]},"
		"\"profiles\":["
		"{\"type\":\"sampled\",\"name\":\"a very long command name (10)\",\"unit\":\"nanoseconds\",\"startValue\":0,"
		"\"endValue\":10,\"samples\":[[1,2],[1,2]],\"weights\":[5,5]},"
		"{\"type\":\"sampled\",\"name\":\"w (20)\",\"unit\":\"nanoseconds\",\"startValue\":0,"
		"\"endValue\":6,\"samples\":[[1,0],[1,0]],\"weights\":[3,3]}],"
		"\"name\":\"t\\\"1\",\"activeProfileIndex\":0,\"exporter\":\"dstack\"}\n";

	CHECK(!err && !why && got && !strcmp(got, want), "the file: %d\n%s\nwant\n%s", err, got, want);
	free(got);
	got = speedscope(0, NULL, 1, cycles, &err, &why);
	CHECK(!err && got && strstr(got, "\"unit\":\"none\""), "not a clock: no unit");
	free(got);
}

static void test_spill(void)
{
	int err;
	char *why, *big = speedscope(0, NULL, 20000, clock_ev, &err, &why), *small;

	CHECK(!err && big, "in memory");
	small = speedscope(1, getenv("TMPDIR"), 20000, clock_ev, &err, &why);
	CHECK(!err && small && big && !strcmp(big, small), "the same file spilled and merged");
	free(big);
	free(small);
	small = speedscope(1, "/nonexistent-dstack-dir", 20000, clock_ev, &err, &why);
	CHECK(err == -ENOENT && !small && why && strstr(why, "creating the samples' temporary file in /nonexistent-dstack-dir"),
	      "spill failure: %d %s, %s written", err, why ? why : "(no message)", small ? "something" : "nothing");
	free(small);
	free(why);
}

/* A spill failure is kept: a later call failing of it says it again, after another call's failure said its own. */
static void test_spill_kept(void)
{
	struct ds_speedscope_opts o = { .sz = sizeof(o), .memory = 1, .tmpdir = "/nonexistent-dstack-dir" };
	struct ds_speedscope *sp = ds_speedscope__new(&o), *other = ds_speedscope__new(NULL);
	struct ds_cc_frame a[] = { ts_user(0x10, "a", "/bin/x"), ts_user(0x20, "main", "/bin/x") };
	struct test_sample t;
	struct mem m = { 0 };
	int err = 0;

	for (int i = 0; i < 20000 && !err; i++)
		err = ds_speedscope__add(sp, ts_make(&t, &machine, "w", 20, 3, 1, clock_ev, 1, a, 2));
	CHECK(err == -ENOENT, "spill failure while adding: %d", err);
	CHECK(!ds_speedscope__write(other, mem_write, &m) && ds_speedscope__write(other, mem_write, &m) == -EINVAL &&
	      !strstr(ds_errmsg(), "/nonexistent-dstack-dir"), "another failure says its own: %s", ds_errmsg());
	CHECK(ds_speedscope__write(sp, mem_write, &m) == -ENOENT && strstr(ds_errmsg(), "/nonexistent-dstack-dir"),
	      "the kept failure said again: %s", ds_errmsg());
	ds_speedscope__delete(sp);
	ds_speedscope__delete(other);
	free(m.buf);
}

int main(void)
{
	test_file();
	test_spill();
	test_spill_kept();
	printf("speedscope: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
