/* SPDX-License-Identifier: MIT */
/*
 * dstack diagnostics: one print hook for the whole library (like
 * libbpf_set_print).  The library never writes to stderr directly.
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

#define ds_warn(...)  ds_log(DS_WARN, __VA_ARGS__)
#define ds_info(...)  ds_log(DS_INFO, __VA_ARGS__)
#define ds_debug(...) ds_log(DS_DEBUG, __VA_ARGS__)

#endif
