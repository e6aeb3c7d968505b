// SPDX-License-Identifier: MIT
/*
 * Header features decoded (dstack/features.h): each feature's section read
 * through a cursor that checks every count, length and offset against the
 * section's bytes, and names the file offset where one does not fit.
 * Layouts are perf's (tools/perf/util/header.c's write_* functions, read as
 * a reference); the BPF ones the kernel's uapi:
 *   prog info: u32 count; per program: u32 info_len, u32 data_len,
 *     u64 arrays, struct bpf_prog_info (info_len bytes), data (data_len),
 *     the info's array pointers rewritten as offsets into data;
 *   btf: u32 count; per BTF: u32 id, u32 size, the BTF blob.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dstack/features.h"
#include "format/reader_int.h"
#include "util/error.h"

/* perf's feature names; 32..34 are 7.x's, named as perf prints them */
static const char *const feat_names[DS_FEAT_NR_NAMED] = {
	[DS_FEAT_TRACING_DATA] = "TRACING_DATA", [DS_FEAT_BUILD_ID] = "BUILD_ID",
	[DS_FEAT_HOSTNAME] = "HOSTNAME", [DS_FEAT_OSRELEASE] = "OSRELEASE", [DS_FEAT_VERSION] = "VERSION",
	[DS_FEAT_ARCH] = "ARCH", [DS_FEAT_NRCPUS] = "NRCPUS", [DS_FEAT_CPUDESC] = "CPUDESC",
	[DS_FEAT_CPUID] = "CPUID", [DS_FEAT_TOTAL_MEM] = "TOTAL_MEM", [DS_FEAT_CMDLINE] = "CMDLINE",
	[DS_FEAT_EVENT_DESC] = "EVENT_DESC", [DS_FEAT_CPU_TOPOLOGY] = "CPU_TOPOLOGY",
	[DS_FEAT_NUMA_TOPOLOGY] = "NUMA_TOPOLOGY", [DS_FEAT_BRANCH_STACK] = "BRANCH_STACK",
	[DS_FEAT_PMU_MAPPINGS] = "PMU_MAPPINGS", [DS_FEAT_GROUP_DESC] = "GROUP_DESC",
	[DS_FEAT_AUXTRACE] = "AUXTRACE", [DS_FEAT_STAT] = "STAT", [DS_FEAT_CACHE] = "CACHE",
	[DS_FEAT_SAMPLE_TIME] = "SAMPLE_TIME", [DS_FEAT_MEM_TOPOLOGY] = "MEM_TOPOLOGY",
	[DS_FEAT_CLOCKID] = "CLOCKID", [DS_FEAT_DIR_FORMAT] = "DIR_FORMAT",
	[DS_FEAT_BPF_PROG_INFO] = "BPF_PROG_INFO", [DS_FEAT_BPF_BTF] = "BPF_BTF",
	[DS_FEAT_COMPRESSED] = "COMPRESSED", [DS_FEAT_CPU_PMU_CAPS] = "CPU_PMU_CAPS",
	[DS_FEAT_CLOCK_DATA] = "CLOCK_DATA", [DS_FEAT_HYBRID_TOPOLOGY] = "HYBRID_TOPOLOGY",
	[DS_FEAT_PMU_CAPS] = "PMU_CAPS", [DS_FEAT_CPU_DOMAIN_INFO] = "CPU_DOMAIN_INFO",
	[DS_FEAT_E_MACHINE] = "E_MACHINE", [DS_FEAT_CLN_SIZE] = "CLN_SIZE",
};

const char *ds_feature__name(int feat)
{
	return feat > 0 && feat < DS_FEAT_NR_NAMED ? feat_names[feat] : NULL;
}

struct bytes {
	const uint8_t *p;
	uint64_t len;
};

struct prog {
	uint32_t id;
	uint64_t offset;                /* of its info in the file */
	struct bytes info, data;
};

/* A decoded string: its own copy, NUL-terminated (the section's may not be). */
struct str {
	char *s;
	size_t cap;
};

enum { STR_A, STR_B, STR_SKIP, NR_STRS };   /* STR_SKIP: read past, never handed out */

