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

struct speedscope_cmd {
	struct ds_speedscope *sp;
	bool failed;               /* the export failed (a spill file), said as the output's */
};

/* The export's failure said as the output's (the command then exits EXIT_OUTPUT); ENOMEM unsaid. */
static int said(struct speedscope_cmd *sc, int err)
{
	if (err && err != -ENOMEM) {
		export_failed(err);
		sc->failed = true;
	}
	return err;
}

static int on_sample(void *ctx, const struct ds_profile_sample *s)
{
	struct speedscope_cmd *sc = ctx;

	return said(sc, ds_speedscope__add(sc->sp, s));
}

/* The file written to @fd: 0 or an errno (said, or the buffer's: said by it; ENOMEM unsaid). */
static int write_file(struct speedscope_cmd *sc, int fd)
{
	struct outbuf *o = outbuf_new(fd);
	int err;

	if (!o)
		return ENOMEM;
	err = -ds_speedscope__write(sc->sp, cli_write_outbuf, o);
	if (err && !o->error)
		said(sc, -err);
	outbuf_flush(o);
	if (!err)
		err = o->error;
	outbuf_delete(o);
	return err;
}

int cmd_speedscope(int argc, char **argv)
{
	struct export_cmd c;
	struct speedscope_cmd sc = { .sp = NULL };
	int ret = export_open("speedscope", "profile.speedscope.json", argc, argv, &c), err = 0;

	if (ret == -1 || (ret == EXIT_USAGE && c.fd < 0))
		return ret == -1 ? EXIT_OK : ret;
	struct ds_speedscope_opts o = {
		.sz = sizeof(o), .title = export_title(&c), .memory = cli_budget(), .tmpdir = dsi_spill_dir(),
	};

	if (ret == EXIT_OK && !(sc.sp = ds_speedscope__new(&o)))
		err = ENOMEM;
	if (sc.sp) {
		ret = export_walk(&c, on_sample, &sc);
		err = write_file(&sc, c.fd);
	}
	int fin = export_finish("speedscope", c.fd, c.output, err);

	ds_speedscope__delete(sc.sp);
	return ret != EXIT_OK && !sc.failed ? ret : fin;
}
