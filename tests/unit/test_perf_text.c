// SPDX-License-Identifier: MIT
/*
 * perf's text forms (dstack/perf_text.h) through the public API: data
 * sources decoded (levels, hops, snoops, TLB, locks, blocks), branch
 * flags (prediction, cycles, types old and new, speculation), registers
 * (names, XMM slots, unknown ones), page sizes, side-band records (COMM
 * with exec, FORK, MMAP, MMAP2 by device and by build-id, SWITCH both
 * kinds, LOST, a record that does not parse), a dumped sample (its
 * callchain, markers and cookie named), and cut texts.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "dstack/log.h"
#include "dstack/perf_text.h"
#include "dstack/writer.h"
#include "check.h"

#define SAME(got, want) CHECK(!strcmp(got, want), "got '%s', want '%s'", got, want)

static void test_data_src(void)
{
	char b[160];
	/* LOAD; L1 hit; snoop None; TLB L1 and L2, hit; lock No; blk none */
	uint64_t v = 2 | (1ULL << (5 + 3) | 1ULL << (5 + 1)) | 1ULL << (19 + 1) |
		     (uint64_t)((1 << 3) | (1 << 4) | (1 << 1)) << 26;
	size_t n = ds_data_src__text(v, b, sizeof(b));

	SAME(b, "|OP LOAD|LVL L1 hit|SNP None|TLB L1 or L2 hit|LCK No|BLK  N/A");
	CHECK(n == strlen(b), "length %zu", n);
	ds_data_src__text(0, b, sizeof(b));
	SAME(b, "|OP No|LVL N/A|SNP N/A|TLB N/A|LCK No|BLK  N/A");
	/* the level by number: remote, 2 hops (socket, same board), RAM, miss; lock Yes; blk data and addr */
	v = 4 | 1ULL << (5 + 2) | 13ULL << 33 | 1ULL << 37 | 3ULL << 43 | 2ULL << 24 | 6ULL << 40;
	ds_data_src__text(v, b, sizeof(b));
	SAME(b, "|OP STORE|LVL Remote socket, same board RAM miss|SNP N/A|TLB N/A|LCK Yes|BLK  Data Addr");
	/* snoop HitM and Fwd; unknown level number 8 */
	v = 1ULL << (19 + 4) | 1ULL << 38 | 8ULL << 33;
	ds_data_src__text(v, b, sizeof(b));
	SAME(b, "|OP No|LVL Unknown level 8 |SNP HitM or Fwd|TLB N/A|LCK No|BLK  N/A");
	n = ds_data_src__text(v, b, 10);
	CHECK(n == 9 && !strcmp(b, "|OP No|LV"), "cut: %zu '%s'", n, b);
}

static void test_branch_flags(void)
{
	char b[96];

	ds_branch_flags__text(0, b, sizeof(b));
	SAME(b, "/-/-/-/0//- ");
	/* predicted, in_tx, 12 cycles, CALL, speculative correct path */
	ds_branch_flags__text(2 | 4 | 12 << 4 | 4ULL << 20 | 3ULL << 24, b, sizeof(b));
	SAME(b, "/P/X/-/12/CALL/SPEC_CORRECT_PATH ");
	/* mispredicted, not taken, aborted; new type FAULT_DATA */
	ds_branch_flags__text(1 | 8 | 1ULL << 33 | 15ULL << 20 | 1ULL << 26, b, sizeof(b));
	SAME(b, "/MN/-/A/0/FAULT_DATA/- ");
	ds_branch_flags__text(2 | 1ULL << 33 | 15ULL << 20 | 9ULL << 26, b, sizeof(b));
	SAME(b, "/PN/-/-/0/(null)/- ");
	CHECK(ds_branch_flags__text(2, b, 4) == strlen("/P/-/-/0//- ") && !strcmp(b, "/P/"), "cut: '%s'", b);
}

static void test_regs(void)
{
	const uint64_t regs[] = { 0x200, 0x1, 0xdead, 0x7 };
	char b[256];

	CHECK(ds_regs__text(2, NULL, 3, b, sizeof(b)) == 0 && !b[0], "no registers: nothing");
	/* AX (0), BX (1), XMM0 (32), 33 (its other half: unknown) */
	ds_regs__text(2, regs, 1ULL | 1ULL << 1 | 1ULL << 32 | 1ULL << 33, b, sizeof(b));
	SAME(b, " ABI:2    AX:0x200    BX:0x1  XMM0:0xdead unknown:0x7 ");
}

