/* Conformance workload (the dld shape): two libraries opened, called and
 * closed in turn, so that each is mapped, unmapped and mapped again while
 * sampled (built with -DPLUG, the same file gives the libraries). */
#ifdef PLUG
static volatile unsigned long plug_sink;

__attribute__((noinline)) static void plug_inner(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		plug_sink += i ^ PLUG;
}

__attribute__((noinline)) void PLUG_FN(unsigned long n) { plug_inner(n); }
#else
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

static volatile unsigned long sink;

__attribute__((noinline)) static void local_work(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		sink += i;
}

static void run(const char *lib, const char *fn, unsigned long n)
{
	void *h = dlopen(lib, RTLD_NOW);
	void (*f)(unsigned long);

	if (!h) {
		fprintf(stderr, "%s\n", dlerror());
		exit(1);
	}
	f = (void (*)(unsigned long))dlsym(h, fn);
	if (!f) {
		fprintf(stderr, "%s\n", dlerror());
		exit(1);
	}
	f(n);
	local_work(n / 4);
	dlclose(h);
}

int main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 4;

	for (int i = 0; i < iters; i++) {
		run("/job/libplug1.so", "plug_one", 3000000);
		run("/job/libplug2.so", "plug_two", 3000000);
	}
	return 0;
}
#endif