struct ds_feat_iter {
	int feat;
	struct bytes sec;
	uint64_t base, pos;             /* the section's file offset; the cursor in it */
	bool started, done;
	int err;
	uint32_t left;                  /* entries of the list still to read */
	uint32_t caps_left;             /* PMU_CAPS: the current PMU's CAPs still to read */
	struct str strs[NR_STRS];
	/* BPF_PROG_INFO and BPF_BTF: everything read at the start, sorted by id */
	struct prog *progs;
	uint32_t *btf_ids;
	size_t nr, next;
	uint32_t next_sub;
	int late_err;                   /* damage met while reading them, given after them */
	uint64_t late_at;
	struct bytes btfs;
	char name[256];
	char errbuf[320];
};

__attribute__((format(printf, 3, 4)))
static int bad_at(struct ds_feat_iter *it, uint64_t at, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (it->err)
		return it->err;
	n = snprintf(it->errbuf, sizeof(it->errbuf), "header feature %s at offset %#" PRIx64 ": ",
		     feat_names[it->feat], it->base + at);
	va_start(ap, fmt);
	vsnprintf(it->errbuf + n, sizeof(it->errbuf) - (size_t)n, fmt, ap);
	va_end(ap);
	it->err = -EBADMSG;
	it->done = true;
	return dsi_error_keep(it->err, it->errbuf);
}

static uint64_t room(const struct ds_feat_iter *it)
{
	return it->sec.len - it->pos;
}

/* The next @n bytes of the section into @v, or a damage naming @what. */
static bool cur_word(struct ds_feat_iter *it, void *v, size_t n, const char *what)
{
	if (room(it) < n) {
		bad_at(it, it->pos, "%s (%zu bytes) past the section's end (%" PRIu64 " bytes left)", what, n, room(it));
		return false;
	}
	memcpy(v, it->sec.p + it->pos, n);
	it->pos += n;
	return true;
}

static bool cur_u32(struct ds_feat_iter *it, uint32_t *v, const char *what)
{
	return cur_word(it, v, sizeof(*v), what);
}

static bool cur_u64(struct ds_feat_iter *it, uint64_t *v, const char *what)
{
	return cur_word(it, v, sizeof(*v), what);
}

/*
 * perf's header string: u32 length (padded, NUL included), then the bytes;
 * the string ends at its first NUL or its length.  Copied into slot @slot.
 */
static bool cur_str(struct ds_feat_iter *it, int slot, const char **out, const char *what)
{
	struct str *s = &it->strs[slot];
	uint64_t at = it->pos;
	uint32_t n;
	size_t k;

	if (!cur_u32(it, &n, what))
		return false;
	if (n > room(it)) {
		bad_at(it, at, "%s of %" PRIu32 " bytes past the section's end (%" PRIu64 " bytes left)", what, n,
		       room(it));
		return false;
	}
	for (k = 0; k < n && it->sec.p[it->pos + k]; k++)
		;
	if (k + 1 > s->cap) {
		char *ns = realloc(s->s, k + 1);

		if (!ns) {
			it->err = -ENOMEM;
			snprintf(it->errbuf, sizeof(it->errbuf), "header feature %s: out of memory", feat_names[it->feat]);
			it->done = true;
			return false;
		}
		s->s = ns;
		s->cap = k + 1;
	}
	memcpy(s->s, it->sec.p + it->pos, k);
	s->s[k] = 0;
	it->pos += n;
	*out = s->s;
	return true;
}

/* ---- BPF programs and BTF blobs -------------------------------------------- */

/* struct bpf_prog_info's fields perf prints from (byte offsets, uapi) */
enum {
	PI_ID = 4, PI_NAME = 64, PI_NR_JITED_KSYMS = 104, PI_NR_JITED_FUNC_LENS = 108,
	PI_JITED_KSYMS = 112, PI_JITED_FUNC_LENS = 120, PI_BTF_ID = 128, PI_FUNC_INFO_REC_SIZE = 132,
	PI_FUNC_INFO = 136, PI_NR_PROG_TAGS = 180, PI_PROG_TAGS = 184,
};

