/* SPDX-License-Identifier: MIT */
/*
 * dstack diagnostics and errors.
 *
 * Errors, one convention for the whole API (libbpf's returns, libdwfl's
 * message): a function that fails returns a negative errno (a
 * constructor: NULL with errno set) and leaves why, as one line naming
 * the file and offset where there are some ("FILE: offset 0xN: what"),
 * for ds_errmsg() on the calling thread.  No function takes an error
 * buffer or hands back a message of its own.
 *
 * Warnings (damage read past, a record skipped: the call goes on) go
 * through one print hook (like libbpf_set_print).  The library never
 * writes to stderr directly but through the default hook.
 */
#ifndef DSTACK_LOG_H
#define DSTACK_LOG_H

#include <stdarg.h>

enum ds_log_level { DS_WARN, DS_INFO, DS_DEBUG };

typedef void (*ds_log_fn)(enum ds_log_level level, const char *fmt, va_list ap);

/* Install @fn (NULL restores the default: warnings to stderr). Returns the old one. */
ds_log_fn ds_set_log(ds_log_fn fn);

__attribute__((format(printf, 2, 3)))
void ds_log(enum ds_log_level level, const char *fmt, ...);

/*
 * Why the calling thread's latest failing dstack call failed ("" before
 * any).  Valid until that thread's next failure; a success leaves it.
 * Only meaningful right after a call returned failure.
 */
const char *ds_errmsg(void);

#define ds_warn(...)  ds_log(DS_WARN, __VA_ARGS__)
#define ds_info(...)  ds_log(DS_INFO, __VA_ARGS__)
#define ds_debug(...) ds_log(DS_DEBUG, __VA_ARGS__)

#endif
