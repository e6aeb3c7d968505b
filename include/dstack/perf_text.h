/* SPDX-License-Identifier: MIT */
/*
 * perf's text forms of sample fields and side-band records, as perf
 * script 7.2 prints them: a data source decoded (-F data_src), a branch's
 * flags (-F brstack), registers (-F iregs/uregs), a page size (-F
 * data_page_size), and the PERF_RECORD_* lines of --show-task-events,
 * --show-mmap-events, --show-switch-events and --show-lost-events; and
 * dstack dump's text of a record.
 *
 * Every function writes into the caller's @buf of @cap bytes, always
 * NUL-terminated when @cap > 0, and returns the length of the whole text
 * (snprintf's rule: a result >= @cap means it was cut), but for
 * ds_data_src__text, which cuts at @cap - 1 and returns what it wrote.
 * None allocates; all are reentrant.
 */
#ifndef DSTACK_PERF_TEXT_H
#define DSTACK_PERF_TEXT_H

#include <stddef.h>
#include <stdint.h>
#include "dstack/event.h"
#include "dstack/reader.h"

/*
 * A data source (union perf_mem_data_src) decoded as perf does:
 * "|OP LOAD|LVL L1 hit|SNP None|TLB L1 or L2 hit|LCK No|BLK  N/A".
 */
size_t ds_data_src__text(uint64_t data_src, char *buf, size_t cap);
/*
 * A branch entry's flags word (perf_branch_entry's third word) as perf's
 * print_bstack_flags: "/P/-/-/12/CALL/- " (prediction, in_tx, abort,
 * cycles, type, speculation; the space after).
 */
size_t ds_branch_flags__text(uint64_t flags, char *buf, size_t cap);
/*
 * Sampled x86 registers as perf_sample__fprintf_regs: " ABI:2    AX:0x200 ..."
 * for the registers of @mask (one value of @regs each, in bit order);
 * "" when @regs is NULL.  Names as perf's: the general ones, XMM0-15
 * (two slots each), else "unknown".
 */
size_t ds_regs__text(uint64_t abi, const uint64_t *regs, uint64_t mask, char *buf, size_t cap);
/* A page size as perf's unit_number__scnprintf: "4K", "2M", "N/A" for 0. */
size_t ds_page_size__text(uint64_t size, char *buf, size_t cap);
/*
 * A side-band record (COMM, FORK, EXIT, MMAP, MMAP2, SWITCH,
 * SWITCH_CPU_WIDE, LOST) as perf script prints it after the sample's
 * columns: "PERF_RECORD_MMAP2 1/1: [0x...(0x...) @ 0 fd:01 123 0]: r-xp /bin/x\n",
 * its newline included.  The task the line's columns show in *@pid and
 * *@tid: the one a COMM, FORK, EXIT or MMAP names, else the record's own
 * (its sample_id_all fields, @ev->sample).  -EINVAL (nothing written): a
 * record of another type, or one that does not parse.
 */
int ds_side_band__text(const struct ds_event *ev, int32_t *pid, int32_t *tid, char *buf, size_t cap);
/*
 * A record of @r as dstack dump prints it (the role of perf report -D,
 * not its text): "OFFSET [SIZE]: PERF_RECORD_TYPE" (the offset in its
 * file, a directory's file's own; "(decompressed)" for one out of a
 * COMPRESSED record), then a kernel record's parsed fields: a sample's
 * event, ip, period and id fields, its callchain ("... chain: nr:N" and a
 * line per entry, context markers and cookies named), registers and user
 * stack copy; an mmap's, task's or deferred callchain's fields; " BAD:
 * why" for one that does not parse.  Every line ends in '\n'.
 */
size_t ds_record__dump_text(const struct ds_reader *r, const struct ds_record *rec, char *buf, size_t cap);

#endif
