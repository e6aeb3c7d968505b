/*
 * SFrame workload for the unwinder's tests: all its time in its own code
 * (built with -Wa,--gsframe), none in libraries, so that copies with the
 * DWARF unwind tables removed are unwound from .sframe alone.
 */
#include <stdio.h>
#include <stdlib.h>

#define NOIPA __attribute__((noinline, noipa))
static volatile unsigned long sink;

NOIPA static void spin(unsigned long n) { for (unsigned long i = 0; i < n; i++) sink += i ^ (i >> 3); }
NOIPA static void leafy(int n) { unsigned long s = 0; for (int i = 0; i < n; i++) s += (unsigned long)i * 3; sink += s; }
NOIPA static void rec_b(int d, unsigned long n);
NOIPA static void rec_a(int d, unsigned long n) { if (d <= 0) { spin(n); leafy((int)n); return; } rec_b(d - 1, n); sink++; }
NOIPA static void rec_b(int d, unsigned long n) { if (d <= 0) { leafy((int)n); return; } rec_a(d - 1, n); sink++; }
NOIPA static void big_frame(int n) { volatile char buf[5000]; for (int i = 0; i < n; i++) buf[i % 5000] = (char)i; sink += buf[7]; rec_a(3, (unsigned long)n); }

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 10;
	for (int i = 0; i < n; i++) {
		rec_a(5 + i % 4, 300000);
		big_frame(200000);
	}
	printf("%lu\n", sink & 0xff);
	return 0;
}
