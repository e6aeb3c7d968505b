// SPDX-License-Identifier: MIT
/* The command line and output the export commands share (export_common.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "cli.h"
#include "dstack/event.h"
#include "dstack/log.h"
#include "dstack/symbols.h"
#include "export_common.h"
#include "util/outbuf.h"

/* The name shown for a frame: its symbol, else "[dso base name]", else "[unknown]". */
const char *frame_dso_label(const struct ds_cc_frame *f, char *buf, size_t n)
{
	char short_name[256];

	snprintf(buf, n, "[%s]", ds_dso__short_name(f->dso, f->kernel, short_name, sizeof(short_name)));
	return buf;
}

static void export_usage(FILE *f, const char *cmd, const char *default_out)
{
	fprintf(f, "usage: dstack %s [-o FILE] [options]\n"
			"  -o FILE              write to FILE (default %s; '-' for stdout)\n%s",
		cmd, default_out, walk_usage());
}

int export_open(const char *cmd, const char *default_out, int argc, char **argv, struct export_cmd *c)
{
	const char *v;

	memset(c, 0, sizeof(*c));
	c->cmd = cmd;
	c->output = default_out;
	c->fd = -1;
	walk_opts_init(&c->wo);
	for (int i = 1; i < argc; i++) {
		int r = walk_opt(&c->wo, cmd, argc, argv, &i);

		if (r < 0)
			return EXIT_USAGE;
		if (r)
			continue;
		if ((v = opt_value("-o", argc, argv, &i)) || (v = opt_value("--output", argc, argv, &i))) {
			c->output = v;
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			export_usage(stdout, cmd, default_out);
			return -1;
		} else {
			usage_error(cmd, "unknown option '%s'", argv[i]);
			export_usage(stderr, cmd, default_out);
			return EXIT_USAGE;
		}
	}
	if (!strcmp(c->output, "-"))
		c->fd = STDOUT_FILENO;
	else if ((c->fd = open(c->output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0) {
		fprintf(stderr, "dstack %s: %s: %s\n", cmd, c->output, strerror(errno));
		return EXIT_USAGE;
	}
	if (c->fd != STDOUT_FILENO)
		output_file(c->output);   /* what the output's write errors name */
	c->wo.transient_comms = true;   /* the exports copy what they keep: no pointer is kept */
	return EXIT_OK;
}

int export_walk(struct export_cmd *c, ds_profile_sample_fn fn, void *ctx)
{
	const char *input = c->wo.common.input;
	struct walk w;
	struct stat st;
	int ret = walk_open(&w, c->cmd, &c->wo);

	if (ret == EXIT_OK) {
		const struct ds_header_info *hi = ds_reader__info(ds_profile__reader(w.profile));

		ret = walk_run(&w, fn, ctx);
		if (hi->last_sample_time > hi->first_sample_time) {
			c->hdr_first_time = hi->first_sample_time;
			c->hdr_last_time = hi->last_sample_time;
		}
		walk_finish(&w);
	}
	if (input && strcmp(input, "-") && !stat(input, &st) && S_ISREG(st.st_mode))
		c->file_mtime_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000ULL + (uint64_t)st.st_mtim.tv_nsec;
	return ret;
}

const char *export_title(const struct export_cmd *c)
{
	const char *in = c->wo.common.input ? c->wo.common.input : "perf.data", *slash = strrchr(in, '/');

	return !strcmp(in, "-") ? "stdin" : slash && slash[1] ? slash + 1 : in;
}

int export_finish(const char *cmd, int fd, const char *output, int write_err)
{
	const char *name = fd == STDOUT_FILENO ? "stdout" : output;
	int ret = EXIT_OK;

	if (write_err == ENOMEM) {
		fprintf(stderr, "dstack %s: out of memory\n", cmd);
		ret = EXIT_INPUT;
	} else if (write_err) {
		output_failed(name, write_err);
		ret = EXIT_OUTPUT;
	}
	/* a file system may report a failed write only at close */
	if (fd >= 0 && fd != STDOUT_FILENO && close(fd) && !write_err) {
		output_failed(name, errno);
		ret = EXIT_OUTPUT;
	}
	return ret;
}

int export_failed(int err)
{
	if (err && err != -ENOMEM)
		output_failed_as(ds_errmsg());
	return err;
}

int cli_write_outbuf(void *ctx, const void *buf, size_t len)
{
	struct outbuf *o = ctx;

	outbuf_write(o, buf, len);
	return o->error ? -o->error : 0;
}

int cli_write_fd(void *ctx, const void *buf, size_t len)
{
	int fd = *(const int *)ctx;
	const char *p = buf;

	while (len) {
		ssize_t r = write(fd, p, len);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		p += r;
		len -= (size_t)r;
	}
	return 0;
}
