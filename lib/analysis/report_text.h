/* SPDX-License-Identifier: MIT */
/*
 * report's text as perf's --stdio prints it: the pieces of a section's head
 * and of its columns that the sample view (report_print.c) and the branch
 * view (report_branch.c) both print.  Into a dsi_wbuf, without a printf per
 * column.
 *
 * Who may use it: lib/analysis/report*.c and collapse.c.
 */
#ifndef DSTACK_ANALYSIS_REPORT_TEXT_H
#define DSTACK_ANALYSIS_REPORT_TEXT_H

#include <stddef.h>
#include <stdint.h>
#include "wbuf.h"

/*
 * A count as perf's convert_unit() scales it: divided by 1000 while it is
 * above (not at) 1000, at most to G; a space when unscaled ("1000  of event",
 * "1000K of event" for 1000001).
 */
void dsi_report_print_unit(struct dsi_wbuf *o, uint64_t n);
/* "  " and @s left-aligned in @width, as "  %-*s" */
void dsi_report_column(struct dsi_wbuf *o, const char *s, size_t width);
/* The same cut to @width, as "  %-*.*s" */
void dsi_report_column_cut(struct dsi_wbuf *o, const char *s, size_t width);
/* A dotted rule of @width, after two spaces */
void dsi_report_rule(struct dsi_wbuf *o, size_t width);

#endif
