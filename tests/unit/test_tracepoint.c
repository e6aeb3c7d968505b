// SPDX-License-Identifier: MIT
/*
 * Tracepoint format unit tests (lib/format/tracepoint.c), on format files of a
 * Linux 6.18 kernel (tracepoint_formats.h) and raw data built here; every
 * expected text is what perf 7.2 printed for a recorded sample with those
 * field values: sched_switch's prev_state letters ("D", "R+"),
 * timer_start's flags as libtraceevent's operator rotation evaluates them
 * ("D|P|I" for a value with none of those bits), raw_syscalls' array
 * fields, kmalloc's %pS and gfp flag table.  Then: a print fmt with an
 * unknown function gives "[FAILED TO PARSE]" and the raw fields; a
 * tracing-data blob is parsed and its damage reported with an offset; the
 * output is cut at the buffer's end; fields outside the raw data read as
 * zero.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dstack/log.h"
#include "dstack/tracepoint.h"
#include "tracepoint_formats.h"
#include "check.h"

static void put(unsigned char *raw, size_t off, uint64_t v, size_t size)
{
	memcpy(raw + off, &v, size);   /* little-endian host, as the recordings */
}

static const char *text(const struct ds_tp_event *ev, const void *raw, size_t size)
{
	static char out[4096];

	ds_tp_event__format(ev, raw, size, NULL, NULL, out, sizeof(out));
	return out;
}

static const char *resolve(void *ctx, uint64_t addr, uint64_t *start)
{
	(void)ctx;
	if (addr != 0xffffffff8139ab0cULL)
		return NULL;
	*start = 0xffffffff8139aa00ULL;
	return "sched_setaffinity";
}

static void test_sched_switch(void)
{
	struct ds_tp_event *ev = ds_tp_event__parse("sched", sched_switch, sizeof(sched_switch) - 1, 8);
	unsigned char raw[64] = { 0 };
	uint64_t v = 0;
	char comm[16];

	CHECK(ev && ds_tp_event__printable(ev), "sched_switch parses");
	if (!ev)
		return;
	CHECK(!strcmp(ds_tp_event__name(ev), "sched_switch") && ds_tp_event__id(ev) == 372, "name and id");
	memcpy(raw + 8, "perf", 5);
	put(raw, 24, 18874, 4);
	put(raw, 28, 120, 4);
	put(raw, 32, 2, 8);
	memcpy(raw + 40, "migration/0", 12);
	put(raw, 56, 18, 4);
	put(raw, 60, 0, 4);
	CHECK(!strcmp(text(ev, raw, sizeof(raw)), "prev_comm=perf prev_pid=18874 prev_prio=120 prev_state=D ==> "
		      "next_comm=migration/0 next_pid=18 next_prio=0"), "D: %s", text(ev, raw, sizeof(raw)));
	put(raw, 32, 0x100, 8);
	CHECK(strstr(text(ev, raw, sizeof(raw)), "prev_state=R+ ==>") != NULL, "R+: %s", text(ev, raw, sizeof(raw)));
	put(raw, 32, 0, 8);
	CHECK(strstr(text(ev, raw, sizeof(raw)), "prev_state=R ==>") != NULL, "R: %s", text(ev, raw, sizeof(raw)));
	put(raw, 32, 0x1, 8);
	CHECK(strstr(text(ev, raw, sizeof(raw)), "prev_state=S ==>") != NULL, "S: %s", text(ev, raw, sizeof(raw)));
	CHECK(ds_tp_event__field_u64(ev, "next_pid", raw, sizeof(raw), &v) && v == 18, "next_pid %llu", (unsigned long long)v);
	put(raw, 24, (uint32_t)-1, 4);
	CHECK(ds_tp_event__field_u64(ev, "prev_pid", raw, sizeof(raw), &v) && v == UINT64_MAX, "signed field sign-extends");
	CHECK(ds_tp_event__field_str(ev, "prev_comm", raw, sizeof(raw), comm, sizeof(comm)) && !strcmp(comm, "perf"), "comm");
	CHECK(!ds_tp_event__field_u64(ev, "next_prio", raw, 60, &v), "a field past the raw data is refused");
	CHECK(!ds_tp_event__field_u64(ev, "nope", raw, sizeof(raw), &v), "an unknown field is refused");
	/* cut raw data: what lies outside reads as zero, never past the buffer */
	CHECK(!strcmp(text(ev, raw, 30), "prev_comm=perf prev_pid=-1 prev_prio=0 prev_state=R ==> next_comm= next_pid=0 next_prio=0"),
	      "cut: %s", text(ev, raw, 30));
	ds_tp_event__delete(ev);
}

