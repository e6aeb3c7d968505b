// SPDX-License-Identifier: MIT
/*
 * The rewriting of a recording for older perf (ds_inject, dstack/inject.h)
 * through the public API: a deferred recording written here (a sample
 * whose deferred record follows it, one whose record never comes, the
 * record itself), run through a
 * session into an injector, read back: the stitched sample carries the
 * merged chain, the unresolved one its kernel chain without marker and
 * cookie, the deferred record is gone, the attr has
 * lost its defer bits, the features came across, and the counts say so.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "dstack/inject.h"
#include "dstack/log.h"
#include "dstack/session.h"
#include "dstack/writer.h"
#include "check.h"

#define KIP1 0xffffffff81000100ULL
#define KIP2 0xffffffff81000200ULL
#define UIP 0x401000ULL

static void attr_of(struct ds_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->type = 1;   /* software: cpu-clock */
	a->sample_type = DS_SAMPLE_IP | DS_SAMPLE_TID | DS_SAMPLE_TIME | DS_SAMPLE_CALLCHAIN;
	a->flags = 1ULL << DS_ATTR_SAMPLE_ID_ALL | 1ULL << DS_ATTR_DEFER_CALLCHAIN;
}

static void header(uint64_t *r, uint32_t type, uint16_t misc, size_t words)
{
	struct ds_event_header h = { type, misc, (uint16_t)(8 * words) };

	memcpy(r, &h, 8);
}

/* a sample of @tid at @time: one kernel ip, then the deferred marker and @cookie */
static size_t sample(uint64_t *r, uint32_t tid, uint64_t time, uint64_t kip, uint64_t cookie)
{
	r[1] = kip;
	r[2] = (uint64_t)tid << 32 | tid;
	r[3] = time;
	r[4] = 4;
	r[5] = DS_CONTEXT_KERNEL;
	r[6] = kip;
	r[7] = DS_CONTEXT_USER_DEFERRED;
	r[8] = cookie;
	header(r, DS_REC_SAMPLE, DS_MISC_KERNEL, 9);
	return 9 * 8;
}

static size_t deferred(uint64_t *r, uint32_t tid, uint64_t time, uint64_t cookie)
{
	r[1] = cookie;
	r[2] = 2;
	r[3] = DS_CONTEXT_USER;
	r[4] = UIP;
	r[5] = (uint64_t)tid << 32 | tid;
	r[6] = time;
	header(r, DS_REC_CALLCHAIN_DEFERRED, DS_MISC_USER, 7);
	return 7 * 8;
}

static int write_input(const char *path)
{
	struct ds_attr a;
	const uint64_t ids[] = { 1 };
	uint64_t r[16];
	struct ds_writer *w = ds_writer__open(path, false);
	int ret = 0;

	if (!w)
		return -1;
	attr_of(&a);
	ret |= ds_writer__add_attr(w, &a, ds_attr__min_size(&a), ids, 1, "cpu-clock");
	ret |= ds_writer__feature_string(w, DS_FEAT_HOSTNAME, "injecthost");
	ret |= ds_writer__feature_nrcpus(w, 2, 2);
	ret |= ds_writer__write(w, r, sample(r, 10, 100, KIP1, 7));
	ret |= ds_writer__write(w, r, deferred(r, 10, 110, 7));
	ret |= ds_writer__write(w, r, sample(r, 11, 120, KIP2, 9));
	header(r, DS_REC_FINISHED_ROUND, 0, 1);
	ret |= ds_writer__write(w, r, 8);
	ret |= ds_writer__feature_sample_time(w, 100, 120);
	ret |= ds_writer__close(w);
	return ret;
}

static int on_event(void *ctx, const struct ds_event *ev)
{
	return ds_inject__event(ctx, ev);
}

