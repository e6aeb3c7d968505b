/* SPDX-License-Identifier: MIT */
/*
 * Starting a helper thread where it can run at once.
 *
 * Linux queues a new thread on a CPU of the scheduler's choosing, often
 * its creator's, even with another CPU idle, where it waits for the next
 * balancing tick.  Starting it on the caller's allowed CPUs but the
 * caller's own, and giving it back the whole set as its first act, puts it
 * on an idle CPU from the first instruction and leaves it free to move
 * after (docs/performance.md).
 */
#ifndef DSTACK_SPAWN_H
#define DSTACK_SPAWN_H

#include <pthread.h>

/*
 * pthread_create(@t, NULL, @fn, @arg), first run on another CPU when the
 * caller may use several (else where the scheduler puts it).  0 or an
 * errno value, as pthread_create.
 */
int dsi_spawn_elsewhere(pthread_t *t, void *(*fn)(void *), void *arg);

#endif
