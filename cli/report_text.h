/* SPDX-License-Identifier: MIT */
/*
 * report's text as perf's --stdio prints it: the pieces of a section's head
 * and of its columns that the sample view (cmd_report.c) and the branch
 * view (report_branch.c) both print.  Into an outbuf, without a printf per
 * column.
 *
 * Who may use it: cmd_report.c and report_branch.c.
 */
#ifndef DSTACK_CLI_REPORT_TEXT_H
#define DSTACK_CLI_REPORT_TEXT_H

#include <stddef.h>
#include <stdint.h>
#include "util/outbuf.h"

/*
 * A count as perf's convert_unit() scales it: divided by 1000 while it is
 * above (not at) 1000, at most to G; a space when unscaled ("1000  of event",
 * "1000K of event" for 1000001).
 */
void report_print_unit(struct outbuf *o, uint64_t n);
/* "  " and @s left-aligned in @width, as "  %-*s" */
void report_column(struct outbuf *o, const char *s, size_t width);
/* The same cut to @width, as "  %-*.*s" */
void report_column_cut(struct outbuf *o, const char *s, size_t width);
/* A dotted rule of @width, after two spaces */
void report_rule(struct outbuf *o, size_t width);

#endif
