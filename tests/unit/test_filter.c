// SPDX-License-Identifier: MIT
/*
 * perf's sample filters (ds_filter, dstack/filter.h) through the public
 * API: pid, tid and comm lists, CPU lists, time ranges (exact decimals,
 * open sides, several ranges, their order), percent slices computed from
 * a recording's sample times, the checks prepare makes against a
 * recording (CPU in the samples, CPU count, HEADER_SAMPLE_TIME), bad
 * values refused with a message and the filter left as it was.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "dstack/filter.h"
#include "dstack/log.h"
#include "dstack/writer.h"
#include "check.h"

static struct ds_sample at(uint64_t t, uint32_t cpu, uint32_t pid, uint32_t tid)
{
	return (struct ds_sample){ .time = t, .cpu = cpu, .has_cpu = true, .pid = pid, .tid = tid, .has_tid = true };
}

static void test_threads(void)
{
	struct ds_filter *f = ds_filter__new();
	const int32_t pids[] = { 10, 20 }, tids[] = { 21 };
	const char *comms[] = { "bash", "make" };
	struct ds_sample s = at(5, 0, 20, 21);

	CHECK(f && !ds_filter__active(f), "a new filter filters nothing");
	CHECK(ds_filter__wanted(f, &s, "x"), "empty filter wants all");
	CHECK(!ds_filter__set_pids(f, pids, 2) && ds_filter__active(f), "pids set");
	CHECK(ds_filter__thread(f, &s, "x"), "pid 20 kept");
	s.pid = 30;
	CHECK(!ds_filter__thread(f, &s, "x") && ds_filter__time_cpu(f, &s), "pid 30 hidden, not dropped");
	s.pid = 10;
	CHECK(!ds_filter__set_tids(f, tids, 1) && ds_filter__thread(f, &s, "x"), "tid 21 kept");
	s.tid = 22;
	CHECK(!ds_filter__wanted(f, &s, "x"), "tid 22 left out");
	s.tid = 21;
	CHECK(!ds_filter__set_comms(f, comms, 2), "comms set");
	comms[0] = "changed";   /* copied */
	CHECK(ds_filter__wanted(f, &s, "bash") && ds_filter__wanted(f, &s, "make"), "comms kept");
	CHECK(!ds_filter__wanted(f, &s, "bas"), "other comm left out");
	CHECK(!ds_filter__set_pids(f, NULL, 0) && !ds_filter__set_tids(f, NULL, 0) && !ds_filter__set_comms(f, NULL, 0) &&
	      !ds_filter__active(f), "parts set again to none");
	ds_filter__delete(f);
	ds_filter__delete(NULL);
}

static void test_cpus(void)
{
	struct ds_filter *f = ds_filter__new();
	struct ds_sample s = at(0, 2, 1, 1);

	CHECK(!ds_filter__set_cpus(f, "0-3,6"), "cpu list: %s", ds_errmsg());
	CHECK(ds_filter__cpu(f, &s), "cpu 2 in 0-3");
	s.cpu = 6;
	CHECK(ds_filter__cpu(f, &s), "cpu 6");
	s.cpu = 5;
	CHECK(!ds_filter__cpu(f, &s) && !ds_filter__time_cpu(f, &s) && ds_filter__thread(f, &s, ""), "cpu 5 dropped");
	s.has_cpu = false;
	CHECK(ds_filter__cpu(f, &s), "a sample without its cpu passes");
	s = at(0, 4095, 1, 1);
	CHECK(!ds_filter__cpu(f, &s), "cpu 4095 not listed");
	CHECK(ds_filter__set_cpus(f, "3-1") == -EINVAL && strstr(ds_errmsg(), "bad CPU list '3-1'"), "3-1: %s",
	      ds_errmsg());
	CHECK(ds_filter__set_cpus(f, "4096") == -EINVAL, "4096 too big");
	CHECK(ds_filter__set_cpus(f, "1,,2") == -EINVAL && ds_filter__set_cpus(f, "a") == -EINVAL &&
	      ds_filter__set_cpus(f, "1-") == -EINVAL, "bad lists");
	s.cpu = 6;
	CHECK(ds_filter__cpu(f, &s), "a failed set leaves the list as it was");
	CHECK(!ds_filter__set_cpus(f, "4095"), "cpu 4095");
	s.cpu = 4095;
	CHECK(ds_filter__cpu(f, &s), "cpu 4095 listed");
	s.cpu = 5000;
	CHECK(!ds_filter__cpu(f, &s), "cpu past the bitmap");
	ds_filter__delete(f);
}

static bool time_ok(const struct ds_filter *f, uint64_t t)
{
	struct ds_sample s = at(t, 0, 1, 1);

	return ds_filter__time_cpu(f, &s);
}

