// SPDX-License-Identifier: MIT
/*
 * dstack pprof: the samples as a gzip-compressed profile.proto, as the
 * library's export encodes it (ds_pprof, dstack/export.h), in memory
 * bounded by $DSTACK_MEMORY_BUDGET (past it the samples spill to $TMPDIR).
 * --per-event: one file per event, named FILE with ".EVENT" before its
 * extension.  This file parses the options, hands the samples over and
 * names the files.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include "dstack/export.h"
#include "util/outbuf.h"
#include "util/spill.h"
#include "export_common.h"

static int on_sample(void *ctx, const struct ds_profile_sample *s)
{
	/* a spill file's failure said as the output's (the command then exits EXIT_OUTPUT) */
	return export_failed(ds_pprof__add(ctx, s));
}

/* cli_write_fd's stream, its failure kept: the caller's to say (export_finish), not the export's. */
struct fd_sink {
	int fd, err;
};

static int write_sink(void *ctx, const void *buf, size_t len)
{
	struct fd_sink *k = ctx;

	return k->err = cli_write_fd(&k->fd, buf, len);
}

/* One profile (every event: -1) written to @fd: 0 or an errno (a spill file's failure said). */
static int write_profile(struct ds_pprof *pp, const struct export_cmd *c, int event, int fd)
{
	struct ds_pprof_write_opts wo = {
		.sz = sizeof(wo), .event = event,
		.first_time = c->hdr_first_time, .last_time = c->hdr_last_time, .end_wall_ns = c->file_mtime_ns,
	};

	struct fd_sink sink = { .fd = fd };
	int err = ds_pprof__write(pp, &wo, write_sink, &sink);

	if (err && !sink.err)
		export_failed(err);
	return -err;
}

/* @output with ".EVENT" before its extension (".pb.gz", else the last one). */
static void event_path(char *buf, size_t n, const char *output, const char *event)
{
	const char *slash = strrchr(output, '/'), *ext = strstr(slash ? slash : output, ".pb.gz");
	char ev[256];
	size_t i = 0;

	if (!ext)
		ext = strrchr(slash ? slash : output, '.');
	if (!ext)
		ext = output + strlen(output);
	/* an event name may hold '/' and ':' (a PMU's): not in a file name */
	for (; event[i] && i + 1 < sizeof(ev); i++)
		ev[i] = event[i] == '/' || event[i] == ':' ? '_' : event[i];
	ev[i] = 0;
	snprintf(buf, n, "%.*s.%s%s", (int)(ext - output), output, ev, ext);
}

static int write_per_event(struct ds_pprof *pp, const struct export_cmd *c)
{
	int ret = EXIT_OK;

	for (size_t e = 0; e < ds_pprof__nr_events(pp) && ret == EXIT_OK; e++) {
		const char *event = ds_pprof__event(pp, e);
		char path[4096];
		int fd;

		event_path(path, sizeof(path), c->output, event);
		if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0) {
			fprintf(stderr, "dstack pprof: %s: %s\n", path, strerror(errno));
			return EXIT_INPUT;
		}
		ret = export_finish("pprof", fd, path, write_profile(pp, c, (int)e, fd));
		if (ret == EXIT_OK)
			fprintf(stderr, "dstack pprof: %s: event %s\n", path, event);
	}
	return ret;
}

int cmd_pprof(int argc, char **argv)
{
	struct export_cmd c;
	struct ds_pprof *pp = NULL;
	bool per_event = false;
	int ret, err = 0, fin, n = 0;

	/* --per-event is ours; export_open takes the rest */
	for (int i = 0; i < argc; i++) {
		if (i && !strcmp(argv[i], "--per-event"))
			per_event = true;
		else
			argv[n++] = argv[i];
	}
	argc = n;
	ret = export_open("pprof", "profile.pb.gz", argc, argv, &c);
	if (ret == -1 || (ret == EXIT_USAGE && c.fd < 0))
		return ret == -1 ? EXIT_OK : ret;
	struct ds_pprof_opts o = {
		.sz = sizeof(o), .time_mode = c.wo.time_mode, .memory = cli_budget(), .tmpdir = dsi_spill_dir(),
	};

	if (!(pp = ds_pprof__new(&o))) {
		fprintf(stderr, "dstack pprof: out of memory\n");
		export_finish("pprof", c.fd, c.output, 0);
		return EXIT_INPUT;
	}
	ret = export_walk(&c, on_sample, pp);
	/* (0 after a failure, which the write then returns) */
	size_t nr_events = ds_pprof__nr_events(pp);

	if (!err && per_event && nr_events > 1 && c.fd != STDOUT_FILENO) {
		/* the file named stays empty: each event has its own */
		fin = export_finish("pprof", c.fd, c.output, 0);
		if (fin == EXIT_OK)
			unlink(c.output);
		if (fin == EXIT_OK)
			fin = write_per_event(pp, &c);
	} else {
		if (!err && per_event && nr_events > 1)
			fprintf(stderr, "dstack pprof: --per-event needs -o FILE, not stdout: one profile with every event\n");
		if (!err)
			err = write_profile(pp, &c, -1, c.fd);
		fin = export_finish("pprof", c.fd, c.output, err);
	}
	ds_pprof__delete(pp);
	return ret != EXIT_OK && fin == EXIT_OK ? ret : fin;
}
