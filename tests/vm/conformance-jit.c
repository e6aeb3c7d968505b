/* Conformance workload (tests/suites/80-conformance.sh): a tiny "JIT".  It
 * copies two countdown loops into an anonymous executable mapping, names
 * them in /tmp/perf-PID.map (the perf map format: START SIZE NAME, hex) and
 * runs them, so that samples land in code only the map names.  x86-64 only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* mov eax, edi; loop: dec eax; jnz loop; ret */
static const unsigned char countdown[] = { 0x89, 0xf8, 0xff, 0xc8, 0x75, 0xfc, 0xc3 };

typedef int (*jit_fn)(int);

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 20;
	unsigned char *code = mmap(NULL, 8192, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (code == MAP_FAILED)
		return 1;
	memcpy(code, countdown, sizeof countdown);
	memcpy(code + 256, countdown, sizeof countdown);
	char path[64];
	snprintf(path, sizeof path, "/tmp/perf-%d.map", (int)getpid());
	FILE *map = fopen(path, "w");
	if (!map)
		return 1;
	fprintf(map, "%lx %zx jit_loop_one\n", (unsigned long)code, sizeof countdown);
	fprintf(map, "%lx %zx Jit::loop_two(int)\n", (unsigned long)(code + 256), sizeof countdown);
	fclose(map);
	jit_fn one = (jit_fn)(void *)code, two = (jit_fn)(void *)(code + 256);
	volatile int sink = 0;
	for (int i = 0; i < rounds; i++) {
		sink += one(2000000);
		sink += two(1000000);
	}
	printf("jit done %d\n", sink & 1);
	return 0;
}
