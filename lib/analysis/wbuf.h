/* SPDX-License-Identifier: MIT */
/*
 * The exports' output buffer (internal): bytes gathered and handed to the
 * caller's ds_write_fn a buffer at a time.  The first failed write is
 * kept in ->error and everything after it dropped.
 */
#ifndef DSTACK_ANALYSIS_WBUF_H
#define DSTACK_ANALYSIS_WBUF_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "dstack/export.h"

#define DSI_WBUF_SIZE (64u << 10)

struct dsi_wbuf {
	ds_write_fn fn;
	void *ctx;
	int error;                 /* the first failure's negative errno, 0 none */
	size_t len;
	uint64_t flushes;           /* how many times the buffer was emptied (what a printer wrote shows in it) */
	char *buf;                 /* DSI_WBUF_SIZE bytes */
};

/*
 * An export's public call failing with @err, said for ds_errmsg()
 * (dstack/log.h): the object's kept spill failure @msg when @err is that
 * failure's @kept (a later call failing because of it says it again),
 * else the errno's text (the caller's stream's failure is the caller's to
 * describe further).  Returns @err.
 */
int dsi_export_failed(int err, int kept, const char *msg);

/* 0 or -ENOMEM. */
int dsi_wbuf__init(struct dsi_wbuf *w, ds_write_fn fn, void *ctx);
/* Hand over what is gathered: 0 or the first failure's negative errno. */
int dsi_wbuf__flush(struct dsi_wbuf *w);
/* Flush, free the buffer: 0 or the first failure's negative errno. */
int dsi_wbuf__finish(struct dsi_wbuf *w);
void dsi_wbuf__write_slow(struct dsi_wbuf *w, const void *s, size_t n);
void dsi_wbuf__dec(struct dsi_wbuf *w, uint64_t v);
/* (at most 4095 bytes of one call, as the CLI's outbuf_printf, whose output the exports' was) */
__attribute__((format(printf, 2, 3)))
void dsi_wbuf__printf(struct dsi_wbuf *w, const char *fmt, ...);
/* @v as printf's "%*.2f" with @width, digit for digit (util/outbuf.c's outbuf_fixed2 for the report) */
void dsi_wbuf__fixed2(struct dsi_wbuf *w, double v, int width);
/* @s escaped for XML text or attributes (control characters, not allowed in XML 1.0, as '?'). */
void dsi_wbuf__xml(struct dsi_wbuf *w, const char *s);
/* @s as a JSON string with its quotes. */
void dsi_wbuf__json(struct dsi_wbuf *w, const char *s);

static inline void dsi_wbuf__write(struct dsi_wbuf *w, const void *s, size_t n)
{
	if (n <= DSI_WBUF_SIZE - w->len) {
		memcpy(w->buf + w->len, s, n);
		w->len += n;
	} else {
		dsi_wbuf__write_slow(w, s, n);
	}
}

static inline void dsi_wbuf__putc(struct dsi_wbuf *w, char c)
{
	if (w->len == DSI_WBUF_SIZE)
		dsi_wbuf__flush(w);
	w->buf[w->len++] = c;
}

static inline void dsi_wbuf__puts(struct dsi_wbuf *w, const char *s)
{
	dsi_wbuf__write(w, s, strlen(s));
}

#endif
