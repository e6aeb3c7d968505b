// SPDX-License-Identifier: MIT
/*
 * Fuzz target 5: the kernel symbol file (--kallsyms), and the JIT map
 * parser (/tmp/perf-PID.map, same line parser family).  The input is
 * written as the kallsyms file (scanned through a buffer; searched in
 * place when it is sorted, else indexed; names read when hit) and looked
 * up at addresses taken from the input and at fixed probes; then as a perf
 * map of pid 4242.
 */
#include <fcntl.h>
#include "fuzz_common.h"

static bool write_file(const char *path, const uint8_t *data, size_t size)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	bool ok = fd >= 0 && (!size || write(fd, data, size) == (ssize_t)size);

	if (fd >= 0)
		close(fd);
	return ok;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char ks[128], map[128], tmp[128];
	struct ds_frame f;

	fz_init();
	snprintf(ks, sizeof(ks), "%s/kallsyms.fuzz", fz_dir);
	snprintf(tmp, sizeof(tmp), "%s/tmp", fz_dir);
	snprintf(map, sizeof(map), "%s/tmp/perf-4242.map", fz_dir);
	mkdir(tmp, 0700);
	if (!write_file(ks, data, size) || !write_file(map, data, size))
		return 0;

	struct ds_symbols_opts so = { .symfs = fz_dir, .kallsyms = ks };
	struct ds_symbols *syms = ds_symbols__new(&so);

	if (!syms)
		return 0;
	uint64_t probes[] = { 0, 1, 0xffffffff81000000ULL, 0xffffffff8100abcdULL, UINT64_MAX, UINT64_MAX - 4095 };

	for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++) {
		(void)ds_symbols__kernel(syms, probes[i], &f);
		(void)ds_symbols__jit(syms, 4242, probes[i], &f);
	}
	/* addresses the input itself names: the first hex run of each early line */
	for (size_t o = 0, lines = 0; o < size && lines < 64; lines++) {
		const uint8_t *nl = memchr(data + o, '\n', size - o);
		uint64_t v = 0;

		for (size_t k = o; k < size && k < o + 16; k++) {
			int c = data[k] | 0x20;

			if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
				break;
			v = v << 4 | (uint64_t)(c <= '9' ? c - '0' : c - 'a' + 10);
		}
		(void)ds_symbols__kernel(syms, v, &f);
		(void)ds_symbols__kernel(syms, v + 1, &f);
		(void)ds_symbols__jit(syms, 4242, v, &f);
		if (!nl)
			break;
		o = (size_t)(nl - data) + 1;
	}
	ds_symbols__delete(syms);
	return 0;
}
