// SPDX-License-Identifier: MIT
/*
 * The machine: its threads (threads.c), maps (maps.c) and callchain caches
 * (callchain.c) made and freed together, the strings they share interned
 * here, and the sideband records dispatched to the file that keeps them.
 */
#include <stdlib.h>
#include <string.h>
#include "process/machine_int.h"

struct ds_machine *ds_machine__new(struct ds_symbols *syms)
{
	struct ds_machine *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->syms = syms;
	maps__init(&m->kmaps);
	m->callchains = callchain_cache__new();
	if (!m->callchains) {
		free(m);
		return NULL;
	}
	return m;
}

void ds_machine__delete(struct ds_machine *m)
{
	uint64_t k, v;

	if (!m)
		return;
	for (size_t i = 0; ds_hashmap__next(&m->threads, &i, &k, &v);)
		thread__delete((struct ds_thread *)(uintptr_t)v);
	for (size_t i = 0; ds_hashmap__next(&m->strings, &i, &k, &v);)
		free((char *)(uintptr_t)v);
	ds_hashmap__exit(&m->threads);
	ds_hashmap__exit(&m->strings);
	ds_hashmap__exit(&m->map_names);
	maps__exit(&m->kmaps);
	callchain_cache__delete(m->callchains);
	free(m);
}

const char *ds_machine__intern(struct ds_machine *m, const char *s)
{
	/* probe successive keys on a (rare) hash collision */
	for (uint64_t k = ds_hash_str(s);; k++) {
		uint64_t *v = ds_hashmap__find(&m->strings, k);

		if (!v) {
			char *d = strdup(s);

			if (!d || ds_hashmap__set(&m->strings, k, (uint64_t)(uintptr_t)d)) {
				free(d);
				return "";
			}
			return d;
		}
		if (!strcmp((const char *)(uintptr_t)*v, s))
			return (const char *)(uintptr_t)*v;
	}
}

unsigned ds_machine__map_name_seq(const struct ds_machine *m, const char *name)
{
	const uint64_t *v = ds_hashmap__find(&m->map_names, (uintptr_t)name);

	return v ? (unsigned)*v : 0;
}

int ds_machine__process(struct ds_machine *m, const struct ds_event *ev)
{
	if (!ev->evsel)
		return 0;
	switch (ev->hdr->type) {
	case DS_REC_COMM: return machine__process_comm(m, ev);
	case DS_REC_FORK: return machine__process_fork(m, ev);
	case DS_REC_EXIT: return machine__process_exit(m, ev);
	case DS_REC_MMAP:
	case DS_REC_MMAP2: return machine__process_mmap(m, ev);
	default: return 0;
	}
}
