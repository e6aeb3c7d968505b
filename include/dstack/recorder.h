/* SPDX-License-Identifier: MIT */
/*
 * dstack recorder: opens perf events (per CPU or per task), maps their ring
 * buffers and hands every kernel record, whole and in order per buffer, to a
 * sink callback.  It knows nothing of perf.data but the header it asks a
 * ds_writer to write (ds_recorder__write_header): `dstack record` feeds
 * the sink into that writer.
 *
 * Lifecycle:
 *   r = ds_recorder__new(&opts);              opens the events (command: forks
 *                                             the child, which waits before exec)
 *   ds_recorder__attr(r, i, ...)              the attrs and ids, for the file header
 *   ds_recorder__synthesize(r, sink, ctx)     COMM/MMAP2 of existing tasks, kernel MMAP
 *   ds_recorder__run(r, sink, ctx)            lets the command exec, polls and drains
 *                                             until it exits or ds_recorder__stop()
 *   ds_recorder__free(r)
 *
 * Deferred callchains (opts.defer): defer_callchain on every sampling event,
 * defer_output on exactly one dummy tracking event (system wide per CPU when
 * allowed, so records of tasks that exit in the kernel still arrive).  When
 * the kernel refuses the bits, ds_recorder__new falls back to classic
 * callchains and ds_recorder__fallback() says why.  At stop the sampling
 * events are disabled first, the tracking events stay open for up to
 * opts.defer_grace_ms so the records of pending cookies still arrive.
 *
 * Errors (dstack/log.h): NULL + errno from the constructor, ds_errmsg()
 * saying why; run returns 0 or a negative errno (the sink's own negative
 * return stops the run and is returned).
 */
#ifndef DSTACK_RECORDER_H
#define DSTACK_RECORDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "dstack/abi.h"
#include "dstack/machine.h"
#include "dstack/writer.h"

enum ds_target { DS_TARGET_CMD, DS_TARGET_ALL_CPUS, DS_TARGET_PID, DS_TARGET_TID };

struct ds_recorder_opts {
	const char *const *events;   /* names ("cycles", "cpu-clock", ...); NULL: default */
	size_t nr_events;
	uint64_t period;             /* -c; 0: use freq */
	uint64_t freq;               /* -F; 0 with period 0: 4000 Hz */
	bool callchain;              /* -g / --call-graph fp */
	bool defer;                  /* --call-graph fp,defer */
	/*
	 * A copy of the user stack (this many bytes, a multiple of 8) and the
	 * user registers with each sample: --call-graph dwarf (the kernel's
	 * chain then stops at the user boundary: exclude_callchain_user), or
	 * with fp,defer the fallback of samples whose deferred record never
	 * comes (--stack-snapshot).  0: none.
	 */
	uint32_t stack_user;
	bool dwarf;                  /* --call-graph dwarf: the user part is unwound from the copy */
	uint64_t regs_user;          /* perf register mask; 0 with stack_user: all of x86_64's */
	enum ds_target target;
	pid_t pid;                   /* -p / -t */
	bool no_inherit;             /* --no-inherit: the tasks the targets create are not followed */
	/*
	 * -C: only these CPUs ("0-3,6"), of the online ones.  A list that is
	 * none, or names no online CPU, fails ds_recorder__new (EINVAL).
	 */
	const char *cpu_list;
	char *const *argv;           /* the command (CMD, or the duration command of -a) */
	unsigned mmap_pages;         /* data pages per buffer (power of two); 0: 128 */
	unsigned defer_grace_ms;     /* 0: 100 */
	bool command_stdout_to_stderr; /* the output is our stdout (-o -): keep the command off it */
	/*
	 * --off-cpu: a sched:sched_switch sampling event too (every switch, with
	 * RAW data and the callchain: deferred where the kernel has them), and
	 * SWITCH records on the tracking event, so that a task's switch back in
	 * is in the file even when only the task is recorded.  The caller writes
	 * the tracing data (ds_tracefs__tracing_data) so that readers know the format.
	 */
	bool off_cpu;
};

