// SPDX-License-Identifier: MIT
/*
 * The diff of two profiles (ds_diff, dstack/diff.h) through the public
 * API: a recording's samples on one side and folded lines on the other,
 * the folded diff (with -n's scaling), the report delta (shares, their
 * change, inclusive shares with children, counts), the event compared
 * and the others counted, bad folded lines refused, a flame graph drawn,
 * and a failing stream's errno.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dstack/diff.h"
#include "stack_samples.h"
#include "mem_stream.h"
#include "check.h"

static char clock_ev[] = "cpu-clock", cycles[] = "cycles";
static const int machine;

static int add_line(struct ds_diff *d, const char *line)
{
	return ds_diff__add_folded(d, line, strlen(line));
}

/* BASE: 3 samples of main;f (1 of them cycles), 1 of main;g; NEW (folded): main;f 1, main;g 3. */
static struct ds_diff *make(bool by_comm, bool by_period)
{
	struct ds_diff_opts o = { .sz = sizeof(o), .by_comm = by_comm, .by_period = by_period };
	struct ds_diff *d = ds_diff__new(&o);
	struct test_sample t;
	struct ds_cc_frame f[] = { ts_user(0x10, "f", "/bin/x"), ts_user(0x20, "main", "/bin/x") };
	struct ds_cc_frame g[] = { ts_user(0x30, "g", "/bin/x"), ts_user(0x20, "main", "/bin/x") };

	ds_diff__begin_side(d, 0, "dir/base.data", false);
	for (int i = 0; i < 2; i++)
		ds_diff__add(d, ts_make(&t, &machine, "x", 1, 10, 1, clock_ev, 1, f, 2));
	ds_diff__add(d, ts_make(&t, &machine, "x", 1, 10, 1, cycles, 1, f, 2));
	ds_diff__add(d, ts_make(&t, &machine, "x", 1, 10, 1, clock_ev, 2, g, 2));
	ds_diff__begin_side(d, 1, "new.folded", true);
	add_line(d, "x;main;f 1\n");
	add_line(d, "\n");
	add_line(d, "x;main;g 3\r\n");
	return d;
}

static void test_folded(void)
{
	struct ds_diff *d = make(true, false);
	struct mem m = { 0 };

	/* a recording's frames know their DSO, a folded file's do not: they are other frames */
	CHECK(!ds_diff__write_folded(d, false, mem_write, &m) && m.buf &&
	      !strcmp(m.buf, "x;main;f 2 0\nx;main;f 0 1\nx;main;g 1 0\nx;main;g 0 3\n"), "folded diff:\n%s", m.buf);
	CHECK(!strcmp(ds_diff__event(d), "cpu-clock"), "the first event compared");
	free(m.buf);
	ds_diff__delete(d);

	/* two folded files */
	struct ds_diff_opts o = { .sz = sizeof(o), .by_comm = true };

	d = ds_diff__new(&o);
	ds_diff__begin_side(d, 0, "a", true);
	add_line(d, "x;main;f 2\n");
	add_line(d, "x;main;g 2\n");
	ds_diff__begin_side(d, 1, "b", true);
	add_line(d, "x;main;f 1\n");
	add_line(d, "x;main;g 7\n");
	add_line(d, "x;main 0\n");
	m = (struct mem){ 0 };
	CHECK(!ds_diff__write_folded(d, false, mem_write, &m) && m.buf &&
	      !strcmp(m.buf, "x;main;f 2 1\nx;main;g 2 7\n"), "folded files:\n%s", m.buf);
	free(m.buf);
	m = (struct mem){ 0 };
	CHECK(!ds_diff__write_folded(d, true, mem_write, &m) && m.buf &&
	      !strcmp(m.buf, "x;main;f 4 1\nx;main;g 4 7\n"), "-n: BASE scaled to NEW's total:\n%s", m.buf);
	free(m.buf);
	m = (struct mem){ .fail_errno = EIO };
	CHECK(ds_diff__write_folded(d, false, mem_write, &m) == -EIO, "a failing stream's errno");
	ds_diff__delete(d);
}

