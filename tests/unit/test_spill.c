// SPDX-License-Identifier: MIT
/*
 * The tally (util/spill.h) against a plain in-memory reference: texts of
 * every length (empty, longer than a read chunk, longer than the memory
 * bound), with NUL and high bytes, repeated across runs; kept in memory,
 * spilled to a few runs, and to more runs than a merge's fan-in (merge
 * passes).  Then its failures: a spill directory that does not exist,
 * and a file size limit that stops the writing (a full disk's stand-in).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include "util/spill.h"
#include "check.h"

struct item {
	char *text;
	size_t len;
	uint64_t count, weight;
};

static uint64_t seed = 88172645463325252ULL;

static uint64_t rnd(void)
{
	seed ^= seed << 13;
	seed ^= seed >> 7;
	seed ^= seed << 17;
	return seed;
}

static int item_cmp(const void *pa, const void *pb)
{
	const struct item *a = pa, *b = pb;
	int c = memcmp(a->text, b->text, a->len < b->len ? a->len : b->len);

	return c ? c : (a->len > b->len) - (a->len < b->len);
}

/* Text @k of a set of @distinct: its length varies, a few are long, #0 is empty. */
static size_t make_text(char *buf, uint64_t k, size_t distinct)
{
	size_t len = k == 0 ? 0 : k % 1009 == 3 ? 300000 : k % 397 == 5 ? 70000 + k % 13 : 1 + k % 60;

	(void)distinct;
	for (size_t i = 0; i < len; i++)
		buf[i] = (char)(i < 8 ? (uint8_t)(k >> (8 * (7 - i))) : (uint8_t)(k * 31 + i));
	if (len > 9)
		buf[9] = 0;   /* a NUL inside */
	return len;
}

/*
 * @n additions of @distinct texts to a tally bound to @mem: its output
 * equals the reference's (sorted, summed), and it spilled runs in
 * [@min_runs, @max_runs].
 */
static void check_tally(size_t n, size_t distinct, size_t mem, size_t min_runs, size_t max_runs, const char *what)
{
	struct dsi_tally *t = dsi_tally__new(mem);
	struct item *ref = calloc(distinct, sizeof(*ref));
	char *buf = malloc(400000);
	size_t nr_ref = 0, got_nr = 0;
	const char *text;
	size_t len;
	uint64_t count, weight;
	int got, bad = 0, err = 0;

	if (!t || !ref || !buf) {
		CHECK(0, "%s: out of memory", what);
		return;
	}
	for (size_t k = 0; k < distinct; k++) {
		ref[k].len = make_text(buf, k, distinct);
		ref[k].text = malloc(ref[k].len + 1);
		memcpy(ref[k].text, buf, ref[k].len);
	}
	nr_ref = distinct;
	for (size_t i = 0; i < n && !err; i++) {
		uint64_t k = rnd() % distinct, c = 1 + rnd() % 1000;

		ref[k].count += c;
		ref[k].weight += c * 3 + 1;
		err = dsi_tally__add(t, ref[k].text, ref[k].len, c, c * 3 + 1);
	}
	CHECK(!err, "%s: add: %d", what, err);
	qsort(ref, nr_ref, sizeof(*ref), item_cmp);
	/* short texts of different k can be equal: the reference sums them too */
	for (size_t k = 1; k < nr_ref; k++)
		if (!item_cmp(&ref[k - 1], &ref[k])) {
			ref[k].count += ref[k - 1].count;
			ref[k].weight += ref[k - 1].weight;
			ref[k - 1].count = 0;
		}
	size_t r = 0;

	while ((got = dsi_tally__next(t, &text, &len, &count, &weight)) > 0) {
		while (r < nr_ref && !ref[r].count)
			r++;
		if (r == nr_ref || len != ref[r].len || memcmp(text, ref[r].text, len) || count != ref[r].count ||
		    weight != ref[r].weight)
			bad++;
		r++;
		got_nr++;
	}
	while (r < nr_ref && !ref[r].count)
		r++;
	CHECK(got == 0, "%s: next: %d", what, got);
	CHECK(!bad && r == nr_ref, "%s: %d of %zu texts differ from the reference, %zu of %zu read", what, bad,
	      got_nr, r, nr_ref);
	CHECK(dsi_tally__runs(t) >= min_runs && dsi_tally__runs(t) <= max_runs, "%s: %zu runs, expected %zu to %zu",
	      what, dsi_tally__runs(t), min_runs, max_runs);
	CHECK(!dsi_tally__error(t), "%s: no error message", what);
	dsi_tally__delete(t);
	for (size_t k = 0; k < nr_ref; k++)
		free(ref[k].text);
	free(ref);
	free(buf);
}

/* A spill that cannot be made, or written: the error is returned, sticks, and names the step and directory. */
static void check_failures(void)
{
	struct dsi_tally *t;
	char text[200];
	int err = 0;
	const char *s;
	size_t len;
	uint64_t count;

	memset(text, 'x', sizeof(text));
	setenv("TMPDIR", "/nonexistent-dstack-dir", 1);
	t = dsi_tally__new(0);
	for (int i = 0; i < 100000 && !err; i++) {
		text[i % 64] = (char)('a' + i % 26);
		err = dsi_tally__add(t, text, sizeof(text), 1, 0);
	}
	CHECK(err == -ENOENT, "no spill directory: %d", err);
	CHECK(dsi_tally__error(t) && strstr(dsi_tally__error(t), "creating a temporary file in /nonexistent-dstack-dir"),
	      "no spill directory: message '%s'", dsi_tally__error(t) ? dsi_tally__error(t) : "(none)");
	CHECK(dsi_tally__next(t, &s, &len, &count, NULL) == -ENOENT, "no spill directory: the error sticks");
	dsi_tally__delete(t);
	unsetenv("TMPDIR");

	/* a file size limit: pwrite fails with EFBIG (SIGXFSZ ignored), as on a full disk */
	struct rlimit old, lim;

	getrlimit(RLIMIT_FSIZE, &old);
	lim = old;
	lim.rlim_cur = 100000;
	signal(SIGXFSZ, SIG_IGN);
	if (setrlimit(RLIMIT_FSIZE, &lim)) {
		printf("SKIPPED: setrlimit(RLIMIT_FSIZE) failed: no write-failure test\n");
		return;
	}
	t = dsi_tally__new(0);
	err = 0;
	for (int i = 0; i < 200000 && !err; i++) {
		snprintf(text, sizeof(text), "%08d", i * 7919 % 200000);
		err = dsi_tally__add(t, text, 150, 1, 0);
	}
	int got = err ? err : dsi_tally__next(t, &s, &len, &count, NULL);

	CHECK(got == -EFBIG, "file size limit: %d", got);
	CHECK(dsi_tally__error(t) && strstr(dsi_tally__error(t), "writing a temporary file in /tmp"),
	      "file size limit: message '%s'", dsi_tally__error(t) ? dsi_tally__error(t) : "(none)");
	dsi_tally__delete(t);
	setrlimit(RLIMIT_FSIZE, &old);
}

int main(void)
{
	unsetenv("TMPDIR");
	check_tally(0, 1, 1 << 20, 0, 0, "empty");
	check_tally(20000, 500, 64 << 20, 0, 0, "in memory");
	check_tally(20000, 5000, 1 << 20, 2, 63, "a few runs");
	check_tally(100000, 20000, 0, 65, SIZE_MAX, "more runs than the fan-in (merge passes)");
	check_failures();
	printf("test_spill: %d passed, %d failed\n", passed, failed);
	return failed != 0;
}
