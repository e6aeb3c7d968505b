// SPDX-License-Identifier: MIT
/*
 * dstack stat: record counts by type and the stitching statistics, one
 * "name value" pair per line (value first field after the name, so both
 * people and scripts can read it).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "util/outbuf.h"
#include "dstack/log.h"
#include "dstack/event.h"
#include "dstack/session.h"
#include "samples.h"

/* Nothing but the progress: the session counts. */
static int count_only(void *ctx, const struct ds_event *ev)
{
	progress_input_event(ctx, ev);
	return 0;
}

/* Some event samples user registers and stack: the recording is unwound. */
static bool has_snapshots(const struct ds_session *s)
{
	const struct ds_reader *rd = ds_session__reader(s);

	for (size_t i = 0; i < ds_reader__nr_evsels(rd); i++) {
		uint64_t t = ds_reader__evsel(rd, i)->attr.sample_type;

		if ((t & DS_SAMPLE_REGS_USER) && (t & DS_SAMPLE_STACK_USER))
			return true;
	}
	return false;
}

static int ignore_sample(void *ctx, const struct ds_profile_sample *ws)
{
	(void)ctx;
	(void)ws;
	return 0;
}

/* The unwinding of the snapshots: samples by method used and by how the walk ended. */
static int print_unwind_stats(const struct common_opts *co)
{
	struct ds_profile_stats st = { 0 };
	const struct ds_unwind_stats *u = &st.unwind;
	struct walk_opts wo;
	struct walk w;
	int ret;

	walk_opts_init(&wo);
	wo.common = *co;
	ret = walk_open(&w, "stat", &wo);
	if (ret == EXIT_OK) {
		ret = walk_run(&w, ignore_sample, NULL);
		ds_profile__stats(w.profile, &st);
		walk_finish(&w);
	}
	printf("unwind.samples                 %llu\n", (unsigned long long)u->samples);
	printf("unwind.frames                  %llu\n", (unsigned long long)u->frames);
	for (int m = 0; m < DS_UNWIND_METHOD__NR; m++)
		printf("unwind.method.%-16s %llu samples, %llu frames\n", ds_unwind_method__name(m),
		       (unsigned long long)u->by_method[m], (unsigned long long)u->steps[m]);
	for (int e = 0; e < DS_UNWIND_END__NR; e++)
		printf("unwind.end.%-19s %llu\n", ds_unwind_end__name(e), (unsigned long long)u->ends[e]);
	return ret;
}

/* file.*, header.* and event.N: what the header says. */
static void print_header_stats(const struct ds_reader *rd)
{
	const struct ds_header_info *in = ds_reader__info(rd);

	printf("file.mode                      %s\n", in->pipe ? "pipe" : in->dir ? "directory" : "file");
	if (in->hostname)
		printf("header.hostname                %s\n", in->hostname);
	if (in->osrelease)
		printf("header.osrelease               %s\n", in->osrelease);
	if (in->version)
		printf("header.perf_version            %s\n", in->version);
	if (in->arch)
		printf("header.arch                    %s\n", in->arch);
	if (in->nr_cpus_online)
		printf("header.nrcpus                  %u online, %u available\n", in->nr_cpus_online, in->nr_cpus_avail);
	if (in->cmdline)
		printf("header.cmdline                 %s\n", in->cmdline);
	if (in->comp_type)
		printf("header.compression             %s level %u\n", in->comp_type == DS_COMP_ZSTD ? "zstd" : "unknown", in->comp_level);
	printf("header.build_ids               %zu\n", in->nr_build_ids);
	for (size_t i = 0; i < ds_reader__nr_evsels(rd); i++) {
		const struct ds_evsel *e = ds_reader__evsel(rd, i);

		printf("event.%-24zu %s%s%s\n", i, e->name ? e->name : "?",
		       DS_ATTR_FLAG(&e->attr, DS_ATTR_DEFER_CALLCHAIN) ? " defer_callchain" : "",
		       DS_ATTR_FLAG(&e->attr, DS_ATTR_DEFER_OUTPUT) ? " defer_output" : "");
	}
}