static void test_page_size(void)
{
	char b[16];

	ds_page_size__text(0, b, sizeof(b));
	SAME(b, "N/A");
	ds_page_size__text(4096, b, sizeof(b));
	SAME(b, "4K");
	ds_page_size__text(2 << 20, b, sizeof(b));
	SAME(b, "2M");
	ds_page_size__text(1024, b, sizeof(b));
	SAME(b, "1024B");
	ds_page_size__text(1ULL << 40, b, sizeof(b));
	SAME(b, "1024G");
}

static struct ds_evsel evsel;   /* no sample_id_all: no trailer */

static struct ds_event event_of(uint64_t *rec, uint32_t type, uint16_t misc, size_t bytes)
{
	struct ds_event_header h = { type, misc, (uint16_t)bytes };
	struct ds_event ev = { .hdr = (const struct ds_event_header *)rec, .evsel = &evsel };

	memcpy(rec, &h, sizeof(h));
	ev.sample.pid = 77;
	ev.sample.tid = 78;
	return ev;
}

static void test_side_band(void)
{
	uint64_t rec[64];
	char b[512];
	int32_t pid, tid;
	struct ds_event ev;
	uint32_t u32[2] = { 10, 11 };
	int n;

	/* COMM exec: pid, tid, name */
	memset(rec, 0, sizeof(rec));
	memcpy((char *)rec + 8, u32, 8);
	memcpy((char *)rec + 16, "bash", 5);
	ev = event_of(rec, DS_REC_COMM, DS_MISC_COMM_EXEC, 24);
	n = ds_side_band__text(&ev, &pid, &tid, b, sizeof(b));
	SAME(b, "PERF_RECORD_COMM exec: bash:10/11\n");
	CHECK(n == (int)strlen(b) && pid == 10 && tid == 11, "comm: %d, task %d/%d", n, pid, tid);
	/* FORK: pid, ppid, tid, ptid, time */
	uint32_t task[4] = { 20, 1, 21, 1 };

	memcpy((char *)rec + 8, task, 16);
	ev = event_of(rec, DS_REC_FORK, 0, 8 + 16 + 8);
	ds_side_band__text(&ev, &pid, &tid, b, sizeof(b));
	SAME(b, "PERF_RECORD_FORK(20:21):(1:1)\n");
	CHECK(pid == 20 && tid == 21, "fork's task %d/%d", pid, tid);
	/* MMAP: pid, tid, start, len, pgoff, filename */
	uint64_t m[3] = { 0x400000, 0x1000, 0 };

	memset(rec, 0, sizeof(rec));
	memcpy((char *)rec + 8, u32, 8);
	memcpy((char *)rec + 16, m, 24);
	memcpy((char *)rec + 40, "/bin/x", 7);
	ev = event_of(rec, DS_REC_MMAP, DS_MISC_USER, 48);
	ds_side_band__text(&ev, &pid, &tid, b, sizeof(b));
	SAME(b, "PERF_RECORD_MMAP 10/11: [0x400000(0x1000) @ 0]: x /bin/x\n");
	/* MMAP2 by device: ..., maj, min, ino, ino_generation, prot, flags, filename */
	uint32_t dev[2] = { 0xfd, 1 };
	uint64_t ino[2] = { 123, 4 };
	uint32_t prot[2] = { PROT_READ | PROT_EXEC, MAP_PRIVATE };

	memset(rec, 0, sizeof(rec));
	memcpy((char *)rec + 8, u32, 8);
	memcpy((char *)rec + 16, m, 24);
	memcpy((char *)rec + 40, dev, 8);
	memcpy((char *)rec + 48, ino, 16);
	memcpy((char *)rec + 64, prot, 8);
	memcpy((char *)rec + 72, "/lib/libc.so.6", 15);
	ev = event_of(rec, DS_REC_MMAP2, DS_MISC_USER, 72 + 16);
	ds_side_band__text(&ev, &pid, &tid, b, sizeof(b));
	SAME(b, "PERF_RECORD_MMAP2 10/11: [0x400000(0x1000) @ 0 fd:01 123 4]: r-xp /lib/libc.so.6\n");
	n = ds_side_band__text(&ev, &pid, &tid, b, 20);
	CHECK(n == (int)strlen("PERF_RECORD_MMAP2 10/11: [0x400000(0x1000) @ 0 fd:01 123 4]: r-xp /lib/libc.so.6\n") &&
	      strlen(b) == 19, "cut: %d '%s'", n, b);
	/* MMAP2 with a build-id: its size byte at the device's place, the id after it */
	uint8_t bid[24] = { 3, 0, 0, 0, 0xab, 0xcd, 0xef };

	memcpy((char *)rec + 40, bid, 24);
	ev = event_of(rec, DS_REC_MMAP2, DS_MISC_USER | DS_MISC_MMAP_BUILD_ID, 72 + 16);
	ds_side_band__text(&ev, &pid, &tid, b, sizeof(b));
	SAME(b, "PERF_RECORD_MMAP2 10/11: [0x400000(0x1000) @ 0 <abcdef>]: r-xp /lib/libc.so.6\n");
	/* SWITCH out, preempted; SWITCH_CPU_WIDE in, with the previous task */
	ev = event_of(rec, DS_REC_SWITCH, DS_MISC_SWITCH_OUT | DS_MISC_SWITCH_OUT_PREEMPT, 8);
	ds_side_band__text(&ev, &pid, &tid, b, sizeof(b));
	SAME(b, "PERF_RECORD_SWITCH OUT preempt\n");
	CHECK(pid == 77 && tid == 78, "switch: the record's own task %d/%d", pid, tid);
	memcpy((char *)rec + 8, u32, 8);
	ev = event_of(rec, DS_REC_SWITCH_CPU_WIDE, 0, 16);
	ds_side_band__text(&ev, &pid, &tid, b, sizeof(b));
	SAME(b, "PERF_RECORD_SWITCH_CPU_WIDE IN           prev pid/tid:    10/11   \n");
	/* LOST: id, lost */
	uint64_t lost[2] = { 1, 42 };

	memcpy((char *)rec + 8, lost, 16);
	ev = event_of(rec, DS_REC_LOST, 0, 24);
	ds_side_band__text(&ev, &pid, &tid, b, sizeof(b));
	SAME(b, "PERF_RECORD_LOST lost 42\n");
	/* a COMM too short to hold its name; a sample */
	ev = event_of(rec, DS_REC_COMM, 0, 8);
	CHECK(ds_side_band__text(&ev, &pid, &tid, b, sizeof(b)) == -EINVAL, "short COMM refused");
	ev = event_of(rec, DS_REC_SAMPLE, 0, 8);
	CHECK(ds_side_band__text(&ev, &pid, &tid, b, sizeof(b)) == -EINVAL, "a sample is no side-band record");
}

