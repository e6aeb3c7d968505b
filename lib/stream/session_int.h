/* SPDX-License-Identifier: MIT */
/* The session's internals other parts of the library read. */
#ifndef DSTACK_SESSION_INT_H
#define DSTACK_SESSION_INT_H

#include "dstack/session.h"

/* The input's error of the last run, "FILE: offset 0xN: what" ("" if none: a callback's or memory). */
const char *dsi_session__errmsg(const struct ds_session *s);

#endif
