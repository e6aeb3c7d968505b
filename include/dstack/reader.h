/* SPDX-License-Identifier: MIT */
/*
 * dstack reader: perf.data bytes -> records.
 *
 * Reads a perf.data file (through reused pread windows, never held whole) or
 * a pipe-mode stream ("-" or a FIFO), and hands out its records one at a
 * time in file order, with PERF_RECORD_COMPRESSED/COMPRESSED2 payloads
 * decompressed (zstd, streaming) and returned as ordinary records.
 *
 * The attrs (events) and header features are parsed at open time for files
 * and as the HEADER_ATTR/HEADER_FEATURE/ID_INDEX records go by for pipes.
 *
 * Ownership: the reader owns everything it returns.  A record's bytes are
 * valid until the next ds_reader__next() call; evsels and header info live
 * until ds_reader__close().  Records are always 8-byte aligned.
 *
 * Errors (dstack/log.h): ds_reader__open() returns NULL and sets errno;
 * ds_reader__next() returns 1 (a record), 0 (end of data) or a negative
 * errno; ds_errmsg() then says where and what, as "FILE: offset 0xN: what
 * was wrong".  After an error the reader returns the same error (and
 * message) again; records already returned stay valid to the caller's
 * copies.
 */
#ifndef DSTACK_READER_H
#define DSTACK_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "dstack/abi.h"

struct ds_reader;

struct ds_evsel {
	struct ds_attr attr;
	char *name;             /* from EVENT_DESC, else derived from type/config */
	uint64_t *ids;
	size_t nr_ids;
	int idx;
	/* layout facts derived from attr, for fast parsing */
	uint16_t sample_id_size; /* bytes of the sample_id_all trailer */
	uint8_t nr_regs_user, nr_regs_intr;
};

/* Size of the sample_id_all trailer for @evsel (0 if !sample_id_all): its sample_id_size. */
uint16_t ds_evsel__id_trailer_size(const struct ds_evsel *evsel);

struct ds_build_id_entry {
	int pid;
	uint16_t misc;
	uint8_t size;
	uint8_t data[20];
	char *filename;
};

/*
 * The recording's conversion of the CPU's time stamp counter to perf's
 * clock (PERF_RECORD_TIME_CONV, written by perf record where the kernel
 * gives it: cap_user_time_zero).  A jitdump whose timestamps are the
 * TSC's (JITDUMP_FLAGS_ARCH_TIMESTAMP) is placed on the samples' clock
 * with it.  time_mult 0: the recording has none (yet).
 */
struct ds_time_conv {
	uint64_t time_shift, time_mult, time_zero;
	uint64_t time_cycles, time_mask;   /* cap_user_time_short: a counter narrower than 64 bits */
	bool cap_user_time_zero, cap_user_time_short;
};

/* perf's time of TSC value @cyc (perf's tsc_to_perf_time); DS_NO_TIME for no conversion (time_mult 0, a shift past 63). */
uint64_t ds_time_conv__perf_time(const struct ds_time_conv *tc, uint64_t cyc);

struct ds_header_info {
	bool pipe;
	uint64_t data_offset, data_size;   /* the data section of the file (a directory's "data") */
	uint64_t parts_size;               /* a directory's data.N files, after it; 0 for a file */
	bool dir;                          /* a perf.data directory (perf record --threads, --kcore) */
	char *hostname, *osrelease, *version, *arch, *cpudesc, *cpuid, *cmdline;
	uint32_t nr_cpus_avail, nr_cpus_online;
	uint64_t total_mem;
	uint64_t first_sample_time, last_sample_time;
	uint32_t comp_type, comp_level, comp_ratio, comp_mmap_len;
	uint64_t features[DS_FEAT_BITS / 64]; /* which features were present */
	struct ds_build_id_entry *build_ids;
	size_t nr_build_ids;
	/* tracepoint formats as recorded (see dstack/tracepoint.h); NULL if none */
	void *tracing_data;
	uint64_t tracing_data_size;
	/* the data size the header gives (data_size is what is read: 0 here, a
	 * recording not finished, is read to the end of the file) */
	uint64_t header_data_size;
	/* the last TIME_CONV record read so far (perf keeps the last too); zeroes: none */
	struct ds_time_conv time_conv;
};

/* Whether the recording has header feature @feat (DS_FEAT_*): a file's
 * feature sections, a pipe's HEADER_FEATURE records read so far. */
bool ds_header_info__has_feature(const struct ds_header_info *hi, int feat);

struct ds_record {
	const struct ds_event_header *hdr; /* hdr->size bytes */
	uint64_t offset;        /* file offset (ds_reader__locate); for decompressed records, that of the COMPRESSED record */
	bool decompressed;
	bool in_window;         /* hdr lies in the source's current window (the session pins it instead of copying) */
};

/*
 * @path: a perf.data file, "-" (standard input, pipe mode), or a perf.data
 * directory (perf record --threads, --kcore): its "data" file holds the
 * header and the first records, its data.N files more records, read in
 * turns as perf reads them.  NULL on failure (errno; ds_errmsg() says why).
 */
struct ds_reader *ds_reader__open(const char *path);
void ds_reader__close(struct ds_reader *r);

int ds_reader__next(struct ds_reader *r, struct ds_record *rec);
const char *ds_reader__path(const struct ds_reader *r);
/*
 * The file that holds a record's offset (ds_record.offset), its offset
 * made the one in that file: the input's path but for a directory, whose
 * files' records have offsets past its data file's data section.
 */
const char *ds_reader__locate(const struct ds_reader *r, uint64_t *off);

const struct ds_header_info *ds_reader__info(const struct ds_reader *r);
/*
 * The bytes of header feature @feat (DS_FEAT_*) as recorded, for printing
 * it; NULL if the file has none (yet: a pipe's come as records).  Valid
 * until ds_reader__close() or the next such feature record.
 */
const uint8_t *ds_reader__feature(const struct ds_reader *r, int feat, uint64_t *len);
size_t ds_reader__nr_evsels(const struct ds_reader *r);
struct ds_evsel *ds_reader__evsel(const struct ds_reader *r, size_t idx);

/*
 * The evsel a record belongs to: by its sample id when the file has several
 * events, the only one otherwise.  NULL if the id is unknown.
 */
struct ds_evsel *ds_reader__evsel_of(const struct ds_reader *r, const struct ds_event_header *hdr);

/* COMPRESSED/COMPRESSED2 records unpacked so far. */
uint64_t ds_reader__compressed_records(const struct ds_reader *r);
/* Their record type (DS_REC_COMPRESSED or DS_REC_COMPRESSED2), 0 while none was read. */
uint32_t ds_reader__compressed_type(const struct ds_reader *r);

/* Bytes of data consumed so far (for progress and statistics). */
uint64_t ds_reader__bytes_read(const struct ds_reader *r);

#endif
