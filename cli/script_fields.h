/* SPDX-License-Identifier: MIT */
/*
 * `dstack script -F/--fields`: which fields a sample line shows, per kind
 * of event, with perf script's names, defaults and rules (the `type:`
 * prefix, `+field`/`-field`, fields dropped from the defaults when the
 * samples lack them, errors when a field asked for cannot be printed).
 */
#ifndef DSTACK_CLI_SCRIPT_FIELDS_H
#define DSTACK_CLI_SCRIPT_FIELDS_H

#include <stdbool.h>
#include <stdint.h>
#include "dstack/reader.h"

/* The fields, in perf's order of its name table (bit numbers, not print order). */
enum script_field {
	SF_COMM, SF_TID, SF_PID, SF_TIME, SF_CPU, SF_EVNAME, SF_TRACE, SF_IP, SF_SYM,
	SF_DSO, SF_DSOFF, SF_ADDR, SF_SYMOFFSET, SF_SRCLINE, SF_PERIOD, SF_IREGS,
	SF_UREGS, SF_BRSTACK, SF_BRSTACKSYM, SF_DATA_SRC, SF_WEIGHT, SF_BPF_OUTPUT,
	SF_CALLINDENT, SF_INSN, SF_DISASM, SF_INSNLEN, SF_BRSTACKINSN, SF_BRSTACKOFF,
	SF_SYNTH, SF_PHYS_ADDR, SF_METRIC, SF_MISC, SF_SRCCODE, SF_IPC, SF_TOD,
	SF_DATA_PAGE_SIZE, SF_CODE_PAGE_SIZE, SF_INS_LAT, SF_BRSTACKINSNLEN,
	SF_MACHINE_PID, SF_VCPU, SF_CGROUP, SF_RETIRE_LAT, SF_BRSTACKDISASM, SF_BRCNTR,
	SF_NR
};
#define SF(x) (1ULL << SF_##x)

/* perf's output types: the attr types below PERF_TYPE_MAX, synthesized, any other PMU */
enum { ST_HW, ST_SW, ST_TRACE, ST_HWCACHE, ST_RAW, ST_BREAK, ST_SYNTH, ST_OTHER, ST_NR };

struct script_fields {
	uint64_t fields[ST_NR];
	uint64_t user_set_fields[ST_NR], user_unset_fields[ST_NR];
	bool user_set[ST_NR], wildcard_set[ST_NR];
	/*
	 * perf sets a type's frame options (print_ip_opts) from its first
	 * event that is not a dummy (a pipe's first event of any kind): a
	 * type with none prints its frames with none of ip, sym or dso (a
	 * dummy's deferred records).  Set by script_fields_check().
	 */
	bool frame_opts[ST_NR];
};

/* perf's defaults. */
void script_fields_init(struct script_fields *f);
/* One -F argument, added to what earlier ones said; 0, or -1 after printing why. */
int script_fields_parse(struct script_fields *f, const char *arg);
/* The output type of an attr type. */
int script_field_type(uint32_t attr_type);
/*
 * Once the events are known: drop default fields the samples lack, and
 * refuse fields asked for that they lack (as perf does, per output type,
 * for its first event that is not a dummy).  0, or -1 after printing why.
 */
int script_fields_check(struct script_fields *f, const struct ds_reader *rd);
/*
 * In a pipe, perf shows where samples were taken when the events read so
 * far sample callchains, whatever -F said (unless it said -ip or -sym):
 * ip and sym join each type's fields, after the check.
 */
void script_fields_pipe_callchains(struct script_fields *f, const struct ds_reader *rd);
/* The names perf takes, for --help. */
const char *script_fields_names(void);

#endif
