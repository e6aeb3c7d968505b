// Conformance workload (tests/suites/80-conformance.sh): C++ code whose
// DWARF functions carry no linkage name -- main, extern "C" functions and
// their inlined instances (glibc's atoi, mix_c below).  binutils' addr2line,
// which perf 7.2's inline lookup runs, names such a function after its ELF
// symbol the first time an address falls in it, and after DWARF later.
#include <cstdio>
#include <cstdlib>

extern "C" {
__attribute__((always_inline)) inline unsigned long mix_c(unsigned long x, int n)
{
	for (int i = 0; i < n; i++)
		x = x * 6364136223846793005UL + (unsigned long)i;
	return x;
}

__attribute__((noinline)) unsigned long step_c(unsigned long x)
{
	return mix_c(x, 200) ^ (x >> 7);
}
}

int main(int argc, char **argv)
{
	long iters = argc > 1 ? atol(argv[1]) : 1000;
	const char *digits = argc > 2 ? argv[2] : "12345";
	unsigned long x = 1;

	for (long i = 0; i < iters * 1000; i++) {
		x = step_c(x) + (unsigned long)atoi(digits);
		x = mix_c(x, 50);
	}
	std::printf("%lu\n", x & 1);
	return 0;
}
