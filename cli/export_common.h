/* SPDX-License-Identifier: MIT */
/*
 * What flamegraph, pprof and speedscope share: the command line (walk
 * filters and -o FILE), and the samples of a walk kept after the machine
 * is gone: every string copied once (interned), every function
 * (name, dso, kernel, inlined) numbered once, every distinct stack stored
 * once (callee first, in one growing array) and found again by the
 * machine's chain id, so that a repeated sample costs a lookup and no
 * frames.  With aggregate set, samples equal in stack, comm, pid, tid and
 * event are one sample with a count: memory grows with the distinct
 * samples, not with the recording (pprof and flamegraph need no more).
 */
#ifndef DSTACK_CLI_EXPORT_COMMON_H
#define DSTACK_CLI_EXPORT_COMMON_H

#include <stdbool.h>
#include <stdint.h>
#include "util/hashmap.h"
#include "util/idmap.h"
#include "util/outbuf.h"
#include "util/strset.h"
#include "samples.h"

struct xfunc {
	uint32_t name, dso;         /* string ids */
	bool kernel, inlined;
	uint32_t src;               /* string id of its source file (DWARF), 0 ("") unknown */
};

struct xent {
	uint64_t ip;
	uint32_t func;
	uint32_t map;               /* xmap id + 1; 0: no file map (kernel, anonymous, none) */
	uint32_t src, line;         /* the frame's source file (string id, 0: unknown) and line */
};

/* A file mapping a frame's address was in, as recorded (MMAP/MMAP2). */
struct xmap {
	uint64_t start, end, pgoff;
	uint32_t file;              /* string id */
	uint32_t build_id;          /* string id of the hex build-id; "" when unknown */
};

/* A distinct stack: its frames ents[off .. off+len), callee first. */
struct xstack {
	size_t off;
	size_t len;
};

struct xsample {
	uint64_t time, period;      /* time: DS_NO_TIME when absent (aggregated: the first one's) */
	uint64_t count;             /* samples this stands for: 1 unless aggregated */
	int32_t pid, tid;
	int32_t cpu;                /* -1: not recorded */
	uint32_t comm;              /* string id */
	uint32_t evsel_name;        /* string id */
	uint32_t stack;             /* index in stacks */
};

/* The string id of "" (source files unknown): export_collect makes it first. */
#define XSTR_EMPTY 0

struct xdata {
	const char *input;          /* the recording's path, as given */
	struct dsi_strset strs;     /* the strings, by id (xdata_str) */
	struct xfunc *funcs;
	size_t nr_funcs, cap_funcs;
	struct ds_idmap func_ids;   /* (name, dso, kernel, inlined) -> index in funcs */
	struct xmap *maps;
	size_t nr_maps, cap_maps;
	struct ds_idmap map_ids;    /* (start, end, pgoff, file) -> index in maps */
	struct xent *ents;
	size_t nr_ents, cap_ents;
	struct xstack *stacks;
	size_t nr_stacks, cap_stacks;
	struct ds_idmap stack_ids;      /* a stack's entries -> index in stacks */
	struct ds_hashmap chain_stacks; /* machine chain id -> index in stacks */
	bool aggregate;                 /* set before export_collect: equal samples merge */
	/*
	 * Set before export_collect to keep the samples elsewhere (speedscope
	 * spills them to a file): each one is handed to it instead of being
	 * stored in samples; a negative errno stops the walk.
	 */
	int (*sample_sink)(void *ctx, const struct xsample *xs);
	void *sink_ctx;
	/*
	 * Set (before export_collect, or by samples_full) by a sink that keeps
	 * the comm's text itself, or no comm: comms are not interned
	 * (xsample.comm is XSTR_EMPTY), the sink finds the sample's in
	 * sink_comm, valid during its call.  A task per sample then grows no
	 * string table.
	 */
	bool comm_to_sink;
	const char *sink_comm;
	struct ds_idmap sample_ids;     /* aggregating: (stack, comm, event, pid, tid, cpu) -> index in samples */
	/*
	 * Set before export_collect to bound the samples kept: when
	 * nr_samples reaches max_samples, samples_full(full_ctx) is called
	 * to take them (pprof moves them to a spilling tally, empties samples
	 * and sample_ids, and sets a sample_sink for the rest); a negative
	 * errno stops the walk.
	 */
	int (*samples_full)(void *ctx);
	void *full_ctx;
	size_t max_samples;
	struct xsample *samples;
	size_t nr_samples, cap_samples;
	uint64_t time_first, time_last; /* of the samples with a time; time_first > time_last: none */
	uint64_t first_period;          /* the first sample's period (0: none yet) */
	/* the recording's span from its header (HEADER_SAMPLE_TIME), 0 when absent */
	uint64_t hdr_first_time, hdr_last_time;
	/* wall clock (ns since the epoch) when the recording's file was last written: its end
	 * (perf's "captured on"); 0 for a pipe */
	uint64_t file_mtime_ns;
	int time_mode;                  /* walk_opts.time_mode: WALK_OFFCPU/WALK_WALL weigh by ns */
};

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
/* "[libc.so.6]", "[virtio_blk]": frame @f of no symbol named by its DSO's short name, into @buf */
const char *frame_dso_label(const struct ds_cc_frame *f, char *buf, size_t n);
/*
 * Is @event_name a clock ("cpu-clock", "task-clock", also with modifiers:
 * "cpu-clock:u", "cpu-clock/period=1000/"), whose periods are nanoseconds?
 */
bool is_clock(const char *event_name);
/* The recording's base name ("stdin" for -i -), to title a profile. */
const char *xdata_title(const struct xdata *x);
/* @s as a JSON string with its quotes. */
void json_string(struct outbuf *o, const char *s);
/* @s escaped for XML text or attributes. */
void xml_text(struct outbuf *o, const char *s);


/* A ds_write_fn (dstack/export.h) into the outbuf @ctx, which reports its own failure (once). */
int cli_write_outbuf(void *ctx, const void *buf, size_t len);

#endif
