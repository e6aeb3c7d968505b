// SPDX-License-Identifier: MIT
/*
 * The byte source's windows, mapped and read: every byte of a file comes
 * back as it is in the file through either kind, from front to back and
 * jumping about; a pinned window keeps its bytes after the source moved
 * on; windows stay within what the pin limit allows; and a file that
 * shrank after it was opened gives -ENODATA in both kinds (a mapping
 * past the end is never read: the source falls back to pread); one cut
 * while mapped reads zeros where it lost pages, and says how many.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "format/source.h"
#include "check.h"

#define FILE_SIZE (5u << 20) + 12345

/* windows are mapped unless the program has a SIGBUS handler of its own (a sanitizer's) */
static bool expect_map;

static uint8_t byte_at(uint64_t off)
{
	return (uint8_t)(off * 2654435761u >> 13);
}

/* A temporary file of @size bytes (byte_at each), its path in @path. */
static int make_file(char *path, size_t size)
{
	static uint8_t buf[1 << 16];
	int fd;

	strcpy(path, "/tmp/test_source.XXXXXX");
	fd = mkstemp(path);
	if (fd < 0)
		return -1;
	for (size_t off = 0; off < size;) {
		size_t n = size - off < sizeof(buf) ? size - off : sizeof(buf);

		for (size_t i = 0; i < n; i++)
			buf[i] = byte_at(off + i);
		if (write(fd, buf, n) != (ssize_t)n) {
			close(fd);
			return -1;
		}
		off += n;
	}
	return fd;
}

static bool same_bytes(const uint8_t *p, uint64_t off, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != byte_at(off + i))
			return false;
	return true;
}

static bool open_source(struct ds_source *s, const char *path, bool no_map, size_t pin_limit)
{
	if (dsi_source__open(s, path))
		return false;
	s->no_map = no_map;
	s->pin_limit = pin_limit;
	return true;
}

/* Front to back in record-sized steps, then jumps; both kinds, several pin limits. */
static void test_reads(const char *path, bool no_map, size_t pin_limit)
{
	struct ds_source s;
	const uint8_t *p;
	bool ok = true, mapped = false;
	uint64_t off = 0;
	size_t len = 1, biggest = 0;

	if (!open_source(&s, path, no_map, pin_limit)) {
		CHECK(0, "open %s", path);
		return;
	}
	while (off < FILE_SIZE) {
		if (len > FILE_SIZE - off)
			len = FILE_SIZE - off;
		if (dsi_source__get(&s, off, len, &p) || !same_bytes(p, off, len)) {
			ok = false;
			break;
		}
		mapped |= s.win->mapped;
		if (s.win->cap > biggest)
			biggest = s.win->cap;
		off += len;
		len = len * 7 % 9001 + 1;   /* 1 byte to ~9 KiB, crossing window ends */
	}
	CHECK(ok, "no_map %d pin_limit %zu: bytes at %llu differ or are missing", no_map, pin_limit,
	      (unsigned long long)off);
	CHECK(mapped == (!no_map && expect_map), "no_map %d: windows mapped %d", no_map, mapped);
	/* a mapped window is at most a quarter of the pin limit (0: 64 MiB), never less than a buffer's 256 KiB */
	size_t quarter = (pin_limit ? pin_limit : 64u << 20) / 4;

	CHECK(biggest <= (quarter > (256u << 10) ? quarter : (256u << 10)),
	      "no_map %d pin_limit %zu: a window of %zu bytes", no_map, pin_limit, biggest);
	for (uint64_t i = 0; i < 200; i++) {
		uint64_t at = i * 7919 * 131 % (FILE_SIZE - 100);

		if (dsi_source__get(&s, at, 100, &p) || !same_bytes(p, at, 100)) {
			CHECK(0, "no_map %d: a jump to %llu", no_map, (unsigned long long)at);
			break;
		}
	}
	CHECK(dsi_source__get(&s, FILE_SIZE - 10, 11, &p) == -ENODATA, "no_map %d: a read past the end", no_map);
	dsi_source__close(&s);
}