static bool get(struct bytes b, uint64_t off, void *out, size_t n)
{
	if (off > b.len || n > b.len - off)
		return false;
	memcpy(out, b.p + off, n);
	return true;
}

/* A field of the info: 0 past what the kernel wrote (perf zeroes the rest) */
static uint64_t info_u(const struct prog *pr, uint64_t off, size_t n)
{
	uint64_t v = 0;

	if (!get(pr->info, off, &v, n))
		v = 0;
	return v;
}

/* Extra bytes after a BTF type's 12-byte head, by kind; -1 for a kind this reader does not know. */
static int64_t btf_extra(uint32_t info)
{
	uint32_t kind = (info >> 24) & 0x1f, vlen = info & 0xffff;

	switch (kind) {
	case 1: case 14: case 17: return 4;                       /* INT, VAR, DECL_TAG */
	case 2: case 7: case 8: case 9: case 10: case 11: case 12: case 16: case 18: return 0;
	case 3: return 12;                                         /* ARRAY */
	case 4: case 5: case 15: case 19: return 12 * (int64_t)vlen;   /* STRUCT, UNION, DATASEC, ENUM64 */
	case 6: case 13: return 8 * (int64_t)vlen;                 /* ENUM, FUNC_PROTO */
	default: return -1;
	}
}

/* The name of type @type_id in the BTF blob @btf (copied to @buf); false if the blob does not have it. */
static bool btf_type_name(struct bytes btf, uint32_t type_id, char *buf, size_t size)
{
	uint16_t magic;
	uint32_t hdr_len, type_off, type_len, str_off, str_len, name_off, info;
	uint64_t at, end;

	if (!get(btf, 0, &magic, 2) || magic != 0xeB9F || !get(btf, 4, &hdr_len, 4) || !get(btf, 8, &type_off, 4) ||
	    !get(btf, 12, &type_len, 4) || !get(btf, 16, &str_off, 4) || !get(btf, 20, &str_len, 4))
		return false;
	at = (uint64_t)hdr_len + type_off;
	end = at + type_len;
	if (!type_id || end > btf.len || (uint64_t)hdr_len + str_off + str_len > btf.len)
		return false;
	for (uint32_t id = 1; at + 12 <= end; id++) {
		int64_t extra;

		if (!get(btf, at, &name_off, 4) || !get(btf, at + 4, &info, 4) || (extra = btf_extra(info)) < 0)
			return false;
		if (id == type_id) {
			uint64_t s = (uint64_t)hdr_len + str_off + name_off;
			size_t k = 0;

			if (name_off >= str_len)
				return false;
			for (; k + 1 < size && s + k < btf.len && btf.p[s + k]; k++)
				buf[k] = (char)btf.p[s + k];
			buf[k] = 0;
			return true;
		}
		at += 12 + (uint64_t)extra;
	}
	return false;
}

/* The BTF blob of @id in HEADER_BPF_BTF (@btfs); p NULL if none. */
static struct bytes find_btf(struct bytes btfs, uint32_t id)
{
	uint32_t n = 0, bid, size;
	uint64_t at = 4;

	get(btfs, 0, &n, 4);
	for (uint32_t i = 0; i < n && get(btfs, at, &bid, 4) && get(btfs, at + 4, &size, 4); i++) {
		if (size > btfs.len - at - 8)
			break;
		if (bid == id)
			return (struct bytes){ btfs.p + at + 8, size };
		at += 8 + (uint64_t)size;
	}
	return (struct bytes){ NULL, 0 };
}

