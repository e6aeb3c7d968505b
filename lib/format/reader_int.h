/* SPDX-License-Identifier: MIT */
/* Reader internals shared between reader.c and event.c. */
#ifndef DSTACK_READER_INT_H
#define DSTACK_READER_INT_H

#include <zstd.h>
#include "dstack/reader.h"
#include "util/hashmap.h"
#include "format/source.h"

#define MAX_EVSELS 4096

/*
 * One file of a perf.data directory (perf record --threads, --kcore):
 * "data" (the header, attrs and features, with a data section) and the
 * data.* files beside it (records only, from their byte 0).  Each has its
 * own source; offsets the reader hands out are global: a part's byte 0
 * is at its base, the parts after the main file's data section one after
 * another (ds_reader__locate turns one back into file and offset).
 */
struct ds_reader_part {
	char *path;
	struct ds_source src;
	bool opened;
	uint64_t pos, end;       /* the next record and the data's end, in the file */
	uint64_t base;           /* global offset of the file's byte 0 */
	/* its decompression while another part is read (each file is its
	 * recording thread's own zstd stream): the reader's fields, kept */
	ZSTD_DStream *zstd;
	uint8_t *dbuf;
	size_t dcap, dlen, dhead;
	uint64_t doff;
};

struct ds_reader {
	char *path;
	struct ds_source *src;   /* the current part's */
	struct ds_reader_part *parts;   /* [0]: the main file; more only for a directory */
	size_t nr_parts, cur;
	uint64_t turn_bytes;     /* read from the current part since its turn began */
	struct ds_header_info info;
	struct ds_evsel **evsels;
	size_t nr_evsels;
	struct dsi_hashmap ids;   /* sample id -> evsel index */
	int id_pos, is_pos;      /* u64 slots: from sample start / from record end */
	bool named;
	uint64_t pos, end;       /* next record, end of the data section: the current part's, in its file */
	uint64_t declared_end;   /* where the header says the data ends, if past the file */
	uint64_t bytes;
	uint64_t nr_compressed;
	uint32_t compressed_type;      /* theirs (COMPRESSED or COMPRESSED2), 0 before any */
	/* decompressed records waiting to be handed out */
	ZSTD_DStream *zstd;
	uint8_t *dbuf;
	size_t dcap, dlen, dhead;
	uint64_t doff;
	uint8_t *scratch;        /* aligned copy of a misaligned record */
	size_t scratch_cap;
	char err[512];
	int errcode;
	/* called before the reader changes what others may be reading (evsels,
	 * names, header info): the session's reading thread waits there until
	 * the consumer has caught up */
	void (*quiesce)(void *ctx);
	void *quiesce_ctx;
	uint8_t *feat_raw[DS_FEAT_BITS];  /* each feature section as recorded, for printing it */
	uint64_t feat_len[DS_FEAT_BITS];
	uint64_t feat_off[DS_FEAT_BITS];  /* its file offset (a pipe's: its record's payload), for errors */
};

__attribute__((format(printf, 4, 5)))
int dsi_reader__fail(struct ds_reader *r, uint64_t off, int code, const char *fmt, ...);
/* The reader's first error, "FILE: offset 0xN: what" ("" while none). */
const char *dsi_reader__errmsg(const struct ds_reader *r);
void dsi_reader__parse_feature(struct ds_reader *r, int feat, const uint8_t *p, uint64_t len, uint64_t off);
int dsi_reader__add_build_id(struct ds_reader *r, const uint8_t *p, size_t len);

/* The pin limit (dsi_source__pin) of every file of the input. */
void dsi_reader__set_pin_limit(struct ds_reader *r, size_t limit);

/* Bytes of the input's windows pinned now, all its files together. */
static inline size_t *dsi_reader__pinned_bytes(struct ds_reader *r)
{
	return r->src->pinned;
}

/* Is the file being read shorter now than at open (dsi_source__shrank)? */
static inline bool dsi_reader__shrank(const struct ds_reader *r, uint64_t *was, uint64_t *now)
{
	return r->src && dsi_source__shrank(r->src, was, now);
}

/* Pin the window the last record with in_window lies in (dsi_source__pin). */
static inline struct ds_source_window *dsi_reader__pin(struct ds_reader *r)
{
	return dsi_source__pin(r->src);
}

#endif
