// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dstack/event.h"
#include "dstack/log.h"
#include "dstack/session.h"
#include "ordered.h"

struct ds_session {
	struct ds_reader *reader;
	struct ds_ordered ordered;
	struct ds_stitcher *stitcher;
	struct ds_session_stats stats;
	ds_event_fn fn;
	void *ctx;
	ds_event_fn sideband;
	void *sideband_ctx;
	char err[600];
	int cb_err;
};

struct ds_session *ds_session__open(const char *path, char **errmsg)
{
	struct ds_session *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->reader = ds_reader__open(path, errmsg);
	if (!s->reader) {
		int e = errno;

		free(s);
		errno = e;
		return NULL;
	}
	return s;
}

void ds_session__close(struct ds_session *s)
{
	if (!s)
		return;
	ds_ordered__exit(&s->ordered);
	ds_stitcher__delete(s->stitcher);
	ds_reader__close(s->reader);
	free(s);
}

const char *ds_session__error(const struct ds_session *s) { return s->err; }
struct ds_reader *ds_session__reader(const struct ds_session *s) { return s->reader; }
const struct ds_session_stats *ds_session__stats(const struct ds_session *s) { return &s->stats; }

const struct ds_stitch_stats *ds_session__stitch_stats(const struct ds_session *s)
{
	return s->stitcher ? ds_stitcher__stats(s->stitcher) : NULL;
}

/* Parse a record into an event; false (after a warning) if its fields are bad. */
static bool make_event(struct ds_session *s, const struct ds_event_header *hdr, uint64_t offset,
		       struct ds_event *ev)
{
	const char *why = NULL;
	int err = 0;

	memset(ev, 0, sizeof(*ev));
	ev->hdr = hdr;
	ev->offset = offset;
	ev->evsel = ds_reader__evsel_of(s->reader, hdr);
	if (!ev->evsel) {
		why = "sample id matches no event in the file";
		err = -EINVAL;
	} else if (hdr->type == DS_REC_SAMPLE) {
		err = ds_sample__parse(ev->evsel, hdr, &ev->sample, &why);
	} else {
		err = ds_sample_id__parse(ev->evsel, hdr, &ev->sample, &why);
	}
	if (err) {
		s->stats.bad_records++;
		ds_warn("%s: offset %#llx: %s record skipped: %s\n", ds_reader__path(s->reader),
			(unsigned long long)offset, ds_record_type__name(hdr->type), why);
		return false;
	}
	return true;
}

static int consume(struct ds_session *s, const struct ds_event *ev)
{
	int err = s->sideband ? s->sideband(s->sideband_ctx, ev) : 0;

	if (!err)
		err = s->stitcher ? ds_stitcher__push(s->stitcher, ev) : s->fn(s->ctx, ev);

	if (err && !s->cb_err)
		s->cb_err = err;
	return err;
}

static int deliver_ordered(void *ctx, const struct ds_event_header *hdr, uint64_t offset)
{
	struct ds_session *s = ctx;
	struct ds_event ev;

	if (!make_event(s, hdr, offset, &ev))
		return 0;
	return consume(s, &ev);
}

static void count_lost(struct ds_session *s, const struct ds_event_header *hdr)
{
	uint64_t n;

	if (hdr->type == DS_REC_LOST && hdr->size >= 24) {
		memcpy(&n, (const uint8_t *)hdr + 16, 8);
		s->stats.lost += n;
	} else if (hdr->type == DS_REC_LOST_SAMPLES && hdr->size >= 16) {
		memcpy(&n, (const uint8_t *)hdr + 8, 8);
		s->stats.lost_samples += n;
	}
}

static int process_record(struct ds_session *s, const struct ds_record *rec)
{
	const struct ds_event_header *hdr = rec->hdr;
	uint32_t type = hdr->type;
	struct ds_event ev;

	if (type < DS_REC_MAX)
		s->stats.records[type]++;
	if (rec->decompressed)
		s->stats.compressed_bytes += hdr->size;
	if (type == DS_REC_FINISHED_ROUND)
		return ds_ordered__round(&s->ordered);
	if (type >= DS_REC_KERNEL_MAX || !ds_record_type__name(type)) {
		if (!ds_record_type__name(type))
			s->stats.unknown_records++;
		return 0;
	}
	count_lost(s, hdr);
	/* validate now, in file order, so a bad record is reported where it is */
	if (!make_event(s, hdr, rec->offset, &ev))
		return 0;
	if (ev.sample.time == DS_NO_TIME)
		return consume(s, &ev);
	return ds_ordered__queue(&s->ordered, hdr, rec->offset, ev.sample.time);
}

int ds_session__run(struct ds_session *s, const struct ds_session_opts *opts, ds_event_fn fn, void *ctx)
{
	struct ds_session_opts def = { 0 };
	struct ds_record rec;
	int ret, err = 0;

	if (!opts)
		opts = &def;
	s->fn = fn;
	s->ctx = ctx;
	s->sideband = opts->sideband;
	s->sideband_ctx = opts->sideband_ctx;
	ds_ordered__init(&s->ordered, deliver_ordered, s);
	if (!opts->no_stitch) {
		s->stitcher = ds_stitcher__new(&opts->stitch, fn, ctx);
		if (!s->stitcher)
			return -ENOMEM;
	}
	while ((ret = ds_reader__next(s->reader, &rec)) == 1) {
		err = process_record(s, &rec);
		if (err || s->cb_err)
			break;
	}
	if (ret < 0)
		snprintf(s->err, sizeof(s->err), "%s", ds_reader__error(s->reader));
	if (err == -ENOMEM)
		snprintf(s->err, sizeof(s->err), "out of memory");
	/* whatever was read is delivered, even when the input ended badly */
	if (!s->cb_err) {
		int e = ds_ordered__flush_all(&s->ordered);

		if (!e && s->stitcher)
			e = ds_stitcher__flush(s->stitcher);
		if (e && !err)
			err = e;
	}
	s->stats.unordered = s->ordered.nr_unordered;
	if (s->cb_err)
		return s->cb_err;
	if (err)
		return err;
	return ret < 0 ? ret : 0;
}
