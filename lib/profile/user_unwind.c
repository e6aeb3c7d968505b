// SPDX-License-Identifier: MIT
/*
 * The callchain of a sample with a user stack snapshot, as the kernel
 * would have written it: its kernel part, PERF_CONTEXT_USER, the frames
 * unwound from the snapshot (dstack/unwind.h).  The chain is built in a
 * buffer reused from sample to sample (no allocation per sample).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>
#include "dstack/profile.h"

struct ds_user_unwind {
	struct ds_machine *machine;
	struct ds_unwinder *unwinder;    /* made at the first snapshot */
	/* what the vDSO's images are found by (vdso_image) */
	struct ds_symbols *syms;
	const struct ds_header_info *in;
	const char *buildid_dir;
	int own_vdso_fd;                 /* the memory file of this process's vDSO image, or -1 */
	uint64_t *chain;
	size_t chain_cap;
	struct ds_unwind_stats stats;
};

/* The image of @kind the header names by build-id, if perf's build-id cache holds it. */
static struct ds_dso *cached_vdso(struct ds_symbols *syms, const struct ds_header_info *in, const char *buildid_dir,
				  enum ds_vdso_kind kind, const struct ds_build_id_entry **named)
{
	char path[4096];

	*named = NULL;
	for (size_t i = 0; in && i < in->nr_build_ids; i++) {
		const struct ds_build_id_entry *b = &in->build_ids[i];

		if (!b->filename || strcmp(b->filename, ds_vdso__name(kind)))
			continue;
		*named = b;
		if (!ds_vdso__cache_path(buildid_dir, kind, b->data, b->size, path, sizeof(path)) &&
		    !access(path, R_OK))
			return ds_symbols__dso_file(syms, path, path, b->data, b->size);
	}
	return NULL;
}

/*
 * This process's vDSO image, when it is the recording's 64-bit one: its
 * build-id is the one the header names, or the header names none and the
 * recording's kernel release is this kernel's.  perf 7.2 takes its own
 * image whatever kernel recorded; a recording read on another kernel
 * gets no image here (no-vdso), not another kernel's tables.
 */
static struct ds_dso *own_vdso(struct ds_user_unwind *uu, struct ds_symbols *syms, const struct ds_header_info *in,
			       const struct ds_build_id_entry *named)
{
	uint8_t bid[20];
	size_t len = 0;
	struct utsname un;
	char file[64];

	if (!named && (!in || !in->osrelease || uname(&un) || strcmp(un.release, in->osrelease)))
		return NULL;
	if ((uu->own_vdso_fd = ds_vdso__own_file(bid, &len)) < 0)
		return NULL;
	if (named && (named->size != len || memcmp(named->data, bid, len))) {
		close(uu->own_vdso_fd);
		uu->own_vdso_fd = -1;
		return NULL;
	}
	snprintf(file, sizeof(file), "/proc/self/fd/%d", uu->own_vdso_fd);
	return ds_symbols__dso_file(syms, "[vdso]", file, bid, len);
}

/*
 * The image the machine's vDSO maps of @kind resolve and unwind through:
 * from perf's build-id cache where the header names it ("[vdso]",
 * "[vdso32]": dstack record keeps both), else this process's own 64-bit
 * one (own_vdso).  perf asks its helper perf-read-vdso32 for an i386 image
 * at that point; where the helper runs at all (it needs an i386 C library)
 * it gives this kernel's image.  dstack does not: a recording of perf's is
 * read as perf reads it where the helper cannot run.
 */
static struct ds_dso *vdso_image(void *ctx, enum ds_vdso_kind kind)
{
	struct ds_user_unwind *uu = ctx;
	const struct ds_build_id_entry *named;
	struct ds_dso *d = cached_vdso(uu->syms, uu->in, uu->buildid_dir, kind, &named);

	return d || kind != DS_VDSO_64 ? d : own_vdso(uu, uu->syms, uu->in, named);
}

