// SPDX-License-Identifier: MIT
/* dstack report: not written yet. */
#include <stdio.h>
#include "cli.h"

int cmd_report(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "dstack report: not implemented yet\n");
	return EXIT_USAGE;
}
