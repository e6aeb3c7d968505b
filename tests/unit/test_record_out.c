// SPDX-License-Identifier: MIT
/*
 * A recording's records written as perf record writes them (ds_record_out,
 * dstack/recorder.h) through the public API: MMAP2 records with build-ids
 * named once a file in the header, one without a build-id and an MMAP
 * not, an i386 task's [vdso] noticed (a 64-bit one's not), every record
 * written as it came, a failed write kept as the status.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "dstack/log.h"
#include "dstack/reader.h"
#include "dstack/recorder.h"
#include "dstack/writer.h"
#include "check.h"

/* An MMAP2 of @name at @start, with a build-id of @bid_len bytes (0: by device) */
static size_t mmap2(uint64_t *r, const char *name, uint64_t start, uint8_t bid_len)
{
	size_t name_len = (strlen(name) + 1 + 7) & ~(size_t)7, size = 72 + name_len;
	uint32_t pid_tid[2] = { 10, 10 };
	uint64_t range[3] = { start, 0x1000, 0 };
	uint8_t ids[24] = { bid_len, 0, 0, 0, 0xab, 0xcd, 0xef, 0x01 };
	struct ds_event_header h = { DS_REC_MMAP2, (uint16_t)(DS_MISC_USER | (bid_len ? DS_MISC_MMAP_BUILD_ID : 0)),
				     (uint16_t)size };

	memset(r, 0, size);
	memcpy(r, &h, sizeof(h));
	memcpy((char *)r + 8, pid_tid, 8);
	memcpy((char *)r + 16, range, 24);
	if (bid_len)
		memcpy((char *)r + 40, ids, 24);
	memcpy((char *)r + 72, name, strlen(name));
	return size;
}

int main(void)
{
	char path[] = "/tmp/test_record_out.XXXXXX";
	int fd = mkstemp(path);
	struct ds_attr a = { .type = 1, .sample_type = DS_SAMPLE_IP | DS_SAMPLE_TID };
	const uint64_t ids[] = { 1 };
	uint64_t r[64];
	struct ds_writer *w;
	struct ds_record_out *o;
	struct ds_reader *rd;
	struct ds_record rec;
	int n = 0, ret;

	CHECK(fd >= 0, "mkstemp");
	close(fd);
	w = ds_writer__open(path, false);
	o = w ? ds_record_out__new(w) : NULL;
	CHECK(w && o && !ds_writer__add_attr(w, &a, ds_attr__min_size(&a), ids, 1, "cpu-clock"), "set up: %s",
	      ds_errmsg());
	if (!o)
		return 1;
	CHECK(!ds_record_out__write(o, r, mmap2(r, "/bin/a", 0x400000, 4)), "an MMAP2 with a build-id");
	CHECK(!ds_record_out__write(o, r, mmap2(r, "/bin/a", 0x500000, 4)), "the same file again");
	CHECK(!ds_record_out__write(o, r, mmap2(r, "/lib/b.so", 0x7f0000000000ULL, 0)), "one by device");
	CHECK(!ds_record_out__vdso32_mapped(o), "no vDSO yet");
	CHECK(!ds_record_out__write(o, r, mmap2(r, "[vdso]", 0x7fff00000000ULL, 0)) && !ds_record_out__vdso32_mapped(o),
	      "a 64-bit task's vDSO");
	CHECK(!ds_record_out__write(o, r, mmap2(r, "[vdso]", 0xf7f00000, 0)) && ds_record_out__vdso32_mapped(o),
	      "an i386 task's vDSO");
	CHECK(ds_record_out__status(o) == 0, "no failure");
	CHECK(ds_writer__close(w) == 0, "close: %s", ds_errmsg());
	ds_record_out__delete(o);
	ds_record_out__delete(NULL);

	rd = ds_reader__open(path);
	CHECK(rd != NULL, "read back: %s", ds_errmsg());
	if (rd) {
		const struct ds_header_info *hi = ds_reader__info(rd);

		while ((ret = ds_reader__next(rd, &rec)) > 0)
			n += rec.hdr->type == DS_REC_MMAP2;
		CHECK(ret == 0 && n == 5, "%d MMAP2 records written", n);
		CHECK(hi->nr_build_ids == 1 && !strcmp(hi->build_ids[0].filename, "/bin/a") && hi->build_ids[0].size == 4 &&
		      hi->build_ids[0].data[0] == 0xab && hi->build_ids[0].pid == -1,
		      "one build-id, the host's: %zu", hi->nr_build_ids);
		ds_reader__close(rd);
	}
	unlink(path);

	/* a failed write: the sink's error, kept */
	w = ds_writer__open("/dev/full", false);
	o = w ? ds_record_out__new(w) : NULL;
	CHECK(o && !ds_writer__add_attr(w, &a, ds_attr__min_size(&a), ids, 1, "cpu-clock"), "set up /dev/full");
	if (o) {
		int err = 0;

		for (int i = 0; i < 100000 && !err; i++)
			err = ds_record_out__write(o, r, mmap2(r, "/bin/a", 0x400000, 0));
		CHECK(err == -ENOSPC && ds_record_out__status(o) == -ENOSPC && strstr(ds_errmsg(), "/dev/full"),
		      "the failure kept: %d, %s", err, ds_errmsg());
		ds_writer__close(w);
		ds_record_out__delete(o);
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}
