/* SPDX-License-Identifier: MIT */
/*
 * Record arena: copies of records that must outlive the reader's buffer
 * (while they wait in the ordering queue or behind a pending sample).
 * Records are carved from 256 KiB chunks; each chunk counts its live records
 * and goes back to a free list when the last one is released, so a steady
 * stream reuses the same few chunks and never calls malloc per record.
 *
 * Who may use it: the library (the ordering queue and the session); not the CLI.
 */
#ifndef DSTACK_ARENA_H
#define DSTACK_ARENA_H

#include <stddef.h>
#include <stdint.h>

struct dsi_arena_chunk;

struct dsi_arena {
	struct dsi_arena_chunk *cur;   /* being filled */
	struct dsi_arena_chunk *free;  /* empty, ready for reuse */
	unsigned nr_free;
	size_t bytes_live;            /* chunk bytes currently held */
	size_t bytes_peak;
};

/* Copy @len bytes of @src into the arena; *@chunk receives the owner to release. NULL on ENOMEM. */
void *dsi_arena__copy(struct dsi_arena *a, const void *src, size_t len, struct dsi_arena_chunk **chunk);
void dsi_arena__release(struct dsi_arena *a, struct dsi_arena_chunk *chunk);
void dsi_arena__exit(struct dsi_arena *a);

#endif
