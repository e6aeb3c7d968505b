/* Conformance workload (the named shape): threads that rename themselves
 * (pthread_setname_np, prctl) while sampled, and a main thread renamed
 * before it starts them: COMM records that are not exec's.  With a second
 * argument "forever", the threads go on until the process is killed (a
 * thread to record with perf record -t, the tidt shape). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

static volatile unsigned long sink;
static int forever;

__attribute__((noinline)) static void spin(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		sink += i * 7;
}

__attribute__((noinline)) static void work_a(unsigned long n) { spin(n); }
__attribute__((noinline)) static void work_b(unsigned long n) { spin(n / 2); spin(n / 2); }

static void *thread_main(void *arg)
{
	long id = (long)arg;
	char name[16];

	work_a(3000000);
	snprintf(name, sizeof(name), "worker-%ld", id);
	pthread_setname_np(pthread_self(), name);
	work_b(3000000);
	snprintf(name, sizeof(name), "again-%ld", id);
	prctl(PR_SET_NAME, name);
	work_a(3000000);
	while (forever)
		work_b(3000000);
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 3;
	pthread_t t[3];

	if (n > 3)
		n = 3;
	forever = argc > 2 && !strcmp(argv[2], "forever");
	work_a(2000000);
	prctl(PR_SET_NAME, "renamed-main");
	for (long i = 0; i < n; i++)
		pthread_create(&t[i], NULL, thread_main, (void *)i);
	work_b(4000000);
	for (long i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	return 0;
}
