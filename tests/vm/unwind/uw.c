/*
 * Workload for the unwinder's tests (tests/suites/83-unwind.sh), built
 * without frame pointers: calls through a shared library (libc's qsort
 * calling back), threads, a signal handler, recursion.
 *   uw MODE N   MODE: qsort | threads | signal | deep | all
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#define NOIPA __attribute__((noinline, noipa))
static volatile unsigned long sink;

NOIPA static void spin(unsigned long n) { for (unsigned long i = 0; i < n; i++) sink += i ^ (i >> 3); }
NOIPA static int cmp(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
	sink++;
	return x < y ? -1 : x > y;
}
NOIPA static void sort_some(unsigned *v, int n, unsigned seed)
{
	for (int i = 0; i < n; i++)
		v[i] = seed = seed * 1103515245u + 12345u;
	qsort(v, (size_t)n, sizeof(*v), cmp);
}
NOIPA static void do_qsort(int iters)
{
	static unsigned v[4096];
	for (int i = 0; i < iters; i++)
		sort_some(v, 4096, (unsigned)i);
}
NOIPA static void rec_b(int d, unsigned long n);
NOIPA static void rec_a(int d, unsigned long n) { if (d <= 0) { spin(n); return; } rec_b(d - 1, n); sink++; }
NOIPA static void rec_b(int d, unsigned long n) { if (d <= 0) { spin(n); return; } rec_a(d - 1, n); sink++; }

static void *thread_main(void *arg)
{
	long id = (long)arg;
	for (int i = 0; i < 40; i++)
		rec_a(3 + (int)id, 200000);
	return NULL;
}
NOIPA static void do_threads(void)
{
	pthread_t t[3];
	for (long i = 0; i < 3; i++)
		pthread_create(&t[i], NULL, thread_main, (void *)i);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
}
NOIPA static void in_handler(int d) { if (d) in_handler(d - 1); else spin(300000); sink++; }
static void handler(int sig) { in_handler(3); sink += (unsigned)sig; }
NOIPA static void do_signal(int iters)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;
	sigaction(SIGUSR1, &sa, NULL);
	for (int i = 0; i < iters; i++) {
		rec_a(2, 100000);
		raise(SIGUSR1);
	}
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "all";
	int n = argc > 2 ? atoi(argv[2]) : 10;
	int all = !strcmp(mode, "all");
	if (all || !strcmp(mode, "qsort")) do_qsort(n);
	if (all || !strcmp(mode, "threads")) do_threads();
	if (all || !strcmp(mode, "signal")) do_signal(n * 2);
	if (all || !strcmp(mode, "deep")) for (int i = 0; i < n; i++) rec_a(40 + i % 5, 100000);
	printf("%s %lu\n", mode, sink & 0xff);
	return 0;
}
