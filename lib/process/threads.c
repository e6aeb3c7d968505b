// SPDX-License-Identifier: MIT
/*
 * Threads, from COMM, FORK and EXIT records: found by tid, each with the
 * maps of its process and the history of its comm, so that a sample
 * printed late gets the name its thread had when it was taken.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "util/grow.h"
#include "process/machine_int.h"

void dsi_thread__delete(struct ds_thread *t)
{
	dsi_maps__put(t->maps);
	dsi_maps__put(t->reborn);
	free(t->comms);
	free(t);
}

/* @comm from @time on; the ":TID" placeholder (or an inherited name) is replaced, not kept. */
static int thread__set_comm(struct ds_thread *t, const char *comm, uint64_t time)
{
	struct comm_entry *n;

	if (!t->comm_set || !t->nr_comms) {
		t->nr_comms = 0;
		time = 0;
	}
	n = dsi_grow(t->comms, &t->cap_comms, t->nr_comms + 1, sizeof(*n), 2);
	if (!n)
		return -ENOMEM;
	t->comms = n;
	t->comms[t->nr_comms++] = (struct comm_entry){ time, comm };
	t->comm = comm;
	t->comm_set = true;
	return 0;
}

const char *ds_thread__comm_at(const struct ds_thread *t, uint64_t time)
{
	size_t lo = 0, hi = t->nr_comms;

	if (!t->nr_comms)
		return t->comm;
	while (lo < hi) { /* first entry newer than @time */
		size_t mid = (lo + hi) / 2;

		if (t->comms[mid].time <= time)
			lo = mid + 1;
		else
			hi = mid;
	}
	return t->comms[lo ? lo - 1 : 0].comm;
}

const char *ds_thread__comm(const struct ds_thread *t) { return t->comm; }
uint64_t ds_thread__exit_time(const struct ds_thread *t) { return t->exit_time; }
int32_t ds_thread__pid(const struct ds_thread *t) { return t->pid; }

static struct ds_thread *machine__find_thread(struct ds_machine *m, int32_t tid)
{
	uint64_t *v;

	if (m->last_thread && m->last_thread->tid == tid)
		return m->last_thread;
	v = dsi_hashmap__find(&m->threads, (uint32_t)tid);
	if (v)
		m->last_thread = (struct ds_thread *)(uintptr_t)*v;
	return v ? m->last_thread : NULL;
}

/* The maps a new thread starts with: @maps if given, else its process leader's, else new ones. */
static struct ds_maps *machine__maps_for(struct ds_machine *m, int32_t pid, int32_t tid, struct ds_maps *maps)
{
	struct ds_thread *leader;

	if (maps) {
		maps->refs++;
		return maps;
	}
	if (pid != tid && pid >= 0 && (leader = machine__find_thread(m, pid)) && leader->pid == pid) {
		leader->maps->refs++;
		return leader->maps;
	}
	return dsi_maps__new(&m->live_maps);
}

/* A new thread for @tid, in place of any older one; NULL on ENOMEM. */
static struct ds_thread *machine__new_thread(struct ds_machine *m, int32_t pid, int32_t tid, struct ds_maps *maps)
{
	struct ds_thread *t = calloc(1, sizeof(*t)), *old;

	if (!t)
		return NULL;
	t->pid = pid;
	t->tid = tid;
	/* perf names the idle task of every CPU "swapper" */
	snprintf(t->placeholder, sizeof(t->placeholder), ":%d", tid);
	t->comm = tid == 0 ? ds_machine__intern(m, "swapper") : t->placeholder;
	t->maps = machine__maps_for(m, pid, tid, maps);
	old = machine__find_thread(m, tid);
	/* no maps: not put in the table (it would keep a freed thread) */
	if (!t->maps || dsi_hashmap__set(&m->threads, (uint32_t)tid, (uint64_t)(uintptr_t)t)) {
		dsi_thread__delete(t);
		return NULL;
	}
	if (old)
		dsi_thread__delete(old);
	m->last_thread = t;   /* never the freed one */
	return t;
}

