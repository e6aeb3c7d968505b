// SPDX-License-Identifier: MIT
/*
 * Fuzz target 3: PERF_RECORD_COMPRESSED / COMPRESSED2 records.
 * Input layout:
 *   byte 0      mode: bit 0 = zstd-compress the payload here (fuzz the
 *               records inside), else the payload is the raw zstd stream
 *               (fuzz the decoder's error paths); bit 1 = COMPRESSED2
 *   byte 1      chunk size / 64 - 1: the compressed bytes are cut into
 *               records of this size, so records span compressed records
 *   bytes 2..3  prefix length P (little endian)
 *   P bytes     plain records after the pipe header (attrs etc.)
 *   the rest    payload
 * The stream (pipe header + prefix + compressed records) is read from a
 * memfd through the full script pipeline.
 */
#include <zstd.h>
#include "fuzz_common.h"

static uint8_t *out;
static size_t out_len, out_cap;

static void put(const void *p, size_t n)
{
	if (out_len + n > out_cap) {
		out_cap = (out_len + n) * 2;
		out = realloc(out, out_cap);
		if (!out)
			abort();
	}
	memcpy(out + out_len, p, n);
	out_len += n;
}

static void put_compressed(const uint8_t *z, size_t zlen, size_t chunk, bool v2)
{
	for (size_t off = 0; off < zlen; off += chunk) {
		size_t n = zlen - off < chunk ? zlen - off : chunk;
		size_t hsz = v2 ? 16 : 8;
		/* perf pads COMPRESSED2 to 8 bytes; do the same */
		size_t rsz = v2 ? (hsz + n + 7) & ~(size_t)7 : hsz + n;
		struct ds_event_header h = { v2 ? DS_REC_COMPRESSED2 : DS_REC_COMPRESSED, 0, (uint16_t)rsz };
		static const uint8_t pad[8];

		put(&h, sizeof(h));
		if (v2) {
			uint64_t dsz = n;

			put(&dsz, 8);
		}
		put(z + off, n);
		put(pad, rsz - hsz - n);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t hdr[16] = { 'P', 'E', 'R', 'F', 'I', 'L', 'E', '2', 16 };
	char path[64];

	fz_init();
	if (size < 4)
		return 0;
	uint8_t mode = data[0];
	size_t chunk = ((size_t)data[1] + 1) * 64;
	size_t plen = (size_t)data[2] | (size_t)data[3] << 8;

	data += 4;
	size -= 4;
	if (plen > size)
		plen = size;
	out_len = 0;
	put(hdr, sizeof(hdr));
	put(data, plen);
	data += plen;
	size -= plen;
	if (mode & 1) {
		size_t cap = ZSTD_compressBound(size);
		uint8_t *z = malloc(cap ? cap : 1);
		size_t zlen = z ? ZSTD_compress(z, cap, data, size, 1) : 0;

		if (z && !ZSTD_isError(zlen))
			put_compressed(z, zlen, chunk, mode & 2);
		free(z);
	} else {
		put_compressed(data, size, chunk, mode & 2);
	}
	int fd = fz_memfd(out, out_len, path, sizeof(path));

	if (fd < 0)
		return 0;
	fz_run_path(path, false, 0, false);
	close(fd);
	return 0;
}
