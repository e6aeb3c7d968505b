// SPDX-License-Identifier: MIT
/*
 * dstack folded: one line per distinct stack, "comm;outer;...;inner count",
 * as the library's folded export writes it (ds_folded, dstack/export.h):
 * named the way FlameGraph's stackcollapse-perf.pl names `perf script`
 * frames (with --kernel), in bounded memory ($DSTACK_MEMORY_BUDGET; past
 * it the stacks spill to $TMPDIR).  This file parses the options and
 * hands the samples over.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include "dstack/export.h"
#include "util/outbuf.h"
#include "util/spill.h"
#include "samples.h"
#include "export_common.h"

struct folded_cmd {
	struct walk_opts wo;
	bool period;
	const char *output;        /* NULL: stdout */
	struct ds_folded *fo;
};

static int on_sample(void *ctx, const struct ds_profile_sample *s)
{
	struct folded_cmd *c = ctx;

	/* a spill failure said as the output's ("writing a temporary file in DIR: ...") */
	return export_failed(ds_folded__add(c->fo, s));
}

static void folded_usage(FILE *f)
{
	fprintf(f, "usage: dstack folded [-o FILE] [--period] [options]\n"
			"  -o FILE              write to FILE (default stdout)\n"
			"  --period             weight stacks by sample period instead of counting samples\n%s",
		walk_usage());
}

/*
 * The options into @c.  EXIT_OK, EXIT_USAGE after saying why (at the
 * first bad option), or -1 after printing the help.
 */
static int parse_args(struct folded_cmd *c, int argc, char **argv)
{
	const char *v;

	for (int i = 1; i < argc; i++) {
		int r = walk_opt(&c->wo, "folded", argc, argv, &i);

		if (r < 0)
			return EXIT_USAGE;
		else if (r)
			continue;
		else if ((v = opt_value("-o", argc, argv, &i)) || (v = opt_value("--output", argc, argv, &i)))
			c->output = strcmp(v, "-") ? v : NULL;   /* "-": stdout, as every -o */
		else if (!strcmp(argv[i], "--period"))
			c->period = true;
		else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			folded_usage(stdout);
			return -1;
		} else {
			usage_error("folded", "unknown option '%s'", argv[i]);
			folded_usage(stderr);
			return EXIT_USAGE;
		}
	}
	return EXIT_OK;
}

/* The folded stacks written to @fd.  0 or a negative errno (ENOMEM unsaid). */
static int write_folded(struct folded_cmd *c, int fd)
{
	struct outbuf *out = outbuf_new(fd);
	int err;

	if (!out)
		return -ENOMEM;
	err = ds_folded__write(c->fo, cli_write_outbuf, out);
	outbuf_flush(out);
	if (err && !out->error)
		export_failed(err);   /* the export's failure; the buffer says its own */
	if (!err && out->error)
		err = -out->error;
	outbuf_delete(out);
	return err;
}

/* The samples folded and printed to @fd (closed when it is the -o file's).  The exit code. */
static int fold_and_print(struct folded_cmd *c, int fd)
{
	int ret = walk_samples("folded", &c->wo, on_sample, c);
	int err = write_folded(c, fd);

	if (err == -ENOMEM) {
		fprintf(stderr, "dstack folded: %s\n", strerror(-err));
		ret = EXIT_INPUT;
	} else if (err) {
		ret = EXIT_OUTPUT;   /* reported by the buffer, or above */
	}
	if (c->output && close(fd) && !err) {   /* a file system may report a failed write only at close */
		output_failed(c->output, errno);
		ret = EXIT_OUTPUT;
	}
	return ret;
}

int cmd_folded(int argc, char **argv)
{
	struct folded_cmd c = { .output = NULL };
	int ret, fd = STDOUT_FILENO;

	walk_opts_init(&c.wo);
	c.wo.script_comms = true;
	c.wo.transient_comms = true;   /* the export copies what it keeps */
	ret = parse_args(&c, argc, argv);
	if (ret < 0)
		return EXIT_OK;
	struct ds_folded_opts fo = {
		.sz = sizeof(fo),
		.period = c.period || c.wo.time_mode != WALK_CPU,   /* --off-cpu/--wall: stacks weigh their ns */
		.memory = cli_budget(),
		.tmpdir = dsi_spill_dir(),
	};

	if (ret == EXIT_OK && !(c.fo = ds_folded__new(&fo))) {
		fprintf(stderr, "dstack folded: out of memory\n");
		ret = EXIT_INPUT;
	}
	if (ret == EXIT_OK && c.output && (fd = open(c.output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0) {
		fprintf(stderr, "dstack folded: %s: %s\n", c.output, strerror(errno));
		ret = EXIT_USAGE;
	}
	if (c.output)
		output_file(c.output);
	if (ret == EXIT_OK)
		ret = fold_and_print(&c, fd);
	ds_folded__delete(c.fo);
	return ret;
}
