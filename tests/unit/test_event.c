// SPDX-License-Identifier: MIT
/*
 * Sample parsing unit tests: for every combination of the fixed-size
 * sample fields, with and without a callchain, a record built here parses
 * to the values written into it; cut at every length short of whole it is
 * refused with the reason the field-by-field parser gives; a callchain
 * count past the record is refused; bytes after the last field are
 * ignored; fields after the callchain (user regs) still parse; unknown
 * sample_type bits are refused.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dstack/event.h"
#include "dstack/reader.h"
#include "check.h"

/* the fixed fields in record order, and what each is written as */
static const uint64_t fixed_bits[] = {
	DS_SAMPLE_IDENTIFIER, DS_SAMPLE_IP, DS_SAMPLE_TID, DS_SAMPLE_TIME, DS_SAMPLE_ADDR,
	DS_SAMPLE_ID, DS_SAMPLE_STREAM_ID, DS_SAMPLE_CPU, DS_SAMPLE_PERIOD,
};
#define NR_FIXED (sizeof(fixed_bits) / sizeof(*fixed_bits))

struct rec {
	uint64_t w[64];            /* header first */
	size_t nw;
};

static void put(struct rec *r, uint64_t v)
{
	r->w[r->nw++] = v;
}

/* A sample of @type with field k = 0x1000 + k (TID: pid 7, tid 9; CPU: 3), @nr callchain entries. */
static void build(struct rec *r, uint64_t type, uint64_t nr)
{
	r->nw = 1;
	for (size_t k = 0; k < NR_FIXED; k++) {
		if (!(type & fixed_bits[k]))
			continue;
		if (fixed_bits[k] == DS_SAMPLE_TID)
			put(r, 7 | (uint64_t)9 << 32);
		else if (fixed_bits[k] == DS_SAMPLE_CPU)
			put(r, 3 | (uint64_t)0xdead << 32);
		else
			put(r, 0x1000 + k);
	}
	if (type & DS_SAMPLE_CALLCHAIN) {
		put(r, nr);
		for (uint64_t i = 0; i < nr; i++)
			put(r, 0xffffffff81000000ULL + i);
	}
}

static void set_header(struct rec *r, size_t bytes)
{
	struct ds_event_header h = { .type = DS_REC_SAMPLE, .misc = DS_MISC_USER, .size = (uint16_t)bytes };

	memcpy(&r->w[0], &h, sizeof(h));
}

/* The fields @s should have for a record built as above. */
static bool fields_ok(const struct ds_sample *s, uint64_t type, uint64_t nr, char *why, size_t n)
{
	uint64_t id = type & DS_SAMPLE_ID ? 0x1005 : type & DS_SAMPLE_IDENTIFIER ? 0x1000 : 0;

	snprintf(why, n, "fields");
	if (s->id != id || s->ip != (type & DS_SAMPLE_IP ? 0x1001u : 0) ||
	    s->time != (type & DS_SAMPLE_TIME ? 0x1003 : DS_NO_TIME) || s->addr != (type & DS_SAMPLE_ADDR ? 0x1004u : 0) ||
	    s->stream_id != (type & DS_SAMPLE_STREAM_ID ? 0x1006u : 0) || s->period != (type & DS_SAMPLE_PERIOD ? 0x1008u : 0))
		return snprintf(why, n, "u64 fields"), false;
	if (s->has_tid != !!(type & DS_SAMPLE_TID) || s->pid != (type & DS_SAMPLE_TID ? 7u : (uint32_t)-1) ||
	    s->tid != (type & DS_SAMPLE_TID ? 9u : (uint32_t)-1))
		return snprintf(why, n, "pid/tid %u/%u", s->pid, s->tid), false;
	if (s->has_cpu != !!(type & DS_SAMPLE_CPU) || s->cpu != (type & DS_SAMPLE_CPU ? 3u : (uint32_t)-1))
		return snprintf(why, n, "cpu %u", s->cpu), false;
	if (s->cpumode != DS_MISC_USER)
		return snprintf(why, n, "cpumode"), false;
	if (!(type & DS_SAMPLE_CALLCHAIN))
		return s->callchain == NULL && s->callchain_nr == 0;
	if (!s->callchain || s->callchain_nr != nr)
		return snprintf(why, n, "callchain nr %llu", (unsigned long long)s->callchain_nr), false;
	for (uint64_t i = 0; i < nr; i++)
		if (s->callchain[i] != 0xffffffff81000000ULL + i)
			return snprintf(why, n, "callchain[%llu]", (unsigned long long)i), false;
	return true;
}

