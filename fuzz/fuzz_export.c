// SPDX-License-Identifier: MIT
/*
 * Fuzz target 6: the analysis engine through the library's public API.
 * A perf.data file (from a memfd) opened as a ds_profile, its resolved
 * samples into the stack model and the exports (dstack/stacks.h,
 * dstack/export.h), the output written to a stream that keeps nothing:
 * the last input byte picks what: the model with aggregated samples, its
 * every stack and frame read back; the folded export in the least memory
 * it takes (its tree restarted and its tally spilled); the flame graph;
 * the folded export fed the input's own lines as folded text; pprof and
 * speedscope, in the least memory too (their samples spilled and merged);
 * the diff of the recording (BASE) and the input's lines as a folded file
 * (NEW), all three of its outputs.  Every run
 * frees what it took, so a leak is a finding.
 */
#include "fuzz_common.h"
#include "dstack/diff.h"
#include "dstack/export.h"
#include "dstack/profile.h"
#include "dstack/stacks.h"

static int on_model(void *ctx, const struct ds_profile_sample *s)
{
	return ds_stacks__add(ctx, s);
}

static int on_folded(void *ctx, const struct ds_profile_sample *s)
{
	return ds_folded__add(ctx, s);
}

static int on_flame(void *ctx, const struct ds_profile_sample *s)
{
	return ds_flamegraph__add(ctx, s);
}

static int on_pprof(void *ctx, const struct ds_profile_sample *s)
{
	return ds_pprof__add(ctx, s);
}

static int on_speedscope(void *ctx, const struct ds_profile_sample *s)
{
	return ds_speedscope__add(ctx, s);
}

static int on_diff(void *ctx, const struct ds_profile_sample *s)
{
	return ds_diff__add(ctx, s);
}

/* The recording @p as BASE, the input's lines as NEW's folded file, every output written. */
static void diff(struct ds_profile *p, const uint8_t *data, size_t size, struct fz_out *out)
{
	struct ds_diff_opts o = { .sz = sizeof(o), .by_comm = size & 1, .by_period = size & 2 };
	struct ds_diff *d = ds_diff__new(&o);
	const char *t = (const char *)data, *end = t + size;
	struct ds_diff_report_opts ro = { .sz = sizeof(ro), .sort = 1 + (unsigned)(size >> 2) % 7, .children = size & 4 };

	if (!d)
		return;
	ds_diff__begin_side(d, 0, "base", false);
	ds_profile__for_each_sample(p, on_diff, d);
	ds_diff__begin_side(d, 1, "new", true);
	while (t < end) {
		const char *nl = memchr(t, '\n', (size_t)(end - t)), *stop = nl ? nl + 1 : end;

		ds_diff__add_folded(d, t, (size_t)(stop - t));
		t = stop;
	}
	ds_diff__write_report(d, &ro, fz_write, out);
	ds_diff__write_folded(d, size & 8, fz_write, out);
	ds_diff__write_flamegraph(d, fz_write, out);
	ds_diff__delete(d);
}

/* Everything the model holds read back: ids must stay in range. */
static size_t read_model(const struct ds_stacks *st)
{
	size_t sum = 0, n, len;
	const struct ds_stacks_sample *s = ds_stacks__samples(st, &n);

	for (size_t i = 0; i < n; i++) {
		const struct ds_stacks_entry *e = ds_stacks__stack(st, s[i].stack, &len);

		sum += strlen(ds_stacks__str(st, s[i].comm)) + strlen(ds_stacks__str(st, s[i].event));
		for (size_t j = 0; j < len; j++) {
			const struct ds_stacks_frame *f = ds_stacks__frame(st, e[j].frame);

			sum += strlen(ds_stacks__str(st, f->name)) + strlen(ds_stacks__str(st, f->dso)) + e[j].line;
			if (e[j].map)
				sum += strlen(ds_stacks__str(st, ds_stacks__map(st, e[j].map - 1)->build_id));
		}
	}
	return sum;
}

