// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "dstack/log.h"
#include "util/error.h"

/* the calling thread's latest failure (ds_errmsg) */
static _Thread_local char errmsg[640];

const char *ds_errmsg(void)
{
	return errmsg;
}

int dsi_error(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(errmsg, sizeof(errmsg), fmt, ap);
	va_end(ap);
	return err;
}

int dsi_error_keep(int err, const char *msg)
{
	if (msg != errmsg)
		snprintf(errmsg, sizeof(errmsg), "%s", msg && *msg ? msg : strerror(err < 0 ? -err : err));
	return err;
}

static void default_log(enum ds_log_level level, const char *fmt, va_list ap)
{
	if (level > DS_WARN)
		return;
	/* one line at a time: the session's reading thread warns too */
	flockfile(stderr);
	fputs("dstack: ", stderr);
	vfprintf(stderr, fmt, ap);
	funlockfile(stderr);
}

static ds_log_fn log_fn = default_log;

ds_log_fn ds_set_log(ds_log_fn fn)
{
	ds_log_fn old = log_fn;

	log_fn = fn ? fn : default_log;
	return old;
}

void ds_log(enum ds_log_level level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_fn(level, fmt, ap);
	va_end(ap);
}