static void check_output(const char *path)
{
	struct ds_reader *r = ds_reader__open(path);
	struct ds_record rec;
	int samples = 0, others = 0, ret;

	CHECK(r != NULL, "reading the output: %s", ds_errmsg());
	if (!r)
		return;
	CHECK(ds_reader__nr_evsels(r) == 1, "one event");
	const struct ds_evsel *e = ds_reader__evsel(r, 0);

	CHECK(!DS_ATTR_FLAG(&e->attr, DS_ATTR_DEFER_CALLCHAIN) && DS_ATTR_FLAG(&e->attr, DS_ATTR_SAMPLE_ID_ALL),
	      "the defer bit cleared, the others kept");
	CHECK(ds_reader__info(r)->hostname && !strcmp(ds_reader__info(r)->hostname, "injecthost") &&
	      ds_reader__info(r)->nr_cpus_avail == 2, "features copied");
	while ((ret = ds_reader__next(r, &rec)) > 0) {
		struct ds_sample s;
		const char *why;

		if (rec.hdr->type != DS_REC_SAMPLE) {
			CHECK(rec.hdr->type != DS_REC_CALLCHAIN_DEFERRED, "record type %u dropped",
			      rec.hdr->type);
			others++;
			continue;
		}
		CHECK(!ds_sample__parse(e, rec.hdr, &s, &why), "sample parses: %s", why);
		if (s.tid == 10)
			CHECK(s.callchain_nr == 4 && s.callchain[0] == DS_CONTEXT_KERNEL && s.callchain[1] == KIP1 &&
			      s.callchain[2] == DS_CONTEXT_USER && s.callchain[3] == UIP, "stitched chain merged");
		else
			CHECK(s.tid == 11 && s.callchain_nr == 2 && s.callchain[0] == DS_CONTEXT_KERNEL &&
			      s.callchain[1] == KIP2, "unresolved: the kernel chain without marker and cookie");
		samples++;
	}
	CHECK(ret == 0, "read to the end: %s", ds_errmsg());
	CHECK(samples == 2, "%d samples", samples);
	ds_reader__close(r);
}

int main(void)
{
	char in[] = "/tmp/test_inject.in.XXXXXX", out[] = "/tmp/test_inject.out.XXXXXX";
	int fi = mkstemp(in), fo = mkstemp(out);
	struct ds_inject_opts o = { .sz = sizeof(o) };
	struct ds_session *s;
	struct ds_writer *w;
	struct ds_inject *inj;

	CHECK(fi >= 0 && fo >= 0, "mkstemp");
	close(fi);
	close(fo);
	CHECK(write_input(in) == 0, "input written: %s", ds_errmsg());
	s = ds_session__open(in);
	w = ds_writer__open(out, false);
	CHECK(s && w, "open: %s", ds_errmsg());
	inj = s && w ? ds_inject__new(ds_session__reader(s), w, &o) : NULL;
	CHECK(inj != NULL, "new: %s", ds_errmsg());
	if (inj) {
		const struct ds_inject_stats *n = ds_inject__stats(inj);
		struct ds_session_opts so = { 0 };

		CHECK(ds_session__run(s, &so, on_event, inj) == 0, "run: %s", ds_errmsg());
		CHECK(ds_inject__finish(inj) == 0, "finish: %s", ds_errmsg());
		CHECK(n->samples == 2 && n->stitched == 1 && n->unresolved == 1 && n->deferred_dropped == 1 &&
		      !n->other_dropped && !n->unwinding && !n->truncated,
		      "counts: %llu samples, %llu stitched, %llu unresolved, %llu deferred, %llu other",
		      (unsigned long long)n->samples, (unsigned long long)n->stitched,
		      (unsigned long long)n->unresolved, (unsigned long long)n->deferred_dropped,
		      (unsigned long long)n->other_dropped);
		ds_inject__delete(inj);
	}
	CHECK(w && ds_writer__close(w) == 0, "close: %s", ds_errmsg());
	ds_session__close(s);
	check_output(out);
	ds_inject__delete(NULL);
	unlink(in);
	unlink(out);
	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}
