// SPDX-License-Identifier: MIT
/*
 * Fuzz target 2: pipe mode.  The input is the record stream after a
 * pipe-mode header (magic + size 16, prepended here) and is fed through a
 * real pipe by a writer thread, so the reader's read-once, front-to-back
 * path (partial reads, EOF mid-record) is what runs.
 */
#include <pthread.h>
#include <signal.h>
#include "fuzz_common.h"

struct feed {
	int fd;
	const uint8_t *data;
	size_t size;
};

static void *writer(void *arg)
{
	struct feed *f = arg;
	static const uint8_t hdr[16] = { 'P', 'E', 'R', 'F', 'I', 'L', 'E', '2', 16 };
	size_t off = 0;

	if (write(f->fd, hdr, sizeof(hdr)) != (ssize_t)sizeof(hdr))
		goto out;
	while (off < f->size) {
		/* odd-sized chunks: the reader must cope with short reads */
		size_t chunk = f->size - off < 4093 ? f->size - off : 4093;
		ssize_t n = write(f->fd, f->data + off, chunk);

		if (n <= 0)
			break; /* EPIPE: the reader stopped early */
		off += (size_t)n;
	}
out:
	close(f->fd);
	return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int p[2];
	char path[64];
	pthread_t th;

	fz_init();
	signal(SIGPIPE, SIG_IGN);
	if (pipe(p))
		return 0;
	struct feed f = { p[1], data, size };

	if (pthread_create(&th, NULL, writer, &f)) {
		close(p[0]);
		close(p[1]);
		return 0;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", p[0]);
	fz_run_path(path, false, 0, false);
	close(p[0]); /* unblocks the writer if the reader stopped early */
	pthread_join(th, NULL);
	return 0;
}
