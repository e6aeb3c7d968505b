// SPDX-License-Identifier: MIT
/* dstack flamegraph: not written yet. */
#include <stdio.h>
#include "cli.h"

int cmd_flamegraph(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "dstack flamegraph: not implemented yet\n");
	return EXIT_USAGE;
}
