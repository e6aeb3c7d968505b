// SPDX-License-Identifier: MIT
/*
 * Workloads with known waits, for tests/suites/82-tracepoints.sh (run in
 * the kernel-vm guest under perf record -e sched:sched_switch):
 *   sleep N MS    N nanosleep()s of MS milliseconds each, in sleep_wait()
 *   pipe N MS     N blocking read()s of a pipe a timer thread writes every
 *                 MS milliseconds, in pipe_wait()
 *   mutex N MS    N pthread_mutex_lock()s of a mutex another thread holds
 *                 for MS milliseconds each time, in mutex_wait()
 *   hog MS        two threads spinning on one CPU for MS milliseconds: each
 *                 is preempted by the other, in hog_spin()
 * Each wait function is noinline with a frame pointer.  The process prints
 * what it measured itself ("waited NS": the time off CPU in the waits, their
 * wall time less the thread's CPU time in them; "wall NS": their wall time.
 * A switch-out sample and the first record after the switch-in both lie
 * within a wait, so the off-CPU time a profile shows lies between the two,
 * and a slow emulated guest makes their gap milliseconds: the syscall, the
 * tracepoint samples, the deferred unwind at the return to user space; for hog, "preempted NS": each
 * spinning thread's wall time less its CPU time, and "queued NS": both threads' time on a run queue
 * over their whole lives, which holds every preemption a profile of the process can show), the
 * references the off-CPU time is checked against.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NOIPA __attribute__((noinline, noipa))

static int n_iter, ms;
static int pfd[2];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static volatile int go, stop;
static long long waited, wall, preempted, queued;

static long long now_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* the calling thread's time off CPU since (wall0, cpu0): its wall time less its CPU time */
static long long off_cpu_since(long long wall0, long long cpu0)
{
	return (now_ns(CLOCK_MONOTONIC) - wall0) - (now_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0);
}

/* one wait that began at (wall0, cpu0) ended: its off-CPU and its wall time */
static void wait_done(long long wall0, long long cpu0)
{
	waited += off_cpu_since(wall0, cpu0);
	wall += now_ns(CLOCK_MONOTONIC) - wall0;
}

/*
 * The calling thread's time on a run queue over its whole life so far
 * (/proc/thread-self/schedstat's second field, CONFIG_SCHED_INFO), added
 * to queued: every preemption a profile can show, also those outside the
 * spin hog_account measures (the way out of pthread_create's clone, the
 * clock_gettime syscall that ends the spin); -1 when the kernel has none.
 */
static void queued_account(void)
{
	unsigned long long run, delay;
	FILE *f = fopen("/proc/thread-self/schedstat", "r");
	int n = f ? fscanf(f, "%llu %llu", &run, &delay) : 0;

	if (f)
		fclose(f);
	if (n != 2 || queued < 0)
		queued = -1;
	else
		__atomic_add_fetch(&queued, (long long)delay, __ATOMIC_SEQ_CST);
}

/* the spin of one hog thread: its time off CPU, added to preempted */
static void hog_account(long long wall0, long long cpu0)
{
	__atomic_add_fetch(&preempted, off_cpu_since(wall0, cpu0), __ATOMIC_SEQ_CST);
}

static void sleep_ms(int m)
{
	struct timespec ts = { m / 1000, (long)(m % 1000) * 1000000L };

	while (nanosleep(&ts, &ts))
		;
}

NOIPA static void sleep_wait(void)
{
	sleep_ms(ms);
}

NOIPA static void pipe_wait(void)
{
	char c;

	if (read(pfd[0], &c, 1) != 1)
		exit(1);
}

static void *pipe_feeder(void *arg)
{
	(void)arg;
	for (int i = 0; i < n_iter; i++) {
		sleep_ms(ms);
		if (write(pfd[1], "x", 1) != 1)
			exit(1);
	}
	return NULL;
}

NOIPA static void mutex_wait(void)
{
	pthread_mutex_lock(&mu);
	pthread_mutex_unlock(&mu);
}

static void *mutex_holder(void *arg)
{
	(void)arg;
	for (int i = 0; i < n_iter; i++) {
		pthread_mutex_lock(&mu);
		go = i + 1;
		sleep_ms(ms);
		pthread_mutex_unlock(&mu);
		while (go != -(i + 1))   /* the waiter got it once */
			sched_yield();
	}
	return NULL;
}

NOIPA static void hog_spin(void)
{
	volatile unsigned long x = 0;

	while (!stop)
		x++;
}

NOIPA static void hog_main_spin(void)
{
	for (volatile int k = 0; k < 100000; k++)
		;
}

static void *hog_thread(void *arg)
{
	long long w0 = now_ns(CLOCK_MONOTONIC), c0 = now_ns(CLOCK_THREAD_CPUTIME_ID);

	(void)arg;
	hog_spin();
	hog_account(w0, c0);
	queued_account();
	return NULL;
}

static void pin0(void)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(0, &s);
	sched_setaffinity(0, sizeof(s), &s);
}

int main(int argc, char **argv)
{
	pthread_t t;

	if (argc < 3)
		return 2;
	n_iter = atoi(argv[2]);
	ms = argc > 3 ? atoi(argv[3]) : 0;
	if (!strcmp(argv[1], "sleep")) {
		for (int i = 0; i < n_iter; i++) {
			long long t0 = now_ns(CLOCK_MONOTONIC), c0 = now_ns(CLOCK_THREAD_CPUTIME_ID);

			sleep_wait();
			wait_done(t0, c0);
		}
	} else if (!strcmp(argv[1], "pipe")) {
		if (pipe(pfd) || pthread_create(&t, NULL, pipe_feeder, NULL))
			return 1;
		for (int i = 0; i < n_iter; i++) {
			long long t0 = now_ns(CLOCK_MONOTONIC), c0 = now_ns(CLOCK_THREAD_CPUTIME_ID);

			pipe_wait();
			wait_done(t0, c0);
		}
		pthread_join(t, NULL);
	} else if (!strcmp(argv[1], "mutex")) {
		if (pthread_create(&t, NULL, mutex_holder, NULL))
			return 1;
		for (int i = 0; i < n_iter; i++) {
			while (go != i + 1)   /* the holder has it */
				sched_yield();
			long long t0 = now_ns(CLOCK_MONOTONIC), c0 = now_ns(CLOCK_THREAD_CPUTIME_ID);

			mutex_wait();
			wait_done(t0, c0);
			go = -(i + 1);
		}
		pthread_join(t, NULL);
	} else if (!strcmp(argv[1], "hog")) {
		pin0();   /* the new thread inherits the affinity: both on CPU 0 */
		if (pthread_create(&t, NULL, hog_thread, NULL))
			return 1;
		{
			long long w0 = now_ns(CLOCK_MONOTONIC), c0 = now_ns(CLOCK_THREAD_CPUTIME_ID);

			while (now_ns(CLOCK_MONOTONIC) - w0 < n_iter * 1000000LL)
				hog_main_spin();
			stop = 1;
			hog_account(w0, c0);
		}
		pthread_join(t, NULL);
		queued_account();
		printf("preempted %lld\nqueued %lld\n", preempted, queued);
		return 0;
	} else {
		return 2;
	}
	printf("waited %lld\nwall %lld\n", waited, wall);
	return 0;
}
