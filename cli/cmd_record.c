// SPDX-License-Identifier: MIT
/* dstack record: not written yet. */
#include <stdio.h>
#include "cli.h"

int cmd_record(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "dstack record: not implemented yet\n");
	return EXIT_USAGE;
}
