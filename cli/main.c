// SPDX-License-Identifier: MIT
/* dstack: entry point and subcommand dispatch. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"

static const struct {
	const char *name;
	int (*fn)(int, char **);
	const char *help;
} commands[] = {
	{ "script", cmd_script, "print samples with stitched callchains (perf script format)" },
	{ "stat", cmd_stat, "record counts and stitching statistics" },
	{ "dump", cmd_dump, "every record with its offset, type, size and fields" },
	{ "report", cmd_report, "flat profile and call graphs (perf report --stdio)" },
	{ "flamegraph", cmd_flamegraph, "interactive flame graph (self-contained SVG)" },
	{ "folded", cmd_folded, "folded stacks for FlameGraph tools" },
	{ "pprof", cmd_pprof, "pprof profile.proto (gzip)" },
	{ "speedscope", cmd_speedscope, "speedscope JSON" },
	{ "inject", cmd_inject, "rewrite a recording (--merge: classic callchains for old readers)" },
	{ "record", cmd_record, "record a profile (deferred callchains where the kernel has them)" },
};

static void usage(FILE *f)
{
	fprintf(f, "usage: dstack COMMAND [OPTIONS]\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(*commands); i++)
		fprintf(f, "  %-11s %s\n", commands[i].name, commands[i].help);
	fprintf(f, "\ncommon options: -i FILE (default perf.data, - for stdin), --symfs DIR, --kallsyms FILE\n");
}

const char *opt_value(const char *name, int argc, char **argv, int *i)
{
	size_t n = strlen(name);
	const char *a = argv[*i];

	if (strncmp(a, name, n))
		return NULL;
	if (a[n] == '=')
		return a + n + 1;
	if (a[n])
		return NULL;
	if (*i + 1 >= argc) {
		usage_error(argv[0], "option %s needs a value", name);
		exit(EXIT_USAGE);
	}
	return argv[++*i];
}

int common_opt(struct common_opts *o, int argc, char **argv, int *i)
{
	const char *v;

	if ((v = opt_value("-i", argc, argv, i)) || (v = opt_value("--input", argc, argv, i))) {
		o->input = v;
		return 1;
	}
	if ((v = opt_value("--symfs", argc, argv, i))) {
		o->symfs = v;
		return 1;
	}
	if ((v = opt_value("--kallsyms", argc, argv, i)) || (v = opt_value("-k", argc, argv, i))) {
		o->kallsyms = v;
		return 1;
	}
	return 0;
}

void usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "dstack %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
}

int main(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? EXIT_USAGE : EXIT_OK;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(*commands); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "dstack: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return EXIT_USAGE;
}
