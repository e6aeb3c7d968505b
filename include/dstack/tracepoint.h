/* SPDX-License-Identifier: MIT */
/*
 * dstack tracepoints: event formats from a recording's tracing data, and
 * the text perf prints for a tracepoint sample's PERF_SAMPLE_RAW data.
 *
 * A recording of tracepoint events carries the kernel's format file of
 * each event (tracefs events/SYS/NAME/format) in its tracing data: the
 * HEADER_TRACING_DATA feature of a file, the PERF_RECORD_HEADER_TRACING_DATA
 * record of a pipe.  ds_tp_set__parse() reads that blob; each event's
 * fields (type, offset, size, signedness, arrays, __data_loc/__rel_loc
 * dynamic arrays) and its "print fmt" (format string and argument
 * expressions) are parsed once.  ds_tp_event__format() renders a sample's
 * raw data the way perf 7.2 prints it through libtraceevent (the same
 * conversions, the same output for what libtraceevent cannot evaluate, and
 * "[FAILED TO PARSE]" with the raw fields for a print fmt it cannot parse).
 *
 * Every input is hostile: a bad blob gives an error naming its offset in
 * the blob; reading a field outside the raw data reads as zero; output is
 * always bounded by the caller's buffer.
 *
 * Ownership: the set owns its events; events live until the set is deleted.
 * A set is read-only after parsing (may be used from several threads).
 */
#ifndef DSTACK_TRACEPOINT_H
#define DSTACK_TRACEPOINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ds_tp_set;
struct ds_tp_event;

/*
 * Parse a tracing-data blob.  NULL on error, errno set (EBADMSG: damaged)
 * and ds_errmsg() saying "offset 0xN in the tracing data: what".  A blob
 * with no event formats is not an error.
 */
struct ds_tp_set *ds_tp_set__parse(const void *data, size_t len);
void ds_tp_set__delete(struct ds_tp_set *set);

/* The event whose format has "ID: id" (a tracepoint attr's config); NULL if none. */
const struct ds_tp_event *ds_tp_set__find(const struct ds_tp_set *set, uint64_t id);
size_t ds_tp_set__nr_events(const struct ds_tp_set *set);

/*
 * One format file's text (name, ID, fields, print fmt) as an event of its
 * own, for tests and fuzzing; @long_size is 4 or 8.  Free with
 * ds_tp_event__delete().  NULL if it has no name or no fields.
 */
struct ds_tp_event *ds_tp_event__parse(const char *system, const char *text, size_t len, int long_size);
void ds_tp_event__delete(struct ds_tp_event *ev);

const char *ds_tp_event__system(const struct ds_tp_event *ev);
const char *ds_tp_event__name(const struct ds_tp_event *ev);
uint64_t ds_tp_event__id(const struct ds_tp_event *ev);
/* false when the print fmt could not be parsed: the text is the raw fields */
bool ds_tp_event__printable(const struct ds_tp_event *ev);

/*
 * Kernel symbol lookup for %pS/%ps: the name of the function holding
 * @addr and its start in *start, or NULL if none.
 */
typedef const char *(*ds_tp_resolve_fn)(void *ctx, uint64_t addr, uint64_t *start);

/*
 * The text perf prints after the event name for one sample: its RAW data
 * rendered by the event's print fmt.  Writes at most cap bytes with a
 * terminating NUL (cap > 0) and returns the length of the whole text (like
 * snprintf: a result >= cap means it was cut).  @resolve may be NULL.
 */
size_t ds_tp_event__format(const struct ds_tp_event *ev, const void *raw, size_t raw_size,
			   ds_tp_resolve_fn resolve, void *ctx, char *buf, size_t cap);

/*
 * A numeric field of the raw data (sign-extended if the format says it is
 * signed).  Returns false if the event has no such field or it lies
 * outside the data.
 */
bool ds_tp_event__field_u64(const struct ds_tp_event *ev, const char *name, const void *raw,
			    size_t raw_size, uint64_t *val);
/* A fixed char array field (e.g. prev_comm) copied NUL-terminated into buf. */
bool ds_tp_event__field_str(const struct ds_tp_event *ev, const char *name, const void *raw,
			    size_t raw_size, char *buf, size_t cap);

/* ---- recording: the running kernel's tracefs ---- */

/* The ID of tracefs event SYS:NAME (its perf attr config): 0, or -errno (ds_errmsg() says why). */
int ds_tracefs__event_id(const char *sys, const char *name, uint64_t *id);

/*
 * A tracing-data blob, as perf record writes it (HEADER_TRACING_DATA), for
 * the events "sys:name" given (all of one system together): tracefs's
 * header_page and header_event, the events' format files, and empty
 * kallsyms, printk and saved-cmdlines sections.  malloc'd; NULL and errno
 * (ds_errmsg() says why) when tracefs cannot be read.
 */
void *ds_tracefs__tracing_data(const char *const *events, size_t nr, size_t *len);

#endif
