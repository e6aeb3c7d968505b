/* Conformance workload (the dup shape): two functions of one name, "spin",
 * each local to its own object of one binary, each with time of its own
 * and its own caller.  perf's symbol key is the symbol's start, so its
 * report has two entries "spin" (as for Rust's generic instances, whose
 * legacy names lose the hash that tells them apart).  Built three times:
 * -DDUP_PART=1 -DDUP_ENTRY=part_one, -DDUP_PART=2 -DDUP_ENTRY=part_two,
 * and without DUP_PART (main). */
#include <stdlib.h>

#ifdef DUP_PART
static volatile unsigned long sink;

__attribute__((noinline)) static void spin(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		sink += i * DUP_PART;
}

__attribute__((noinline)) void DUP_ENTRY(unsigned long n)
{
	spin(n);
}
#else
void part_one(unsigned long n);
void part_two(unsigned long n);

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 10;

	for (int i = 0; i < rounds; i++) {
		part_one(3000000);
		part_two(1000000);
	}
	return 0;
}
#endif
