// SPDX-License-Identifier: MIT
/*
 * The machine: its threads (threads.c), maps (maps.c) and callchain caches
 * (callchain.c) made and freed together, the strings they share interned
 * here, and the sideband records dispatched to the file that keeps them.
 */
#include <stdlib.h>
#include <string.h>
#include "util/grow.h"
#include "process/machine_int.h"

struct ds_machine *ds_machine__new(struct ds_symbols *syms)
{
	struct ds_machine *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->syms = syms;
	dsi_maps__init(&m->kmaps, &m->live_maps);
	m->callchains = dsi_callchain_cache__new();
	m->kernel_dso = ds_machine__intern(m, "[kernel.kallsyms]");
	if (!m->callchains || !m->kernel_dso) {
		ds_machine__delete(m);
		return NULL;
	}
	return m;
}

void ds_machine__delete(struct ds_machine *m)
{
	uint64_t k, v;

	if (!m)
		return;
	for (size_t i = 0; dsi_hashmap__next(&m->threads, &i, &k, &v);)
		dsi_thread__delete((struct ds_thread *)(uintptr_t)v);
	if (m->forgotten) {
		m->forgotten->maps = m->forgotten_maps;   /* (a thread's reborn maps are its own) */
		dsi_thread__delete(m->forgotten);
	}
	free(m->fresh);
	free(m->exited);
	dsi_strset__exit(&m->strings);
	dsi_hashmap__exit(&m->threads);
	dsi_hashmap__exit(&m->map_names);
	dsi_hashmap__exit(&m->kernel_names);
	dsi_hashmap__exit(&m->listed_modules);
	dsi_maps__exit(&m->kmaps);
	dsi_callchain_cache__delete(m->callchains);
	dsi_machine__jit_exit(m);
	free(m);
}

const char *ds_machine__intern(struct ds_machine *m, const char *s)
{
	const char *copy = dsi_strset__intern(&m->strings, s);

	return copy ? copy : "";
}

unsigned ds_machine__map_name_seq(const struct ds_machine *m, const char *name)
{
	const uint64_t *v = dsi_hashmap__find(&m->map_names, (uintptr_t)name);

	return v ? (unsigned)*v : 0;
}

int ds_machine__process(struct ds_machine *m, const struct ds_event *ev)
{
	int err;

	if (!ev->evsel)
		return 0;
	/* JIT code mapped before the first record of its time (perf inject --jit's MMAP2 come first) */
	if (m->jit_next < m->jit_nr && m->jit_q[m->jit_next].time <= ev->sample.time &&
	    (err = dsi_machine__jit_advance(m, ev->sample.time)))
		return err;
	switch (ev->hdr->type) {
	case DS_REC_COMM: return dsi_machine__process_comm(m, ev);
	case DS_REC_FORK: return dsi_machine__process_fork(m, ev);
	case DS_REC_EXIT: return dsi_machine__process_exit(m, ev);
	case DS_REC_MMAP:
	case DS_REC_MMAP2: return dsi_machine__process_mmap(m, ev);
	default: return 0;
	}
}