/* records.* and lost.*: the records read, by type. */
static void print_record_stats(const struct ds_reader *rd, const struct ds_session_stats *st)
{
	for (uint32_t t = 0; t < DS_REC_MAX; t++) {
		const char *name = ds_record_type__name(t);

		if (st->records[t] && name)
			printf("records.%-22s %llu\n", name, (unsigned long long)st->records[t]);
	}
	if (ds_reader__compressed_records(rd))
		printf("records.COMPRESSED             %llu (holding %llu bytes of records)\n",
		       (unsigned long long)ds_reader__compressed_records(rd),
		       (unsigned long long)st->compressed_bytes);
	printf("records.unknown                %llu\n", (unsigned long long)st->unknown_records);
	printf("records.bad                    %llu\n", (unsigned long long)st->bad_records);
	printf("records.out_of_order           %llu\n", (unsigned long long)st->unordered);
	printf("lost.events                    %llu\n", (unsigned long long)st->lost);
	printf("lost.samples                   %llu\n", (unsigned long long)st->lost_samples);
}

/* samples.*, deferred.*, stitched.*, unresolved, held.*: the stitcher's counts. */
static void print_stitch_stats(const struct ds_stitch_stats *ss)
{
	uint64_t used = ss->records - ss->duplicate_records;

	printf("samples                        %llu\n", (unsigned long long)ss->samples);
	printf("samples.deferred               %llu\n", (unsigned long long)ss->deferred_samples);
	printf("samples.user_in_place          %llu\n", (unsigned long long)ss->inplace_user);
	printf("deferred.records               %llu\n", (unsigned long long)ss->records);
	printf("deferred.duplicates            %llu\n", (unsigned long long)ss->duplicate_records);
	printf("deferred.without_tid           %llu\n", (unsigned long long)ss->tidless_records);
	printf("stitched                       %llu\n",
	       (unsigned long long)(ss->stitched_before + ss->stitched_after));
	printf("stitched.record_before         %llu\n", (unsigned long long)ss->stitched_before);
	printf("stitched.record_after          %llu\n", (unsigned long long)ss->stitched_after);
	printf("unresolved                     %llu\n", (unsigned long long)ss->unresolved);
	printf("samples_per_deferred_record    %.2f\n",
	       used ? (double)(ss->stitched_before + ss->stitched_after) / (double)used : 0.0);
	printf("held.max_events                %llu\n", (unsigned long long)ss->max_held);
	printf("held.set_aside                 %llu\n", (unsigned long long)ss->set_aside);
	printf("held.given_up                  %llu\n", (unsigned long long)ss->released_early);
}

static void print_stats(const struct ds_session *s)
{
	const struct ds_stitch_stats *ss = ds_session__stitch_stats(s);

	print_header_stats(ds_session__reader(s));
	print_record_stats(ds_session__reader(s), ds_session__stats(s));
	if (ss)
		print_stitch_stats(ss);
}

int cmd_stat(int argc, char **argv)
{
	struct common_opts co = { .input = "perf.data" };
	char why[640] = "";
	int ret;

	for (int i = 1; i < argc; i++) {
		if (common_opt(&co, argc, argv, &i))
			continue;
		usage_error("stat", "unknown option '%s' (usage: dstack stat [-i FILE])", argv[i]);
		return EXIT_USAGE;
	}
	struct ds_session *s = ds_session__open(co.input);

	if (!s) {
		fprintf(stderr, "dstack stat: %s\n", ds_errmsg());
		return EXIT_INPUT;
	}
	struct ds_session_opts so = { .memory_budget = cli_memory_budget() };
	struct progress progress;

	progress_init_input(&progress, "stat", ds_session__reader(s));
	ret = ds_session__run(s, &so, count_only, &progress);
	snprintf(why, sizeof(why), "%s", ret ? ds_errmsg() : "");
	progress_done(&progress);
	print_stats(s);
	if (fflush(stdout) || ferror(stdout))
		output_failed("stdout", errno);
	if (ret)
		fprintf(stderr, "dstack stat: %s\n", why);
	if (!ret && ds_session__stats(s)->bad_records)
		ret = -EINVAL;
	/* a second pass, through threads, maps and binaries, for the unwinding
	 * (not for a pipe: its bytes are gone) */
	if (!ret && has_snapshots(s) && strcmp(co.input, "-")) {
		ds_session__close(s);
		return print_unwind_stats(&co);
	}
	ds_session__close(s);
	return ret ? EXIT_INPUT : EXIT_OK;
}
