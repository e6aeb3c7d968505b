// SPDX-License-Identifier: MIT
/*
 * outbuf unit tests: outbuf_fixed2() prints what printf's "%*.2f" prints,
 * digit for digit, for the percentages report computes (a * 100.0 / b),
 * for exact ties (x.xx5 that are binary fractions: rounded to even), for
 * random doubles and for what falls back to printf.  And a heap buffer
 * (outbuf_new) writes what it was given across several flushes.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "util/outbuf.h"

static int passed, failed;

static struct outbuf out;

static void check(double v, int width)
{
	char want[64];

	out.len = 0;
	outbuf_fixed2(&out, v, width);
	snprintf(want, sizeof(want), "%*.2f", width, v);
	if (out.len != strlen(want) || memcmp(out.buf, want, out.len)) {
		failed++;
		printf("FAIL %.17g width %d: '%.*s', printf '%s'\n", v, width, (int)out.len, out.buf, want);
	} else {
		passed++;
	}
}

/* 1 MiB of numbered lines through a heap buffer into a temporary file, read back */
static void check_heap_buffer(void)
{
	FILE *f = tmpfile();
	struct outbuf *o = f ? outbuf_new(fileno(f)) : NULL;
	char line[32], got[32];
	int i, bad = 0;

	if (!o) {
		failed++;
		printf("FAIL outbuf_new or tmpfile\n");
		if (f)
			fclose(f);
		return;
	}
	for (i = 0; i < 100000; i++) {
		outbuf_dec(o, (uint64_t)i, 8, '0');
		outbuf_putc(o, '\n');
	}
	outbuf_flush(o);
	if (o->error || o->flushes < 3)
		bad = 1;
	outbuf_delete(o);
	rewind(f);
	for (i = 0; i < 100000 && !bad; i++) {
		snprintf(line, sizeof(line), "%08d\n", i);
		if (!fgets(got, sizeof(got), f) || strcmp(got, line))
			bad = 1;
	}
	if (bad || fgets(got, sizeof(got), f)) {
		failed++;
		printf("FAIL heap buffer: line %d\n", i);
	} else {
		passed++;
	}
	fclose(f);
	outbuf_delete(NULL);
}

int main(void)
{
	uint64_t seed = 42;

	outbuf_init(&out, -1);
	/* report's percentages: a share of a total */
	for (uint64_t b = 1; b <= 2000; b++)
		for (uint64_t a = 0; a <= b; a += 1 + b / 97)
			check(a * 100.0 / b, 7);
	/* exact ties in binary: 0.125 -> 0.12, 0.375 -> 0.38, 2.5/100 steps */
	for (int i = 0; i < 4000; i++)
		check(i / 8.0 / 100.0 * 100.0 + 0.005 * (i & 1), 0);
	for (int i = 0; i < 400; i++)
		check(i * 0.125, 7), check(i * 0.005, 0), check(i * 0.015, 9);
	/* random doubles of every size up to the fast path's limit */
	for (int i = 0; i < 200000; i++) {
		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		double v = (double)(seed >> 11) / (double)(1ULL << 53) * pow(10, (int)(seed % 16) - 3);

		check(v, (int)(seed >> 60));
	}
	/* the printf fallbacks */
	check(-1.5, 7);
	check(1e20, 0);
	check(NAN, 7);
	check(INFINITY, 7);
	check(0.0, 7);
	check(100.0, 7);
	check_heap_buffer();
	printf("test_outbuf: %d passed, %d failed\n", passed, failed);
	return failed != 0;
}
