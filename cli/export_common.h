/* SPDX-License-Identifier: MIT */
/*
 * What flamegraph, pprof and speedscope share: the command line (walk
 * filters and -o FILE), and the samples of a walk kept after the machine
 * is gone: every string copied once (interned), every function
 * (name, dso, kernel, inlined) numbered once, each sample's frames stored
 * callee first in one growing array (no allocation per sample once the
 * arrays have grown).
 */
#ifndef DSTACK_CLI_EXPORT_COMMON_H
#define DSTACK_CLI_EXPORT_COMMON_H

#include <stdbool.h>
#include <stdint.h>
#include "hashmap.h"
#include "outbuf.h"
#include "samples.h"

struct xfunc {
	uint32_t name, dso;         /* string ids */
	bool kernel, inlined;
};

struct xent {
	uint64_t ip;
	uint32_t func;
	uint32_t map;               /* xmap id + 1; 0: no file map (kernel, anonymous, none) */
};

/* A file mapping a frame's address was in, as recorded (MMAP/MMAP2). */
struct xmap {
	uint64_t start, end, pgoff;
	uint32_t file;              /* string id */
	uint32_t build_id;          /* string id of the hex build-id; "" when unknown */
};

struct xsample {
	uint64_t time, period;      /* time: DS_NO_TIME when absent */
	int32_t pid, tid;
	uint32_t comm;              /* string id */
	uint32_t evsel_name;        /* string id */
	size_t off, len;            /* frames: ents[off .. off+len), callee first */
};

struct xdata {
	const char *input;          /* the recording's path, as given */
	char **strs;
	size_t nr_strs, cap_strs;
	struct ds_hashmap str_ids;  /* string hash (probed) -> id */
	struct xfunc *funcs;
	size_t nr_funcs, cap_funcs;
	struct ds_hashmap func_ids;
	struct xmap *maps;
	size_t nr_maps, cap_maps;
	struct ds_hashmap map_ids;
	struct xent *ents;
	size_t nr_ents, cap_ents;
	struct xsample *samples;
	size_t nr_samples, cap_samples;
};

/*
 * Parse the command line, walk the recording into @x, open the output.
 * Returns EXIT_OK with *@out ready (caller flushes and calls
 * export_finish), or an exit status after printing why.
 */
int export_collect(const char *cmd, const char *default_out, int argc, char **argv,
		   struct xdata *x, int *fd, const char **output);
/* Close the output (unless stdout); EXIT_OK or EXIT_INPUT with a message. */
int export_finish(const char *cmd, int fd, const char *output, int write_err);
void xdata_free(struct xdata *x);

/* Id of @s (copied once); UINT32_MAX when out of memory. */
uint32_t xdata_str(struct xdata *x, const char *s);
/* The recording's base name ("stdin" for -i -), to title a profile. */
const char *xdata_title(const struct xdata *x);
/* @s as a JSON string with its quotes. */
void json_string(struct outbuf *o, const char *s);
/* @s escaped for XML text or attributes. */
void xml_text(struct outbuf *o, const char *s);

#endif
