// SPDX-License-Identifier: MIT
/* dstack inject: not written yet. */
#include <stdio.h>
#include "cli.h"

int cmd_inject(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "dstack inject: not implemented yet\n");
	return EXIT_USAGE;
}