/* A file of one event (ip, tid, time, callchain) and one sample with a deferred chain, dumped record by record. */
static void test_dump(void)
{
	char path[] = "/tmp/test_perf_text.XXXXXX", b[1024];
	int fd = mkstemp(path);
	struct ds_attr a = { .type = 1, .sample_type = DS_SAMPLE_IP | DS_SAMPLE_TID | DS_SAMPLE_TIME | DS_SAMPLE_CALLCHAIN };
	const uint64_t ids[] = { 1 };
	uint64_t rec[9] = { 0, 0x401000, 5ULL << 32 | 6, 1000, 4, DS_CONTEXT_KERNEL, 0xffffffff81000000ULL,
			    DS_CONTEXT_USER_DEFERRED, 0x77 };
	struct ds_event_header h = { DS_REC_SAMPLE, DS_MISC_KERNEL, sizeof(rec) };
	struct ds_writer *w;
	struct ds_reader *r;
	struct ds_record rc;
	size_t n;

	CHECK(fd >= 0, "mkstemp");
	close(fd);
	memcpy(rec, &h, sizeof(h));
	w = ds_writer__open(path, false);
	CHECK(w && !ds_writer__add_attr(w, &a, ds_attr__min_size(&a), ids, 1, "cpu-clock") &&
	      !ds_writer__write(w, rec, sizeof(rec)) && !ds_writer__close(w), "writing: %s", ds_errmsg());
	r = ds_reader__open(path);
	CHECK(r && ds_reader__next(r, &rc) == 1, "reading: %s", ds_errmsg());
	if (r) {
		n = ds_record__dump_text(r, &rc, b, sizeof(b));
		SAME(b, "0xc0 [0x48]: PERF_RECORD_SAMPLE cpu-clock ip 0x401000 period 0 pid 6 tid 5 time 1000\n"
			" ... chain: nr:4\n"
			" .....  0: ffffffffffffff80 PERF_CONTEXT_KERNEL\n"
			" .....  1: ffffffff81000000\n"
			" .....  2: fffffffffffffd80 PERF_CONTEXT_USER_DEFERRED\n"
			" .....  3: 0000000000000077 (cookie)\n");
		CHECK(n == strlen(b), "length %zu", n);
		CHECK(ds_record__dump_text(r, &rc, b, 16) == n && strlen(b) == 15, "cut: '%s'", b);
		ds_reader__close(r);
	}
	unlink(path);
}

int main(void)
{
	test_data_src();
	test_branch_flags();
	test_regs();
	test_page_size();
	test_side_band();
	test_dump();
	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}
