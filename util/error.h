/* SPDX-License-Identifier: MIT */
/*
 * The library's side of ds_errmsg() (dstack/log.h): a failing function
 * says why on the calling thread and returns its error.
 */
#ifndef DSTACK_UTIL_ERROR_H
#define DSTACK_UTIL_ERROR_H

/* Why the calling thread's current call fails, printf-style; returns @err. */
__attribute__((format(printf, 2, 3)))
int dsi_error(int err, const char *fmt, ...);
/* The same with a message kept by an object (its first, sticky, error); "" or NULL: strerror(@err).  Returns @err. */
int dsi_error_keep(int err, const char *msg);

#endif