/*
 * Threads made for a tid that no record introduced (a sample's, mostly)
 * and that nothing changed since (thread__fresh) are made again the same
 * if forgotten: their ":TID" name is the placeholder in the thread (not
 * interned: such a recording interns no string per tid), and their maps
 * were their own and empty.  A machine keeps at most FRESH_MAX of them, so
 * a recording of ever new tids (hostile, or of countless short tasks whose
 * records were lost) holds a bounded number of threads; the oldest go.
 */
#define FRESH_MAX 65536

static bool thread__fresh(const struct ds_thread *t)
{
	return !t->comm_set && !t->nr_comms && !t->exit_time && !t->exited_untimed &&
	       t->maps->refs == 1 && !t->maps->nr && (t->pid < 0 || t->pid == t->tid);
}

/*
 * Forget the oldest fresh thread but the one found last (its caller may
 * still use it: it goes back in the ring).  A tid whose thread changed
 * since just leaves the ring.
 */
static void machine__forget_oldest_fresh(struct ds_machine *m)
{
	int32_t tid = m->fresh[m->fresh_head];
	uint64_t *v = dsi_hashmap__find(&m->threads, (uint32_t)tid);
	struct ds_thread *t = v ? (struct ds_thread *)(uintptr_t)*v : NULL;

	m->fresh_head = (m->fresh_head + 1) % FRESH_MAX;
	m->fresh_nr--;
	if (!t || !thread__fresh(t))
		return;
	if (t == m->last_thread) {
		m->fresh[(m->fresh_head + m->fresh_nr++) % FRESH_MAX] = tid;
		return;
	}
	dsi_hashmap__del(&m->threads, (uint32_t)tid, NULL);
	dsi_thread__delete(t);
}

/* @t, just made for a tid no record introduced: in the ring, past whose end the oldest go. */
static void machine__note_fresh(struct ds_machine *m, struct ds_thread *t)
{
	if (!m->fresh && !(m->fresh = malloc(FRESH_MAX * sizeof(*m->fresh))))
		return;   /* kept, then: memory is short anyway */
	m->fresh[(m->fresh_head + m->fresh_nr++) % FRESH_MAX] = t->tid;
}

struct ds_thread *ds_machine__thread(struct ds_machine *m, int32_t pid, int32_t tid)
{
	struct ds_thread *t = machine__find_thread(m, tid);

	if (t) {
		if (t->pid < 0 && pid >= 0)
			t->pid = pid;
		return t;
	}
	/*
	 * A thread of a process no record introduced yet (perf record -t: the
	 * thread's COMM comes before its process's) gets its process leader
	 * made first, whose maps it shares, as perf's thread__init_maps: the
	 * MMAPs that come for the process then serve its threads.
	 */
	if (pid >= 0 && pid != tid && !machine__find_thread(m, pid) && !ds_machine__thread(m, pid, pid))
		return NULL;
	/* (twice at most: the found-last thread goes back once) */
	for (int i = 0; i < 2 && m->fresh_nr == FRESH_MAX; i++)
		machine__forget_oldest_fresh(m);
	t = machine__new_thread(m, pid, tid, NULL);
	if (t && thread__fresh(t) && m->fresh_nr < FRESH_MAX)
		machine__note_fresh(m, t);
	return t;
}

bool ds_thread__exited_by(const struct ds_thread *t, uint64_t when)
{
	/* without timestamps, the order events are processed in is all there is */
	if (when == DS_NO_TIME)
		return t->exited_untimed;
	return t->exit_time && when > t->exit_time;
}

struct ds_thread *ds_machine__script_thread(struct ds_machine *m, struct ds_thread *t, uint64_t when)
{
	if (!t || !ds_thread__exited_by(t, when))
		return t;
	if (t->pid >= 0 && t->pid != t->tid)
		return t;
	if (!m->forgotten) {
		m->forgotten = calloc(1, sizeof(*m->forgotten));
		if (!m->forgotten || !(m->forgotten_maps = dsi_maps__new(&m->live_maps))) {
			free(m->forgotten);
			m->forgotten = NULL;
			return NULL;
		}
		m->forgotten->pid = m->forgotten->tid = -1;
		m->forgotten->comm = "";
	}
	/* (only borrowed: the thread returned is used at once, for this one sample) */
	m->forgotten->maps = t->reborn ? t->reborn : m->forgotten_maps;
	return m->forgotten;
}

