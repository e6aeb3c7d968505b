/* SPDX-License-Identifier: MIT */
/*
 * What the export commands share (folded, flamegraph, pprof, speedscope,
 * diff): the command line (walk filters and -o FILE), the walk of the
 * recording with a callback of the command's (the library's export takes
 * the samples: dstack/export.h), the streams the exports write to, and
 * the end of the output.
 */
#ifndef DSTACK_CLI_EXPORT_COMMON_H
#define DSTACK_CLI_EXPORT_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "samples.h"

/* An export command: its options (walk filters, -o FILE), its output, its recording's span. */
struct export_cmd {
	const char *cmd;
	struct walk_opts wo;
	const char *output;             /* -o, else the default; "-": stdout */
	int fd;                         /* the output (-1: not open) */
	/* the recording's span from its header (HEADER_SAMPLE_TIME), 0 when absent */
	uint64_t hdr_first_time, hdr_last_time;
	/* wall clock (ns since the epoch) when the recording's file was last written (0: a pipe) */
	uint64_t file_mtime_ns;
};

/*
 * Parse the command line into @c and open its output.  EXIT_OK, -1 after
 * printing the help, or an exit status after printing why.
 */
int export_open(const char *cmd, const char *default_out, int argc, char **argv, struct export_cmd *c);
/* Walk the recording, each sample to @fn; the span and mtime noted.  The exit status (walk_run). */
int export_walk(struct export_cmd *c, ds_profile_sample_fn fn, void *ctx);
/* The recording's base name ("stdin" for -i -), to title a profile. */
const char *export_title(const struct export_cmd *c);
/*
 * Close the output (unless stdout) after a write that ended with
 * @write_err (0, an errno: ENOMEM says "out of memory", others are the
 * output's failure).  EXIT_OK, EXIT_INPUT or EXIT_OUTPUT, with a message.
 */
int export_finish(const char *cmd, int fd, const char *output, int write_err);

/*
 * An export call of the library failed with @err, not through the
 * caller's stream: why (ds_errmsg(), e.g. a spill file's failure naming
 * its directory) said as the output's failure, except ENOMEM (which
 * export_finish says).  Returns @err.
 */
int export_failed(int err);

/* "[libc.so.6]", "[virtio_blk]": frame @f of no symbol named by its DSO's short name, into @buf */
const char *frame_dso_label(const struct ds_cc_frame *f, char *buf, size_t n);

/* A ds_write_fn (dstack/export.h) into the outbuf @ctx, which reports its own failure (once). */
int cli_write_outbuf(void *ctx, const void *buf, size_t len);
/* A ds_write_fn straight to the fd *@ctx (the export buffers): -errno on failure, unsaid. */
int cli_write_fd(void *ctx, const void *buf, size_t len);

#endif
