// SPDX-License-Identifier: MIT
/*
 * dstack speedscope: the samples in speedscope's file format, as the
 * library's export writes them (ds_speedscope, dstack/export.h), in
 * memory bounded by $DSTACK_MEMORY_BUDGET (past it the samples spill to
 * $TMPDIR).  This file parses the options and hands the samples over.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "cli.h"
#include "dstack/export.h"
#include "util/outbuf.h"
#include "util/spill.h"
#include "export_common.h"

/* The export's spill file failure said as the output's (the command then exits EXIT_OUTPUT). */
static int said(struct ds_speedscope *sp, int err)
{
	if (ds_speedscope__error(sp))
		output_failed_as(ds_speedscope__error(sp));
	return err;
}

static int on_sample(void *ctx, const struct ds_profile_sample *s)
{
	int err = ds_speedscope__add(ctx, s);

	return err ? said(ctx, err) : 0;
}

/* The file written to @fd: 0 or an errno (said, or the buffer's: said by it; ENOMEM unsaid). */
static int write_file(struct ds_speedscope *sp, int fd)
{
	struct outbuf *o = outbuf_new(fd);
	int err;

	if (!o)
		return ENOMEM;
	err = -said(sp, ds_speedscope__write(sp, cli_write_outbuf, o));
	outbuf_flush(o);
	if (!err)
		err = o->error;
	outbuf_delete(o);
	return err;
}

int cmd_speedscope(int argc, char **argv)
{
	struct export_cmd c;
	struct ds_speedscope *sp = NULL;
	int ret = export_open("speedscope", "profile.speedscope.json", argc, argv, &c), err = 0;

	if (ret == -1 || (ret == EXIT_USAGE && c.fd < 0))
		return ret == -1 ? EXIT_OK : ret;
	struct ds_speedscope_opts o = {
		.sz = sizeof(o), .title = export_title(&c), .memory = cli_budget(), .tmpdir = dsi_spill_dir(),
	};

	if (ret == EXIT_OK && !(sp = ds_speedscope__new(&o)))
		err = ENOMEM;
	if (sp) {
		ret = export_walk(&c, on_sample, sp);
		err = write_file(sp, c.fd);
	}
	int fin = export_finish("speedscope", c.fd, c.output, err);
	bool spill_failed = sp && ds_speedscope__error(sp);

	ds_speedscope__delete(sp);
	return ret != EXIT_OK && !spill_failed ? ret : fin;
}
