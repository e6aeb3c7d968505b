/* SPDX-License-Identifier: MIT */
/*
 * The stack model's insides (internal): the exports of lib/analysis read
 * its arrays directly (entries by offset, strings by id); everyone else
 * goes through dstack/stacks.h.
 */
#ifndef DSTACK_ANALYSIS_STACKS_INT_H
#define DSTACK_ANALYSIS_STACKS_INT_H

#include "dstack/stacks.h"
#include "util/hashmap.h"
#include "util/idmap.h"
#include "util/strset.h"

#define RECENT 1024                 /* direct-mapped frame keys by string pointer */

struct ds_stacks {
	struct ds_stacks_opts o;
	struct dsi_strset strs;
	struct ds_stacks_frame *frames;
	size_t nr_frames, cap_frames;
	struct dsi_idmap frame_ids;      /* (name, dso, kernel, inlined) -> frame id */
	struct ds_stacks_map *maps;
	size_t nr_maps, cap_maps;
	struct dsi_idmap map_ids;        /* (start, end, pgoff, file) -> map id */
	struct ds_stacks_entry *ents;
	size_t nr_ents, cap_ents;
	struct dsi_stack { size_t off, len; } *stacks;   /* entries ents[off .. off + len) */
	size_t nr_stacks, cap_stacks;
	struct dsi_idmap stack_ids;      /* a stack's entries -> stack id */
	struct dsi_hashmap chain_stacks; /* the machine's chain id -> stack id */
	const void *machine;            /* whose chain ids and string pointers are remembered */
	/* the frame id of a (sym, dso, flags) by pointer: most frames repeat */
	struct recent { const char *sym, *dso; uint32_t flags, id; } recent[RECENT];
	/* for dsi_stacks__frame_id: every (sym, dso, flags) by pointer of the machine, so a miss hashes no text */
	struct recent *ptrs;
	size_t nr_ptrs, cap_ptrs;
	struct dsi_idmap ptr_ids;        /* (sym, dso, flags) pointers -> index in ptrs */
	struct dsi_idmap sample_ids;     /* aggregating: a sample's key -> index in samples */
	struct ds_stacks_sample *samples;
	size_t nr_samples, cap_samples;
	uint64_t time_first, time_last; /* time_first > time_last: none */
	uint64_t first_period;
};


/*
 * The frame id of @f (its strings interned, no entry or stack kept), for
 * a consumer that needs frames but no stacks (the folded export's tree):
 * the same ids ds_stacks__intern gives.  @machine is the sample's: its
 * string pointers are remembered until another's come.  UINT32_MAX on
 * ENOMEM.
 */
struct ds_cc_frame;
uint32_t dsi_stacks__frame_id(struct ds_stacks *st, const void *machine, const struct ds_cc_frame *f);
#endif
