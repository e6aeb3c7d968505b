// SPDX-License-Identifier: MIT
/*
 * JIT code from jitdumps, mapped as perf inject --jit maps it: where a
 * process maps its jit-PID.dump (the marker perf looks for), every code
 * load and move of the dump becomes a map of its own at its timestamp,
 * named as perf names the ELF file it writes for it (DIR/jitted-PID-N.so,
 * DIR the dump's directory as recorded), at file offset
 * DSI_JIT_TEXT_OFFSET, over the maps it covers.  Its DSO is the code's
 * image built from the dump, so symbols, the report's keys and the
 * unwinder (the dump's .eh_frame) see an ordinary binary.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dstack/log.h"
#include "dstack/reader.h"
#include "util/grow.h"
#include "process/machine_int.h"
#include "symbols/jitdump.h"

static int cmp_pending(const void *a, const void *b)
{
	const struct dsi_jit_pending *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

int dsi_machine__jitdump_mmap(struct ds_machine *m, uint32_t pid, const char *path, uint64_t time)
{
	const struct dsi_jitdump *jd = dsi_symbols__jitdump(m->syms, path);
	struct dsi_jit_pending *q;

	if (!jd || !jd->nr)
		return 0;
	/* a dump seen again (a second mmap of it) is queued once */
	for (size_t i = 0; i < m->jit_nr; i++)
		if (m->jit_q[i].jd == jd)
			return 0;
	if (m->jit_next > 0) {   /* what was mapped already leaves the queue */
		memmove(m->jit_q, m->jit_q + m->jit_next, (m->jit_nr - m->jit_next) * sizeof(*m->jit_q));
		m->jit_nr -= m->jit_next;
		m->jit_next = 0;
	}
	if (!(q = dsi_grow(m->jit_q, &m->jit_cap, m->jit_nr + jd->nr, sizeof(*q), 64)))
		return -ENOMEM;
	m->jit_q = q;
	if (dsi_jitdump__time(jd, &jd->codes[0], m->time_conv) == DS_NO_TIME)   /* (TSC times, no conversion) */
		ds_warn("jitdump %s: its timestamps are the CPU's (TSC) and the recording has no TIME_CONV to convert "
			"them: its code mapped from the dump's mmap on\n", jd->path);
	for (size_t i = 0; i < jd->nr; i++) {
		/* code timed before the dump's own mmap (another clock, no conversion) is mapped with it */
		uint64_t t = dsi_jitdump__time(jd, &jd->codes[i], m->time_conv);

		if (t == DS_NO_TIME)
			t = 0;
		q[m->jit_nr++] = (struct dsi_jit_pending){ .time = time != DS_NO_TIME && t < time ? time : t,
							   .seq = m->jit_seq++, .pid = (int32_t)pid, .jd = jd,
							   .code = &jd->codes[i] };
	}
	qsort(m->jit_q, m->jit_nr, sizeof(*m->jit_q), cmp_pending);
	return 0;
}

/* The name perf inject gives the ELF file of @c: in the dump's recorded directory. */
static const char *jitted_name(struct ds_machine *m, const struct dsi_jitdump *jd, const struct ds_jit_code *c,
			       const char *recorded_dir, size_t dir_len)
{
	char buf[4200];

	(void)jd;
	snprintf(buf, sizeof(buf), "%.*s/jitted-%u-%llu.so", (int)dir_len, recorded_dir, c->pid,
		 (unsigned long long)c->index);
	return ds_machine__intern(m, buf);
}

static int map_code(struct ds_machine *m, const struct dsi_jit_pending *p)
{
	const struct ds_jit_code *c = p->code;
	const char *rec = p->jd->recorded;
	const char *slash = strrchr(rec, '/');
	const char *name = slash ? jitted_name(m, p->jd, c, rec, (size_t)(slash - rec))
				 : jitted_name(m, p->jd, c, ".", 1);
	struct ds_thread *t = ds_machine__thread(m, p->pid, p->pid);
	struct ds_map nm = { .start = c->addr, .end = c->addr + c->map_len, .pgoff = DSI_JIT_TEXT_OFFSET, .name = name };

	if (!t || !name[0])
		return -ENOMEM;
	if (nm.end <= nm.start)
		return 0;
	nm.dso = dsi_symbols__jit_dso(m->syms, name, p->jd, c);
	if (!nm.dso)
		return -ENOMEM;
	return dsi_machine__insert_user_map(m, t, &nm);
}

int dsi_machine__jit_advance(struct ds_machine *m, uint64_t time)
{
	while (m->jit_next < m->jit_nr && m->jit_q[m->jit_next].time <= time) {
		int err = map_code(m, &m->jit_q[m->jit_next]);

		if (err)
			return err;
		m->jit_next++;
	}
	return 0;
}

void ds_machine__set_time_conv(struct ds_machine *m, const struct ds_time_conv *tc)
{
	m->time_conv = tc;
}

void dsi_machine__jit_exit(struct ds_machine *m)
{
	free(m->jit_q);
	m->jit_q = NULL;
	m->jit_nr = m->jit_next = m->jit_cap = 0;
}
