/* SPDX-License-Identifier: MIT */
/*
 * dstack writer: perf.data output, in file mode (header, attrs with ids,
 * data, feature sections; the header is finalised by ds_writer__close) or
 * pipe mode (HEADER_ATTR / HEADER_FEATURE records before the data).
 * Used by `dstack inject` and `dstack record`.
 *
 * Lifecycle:
 *   w = ds_writer__open("out.data", false);   ("-" writes pipe mode to stdout)
 *   ds_writer__add_attr(w, &attr, size, ids, nr, "cpu-clock");  ... before the first record
 *   ds_writer__write(w, rec, rec->size);  ...           data records, as they come
 *   ds_writer__feature_string(w, DS_FEAT_HOSTNAME, "box"); ...  any time before close
 *   ds_writer__close(w);                                  writes features, finalises the header
 *
 * File mode: header (104 bytes), each attr's ids, the attrs section, the
 * data section, then at close the feature section table and the payloads;
 * the header is written with a zero data size at the first record (a
 * writer that dies leaves a file readers take "to the end") and rewritten
 * with the real sizes at close.  A path that is a FIFO or socket is
 * written in pipe mode even when @pipe is false (it cannot be rewound).
 *
 * Pipe mode: 16-byte header, then at the first record (or close) one
 * HEADER_ATTR record per attr (attr + ids), one HEADER_FEATURE record per
 * feature set so far (EVENT_DESC carries the names), one HEADER_BUILD_ID
 * record per build-id; features set and build-ids added later go into the
 * stream as they come (build-ids) or at close (features).
 *
 * Attrs are written at @attr_size bytes (the smallest size that holds the
 * fields in use lets older perf read the file: perf 6.1 refuses attrs larger
 * than the 128 bytes it knows; ds_attr__min_size() computes it).  A file
 * has one attr size: every attr is written at the largest @attr_size given,
 * zero extended, with attr.size set to it.  The data section is written
 * through a buffer; nothing is kept in memory beyond it, the attrs, the
 * features and the build-ids.
 *
 * Records are written as given (perf's on-disk layout); the writer checks
 * only that @len equals the record's header.size and is at least 8.
 *
 * Errors: 0 or a negative errno; ds_errmsg() (dstack/log.h) says why, with
 * the path.  A writer that failed (disk full) stays failed: every later
 * call returns its first error and message again; close still finalises
 * what it can so the file reads up to the last full record.
 */
#ifndef DSTACK_WRITER_H
#define DSTACK_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "dstack/abi.h"

struct ds_writer;

/*
 * Create (truncate) @path, mode 0600 like perf; "-" is stdout, always in
 * pipe mode.  NULL with errno set (ds_errmsg() says why).
 */
struct ds_writer *ds_writer__open(const char *path, bool pipe);
/* Finalise and free (also after errors). 0 or the first error of the writer's life. */
int ds_writer__close(struct ds_writer *w);
/*
 * 0 while the writer is well, else its first error (it stays failed),
 * ds_errmsg() saying it again: whether a write failed before close.
 */
int ds_writer__status(const struct ds_writer *w);

/*
 * Add an event: @attr_size bytes of @attr (64..sizeof(struct ds_attr), a
 * multiple of 8; bytes beyond it are taken as zero), its sample ids, and
 * its name (NULL: none; written in EVENT_DESC).  Copies everything.
 * Only before the first record: -EBUSY after it.
 */
int ds_writer__add_attr(struct ds_writer *w, const struct ds_attr *attr, uint32_t attr_size,
			const uint64_t *ids, size_t nr_ids, const char *name);
/* One record of @len bytes (= its header.size). */
int ds_writer__write(struct ds_writer *w, const void *record, size_t len);

/*
 * Header features.  ds_writer__feature sets a raw payload in perf's
 * on-disk layout (replacing an earlier one; for EVENT_DESC it replaces the
 * one the writer builds from the attrs; for BUILD_ID the add_build_id
 * entries follow it).  @feat is 1..DS_FEAT_BITS-1.
 */
int ds_writer__feature(struct ds_writer *w, int feat, const void *data, size_t len);
/* A perf string feature (HOSTNAME, OSRELEASE, VERSION, ARCH, CPUDESC, CPUID). */
int ds_writer__feature_string(struct ds_writer *w, int feat, const char *s);
int ds_writer__feature_nrcpus(struct ds_writer *w, uint32_t avail, uint32_t online);
/* CMDLINE from @argc words. */
int ds_writer__feature_cmdline(struct ds_writer *w, int argc, const char *const *argv);
/* TOTAL_MEM (kB) and SAMPLE_TIME (first/last sample time, ns). */
int ds_writer__feature_u64(struct ds_writer *w, int feat, uint64_t v);
int ds_writer__feature_sample_time(struct ds_writer *w, uint64_t first, uint64_t last);

/*
 * A BUILD_ID entry.  @pid is the machine: -1 for the host (perf's
 * HOST_KERNEL_ID; perf takes any other value for a guest machine's pid),
 * @misc its cpumode (DS_MISC_KERNEL for the kernel and its modules,
 * DS_MISC_USER otherwise); @bid_len 1..20.
 */
int ds_writer__add_build_id(struct ds_writer *w, int32_t pid, uint16_t misc,
			    const uint8_t *bid, size_t bid_len, const char *filename);

/* Bytes of records accepted so far (buffered ones included). */
uint64_t ds_writer__data_bytes(const struct ds_writer *w);

/*
 * The smallest perf_event_attr size (64, 72, 80, 96, 104, ..., 144) that
 * holds every non-zero byte of @attr: what older readers accept.
 */
uint32_t ds_attr__min_size(const struct ds_attr *attr);

#endif
