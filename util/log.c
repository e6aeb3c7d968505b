// SPDX-License-Identifier: MIT
#include <stdio.h>
#include "dstack/log.h"

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
