// SPDX-License-Identifier: MIT
/*
 * Fuzz target 1: a perf.data file (file or pipe-mode layout, from a
 * memfd, as `dstack script -i FILE` reads it) through reader, ordering,
 * stitcher and machine.  The last input byte's low bit also runs the
 * --no-merge-callchains path (no stitching), its next bit a 4 KiB memory
 * budget (the bounds' paths: early delivery, copies, compaction), the
 * next one perf's order of deferred samples (script --perf-order).
 */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64];
	int fd;

	fz_init();
	fd = fz_memfd(data, size, path, sizeof(path));
	if (fd < 0)
		return 0;
	fz_run_path(path, size && (data[size - 1] & 1), size && (data[size - 1] & 2) ? 4096 : 0,
		    size && (data[size - 1] & 4));
	close(fd);
	return 0;
}
