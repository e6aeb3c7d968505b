// SPDX-License-Identifier: MIT
/*
 * Fuzz target 11: the command whose engine is still in cli/ (inject) and
 * the shells of report and the exports; their engines are fuzzed through
 * the library's API by fuzz_report and fuzz_export.  A perf.data file (from a memfd)
 * through the commands themselves, as `dstack CMD -i FILE -o /dev/null`
 * runs them: pprof (protobuf + gzip), speedscope (JSON), inject --merge
 * (perf.data writer), flamegraph (SVG), folded, and report (to stdout,
 * which the target sends to /dev/null) with --children and two graph
 * modes (perf's trees of call-graph children); the last input byte picks
 * the command.  Links the CLI's objects (build-fuzz/cli/, main.c
 * with its main renamed), built with DSTACK_TIDY_EXIT so that every run
 * frees what it took and a leak is a finding.
 */
#include <fcntl.h>
#include "fuzz_common.h"
#include "../cli/cli.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct {
		int (*fn)(int, char **);
		const char *name, *opt, *arg;
		bool to_stdout;
	} cmds[] = {
		{ cmd_pprof, "pprof", NULL, NULL, false }, { cmd_speedscope, "speedscope", NULL, NULL, false },
		{ cmd_inject, "inject", "--merge", NULL, false }, { cmd_flamegraph, "flamegraph", NULL, NULL, false },
		{ cmd_folded, "folded", NULL, NULL, false },
		{ cmd_report, "report", "--children", NULL, true },
		{ cmd_report, "report", "-g", "folded,0,caller,period", true },
		{ cmd_report, "report", "-g", "fractal,0.5,callee,function,period", true },
	};
	static bool quiet;
	char path[64];
	int fd;

	fz_init();
	if (!quiet) {
		int null = open("/dev/null", O_WRONLY);

		if (null >= 0 && dup2(null, STDOUT_FILENO) >= 0)
			quiet = true;
		if (null >= 0)
			close(null);
	}
	/* one thread: every run starts alike */
	setenv("DSTACK_ONE_THREAD", "1", 1);
	fd = fz_memfd(data, size, path, sizeof(path));
	if (fd < 0)
		return 0;
	unsigned pick = size ? data[size - 1] % (sizeof(cmds) / sizeof(*cmds)) : 0;
	char *argv[12];
	int argc = 0;

	argv[argc++] = (char *)cmds[pick].name;
	if (cmds[pick].opt)
		argv[argc++] = (char *)cmds[pick].opt;
	if (cmds[pick].arg)
		argv[argc++] = (char *)cmds[pick].arg;
	argv[argc++] = (char *)"-i";
	argv[argc++] = path;
	if (!cmds[pick].to_stdout) {
		argv[argc++] = (char *)"-o";
		argv[argc++] = (char *)"/dev/null";
	}
	argv[argc++] = (char *)"--symfs";
	argv[argc++] = fz_dir;
	argv[argc++] = (char *)"--kallsyms";
	argv[argc++] = fz_kallsyms;
	argv[argc] = NULL;
	cmds[pick].fn(argc, argv);
	close(fd);
	return 0;
}
