// SPDX-License-Identifier: MIT
/* dstack folded: not written yet. */
#include <stdio.h>
#include "cli.h"

int cmd_folded(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "dstack folded: not implemented yet\n");
	return EXIT_USAGE;
}