struct ds_recorder_stats {
	uint64_t samples, lost_records, lost_events, deferred_records;
	uint64_t cookies_seen, cookies_resolved;  /* distinct (tid, cookie) */
	uint64_t foreign_deferred;   /* the system-wide sink's records of other tasks, not written */
	uint64_t bytes;
	int child_status;            /* wait status of the command, -1 if none */
	bool exec_failed;            /* the command could not be executed */
	int exec_errno;
};

/* One whole kernel record of @len bytes (its header.size), 8-byte aligned, valid during the call. */
typedef int (*ds_record_sink)(void *ctx, const void *record, size_t len);

struct ds_recorder;

struct ds_recorder *ds_recorder__new(const struct ds_recorder_opts *opts);
void ds_recorder__free(struct ds_recorder *r);

size_t ds_recorder__nr_attrs(const struct ds_recorder *r);
/* The attr, the smallest size that holds its fields, its ids and name. */
void ds_recorder__attr(const struct ds_recorder *r, size_t i, const struct ds_attr **attr,
		       uint32_t *attr_size, const uint64_t **ids, size_t *nr_ids, const char **name);
struct ds_writer;
/*
 * The recording's header as perf record writes it, into @w (before its
 * first record): the attrs, ids and names of the recorder's events, and
 * the features that describe the machine and the command: OSRELEASE,
 * ARCH, HOSTNAME, NRCPUS, CPUDESC (uname, sysconf, /proc/cpuinfo) and
 * CMDLINE ("dstack", then @argv's @argc words).  The features are written
 * even when an attr fails.  0 or the writer's first error (ds_errmsg()
 * says why; e.g. -E2BIG: a word too long for a header string; the
 * writer stays failed).
 */
int ds_recorder__write_header(const struct ds_recorder *r, struct ds_writer *w, int argc, const char *const *argv);

/*
 * NULL, or what the recording falls short of, one line each: deferred
 * callchains not used (the kernel lacks them), their system-wide receiver
 * not opened (records of tasks exiting in the kernel may be lost).
 */
const char *ds_recorder__fallback(const struct ds_recorder *r);
bool ds_recorder__deferred(const struct ds_recorder *r);

int ds_recorder__synthesize(struct ds_recorder *r, ds_record_sink sink, void *ctx);
int ds_recorder__run(struct ds_recorder *r, ds_record_sink sink, void *ctx);
/* Async-signal-safe: ends the run (grace period follows). */
void ds_recorder__stop(struct ds_recorder *r);
const struct ds_recorder_stats *ds_recorder__stats(const struct ds_recorder *r);

/*
 * The recorder's records written to a perf.data writer as perf record
 * writes them: pass ds_record_out__write as the sink of
 * ds_recorder__synthesize and ds_recorder__run, the ds_record_out as its
 * context.  Each MMAP2 that carries a build-id adds it to @w's BUILD_ID
 * feature once a file name (the host's machine, pid -1); an MMAP or MMAP2
 * of "[vdso]" below 4 GiB (an i386 task's) is noted.  The writer is the
 * caller's and outlives it.  ds_record_out__new: NULL with errno set.
 */
struct ds_record_out;

struct ds_record_out *ds_record_out__new(struct ds_writer *w);
void ds_record_out__delete(struct ds_record_out *o);
/* A ds_record_sink (@ctx: the ds_record_out): 0 or the writer's negative errno. */
int ds_record_out__write(void *ctx, const void *record, size_t len);
/* 0, or the first failed write's negative errno, ds_errmsg() saying the writer's failure again. */
int ds_record_out__status(const struct ds_record_out *o);
/* An i386 task's vDSO was mapped: its image is worth keeping too. */
bool ds_record_out__vdso32_mapped(const struct ds_record_out *o);
/*
 * The vDSO image @kind of this machine kept in @buildid_dir (perf's
 * build-id cache, ds_vdso__keep) and named in the header, as perf record
 * does for recordings unwound later.  0, or ds_vdso__keep's negative
 * errno (-ENOEXEC: this kernel runs no i386 program).
 */
int ds_record_out__keep_vdso(struct ds_record_out *o, const char *buildid_dir, enum ds_vdso_kind kind);

#endif
