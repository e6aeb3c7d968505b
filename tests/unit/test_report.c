// SPDX-License-Identifier: MIT
/*
 * perf report's model (ds_report, dstack/report.h) through the public API,
 * on a corpus recording (cpu.defer, beside SYMFS: SYMFS/../../data): the
 * entries in printed order, their periods against the event's total (the
 * self periods add up to it), children against self (cumulative or not),
 * the printed text against the entries, a -g form (folded call graphs
 * under each entry), the --sort checks and the errors (a bad key, a
 * second attach, a sample before attach or after the end, a failing
 * stream).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dstack/log.h"
#include "dstack/profile.h"
#include "dstack/report.h"
#include "mem_stream.h"
#include "check.h"

static char path[PATH_MAX];
static struct ds_profile_opts popts;

/* A stream into memory; fails with fail_errno once more than fail_after bytes were asked for. */

static int on_sample(void *ctx, const struct ds_profile_sample *s)
{
	return ds_report__add_sample(ctx, s);
}

/* The recording's samples into a report of @o; its profile in *@pp (closed by the caller). */
static struct ds_report *build(const struct ds_report_opts *o, struct ds_profile **pp)
{
	struct ds_report *r = ds_report__new(o);
	struct ds_profile *p;
	int err;

	*pp = NULL;
	if (!r)
		return NULL;
	popts.max_stack_from_root = o && o->caller;
	if (!(p = ds_profile__open(path, &popts))) {
		ds_report__delete(r);
		return NULL;
	}
	*pp = p;
	err = ds_report__attach(r, p);
	CHECK(!err, "attach: %d %s", err, ds_errmsg());
	err = ds_profile__for_each_sample(p, on_sample, r);
	CHECK(!err, "run: %d %s", err, ds_errmsg());
	return r;
}

static size_t count_lines(const char *s, const char *with)
{
	size_t n = 0;

	for (const char *l = s; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		const char *end = strchr(l, '\n');
		size_t len = end ? (size_t)(end - l) : strlen(l);

		if (len && memmem(l, len, with, strlen(with)))
			n++;
	}
	return n;
}

/* --children by symbol: entries, periods, percentages, the printed lines */
static void test_children(void)
{
	struct ds_report_opts o = { .sz = sizeof(o), .sort = "sym", .children = true, .caller = true,
				    .no_graph = true, .graph_min = -1, .quiet = true };
	struct ds_profile *p;
	struct ds_report *r = build(&o, &p);
	struct ds_report_stats st;
	struct mem m = { 0 };
	uint64_t self = 0, total = 0, prev = UINT64_MAX;
	size_t n, sorted = 0, cumulative = 0;
	char sym[4096];

	CHECK(r, "report: %s", ds_errmsg());
	if (!r)
		return;
	n = ds_report__entry_count(r);
	CHECK(n > 50, "%zu entries", n);
	for (size_t i = 0; i < n; i++) {
		const struct ds_report_entry *e = ds_report__entry(r, i);
		uint64_t c = ds_report_entry__children(e), s = ds_report_entry__self(e);

		total = ds_report__total_period(r, e);
		self += s;
		cumulative += c > s;
		sorted += c <= prev;
		prev = c;
		if (c < s || c > total)
			CHECK(0, "entry %zu: children %llu, self %llu, total %llu", i, (unsigned long long)c,
			      (unsigned long long)s, (unsigned long long)total);
		ds_report_entry__symbol(e, sym, sizeof(sym));
		if (!(sym[0] == '[' && sym[2] == ']' && sym[3] == ' '))
			CHECK(0, "entry %zu: symbol column '%s'", i, sym);
	}
	CHECK(ds_report__entry(r, n) == NULL, "past the last entry: NULL");
	/* one event, every sample on one entry's own frame: the self periods are the total */
	CHECK(self == total && total > 0, "self periods %llu of %llu", (unsigned long long)self,
	      (unsigned long long)total);
	CHECK(cumulative > n / 2, "%zu of %zu entries have callers' periods", cumulative, n);
	CHECK(sorted == n, "by children, descending: %zu of %zu", sorted, n);
	ds_report__stats(r, &st);
	CHECK(st.samples > 100 && !st.unkept && !st.branch_view && st.entries >= n, "stats: %llu samples, %zu entries",
	      (unsigned long long)st.samples, st.entries);
	CHECK(ds_report__has_samples(r), "has samples");
	/* printed: one line per entry, "  CHILDREN%  SELF%  [.] sym" (-q: no comments) */
	CHECK(ds_report__print(r, mem_write, &m) == 0, "print: %s", ds_errmsg());
	CHECK(m.buf && count_lines(m.buf, "%") == n && !strstr(m.buf, "# "), "%zu lines with a percentage, %zu entries",
	      m.buf ? count_lines(m.buf, "%") : 0, n);
	if (n) {
		const struct ds_report_entry *e = ds_report__entry(r, 0);
		char want[4200];

		ds_report_entry__symbol(e, sym, sizeof(sym));
		snprintf(want, sizeof(want), "  %7.2f%%  %7.2f%%  %s\n",
			 ds_report_entry__children(e) * 100.0 / ds_report__total_period(r, e),
			 ds_report_entry__self(e) * 100.0 / ds_report__total_period(r, e), sym);
		CHECK(m.buf && !strncmp(m.buf, want, strlen(want)), "first line '%.60s', want '%s'", m.buf, want);
	}
	free(m.buf);
	ds_report__delete(r);
	ds_profile__close(p);
}

