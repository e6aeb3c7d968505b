// SPDX-License-Identifier: MIT
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "util/numtext.h"
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

void outbuf_dec(struct outbuf *o, uint64_t v, int width, char pad)
{
	char tmp[DSI_NUMTEXT_DEC_MAX];
	size_t n = dsi_numtext_dec(tmp + sizeof(tmp), v, width, pad);

	outbuf_write(o, tmp + sizeof(tmp) - n, n);
}

/* printf's "%*.2f", digit for digit (util/numtext.h) */
void outbuf_fixed2(struct outbuf *o, double v, int width)
{
	char tmp[DSI_NUMTEXT_MAX];
	size_t n = dsi_numtext_fixed2(tmp + sizeof(tmp), v, width);

	if (!n)
		outbuf_printf(o, "%*.2f", width, v);
	else
		outbuf_write(o, tmp + sizeof(tmp) - n, n);
}
