// SPDX-License-Identifier: MIT
/*
 * Fuzz target 6: the command outputs.  A perf.data file (from a memfd)
 * through the commands themselves, as `dstack CMD -i FILE -o /dev/null`
 * runs them: pprof (protobuf + gzip), speedscope (JSON), inject --merge
 * (perf.data writer), flamegraph (SVG) and folded; the last input byte
 * picks the command.  Links the CLI's objects (build-fuzz/cli/, main.c
 * with its main renamed), built with DSTACK_TIDY_EXIT so that every run
 * frees what it took and a leak is a finding.
 */
#include "fuzz_common.h"
#include "../cli/cli.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct {
		int (*fn)(int, char **);
		const char *name, *opt;
	} cmds[] = {
		{ cmd_pprof, "pprof", NULL }, { cmd_speedscope, "speedscope", NULL },
		{ cmd_inject, "inject", "--merge" }, { cmd_flamegraph, "flamegraph", NULL },
		{ cmd_folded, "folded", NULL },
	};
	char path[64];
	int fd;

	fz_init();
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
	argv[argc++] = (char *)"-i";
	argv[argc++] = path;
	argv[argc++] = (char *)"-o";
	argv[argc++] = (char *)"/dev/null";
	argv[argc++] = (char *)"--symfs";
	argv[argc++] = fz_dir;
	argv[argc++] = (char *)"--kallsyms";
	argv[argc++] = fz_kallsyms;
	argv[argc] = NULL;
	cmds[pick].fn(argc, argv);
	close(fd);
	return 0;
}
