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

/*
 * Entries past which a command's cache keyed by ds_profile_sample.chain_id
 * is emptied: the ids of a long input never stop coming, and such a cache
 * only saves the work its misses redo.
 */
#define CLI_CHAIN_MEMO_MAX (1u << 16)

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
 * The debuginfod servers to ask: --debuginfod=URLS's, else
 * $DEBUGINFOD_URLS (set, it alone turns the lookup on, as for perf);
 * NULL after --no-debuginfod, or with neither.
 */
const char *cli_debuginfod_urls(void);

/*
 * The environment, read here and handed to the library (which reads
 * none): perf's build-id cache, $PERF_BUILDID_DIR else ~/.debug (NULL:
 * neither); libdebuginfod's cache ($DEBUGINFOD_CACHE_PATH, else under
 * $XDG_CACHE_HOME or ~/.cache; NULL: none); the session's memory budget,
 * $DSTACK_MEMORY_BUDGET in bytes or with a K, M or G suffix (0: the
 * library's default; a bad value is warned about once and ignored).
 */
const char *cli_buildid_dir(void);
const char *cli_debuginfod_cache(void);
size_t cli_memory_budget(void);
/* The budget in force: cli_memory_budget(), else the library's default (DS_DEFAULT_MEMORY_BUDGET). */
size_t cli_budget(void);

/*
 * Try to consume argv[*i] (and maybe its value) as a common option.
 * Returns 1 if consumed, 0 if not a common option, -1 on a missing value.
 */
int common_opt(struct common_opts *o, int argc, char **argv, int *i);
void usage_error(const char *cmd, const char *fmt, ...);
/*
 * Value of "--name=value" or "--name value" at argv[*i], and for a short
 * option also "-Nvalue"; NULL if not that option.
 */
const char *opt_value(const char *name, int argc, char **argv, int *i);

#endif
