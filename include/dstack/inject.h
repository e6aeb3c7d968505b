/* SPDX-License-Identifier: MIT */
/*
 * A recording rewritten as one that any perf (6.1 included) reads:
 *
 *  - deferred callchains merged: every stitched sample carries its merged
 *    chain (kernel ips, PERF_CONTEXT_USER, user ips) in place of
 *    PERF_CONTEXT_USER_DEFERRED + cookie, CALLCHAIN_DEFERRED records are
 *    dropped, and the attrs lose their defer_* bits.  Samples whose
 *    deferred record is not in the input (unresolved) keep their kernel
 *    chain only: the cookie is stripped, because readers that do not know
 *    PERF_CONTEXT_USER_DEFERRED throw away a chain holding it;
 *  - stack copies unwound: samples with a user stack copy (--call-graph
 *    dwarf, or fp,defer's --stack-snapshot) get kernel ips,
 *    PERF_CONTEXT_USER and the unwound frames as their chain, their copy
 *    and user registers dropped with REGS_USER/STACK_USER and
 *    exclude_callchain_user cleared in the attrs (threads and maps
 *    tracked, binaries found under opts.symfs);
 *  - with opts.jit, perf inject --jit's work: each code load of a jitdump
 *    the recording maps written as DIR/jitted-PID-INDEX.so (an ELF image,
 *    DIR the dump's directory, under opts.symfs for the files) and mapped
 *    by an MMAP2 at its time, a move mapping its load's file anew, the
 *    files' build-ids added; the dump's own mmap is not copied.
 *
 * The output is what an older perf knows: records in time order (the
 * session's), a FINISHED_ROUND every 65536 records while times only grow,
 * kernel record types up to AUX_OUTPUT_HW_ID, attrs at the smallest ABI
 * size that holds their fields, the header features dstack reads
 * (hostname, os release, version, arch, nrcpus, cpudesc, cpuid, total
 * memory, cmdline, event names, sample times, build-ids), never
 * compressed.  perf-tool records of the input (TIME_CONV, ID_INDEX,
 * THREAD_MAP, CPU_MAP, EVENT_UPDATE, ...) are not copied: the attrs carry
 * the ids and EVENT_DESC the names.
 *
 *	struct ds_session *s = ds_session__open(in);
 *	struct ds_writer *w = ds_writer__open(out, false);
 *	struct ds_inject *inj = ds_inject__new(ds_session__reader(s), w, &opts);
 *
 *	err = ds_session__run(s, &so, on_event, inj);   // on_event: ds_inject__event(inj, ev)
 *	err2 = ds_inject__finish(inj);                  // then ds_writer__close(w)
 *	ds_inject__delete(inj);
 *
 * Ownership: the reader and the writer are the caller's and outlive the
 * injector; the injector writes through the writer only (a failed write:
 * ds_writer__status()).  Errors: 0 or a negative errno, why in
 * ds_errmsg(); ds_inject__new returns NULL with errno set.  Warnings
 * (a jitdump read up to damage, a jitted ELF file not written) go to
 * opts.warn, else to the log.  One thread at a time.
 */
#ifndef DSTACK_INJECT_H
#define DSTACK_INJECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "dstack/event.h"
#include "dstack/reader.h"
#include "dstack/writer.h"

struct ds_inject;

struct ds_inject_opts {
	size_t sz;                 /* sizeof(struct ds_inject_opts) */
	const char *symfs;         /* binaries (unwinding) and jitdumps (--jit) under this root; NULL: / */
	const char *kallsyms;      /* kernel symbols for the machine that unwinds (NULL: /proc/kallsyms) */
	const char *buildid_dir;   /* perf's build-id cache (dstack/profile.h's buildid_dir); NULL: none */
	bool jit;                  /* perf inject --jit's work too */
	/* a warning, one line without its newline (NULL: ds_warn) */
	void (*warn)(void *ctx, const char *msg);
	void *warn_ctx;
};

struct ds_inject_stats {
	uint64_t samples, stitched, unresolved;  /* samples, those merged, those left with their kernel chain */
	uint64_t truncated;        /* chains too long for one record: their outermost frames lost */
	uint64_t unwound;          /* samples unwound from their stack copies */
	uint64_t deferred_dropped; /* CALLCHAIN_DEFERRED records */
	uint64_t other_dropped;    /* records of types older perf does not know */
	uint64_t unknown_evsel;    /* records of events that appeared after the data started */
	uint64_t jit_dumps, jit_codes, jit_elf_failed;
	bool unwinding;            /* some event has stack copies: they are unwound */
};

/* An injector from @r's recording to @w.  NULL with errno set (-ENOMEM). */
struct ds_inject *ds_inject__new(const struct ds_reader *r, struct ds_writer *w, const struct ds_inject_opts *opts);
void ds_inject__delete(struct ds_inject *inj);
/*
 * The session's next event (call it from the ds_session__run callback and
 * return what it returns): written, rewritten or dropped.  0 or a negative
 * errno (a failed write: the writer's).
 */
int ds_inject__event(struct ds_inject *inj, const struct ds_event *ev);
/*
 * After the run, even one that failed: the header's events and features
 * if no event came, the build-ids a pipe brought late.  0 or the writer's
 * error.  The caller closes the writer next.
 */
int ds_inject__finish(struct ds_inject *inj);
/* What was done; valid while @inj lives. */
const struct ds_inject_stats *ds_inject__stats(const struct ds_inject *inj);

#endif
