// SPDX-License-Identifier: MIT
/*
 * A recording's records written to a perf.data writer as perf record
 * writes them (dstack/recorder.h's ds_record_out): every record as it
 * comes, the build-ids MMAP2 records carry noted in the header once a
 * file name, and at the end the vDSO images kept in the build-id cache
 * and named there too.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "dstack/event.h"
#include "dstack/recorder.h"
#include "dstack/unwind.h"
#include "util/error.h"
#include "util/idmap.h"
#include "util/strset.h"

struct ds_record_out {
	struct ds_writer *w;
	struct dsi_strset build_id_names; /* the files whose build id is in the header */
	bool vdso32_mapped;             /* an i386 task's [vdso] map was written */
	int err;                        /* the first failed write's */
};

struct ds_record_out *ds_record_out__new(struct ds_writer *w)
{
	struct ds_record_out *o = calloc(1, sizeof(*o));

	if (!o) {
		dsi_error(-ENOMEM, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	o->w = w;
	return o;
}

void ds_record_out__delete(struct ds_record_out *o)
{
	if (!o)
		return;
	dsi_strset__exit(&o->build_id_names);
	free(o);
}

/* Is @name new (now kept)?  False when it was seen before, or on ENOMEM (its build id then goes unwritten). */
static bool build_id_name_new(struct ds_record_out *o, const char *name)
{
	size_t before = o->build_id_names.nr;

	return dsi_strset__add(&o->build_id_names, name) != DSI_IDMAP_NONE && o->build_id_names.nr > before;
}

/* MMAP2 with a build id (attr.build_id): remember it for the header, once a file name */
static void note_build_id(struct ds_record_out *o, const struct ds_event_header *hdr, const struct ds_mmap_event *m)
{
	if (hdr->type != DS_REC_MMAP2 || !m->has_build_id || !m->build_id_size || !build_id_name_new(o, m->filename))
		return;
	/* perf files build ids under the machine's pid: -1 for the host */
	ds_writer__add_build_id(o->w, -1, hdr->misc & DS_MISC_CPUMODE_MASK, m->build_id, m->build_id_size,
				m->filename);
}

/*
 * An MMAP or MMAP2 of "[vdso]" below 4 GiB: an i386 task's vDSO (a
 * 64-bit task's lies high), the image perf names "[vdso32]".
 */
static void note_vdso32(struct ds_record_out *o, const struct ds_mmap_event *m)
{
	if (!strcmp(m->filename, "[vdso]") && m->start < (1ULL << 32) && m->len <= (1ULL << 32) - m->start)
		o->vdso32_mapped = true;
}

int ds_record_out__write(void *ctx, const void *rec, size_t len)
{
	struct ds_record_out *o = ctx;
	struct ds_event_header h;
	struct ds_mmap_event m;
	const char *why;
	int err;

	memcpy(&h, rec, sizeof(h));
	if ((h.type == DS_REC_MMAP || h.type == DS_REC_MMAP2) && !ds_mmap__parse(NULL, rec, &m, &why)) {
		note_build_id(o, &h, &m);
		note_vdso32(o, &m);
	}
	err = ds_writer__write(o->w, rec, len);
	if (err && !o->err)
		o->err = err;
	return err;
}

int ds_record_out__status(const struct ds_record_out *o)
{
	if (!o->err)
		return 0;
	ds_writer__status(o->w);   /* (its message: the writer keeps its first failure) */
	return o->err;
}

bool ds_record_out__vdso32_mapped(const struct ds_record_out *o)
{
	return o->vdso32_mapped;
}

int ds_record_out__keep_vdso(struct ds_record_out *o, const char *buildid_dir, enum ds_vdso_kind kind)
{
	uint8_t bid[20];
	size_t len = 0;
	int err = ds_vdso__keep(buildid_dir, kind, bid, &len);

	if (err)
		return err;
	/* a failed write is the writer's, said when it closes */
	ds_writer__add_build_id(o->w, -1, DS_MISC_USER, bid, len, ds_vdso__name(kind));
	return 0;
}
