// SPDX-License-Identifier: MIT
/*
 * The session's reading thread (ds_session_opts.reader_thread) reads and
 * orders, and the calling thread parses, stitches and runs the sideband
 * and the callback: on every corpus recording the two callbacks see the
 * same events, with the same fields and callchains, in the same order
 * (sideband and callback interleaved), as on one thread; with the
 * default budget and with budgets small enough that records are copied
 * and samples given up early; and a callback's error stops the run at
 * the same event either way.  And a file cut short while it is read
 * ends the run with an error that says so, after the events before the
 * cut.
 * usage: test_session SYMFS KALLSYMS (the recordings: SYMFS/../../data)
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include "dstack/abi.h"
#include "dstack/log.h"
#include "dstack/session.h"
#include "check.h"

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22   /* Linux 5.14 */
#endif

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

/* A run that cuts its input to @to bytes at the first sample, as another program might. */
struct cut {
	const char *path;
	off_t to;
	bool done;
	size_t events;
};

static int on_cut(void *ctx, const struct ds_event *ev)
{
	struct cut *c = ctx;

	if (!c->done && ev->hdr->type == DS_REC_SAMPLE) {
		c->done = true;
		if (truncate(c->path, c->to))
			return -errno;
	}
	c->events++;
	return 0;
}

/* @src copied to @dst; false on failure. */
static bool copy_file(const char *src, const char *dst)
{
	FILE *in = fopen(src, "rb"), *out = fopen(dst, "wb");
	char buf[1 << 16];
	size_t n;
	bool ok = in && out;

	while (ok && (n = fread(buf, 1, sizeof(buf), in)) > 0)
		ok = fwrite(buf, 1, n, out) == n;
	ok = ok && !ferror(in);
	if (in)
		fclose(in);
	if (out && fclose(out))
		ok = false;
	return ok;
}

/*
 * Can the source map its windows here (session.h: a kernel with
 * MADV_POPULATE_READ, SIGBUS left to the default before any run)?  Else
 * it reads them with pread, and a cut file just ends early.
 */
static bool windows_mapped(const char *path)
{
	struct sigaction sa;
	int fd = open(path, O_RDONLY);
	void *p = fd >= 0 ? mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
	bool ok = p != MAP_FAILED && !madvise(p, 4096, MADV_POPULATE_READ);

	if (p != MAP_FAILED)
		munmap(p, 4096);
	if (fd >= 0)
		close(fd);
	return ok && !sigaction(SIGBUS, NULL, &sa) && !(sa.sa_flags & SA_SIGINFO) && sa.sa_handler == SIG_DFL;
}

/*
 * @src (smaller than a window: mapped whole at its first read) cut to @to
 * bytes while it is read on one thread.  The run fails after the events
 * before the cut, saying first that the file shrank (its sizes), then
 * the reader's words.  Mapped, pages cut off whole read as zeros and are
 * counted (a cut inside a page leaves its tail to read as zeros, no
 * fault); read by pread, the reader meets the end early.
 */
static void cut_while_read(const char *src, bool mapped, bool at_page)
{
	const char *tmp = getenv("TMPDIR");
	char dst[PATH_MAX];
	int fd;

	struct cut c = { .path = dst };
	struct ds_session_opts o = { 0 };
	struct ds_session *s;
	const char *msg;
	struct stat st;
	int ret;

	snprintf(dst, sizeof(dst), "%s/dstack-test-cut-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	fd = mkstemp(dst);
	if (fd < 0 || close(fd) || !copy_file(src, dst) || stat(dst, &st)) {
		CHECK(false, "%s: no copy at %s", src, dst);
		unlink(dst);
		return;
	}
	c.to = at_page ? st.st_size / 2 / 4096 * 4096 : st.st_size / 2 + 1;
	s = ds_session__open(dst);
	CHECK(s != NULL, "%s: not opened", dst);
	if (!s) {
		unlink(dst);
		return;
	}
	ret = ds_session__run(s, &o, on_cut, &c);
	msg = ds_errmsg();
	ds_session__close(s);
	unlink(dst);
	CHECK(c.done && c.events > 1, "%s cut: %zu events came before the end", src, c.events);
	CHECK(ret < 0, "%s cut to %lld bytes: returned %d", src, (long long)c.to, ret);
	CHECK(strstr(msg, "the file shrank while it was read (") && strstr(msg, "(then: "), "%s cut to %lld bytes: \"%s\"",
	      src, (long long)c.to, msg);
	CHECK(!!strstr(msg, "read as zeros") == (mapped && at_page), "%s cut to %lld bytes (%s): \"%s\"", src,
	      (long long)c.to, mapped ? "mapped" : "read by pread", msg);
}

int main(int argc, char **argv)
{
	char dir[PATH_MAX];
	struct dirent *e;
	DIR *d;
	int files = 0;
	char cut_src[PATH_MAX + 32];
	bool mapped;

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
	snprintf(cut_src, sizeof(cut_src), "%s/cxx.defer.data", dir);
	mapped = windows_mapped(cut_src);   /* (before any run: the source's handler is not there yet) */
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
	cut_while_read(cut_src, mapped, false);
	cut_while_read(cut_src, mapped, true);
	printf("test_session: %d recordings; %d passed, %d failed\n", files, passed, failed);
	return failed != 0;
}
