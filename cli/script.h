/* SPDX-License-Identifier: MIT */
/*
 * dstack script's state and its printers (script_print.c): the columns
 * that start a line, frames and callchains (with their caches), the
 * sample's own address, and the fields printed as perf's text forms
 * (dstack/perf_text.h).  cmd_script.c has the options, the checks made
 * at the first event and the walk.
 */
#ifndef DSTACK_CLI_SCRIPT_H
#define DSTACK_CLI_SCRIPT_H

#include <stdbool.h>
#include <stdint.h>
#include "dstack/machine.h"
#include "dstack/profile.h"
#include "util/outbuf.h"
#include "samples.h"
#include "script_fields.h"

/*
 * Formatted frame lines, direct-mapped by frame: a profile prints few
 * distinct frames many times (kernel.fp: 1,036 distinct in 460,244), so
 * most lines are one memcpy instead of two hex conversions and four copies.
 * The names are interned (equal pointers for equal names) and live as long
 * as the machine, so a slot is valid while its key fields are equal.  A
 * slot names its line in a dense array that grows as slots are first used:
 * a short profile touches a few pages, not the whole table (page faults
 * are dear in a VM).
 */
#define FRAME_CACHE_BITS 12
#define FRAME_CACHE_SLOTS (1u << FRAME_CACHE_BITS)
#define FRAME_TEXT_MAX 112

/* What a callchain line or the sample's ip shows besides the address (-F). */
/* PO_KOFF: with PO_DSOFF, no kernel symbols were read: perf's kernel object is then a file like
 * another, and its addresses get an offset ("[kernel.kallsyms]+0xffffffff81000000") */
enum { PO_SYM = 1, PO_SYMOFF = 2, PO_DSO = 4, PO_DSOFF = 8, PO_SRCLINE = 16, PO_IP = 32, PO_KOFF = 64 };

struct frame_line {
	uint64_t ip, offset;
	const char *sym, *dso;
	bool inlined, cookie;
	uint8_t opts;              /* the PO_* it was formatted with */
	uint8_t depth;             /* with PO_SRCLINE: the frame's place in its inline chain */
	uint8_t len;               /* 0: empty slot */
	char text[FRAME_TEXT_MAX];
};

/*
 * Formatted callchains, by the machine's chain id (equal ids, equal
 * frames): a profile prints its chains over and over, so most samples
 * print theirs as one copy.  The text lives in a bounded arena; when it is
 * full the epoch moves on and it refills.
 */
#define CHAIN_TEXT_BITS 12
#define CHAIN_TEXT_ARENA (1u << 20)
#define CHAIN_TEXT_MAX (16u << 10)   /* longer chains are printed each time */

struct chain_text {
	uint64_t id;
	uint32_t off, len, epoch;
	uint8_t opts;
};

struct script {
	struct outbuf *out;
	struct ds_machine *machine;
	const struct ds_reader *reader;
	bool no_merge;
	bool header, header_only;   /* --header, --header-only: the recording's header first */
	const char *input;
	unsigned max_stack;
	struct script_fields f;
	struct sample_filter filter;
	bool filtering;
	bool prepared;              /* fields checked against the events (at the first one) */
	bool bad_fields;            /* they failed the check: said why */
	bool use_callchain;         /* some event samples callchains (perf's symbol_conf.use_callchain) */
	bool hide_callchain;        /* -G: the sample's own ip, never its callchain */
	bool ns, reltime, deltatime; /* --ns, --reltime, --deltatime */
	bool show_task, show_mmap, show_switch; /* --show-task-events, --show-mmap-events, --show-switch-events */
	bool show_lost;                          /* --show-lost-events */
	const char *symbols;                     /* -S/--symbols: the comma list (argv's), NULL for all */
	uint64_t first_time, prev_time;
	int name_width;             /* the longest event name */
	int data_src_width;         /* perf pads the data source to the widest seen so far */
	uint8_t ip_opts[ST_NR];
	uint8_t koff[ST_NR];        /* PO_KOFF where the type's fields have dsoff and no kernel symbols were read */
	uint64_t perf_chain[DS_PROFILE_CHAIN_MAX];   /* a sample's chain as perf reads it (ds_event__perf_callchain) */
	uint32_t *line_of;         /* FRAME_CACHE_SLOTS: index + 1 into lines, 0 none; NULL: no cache */
	struct frame_line *lines;
	size_t nr_lines, cap_lines;
	struct chain_text *chains;  /* 1 << CHAIN_TEXT_BITS, or NULL (no cache) */
	char *chain_arena;          /* CHAIN_TEXT_ARENA bytes */
	size_t chain_used;
	uint32_t chain_epoch;       /* from 1: a zeroed slot is stale */
	uint64_t aux_records, aux_bytes;  /* AUX-area data, not decoded: said at the end */
	struct ds_profile *profile; /* its counter reads, tracepoint text, unwinding of stack snapshots */
	struct ds_user_unwind *uu;  /* samples with a user stack snapshot */
};

/* comm, pid/tid, cpu, time: perf's perf_sample__fprintf_start() */
void script_print_start(struct script *sc, const struct ds_event *ev, const struct ds_evsel *evsel,
			struct ds_thread *t);
/*
 * @unwound: @ips is ds_user_unwind__chain's, cut to --max-stack already
 * (its kernel part and its unwind apart, as perf's): resolved whole, its
 * user entries all addresses (DS_CALLCHAIN_UNWOUND).
 */
void script_print_callchain(struct script *sc, struct ds_thread *t, const uint64_t *ips, uint64_t nr,
			    bool unwound, uint8_t opts);
/* perf's sample->period: the sample's, else the attr's (its frequency when it has one) */
uint64_t script_sample_period(const struct ds_event *ev);
/*
 * The sample's own address resolved in @t into @r: perf's al->sym, the
 * function holding it (inlined functions are not expanded there), whose
 * symbol-table name is fr->elf_name (else DWARF's name).
 */
const struct ds_frame *script_own_frame(struct script *sc, struct ds_thread *t, const struct ds_event *ev,
					struct ds_resolved *r);
/* The sample's own address without a callchain (script_own_frame) */
void script_print_ip_line(struct script *sc, const struct ds_event *ev, struct ds_thread *t, uint8_t opts);
/* -F addr: the sample's address, resolved for page faults (perf's sample_addr_correlates_sym) */
void script_print_addr(struct script *sc, const struct ds_event *ev, struct ds_thread *t, uint64_t fl);
/* -F brstack / brstacksym: each branch "from/to/flags " (brstack's each after a space), as perf prints them */
void script_print_brstack(struct script *sc, const struct ds_event *ev, struct ds_thread *t, uint64_t fl);
/* -F iregs/uregs: " ABI:2    AX:0x200 ..." as perf_sample__fprintf_regs (nothing for a sample without them) */
void script_print_regs(struct outbuf *o, uint64_t abi, const uint64_t *regs, uint64_t mask);
/* perf's unit_number__scnprintf(): " 4K", " 2M", " N/A" */
void script_print_page_size(struct outbuf *o, uint64_t size);
/*
 * The sample's trace fields (tracepoints' "trace" field), between the
 * event name and the addresses, as perf prints them (lib/format/tracepoint.c).
 */
void script_print_trace_fields(struct script *sc, const struct ds_event *ev, struct ds_thread *t);
/* The AUX area bytes a PERF_RECORD_AUX announces (u64 offset, size, flags after the header). */
uint64_t script_aux_size(const struct ds_event *ev);
/* -F data_src: the word and its decoding, padded to the widest seen so far (as perf) */
void script_print_data_src(struct script *sc, uint64_t data_src);

#endif
