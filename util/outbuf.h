/* SPDX-License-Identifier: MIT */
/*
 * Buffered output for the hot printing loops: formatting by hand into a
 * 256 KiB buffer, one write() per buffer, no printf per field.
 * Lifecycle: outbuf_new(fd) ... outbuf_flush() ... outbuf_delete(); or
 * outbuf_init(o, fd) on a struct outbuf of the caller's, nothing to free.
 * A failed write (EPIPE, ENOSPC) sets ->error, is reported once through
 * output_failed() (naming ->name), and later output is discarded.
 *
 * Who may use it: the CLI's commands (their output) and util/; the library never
 * writes a command's output.
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
	const char *name;          /* for messages: "stdout", or the -o file (outlives the buffer) */
	size_t len;
	unsigned long flushes;     /* how many times the buffer was emptied */
	char buf[OUTBUF_SIZE];
};

/*
 * A buffer for @fd on the heap, or NULL on ENOMEM.  The commands use this,
 * not a static one: the heap is in huge pages (main.c), a static buffer in
 * .bss faults in 4 KiB pages, one fault per page as it fills.
 */
struct outbuf *outbuf_new(int fd);
/* Frees @o (NULL is fine); flush first, unflushed bytes are dropped. */
void outbuf_delete(struct outbuf *o);
void outbuf_init(struct outbuf *o, int fd);
/* The name write errors give (default "stdout" for fd 1, else "output"). */
static inline void outbuf_name(struct outbuf *o, const char *name)
{
	o->name = name;
}
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

/*
 * The command's output, one policy for every command (docs/errors.md):
 * the first failure to write it (a full disk, a closed pipe with SIGPIPE
 * ignored, an I/O error, a failed close) is reported once as
 * "dstack CMD: writing WHAT: ERROR", the command stops as soon as it can,
 * prints no success summary, and exits EXIT_OUTPUT.
 */
#define OUTPUT_EXIT_FAILED 3   /* output_end()'s status after a failure (the CLI's EXIT_OUTPUT) */
/* main(): the command whose messages these are. */
void output_begin(const char *cmd);
/* The file a buffer on an fd other than 1 writes (its messages name it). */
void output_file(const char *path);
/* Report a failure to write @what (once; later ones are quiet); returns -@err. */
int output_failed(const char *what, int err);
/* The same with a message of the caller's ("writing F: ERROR"), printed after "dstack CMD: ". */
void output_failed_as(const char *message);
/* The first failure's errno, 0 while every write succeeded. */
int output_error(void);
/*
 * main(), after the command: flush and close stdout (a deferred error, on
 * NFS or a full disk, shows only there); EXIT_OUTPUT if any output failed,
 * else @status.
 */
int output_end(int status);

#endif
