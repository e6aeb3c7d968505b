/* SPDX-License-Identifier: MIT */
/* Shared pieces of the dstack command line: one file per subcommand. */
#ifndef DSTACK_CLI_H
#define DSTACK_CLI_H

#include <stdbool.h>
#include <stdio.h>

/* Exit statuses (docs/errors.md): */
#define EXIT_OK 0
#define EXIT_USAGE 2       /* bad command line */
#define EXIT_INPUT 1       /* unreadable or corrupt input; output so far was written */
#define EXIT_OUTPUT OUTPUT_EXIT_FAILED      /* the output could not be written (disk full, closed pipe, I/O error) */

int cmd_script(int argc, char **argv);
int cmd_stat(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_flamegraph(int argc, char **argv);
int cmd_folded(int argc, char **argv);
int cmd_pprof(int argc, char **argv);
int cmd_speedscope(int argc, char **argv);
int cmd_inject(int argc, char **argv);
int cmd_record(int argc, char **argv);
int cmd_diff(int argc, char **argv);

/* Common options: -i FILE, --symfs DIR, --kallsyms FILE. */
struct common_opts {
	const char *input;
	const char *symfs;
	const char *kallsyms;
};

/*
 * --debuginfod[=URLS] (common_opt): NULL when not asked for; "" for the
 * servers of $DEBUGINFOD_URLS; else the servers named.
 */
extern const char *cli_debuginfod;

/*
 * Try to consume argv[*i] (and maybe its value) as a common option.
 * Returns 1 if consumed, 0 if not a common option, -1 on a missing value.
 */
int common_opt(struct common_opts *o, int argc, char **argv, int *i);
void usage_error(const char *cmd, const char *fmt, ...);
/* Value of "--name=value" or "--name value" at argv[*i]; NULL if not that option. */
const char *opt_value(const char *name, int argc, char **argv, int *i);

#endif
