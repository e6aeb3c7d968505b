/* SPDX-License-Identifier: MIT */
/*
 * Sizes as messages say them.  Who may use it: the library, the CLI and
 * the tests (util/ is both's module).
 */
#ifndef DSTACK_UNITS_H
#define DSTACK_UNITS_H

#include <stddef.h>
#include <stdio.h>

#define DSI_SIZE_TEXT 32   /* room dsi_size_text needs */

/*
 * @bytes in @buf (DSI_SIZE_TEXT bytes) as "64 MiB", "1536 KiB" or "100
 * bytes": the largest unit it is a whole number of, or at least 10 of
 * (rounded down), so a small memory budget is never said as "0 MiB" and a
 * round one is said as given.  Returns @buf.
 */
static inline const char *dsi_size_text(size_t bytes, char *buf)
{
	if (bytes >> 20 && (!(bytes & ((1u << 20) - 1)) || bytes >> 20 >= 10))
		snprintf(buf, DSI_SIZE_TEXT, "%zu MiB", bytes >> 20);
	else if (bytes >> 10 && (!(bytes & ((1u << 10) - 1)) || bytes >> 10 >= 10))
		snprintf(buf, DSI_SIZE_TEXT, "%zu KiB", bytes >> 10);
	else
		snprintf(buf, DSI_SIZE_TEXT, "%zu bytes", bytes);
	return buf;
}

#endif