static void test_timer_start(void)
{
	struct ds_tp_event *ev = ds_tp_event__parse("timer", timer_start, sizeof(timer_start) - 1, 8);
	unsigned char raw[56] = { 0 };

	CHECK(ev && ds_tp_event__printable(ev), "timer_start parses");
	if (!ev)
		return;
	put(raw, 8, 0xffffc9000007fdf8ULL, 8);
	put(raw, 16, 0xffffffff814203c0ULL, 8);
	put(raw, 24, 4294968856ULL, 8);
	put(raw, 32, 4294968857ULL, 8);
	put(raw, 40, 4294968855ULL, 8);
	put(raw, 48, 0x06400000, 4);
	/* perf 7.2: "flags & (M|D|P|I)" is read as "(flags & M) | D | P | I" */
	CHECK(!strcmp(text(ev, raw, sizeof(raw)), "timer=0xffffc9000007fdf8 function=0xffffffff814203c0 expires=4294968856 "
		      "[timeout=1] bucket_expiry=4294968857 cpu=0 idx=25 flags=D|P|I"), "%s", text(ev, raw, sizeof(raw)));
	put(raw, 48, 0x06440001, 4);
	CHECK(strstr(text(ev, raw, sizeof(raw)), "cpu=1 idx=25 flags=M|D|P|I") != NULL, "%s", text(ev, raw, sizeof(raw)));
	ds_tp_event__delete(ev);
}

static void test_sys_enter(void)
{
	struct ds_tp_event *ev = ds_tp_event__parse("raw_syscalls", sys_enter, sizeof(sys_enter) - 1, 8);
	unsigned char raw[64] = { 0 };
	uint64_t args[6] = { 0xb, 0x2400, 0, 0x7fbfa882b5e0ULL, 1, 0 };
	char small[12];
	size_t n;

	CHECK(ev && ds_tp_event__printable(ev), "sys_enter parses");
	if (!ev)
		return;
	put(raw, 8, 16, 8);
	memcpy(raw + 16, args, sizeof(args));
	CHECK(!strcmp(text(ev, raw, sizeof(raw)), "NR 16 (b, 2400, 0, 7fbfa882b5e0, 1, 0)"), "%s", text(ev, raw, sizeof(raw)));
	n = ds_tp_event__format(ev, raw, sizeof(raw), NULL, NULL, small, sizeof(small));
	CHECK(n == strlen("NR 16 (b, 2400, 0, 7fbfa882b5e0, 1, 0)") && !strcmp(small, "NR 16 (b, 2"),
	      "cut output: %zu '%s'", n, small);
	ds_tp_event__delete(ev);
}

/* perf 7.2 printed "fd: 0x00000003, buf: 0x564c9fd7f0e0 ({0x0,...}), count: 0x00010000" */
static void test_dynamic_array(void)
{
	struct ds_tp_event *ev = ds_tp_event__parse("syscalls", sys_enter_write, sizeof(sys_enter_write) - 1, 8);
	unsigned char raw[56] = { 0 };

	CHECK(ev && ds_tp_event__printable(ev), "sys_enter_write parses");
	if (!ev)
		return;
	put(raw, 16, 3, 8);
	put(raw, 24, 0x564c9fd7f0e0ULL, 8);
	put(raw, 32, 0x10000, 8);
	put(raw, 40, 3u << 16 | 44, 4);   /* 3 bytes at 44 */
	raw[44] = 0x68;
	raw[45] = 0x69;
	CHECK(!strcmp(text(ev, raw, 47), "fd: 0x00000003, buf: 0x564c9fd7f0e0 ({0x68,0x69,0x0}), count: 0x00010000"),
	      "%s", text(ev, raw, 47));
	ds_tp_event__delete(ev);
}

