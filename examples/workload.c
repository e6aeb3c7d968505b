// SPDX-License-Identifier: MIT
/*
 * A small program for `make example` to profile live: a CPU-bound part and
 * a part in system calls, a few calls deep, built with frame pointers so
 * that classic and deferred callchains both reach main().
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

__attribute__((noinline)) static void crunch(unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		sink = sink * 6364136223846793005UL + i;
}

__attribute__((noinline)) static void copy_zeroes(int fd, unsigned n)
{
	char buf[4096];

	for (unsigned i = 0; i < n; i++)
		if (read(fd, buf, sizeof(buf)) < 0)
			exit(1);
}

__attribute__((noinline)) static void work(int fd, int depth)
{
	if (depth > 0) {
		work(fd, depth - 1);
		return;
	}
	crunch(200000);
	copy_zeroes(fd, 20);
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 0.5;
	int fd = open("/dev/zero", O_RDONLY);
	struct timespec t0, t;

	if (fd < 0)
		return 1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		work(fd, 3);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((double)(t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
	printf("workload done (%lu)\n", sink & 0xff);
	return 0;
}
