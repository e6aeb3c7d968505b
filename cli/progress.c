// SPDX-License-Identifier: MIT
/* Progress on stderr (progress.h). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include "dstack/event.h"
#include "dstack/reader.h"
#include "progress.h"

bool cli_quiet;

#define FIRST_NS 500000000ULL   /* nothing for a run shorter than this */
#define EVERY_NS 200000000ULL
#define CHECK_EVERY 4096        /* events between looks at the clock */

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

void progress_init(struct progress *p, const char *cmd, uint64_t total)
{
	/* DSTACK_PROGRESS_MS: the delay and the interval in ms instead (the tests show it at once) */
	const char *ms = getenv("DSTACK_PROGRESS_MS");

	*p = (struct progress){ .cmd = cmd, .total = total, .first_ns = FIRST_NS, .every_ns = EVERY_NS };
	if (ms && *ms)
		p->first_ns = p->every_ns = strtoull(ms, NULL, 10) * 1000000ULL;
	p->on = !cli_quiet && isatty(STDERR_FILENO);
	if (p->on)
		p->start_ns = p->last_ns = now_ns();
}

static void human(char *buf, size_t n, double v, const char *unit)
{
	static const char *const pre[] = { "", "k", "M", "G", "T" };
	size_t i = 0;

	while (v >= 1000 && i + 1 < sizeof(pre) / sizeof(*pre)) {
		v /= 1000;
		i++;
	}
	/* "3.9 MB", "12 B"; a bare count "3.8k", "950" */
	snprintf(buf, n, i ? "%.1f%s%s%s" : "%.0f%s%s%s", v, *unit ? " " : "", pre[i], unit);
}

static void draw(struct progress *p, uint64_t now)
{
	double secs = (double)(now - p->start_ns) / 1e9;
	char done[32], total[32], rate[32], samples[32];

	human(done, sizeof(done), (double)p->done, "B");
	human(rate, sizeof(rate), secs > 0 ? (double)p->done / secs : 0, "B/s");
	human(samples, sizeof(samples), (double)p->samples, "");
	if (p->total) {
		human(total, sizeof(total), (double)p->total, "B");
		fprintf(stderr, "\r\033[Kdstack %s: %s of %s (%.0f%%), %s samples, %s", p->cmd, done, total,
			100.0 * (double)(p->done > p->total ? p->total : p->done) / (double)p->total, samples, rate);
	} else {
		fprintf(stderr, "\r\033[Kdstack %s: %s, %s samples, %s", p->cmd, done, samples, rate);
	}
	fflush(stderr);
	p->shown = true;
	p->last_ns = now;
}

void progress_event(struct progress *p, uint64_t offset, bool sample)
{
	uint64_t now;

	p->samples += sample;
	if (offset > p->done)
		p->done = offset;
	if (++p->events % CHECK_EVERY)
		return;
	now = now_ns();
	if (now - p->start_ns >= p->first_ns && now - p->last_ns >= p->every_ns)
		draw(p, now);
}

void progress_init_input(struct progress *p, const char *cmd, const struct ds_reader *r)
{
	const struct ds_header_info *hi = ds_reader__info(r);

	progress_init(p, cmd, hi->pipe ? 0 : hi->data_size + hi->parts_size);
	p->base = hi->pipe ? 0 : hi->data_offset;
}

void progress_input_event(struct progress *p, const struct ds_event *ev)
{
	if (p->on)
		progress_event(p, ev->offset > p->base ? ev->offset - p->base : 0, ev->hdr->type == DS_REC_SAMPLE);
}

void progress_done(struct progress *p)
{
	if (p->shown) {
		fprintf(stderr, "\r\033[K");
		fflush(stderr);
	}
	p->shown = false;
}
