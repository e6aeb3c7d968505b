// SPDX-License-Identifier: MIT
/*
 * dstack inject --merge|--jit: a recording rewritten as one that any perf
 * (6.1 included) reads, deferred callchains merged, stack copies unwound,
 * jitdumps' code mapped (dstack/inject.h, which does it); here the
 * options, the files and the messages.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cli.h"
#include "dstack/inject.h"
#include "dstack/log.h"
#include "dstack/session.h"
#include "dstack/writer.h"
#include "util/outbuf.h"
#include "samples.h"

struct inject {
	char run_msg[640];              /* why the session's run failed (ds_errmsg() then) */
	struct ds_writer *w;
	struct ds_inject *inj;
	bool jit;
	struct progress progress;
};

static void inject_warn(void *ctx, const char *msg)
{
	fprintf(stderr, "dstack inject: %s\n", msg);
}

static int on_event(void *ctx, const struct ds_event *ev)
{
	struct inject *inj = ctx;

	progress_input_event(&inj->progress, ev);
	return ds_inject__event(inj->inj, ev);
}

static bool same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	if (!strcmp(a, "-") || !strcmp(b, "-") || stat(a, &sa) || stat(b, &sb))
		return false;
	return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

static void print_summary(const struct ds_inject_stats *n, const char *out)
{
	fprintf(stderr, "dstack inject: wrote %s: %llu samples, %llu stitched, %llu unresolved (kernel callchain only), "
		"%llu deferred records dropped\n", strcmp(out, "-") ? out : "stdout",
		(unsigned long long)n->samples, (unsigned long long)n->stitched,
		(unsigned long long)n->unresolved, (unsigned long long)n->deferred_dropped);
	if (n->other_dropped)
		fprintf(stderr, "dstack inject: %llu records of types older perf does not know dropped\n",
			(unsigned long long)n->other_dropped);
	if (n->unknown_evsel)
		fprintf(stderr, "dstack inject: %llu records of events that appeared after the data dropped\n",
			(unsigned long long)n->unknown_evsel);
	if (n->truncated)
		fprintf(stderr, "dstack inject: %llu merged callchains too long for one record lost their outermost frames\n",
			(unsigned long long)n->truncated);
}

/*
 * After the session (@ret its result): what was read is written, even
 * when the input ended badly; errors said once (the writer's first: it
 * stopped the session), then the summary unless a write failed.  The exit
 * code.
 */
static int finish_output(struct inject *inj, struct ds_session *s, const char *out, int ret)
{
	const struct ds_inject_stats *n = ds_inject__stats(inj->inj);
	bool failed, werr;
	int cret;

	ds_inject__finish(inj->inj);
	werr = ds_writer__status(inj->w) < 0;   /* a write failed (it stopped the session) */
	if (inj->run_msg[0] && !werr)
		fprintf(stderr, "dstack inject: %s\n", inj->run_msg);
	failed = ret || ds_session__stats(s)->bad_records;
	if (werr)
		output_failed_as(ds_errmsg());   /* the writer's: it names the file and the error */
	cret = ds_writer__close(inj->w);
	inj->w = NULL;
	if (cret && !werr)
		output_failed(strcmp(out, "-") ? out : "stdout", -cret);
	if (werr || cret)
		return EXIT_OUTPUT;   /* no success line after a failed write */
	print_summary(n, out);
	if (inj->jit)
		fprintf(stderr, "dstack inject: %llu jitdumps, %llu code records mapped by jitted ELF files\n",
			(unsigned long long)n->jit_dumps, (unsigned long long)n->jit_codes);
	if (n->unwinding)
		fprintf(stderr, "dstack inject: %llu samples unwound from their stack copies, the copies dropped\n",
			(unsigned long long)n->unwound);
	return failed ? EXIT_INPUT : EXIT_OK;
}

static int run(struct ds_session *s, const char *out, const struct common_opts *co, bool jit)
{
	struct inject inj = { .jit = jit };
	struct ds_session_opts so = { 0 };
	struct ds_inject_opts io = { .sz = sizeof(io), .symfs = co->symfs, .kallsyms = co->kallsyms,
				     .buildid_dir = cli_buildid_dir(), .jit = jit, .warn = inject_warn };
	int ret;

	inj.w = ds_writer__open(out, false);
	if (!inj.w || !(inj.inj = ds_inject__new(ds_session__reader(s), inj.w, &io))) {
		fprintf(stderr, "dstack inject: %s\n", ds_errmsg());
		if (inj.w)
			ds_writer__close(inj.w);
		return EXIT_INPUT;
	}
	so.memory_budget = cli_memory_budget();
	progress_init_input(&inj.progress, "inject", ds_session__reader(s));
	ret = ds_session__run(s, &so, on_event, &inj);
	if (ret < 0)
		snprintf(inj.run_msg, sizeof(inj.run_msg), "%s", ds_errmsg());
	progress_done(&inj.progress);
	ret = finish_output(&inj, s, out, ret);
	ds_inject__delete(inj.inj);
	return ret;
}

int cmd_inject(int argc, char **argv)
{
	struct common_opts co = { .input = "-" };
	const char *out = "-", *v;
	bool merge = false, jit = false;

	for (int i = 1; i < argc; i++) {
		int c = common_opt(&co, argc, argv, &i);

		if (c < 0) {
			usage_error("inject", "option '%s' needs a value", argv[i]);
			return EXIT_USAGE;
		}
		if (c)
			continue;
		if ((v = opt_value("-o", argc, argv, &i)) || (v = opt_value("--output", argc, argv, &i))) {
			out = v;
			continue;
		}
		if (!strcmp(argv[i], "--merge")) {
			merge = true;
			continue;
		}
		if (!strcmp(argv[i], "--jit") || !strcmp(argv[i], "-j")) {
			jit = true;
			continue;
		}
		usage_error("inject", "unknown option '%s' (usage: dstack inject --merge|--jit [-i IN] [-o OUT])", argv[i]);
		return EXIT_USAGE;
	}
	if (!merge && !jit) {
		usage_error("inject", "nothing to do: give --merge or --jit (usage: dstack inject --merge|--jit [-i IN] [-o OUT])");
		return EXIT_USAGE;
	}
	if (!strcmp(out, "-") && isatty(STDOUT_FILENO)) {
		usage_error("inject", "will not write a perf.data stream to a terminal: give -o FILE or redirect stdout");
		return EXIT_USAGE;
	}
	if (same_file(co.input, out)) {
		usage_error("inject", "the output %s is the input: write to another file", out);
		return EXIT_USAGE;
	}
	struct ds_session *s = ds_session__open(co.input);

	if (!s) {
		fprintf(stderr, "dstack inject: %s\n", ds_errmsg());
		return EXIT_INPUT;
	}
	int ret = run(s, out, &co, jit);

	ds_session__close(s);
	return ret;
}