static void test_times(void)
{
	struct ds_filter *f = ds_filter__new();

	CHECK(!ds_filter__set_time(f, "1.5,2.000000001"), "range: %s", ds_errmsg());
	CHECK(!time_ok(f, 1499999999) && time_ok(f, 1500000000) && time_ok(f, 2000000001) && !time_ok(f, 2000000002),
	      "exact bounds");
	CHECK(time_ok(f, 0), "time 0 passes every filter");
	CHECK(!ds_filter__set_time(f, ",3") && time_ok(f, 1) && !time_ok(f, 3000000001), "open start");
	CHECK(!ds_filter__set_time(f, "3,") && !time_ok(f, 2999999999) && time_ok(f, UINT64_MAX - 1), "open end");
	CHECK(!ds_filter__set_time(f, "1,2 3,4"), "two ranges: %s", ds_errmsg());
	CHECK(time_ok(f, 1500000000) && !time_ok(f, 2500000000) && time_ok(f, 3500000000) && !time_ok(f, 4500000000),
	      "a union");
	CHECK(!ds_filter__set_time(f, "1,2  3,4") && time_ok(f, 3000000000), "spaces between ranges");
	CHECK(ds_filter__set_time(f, "3,4 1,2") == -EINVAL, "ranges out of order");
	CHECK(strstr(ds_errmsg(), "bad time '3,4 1,2'") != NULL, "message: %s", ds_errmsg());
	CHECK(ds_filter__set_time(f, "2,1") == -EINVAL && ds_filter__set_time(f, "1.0000000001,2") == -EINVAL &&
	      ds_filter__set_time(f, "1") == -EINVAL && ds_filter__set_time(f, ".,1") == -EINVAL &&
	      ds_filter__set_time(f, "x,1") == -EINVAL, "bad ranges");
	CHECK(time_ok(f, 2000000000) && !time_ok(f, 2500000000), "a failed set leaves the ranges as they were");
	CHECK(!ds_filter__set_time(f, "10%/2") && !ds_filter__set_time(f, "0%-10%,30%-40%") &&
	      !ds_filter__set_time(f, "10%"), "percent syntax");
	CHECK(ds_filter__set_time(f, "10%/") == -EINVAL && ds_filter__set_time(f, "0%-10%,,") == -EINVAL &&
	      ds_filter__set_time(f, "110%") == -EINVAL && ds_filter__set_time(f, "%") == -EINVAL,
	      "bad percent items");
	ds_filter__delete(f);
}

/* A recording of one event, sampling its CPU (@cpu) or not, of @nr_cpus CPUs, samples from @first to @last (0: none said). */
static struct ds_reader *recording(const char *path, bool cpu, uint32_t nr_cpus, uint64_t first, uint64_t last)
{
	struct ds_attr a;
	const uint64_t ids[] = { 1 };
	const uint32_t round[2] = { 12, 8u << 16 };   /* FINISHED_ROUND: type, misc 0, size 8 */
	struct ds_writer *w = ds_writer__open(path, false);
	int ret = 0;

	if (!w)
		return NULL;
	memset(&a, 0, sizeof(a));
	a.type = 1;   /* software */
	a.sample_type = DS_SAMPLE_IP | DS_SAMPLE_TID | DS_SAMPLE_TIME | (cpu ? DS_SAMPLE_CPU : 0);
	a.flags = 1ULL << DS_ATTR_SAMPLE_ID_ALL;
	ret |= ds_writer__add_attr(w, &a, ds_attr__min_size(&a), ids, 1, "cpu-clock");
	ret |= ds_writer__feature_nrcpus(w, nr_cpus, nr_cpus);
	ret |= ds_writer__write(w, round, sizeof(round));
	if (last)
		ret |= ds_writer__feature_sample_time(w, first, last);
	ret |= ds_writer__close(w);
	return ret ? NULL : ds_reader__open(path);
}

static void test_prepare(void)
{
	char path[] = "/tmp/test_filter.XXXXXX";
	int fd = mkstemp(path);
	struct ds_filter *f = ds_filter__new();
	struct ds_reader *rd;

	CHECK(fd >= 0, "mkstemp");
	close(fd);
	rd = recording(path, true, 4, 1000, 2000);
	CHECK(rd != NULL, "recording: %s", ds_errmsg());
	if (!rd)
		goto out;
	CHECK(!ds_filter__prepare(f, rd), "nothing to prepare");
	CHECK(!ds_filter__set_cpus(f, "0-3") && !ds_filter__prepare(f, rd), "cpus of the recording");
	CHECK(!ds_filter__set_cpus(f, "2,4") && ds_filter__prepare(f, rd) == -ERANGE &&
	      !strcmp(ds_errmsg(), "CPU 4 is not one of the recording's 4 CPUs"), "cpu 4: %s", ds_errmsg());
	CHECK(!ds_filter__set_cpus(f, "0") && !ds_filter__set_time(f, "10%/2") && !ds_filter__prepare(f, rd),
	      "percent: %s", ds_errmsg());
	/* the second tenth of 1000..2000: 1100 to 1199 */
	CHECK(!time_ok(f, 1099) && time_ok(f, 1100) && time_ok(f, 1199) && !time_ok(f, 1200), "10%%/2");
	CHECK(!ds_filter__set_time(f, "0%-10%,90%-100%") && !ds_filter__prepare(f, rd), "two slices");
	CHECK(time_ok(f, 1000) && time_ok(f, 1099) && !time_ok(f, 1100) && time_ok(f, 1900) && time_ok(f, 2000) &&
	      !time_ok(f, 2001), "the last slice ends at the last sample");
	CHECK(!ds_filter__set_time(f, "50%") && !ds_filter__prepare(f, rd) && time_ok(f, 1499) && !time_ok(f, 1500),
	      "50%%");
	ds_reader__close(rd);

	rd = recording(path, true, 4, 0, 0);
	CHECK(rd && ds_filter__prepare(f, rd) == -ENODATA && strstr(ds_errmsg(), "HEADER_SAMPLE_TIME"),
	      "no sample times: %s", ds_errmsg());
	ds_reader__close(rd);

	rd = recording(path, false, 4, 1000, 2000);
	CHECK(rd && ds_filter__prepare(f, rd) == -EOPNOTSUPP, "samples without their cpu: %s", ds_errmsg());
	ds_reader__close(rd);
out:
	unlink(path);
	ds_filter__delete(f);
}

int main(void)
{
	test_threads();
	test_cpus();
	test_times();
	test_prepare();
	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}
