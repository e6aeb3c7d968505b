// SPDX-License-Identifier: MIT
/*
 * ds_profile (dstack/profile.h) on a corpus recording: samples delivered
 * with names and frames, the filter hook's verdicts, a callback's error
 * stopping the run, a second run refused, errors said through the hook.
 * usage: test_profile SYMFS KALLSYMS (the recordings: SYMFS/../../data)
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dstack/profile.h"
#include "profile/profile_int.h"
#include "check.h"

struct count {
	uint64_t samples, with_frames, filtered, bad, stop_after;
	int errors, last_err;
	enum ds_profile_verdict verdict;
};

static int on_sample(void *ctx, const struct ds_profile_sample *s)
{
	struct count *c = ctx;

	c->samples++;
	c->with_frames += s->nr_frames != 0;
	c->filtered += s->filtered;
	if (!s->comm || !s->evsel || !s->evsel->name || !s->thread || (s->filtered && s->nr_frames))
		c->bad++;
	for (size_t i = 0; i < s->nr_frames; i++)
		if (!s->frames[i].dso)
			c->bad++;
	return c->stop_after && c->samples == c->stop_after ? -ECANCELED : 0;
}

static enum ds_profile_verdict filter(void *ctx, const struct ds_sample *s, const char *comm)
{
	return ((struct count *)ctx)->verdict;
}

static void on_error(void *ctx, int err, const char *msg)
{
	struct count *c = ctx;

	c->errors++;
	c->last_err = err;
	if (!msg || !*msg)
		c->bad++;
}

/* the samples the filter hides, delivered marked (what a report asks: profile_int.h) */
static bool keep_filtered;

static int run(const char *path, struct ds_profile_opts *o, struct count *c, struct ds_profile_stats *st)
{
	struct ds_profile *p;
	int ret;

	o->hook_ctx = c;
	o->error = on_error;
	p = ds_profile__open(path, o);
	if (!p)
		return -errno;
	CHECK(dsi_profile__keep_filtered(p, keep_filtered) == 0, "keep_filtered before the run");
	ret = ds_profile__for_each_sample(p, on_sample, c);
	CHECK(ds_profile__for_each_sample(p, on_sample, c) == -EALREADY, "a second run is refused");
	CHECK(dsi_profile__keep_filtered(p, true) == -EALREADY, "keep_filtered after the run is refused");
	if (st)
		ds_profile__stats(p, st);
	ds_profile__close(p);
	return ret;
}

int main(int argc, char **argv)
{
	char path[PATH_MAX];
	struct ds_profile_opts o = { 0 };
	struct ds_profile_stats st;
	struct count all = { 0 }, c;
	int ret;

	if (argc < 3) {
		fprintf(stderr, "usage: %s SYMFS KALLSYMS\n", argv[0]);
		return 2;
	}
	snprintf(path, sizeof(path), "%s/../../data/cpu.defer.data", argv[1]);
	o.symbols.symfs = argv[1];
	o.symbols.kallsyms = argv[2];

	ret = run(path, &o, &all, &st);
	CHECK(ret == 0, "run: %d", ret);
	CHECK(all.samples > 100 && all.samples == st.session.records[DS_REC_SAMPLE],
	      "%llu samples delivered, %llu read", (unsigned long long)all.samples,
	      (unsigned long long)st.session.records[DS_REC_SAMPLE]);
	CHECK(all.with_frames == all.samples && !all.filtered && !all.bad && !all.errors, "frames, names");
	CHECK(st.stitch.samples == all.samples && st.stitch.stitched_before + st.stitch.stitched_after > 0, "stitch statistics");

	c = (struct count){ .verdict = DS_PROFILE_DROP };
	o.filter = filter;
	CHECK(run(path, &o, &c, NULL) == 0 && c.samples == 0, "DROP: %llu samples", (unsigned long long)c.samples);
	c = (struct count){ .verdict = DS_PROFILE_HIDE };
	CHECK(run(path, &o, &c, NULL) == 0 && c.samples == 0, "HIDE: %llu samples", (unsigned long long)c.samples);
	c = (struct count){ .verdict = DS_PROFILE_HIDE };
	keep_filtered = true;
	CHECK(run(path, &o, &c, NULL) == 0 && c.samples == all.samples && c.filtered == all.samples &&
	      !c.with_frames && !c.bad, "HIDE, keep_filtered: %llu filtered", (unsigned long long)c.filtered);
	o.filter = NULL;
	keep_filtered = false;

	c = (struct count){ .stop_after = 10 };
	ret = run(path, &o, &c, NULL);
	CHECK(ret == -ECANCELED && c.samples == 10 && c.errors == 1 && c.last_err == -ECANCELED,
	      "a callback's error stops the run: %d after %llu", ret, (unsigned long long)c.samples);

	c = (struct count){ 0 };
	o.no_frames = true;
	CHECK(run(path, &o, &c, NULL) == 0 && c.samples == all.samples && !c.with_frames, "no_frames");
	o.no_frames = false;

	c = (struct count){ 0 };
	ret = run("/nonexistent/perf.data", &o, &c, NULL);
	CHECK(ret < 0 && c.errors == 1 && c.last_err == ret && !c.bad, "a missing input: %d, %d said", ret, c.errors);

	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
