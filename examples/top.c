// SPDX-License-Identifier: MIT
/*
 * top: a recording's cumulative profile by symbol, the entries of
 * `dstack report --stdio --children --sort sym -g none`, through
 * libdstack's public API only: the profile's resolved samples
 * (dstack/profile.h) into perf report's model (dstack/report.h), its
 * entries read one by one.
 *
 *   top FILE [SYMFS [KALLSYMS]]
 *
 * One line per entry, in the report's order (each event's section in
 * turn): "CHILDREN SELF SYMBOL", the cumulative and own shares of the
 * event's period in percent with two decimals, then the symbol column
 * ("[.] name", "[k] name").
 *
 * Build against an installed tree (make install PREFIX=$P):
 *   cc -I$P/include top.c $P/lib/libdstack.a -lelf -ldw -lzstd -lz -liberty -lm -lpthread
 */
#include <stdio.h>
#include <dstack/log.h>
#include <dstack/profile.h>
#include <dstack/report.h>

static int on_sample(void *ctx, const struct ds_profile_sample *s)
{
	return ds_report__add_sample(ctx, s);
}

static double share(uint64_t part, uint64_t total)
{
	return total ? part * 100.0 / total : 0.0;
}

int main(int argc, char **argv)
{
	struct ds_profile_opts opts = {
		.symbols = { .symfs = argc > 2 ? argv[2] : NULL, .kallsyms = argc > 3 ? argv[3] : NULL },
		/* as perf report reads: its order of samples, a caller-first chain past --max-stack */
		.perf_order = true,
		.max_stack_from_root = true,
		.transient_comms = true,
	};
	struct ds_report_opts ropts = {
		.sz = sizeof(ropts),
		.sort = "sym",
		.children = true,
		.caller = true,             /* --children's order */
		.no_graph = true,           /* -g none */
		.graph_min = -1,
	};
	struct ds_report *r;
	struct ds_profile *p;
	char sym[16384];
	int err;

	if (argc < 2 || argc > 4) {
		fprintf(stderr, "usage: %s FILE [SYMFS [KALLSYMS]]\n", argv[0]);
		return 2;
	}
	if (!(r = ds_report__new(&ropts))) {
		fprintf(stderr, "top: %s\n", ds_errmsg());
		return 1;
	}
	p = ds_profile__open(argv[1], &opts);   /* why it fails: logged */
	if (!p) {
		ds_report__delete(r);
		return 1;
	}
	err = ds_report__attach(r, p);
	if (err)
		fprintf(stderr, "top: %s\n", ds_errmsg());
	else
		err = ds_profile__for_each_sample(p, on_sample, r);
	/* the samples read before an error are shown all the same, as dstack report does */
	if (!err || ds_report__has_samples(r)) {
		for (size_t i = 0; i < ds_report__entry_count(r); i++) {
			const struct ds_report_entry *e = ds_report__entry(r, i);
			uint64_t total = ds_report__total_period(r, e);

			ds_report_entry__symbol(e, sym, sizeof(sym));
			printf("%.2f %.2f %s\n", share(ds_report_entry__children(e), total),
			       share(ds_report_entry__self(e), total), sym);
		}
	}
	ds_report__delete(r);
	ds_profile__close(p);
	if (fflush(stdout) || ferror(stdout))
		return 1;
	return err ? 1 : 0;
}
