// SPDX-License-Identifier: MIT
/*
 * Fuzz target: perf report's model through the library's public API
 * (dstack/report.h).  A perf.data file (from a memfd) opened as a
 * ds_profile, its samples (or, --stats, its events) into a ds_report,
 * every entry read back through the accessors, then printed to a stream
 * that keeps nothing.  The last two input bytes pick the options: the
 * sort keys (a table of perf's and the branch view's), --children, the
 * -g form, order and values, -g none, -U, -n, --show-total-period,
 * --percentage relative, --percent-limit, a --dsos or -S filter, the least
 * memory (past it samples count in the totals only), --stats.  Every run
 * frees what it took, so a leak is a finding.
 */
#include "fuzz_common.h"
#include "dstack/profile.h"
#include "dstack/report.h"

static int on_sample(void *ctx, const struct ds_profile_sample *s)
{
	return ds_report__add_sample(ctx, s);
}

static int on_event(void *ctx, const struct ds_event *ev)
{
	return ds_report__add_event(ctx, ev);
}

static const char *const sorts[] = {
	NULL, "sym", "dso,sym", "pid,comm", "srcline", "trace", "cpu,sym", "comm,dso_from,symbol_from,symbol_to,cycles",
	"dso_to,sym_to", "pid,dso,symbol,cpu", "symbol,dso", "comm,pid,srcline",
};

/* Every entry read back: the accessors' strings and periods */
static size_t read_entries(struct ds_report *r)
{
	char buf[256];
	size_t sum = 0, n = ds_report__entry_count(r);

	for (size_t i = 0; i < n; i++) {
		const struct ds_report_entry *e = ds_report__entry(r, i);
		const char *s;

		sum += ds_report_entry__symbol(e, buf, sizeof(buf)) + strlen(ds_report_entry__event(e));
		sum += (s = ds_report_entry__sym(e)) ? strlen(s) : 0;
		sum += (s = ds_report_entry__dso(e)) ? strlen(s) : 0;
		sum += (s = ds_report_entry__comm(e)) ? strlen(s) : 0;
		sum += (size_t)(ds_report_entry__self(e) + ds_report_entry__children(e) + ds_report_entry__samples(e) +
				ds_report__total_period(r, e));
	}
	return sum;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const dsos[] = { "[kernel.kallsyms]", "libc.so.6" };
	static const char *const syms[] = { "main", "do_syscall_64" };
	char path[64];
	struct fz_out out = { 0 };
	unsigned a = size ? data[size - 1] : 0, b = size > 1 ? data[size - 2] : 0;
	int fd;

	fz_init();
	fd = fz_memfd(data, size, path, sizeof(path));
	if (fd < 0)
		return 0;
	struct ds_report_opts o = {
		.sz = sizeof(o),
		.sort = sorts[a % (sizeof(sorts) / sizeof(*sorts))],
		.children = a & 16,
		.caller = a & 32,
		.no_graph = (a & 192) == 192,
		.graph_given = (a & 192) == 64,
		.graph_mode = (enum ds_report_graph_mode)(b & 3),
		.graph_period = b & 4,
		.graph_min = b & 8 ? 0 : -1,
		.percent_limit = b & 16 ? 1.5 : 0,
		.relative = b & 32,
		.hide_unresolved = b & 64,
		.show_samples = b & 128,
		.show_period = a & 64,
		.quiet = size & 1,
		.dsos = (b & 0x30) == 0x30 ? dsos : NULL,
		.nr_dsos = 2,
		.symbols = (b & 0x50) == 0x50 ? syms : NULL,
		.nr_symbols = 2,
		.memory = (b & 0xc0) == 0xc0 ? 1 : 0,
		.stats = (a & 0xf0) == 0xf0,
	};
	struct ds_profile_opts po = {
		.symbols = { .symfs = fz_dir, .kallsyms = fz_kallsyms },
		.one_thread = true,    /* every run starts alike */
		.transient_comms = true,
		.perf_order = true,
		.max_stack_from_root = o.caller,
	};
	struct ds_report *r = ds_report__new(&o);
	struct ds_profile *p = r ? ds_profile__open(path, &po) : NULL;

	if (p && !ds_report__attach(r, p)) {
		if (o.stats)
			ds_profile__for_each_event(p, on_event, r);
		else
			ds_profile__for_each_sample(p, on_sample, r);
		if (!o.stats)
			out.bytes += read_entries(r);
		ds_report__print(r, fz_write, &out);
	}
	ds_report__delete(r);
	ds_profile__close(p);
	close(fd);
	return 0;
}
