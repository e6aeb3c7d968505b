// SPDX-License-Identifier: MIT
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "util/outbuf.h"

static const char *output_cmd = "";
static const char *output_path = "output";
static int output_err;

void output_file(const char *path)
{
	output_path = path;
}

void output_begin(const char *cmd)
{
	output_cmd = cmd;
}

int output_failed(const char *what, int err)
{
	if (!err)
		err = EIO;
	if (!output_err) {
		output_err = err;
		fprintf(stderr, "dstack %s: writing %s: %s\n", output_cmd, what, strerror(err));
	}
	return -err;
}

void output_failed_as(const char *message)
{
	if (!output_err) {
		output_err = EIO;
		fprintf(stderr, "dstack %s: %s\n", output_cmd, message);
	}
}

int output_error(void)
{
	return output_err;
}

int output_end(int status)
{
	/* a stream already in error may have lost bytes whose errno is gone */
	bool bad = ferror(stdout);

	errno = 0;
	if ((fclose(stdout) && !(errno == EBADF && !bad)) || bad)
		output_failed("stdout", errno);   /* EBADF alone: stdout was closed and never written */
	return output_err ? OUTPUT_EXIT_FAILED : status;
}

struct outbuf *outbuf_new(int fd)
{
	struct outbuf *o = malloc(sizeof(*o));

	if (o)
		outbuf_init(o, fd);
	return o;
}

void outbuf_delete(struct outbuf *o)
{
	free(o);
}

void outbuf_init(struct outbuf *o, int fd)
{
	o->fd = fd;
	o->error = 0;
	o->name = fd == 1 ? "stdout" : output_path;
	o->len = 0;
	o->flushes = 0;
}

int outbuf_flush(struct outbuf *o)
{
	size_t off = 0;

	while (off < o->len && !o->error) {
		ssize_t n = write(o->fd, o->buf + off, o->len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			o->error = n < 0 ? errno : EIO;
			output_failed(o->name, o->error);
			break;
		}
		off += (size_t)n;
	}
	o->len = 0;
	o->flushes++;
	return o->error ? -o->error : 0;
}

void outbuf_write_slow(struct outbuf *o, const char *s, size_t n)
{
	while (n) {
		size_t room = OUTBUF_SIZE - o->len;

		if (!room) {
			outbuf_flush(o);
			continue;
		}
		if (room > n)
			room = n;
		memcpy(o->buf + o->len, s, room);
		o->len += room;
		s += room;
		n -= room;
	}
}

void outbuf_printf(struct outbuf *o, const char *fmt, ...)
{
	char tmp[4096];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	outbuf_write(o, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

/* Formats straight into the buffer: digits counted first, written from the end. */
void outbuf_hex(struct outbuf *o, uint64_t v, int width)
{
	int digits = v ? (64 - __builtin_clzll(v) + 3) / 4 : 1;
	int n = width > digits ? (width < 32 ? width : 32) : digits;
	char *p;

	if (OUTBUF_SIZE - o->len < 32)
		outbuf_flush(o);
	p = o->buf + o->len;
	memset(p, ' ', (size_t)(n - digits));
	p += n;
	do {
		*--p = "0123456789abcdef"[v & 15];
		v >>= 4;
	} while (v);
	o->len += (size_t)n;
}

/* "00".."99": two digits per division */
static const char digit_pairs[201] =
	"00010203040506070809101112131415161718192021222324252627282930313233343536373839"
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879"
	"8081828384858687888990919293949596979899";

void outbuf_dec(struct outbuf *o, uint64_t v, int width, char pad)
{
	char tmp[32];
	int n = 0;

	while (v >= 100) {
		unsigned d = (unsigned)(v % 100) * 2;

		v /= 100;
		tmp[sizeof(tmp) - 1 - n++] = digit_pairs[d + 1];
		tmp[sizeof(tmp) - 1 - n++] = digit_pairs[d];
	}
	if (v >= 10) {
		tmp[sizeof(tmp) - 1 - n++] = digit_pairs[v * 2 + 1];
		tmp[sizeof(tmp) - 1 - n++] = digit_pairs[v * 2];
	} else {
		tmp[sizeof(tmp) - 1 - n++] = (char)('0' + v);
	}
	while (n < width && n < (int)sizeof(tmp))
		tmp[sizeof(tmp) - 1 - n++] = pad;
	outbuf_write(o, tmp + sizeof(tmp) - n, (size_t)n);
}

/*
 * printf rounds the exact binary value of @v to two decimals, ties to
 * even.  A double times 100 needs at most 60 significant bits, so it is
 * exact in long double where that has a 64-bit mantissa (x86's), and
 * nearbyintl() in the default rounding mode rounds it as printf does.
 * Elsewhere, and for what a percentage never is (negative, huge, NaN),
 * printf itself.
 */
void outbuf_fixed2(struct outbuf *o, double v, int width)
{
	char tmp[40];
	int n = 0;

	if (__LDBL_MANT_DIG__ < 64 || !(v >= 0 && v < 1e15)) {
		outbuf_printf(o, "%*.2f", width, v);
		return;
	}
	uint64_t k = (uint64_t)nearbyintl((long double)v * 100), ip = k / 100;
	unsigned frac = (unsigned)(k % 100) * 2;

	tmp[sizeof(tmp) - 1 - n++] = digit_pairs[frac + 1];
	tmp[sizeof(tmp) - 1 - n++] = digit_pairs[frac];
	tmp[sizeof(tmp) - 1 - n++] = '.';
	do {
		tmp[sizeof(tmp) - 1 - n++] = (char)('0' + ip % 10);
		ip /= 10;
	} while (ip);
	while (n < width && n < (int)sizeof(tmp))
		tmp[sizeof(tmp) - 1 - n++] = ' ';
	outbuf_write(o, tmp + sizeof(tmp) - n, (size_t)n);
}
