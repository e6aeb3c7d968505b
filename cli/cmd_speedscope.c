// SPDX-License-Identifier: MIT
/* dstack speedscope: not written yet. */
#include <stdio.h>
#include "cli.h"

int cmd_speedscope(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "dstack speedscope: not implemented yet\n");
	return EXIT_USAGE;
}
