// SPDX-License-Identifier: MIT
/*
 * The session's reading thread (ds_session_opts.reader_thread) reads and
 * orders, and the calling thread parses, stitches and runs the sideband
 * and the callback: on every corpus recording the two callbacks see the
 * same events, with the same fields and callchains, in the same order
 * (sideband and callback interleaved), as on one thread; with the
 * default budget and with budgets small enough that records are copied
 * and samples given up early; and a callback's error stops the run at
 * the same event either way.
 * usage: test_session SYMFS KALLSYMS (the recordings: SYMFS/../../data)
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dstack/log.h"
#include "dstack/session.h"
#include "check.h"

/* The calls a run made: a digest of each, in order. */
struct trace {
	uint64_t *v;
	size_t n, cap;
	size_t stop_at;      /* the callback fails at its stop_at-th call (0: never) */
	size_t nr_callback;
};

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h * 0x100000001b3ull;
}

static uint64_t digest(int kind, const struct ds_event *ev)
{
	const struct ds_sample *s = &ev->sample;
	uint64_t h = mix((uint64_t)kind, ev->hdr->type);

	h = mix(h, ev->offset);
	h = mix(h, ev->hdr->size);
	h = mix(h, s->time);
	h = mix(h, s->tid);
	h = mix(h, ev->stitch);
	h = mix(h, ev->cookie);
	h = mix(h, ev->record_time);
	h = mix(h, ev->cookie_passed);
	h = mix(h, s->callchain_nr);
	for (uint64_t i = 0; s->callchain && i < s->callchain_nr; i++)
		h = mix(h, s->callchain[i]);
	h = mix(h, s->raw_size);
	for (uint32_t i = 0; s->raw && i < s->raw_size; i++)
		h = mix(h, ((const uint8_t *)s->raw)[i]);
	h = mix(h, s->stack_user_size);
	if (s->stack_user && s->stack_user_size)   /* its ends: the copy kept all of it */
		h = mix(mix(h, ((const uint8_t *)s->stack_user)[0]),
			((const uint8_t *)s->stack_user)[s->stack_user_size - 1]);
	/* the record's bytes as the callback sees them */
	for (size_t i = 0; i < ev->hdr->size; i++)
		h = mix(h, ((const uint8_t *)ev->hdr)[i]);
	return h;
}

static int note(struct trace *t, uint64_t d)
{
	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 4096;
		uint64_t *v = realloc(t->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		t->v = v;
		t->cap = cap;
	}
	t->v[t->n++] = d;
	return 0;
}

static int on_sideband(void *ctx, const struct ds_event *ev)
{
	return note(ctx, digest(1, ev));
}

static int on_event(void *ctx, const struct ds_event *ev)
{
	struct trace *t = ctx;

	if (t->stop_at && ++t->nr_callback == t->stop_at)
		return -ECANCELED;
	return note(t, digest(2, ev));
}

static void quiet(enum ds_log_level level, const char *fmt, va_list ap)
{
	(void)level;
	(void)fmt;
	(void)ap;
}

/* One run; its return value, its trace in @t, its stats in @st. */
static int run(const char *path, bool thread, size_t budget, struct trace *t, struct ds_session_stats *st)
{
	struct ds_session *s = ds_session__open(path);
	struct ds_session_opts o = { .reader_thread = thread, .memory_budget = budget,
				     .sideband = on_sideband, .sideband_ctx = t };
	int ret;

	if (!s)
		return INT_MIN;
	ret = ds_session__run(s, &o, on_event, t);
	*st = *ds_session__stats(s);
	ds_session__close(s);
	return ret;
}

static void compare(const char *path, size_t budget, size_t stop_at)
{
	struct trace one = { .stop_at = stop_at }, two = { .stop_at = stop_at };
	struct ds_session_stats s1, s2;
	int r1 = run(path, false, budget, &one, &s1), r2 = run(path, true, budget, &two, &s2);
	size_t i = 0;

	while (i < one.n && i < two.n && one.v[i] == two.v[i])
		i++;
	CHECK(r1 != INT_MIN && r1 == r2, "%s budget %zu stop %zu: returned %d on one thread, %d on two", path, budget,
	      stop_at, r1, r2);
	CHECK(one.n == two.n && i == one.n, "%s budget %zu stop %zu: %zu calls on one thread, %zu on two, the first %zu alike",
	      path, budget, stop_at, one.n, two.n, i);
	/* (a run stopped early: the reading thread may have read on) */
	CHECK(stop_at || !memcmp(&s1, &s2, sizeof(s1)), "%s budget %zu: the stats differ", path, budget);
	CHECK(one.n > 0, "%s: no calls", path);
	free(one.v);
	free(two.v);
}

int main(int argc, char **argv)
{
	char dir[PATH_MAX];
	struct dirent *e;
	DIR *d;
	int files = 0;

	if (argc < 2) {
		printf("usage: test_session SYMFS KALLSYMS\n");
		return 2;
	}
	snprintf(dir, sizeof(dir), "%s/../../data", argv[1]);
	d = opendir(dir);
	if (!d) {
		printf("FAIL no recordings at %s\n", dir);
		return 1;
	}
	ds_set_log(quiet);
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		char path[PATH_MAX + 256];

		if (len < 6 || strcmp(e->d_name + len - 5, ".data"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		compare(path, 0, 0);
		compare(path, 256u << 10, 0);   /* records copied, samples given up early */
		compare(path, 16u << 10, 0);
		compare(path, 0, 1000);         /* a callback's error */
		files++;
	}
	closedir(d);
	CHECK(files >= 10, "%d recordings", files);
	printf("test_session: %d recordings; %d passed, %d failed\n", files, passed, failed);
	return failed != 0;
}
