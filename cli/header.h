/* SPDX-License-Identifier: MIT */
/* The recording's header as perf report --header-only / perf script --header print it. */
#ifndef DSTACK_CLI_HEADER_H
#define DSTACK_CLI_HEADER_H

#include <stdint.h>
#include <stdio.h>
#include "dstack/reader.h"

/*
 * The whole header block, "# ========" to "# ========\n#"; @path names the
 * input ("-": stdin).  @f is flushed: 0, or the errno of a failed write.
 */
int header_print(FILE *f, const char *path, const struct ds_reader *rd);
/* Its parts: the file's layout (from "# ========" to "feat offset"; flushed, as header_print), the features. */
int header_print_layout(FILE *f, const char *path, const struct ds_reader *rd);
/* @f flushed after header text (@err: the writer's -errno): 0, or the errno of the first failed write. */
int header_flushed(FILE *f, int err);
void header_print_features(FILE *f, const struct ds_reader *rd);

/*
 * The event groups of @rd's GROUP_DESC feature, each to @fn: its name as
 * recorded ("{anon_group}" for an unnamed one), its leader's event index
 * and its number of members (consecutive events).  Nothing without one; a
 * truncated feature ends at its last whole group.
 */
typedef void header_group_fn(void *ctx, const char *name, uint32_t leader, uint32_t members);
void header_for_each_group(const struct ds_reader *rd, header_group_fn *fn, void *ctx);

/*
 * --header-only: @input's header, read without its samples (a pipe up to
 * its first event, so that its features are in); the exit status.
 */
int header_print_only(const char *cmd, const char *input);

#endif