/* perf's synthesize_bpf_prog_name: "bpf_prog_" TAG, then "_" and the BTF function's name or the program's */
static void prog_name(const struct prog *pr, struct bytes btf, uint32_t sub, uint32_t nr, char *buf, size_t size)
{
	uint8_t tag[8] = { 0 };
	char name[128] = "";
	const char *shown = NULL;
	size_t n;

	get(pr->data, info_u(pr, PI_PROG_TAGS, 8) + 8ULL * sub, tag, sizeof(tag));
	n = (size_t)snprintf(buf, size, "bpf_prog_");
	for (int i = 0; i < 8 && n + 2 < size; i++)
		n += (size_t)snprintf(buf + n, size - n, "%02x", tag[i]);
	if (btf.p) {
		uint32_t type_id = 0;
		uint64_t rec = info_u(pr, PI_FUNC_INFO_REC_SIZE, 4);

		if (get(pr->data, info_u(pr, PI_FUNC_INFO, 8) + rec * sub + 4, &type_id, 4) &&
		    btf_type_name(btf, type_id, name, sizeof(name)))
			shown = name;
	} else if (sub == 0 && nr == 1) {
		get(pr->info, PI_NAME, name, 16);
		name[16] = 0;
		if (name[0])
			shown = name;
	} else {
		shown = "F";
	}
	if (shown && n < size)
		snprintf(buf + n, size - n, "_%s", shown);
}

