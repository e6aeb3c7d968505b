/*
 * tests/suites/90-real.sh: calls through the PLT in a hot loop (-fno-builtin
 * keeps memcpy and strlen calls), linked by gold without the PLT's CFI
 * (--no-ld-generated-unwind-info), as lld and mold link every program,
 * with frame pointers (so that perf's step there lands on a real frame):
 * samples land in the stubs, where perf's libdw walk takes the frame
 * pointer and dstack reads the stub's code (docs/unwinding.md).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((noinline)) static size_t work(char *dst, const char *src, size_t n)
{
	size_t t = 0;

	for (int i = 0; i < 64; i++) {
		memcpy(dst, src, n);
		t += strlen(dst);
		dst[i % n] = (char)('a' + (i & 7));
		/*
		 * abs() is a few instructions, so its stub holds ~10% of
		 * the samples: memcpy's and strlen's stubs alone held 0-9
		 * of ~530, too few for the suite's check to be sure of one
		 */
		for (int j = 0; j < 8; j++)
			t += (size_t)abs(i - j);
	}
	return t;
}

__attribute__((noinline)) static size_t outer(int k)
{
	char a[64], b[64];
	size_t t = 0;

	memset(b, 'x', 40);
	b[40] = 0;
	for (int i = 0; i < k; i++)
		t += work(a, b, 41);
	return t;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 200000;

	printf("%zu\n", outer(n));
	return 0;
}