int dsi_machine__process_fork(struct ds_machine *m, const struct ds_event *ev)
{
	struct ds_task_event te;
	const char *why;
	struct ds_thread *parent, *child;
	struct ds_maps *maps;
	const char *comm;
	bool same_process, parent_named;

	if (ds_task__parse(ev->evsel, ev->hdr, &te, &why))
		return 0;
	parent = ds_machine__thread(m, (int32_t)te.ppid, (int32_t)te.ptid);
	if (!parent)
		return -ENOMEM;
	comm = parent->comm;   /* now: a child of the parent's own tid replaces (frees) it */
	parent_named = parent->comm_set || parent->tid == 0;
	same_process = te.pid == te.ppid;
	maps = same_process ? parent->maps : dsi_maps__clone(parent->maps);
	if (!maps)
		return -ENOMEM;
	child = machine__new_thread(m, (int32_t)te.pid, (int32_t)te.tid, maps);
	if (!same_process)
		dsi_maps__put(maps); /* the child holds its own reference */
	if (!child)
		return -ENOMEM;
	/*
	 * the child starts with its parent's name, as perf's thread__fork,
	 * when the parent has one (a COMM, or the idle task's "swapper"): a
	 * parent known only by its tid leaves the child its own ":TID".  A
	 * later COMM adds to the history.
	 */
	if (!parent_named)
		return 0;
	return thread__set_comm(child, comm, 0);
}

int dsi_machine__process_comm(struct ds_machine *m, const struct ds_event *ev)
{
	struct ds_comm_event ce;
	const char *why;
	struct ds_thread *t;

	if (ds_comm__parse(ev->evsel, ev->hdr, &ce, &why))
		return 0;
	t = ds_machine__thread(m, (int32_t)ce.pid, (int32_t)ce.tid);
	if (!t)
		return -ENOMEM;
	t->exit_time = 0;   /* a COMM after an EXIT names a new thread of that tid */
	t->exited_untimed = false;
	return thread__set_comm(t, ds_machine__intern(m, ce.comm), ev->sample.time == DS_NO_TIME ? 0 : ev->sample.time);
}

/* The thread's EXIT: its time is kept (ds_thread__exit_time); nothing else changes. */
int dsi_machine__process_exit(struct ds_machine *m, const struct ds_event *ev)
{
	struct ds_task_event te;
	const char *why;
	struct ds_thread *t;

	if (ds_task__parse(ev->evsel, ev->hdr, &te, &why))
		return 0;
	t = ds_machine__thread(m, (int32_t)te.pid, (int32_t)te.tid);
	if (!t)
		return -ENOMEM;
	bool first = !t->exit_time && !t->exited_untimed;

	/* the first EXIT's time: perf forgets the thread there (kernels of the
	 * 3.x era wrote two EXIT records a task) */
	if (ev->sample.time == DS_NO_TIME)
		t->exited_untimed = true;
	else if (!t->exit_time)
		t->exit_time = ev->sample.time;
	/* remembered, once a thread, for dsi_machine__release_exited_maps (failing to: its maps stay) */
	int32_t *n = first ? dsi_grow(m->exited, &m->cap_exited, m->nr_exited + 1, sizeof(*n), 256) : NULL;

	if (n) {
		m->exited = n;
		n[m->nr_exited++] = t->tid;
	}
	return 0;
}

void dsi_machine__release_exited_maps(struct ds_machine *m)
{
	for (size_t i = 0; i < m->nr_exited; i++) {
		struct ds_thread *t = machine__find_thread(m, m->exited[i]);
		struct ds_maps *empty;

		/* (a tid used again since is another thread: it stays) */
		if (t && (t->exit_time || t->exited_untimed) && t->maps->nr && (empty = dsi_maps__new(&m->live_maps))) {
			dsi_maps__put(t->maps);   /* freed with the last of its process's threads to exit */
			t->maps = empty;
		}
	}
	m->nr_exited = 0;
}
