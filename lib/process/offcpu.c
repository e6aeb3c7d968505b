// SPDX-License-Identifier: MIT
/* Off-CPU waits from sched_switch pairs (see include/dstack/offcpu.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "util/grow.h"
#include "dstack/offcpu.h"
#include "util/hashmap.h"

struct held {
	uint64_t time, prev_state;
	int32_t pid, tid;
	bool pending;              /* a switch-out waits for its switch-in */
	uint64_t *ips;
	size_t nr_ips, cap_ips;
};

struct ds_offcpu {
	struct dsi_hashmap by_tid;  /* tid -> index in held */
	struct held *held;
	size_t nr_held, cap_held;
	size_t drain_pos;
	uint64_t unmatched;
};

struct ds_offcpu *ds_offcpu__new(void)
{
	struct ds_offcpu *oc = calloc(1, sizeof(*oc));

	if (oc)
		dsi_hashmap__init(&oc->by_tid);
	return oc;
}

void ds_offcpu__delete(struct ds_offcpu *oc)
{
	if (!oc)
		return;
	for (size_t i = 0; i < oc->nr_held; i++)
		free(oc->held[i].ips);
	free(oc->held);
	dsi_hashmap__exit(&oc->by_tid);
	free(oc);
}

enum ds_offcpu_state ds_offcpu__state(uint64_t prev_state)
{
	/* the kernel's TASK_REPORT bits: 0x01 S, 0x02 D, higher ones stopped/dead/parked/idle;
	 * none (with or without the preempted bit TASK_REPORT_MAX) is R */
	uint64_t s = prev_state & 0xff;

	if (!s)
		return DS_OFFCPU_PREEMPTED;
	if (s & 0x01)
		return DS_OFFCPU_SLEEPING;
	if (s & 0x02)
		return DS_OFFCPU_BLOCKED;
	return DS_OFFCPU_OTHER;
}

const char *ds_offcpu__state_name(enum ds_offcpu_state st)
{
	switch (st) {
	case DS_OFFCPU_PREEMPTED: return "preempted";
	case DS_OFFCPU_SLEEPING: return "sleeping";
	case DS_OFFCPU_BLOCKED: return "blocked";
	default: return "other";
	}
}

static struct held *held_of(struct ds_offcpu *oc, int32_t tid, bool create)
{
	uint64_t *v = dsi_hashmap__find(&oc->by_tid, (uint32_t)tid);

	if (v)
		return &oc->held[*v];
	if (!create)
		return NULL;
	if (oc->nr_held == oc->cap_held) {
		struct held *n = dsi_grow(oc->held, &oc->cap_held, oc->nr_held + 1, sizeof(*n), 64);

		if (!n)
			return NULL;
		oc->held = n;
	}
	if (dsi_hashmap__set(&oc->by_tid, (uint32_t)tid, oc->nr_held))
		return NULL;
	oc->held[oc->nr_held] = (struct held){ .tid = tid };
	return &oc->held[oc->nr_held++];
}

static void to_wait(const struct held *h, uint64_t end, bool at_end, struct ds_offcpu_wait *w)
{
	*w = (struct ds_offcpu_wait){
		.time = h->time, .duration = end > h->time ? end - h->time : 0, .pid = h->pid, .tid = h->tid,
		.state = ds_offcpu__state(h->prev_state), .at_end = at_end, .ips = h->ips, .nr_ips = h->nr_ips,
	};
}

int ds_offcpu__switch(struct ds_offcpu *oc, const struct ds_offcpu_switch *sw, struct ds_offcpu_wait *done)
{
	struct held *h;
	int ret = 0;

	/* the idle task (tid 0) is not a thread that waits */
	if (sw->next_tid > 0 && (h = held_of(oc, sw->next_tid, false)) && h->pending) {
		to_wait(h, sw->time, false, done);
		h->pending = false;
		ret = 1;
	}
	if (sw->prev_tid <= 0 || sw->prev_tid == sw->next_tid)
		return ret;
	h = held_of(oc, sw->prev_tid, true);
	if (!h)
		return -ENOMEM;
	if (h->pending)
		oc->unmatched++;
	if (sw->nr_ips > h->cap_ips) {
		uint64_t *n = dsi_grow(h->ips, &h->cap_ips, sw->nr_ips, sizeof(*n), 64);

		if (!n)
			return -ENOMEM;
		h->ips = n;
	}
	if (sw->nr_ips)
		memcpy(h->ips, sw->ips, sw->nr_ips * sizeof(*h->ips));
	h->nr_ips = sw->nr_ips;
	h->time = sw->time;
	h->prev_state = sw->prev_state;
	h->pid = sw->pid;
	h->pending = true;
	return ret;
}

int ds_offcpu__ran(struct ds_offcpu *oc, int32_t tid, uint64_t time, struct ds_offcpu_wait *done)
{
	struct held *h;

	if (tid <= 0 || !(h = held_of(oc, tid, false)) || !h->pending || time <= h->time)
		return 0;
	to_wait(h, time, false, done);
	h->pending = false;
	return 1;
}

int ds_offcpu__drain(struct ds_offcpu *oc, uint64_t end, struct ds_offcpu_wait *out)
{
	while (oc->drain_pos < oc->nr_held) {
		struct held *h = &oc->held[oc->drain_pos++];

		if (h->pending) {
			h->pending = false;
			to_wait(h, end, true, out);
			return 1;
		}
	}
	return 0;
}

uint64_t ds_offcpu__unmatched(const struct ds_offcpu *oc)
{
	return oc->unmatched;
}
