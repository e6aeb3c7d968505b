/* SPDX-License-Identifier: MIT */
/*
 * Shared harness for the dstack fuzz targets: run the `dstack script`
 * pipeline (session -> machine -> stitched, symbolized callchains) on a
 * path, formatting every frame into a scratch buffer that is discarded.
 * Symbols come from an empty symfs directory and an empty kallsyms file,
 * so no host file is read and every run starts from the same state.
 *
 * Entry points: libFuzzer's LLVMFuzzerTestOneInput; with -DFUZZ_MAIN a
 * main() that runs each argument file (AFL++ persistent-less mode, or a
 * plain reproducer: ./target crash-file).
 */
#ifndef DSTACK_FUZZ_COMMON_H
#define DSTACK_FUZZ_COMMON_H

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "dstack/features.h"
#include "dstack/log.h"
#include "dstack/machine.h"
#include "dstack/session.h"
#include "dstack/symbols.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A ds_write_fn that counts the bytes an export or a report writes, and drops them. */
struct fz_out {
	size_t bytes;
};

static inline int fz_write(void *ctx, const void *buf, size_t len)
{
	struct fz_out *o = ctx;

	o->bytes += len;
	return 0;
}

static char fz_dir[64];       /* empty symfs root */
static char fz_kallsyms[96];  /* empty kallsyms file */

/* Format every message (that code runs too) and drop it. */
static void fz_log(enum ds_log_level level, const char *fmt, va_list ap)
{
	char buf[1024];

	(void)level;
	vsnprintf(buf, sizeof(buf), fmt, ap);
}

static void fz_init(void)
{
	if (fz_dir[0])
		return;
	snprintf(fz_dir, sizeof(fz_dir), "/tmp/dstack-fuzz-XXXXXX");
	if (!mkdtemp(fz_dir))
		abort();
	snprintf(fz_kallsyms, sizeof(fz_kallsyms), "%s/kallsyms", fz_dir);
	FILE *f = fopen(fz_kallsyms, "w");
	if (!f)
		abort();
	fclose(f);
	ds_set_log(fz_log);
}

struct fz_ctx {
	struct ds_machine *m;
	char buf[512];
	size_t sink;   /* keeps the formatting from being optimised away */
};

static inline void fz_frames(struct fz_ctx *c, struct ds_thread *t, const uint64_t *ips, uint64_t nr)
{
	struct ds_callchain cc;
	const struct ds_cc_frame *f;

	ds_machine__callchain(c->m, t, ips, nr, 127, 0, &cc);
	f = cc.frames;
	for (size_t i = 0; i < cc.nr; i++)
		c->sink += (size_t)snprintf(c->buf, sizeof(c->buf), "%llx %s+%llx (%s)",
					    (unsigned long long)f[i].ip, f[i].sym ? f[i].sym : "[unknown]",
					    (unsigned long long)f[i].offset, f[i].dso ? f[i].dso : "?");
}

static inline int fz_sideband(void *ctx, const struct ds_event *ev)
{
	return ds_machine__process(ctx, ev);
}

static inline int fz_event(void *ctx, const struct ds_event *ev)
{
	struct fz_ctx *c = ctx;
	const struct ds_sample *s = &ev->sample;
	struct ds_thread *t;

	if (ev->hdr->type == DS_REC_SAMPLE) {
		t = ds_machine__thread(c->m, (int32_t)s->pid, (int32_t)s->tid);
		c->sink += strlen(s->time == DS_NO_TIME ? ds_thread__comm(t) : ds_thread__comm_at(t, s->time));
		c->sink += strlen(ev->evsel->name);
		if (s->callchain) {
			fz_frames(c, t, s->callchain, s->callchain_nr);
		} else {
			struct ds_resolved r;

			ds_machine__resolve(c->m, t, s->cpumode, s->ip, &r);
			c->sink += r.nr_frames;
		}
	} else if (ev->hdr->type == DS_REC_CALLCHAIN_DEFERRED) {
		struct ds_deferred_event d;
		const char *why;

		t = ds_machine__thread(c->m, (int32_t)s->pid, (int32_t)s->tid);
		if (!ds_deferred__parse(ev->evsel, ev->hdr, &d, &why))
			fz_frames(c, t, d.ips, d.nr);
	}
	return 0;
}