static int cmp_prog(const void *a, const void *b)
{
	const struct prog *x = a, *y = b;

	return (x->id > y->id) - (x->id < y->id);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

/* Damage met while reading the whole list at the start: given once its entries are. */
static void late_bad(struct ds_feat_iter *it, uint64_t at)
{
	it->late_err = -EBADMSG;
	it->late_at = at;
}

/* All programs of the section, sorted by id (perf's tree of them).  0 or -ENOMEM. */
static int read_progs(struct ds_feat_iter *it, const struct ds_reader *rd)
{
	struct bytes all = it->sec;
	uint32_t n = 0, info_len, data_len;
	uint64_t at = 4, blen = 0;
	size_t cap;

	it->btfs.p = ds_reader__feature(rd, DS_FEAT_BPF_BTF, &blen);
	it->btfs.len = it->btfs.p ? blen : 0;
	if (!get(all, 0, &n, 4))
		return late_bad(it, 0), 0;
	cap = n < all.len / 16 ? n : all.len / 16;   /* a program takes 16 bytes at least */
	if (cap < n)
		late_bad(it, 0);
	it->progs = cap ? calloc(cap, sizeof(*it->progs)) : NULL;
	if (cap && !it->progs)
		return -ENOMEM;
	while (it->nr < cap) {
		uint64_t need;
		struct prog *pr = &it->progs[it->nr];

		if (!get(all, at, &info_len, 4) || !get(all, at + 4, &data_len, 4) ||
		    (need = 16 + (uint64_t)info_len + data_len) > all.len - at) {
			late_bad(it, at);
			break;
		}
		*pr = (struct prog){ .offset = it->base + at + 16, .info = { all.p + at + 16, info_len },
				     .data = { all.p + at + 16 + info_len, data_len } };
		pr->id = (uint32_t)info_u(pr, PI_ID, 4);
		it->nr++;
		at += need;
	}
	if (it->nr)
		qsort(it->progs, it->nr, sizeof(*it->progs), cmp_prog);
	return 0;
}

/* All BTF blobs' ids, sorted (perf's tree of them).  0 or -ENOMEM. */
static int read_btfs(struct ds_feat_iter *it)
{
	struct bytes all = it->sec;
	uint32_t n = 0, id, size;
	uint64_t at = 4;
	size_t cap;

	if (!get(all, 0, &n, 4))
		return late_bad(it, 0), 0;
	cap = n < all.len / 8 ? n : all.len / 8;   /* a BTF takes 8 bytes at least */
	if (cap < n)
		late_bad(it, 0);
	it->btf_ids = cap ? calloc(cap, sizeof(*it->btf_ids)) : NULL;
	if (cap && !it->btf_ids)
		return -ENOMEM;
	for (; it->nr < cap; at += 8 + (uint64_t)size) {
		if (!get(all, at, &id, 4) || !get(all, at + 4, &size, 4) || size > all.len - at - 8) {
			late_bad(it, at);
			break;
		}
		it->btf_ids[it->nr++] = id;
	}
	if (it->nr)
		qsort(it->btf_ids, it->nr, sizeof(*it->btf_ids), cmp_u32);
	return 0;
}

static int late_end(struct ds_feat_iter *it)
{
	if (it->late_err)
		return bad_at(it, it->late_at, "a %s entry does not fit in the section (%" PRIu64 " bytes)",
			      it->feat == DS_FEAT_BPF_BTF ? "BTF" : "program", it->sec.len);
	it->done = true;
	return 0;
}

static int next_btf(struct ds_feat_iter *it, struct ds_feat_rec *rec)
{
	if (it->next >= it->nr)
		return late_end(it);
	rec->type = DS_FEAT_REC_BTF;
	rec->offset = it->base;
	rec->btf.id = it->btf_ids[it->next++];
	return 1;
}

static uint32_t prog_nr_subs(const struct prog *pr)
{
	return (uint32_t)info_u(pr, PI_NR_JITED_KSYMS, 4);
}

static int next_bpf(struct ds_feat_iter *it, struct ds_feat_rec *rec)
{
	const struct prog *pr;
	uint32_t nr;

	if (it->next >= it->nr)
		return late_end(it);
	pr = &it->progs[it->next];
	nr = prog_nr_subs(pr);
	rec->offset = pr->offset;
	if (!it->started) {   /* the program itself */
		it->started = true;
		it->next_sub = 0;
		rec->type = DS_FEAT_REC_BPF_PROG;
		rec->bpf_prog.id = pr->id;
		rec->bpf_prog.nr_subprogs = nr;
		rec->bpf_prog.valid = nr == info_u(pr, PI_NR_PROG_TAGS, 4) && nr == info_u(pr, PI_NR_JITED_FUNC_LENS, 4);
		if (!rec->bpf_prog.valid || !nr) {
			it->next++;
			it->started = false;
		}
		return 1;
	}
	uint32_t i = it->next_sub, btf_id = (uint32_t)info_u(pr, PI_BTF_ID, 4), len = 0;
	uint64_t addrs = info_u(pr, PI_JITED_KSYMS, 8), lens = info_u(pr, PI_JITED_FUNC_LENS, 8), addr = 0;
	struct bytes btf = btf_id ? find_btf(it->btfs, btf_id) : (struct bytes){ NULL, 0 };

	if (!get(pr->data, addrs + 8ULL * i, &addr, 8) || !get(pr->data, lens + 4ULL * i, &len, 4))
		return bad_at(it, pr->offset - it->base, "program %" PRIu32 ": subprogram %" PRIu32
			      "'s address or size lies outside its data (%" PRIu64 " bytes)", pr->id, i, pr->data.len);
	prog_name(pr, btf, i, nr, it->name, sizeof(it->name));
	rec->type = DS_FEAT_REC_BPF_SUBPROG;
	rec->bpf_subprog.prog_id = pr->id;
	rec->bpf_subprog.index = i;
	rec->bpf_subprog.name = it->name;
	rec->bpf_subprog.addr = addr;
	rec->bpf_subprog.size = len;
	if (++it->next_sub >= nr) {
		it->next++;
		it->started = false;
	}
	return 1;
}

/* ---- the other features ---------------------------------------------------- */

/* A list's count, read once at its start; false at its end (or on damage). */
static bool list_next(struct ds_feat_iter *it, const char *what)
{
	if (!it->started) {
		it->started = true;
		if (!cur_u32(it, &it->left, what))
			return false;
	}
	if (!it->left) {
		it->done = true;
		return false;
	}
	it->left--;
	return true;
}

/*
 * PMU_CAPS: per PMU a count, that many name/value pairs, then the PMU's
 * name; the name is read ahead so that it comes first.  CPU_PMU_CAPS: one
 * PMU, "cpu", with no name of its own.
 */
static int next_caps(struct ds_feat_iter *it, struct ds_feat_rec *rec)
{
	const char *name, *value;

	rec->offset = it->base + it->pos;
	if (it->caps_left) {
		if (!cur_str(it, STR_A, &name, "capability name") || !cur_str(it, STR_B, &value, "capability value"))
			return it->err;
		rec->type = DS_FEAT_REC_CAP;
		rec->cap.name = name;
		rec->cap.value = value;
		if (!--it->caps_left && it->feat == DS_FEAT_PMU_CAPS)   /* past its name, read ahead before */
			cur_str(it, STR_SKIP, &name, "PMU name");
		return 1;
	}
	if (it->feat == DS_FEAT_CPU_PMU_CAPS) {
		if (it->started) {
			it->done = true;
			return 0;
		}
		it->started = true;
		if (!cur_u32(it, &it->caps_left, "capability count"))
			return it->err;
		name = "cpu";
	} else {
		uint64_t at;

		if (!list_next(it, "PMU count"))
			return it->err;
		if (!cur_u32(it, &it->caps_left, "capability count"))
			return it->err;
		at = it->pos;
		for (uint32_t i = 0; i < 2 * it->caps_left; i++)
			if (!cur_str(it, STR_SKIP, &name, i % 2 ? "capability value" : "capability name"))
				return it->err;
		if (!cur_str(it, STR_A, &name, "PMU name"))
			return it->err;
		if (it->caps_left)
			it->pos = at;   /* back to its CAPs; the name is skipped again after them */
	}
	rec->type = DS_FEAT_REC_PMU_CAPS;
	rec->pmu_caps.pmu = name;
	rec->pmu_caps.nr_caps = it->caps_left;
	return 1;
}

/* The features that are one fixed record. */
static int next_fixed(struct ds_feat_iter *it, struct ds_feat_rec *rec)
{
	bool ok = false;

	it->done = true;
	switch (it->feat) {
	case DS_FEAT_NRCPUS:
		rec->type = DS_FEAT_REC_NRCPUS;
		ok = cur_u32(it, &rec->nrcpus.avail, "CPUs available") && cur_u32(it, &rec->nrcpus.online, "CPUs online");
		break;
	case DS_FEAT_TOTAL_MEM: case DS_FEAT_CLOCKID: case DS_FEAT_DIR_FORMAT:
		rec->type = DS_FEAT_REC_U64;
		ok = cur_u64(it, &rec->u64, "value");
		break;
	case DS_FEAT_CLN_SIZE: {
		uint32_t v = 0;

		rec->type = DS_FEAT_REC_U64;
		ok = cur_u32(it, &v, "cacheline size");
		rec->u64 = v;
		break;
	}
	case DS_FEAT_SAMPLE_TIME:
		rec->type = DS_FEAT_REC_SAMPLE_TIME;
		ok = cur_u64(it, &rec->sample_time.first, "first sample's time") &&
		     cur_u64(it, &rec->sample_time.last, "last sample's time");
		break;
	case DS_FEAT_COMPRESSED:
		rec->type = DS_FEAT_REC_COMPRESSED;
		ok = cur_u32(it, &rec->compressed.version, "version") && cur_u32(it, &rec->compressed.type, "type") &&
		     cur_u32(it, &rec->compressed.level, "level") && cur_u32(it, &rec->compressed.ratio, "ratio") &&
		     cur_u32(it, &rec->compressed.mmap_len, "mmap length");
		break;
	case DS_FEAT_CLOCK_DATA:   /* the layout past the version is version 1's */
		rec->type = DS_FEAT_REC_CLOCK_DATA;
		ok = cur_u32(it, &rec->clock_data.version, "version") &&
		     (rec->clock_data.version != 1 ||
		      (cur_u32(it, &rec->clock_data.clockid, "clock id") &&
		       cur_u64(it, &rec->clock_data.tod_ns, "time of day") &&
		       cur_u64(it, &rec->clock_data.clock_ns, "clock time")));
		break;
	case DS_FEAT_E_MACHINE:
		rec->type = DS_FEAT_REC_E_MACHINE;
		ok = cur_u32(it, &rec->e_machine.machine, "e_machine") && cur_u32(it, &rec->e_machine.flags, "e_flags");
		break;
	default:
		return 0;
	}
	return ok ? 1 : it->err;
}

static int next_listed(struct ds_feat_iter *it, struct ds_feat_rec *rec)
{
	switch (it->feat) {
	case DS_FEAT_CMDLINE:
		rec->type = DS_FEAT_REC_STRING;
		if (!list_next(it, "word count"))
			return it->err;
		rec->offset = it->base + it->pos;
		return cur_str(it, STR_A, &rec->str, "word") ? 1 : it->err;
	case DS_FEAT_PMU_MAPPINGS:
		rec->type = DS_FEAT_REC_PMU;
		if (!list_next(it, "PMU count"))
			return it->err;
		rec->offset = it->base + it->pos;
		return cur_u32(it, &rec->pmu.type, "PMU type") && cur_str(it, STR_A, &rec->pmu.name, "PMU name") ?
		       1 : it->err;
	case DS_FEAT_GROUP_DESC:
		rec->type = DS_FEAT_REC_GROUP;
		if (!list_next(it, "group count"))
			return it->err;
		rec->offset = it->base + it->pos;
		return cur_str(it, STR_A, &rec->group.name, "group name") &&
		       cur_u32(it, &rec->group.leader, "group leader") &&
		       cur_u32(it, &rec->group.nr_members, "group size") ? 1 : it->err;
	default:
		return next_fixed(it, rec);
	}
}

static int iter_next(struct ds_feat_iter *it, struct ds_feat_rec *rec)
{
	if (it->done)
		return it->err;
	memset(rec, 0, sizeof(*rec));
	rec->offset = it->base + it->pos;
	switch (it->feat) {
	case DS_FEAT_HOSTNAME: case DS_FEAT_OSRELEASE: case DS_FEAT_VERSION: case DS_FEAT_ARCH:
	case DS_FEAT_CPUDESC: case DS_FEAT_CPUID:
		it->done = true;
		rec->type = DS_FEAT_REC_STRING;
		return cur_str(it, STR_A, &rec->str, "string") ? 1 : it->err;
	case DS_FEAT_CPU_PMU_CAPS: case DS_FEAT_PMU_CAPS:
		return next_caps(it, rec);
	case DS_FEAT_BPF_PROG_INFO:
		return next_bpf(it, rec);
	case DS_FEAT_BPF_BTF:
		return next_btf(it, rec);
	default:
		return next_listed(it, rec);
	}
}

int ds_feat_iter__next(struct ds_feat_iter *it, struct ds_feat_rec *rec)
{
	int ret = iter_next(it, rec);

	return ret < 0 ? dsi_error_keep(ret, it->errbuf) : ret;
}

struct ds_feat_iter *ds_feat_iter__new(const struct ds_reader *rd, int feat)
{
	struct ds_feat_iter *it;
	uint64_t len = 0;
	const uint8_t *p;
	int err = 0;

	if (feat <= 0 || feat >= DS_FEAT_BITS) {
		errno = EINVAL;
		dsi_error(-EINVAL, "%s: header feature %d does not exist", ds_reader__path(rd), feat);
		return NULL;
	}
	p = ds_reader__feature(rd, feat, &len);
	if (!p) {
		errno = ENOENT;
		dsi_error(-ENOENT, "%s: the recording has no header feature %s", ds_reader__path(rd),
			  feat < DS_FEAT_NR_NAMED ? feat_names[feat] : "of that number");
		return NULL;
	}
	it = calloc(1, sizeof(*it));
	if (!it) {
		dsi_error(-ENOMEM, "out of memory");
		return NULL;
	}
	it->feat = feat;
	it->sec = (struct bytes){ p, len };
	it->base = rd->feat_off[feat];
	it->done = !len || feat >= DS_FEAT_NR_NAMED;
	if (!it->done && feat == DS_FEAT_BPF_PROG_INFO)
		err = read_progs(it, rd);
	else if (!it->done && feat == DS_FEAT_BPF_BTF)
		err = read_btfs(it);
	if (err) {
		ds_feat_iter__delete(it);
		dsi_error(err, "out of memory");
		errno = -err;
		return NULL;
	}
	return it;
}

void ds_feat_iter__delete(struct ds_feat_iter *it)
{
	if (!it)
		return;
	for (int i = 0; i < NR_STRS; i++)
		free(it->strs[i].s);
	free(it->progs);
	free(it->btf_ids);
	free(it);
}