static void test_layouts(void)
{
	struct ds_evsel e;
	struct ds_sample s;
	struct rec r;
	const char *why;
	char what[64];
	int good = 0, cut = 0, cuts = 0, bad_nr = 0, extra = 0;

	for (uint64_t mask = 0; mask < (1u << NR_FIXED); mask++) {
		for (int cc = 0; cc < 2; cc++) {
			uint64_t type = cc ? DS_SAMPLE_CALLCHAIN : 0, nr = cc ? mask % 7 : 0;

			for (size_t k = 0; k < NR_FIXED; k++)
				if (mask & (1u << k))
					type |= fixed_bits[k];
			memset(&e, 0, sizeof(e));
			e.attr.sample_type = type;
			build(&r, type, nr);
			set_header(&r, r.nw * 8);
			why = NULL;
			good += !ds_sample__parse(&e, (const void *)r.w, &s, &why) && fields_ok(&s, type, nr, what, sizeof(what));
			/* every shorter whole-word length is refused, with the field it misses */
			for (size_t nw = 1; nw < r.nw; nw++, cuts++) {
				set_header(&r, nw * 8);
				why = NULL;
				cut += ds_sample__parse(&e, (const void *)r.w, &s, &why) == -EINVAL && why &&
				       (strstr(why, "past end of record") || strstr(why, "exceeds the record"));
			}
			/* trailing bytes: ignored, as the field-by-field parser does */
			put(&r, 0x5555);
			set_header(&r, r.nw * 8);
			extra += !ds_sample__parse(&e, (const void *)r.w, &s, &why) && fields_ok(&s, type, nr, what, sizeof(what));
			if (cc) {   /* a count past the record */
				build(&r, type, nr);
				r.w[r.nw - nr - 1] = nr + 1;
				set_header(&r, r.nw * 8);
				why = NULL;
				bad_nr += ds_sample__parse(&e, (const void *)r.w, &s, &why) == -EINVAL && why &&
					  strstr(why, "callchain nr exceeds the record");
			}
		}
	}
	CHECK(good == 1024, "every layout parses to what was written: %d of 1024", good);
	CHECK(extra == 1024, "trailing bytes ignored: %d of 1024", extra);
	CHECK(bad_nr == 512, "callchain counts past the record refused: %d of 512", bad_nr);
	CHECK(cut == cuts && cuts > 4000, "cut records refused with their reason: %d of %d", cut, cuts);
}

/* Fields after the callchain, and sample_type bits this reader does not know. */
static void test_after_callchain(void)
{
	struct ds_evsel e;
	struct ds_sample s;
	struct rec r;
	const char *why = NULL;
	char what[64];
	uint64_t type = DS_SAMPLE_IP | DS_SAMPLE_TID | DS_SAMPLE_TIME | DS_SAMPLE_CALLCHAIN | DS_SAMPLE_REGS_USER;

	memset(&e, 0, sizeof(e));
	e.attr.sample_type = type;
	e.nr_regs_user = 2;
	build(&r, type, 3);
	put(&r, 2);      /* abi */
	put(&r, 111);
	put(&r, 222);
	set_header(&r, r.nw * 8);
	CHECK(!ds_sample__parse(&e, (const void *)r.w, &s, &why) && fields_ok(&s, type, 3, what, sizeof(what)) &&
	      s.regs_user_abi == 2 && s.regs_user && s.regs_user[0] == 111 && s.regs_user[1] == 222,
	      "regs after the callchain: %s", why ? why : what);
	set_header(&r, (r.nw - 1) * 8);
	why = NULL;
	CHECK(ds_sample__parse(&e, (const void *)r.w, &s, &why) == -EINVAL && why && strstr(why, "user regs"),
	      "regs cut: %s", why ? why : "accepted");
	e.attr.sample_type = type | (1ULL << 40);
	why = NULL;
	CHECK(ds_sample__parse(&e, (const void *)r.w, &s, &why) == -EINVAL && why && strstr(why, "does not know"),
	      "unknown sample_type bits: %s", why ? why : "accepted");
}

/* STACK_USER after REGS_USER: size, data, dyn_size; a dyn_size over the size and an unknown ABI refused */
static void test_stack_user(void)
{
	struct ds_evsel e;
	struct ds_sample s;
	struct rec r;
	const char *why = NULL;
	uint64_t type = DS_SAMPLE_IP | DS_SAMPLE_TID | DS_SAMPLE_REGS_USER | DS_SAMPLE_STACK_USER;
	size_t abi_at;

	memset(&e, 0, sizeof(e));
	e.attr.sample_type = type;
	e.nr_regs_user = 1;
	build(&r, type, 0);
	abi_at = r.nw;
	put(&r, 1);      /* abi 32-bit */
	put(&r, 0x8049000);
	put(&r, 16);     /* stack size */
	put(&r, 0x1111);
	put(&r, 0x2222);
	put(&r, 12);     /* dyn_size */
	set_header(&r, r.nw * 8);
	CHECK(!ds_sample__parse(&e, (const void *)r.w, &s, &why) && s.regs_user_abi == 1 && s.stack_user_size == 16 &&
	      s.stack_user_dyn == 12 && s.stack_user && !memcmp(s.stack_user, &r.w[abi_at + 3], 16),
	      "stack after regs: %s", why ? why : "fields");
	r.w[r.nw - 1] = 24;
	why = NULL;
	CHECK(ds_sample__parse(&e, (const void *)r.w, &s, &why) == -EINVAL && why && strstr(why, "dyn_size"),
	      "dyn_size over size: %s", why ? why : "accepted");
	r.w[r.nw - 1] = 12;
	set_header(&r, (r.nw - 1) * 8);
	why = NULL;
	CHECK(ds_sample__parse(&e, (const void *)r.w, &s, &why) == -EINVAL && why && strstr(why, "dyn_size"),
	      "dyn_size cut: %s", why ? why : "accepted");
	set_header(&r, r.nw * 8);
	r.w[abi_at] = 3;
	why = NULL;
	CHECK(ds_sample__parse(&e, (const void *)r.w, &s, &why) == -EINVAL && why && strstr(why, "ABI"),
	      "register ABI 3: %s", why ? why : "accepted");
}

int main(void)
{
	test_layouts();
	test_after_callchain();
	test_stack_user();
	printf("test_event: %d passed, %d failed\n", passed, failed);
	return failed != 0;
}
