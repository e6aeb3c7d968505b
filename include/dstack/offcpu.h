/* SPDX-License-Identifier: MIT */
/*
 * dstack off-CPU time: each sched:sched_switch sample that switches a
 * thread out is weighted by the time until that thread is switched in
 * again (the next sched_switch whose next_pid is that thread), on any CPU.
 *
 * Feed every sched_switch sample in time order to ds_offcpu__switch(): the
 * switch-out of prev_pid is held (its callchain copied into a buffer of
 * that thread's, reused: no allocation per sample once a thread's buffer
 * is big enough), and the wait of next_pid that this switch ends, if one
 * is held, is handed back with its length.  At the end ds_offcpu__drain()
 * hands back the waits still held, weighted up to the end of the
 * recording and marked: threads that never ran again are counted, not
 * dropped.  A thread switched out twice with nothing between saying it ran
 * (a lost event) keeps the newer switch-out; the older one is counted in
 * ds_offcpu__unmatched().
 *
 * Ownership: a wait's ips stay valid until the next call for that thread
 * (or the next drain call); the object owns them.
 */
#ifndef DSTACK_OFFCPU_H
#define DSTACK_OFFCPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ds_offcpu;

/* Why a thread was off CPU, from sched_switch's prev_state. */
enum ds_offcpu_state {
	DS_OFFCPU_PREEMPTED,   /* R / R+: runnable, switched out by the scheduler */
	DS_OFFCPU_SLEEPING,    /* S: interruptible sleep (nanosleep, a pipe, a futex...) */
	DS_OFFCPU_BLOCKED,     /* D: uninterruptible (I/O, mostly) */
	DS_OFFCPU_OTHER,       /* stopped, traced, dead, parked, idle */
};

/* One switch-out, as ds_offcpu__switch() takes it. */
struct ds_offcpu_switch {
	uint64_t time;
	int32_t pid, prev_tid, next_tid;   /* pid: the sample's (the switched-out thread's process) */
	uint64_t prev_state;
	const uint64_t *ips;               /* the sample's callchain (stitched), may be NULL */
	size_t nr_ips;
};

/* A finished wait: a switch-out and how long its thread stayed off CPU. */
struct ds_offcpu_wait {
	uint64_t time;                     /* of the switch-out */
	uint64_t duration;                 /* ns until the switch-in (or the end) */
	int32_t pid, tid;
	enum ds_offcpu_state state;
	bool at_end;                       /* no switch-in before the end of the recording */
	const uint64_t *ips;
	size_t nr_ips;
};

struct ds_offcpu *ds_offcpu__new(void);
void ds_offcpu__delete(struct ds_offcpu *oc);

/*
 * Take one sched_switch.  Returns 1 with *done filled when this switch
 * ends a held wait (of sw->next_tid), 0 when none, -ENOMEM.
 */
int ds_offcpu__switch(struct ds_offcpu *oc, const struct ds_offcpu_switch *sw, struct ds_offcpu_wait *done);

/*
 * Evidence that @tid runs at @time (a PERF_RECORD_SWITCH into it, its
 * deferred callchain record, written as it returns to user space, any
 * sample in its context): ends its held wait, if any began before @time.
 * A recording of one task's events has no sched_switch into it (that one
 * runs in the context of the task switched out), so this is how its waits
 * end there.  Returns 1 with *done filled, else 0.
 */
int ds_offcpu__ran(struct ds_offcpu *oc, int32_t tid, uint64_t time, struct ds_offcpu_wait *done);

/* The waits still held, one per call (1), weighted up to @end; 0 when none is left. */
int ds_offcpu__drain(struct ds_offcpu *oc, uint64_t end, struct ds_offcpu_wait *out);

/* Switch-outs replaced by a newer one of the same thread before any switch-in. */
uint64_t ds_offcpu__unmatched(const struct ds_offcpu *oc);

enum ds_offcpu_state ds_offcpu__state(uint64_t prev_state);
/* "sleeping", "blocked", "preempted", "other" */
const char *ds_offcpu__state_name(enum ds_offcpu_state st);

#endif
