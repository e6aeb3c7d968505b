// SPDX-License-Identifier: MIT
/*
 * Fuzz target 5: the kernel symbol file (--kallsyms), and the JIT map
 * parser (/tmp/perf-PID.map, same line parser family).  The input is
 * written as the kallsyms file (scanned through a buffer; searched in
 * place when it is sorted, else indexed; names read when hit) and looked
 * up at addresses taken from the input and at fixed probes; then as a perf
 * map of pid 4242.  Last, the input's bytes as the samples of a cache
 * file that names the kallsyms file (a header that matches it, as a
 * damaged or forged cache would), over a sorted kallsyms of its own.
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

/* The cache file's header, as lib/symbols/kallsyms.c writes it. */
struct kcache_head {
	char magic[8];
	uint64_t dev, ino, size, mtime_ns, ctime_ns;
	uint64_t tail, nr_samples;
};

/* A sorted kallsyms and a cache file for it whose samples are the input. */
static void fuzz_cache(const uint8_t *data, size_t size)
{
	static char text[64 * 300];
	char ks[128], dir[128], idx[256];
	struct kcache_head h = { .magic = "dstackK1" };
	struct stat st;
	size_t len = 0;
	int fd;

	snprintf(ks, sizeof(ks), "%s/kallsyms.sorted", fz_dir);
	snprintf(dir, sizeof(dir), "%s/cache", fz_dir);
	for (int i = 0; i < 300; i++)
		len += (size_t)snprintf(text + len, sizeof(text) - len, "%016llx %c s%d\n",
					0xffffffff81000000ULL + (unsigned long long)i * 64, i % 7 ? 'T' : 'r', i);
	if (!write_file(ks, (const uint8_t *)text, len) || stat(ks, &st))
		return;
	mkdir(dir, 0700);
	snprintf(idx, sizeof(idx), "%s/kallsyms-%llx-%llx.idx", dir, (unsigned long long)st.st_dev,
		 (unsigned long long)st.st_ino);
	h.dev = st.st_dev;
	h.ino = st.st_ino;
	h.size = (uint64_t)st.st_size;
	h.mtime_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000u + (uint64_t)st.st_mtim.tv_nsec;
	h.ctime_ns = (uint64_t)st.st_ctim.tv_sec * 1000000000u + (uint64_t)st.st_ctim.tv_nsec;
	h.nr_samples = size / 16;
	h.tail = size >= 8 ? len - (data[0] % 64) : len;
	fd = open(idx, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return;
	bool ok = write(fd, &h, sizeof(h)) == (ssize_t)sizeof(h) &&
		  (!h.nr_samples || write(fd, data, h.nr_samples * 16) == (ssize_t)(h.nr_samples * 16));
	close(fd);
	if (!ok)
		return;

	struct ds_symbols_opts so = { .kallsyms = ks, .cache_dir = dir };
	struct ds_symbols *syms = ds_symbols__new(&so);
	struct ds_frame f;

	if (!syms)
		return;
	for (uint64_t a = 0xffffffff81000000ULL - 64; a < 0xffffffff81000000ULL + 300 * 64 + 8192; a += 40)
		(void)ds_symbols__kernel(syms, a, &f);
	ds_symbols__delete(syms);
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
	fuzz_cache(data, size);
	return 0;
}
