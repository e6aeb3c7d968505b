// SPDX-License-Identifier: MIT
/*
 * dstack report: perf report --stdio.  The options into the report's
 * (dstack/report.h), the samples walked into it (samples.c), and the
 * report printed: the model and its printers are the library's
 * (lib/analysis/report*.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include "dstack/log.h"
#include "dstack/report.h"
#include "util/outbuf.h"
#include "util/units.h"
#include "header.h"
#include "progress.h"
#include "samples.h"

/* perf's --dsos and -S lists (its strlist; repeated options add up) */
struct name_list {
	char **v;
	size_t n;
};

struct cli_report {
	struct walk_opts wo;
	struct ds_report_opts o;
	struct name_list dsos, syms;
	bool header, header_only;          /* --header, --header-only: the recording's header first */
	struct ds_report *r;
	struct ds_profile *wo_profile;     /* the walk's, while it runs */
};

static void report_usage(FILE *f)
{
	fprintf(f,
		"usage: dstack report [options]\n"
		"  --stdio                  text output (the only output; accepted for perf compatibility)\n"
		"  --children | --no-children  cumulative (caller-inclusive) profile (perf's default\n"
		"                           where callchains were recorded), or self only\n"
		"  --no-branch-stack        the samples of a recording with branch stacks (-b, LBR):\n"
		"                           the only view dstack has of them; without it, a warning\n"
		"  --sort KEY[,KEY...]      pid, comm, dso, symbol, cpu, srcline, trace; perf's\n"
		"                           prefixes (sym); default comm,dso,symbol, or trace\n"
		"                           for a recording of tracepoints only\n"
		"  -g [graph|fractal|flat|folded,][MIN,]caller|callee|none[,percent|period]\n"
		"                           call-graph print type, order (or none) and values\n"
		"                           (default: callee; caller with --children); MIN: the\n"
		"                           smallest branch shown, in percent (default 0.5)\n"
		"  -G, --inverted           perf's alias of -g caller\n"
		"  -U, --hide-unresolved    no sample at an address without a symbol, no such frame\n"
		"  -n, --show-nr-samples    the Samples column\n"
		"  --show-total-period      the Period column (each entry's own period)\n"
		"  --percent-limit P        hide entries and call-graph branches below P%%\n"
		"  --percentage relative|absolute  shares of the samples shown, or of all (default)\n"
		"  --dsos NAME[,...]        only samples in these objects (short or full name); others\n"
		"                           count in the totals, as in perf\n"
		"  -S, --symbols NAME[,...] only samples in these functions (symbol-table names)\n"
		"  --header                 the recording's header first\n"
		"  --header-only            only the recording's header\n"
		"  --stats                  only the records read, by type, and each event's samples\n%s",
		walk_usage());
}

/*
 * perf's -g/--call-graph of report: a print type (graph, fractal, flat,
 * folded; "none"), an order (caller, callee), the key "function", the
 * values (percent, period) and a number: the smallest branch shown, in
 * percent.  0, or -1 after saying why ("address" and "count" are not
 * done).
 */
static int parse_call_graph(struct cli_report *r, const char *v, const char **order)
{
	char tmp[128], *end;
	bool threshold = false;

	snprintf(tmp, sizeof(tmp), "%s", v);
	for (char *t = strtok(tmp, ","); t; t = strtok(NULL, ",")) {
		if (!strcmp(t, "caller") || !strcmp(t, "callee") || !strcmp(t, "none")) {
			*order = !strcmp(t, "caller") ? "caller" : !strcmp(t, "callee") ? "callee" : "none";
		} else if (!strcmp(t, "graph") || !strcmp(t, "fractal") || !strcmp(t, "flat") || !strcmp(t, "folded")) {
			r->o.graph_given = true;
			r->o.graph_mode = !strcmp(t, "graph") ? DS_REPORT_GRAPH : !strcmp(t, "fractal") ? DS_REPORT_FRACTAL :
					!strcmp(t, "flat") ? DS_REPORT_FLAT : DS_REPORT_FOLDED;
		} else if (!strcmp(t, "function") || !strcmp(t, "percent") || !strcmp(t, "period")) {
			r->o.graph_given = true;
			if (strcmp(t, "function"))
				r->o.graph_period = !strcmp(t, "period");
		} else if (!threshold && (r->o.graph_min = strtod(t, &end), end != t && !*end) && r->o.graph_min >= 0) {
			threshold = true;
		} else {
			usage_error("report", "-g %s: dstack prints graph, fractal, flat and folded call graphs (caller "
				    "or callee, a threshold in percent, by function, as percents or periods): '%s' is not "
				    "supported", v, t);
			return -1;
		}
	}
	return 0;
}

