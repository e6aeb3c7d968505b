// SPDX-License-Identifier: MIT
/* report's text as perf's --stdio prints it (report_text.h). */
#include <string.h>
#include "analysis/report_text.h"

void dsi_report_print_unit(struct dsi_wbuf *o, uint64_t n)
{
	static const char units[] = " KMG";
	int u = 0;

	while (n > 1000 && u < 3) {
		n /= 1000;
		u++;
	}
	dsi_wbuf__printf(o, "%llu%c", (unsigned long long)n, units[u]);
}

static void padded(struct dsi_wbuf *o, const char *s, size_t n, size_t width)
{
	dsi_wbuf__puts(o, "  ");
	dsi_wbuf__write(o, s, n);
	for (; n < width; n++)
		dsi_wbuf__putc(o, ' ');
}

void dsi_report_column(struct dsi_wbuf *o, const char *s, size_t width)
{
	padded(o, s, strlen(s), width);
}

void dsi_report_column_cut(struct dsi_wbuf *o, const char *s, size_t width)
{
	size_t n = strlen(s);

	padded(o, s, n < width ? n : width, width);
}

void dsi_report_rule(struct dsi_wbuf *o, size_t width)
{
	dsi_wbuf__puts(o, "  ");
	for (size_t k = 0; k < width; k++)
		dsi_wbuf__putc(o, '.');
}
