/* SPDX-License-Identifier: MIT */
/*
 * Progress of a long read on stderr, when stderr is a terminal (never on a
 * pipe or file; -q turns it off): bytes read of the input, samples, rate,
 * redrawn in place at most five times a second from half a second on (a
 * short run shows nothing), and wiped at the end so the output that
 * follows is clean.
 */
#ifndef DSTACK_CLI_PROGRESS_H
#define DSTACK_CLI_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

/* -q / --quiet (common_opt): no progress */
extern bool cli_quiet;

struct progress {
	bool on, shown;
	const char *cmd;
	uint64_t total;             /* bytes of the input's data; 0 when unknown (a pipe) */
	uint64_t done, samples, events;
	uint64_t start_ns, last_ns;
	uint64_t first_ns, every_ns;
	uint64_t base;              /* progress_input_event: the data section's file offset */
};

struct ds_reader;
struct ds_event;

/* Set up for @cmd reading @total bytes; on only when stderr is a terminal and not -q. */
void progress_init(struct progress *p, const char *cmd, uint64_t total);
/* An event read at file offset @offset (a sample if @sample): cheap, prints now and then. */
void progress_event(struct progress *p, uint64_t offset, bool sample);
/*
 * For a command that runs a session itself: set up for @r's input (its
 * data section's bytes; unknown for a pipe), then each event of it.
 */
void progress_init_input(struct progress *p, const char *cmd, const struct ds_reader *r);
void progress_input_event(struct progress *p, const struct ds_event *ev);
/* Wipe the line if anything was shown. */
void progress_done(struct progress *p);

#endif