/* The input's lines as folded text ("stack count"): what a folded file would give. */
static void folded_text(const uint8_t *data, size_t size, struct fz_out *out)
{
	struct ds_folded_opts fo = { .sz = sizeof(fo), .memory = 1, .tmpdir = "/tmp" };
	struct ds_folded *f = ds_folded__new(&fo);
	const char *p = (const char *)data, *end = p + size;

	while (f && p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *stop = nl ? nl : end;

		ds_folded__add_text(f, p, (size_t)(stop - p), (uint64_t)(stop - p));
		p = stop + 1;
	}
	if (f)
		ds_folded__write(f, fz_write, out);
	ds_folded__delete(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64];
	struct fz_out out = { 0 };
	unsigned pick = size ? data[size - 1] % 7 : 0;
	int fd;

	fz_init();
	if (pick == 3) {
		folded_text(data, size, &out);
		return 0;
	}
	fd = fz_memfd(data, size, path, sizeof(path));
	if (fd < 0)
		return 0;
	struct ds_profile_opts po = {
		.symbols = { .symfs = fz_dir, .kallsyms = fz_kallsyms },
		.one_thread = true,    /* every run starts alike */
		.script_comms = pick == 1,
		.transient_comms = true,
		.time_mode = size > 1 && data[size - 2] % 3 == 1 ? DS_PROFILE_WALL : DS_PROFILE_CPU,
	};
	struct ds_profile *p = ds_profile__open(path, &po);

	if (p) {
		if (pick == 0) {
			struct ds_stacks_opts so = { .sz = sizeof(so), .srclines = true, .maps = true, .aggregate = true };
			struct ds_stacks *st = ds_stacks__new(&so);

			if (st) {
				ds_profile__for_each_sample(p, on_model, st);
				out.bytes += read_model(st);
			}
			ds_stacks__delete(st);
		} else if (pick == 1) {
			struct ds_folded_opts fo = { .sz = sizeof(fo), .memory = 1, .tmpdir = "/tmp", .period = size & 1 };
			struct ds_folded *f = ds_folded__new(&fo);

			if (f) {
				ds_profile__for_each_sample(p, on_folded, f);
				ds_folded__write(f, fz_write, &out);
			}
			ds_folded__delete(f);
		} else if (pick == 4) {
			struct ds_pprof_opts o = { .sz = sizeof(o), .memory = size & 1 ? 1 : 0, .tmpdir = "/tmp",
						   .time_mode = po.time_mode };
			struct ds_pprof *pp = ds_pprof__new(&o);

			if (pp) {
				ds_profile__for_each_sample(p, on_pprof, pp);
				/* every event alone when there are several, else all together */
				if (ds_pprof__nr_events(pp) > 1 && (size & 2)) {
					for (size_t e = 0; e < ds_pprof__nr_events(pp); e++) {
						struct ds_pprof_write_opts wo = { .sz = sizeof(wo), .event = (int)e };

						ds_pprof__write(pp, &wo, fz_write, &out);
					}
				} else {
					ds_pprof__write(pp, NULL, fz_write, &out);
				}
			}
			ds_pprof__delete(pp);
		} else if (pick == 6) {
			diff(p, data, size, &out);
		} else if (pick == 5) {
			struct ds_speedscope_opts o = { .sz = sizeof(o), .memory = 1, .tmpdir = "/tmp", .title = path };
			struct ds_speedscope *sp = ds_speedscope__new(&o);

			if (sp) {
				ds_profile__for_each_sample(p, on_speedscope, sp);
				ds_speedscope__write(sp, fz_write, &out);
			}
			ds_speedscope__delete(sp);
		} else {
			struct ds_flamegraph_opts fo = { .sz = sizeof(fo), .title = path, .period = size & 1 };
			struct ds_flamegraph *g = ds_flamegraph__new(&fo);

			if (g) {
				ds_profile__for_each_sample(p, on_flame, g);
				ds_flamegraph__write(g, fz_write, &out);
			}
			ds_flamegraph__delete(g);
		}
		ds_profile__close(p);
	}
	close(fd);
	return 0;
}
