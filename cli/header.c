// SPDX-License-Identifier: MIT
/*
 * The recording's header as perf prints it, to a FILE (the library's
 * ds_reader__print_header does it), and --header-only.
 */
#include <errno.h>
#include <stdio.h>
#include "dstack/export.h"
#include "dstack/features.h"
#include "dstack/log.h"
#include "cli.h"
#include "header.h"
#include "util/outbuf.h"

/*
 * @f flushed after the header's text was written to it (@err: the
 * library's -errno): 0, or the errno of the first write that failed.  A
 * buffered stream fails at its flush, whose errno says why (ENOSPC).
 */
int header_flushed(FILE *f, int err)
{
	errno = 0;
	if (fflush(f) && !err)
		err = errno ? -errno : -EIO;
	if (!err && ferror(f))
		err = -EIO;
	return -err;
}

int header_print_layout(FILE *f, const char *path, const struct ds_reader *rd)
{
	return header_flushed(f, ds_reader__print_header(rd, path, DS_HEADER_LAYOUT, ds_write_stdio, f));
}

void header_print_features(FILE *f, const struct ds_reader *rd)
{
	ds_reader__print_header(rd, "-", DS_HEADER_FEATURES, ds_write_stdio, f);
}

int header_print(FILE *f, const char *path, const struct ds_reader *rd)
{
	return header_flushed(f, ds_reader__print_header(rd, path, DS_HEADER_LAYOUT | DS_HEADER_FEATURES,
							 ds_write_stdio, f));
}

void header_for_each_group(const struct ds_reader *rd, header_group_fn *fn, void *ctx)
{
	ds_reader__for_each_group(rd, fn, ctx);
}

int header_print_only(const char *cmd, const char *input)
{
	struct ds_reader *rd = ds_reader__open(input);
	struct ds_record rec;
	int ret = 0;

	if (!rd) {
		fprintf(stderr, "dstack %s: %s\n", cmd, ds_errmsg());
		return EXIT_INPUT;
	}
	/* a pipe's features are records ahead of its first kernel event */
	while (ds_reader__info(rd)->pipe && (ret = ds_reader__next(rd, &rec)) > 0 && rec.hdr->type >= 64)
		;
	if (ret < 0)
		fprintf(stderr, "dstack %s: %s\n", cmd, ds_errmsg());
	int err = header_print(stdout, input, rd);

	ds_reader__close(rd);
	if (err) {
		output_failed("stdout", err);
		return EXIT_INPUT;
	}
	return ret < 0 ? EXIT_INPUT : EXIT_OK;
}
