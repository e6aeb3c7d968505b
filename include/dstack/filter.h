/* SPDX-License-Identifier: MIT */
/*
 * perf's sample filters: by process (--pid), thread (--tid), command name
 * (--comm), CPU (-C, a list like "0-3,6") and time (--time: ranges
 * "START,END" in seconds with up to nine decimals, either side open,
 * several separated by spaces; or percent slices of the recording:
 * "10%/2", "0%-10%,30%-40%", "10%").  The filter is built part by part,
 * prepared once for the recording it filters (the percent slices need its
 * first and last sample times, -C that its samples carry their CPU), then
 * asked about each sample:
 *
 *	struct ds_filter *f = ds_filter__new();
 *
 *	if (!f || ds_filter__set_cpus(f, "0-3") || ds_filter__set_time(f, "10%/2") ||
 *	    ds_filter__prepare(f, ds_profile__reader(p)))
 *		...                         // why: ds_errmsg()
 *	... ds_filter__wanted(f, sample, comm) ...
 *	ds_filter__delete(f);
 *
 * A part set again replaces what it held (as perf's options do); a part
 * never set filters nothing.  A failed setter leaves the filter as it was.
 *
 * Errors: 0 or a negative errno (-EINVAL, -ENOMEM), why in ds_errmsg()
 * (dstack/log.h); ds_filter__new returns NULL with errno set.  The
 * questions (ds_filter__wanted and its parts) neither allocate nor fail.
 * A filter is used by one thread at a time; filters are independent.
 */
#ifndef DSTACK_FILTER_H
#define DSTACK_FILTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "dstack/event.h"
#include "dstack/reader.h"

/* CPUs a CPU list may name: 0 to DS_FILTER_MAX_CPUS - 1 */
#define DS_FILTER_MAX_CPUS 4096
/* time ranges or percent slices a --time may hold */
#define DS_FILTER_MAX_TIMES 64

struct ds_filter;

struct ds_filter *ds_filter__new(void);
void ds_filter__delete(struct ds_filter *f);

/* The processes (@pids) or threads kept: @n ids, copied (0: any). */
int ds_filter__set_pids(struct ds_filter *f, const int32_t *pids, size_t n);
int ds_filter__set_tids(struct ds_filter *f, const int32_t *tids, size_t n);
/* The command names kept: @n names, copied (0: any). */
int ds_filter__set_comms(struct ds_filter *f, const char *const *comms, size_t n);
/*
 * The CPUs kept, perf's list "0-3,6" (numbers and ranges, comma separated,
 * each below DS_FILTER_MAX_CPUS).  -EINVAL: not such a list.
 */
int ds_filter__set_cpus(struct ds_filter *f, const char *list);
/*
 * The times kept, perf's --time (copied): ranges split the way perf splits
 * them (as many ranges as commas; each range's end the word after its
 * comma; ranges in order, each ending before the next starts), or percent
 * items (with a '/' anywhere, every comma-separated item "P%/N": the Nth
 * slice of P%; else with a '-', every one "A%-B%"; else one "P%": the
 * first slice of P%).  Percent items are checked now and computed by
 * ds_filter__prepare().  -EINVAL: not such a time.
 */
int ds_filter__set_time(struct ds_filter *f, const char *spec);

/* Any part set. */
bool ds_filter__active(const struct ds_filter *f);
/*
 * For the recording @rd: a CPU filter needs its samples to carry their CPU
 * (perf's rule: the first event of each type samples it; else -EOPNOTSUPP)
 * and its CPUs to be the recording's (else -ERANGE, the CPU named);
 * percent slices need its first and last sample times (HEADER_SAMPLE_TIME;
 * else -ENODATA) and are computed from them (-EINVAL: a slice outside
 * them).  0 when nothing needs the recording.  May be called again for
 * another recording.
 */
int ds_filter__prepare(struct ds_filter *f, const struct ds_reader *rd);

/* The sample @s passes every part (@comm: its thread's at its time). */
bool ds_filter__wanted(const struct ds_filter *f, const struct ds_sample *s, const char *comm);
/*
 * Its parts: the CPU alone (what perf filters side-band records by); time
 * and CPU (perf drops what they leave out); pid, tid and comm (perf's
 * report counts what they leave out in its totals).  A sample without a
 * CPU passes the CPU part; one without a time (0) every time.
 */
bool ds_filter__cpu(const struct ds_filter *f, const struct ds_sample *s);
bool ds_filter__time_cpu(const struct ds_filter *f, const struct ds_sample *s);
bool ds_filter__thread(const struct ds_filter *f, const struct ds_sample *s, const char *comm);

#endif
