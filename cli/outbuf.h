/* SPDX-License-Identifier: MIT */
/*
 * Buffered output for the hot printing loops: formatting by hand into a
 * 256 KiB buffer, one write() per buffer, no printf per field.
 * Lifecycle: outbuf_new(fd) ... outbuf_flush() ... outbuf_delete(); or
 * outbuf_init(o, fd) on a struct outbuf of the caller's, nothing to free.
 * A failed write (EPIPE, ENOSPC) sets ->error and later output is
 * discarded.
 */
#ifndef DSTACK_OUTBUF_H
#define DSTACK_OUTBUF_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define OUTBUF_SIZE (256u << 10)

struct outbuf {
	int fd;
	int error;
	size_t len;
	unsigned long flushes;     /* how many times the buffer was emptied */
	char buf[OUTBUF_SIZE];
};

/*
 * A buffer for @fd on the heap, or NULL on ENOMEM.  The commands use this,
 * not a static one: the heap is in huge pages (main.c), a static buffer in
 * .bss faults in 4 KiB pages (64 when it fills, ~10 us each in a VM).
 */
struct outbuf *outbuf_new(int fd);
/* Frees @o (NULL is fine); flush first, unflushed bytes are dropped. */
void outbuf_delete(struct outbuf *o);
void outbuf_init(struct outbuf *o, int fd);
int outbuf_flush(struct outbuf *o);
/* outbuf_write() when the bytes do not fit the buffer's free room */
void outbuf_write_slow(struct outbuf *o, const char *s, size_t n);
__attribute__((format(printf, 2, 3)))
void outbuf_printf(struct outbuf *o, const char *fmt, ...);
/* @v in hex, right-aligned in @width (0: no padding), lowercase, no 0x */
void outbuf_hex(struct outbuf *o, uint64_t v, int width);
/* @v in decimal, right-aligned in @width, padded with @pad */
void outbuf_dec(struct outbuf *o, uint64_t v, int width, char pad);
/* @v as printf's "%*.2f" with @width, digit for digit (percentages: printf was
 * most of report's printing) */
void outbuf_fixed2(struct outbuf *o, double v, int width);

/* Inline: a frame line is a dozen short writes, nearly all of them fit. */
static inline void outbuf_write(struct outbuf *o, const char *s, size_t n)
{
	if (n <= OUTBUF_SIZE - o->len) {
		memcpy(o->buf + o->len, s, n);
		o->len += n;
	} else {
		outbuf_write_slow(o, s, n);
	}
}

static inline void outbuf_puts(struct outbuf *o, const char *s)
{
	outbuf_write(o, s, strlen(s));
}

static inline void outbuf_putc(struct outbuf *o, char c)
{
	if (o->len == OUTBUF_SIZE)
		outbuf_flush(o);
	o->buf[o->len++] = c;
}

#endif