struct ds_user_unwind *ds_user_unwind__new(struct ds_machine *m, struct ds_symbols *syms,
					   const struct ds_header_info *in, const char *buildid_dir)
{
	struct ds_user_unwind *uu = calloc(1, sizeof(*uu));

	if (!uu)
		return NULL;
	*uu = (struct ds_user_unwind){ .machine = m, .syms = syms, .in = in, .buildid_dir = buildid_dir,
				       .own_vdso_fd = -1 };
	ds_machine__set_vdso_finder(m, vdso_image, uu);
	return uu;
}

void ds_user_unwind__delete(struct ds_user_unwind *uu)
{
	if (!uu)
		return;
	ds_machine__set_vdso_finder(uu->machine, NULL, NULL);
	ds_unwinder__delete(uu->unwinder);
	if (uu->own_vdso_fd >= 0)
		close(uu->own_vdso_fd);
	free(uu->chain);
	free(uu);
}

const struct ds_unwind_stats *ds_user_unwind__stats(const struct ds_user_unwind *uu)
{
	return &uu->stats;
}

/*
 * The kernel's part of a chain, @cc's first @k entries, after the @pre
 * entries of @out: its context markers and at most @max addresses, as
 * perf's walk of the kernel's chain takes them (--max-stack counts the
 * kernel's chain and the unwind apart).  The new number of entries.
 */
static size_t kernel_part(uint64_t *out, size_t pre, const uint64_t *cc, uint64_t k, unsigned max)
{
	unsigned taken = 0;

	for (uint64_t i = 0; i < k; i++) {
		if (cc[i] < DS_CONTEXT_MAX && taken++ >= max)
			continue;
		out[pre++] = cc[i];
	}
	return pre;
}

const uint64_t *ds_user_unwind__chain(struct ds_user_unwind *uu, struct ds_thread *t, const struct ds_event *ev,
				      unsigned max, uint64_t *nr_out)
{
	const struct ds_sample *s = &ev->sample;
	const uint64_t *cc = s->callchain;
	uint64_t nr = cc ? s->callchain_nr : 0, k;
	struct ds_unwind_result res;
	size_t need, pre = 0;

	if (!ds_unwind__has_snapshot(ev->evsel, s))
		return NULL;
	for (k = 0; k < nr; k++)
		if (cc[k] == DS_CONTEXT_USER || cc[k] == DS_CONTEXT_USER_DEFERRED)
			break;
	if (k < nr && cc[k] == DS_CONTEXT_USER && k + 1 < nr)
		return NULL;   /* the kernel recorded the user part */
	if (!uu->unwinder) {
		if (!(uu->unwinder = ds_unwinder__new(uu->machine)))
			return NULL;
	}
	if (!max)
		max = 127;
	need = (size_t)k + 3 + max;
	if (need > uu->chain_cap) {
		uint64_t *v = realloc(uu->chain, need * sizeof(*v));

		if (!v)
			return NULL;
		uu->chain = v;
		uu->chain_cap = need;
	}
	if (!cc && s->cpumode == DS_MISC_KERNEL) {
		uu->chain[pre++] = DS_CONTEXT_KERNEL;
		uu->chain[pre++] = s->ip;
	}
	pre = kernel_part(uu->chain, pre, cc, k, max);
	uu->chain[pre++] = DS_CONTEXT_USER;
	ds_unwinder__unwind(uu->unwinder, t, ev->evsel, s, uu->chain + pre, max, &res);
	uu->stats.samples++;
	uu->stats.ends[res.end]++;
	uu->stats.frames += res.nr;
	for (int m = 0; m < DS_UNWIND_METHOD__NR; m++) {
		uu->stats.steps[m] += res.steps[m];
		uu->stats.by_method[m] += res.steps[m] != 0;
	}
	if (!res.nr)
		return NULL;
	*nr_out = pre + res.nr;
	return uu->chain;
}
