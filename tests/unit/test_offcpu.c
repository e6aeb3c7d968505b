// SPDX-License-Identifier: MIT
/*
 * Off-CPU pairing unit tests (lib/process/offcpu.c): a switch-out is weighted by
 * the time to its thread's switch-in; a record showing the thread running
 * ends the wait too, but not one from before the switch-out; the idle task
 * never waits; the callchain is the switch-out's, copied; a second
 * switch-out without anything between counts as unmatched; what is still
 * held at the end is drained up to the end time and marked; prev_state
 * maps to preempted/sleeping/blocked/other.
 */
#include <stdio.h>
#include <string.h>
#include "dstack/offcpu.h"
#include "check.h"

static int sw(struct ds_offcpu *oc, uint64_t t, int prev, int next, uint64_t state, uint64_t *ips, size_t n,
	      struct ds_offcpu_wait *done)
{
	struct ds_offcpu_switch s = { .time = t, .pid = prev, .prev_tid = prev, .next_tid = next,
				      .prev_state = state, .ips = ips, .nr_ips = n };

	return ds_offcpu__switch(oc, &s, done);
}

int main(void)
{
	struct ds_offcpu *oc = ds_offcpu__new();
	struct ds_offcpu_wait w;
	uint64_t ips[3] = { 1, 2, 3 };

	CHECK(oc != NULL, "new");
	if (!oc)
		return 1;
	CHECK(sw(oc, 1000, 10, 0, 1, ips, 3, &w) == 0, "a switch-out to idle ends nothing");
	ips[0] = 99;   /* the held chain is a copy */
	CHECK(sw(oc, 5000, 0, 10, 0, NULL, 0, &w) == 1 && w.tid == 10 && w.duration == 4000 &&
	      w.state == DS_OFFCPU_SLEEPING && !w.at_end && w.nr_ips == 3 && w.ips[0] == 1 && w.time == 1000,
	      "switch-in ends the wait: %llu", (unsigned long long)w.duration);
	CHECK(sw(oc, 6000, 0, 10, 0, NULL, 0, &w) == 0, "a second switch-in ends nothing");
	/* ran: a record of the thread after its switch-out */
	CHECK(sw(oc, 7000, 11, 12, 2, ips, 1, &w) == 0, "switch-out of 11 (D), to 12 that waited for nothing");
	CHECK(ds_offcpu__ran(oc, 11, 7000, &w) == 0, "a record at the switch-out's own time does not end it");
	CHECK(ds_offcpu__ran(oc, 11, 7500, &w) == 1 && w.duration == 500 && w.state == DS_OFFCPU_BLOCKED, "ran ends it");
	CHECK(ds_offcpu__ran(oc, 11, 8000, &w) == 0, "and only once");
	/* two switch-outs with nothing between: the newer is kept */
	sw(oc, 9000, 13, 0, 0, NULL, 0, &w);
	sw(oc, 9500, 13, 0, 0x100, NULL, 0, &w);
	CHECK(ds_offcpu__unmatched(oc) == 1, "unmatched %llu", (unsigned long long)ds_offcpu__unmatched(oc));
	/* the end: 13 is still off CPU */
	CHECK(ds_offcpu__drain(oc, 10000, &w) == 1 && w.tid == 13 && w.at_end && w.duration == 500 &&
	      w.state == DS_OFFCPU_PREEMPTED, "drained at the end: %llu", (unsigned long long)w.duration);
	CHECK(ds_offcpu__drain(oc, 10000, &w) == 0, "nothing else held");
	CHECK(ds_offcpu__state(0) == DS_OFFCPU_PREEMPTED && ds_offcpu__state(0x100) == DS_OFFCPU_PREEMPTED &&
	      ds_offcpu__state(1) == DS_OFFCPU_SLEEPING && ds_offcpu__state(2) == DS_OFFCPU_BLOCKED &&
	      ds_offcpu__state(0x80) == DS_OFFCPU_OTHER && ds_offcpu__state(0x20) == DS_OFFCPU_OTHER, "states");
	CHECK(!strcmp(ds_offcpu__state_name(DS_OFFCPU_BLOCKED), "blocked"), "state name");
	ds_offcpu__delete(oc);
	printf("test_offcpu: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
