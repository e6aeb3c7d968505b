/* SPDX-License-Identifier: MIT */
/*
 * dstack event model: parse a record's sample fields (PERF_RECORD_SAMPLE
 * body, or the sample_id_all trailer of any other kernel record) and the
 * fixed layouts of the records dstack understands; and struct ds_event,
 * a record with its parsed fields as the stages after the reader (session,
 * stitcher, machine) pass it on.
 *
 * Parsing is zero-copy: pointers in ds_sample point into the record, so a
 * ds_sample is valid as long as the record's bytes are.  Every length is
 * checked against the record size; a record that does not hold what its
 * evsel's sample_type says is rejected with a message in *why.
 */
#ifndef DSTACK_EVENT_H
#define DSTACK_EVENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "dstack/abi.h"
#include "dstack/reader.h"

#define DS_NO_TIME ((uint64_t)-1)

struct ds_sample {
	uint64_t id, ip, time, addr, stream_id, period;
	uint32_t pid, tid, cpu;
	uint16_t cpumode;            /* DS_MISC_* from header.misc */
	bool has_tid, has_cpu;
	uint64_t callchain_nr;
	const uint64_t *callchain;   /* NULL when the sample has none */
	uint32_t raw_size;
	const void *raw;
	uint64_t branch_nr;
	const void *branch;
	uint64_t regs_user_abi;
	const uint64_t *regs_user;
	uint64_t stack_user_size, stack_user_dyn;
	const void *stack_user;
	uint64_t weight, data_src, transaction, phys_addr, cgroup;
	uint64_t data_page_size, code_page_size;
	uint64_t regs_intr_abi;
	const uint64_t *regs_intr;
	uint64_t aux_size;
	const void *aux;
	const uint64_t *read;        /* PERF_SAMPLE_READ's words, NULL when none: ds_sample__read_value() */
	uint64_t read_nr;            /* counters in it: 1, or the group's */
};

/* What the stitcher (dstack/stitch.h) made of a sample's deferred user callchain. */
enum ds_stitch_state {
	DS_STITCH_NONE = 0,     /* not a deferred sample (no cookie) */
	DS_STITCH_BEFORE,       /* stitched with a record that came before it */
	DS_STITCH_AFTER,        /* stitched with a record that came after it */
	DS_STITCH_UNRESOLVED,   /* no record for its tid and cookie */
};

/*
 * A record as the session delivers it: its bytes, its evsel and its parsed
 * sample fields, with the stitcher's verdict.  Valid during the callback
 * it is passed to.
 */
struct ds_event {
	const struct ds_event_header *hdr;
	uint64_t offset;
	struct ds_evsel *evsel;        /* NULL when the id is unknown */
	struct ds_sample sample;       /* SAMPLE: all fields; others: sample_id_all trailer */
	enum ds_stitch_state stitch;
	uint64_t cookie;               /* for deferred samples and records */
	/*
	 * When perf 7.2 prints a deferred sample it holds: the time of its
	 * task's next deferred record after it (DS_STITCH_AFTER: the record
	 * that completed it), DS_NO_TIME when it holds it to the end (its
	 * task had no later record: perf names it after a thread it has
	 * forgotten at its EXIT), 0 when not known (the sample's own time
	 * stands).  perf names the thread as it is then: an exec in between
	 * gives the new comm.
	 */
	uint64_t record_time;
	/*
	 * DS_STITCH_UNRESOLVED: a later record of its task came with another
	 * cookie.  perf 7.2 gives such a sample up then and prints its cookie
	 * as a plain address; one it still held at the end (no later record
	 * of its task, in either order) keeps "(cookie)".
	 */
	bool cookie_passed;
};

/* The callback events are delivered to (session, stitcher); non-zero stops delivery. */
typedef int (*ds_event_fn)(void *ctx, const struct ds_event *ev);

/*
 * Counter @i (< s->read_nr) of a sample's PERF_SAMPLE_READ: its value and
 * its id (0 when the read_format has no PERF_FORMAT_ID).
 */
void ds_sample__read_value(const struct ds_evsel *evsel, const struct ds_sample *s, uint64_t i,
			   uint64_t *value, uint64_t *id);

/*
 * The record parsers (here and the fixed-layout records below): pure
 * functions of a record's bytes, on the hot path.  0, or -EINVAL with
 * *why set to a constant string, the record's part of the caller's
 * message ("FILE: offset 0xN: " + why); they leave ds_errmsg() as it was
 * (the API's one exception to its error convention: docs/design.md).
 */

/* PERF_RECORD_SAMPLE body. 0, or -EINVAL with *why set. */
int ds_sample__parse(const struct ds_evsel *evsel, const struct ds_event_header *hdr,
		     struct ds_sample *s, const char **why);

/* sample_id_all trailer of a non-sample kernel record (fields absent -> defaults). */
int ds_sample_id__parse(const struct ds_evsel *evsel, const struct ds_event_header *hdr,
			struct ds_sample *s, const char **why);

/* The sample fields of any kernel record: a SAMPLE's body, else its sample_id_all trailer. */
int ds_record__parse_sample(const struct ds_evsel *evsel, const struct ds_event_header *hdr,
			    struct ds_sample *s, const char **why);

/* Timestamp of any record for ordering; DS_NO_TIME if it has none. */
uint64_t ds_record__time(const struct ds_reader *r, const struct ds_event_header *hdr);

/*
 * The same for a record of @evsel, read at its fixed place without parsing
 * (or checking) the other fields: DS_NO_TIME if it has none or the record
 * is too short to hold it.
 */
uint64_t ds_evsel__record_time(const struct ds_evsel *evsel, const struct ds_event_header *hdr);

/*
 * What a LOST record (events lost: u64 id, u64 lost) or a LOST_SAMPLES
 * record (samples lost: u64 lost) counts; 0 for another record or one too
 * short to hold it.
 */
uint64_t ds_record__lost(const struct ds_event_header *hdr);

/* Name of a record type ("SAMPLE", "CALLCHAIN_DEFERRED", ...) or NULL. */
const char *ds_record_type__name(uint32_t type);

/* The fixed-layout records, validated views into the record bytes. */
struct ds_mmap_event {
	uint32_t pid, tid;
	uint64_t start, len, pgoff;
	bool has_build_id;
	uint8_t build_id_size;
	const uint8_t *build_id;
	uint32_t maj, min, prot, flags;
	uint64_t ino, ino_generation;
	const char *filename;        /* NUL-terminated within the record */
};
int ds_mmap__parse(const struct ds_evsel *evsel, const struct ds_event_header *hdr,
		   struct ds_mmap_event *m, const char **why);

struct ds_comm_event {
	uint32_t pid, tid;
	const char *comm;
	bool exec;
};
int ds_comm__parse(const struct ds_evsel *evsel, const struct ds_event_header *hdr,
		   struct ds_comm_event *c, const char **why);

struct ds_task_event {          /* FORK and EXIT */
	uint32_t pid, ppid, tid, ptid;
	uint64_t time;
};
int ds_task__parse(const struct ds_evsel *evsel, const struct ds_event_header *hdr,
		   struct ds_task_event *t, const char **why);

struct ds_deferred_event {      /* CALLCHAIN_DEFERRED */
	uint64_t cookie;
	uint64_t nr;
	const uint64_t *ips;
};
int ds_deferred__parse(const struct ds_evsel *evsel, const struct ds_event_header *hdr,
		       struct ds_deferred_event *d, const char **why);

#endif
