// SPDX-License-Identifier: MIT
/*
 * The workload of tests/suites/84-diff.sh: fixed work, the same code in
 * each function, so that shares of a profile follow the work given.
 *   diff-wl base REPS: per rep, common_work 3 units, leaf_a 1 unit
 *   diff-wl new REPS:  the same, but leaf_a does 2 units and new_func 1
 * Shares: base common 3/4, leaf_a 1/4; new common 3/6, leaf_a 2/6, new_func 1/6.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define UNIT 200000UL
/* one unit of work, the same instructions wherever it is expanded */
#define WORK(n, x) do { for (unsigned long i_ = 0; i_ < (n) * UNIT; i_++) \
	(x) = (x) * 6364136223846793005UL + 1442695040888963407UL; } while (0)

static volatile unsigned long sink;

__attribute__((noinline)) static unsigned long common_work(unsigned long x)
{
	WORK(3, x);
	return x;
}

__attribute__((noinline)) static unsigned long leaf_a(unsigned long x, unsigned long units)
{
	WORK(units, x);
	return x;
}

__attribute__((noinline)) static unsigned long new_func(unsigned long x)
{
	WORK(1, x);
	return x;
}

int main(int argc, char **argv)
{
	int new = argc > 1 && !strcmp(argv[1], "new");
	long reps = argc > 2 ? atol(argv[2]) : 10;
	unsigned long x = 1;

	for (long r = 0; r < reps; r++) {
		x = common_work(x);
		x = leaf_a(x, new ? 2 : 1);
		if (new)
			x = new_func(x);
	}
	sink = x;
	printf("%lu\n", x & 1);
	return 0;
}