/* Every header feature the reader kept, decoded record by record (the strings touched). */
static inline void fz_features(const struct ds_reader *rd)
{
	for (int feat = 1; feat < DS_FEAT_NR_NAMED; feat++) {
		struct ds_feat_iter *it = ds_feat_iter__new(rd, feat);
		struct ds_feat_rec rec;
		volatile size_t sum = 0;

		while (it && ds_feat_iter__next(it, &rec) > 0)
			if (rec.type == DS_FEAT_REC_STRING || rec.type == DS_FEAT_REC_PMU_CAPS)
				sum += strlen(rec.type == DS_FEAT_REC_STRING ? rec.str : rec.pmu_caps.pmu);
			else if (rec.type == DS_FEAT_REC_CAP)
				sum += strlen(rec.cap.name) + strlen(rec.cap.value);
			else if (rec.type == DS_FEAT_REC_PMU || rec.type == DS_FEAT_REC_GROUP)
				sum += strlen(rec.type == DS_FEAT_REC_PMU ? rec.pmu.name : rec.group.name);
			else if (rec.type == DS_FEAT_REC_BPF_SUBPROG)
				sum += strlen(rec.bpf_subprog.name);
		ds_feat_iter__delete(it);
		(void)sum;
	}
}

/*
 * The `dstack script` pipeline on @path, stitched or not; under a memory
 * budget of @budget bytes (0: the default): a tiny one sends every input
 * through early delivery, copies instead of pinned windows, compaction
 * and the stitcher's early release.
 */
static inline void fz_run_path(const char *path, bool no_stitch, size_t budget, bool perf_order)
{
	struct ds_session *s = ds_session__open(path);

	if (!s) {
		(void)ds_errmsg();
		return;
	}
	struct ds_symbols_opts so = { .symfs = fz_dir, .kallsyms = fz_kallsyms };
	struct ds_symbols *syms = ds_symbols__new(&so);
	struct ds_machine *m = syms ? ds_machine__new(syms) : NULL;

	if (m) {
		struct fz_ctx c = { .m = m };
		struct ds_session_opts opts = { .no_stitch = no_stitch, .sideband = fz_sideband, .sideband_ctx = m,
						.memory_budget = budget, .stitch.perf_order = perf_order };

		if (ds_session__run(s, &opts, fz_event, &c) < 0)
			(void)ds_errmsg();
		(void)ds_session__stats(s);
		fz_features(ds_session__reader(s));
	}
	ds_machine__delete(m);
	ds_symbols__delete(syms);
	ds_session__close(s);
}

/* A memfd holding @data; its /proc path goes in @path. -1 on failure. */
static inline int fz_memfd(const uint8_t *data, size_t size, char *path, size_t len)
{
	int fd = memfd_create("dstack-fuzz", 0);

	if (fd < 0)
		return -1;
	for (size_t off = 0; off < size;) {
		ssize_t n = write(fd, data + off, size - off);

		if (n <= 0) {
			close(fd);
			return -1;
		}
		off += (size_t)n;
	}
	snprintf(path, len, "/proc/self/fd/%d", fd);
	return fd;
}

#ifdef FUZZ_MAIN
int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		FILE *f = fopen(argv[i], "rb");
		uint8_t *buf = NULL;
		size_t len = 0, cap = 0, n;

		if (!f) {
			perror(argv[i]);
			return 1;
		}
		do {
			if (len == cap && !(buf = realloc(buf, cap = cap ? 2 * cap : 65536)))
				abort();
			n = fread(buf + len, 1, cap - len, f);
			len += n;
		} while (n);
		fclose(f);
		LLVMFuzzerTestOneInput(buf, len);
		free(buf);
		printf("ran %s (%zu bytes)\n", argv[i], len);
	}
	return 0;
}
#endif

#endif