static void test_report(void)
{
	struct ds_diff *d = make(false, false);
	struct ds_diff_report_opts ro = { .sz = sizeof(ro), .sort = DS_DIFF_SORT_SYM, .children = true };
	struct mem m = { 0 };

	CHECK(!ds_diff__write_report(d, &ro, mem_write, &m) && m.buf, "report");
	if (m.buf) {
		CHECK(strstr(m.buf, "# Baseline  dir/base.data: 3 samples, weight 3 (1 samples of other events not compared)\n") &&
		      strstr(m.buf, "# New       new.folded: 2 stacks, weight 4\n"), "the header:\n%s", m.buf);
		/* f: 66.67% -> 25.00%, g: 33.33% -> 75.00%; main only inclusive (100% both) */
		CHECK(strstr(m.buf, "        66.67%       25.00%      -41.67%      -41.67%  [.] f\n") &&
		      strstr(m.buf, "        33.33%       75.00%      +41.67%      +41.67%  [.] g\n") &&
		      strstr(m.buf, "         0.00%        0.00%       +0.00%       +0.00%  [.] main\n"), "the rows:\n%s", m.buf);
		CHECK(strstr(m.buf, "[.] f\n") < strstr(m.buf, "[.] g\n") && strstr(m.buf, "[.] g\n") < strstr(m.buf, "[.] main\n"),
		      "ordered by the change, then by name");
	}
	free(m.buf);
	ro.children = false;
	ro.counts = true;
	m = (struct mem){ 0 };
	CHECK(!ds_diff__write_report(d, &ro, mem_write, &m) && m.buf && strstr(m.buf, "             2            1           -1  [.] f\n") &&
	      !strstr(m.buf, "main"), "counts, no children: no row for main:\n%s", m.buf);
	free(m.buf);
	ro.sort = 0;
	CHECK(ds_diff__write_report(d, &ro, mem_write, &m) == -EINVAL, "no sort key");
	ds_diff__delete(d);
}

static void test_bad_lines(void)
{
	struct ds_diff_opts o = { .sz = sizeof(o), .by_comm = true, .event = "cycles" };
	struct ds_diff *d = ds_diff__new(&o);
	struct test_sample t;
	struct ds_cc_frame f[] = { ts_user(0x10, "f", "/bin/x") };

	CHECK(!strcmp(ds_diff__event(d), "cycles"), "-e");
	CHECK(ds_diff__add_folded(d, "a 1", 3) == -EINVAL, "no side begun");
	ds_diff__begin_side(d, 0, "b", true);
	CHECK(ds_diff__add(d, ts_make(&t, &machine, "x", 1, 1, 1, clock_ev, 1, f, 1)) == -EINVAL, "a sample on a folded side");
	CHECK(add_line(d, "nocount") == -EINVAL && add_line(d, "a;b -1") == -EINVAL && add_line(d, "a;b x") == -EINVAL &&
	      add_line(d, " 5") == -EINVAL && ds_diff__add_folded(d, "a\0b 1", 5) == -EINVAL, "bad lines");
	CHECK(add_line(d, "a;b 1.5") == 0 && add_line(d, "") == 1, "a fractional count; an empty line");
	ds_diff__begin_side(d, 1, "n", false);
	CHECK(!ds_diff__add(d, ts_make(&t, &machine, "x", 1, 1, 1, clock_ev, 1, f, 1)), "another event: counted");
	CHECK(!ds_diff__add(d, ts_make(&t, &machine, "a", 1, 1, 1, cycles, 1, f, 1)), "the event compared");
	struct mem m = { 0 };

	CHECK(!ds_diff__write_flamegraph(d, mem_write, &m) && m.buf && !strncmp(m.buf, "<?xml", 5) &&
	      strstr(m.buf, "Differential Flame Graph: b -&gt; n") && strstr(m.buf, "data-n=\"a\"") && strstr(m.buf, "data-n=\"f\""), "flame graph");
	free(m.buf);
	ds_diff__delete(d);
}

int main(void)
{
	test_folded();
	test_report();
	test_bad_lines();
	printf("diff: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