static void test_kmalloc(void)
{
	struct ds_tp_event *ev = ds_tp_event__parse("kmem", kmalloc, sizeof(kmalloc) - 1, 8);
	unsigned char raw[56] = { 0 };
	char out[512];

	CHECK(ev && ds_tp_event__printable(ev), "kmalloc parses");
	if (!ev)
		return;
	put(raw, 8, 0xffffffff8139ab0cULL, 8);
	put(raw, 16, 0xffff8881012f0aa0ULL, 8);
	put(raw, 24, 32, 8);
	put(raw, 32, 32, 8);
	put(raw, 40, 0xcc0, 8);   /* GFP_KERNEL */
	put(raw, 48, (uint32_t)-1, 4);
	ds_tp_event__format(ev, raw, sizeof(raw), resolve, NULL, out, sizeof(out));
	CHECK(!strcmp(out, "call_site=sched_setaffinity+0x10c ptr=0xffff8881012f0aa0 bytes_req=32 bytes_alloc=32 "
		      "gfp_flags=GFP_KERNEL node=-1 accounted=false"), "%s", out);
	put(raw, 40, 0x400cc0, 8);   /* GFP_KERNEL_ACCOUNT */
	put(raw, 8, 0xffffffff81000000ULL, 8);
	ds_tp_event__format(ev, raw, sizeof(raw), resolve, NULL, out, sizeof(out));
	CHECK(strstr(out, "call_site=0xffffffff81000000 ") && strstr(out, "gfp_flags=GFP_KERNEL_ACCOUNT node=-1 accounted=true"),
	      "%s", out);
	ds_tp_event__delete(ev);
}

static void test_failed(void)
{
	static const char fmt[] =
		"name: odd\nID: 9\nformat:\n"
		"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\n"
		"\tfield:int v;\toffset:8;\tsize:4;\tsigned:1;\n"
		"\tfield:char name[8];\toffset:12;\tsize:8;\tsigned:0;\n"
		"\tfield:unsigned long x;\toffset:24;\tsize:8;\tsigned:0;\n\n"
		"print fmt: \"v=%d\", no_such_helper(REC->v)\n";
	struct ds_tp_event *ev = ds_tp_event__parse("x", fmt, sizeof(fmt) - 1, 8);
	unsigned char raw[32] = { 0 };

	CHECK(ev && !ds_tp_event__printable(ev), "an unknown function fails the print fmt");
	if (!ev)
		return;
	put(raw, 8, (uint32_t)-7, 4);
	memcpy(raw + 12, "abc", 4);
	put(raw, 24, 0x1234, 8);
	CHECK(!strcmp(text(ev, raw, sizeof(raw)), "[FAILED TO PARSE] v=-7 name=abc x=0x1234"), "%s", text(ev, raw, sizeof(raw)));
	ds_tp_event__delete(ev);
	CHECK(!ds_tp_event__parse("x", "garbage", 7, 8), "a text with no name and fields is refused");
}

static size_t put_bytes(unsigned char *b, size_t n, const void *p, size_t len)
{
	memcpy(b + n, p, len);
	return n + len;
}

static void test_blob(void)
{
	static unsigned char b[8192];
	uint64_t len = sizeof(sched_switch) - 1, z = 0;
	uint32_t pagesize = 4096, zero = 0, one = 1;
	struct ds_tp_set *set;
	size_t n = 0;

	n = put_bytes(b, n, "\x17\x08\x44tracing0.6", 14);   /* with the version's NUL */
	n = put_bytes(b, n, "\0\x08", 2);                    /* little-endian, long size 8 */
	n = put_bytes(b, n, &pagesize, 4);
	n = put_bytes(b, n, "header_page", 12);
	n = put_bytes(b, n, &z, 8);
	n = put_bytes(b, n, "header_event", 13);
	n = put_bytes(b, n, &z, 8);
	n = put_bytes(b, n, &zero, 4);                       /* no ftrace formats */
	n = put_bytes(b, n, &one, 4);                        /* one system */
	n = put_bytes(b, n, "sched", 6);
	n = put_bytes(b, n, &one, 4);                        /* one event */
	n = put_bytes(b, n, &len, 8);
	n = put_bytes(b, n, sched_switch, len);
	set = ds_tp_set__parse(b, n);
	CHECK(set && ds_tp_set__nr_events(set) == 1, "blob: %s", ds_errmsg());
	if (set) {
		const struct ds_tp_event *ev = ds_tp_set__find(set, 372);

		CHECK(ev && !strcmp(ds_tp_event__system(ev), "sched"), "found by its ID");
		CHECK(!ds_tp_set__find(set, 1), "an unknown ID finds nothing");
		ds_tp_set__delete(set);
	}
	set = ds_tp_set__parse(b, n - 10);
	CHECK(!set && strstr(ds_errmsg(), "offset 0x") && strstr(ds_errmsg(), "past the end"), "a cut blob: %s", ds_errmsg());
	ds_tp_set__delete(set);
	set = ds_tp_set__parse(b, 5);
	CHECK(!set && strstr(ds_errmsg(), "magic"), "no magic: %s", ds_errmsg());
}

int main(void)
{
	test_sched_switch();
	test_timer_start();
	test_sys_enter();
	test_dynamic_array();
	test_kmalloc();
	test_failed();
	test_blob();
	printf("test_tracepoint: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
