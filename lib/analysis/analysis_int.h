/* SPDX-License-Identifier: MIT */
/* What the analysis layer's files share (internal). */
#ifndef DSTACK_ANALYSIS_INT_H
#define DSTACK_ANALYSIS_INT_H

#include <stdbool.h>
#include <string.h>

/*
 * Is @n a clock event ("cpu-clock", "task-clock", also with modifiers:
 * "cpu-clock:u", "cpu-clock/period=1000/"), whose periods are nanoseconds?
 */
static inline bool dsi_is_clock(const char *n)
{
	size_t l = !strncmp(n, "cpu-clock", 9) || !strncmp(n, "task-clock", 10) ? (n[0] == 'c' ? 9 : 10) : 0;

	return l && (!n[l] || n[l] == ':' || n[l] == '/');
}

#endif
