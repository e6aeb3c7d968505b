/* A plain -O2 program built without frame pointers (tests/suites/90-real.sh):
 * recursion with a callee-saved register epilogue, a loop calling a
 * non-inlined helper, and qsort's callback through libc. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile unsigned long sink;

__attribute__((noinline)) static unsigned long mix(unsigned long x, unsigned long y)
{
	for (int i = 0; i < 64; i++)
		x = (x ^ (y + (unsigned long)i)) * 0x9e3779b97f4a7c15ul + (x >> 17);
	return x;
}

__attribute__((noinline)) static unsigned long walk(unsigned long n, unsigned long acc)
{
	unsigned long a = acc, b = n * 3;
	if (n == 0)
		return mix(a, b);
	a = walk(n - 1, mix(a, b) ^ n);
	return a + (b << 1);
}

static int cmp(const void *pa, const void *pb)
{
	unsigned long a = *(const unsigned long *)pa, b = *(const unsigned long *)pb;
	return (a > b) - (a < b);
}

__attribute__((noinline)) static void sort_some(unsigned long seed)
{
	enum { N = 4096 };
	static unsigned long v[N];
	for (int i = 0; i < N; i++)
		v[i] = seed = mix(seed, (unsigned long)i);
	qsort(v, N, sizeof v[0], cmp);
	sink += v[N / 2];
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 2000;
	for (long r = 0; r < rounds; r++) {
		sink += walk(40 + (unsigned long)(r % 23), (unsigned long)r);
		if (r % 16 == 0)
			sort_some((unsigned long)r);
	}
	printf("%lu\n", (unsigned long)sink);
	return 0;
}
