/* SPDX-License-Identifier: MIT */
/*
 * dstack writer: perf.data output, in file mode (header, attrs with ids,
 * data, feature sections; the header is finalised by ds_writer__close) or
 * pipe mode (HEADER_ATTR / HEADER_FEATURE records before the data).
 * Used by `dstack inject` and `dstack record`.
 *
 * Lifecycle:
 *   w = ds_writer__open("out.data", false, &err);   ("-" writes pipe mode to stdout)
 *   ds_writer__add_attr(w, &attr, size, ids, nr, "cpu-clock");  ... before the first record
 *   ds_writer__write(w, rec, rec->size);  ...           data records, as they come
 *   ds_writer__feature_string(w, DS_FEAT_HOSTNAME, "box"); ...  any time before close
 *   ds_writer__close(w);                                  writes features, finalises the header
 *
 * Attrs are written at @attr_size bytes (the smallest size that holds the
 * fields in use lets older perf read the file: perf 6.1 refuses attrs larger
 * than it knows).  The data section is written through a buffer; nothing is
 * kept in memory beyond it and the features.
 *
 * Errors: 0 or a negative errno; the message (with the path) is in
 * ds_writer__error().  A writer that failed (disk full) stays failed; close
 * still finalises what it can so the file reads up to the last full record.
 */
#ifndef DSTACK_WRITER_H
#define DSTACK_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "dstack/abi.h"

struct ds_writer;

struct ds_writer *ds_writer__open(const char *path, bool pipe, char **errmsg);
/* Finalise and free. 0 or the first error of the writer's life. */
int ds_writer__close(struct ds_writer *w);
const char *ds_writer__error(const struct ds_writer *w);

int ds_writer__add_attr(struct ds_writer *w, const struct ds_attr *attr, uint32_t attr_size,
			const uint64_t *ids, size_t nr_ids, const char *name);
int ds_writer__write(struct ds_writer *w, const void *record, size_t len);

/* Header features: raw payload in perf's on-disk layout, or helpers. */
int ds_writer__feature(struct ds_writer *w, int feat, const void *data, size_t len);
int ds_writer__feature_string(struct ds_writer *w, int feat, const char *s);
int ds_writer__feature_nrcpus(struct ds_writer *w, uint32_t avail, uint32_t online);
int ds_writer__add_build_id(struct ds_writer *w, int32_t pid, uint16_t misc,
			    const uint8_t *bid, size_t bid_len, const char *filename);

uint64_t ds_writer__data_bytes(const struct ds_writer *w);

#endif
