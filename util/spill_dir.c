// SPDX-License-Identifier: MIT
/* The CLI's side of util/spill.h: where spill files go, from the environment. */
#include <stdlib.h>
#include "util/spill.h"

const char *dsi_spill_dir(void)
{
	const char *tmp = getenv("TMPDIR");

	return tmp && *tmp ? tmp : "/tmp";
}

struct dsi_tally *dsi_tally__new(size_t mem)
{
	return dsi_tally__new_in(mem, dsi_spill_dir());
}
