/*
 * Workload for the unwinder's vDSO test (tests/suites/83-unwind.sh): most
 * of its time in clock_gettime, which runs in the vDSO, built without
 * frame pointers.
 */
#include <stdio.h>
#include <time.h>

#define NOIPA __attribute__((noinline, noipa))
static volatile long sink;

NOIPA static void tick(int n)
{
	struct timespec ts;

	for (int i = 0; i < n; i++) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		sink += ts.tv_nsec;
	}
}
NOIPA static void outer(int n) { tick(n); sink++; }

int main(void)
{
	for (int i = 0; i < 200; i++)
		outer(20000);
	printf("%ld\n", sink & 1);
	return 0;
}
