// SPDX-License-Identifier: MIT
/* Helper threads started on another CPU than their creator's (see spawn.h). */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>

#include "record/spawn.h"

struct start {
	void *(*fn)(void *);
	void *arg;
	cpu_set_t allowed;   /* the creator's CPUs, given back at the start */
};

static void *trampoline(void *p)
{
	struct start st = *(struct start *)p;

	free(p);
	sched_setaffinity(0, sizeof(st.allowed), &st.allowed);   /* best effort: pinned still works */
	return st.fn(st.arg);
}

int dsi_spawn_elsewhere(pthread_t *t, void *(*fn)(void *), void *arg)
{
	struct start *st = malloc(sizeof(*st));
	pthread_attr_t attr;
	cpu_set_t others;
	int cpu = sched_getcpu(), err;

	/* a single CPU, more CPUs than a cpu_set_t holds, or no memory: as usual */
	if (!st || cpu < 0 || cpu >= CPU_SETSIZE || sched_getaffinity(0, sizeof(st->allowed), &st->allowed) ||
	    CPU_COUNT(&st->allowed) < 2 || pthread_attr_init(&attr)) {
		free(st);
		return pthread_create(t, NULL, fn, arg);
	}
	st->fn = fn;
	st->arg = arg;
	others = st->allowed;
	CPU_CLR(cpu, &others);
	err = pthread_attr_setaffinity_np(&attr, sizeof(others), &others);
	err = err ? pthread_create(t, NULL, trampoline, st) : pthread_create(t, &attr, trampoline, st);
	pthread_attr_destroy(&attr);
	if (err)
		free(st);
	return err;
}