/* A pinned window's bytes stay as they were while the source reads on. */
static void test_pin(const char *path, bool no_map)
{
	struct ds_source s;
	struct ds_source_window *w;
	const uint8_t *p, *kept;

	if (!open_source(&s, path, no_map, 0)) {
		CHECK(0, "open %s", path);
		return;
	}
	CHECK(!dsi_source__get(&s, 1000, 64, &kept), "no_map %d: a first read", no_map);
	w = dsi_source__pin(&s);
	CHECK(w != NULL, "no_map %d: a pin", no_map);
	for (uint64_t off = 4096; off < FILE_SIZE - 64; off += 65536)
		if (dsi_source__get(&s, off, 64, &p))
			break;
	CHECK(same_bytes(kept, 1000, 64), "no_map %d: the pinned window's bytes", no_map);
	CHECK(s.pinned_bytes == (w ? w->cap : 0), "no_map %d: %zu bytes pinned", no_map, s.pinned_bytes);
	if (w)
		dsi_source__unpin(w);
	CHECK(s.pinned_bytes == 0, "no_map %d: %zu bytes pinned after the unpin", no_map, s.pinned_bytes);
	dsi_source__close(&s);
}

/* The file cut to 100 KiB after the open: what lies beyond is -ENODATA, what lies before is read. */
static void test_shrunk(const char *path, int fd, bool no_map)
{
	struct ds_source s;
	const uint8_t *p;

	if (!open_source(&s, path, no_map, 0)) {
		CHECK(0, "open %s", path);
		return;
	}
	CHECK(!ftruncate(fd, 100 << 10), "ftruncate");
	CHECK(!dsi_source__get(&s, 0, 4096, &p) && same_bytes(p, 0, 4096), "no_map %d: the start of a shrunk file",
	      no_map);
	CHECK(dsi_source__get(&s, 3u << 20, 4096, &p) == -ENODATA, "no_map %d: beyond a shrunk file's end", no_map);
	dsi_source__close(&s);
}

/*
 * The file cut while a window of it is mapped: its lost pages read as
 * zeros (no SIGBUS), and the source counts them.
 */
static void test_cut_while_mapped(const char *path, int fd)
{
	struct ds_source s;
	const uint8_t *p;
	unsigned long before = dsi_source__faults();
	bool zeros = true;

	if (!open_source(&s, path, false, 0)) {
		CHECK(0, "open %s", path);
		return;
	}
	CHECK(!dsi_source__get(&s, 8192, 4096, &p) && same_bytes(p, 8192, 4096) && s.win->mapped,
	      "a mapped window of the file");
	CHECK(!ftruncate(fd, 4096), "ftruncate");
	for (size_t i = 0; i < 4096; i++)
		zeros &= p[i] == 0;
	CHECK(zeros, "the lost page reads as zeros");
	CHECK(dsi_source__faults() == before + 1, "%lu pages counted as lost", dsi_source__faults() - before);
	CHECK(dsi_source__get(&s, 0, 4096, &p) == 0 && same_bytes(p, 0, 4096), "the page the file kept");
	dsi_source__close(&s);
}

int main(void)
{
	char path[64];
	int fd = make_file(path, FILE_SIZE);
	struct sigaction old;

	expect_map = !sigaction(SIGBUS, NULL, &old) && !(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_DFL;
	if (fd < 0) {
		printf("FAIL cannot write a temporary file\n");
		return 1;
	}
	for (int no_map = 0; no_map < 2; no_map++) {
		test_reads(path, no_map, 0);
		test_reads(path, no_map, 16u << 20);
		test_reads(path, no_map, 1u << 20);
		test_pin(path, no_map);
	}
	for (int no_map = 0; no_map < 2; no_map++) {
		char shrink[64];
		int sfd = make_file(shrink, FILE_SIZE);

		if (sfd < 0) {
			CHECK(0, "a second temporary file");
			continue;
		}
		test_shrunk(shrink, sfd, no_map);
		if (!no_map && expect_map && !ftruncate(sfd, FILE_SIZE))
			test_cut_while_mapped(shrink, sfd);
		close(sfd);
		unlink(shrink);
	}
	close(fd);
	unlink(path);
	printf("test_source: windows %s\n", expect_map ? "mapped" : "read (the program handles SIGBUS)");
	printf("test_source: %d passed, %d failed\n", passed, failed);
	return failed != 0;
}
