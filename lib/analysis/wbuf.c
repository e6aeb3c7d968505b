// SPDX-License-Identifier: MIT
/* The exports' output buffer (wbuf.h) and the stdio stream (dstack/export.h). */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include "analysis/wbuf.h"
#include "util/error.h"
#include "util/numtext.h"

int ds_write_stdio(void *ctx, const void *buf, size_t len)
{
	FILE *f = ctx;

	errno = 0;
	if (fwrite(buf, 1, len, f) == len)
		return 0;
	return errno ? -errno : -EIO;
}

int dsi_wbuf__init(struct dsi_wbuf *w, ds_write_fn fn, void *ctx)
{
	*w = (struct dsi_wbuf){ .fn = fn, .ctx = ctx, .buf = malloc(DSI_WBUF_SIZE) };
	return w->buf ? 0 : -ENOMEM;
}

int dsi_wbuf__flush(struct dsi_wbuf *w)
{
	if (w->len && !w->error) {
		int err = w->fn(w->ctx, w->buf, w->len);

		if (err)
			w->error = err < 0 ? err : -EIO;
	}
	w->len = 0;
	w->flushes++;
	return w->error;
}

int dsi_wbuf__finish(struct dsi_wbuf *w)
{
	int err = w->buf ? dsi_wbuf__flush(w) : w->error;

	free(w->buf);
	w->buf = NULL;
	return err;
}

void dsi_wbuf__write_slow(struct dsi_wbuf *w, const void *s, size_t n)
{
	const char *p = s;

	while (n) {
		size_t room = DSI_WBUF_SIZE - w->len, k = n < room ? n : room;

		memcpy(w->buf + w->len, p, k);
		w->len += k;
		p += k;
		n -= k;
		if (w->len == DSI_WBUF_SIZE)
			dsi_wbuf__flush(w);
	}
}

void dsi_wbuf__dec(struct dsi_wbuf *w, uint64_t v)
{
	char d[DSI_NUMTEXT_DEC_MAX];
	size_t n = dsi_numtext_dec(d + sizeof(d), v, 0, ' ');

	dsi_wbuf__write(w, d + sizeof(d) - n, n);
}

/* As the CLI's outbuf_printf: at most 4095 bytes of one call are written. */
void dsi_wbuf__printf(struct dsi_wbuf *w, const char *fmt, ...)
{
	char buf[4096];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	dsi_wbuf__write(w, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
}

void dsi_wbuf__xml(struct dsi_wbuf *w, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		switch (c) {
		case '<': dsi_wbuf__puts(w, "&lt;"); break;
		case '>': dsi_wbuf__puts(w, "&gt;"); break;
		case '&': dsi_wbuf__puts(w, "&amp;"); break;
		case '"': dsi_wbuf__puts(w, "&quot;"); break;
		case '\'': dsi_wbuf__puts(w, "&apos;"); break;
		default:
			dsi_wbuf__putc(w, c < 0x20 ? '?' : (char)c);
		}
	}
}

void dsi_wbuf__json(struct dsi_wbuf *w, const char *s)
{
	static const char hex[] = "0123456789abcdef";

	dsi_wbuf__putc(w, '"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\') {
			dsi_wbuf__putc(w, '\\');
			dsi_wbuf__putc(w, (char)c);
		} else if (c < 0x20) {
			char e[6] = { '\\', 'u', '0', '0', hex[c >> 4], hex[c & 15] };

			dsi_wbuf__write(w, e, 6);
		} else {
			dsi_wbuf__putc(w, (char)c);
		}
	}
	dsi_wbuf__putc(w, '"');
}

int dsi_export_failed(int err, int kept, const char *msg)
{
	return dsi_error_keep(err, msg && msg[0] && err == kept ? msg : NULL);
}

void dsi_wbuf__fixed2(struct dsi_wbuf *w, double v, int width)
{
	char tmp[DSI_NUMTEXT_MAX];
	size_t n = dsi_numtext_fixed2(tmp + sizeof(tmp), v, width);

	if (!n)
		dsi_wbuf__printf(w, "%*.2f", width, v);
	else
		dsi_wbuf__write(w, tmp + sizeof(tmp) - n, n);
}
