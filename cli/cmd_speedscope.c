// SPDX-License-Identifier: MIT
/*
 * dstack speedscope: the samples in speedscope's file format
 * (https://www.speedscope.app/file-format-schema.json): shared frames
 * (name, file = DSO), one "sampled" profile per thread named "comm (tid)",
 * stacks root first, weights = periods in nanoseconds for the clock
 * events (the unit is "none" for other events).  Threads are in
 * (pid, tid) order, frames numbered by first appearance: the output is
 * the same for the same input.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "dstack/event.h"
#include "export_common.h"

struct thread_key {
	int32_t pid, tid;
	size_t first;   /* first sample index: stable order for equal keys */
};

static int cmp_thread(const void *a, const void *b)
{
	const struct thread_key *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return (x->first > y->first) - (x->first < y->first);
}

/* Are the samples' weights nanoseconds: is every sample's event a clock? */
static bool all_clock(const struct xdata *x)
{
	for (size_t i = 0; i < x->nr_samples; i++)
		if (!is_clock(x->strs[x->samples[i].evsel_name]))
			return false;
	return true;
}

/* One thread's profile: the samples th[0 .. n), all of one (pid, tid), in recording order. */
static void write_profile(struct outbuf *o, const struct xdata *x, const struct thread_key *th, size_t n,
			  const char *unit)
{
	uint64_t total = 0;
	char name[300];

	snprintf(name, sizeof(name), "%s (%d)", x->strs[x->samples[th[0].first].comm], th[0].tid);
	outbuf_puts(o, "{\"type\":\"sampled\",\"name\":");
	json_string(o, name);
	outbuf_printf(o, ",\"unit\":\"%s\",\"startValue\":0,\"endValue\":", unit);
	for (size_t i = 0; i < n; i++)
		total += x->samples[th[i].first].period;
	outbuf_dec(o, total, 0, ' ');
	outbuf_puts(o, ",\"samples\":[");
	for (size_t i = 0; i < n; i++) {
		const struct xsample *s = &x->samples[th[i].first];
		const struct xstack *st = &x->stacks[s->stack];

		if (i)
			outbuf_putc(o, ',');
		outbuf_putc(o, '[');
		for (size_t j = st->len; j-- > 0;) {
			outbuf_dec(o, x->ents[st->off + j].func, 0, ' ');
			if (j)
				outbuf_putc(o, ',');
		}
		outbuf_putc(o, ']');
	}
	outbuf_puts(o, "],\"weights\":[");
	for (size_t i = 0; i < n; i++) {
		if (i)
			outbuf_putc(o, ',');
		outbuf_dec(o, x->samples[th[i].first].period, 0, ' ');
	}
	outbuf_puts(o, "]}");
}

static int write_speedscope(const struct xdata *x, int fd, const char *title)
{
	struct outbuf *o;
	struct thread_key *th = calloc(x->nr_samples + 1, sizeof(*th));
	size_t nr = 0;
	const char *unit = all_clock(x) ? "nanoseconds" : "none";
	int err;

	if (!th || !(o = outbuf_new(fd))) {
		free(th);
		return ENOMEM;
	}
	for (size_t i = 0; i < x->nr_samples; i++)
		th[i] = (struct thread_key){ x->samples[i].pid, x->samples[i].tid, i };
	if (x->nr_samples > 1)
		qsort(th, x->nr_samples, sizeof(*th), cmp_thread);
	outbuf_puts(o, "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\"shared\":{\"frames\":[");
	for (size_t i = 0; i < x->nr_funcs; i++) {
		if (i)
			outbuf_putc(o, ',');
		outbuf_puts(o, "{\"name\":");
		json_string(o, x->strs[x->funcs[i].name]);
		outbuf_puts(o, ",\"file\":");
		json_string(o, x->funcs[i].inlined ? "(inlined)" : x->strs[x->funcs[i].dso]);
		outbuf_putc(o, '}');
	}
	outbuf_puts(o, "]},\"profiles\":[");
	for (size_t i = 0, j; i < x->nr_samples; i = j) {
		for (j = i + 1; j < x->nr_samples && th[j].pid == th[i].pid && th[j].tid == th[i].tid; j++)
			;
		if (nr++)
			outbuf_putc(o, ',');
		write_profile(o, x, th + i, j - i, unit);
	}
	outbuf_puts(o, "],\"name\":");
	json_string(o, title);
	outbuf_puts(o, ",\"activeProfileIndex\":0,\"exporter\":\"dstack\"}\n");
	free(th);
	outbuf_flush(o);
	err = o->error;
	outbuf_delete(o);
	return err;
}

int cmd_speedscope(int argc, char **argv)
{
	struct xdata x = { 0 };
	const char *output;
	int fd, ret = export_collect("speedscope", "profile.speedscope.json", argc, argv, &x, &fd, &output);

	if (ret == -1 || (ret == EXIT_USAGE && fd < 0)) {
		xdata_free(&x);
		return ret == -1 ? EXIT_OK : ret;
	}
	int err = write_speedscope(&x, fd, xdata_title(&x));
	int fin = export_finish("speedscope", fd, output, err);

	xdata_free(&x);
	return ret != EXIT_OK ? ret : fin;
}
