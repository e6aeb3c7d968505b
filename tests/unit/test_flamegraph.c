// SPDX-License-Identifier: MIT
/*
 * The flame graph export (ds_flamegraph, ds_flame_svg; dstack/export.h)
 * through the public API: the SVG holds the root and one frame per node
 * of the call tree, children drawn in name order at the right offsets,
 * weights by count or by period in the unit asked for, the title escaped;
 * the drawing API alone; a failing stream's errno returned.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dstack/export.h"
#include "stack_samples.h"
#include "mem_stream.h"
#include "check.h"

static char ev[] = "cycles";
static const int machine;

static size_t count(const char *s, const char *what)
{
	size_t n = 0;

	for (; (s = strstr(s, what)); s++)
		n++;
	return n;
}

static struct ds_flamegraph *graph(bool period, const char *unit)
{
	struct ds_flamegraph_opts o = { .sz = sizeof(o), .title = "T <&>", .period = period, .unit = unit };
	struct ds_flamegraph *fg = ds_flamegraph__new(&o);
	struct test_sample t;
	struct ds_cc_frame a[] = { ts_user(0x10, "zeta", "/bin/a"), ts_user(0x20, "main", "/bin/a") };
	struct ds_cc_frame b[] = { ts_user(0x11, "alpha", "/bin/a"), ts_user(0x20, "main", "/bin/a") };
	struct ds_cc_frame k[] = { ts_kernel(0xffff1, "schedule"), ts_user(0x20, "main", "/bin/a") };

	for (int i = 0; i < 3; i++)
		ds_flamegraph__add(fg, ts_make(&t, &machine, "a", 1, 100, 1, ev, 1, a, 2));
	ds_flamegraph__add(fg, ts_make(&t, &machine, "b", 2, 7, 1, ev, 2, b, 2));
	ds_flamegraph__add(fg, ts_make(&t, &machine, "b", 2, 1, 1, ev, 3, k, 2));
	return fg;
}

static void test_graph(void)
{
	struct ds_flamegraph *fg = graph(false, NULL);
	struct mem m = { 0 };
	const char *alpha, *zeta;

	CHECK(!ds_flamegraph__write(fg, mem_write, &m) && m.buf, "write");
	CHECK(ds_flamegraph__write(fg, mem_write, &m) == -EINVAL, "written once");
	ds_flamegraph__delete(fg);
	if (!m.buf)
		return;
	CHECK(!strncmp(m.buf, "<?xml", 5) && strstr(m.buf, "</svg>\n") == m.buf + m.len - 7, "an SVG document");
	CHECK(count(m.buf, "<g class=\"f\"") == 5, "root, main, alpha, zeta, schedule: %zu frames",
	      count(m.buf, "<g class=\"f\""));
	CHECK(strstr(m.buf, "T &lt;&amp;&gt;") != NULL, "the title escaped");
	CHECK(strstr(m.buf, "data-o=\"0\" data-s=\"5\" data-d=\"0\" data-k=\"0\" data-n=\"all\"") != NULL, "the root: 5 samples");
	alpha = strstr(m.buf, "data-n=\"alpha\"");
	zeta = strstr(m.buf, "data-n=\"zeta\"");
	CHECK(alpha && zeta && alpha < zeta, "children in name order");
	CHECK(strstr(m.buf, "data-o=\"0\" data-s=\"1\" data-d=\"2\" data-k=\"0\" data-n=\"alpha\"") &&
	      strstr(m.buf, "data-o=\"1\" data-s=\"1\" data-d=\"2\" data-k=\"1\" data-n=\"schedule\"") &&
	      strstr(m.buf, "data-o=\"2\" data-s=\"3\" data-d=\"2\" data-k=\"0\" data-n=\"zeta\""),
	      "offsets and widths");
	CHECK(strstr(m.buf, "<title>zeta (/bin/a) 3 samples, 60.00%</title>") != NULL, "a frame's title");
	free(m.buf);

	fg = graph(true, "ns");
	m = (struct mem){ 0 };
	CHECK(!ds_flamegraph__write(fg, mem_write, &m) && m.buf && strstr(m.buf, "<title>zeta (/bin/a) 300 ns, 97.40%</title>"),
	      "weighed by period, in ns");
	ds_flamegraph__delete(fg);
	free(m.buf);

	fg = graph(false, NULL);
	m = (struct mem){ .fail_errno = EPIPE };
	CHECK(ds_flamegraph__write(fg, mem_write, &m) == -EPIPE, "a failing stream's errno");
	ds_flamegraph__delete(fg);
}

static void test_drawing(void)
{
	struct mem m = { 0 };
	struct ds_flame_svg *svg = ds_flame_svg__begin(mem_write, &m, "d", 10, 1);

	CHECK(svg != NULL, "begin");
	ds_flame_svg__frame(svg, "all", "all 10", NULL, "rgb(1,2,3)", 0, 10, 0, false);
	ds_flame_svg__frame(svg, "f\"x", "f 4", "status <4>", "rgb(1,2,3)", 6, 4, 1, true);
	CHECK(!ds_flame_svg__end(svg) && m.buf, "end");
	CHECK(m.buf && strstr(m.buf, "data-n=\"f&quot;x\" data-t=\"status &lt;4&gt;\"") &&
	      strstr(m.buf, "fill=\"rgb(1,2,3)\"") && count(m.buf, "<g class=\"f\"") == 2, "frames drawn as given");
	CHECK(ds_flame_svg__visible(1, 100) && !ds_flame_svg__visible(1, 1e9), "visible: 0.1 pixel");
	free(m.buf);
}

int main(void)
{
	test_graph();
	test_drawing();
	printf("flamegraph: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