/* Without --children: children is self; a -g form (folded) under each entry; perf's header lines */
static void test_self_graph(void)
{
	struct ds_report_opts o = { .sz = sizeof(o), .graph_mode = DS_REPORT_FOLDED, .graph_min = 0,
				    .graph_given = true };
	struct ds_profile *p;
	struct ds_report *r = build(&o, &p);
	struct mem m = { 0 };
	size_t n, same = 0;

	CHECK(r, "report: %s", ds_errmsg());
	if (!r)
		return;
	n = ds_report__entry_count(r);
	for (size_t i = 0; i < n; i++) {
		const struct ds_report_entry *e = ds_report__entry(r, i);

		same += ds_report_entry__children(e) == ds_report_entry__self(e);
		if (i == 0)
			CHECK(ds_report_entry__comm(e) && ds_report_entry__dso(e) && ds_report_entry__sym(e) &&
			      ds_report_entry__samples(e) > 0 && !strcmp(ds_report_entry__event(e), "cpu-clock"),
			      "the first entry's comm, dso, symbol, samples, event '%s'", ds_report_entry__event(e));
	}
	CHECK(n > 10 && same == n, "no --children: children is self in %zu of %zu", same, n);
	CHECK(ds_report__print(r, mem_write, &m) == 0, "print: %s", ds_errmsg());
	CHECK(m.buf && strstr(m.buf, "# Total Lost Samples: 0\n") && strstr(m.buf, "# Overhead  Command"),
	      "perf's section head");
	/* folded: each call graph one line "PCT% outer;...;inner" (callee order: the entry first) */
	CHECK(m.buf && count_lines(m.buf, ";") > n / 2, "%zu folded chains for %zu entries",
	      m.buf ? count_lines(m.buf, ";") : 0, n);
	free(m.buf);
	ds_report__delete(r);
	ds_profile__close(p);
}

/* The errors: --sort's, attach twice, a failing stream */
static void test_errors(void)
{
	struct ds_report_opts o = { .sz = sizeof(o), .sort = "dso,nosuchkey" };
	struct ds_report *r;
	struct ds_profile *p;
	struct mem m = { .fail_after = 100, .fail_errno = ENOSPC };
	int err;

	CHECK(ds_report__check_sort("sym,dso") == 0, "sym,dso");
	CHECK(ds_report__check_sort("SYM") == 0, "case aside");
	err = ds_report__check_sort("nosuchkey");
	CHECK(err == -EINVAL && strstr(ds_errmsg(), "'nosuchkey'"), "unknown key: %d '%s'", err, ds_errmsg());
	err = ds_report__check_sort("parent");
	CHECK(err == -ENOTSUP && strstr(ds_errmsg(), "parent"), "perf's key dstack has not: %d '%s'", err, ds_errmsg());
	CHECK(ds_report__check_sort(",") == -ENOENT, "no key");
	errno = 0;
	CHECK(!ds_report__new(&o) && errno == EINVAL && strstr(ds_errmsg(), "nosuchkey"), "new, a bad --sort: %d %s",
	      errno, ds_errmsg());
	o.sz = 4;
	errno = 0;
	CHECK(!ds_report__new(&o) && errno == EINVAL, "opts.sz too small");

	o = (struct ds_report_opts){ .sz = sizeof(o) };
	r = ds_report__new(&o);
	if (r) {
		struct ds_profile_sample s = { 0 };

		CHECK(ds_report__add_sample(r, &s) == -EINVAL && strstr(ds_errmsg(), "not attached"),
		      "a sample before attach: '%s'", ds_errmsg());
		CHECK(ds_report__print(r, mem_write, &m) == -EINVAL && !m.len, "print before attach");
		ds_report__delete(r);
	}
	r = build(NULL, &p);   /* perf's defaults: --children, comm,dso,symbol, call graphs */
	CHECK(r && p, "defaults: %s", ds_errmsg());
	if (!r)
		return;
	err = ds_report__attach(r, p);
	CHECK(err == -EALREADY, "a second attach: %d", err);
	CHECK(ds_report__entry_count(r) > 0, "entries");
	err = ds_report__print(r, mem_write, &m);
	CHECK(err == -ENOSPC && m.len <= 100, "a failing stream: %d after %zu bytes", err, m.len);
	{
		struct ds_profile_sample s = { 0 };

		CHECK(ds_report__add_sample(r, &s) == -EINVAL && strstr(ds_errmsg(), "finished"),
		      "a sample after finish: '%s'", ds_errmsg());
	}
	free(m.buf);
	ds_report__delete(r);
	ds_profile__close(p);
	ds_report__delete(NULL);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s SYMFS KALLSYMS\n", argv[0]);
		return 2;
	}
	snprintf(path, sizeof(path), "%s/../../data/cpu.defer.data", argv[1]);
	popts.symbols.symfs = argv[1];
	popts.symbols.kallsyms = argv[2];
	popts.perf_order = true;
	popts.transient_comms = true;
	test_children();
	test_self_graph();
	test_errors();
	printf("report: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
