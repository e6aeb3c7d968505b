// SPDX-License-Identifier: MIT
/*
 * dstack flamegraph: a self-contained interactive SVG flame graph, as the
 * library's flame graph export draws it (ds_flamegraph, dstack/export.h).
 * Widths count samples, or with --off-cpu/--wall the ns.  This file parses
 * the options and hands the samples over.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "cli.h"
#include "dstack/export.h"
#include "util/outbuf.h"
#include "export_common.h"

static int on_sample(void *ctx, const struct ds_profile_sample *s)
{
	return ds_flamegraph__add(ctx, s);
}

/* The graph written to @fd: 0 or an errno (reported by the buffer unless ENOMEM). */
static int write_graph(struct ds_flamegraph *fg, int fd)
{
	struct outbuf *o = outbuf_new(fd);
	int err;

	if (!o)
		return ENOMEM;
	err = -ds_flamegraph__write(fg, cli_write_outbuf, o);
	outbuf_flush(o);
	if (!err)
		err = o->error;
	outbuf_delete(o);
	return err;
}

int cmd_flamegraph(int argc, char **argv)
{
	struct export_cmd c;
	struct ds_flamegraph *fg = NULL;
	int ret = export_open("flamegraph", "flamegraph.svg", argc, argv, &c), err = 0;
	char title[300];

	if (ret == -1 || (ret == EXIT_USAGE && c.fd < 0))
		return ret == -1 ? EXIT_OK : ret;
	snprintf(title, sizeof(title), "Flame Graph: %s", export_title(&c));
	struct ds_flamegraph_opts o = {
		.sz = sizeof(o), .title = title,
		.period = c.wo.time_mode != WALK_CPU,             /* --off-cpu/--wall: ns */
		.unit = c.wo.time_mode != WALK_CPU ? "ns" : "samples",
	};

	if (ret == EXIT_OK && !(fg = ds_flamegraph__new(&o)))
		err = ENOMEM;
	if (fg)
		ret = export_walk(&c, on_sample, fg);
	if (fg)
		err = write_graph(fg, c.fd);
	int fin = export_finish("flamegraph", c.fd, c.output, err);

	ds_flamegraph__delete(fg);
	return ret != EXIT_OK ? ret : fin;
}
