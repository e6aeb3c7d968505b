/* SPDX-License-Identifier: MIT */
/*
 * Made-up resolved samples for the unit tests of the stack model and the
 * exports (test_stacks.c, test_folded.c, ...): what ds_profile hands a
 * callback, built by hand, frames callee first.
 */
#ifndef DSTACK_TEST_STACK_SAMPLES_H
#define DSTACK_TEST_STACK_SAMPLES_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include "dstack/event.h"
#include "dstack/machine.h"
#include "dstack/profile.h"
#include "dstack/reader.h"

#define TS_MAX_FRAMES 16

struct test_sample {
	struct ds_event ev;
	struct ds_evsel evsel;
	struct ds_cc_frame frames[TS_MAX_FRAMES];
	struct ds_profile_sample s;
};

/* A user frame @sym (NULL: none) of @dso at @ip. */
static inline struct ds_cc_frame ts_user(uint64_t ip, const char *sym, const char *dso)
{
	return (struct ds_cc_frame){ .ip = ip, .sym = sym, .dso = dso ? dso : "[unknown]", .addr = ip };
}

static inline struct ds_cc_frame ts_kernel(uint64_t ip, const char *sym)
{
	return (struct ds_cc_frame){ .ip = ip, .sym = sym, .dso = "[kernel.kallsyms]", .kernel = true, .addr = ip };
}

/*
 * @t filled: a sample of @comm (pid = tid = @pid) on the machine @machine
 * (any pointer: what the model keys its memo by), @period, time @time,
 * event @event, chain id @chain (0: none), the @n frames of @f.
 */
static inline struct ds_profile_sample *ts_make(struct test_sample *t, const void *machine, const char *comm,
						 int32_t pid, uint64_t period, uint64_t time, char *event,
						 uint64_t chain, const struct ds_cc_frame *f, size_t n)
{
	memset(t, 0, sizeof(*t));
	t->evsel.name = event;
	t->ev.evsel = &t->evsel;
	t->ev.sample.time = time;
	t->ev.sample.period = period;
	t->ev.sample.pid = t->ev.sample.tid = (uint32_t)pid;
	t->ev.sample.has_tid = true;
	for (size_t i = 0; i < n && i < TS_MAX_FRAMES; i++)
		t->frames[i] = f[i];
	t->s = (struct ds_profile_sample){
		.ev = &t->ev, .evsel = &t->evsel, .machine = (struct ds_machine *)(uintptr_t)machine,
		.comm = comm, .pid = pid, .tid = pid, .cpu = (uint32_t)-1, .parallelism = 1, .time = time,
		.period = period, .frames = t->frames, .nr_frames = n < TS_MAX_FRAMES ? n : TS_MAX_FRAMES,
		.chain_id = chain,
	};
	return &t->s;
}

#endif
