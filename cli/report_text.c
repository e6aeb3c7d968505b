// SPDX-License-Identifier: MIT
/* report's text as perf's --stdio prints it (report_text.h). */
#include <string.h>
#include "report_text.h"

void report_print_unit(struct outbuf *o, uint64_t n)
{
	static const char units[] = " KMG";
	int u = 0;

	while (n > 1000 && u < 3) {
		n /= 1000;
		u++;
	}
	outbuf_printf(o, "%llu%c", (unsigned long long)n, units[u]);
}

static void padded(struct outbuf *o, const char *s, size_t n, size_t width)
{
	outbuf_puts(o, "  ");
	outbuf_write(o, s, n);
	for (; n < width; n++)
		outbuf_putc(o, ' ');
}

void report_column(struct outbuf *o, const char *s, size_t width)
{
	padded(o, s, strlen(s), width);
}

void report_column_cut(struct outbuf *o, const char *s, size_t width)
{
	size_t n = strlen(s);

	padded(o, s, n < width ? n : width, width);
}

void report_rule(struct outbuf *o, size_t width)
{
	outbuf_puts(o, "  ");
	for (size_t k = 0; k < width; k++)
		outbuf_putc(o, '.');
}
