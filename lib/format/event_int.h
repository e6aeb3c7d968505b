/* SPDX-License-Identifier: MIT */
/* Parsed samples, for the library's parts that copy the records they point into. */
#ifndef DSTACK_EVENT_INT_H
#define DSTACK_EVENT_INT_H

#include <stdbool.h>
#include <stddef.h>
#include "dstack/event.h"

/*
 * Move every field of @s that points into the record at @from (@size
 * bytes) to the same place in its copy at @to.  false when one points
 * elsewhere (that one is left as it was; the caller parses the copy
 * again, or copies what it points to).
 */
bool dsi_sample__rebase(struct ds_sample *s, const void *from, const void *to, size_t size);

#endif
