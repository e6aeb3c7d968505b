// SPDX-License-Identifier: MIT
/*
 * The callchain of a sample with a user stack snapshot, as the kernel
 * would have written it: its kernel part, PERF_CONTEXT_USER, the frames
 * unwound from the snapshot (dstack/unwind.h).  The chain is built in a
 * buffer reused from sample to sample (no allocation per sample).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "dstack/profile.h"

struct ds_user_unwind {
	struct ds_machine *machine;
	struct ds_unwinder *unwinder;    /* made at the first snapshot */
	struct ds_dso *vdso;             /* the recording's vDSO image, if found */
	uint64_t *chain;
	size_t chain_cap;
	struct ds_unwind_stats stats;
};

/*
 * The vDSO image the header names by build-id ("[vdso]"), if perf's
 * build-id cache holds it (dstack record and perf record keep it there).
 */
static void find_vdso(struct ds_user_unwind *uu, struct ds_symbols *syms, const struct ds_header_info *in,
		      const char *buildid_dir)
{
	char path[4096];

	for (size_t i = 0; in && i < in->nr_build_ids; i++) {
		const struct ds_build_id_entry *b = &in->build_ids[i];

		if (b->filename && !strcmp(b->filename, "[vdso]") &&
		    !ds_vdso__cache_path(buildid_dir, b->data, b->size, path, sizeof(path)) && !access(path, R_OK)) {
			uu->vdso = ds_symbols__dso(syms, path, b->data, b->size);
			return;
		}
	}
}

struct ds_user_unwind *ds_user_unwind__new(struct ds_machine *m, struct ds_symbols *syms,
					   const struct ds_header_info *in, const char *buildid_dir)
{
	struct ds_user_unwind *uu = calloc(1, sizeof(*uu));

	if (!uu)
		return NULL;
	uu->machine = m;
	find_vdso(uu, syms, in, buildid_dir);
	return uu;
}

void ds_user_unwind__delete(struct ds_user_unwind *uu)
{
	if (!uu)
		return;
	ds_unwinder__delete(uu->unwinder);
	free(uu->chain);
	free(uu);
}

const struct ds_unwind_stats *ds_user_unwind__stats(const struct ds_user_unwind *uu)
{
	return &uu->stats;
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
		ds_unwinder__set_vdso(uu->unwinder, uu->vdso);
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
	if (k)
		memcpy(uu->chain + pre, cc, (size_t)k * sizeof(*cc));
	pre += (size_t)k;
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
