// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "dstack/event.h"
#include "dstack/session.h"
#include "hashmap.h"
#include "report_maps.h"

#define NO_ENTRY UINT32_MAX

struct rmap {
	uint64_t start, end, pgoff, time;
	uint32_t older;          /* previous map of the same pid, or NO_ENTRY */
};

struct relmaps {
	struct rmap *maps;
	size_t nr, cap;
	struct ds_hashmap newest;   /* pid -> index of its newest map */
	struct ds_hashmap parent;   /* child pid -> (parent pid << 32 | 1); fork time in fork_time */
	struct ds_hashmap fork_time;
};

static int add_map(struct relmaps *rm, uint32_t pid, const struct ds_mmap_event *me, uint64_t time)
{
	bool found;
	uint64_t *head;

	if (rm->nr == rm->cap) {
		size_t ncap = rm->cap ? rm->cap * 2 : 256;
		struct rmap *n = realloc(rm->maps, ncap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		rm->maps = n;
		rm->cap = ncap;
	}
	head = ds_hashmap__upsert(&rm->newest, pid, NO_ENTRY, &found);
	if (!head)
		return -ENOMEM;
	rm->maps[rm->nr] = (struct rmap){ me->start, me->start + me->len, me->pgoff, time, (uint32_t)*head };
	*head = rm->nr++;
	return 0;
}

static int on_record(void *ctx, const struct ds_event *ev)
{
	struct relmaps *rm = ctx;
	const char *why;

	if (!ev->evsel)
		return 0;
	if (ev->hdr->type == DS_REC_MMAP || ev->hdr->type == DS_REC_MMAP2) {
		struct ds_mmap_event me;

		if (ds_mmap__parse(ev->evsel, ev->hdr, &me, &why) || me.len == 0 ||
		    me.start + me.len < me.start || (ev->hdr->misc & DS_MISC_CPUMODE_MASK) == DS_MISC_KERNEL)
			return 0;
		return add_map(rm, me.pid, &me, ev->sample.time == DS_NO_TIME ? 0 : ev->sample.time);
	}
	if (ev->hdr->type == DS_REC_FORK) {
		struct ds_task_event te;

		if (ds_task__parse(ev->evsel, ev->hdr, &te, &why) || te.pid == te.ppid)
			return 0;
		if (ds_hashmap__set(&rm->parent, te.pid, te.ppid) ||
		    ds_hashmap__set(&rm->fork_time, te.pid, te.time))
			return -ENOMEM;
	}
	return 0;
}

struct relmaps *relmaps__load(const char *path, uint64_t *lost_samples)
{
	struct ds_session_opts so = { .no_stitch = true };
	struct ds_session *s;
	struct relmaps *rm;
	char *err = NULL;

	if (!strcmp(path, "-"))
		return NULL;
	s = ds_session__open(path, &err);
	free(err);
	if (!s)
		return NULL;
	rm = calloc(1, sizeof(*rm));
	if (rm && ds_session__run(s, &so, on_record, rm) == -ENOMEM) {
		relmaps__delete(rm);
		rm = NULL;
	}
	if (lost_samples)
		*lost_samples = ds_session__stats(s)->lost_samples;
	ds_session__close(s);
	return rm;
}

/* Newest map of @pid holding @ip that existed at @time (else any holding it). */
static const struct rmap *find(const struct relmaps *rm, int32_t pid, uint64_t time, uint64_t ip)
{
	const struct rmap *any = NULL;
	uint64_t *head = ds_hashmap__find(&rm->newest, (uint64_t)(uint32_t)pid);

	/* only samples with unknown symbols come here, and a process has few maps */
	for (uint32_t i = head ? (uint32_t)*head : NO_ENTRY; i != NO_ENTRY; i = rm->maps[i].older) {
		const struct rmap *m = &rm->maps[i];

		if (ip < m->start || ip >= m->end)
			continue;
		if (m->time <= time)
			return m;
		any = m;
	}
	return any;
}

uint64_t relmaps__addr(const struct relmaps *rm, int32_t pid, uint64_t time, uint64_t ip)
{
	for (int depth = 0; rm && depth < 16; depth++) {
		const struct rmap *m = find(rm, pid, time, ip);
		uint64_t *pp, *ft;

		if (m)
			return ip - m->start + m->pgoff;
		pp = ds_hashmap__find(&rm->parent, (uint64_t)(uint32_t)pid);
		ft = ds_hashmap__find(&rm->fork_time, (uint64_t)(uint32_t)pid);
		if (!pp)
			break;
		pid = (int32_t)*pp;
		if (ft && *ft < time)
			time = *ft;
	}
	return ip;
}

void relmaps__delete(struct relmaps *rm)
{
	if (!rm)
		return;
	ds_hashmap__exit(&rm->newest);
	ds_hashmap__exit(&rm->parent);
	ds_hashmap__exit(&rm->fork_time);
	free(rm->maps);
	free(rm);
}