/* A comma list's names added to @l (perf's strlist; repeated options add up).  0, or -1 when out of memory (said). */
static int add_names(struct name_list *l, const char *v)
{
	char *copy = strdup(v), *save = NULL;

	if (!copy)
		goto oom;
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		char **nv = realloc(l->v, (l->n + 1) * sizeof(*nv));

		if (!nv || !(nv[l->n] = strdup(t))) {
			if (nv)
				l->v = nv;
			free(copy);
			goto oom;
		}
		l->v = nv;
		l->n++;
	}
	free(copy);
	return 0;
oom:
	fprintf(stderr, "dstack report: out of memory\n");
	return -1;
}

static void free_names(struct name_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
}

static int parse_args(struct cli_report *r, int argc, char **argv)
{
	const char *order = NULL, *v;

	for (int i = 1; i < argc; i++) {
		int c = walk_opt(&r->wo, "report", argc, argv, &i);

		if (c < 0)
			return EXIT_USAGE;
		if (c)
			continue;
		if (!strcmp(argv[i], "--stdio")) {
			continue;
		} else if (!strcmp(argv[i], "--children")) {
			r->o.children = true;
		} else if (!strcmp(argv[i], "--no-children")) {
			r->o.children = false;
		} else if (!strcmp(argv[i], "--no-branch-stack")) {
			r->o.no_branch_stack = true;   /* the only view dstack has: say so, warn not */
		} else if ((v = opt_value("--sort", argc, argv, &i)) || (v = opt_value("-s", argc, argv, &i))) {
			int err = ds_report__check_sort(v);

			if (err) {
				if (err != -ENOENT)
					usage_error("report", "%s", ds_errmsg());
				return EXIT_USAGE;
			}
			r->o.sort = v;
		} else if (!strcmp(argv[i], "-g") && (i + 1 >= argc || argv[i + 1][0] == '-')) {
			r->o.graph_given = true;   /* perf's -g alone: its default graph */
		} else if ((v = opt_value("-g", argc, argv, &i)) || (v = opt_value("--call-graph", argc, argv, &i))) {
			if (parse_call_graph(r, v, &order))
				return EXIT_USAGE;
		} else if (!strcmp(argv[i], "-G") || !strcmp(argv[i], "--inverted")) {
			if (parse_call_graph(r, "caller", &order))   /* perf's alias of -g caller */
				return EXIT_USAGE;
		} else if ((v = opt_value("--percent-limit", argc, argv, &i))) {
			char *end;

			r->o.percent_limit = strtod(v, &end);
			if (end == v || *end || r->o.percent_limit < 0) {
				usage_error("report", "bad --percent-limit '%s'", v);
				return EXIT_USAGE;
			}
		} else if ((v = opt_value("--percentage", argc, argv, &i))) {
			if (strcmp(v, "relative") && strcmp(v, "absolute")) {
				usage_error("report", "--percentage takes relative or absolute, not '%s'", v);
				return EXIT_USAGE;
			}
			r->o.relative = !strcmp(v, "relative");
		} else if ((v = opt_value("--dsos", argc, argv, &i))) {
			if (add_names(&r->dsos, v))
				return EXIT_FAILURE;
		} else if ((v = opt_value("-S", argc, argv, &i)) || (v = opt_value("--symbols", argc, argv, &i))) {
			if (add_names(&r->syms, v))
				return EXIT_FAILURE;
		} else if (!strcmp(argv[i], "-n") || !strcmp(argv[i], "--show-nr-samples")) {
			r->o.show_samples = true;
		} else if (!strcmp(argv[i], "--show-total-period")) {
			r->o.show_period = true;
		} else if (!strcmp(argv[i], "-U") || !strcmp(argv[i], "--hide-unresolved")) {
			r->o.hide_unresolved = true;
		} else if (!strcmp(argv[i], "--inline")) {
			/* perf's default: inlined functions in the call graph */
		} else if (!strcmp(argv[i], "--header")) {
			r->header = true;
		} else if (!strcmp(argv[i], "--header-only")) {
			r->header_only = true;
		} else if (!strcmp(argv[i], "--stats")) {
			r->o.stats = true;
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			report_usage(stdout);
			return -1;
		} else {
			usage_error("report", "unknown option '%s'", argv[i]);
			report_usage(stderr);
			return EXIT_USAGE;
		}
	}
	r->o.no_graph = order && !strcmp(order, "none");
	r->o.graph_given |= order && strcmp(order, "none");
	r->o.caller = order && strcmp(order, "none") ? !strcmp(order, "caller") : r->o.children;
	/* perf resolves a chain in the order it shows it: past --max-stack, caller first keeps the outermost */
	r->wo.max_stack_from_root = r->o.caller;
	return EXIT_OK;
}


/* The walk's samples into the report */
static int on_sample(void *ctx, const struct ds_profile_sample *s)
{
	return ds_report__add_sample(ctx, s);
}

static int on_event(void *ctx, const struct ds_event *ev)
{
	return ds_report__add_event(ctx, ev);
}

/* The report's output into the command's buffer */
static int to_outbuf(void *ctx, const void *buf, size_t len)
{
	outbuf_write(ctx, buf, len);
	return 0;
}

