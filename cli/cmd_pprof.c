// SPDX-License-Identifier: MIT
/* dstack pprof: not written yet. */
#include <stdio.h>
#include "cli.h"

int cmd_pprof(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "dstack pprof: not implemented yet\n");
	return EXIT_USAGE;
}