/* The walk is over, its names still valid: print. */
static void report_at_end(struct cli_report *c, int status)
{
	struct ds_report_stats st;
	struct outbuf *out;
	char size[DSI_SIZE_TEXT];

	ds_report__stats(c->r, &st);
	if (status != EXIT_OK && !st.entries && !c->o.stats)
		return;
	if (!(out = outbuf_new(STDOUT_FILENO))) {
		fprintf(stderr, "dstack report: out of memory\n");
		return;
	}
	if (!c->o.stats && c->header) {
		int err = header_print(stdout, c->wo.common.input, ds_profile__reader(c->wo_profile));

		if (err)
			output_failed("stdout", err);
	} else if (!c->o.stats && !cli_quiet) {
		outbuf_puts(out, "# To display the perf.data header info, please use --header/--header-only options.\n#\n");
	}
	if (ds_report__print(c->r, to_outbuf, out))
		fprintf(stderr, "dstack report: out of memory\n");
	else if (!c->o.stats && !ds_report__has_samples(c->r)) {
		/* no sample (none recorded, or none on the CPUs or times asked): perf says so and ends there */
		outbuf_flush(out);
		fprintf(stderr, "Error:\nThe %s data has no samples!\n", c->wo.common.input);
	}
	outbuf_flush(out);
	outbuf_delete(out);
	if (st.unkept)
		fprintf(stderr, "dstack: %s: the report's entries and call graphs reached %s: %llu of %llu %s "
			"counted in the totals only, in no entry (memory budget: DSTACK_MEMORY_BUDGET)\n",
			c->wo.common.input, dsi_size_text(c->o.memory, size), (unsigned long long)st.unkept,
			(unsigned long long)st.samples, st.branch_view ? "branches" : "samples");
}

static void cli_report_free(struct cli_report *c)
{
	ds_report__delete(c->r);
	free_names(&c->dsos);
	free_names(&c->syms);
	free(c);
}

int cmd_report(int argc, char **argv)
{
	struct cli_report *c = calloc(1, sizeof(*c));
	struct walk w;
	int ret;

	if (!c) {
		fprintf(stderr, "dstack report: out of memory\n");
		return EXIT_INPUT;
	}
	walk_opts_init(&c->wo);
	c->o = (struct ds_report_opts){ .sz = sizeof(c->o), .graph_min = -1, .memory = cli_budget(),
					.children = true /* perf's default where callchains were recorded */ };
	ret = parse_args(c, argc, argv);
	if (ret) {
		cli_report_free(c);
		return ret < 0 ? EXIT_OK : ret;
	}
	c->wo.transient_comms = true;   /* a ":TID" the report keeps, it copies */
	/* samples in perf 7.2's order: entries are made as perf makes them (the
	 * first to make one gives its level, [k] or [.]; ties keep that order) */
	c->wo.perf_order = true;
	if (c->header_only) {
		ret = header_print_only("report", c->wo.common.input);
		cli_report_free(c);
		return ret;
	}
	c->o.quiet = cli_quiet;
	c->o.comms = c->wo.filter.comms;
	c->o.nr_comms = c->wo.filter.nr_comms;
	c->o.thread_filter = c->wo.filter.nr_pids || c->wo.filter.nr_tids;
	c->o.time_mode = c->wo.time_mode;
	c->o.time_str = c->wo.filter.time_str;
	c->o.dsos = (const char *const *)c->dsos.v;
	c->o.nr_dsos = c->dsos.n;
	c->o.symbols = (const char *const *)c->syms.v;
	c->o.nr_symbols = c->syms.n;
	if (!(c->r = ds_report__new(&c->o))) {
		fprintf(stderr, "dstack report: %s\n", errno == ENOMEM ? "out of memory" : ds_errmsg());
		cli_report_free(c);
		return errno == ENOMEM ? EXIT_INPUT : EXIT_USAGE;
	}
	ret = walk_open(&w, "report", &c->wo);
	if (ret == EXIT_OK) {
		int err = ds_report__attach(c->r, w.profile);

		if (ds_report__branch_view_refused(c->r))
			fprintf(stderr, "dstack report: the recording has branch stacks; perf report shows its branch view, "
				"which dstack has with its own keys and pid, comm, dso, symbol and cpu, and "
				"without -g, -n, --show-total-period, -U, --percentage, --comm, --pid, --tid, --dsos or -S: "
				"the samples are shown (perf report --no-branch-stack)\n");
		if (err) {
			fprintf(stderr, "dstack report: %s\n", ds_errmsg());
			walk_finish(&w);
			cli_report_free(c);
			return EXIT_USAGE;
		}
		c->wo_profile = w.profile;
		ret = c->o.stats ? walk_run_events(&w, on_event, c->r) : walk_run(&w, on_sample, c->r);
		report_at_end(c, ret);
		walk_finish(&w);
	}
	cli_report_free(c);
	return ret;
}
