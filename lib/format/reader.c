// SPDX-License-Identifier: MIT
/*
 * perf.data reader: file header, attrs, features, and the data section as
 * a stream of records (see dstack/reader.h).  Every size and offset read
 * from the input is checked before use: the input is hostile.
 */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zstd.h>
#include "dstack/event.h"
#include "dstack/log.h"
#include "dstack/reader.h"
#include "util/grow.h"
#include "util/error.h"
#include "util/hashmap.h"
#include "format/reader_int.h"
#include "format/source.h"

/* A decompressed stream larger than this between two records is hostile. */
#define MAX_DECOMP_PENDING (256u << 20)
/*
 * perf reads a directory's files in turns of this many bytes (its
 * READER_MAX_SIZE), queueing each file's records in the order they come:
 * the order of records of one timestamp in different files.
 */
#define PART_TURN (10u << 20)
/* a directory's data.* files past this many are not read, with a warning (perf makes one per recording thread) */
#define MAX_PARTS 4096

int dsi_reader__fail(struct ds_reader *r, uint64_t off, int code, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (r->errcode) /* keep the first error: it is the cause */
		return r->errcode;
	n = snprintf(r->err, sizeof(r->err), "%s: offset %#llx: ", r->parts ? r->parts[r->cur].path : r->path,
		     (unsigned long long)off);
	va_start(ap, fmt);
	vsnprintf(r->err + n, sizeof(r->err) - (size_t)n, fmt, ap);
	va_end(ap);
	r->errcode = code ? code : -EINVAL;
	return r->errcode;
}

const char *dsi_reader__errmsg(const struct ds_reader *r) { return r->err; }
const char *ds_reader__path(const struct ds_reader *r) { return r->path; }

const char *ds_reader__locate(const struct ds_reader *r, uint64_t *off)
{
	size_t i = r->nr_parts;

	while (i > 1 && *off < r->parts[i - 1].base)
		i--;
	if (i <= 1)   /* (a directory's "data", even when it has no other part) */
		return r->nr_parts ? r->parts[0].path : r->path;
	*off -= r->parts[i - 1].base;
	return r->parts[i - 1].path;
}
const struct ds_header_info *ds_reader__info(const struct ds_reader *r) { return &r->info; }

const uint8_t *ds_reader__feature(const struct ds_reader *r, int feat, uint64_t *len)
{
	if (feat <= 0 || feat >= DS_FEAT_BITS || !r->feat_raw[feat])
		return NULL;
	*len = r->feat_len[feat];
	return r->feat_raw[feat];
}
size_t ds_reader__nr_evsels(const struct ds_reader *r) { return r->nr_evsels; }
uint64_t ds_reader__bytes_read(const struct ds_reader *r) { return r->bytes; }
uint64_t ds_reader__compressed_records(const struct ds_reader *r) { return r->nr_compressed; }
uint32_t ds_reader__compressed_type(const struct ds_reader *r) { return r->compressed_type; }

struct ds_evsel *ds_reader__evsel(const struct ds_reader *r, size_t idx)
{
	return idx < r->nr_evsels ? r->evsels[idx] : NULL;
}

/* ---- evsels ---------------------------------------------------------- */

/*
 * The name perf gives an attr with no recorded name (evsel__name() in
 * tools/perf/util/evsel.c, read as a reference): the event's name, then its
 * modifiers after a colon: k, u, h for the privilege levels counted when
 * one is excluded, p/pp/ppp for precise_ip, H/G for host and guest when
 * either is excluded ("cycles:ppp", "cpu-clock:u", "instructions:kH").
 */
static const char *const sw_names[] = {
	"cpu-clock", "task-clock", "page-faults", "context-switches",
	"cpu-migrations", "minor-faults", "major-faults", "alignment-faults",
	"emulation-faults", "dummy",
};
static const char *const hw_names[] = {
	"cycles", "instructions", "cache-references", "cache-misses",
	"branches", "branch-misses", "bus-cycles", "stalled-cycles-frontend",
	"stalled-cycles-backend", "ref-cycles",
};

static size_t add_modifiers(const struct ds_attr *a, char *bf, size_t size)
{
	size_t r = 0, colon = 0;
	unsigned precise = (unsigned)(a->flags >> DS_ATTR_PRECISE_IP & 3);
#define MOD(bit, c)                                                       \
	do {                                                              \
		if (!DS_ATTR_FLAG(a, bit) && r + 2 < size) {              \
			if (!colon)                                       \
				colon = ++r;                              \
			bf[r++] = (c);                                    \
		}                                                         \
	} while (0)

	if (DS_ATTR_FLAG(a, DS_ATTR_EXCLUDE_KERNEL) || DS_ATTR_FLAG(a, DS_ATTR_EXCLUDE_USER) ||
	    DS_ATTR_FLAG(a, DS_ATTR_EXCLUDE_HV)) {
		MOD(DS_ATTR_EXCLUDE_KERNEL, 'k');
		MOD(DS_ATTR_EXCLUDE_USER, 'u');
		MOD(DS_ATTR_EXCLUDE_HV, 'h');
	}
	if (precise && r + precise + 2 < size) {
		if (!colon)
			colon = ++r;
		for (unsigned i = 0; i < precise; i++)
			bf[r++] = 'p';
	}
	if (DS_ATTR_FLAG(a, DS_ATTR_EXCLUDE_HOST) || DS_ATTR_FLAG(a, DS_ATTR_EXCLUDE_GUEST)) {
		MOD(DS_ATTR_EXCLUDE_HOST, 'H');
		MOD(DS_ATTR_EXCLUDE_GUEST, 'G');
	}
#undef MOD
	if (colon)
		bf[colon - 1] = ':';
	bf[r] = 0;
	return r;
}

/* perf's hardware cache event names: "L1-dcache-load-misses", "dTLB-loads" */
static void hw_cache_name(uint64_t config, char *bf, size_t size)
{
	static const char *const type[] = { "L1-dcache", "L1-icache", "LLC", "dTLB", "iTLB", "branch", "node" };
	static const char *const op[][2] = { { "load", "loads" }, { "store", "stores" }, { "prefetch", "prefetches" } };
	static const char *const result[] = { "refs", "misses" };
	/* which operations each cache has (L1I: read and prefetch; iTLB, branch: read) */
	static const uint8_t valid_ops[] = { 7, 5, 7, 7, 1, 1, 7 };
	unsigned t = config & 0xff, o = (config >> 8) & 0xff, res = (config >> 16) & 0xff;

	if (t >= sizeof(type) / sizeof(*type))
		snprintf(bf, size, "unknown-ext-hardware-cache-type");
	else if (o >= 3)
		snprintf(bf, size, "unknown-ext-hardware-cache-op");
	else if (res >= 2)
		snprintf(bf, size, "unknown-ext-hardware-cache-result");
	else if (!(valid_ops[t] >> o & 1))
		snprintf(bf, size, "invalid-cache");
	else if (res)
		snprintf(bf, size, "%s-%s-%s", type[t], op[o][0], result[res]);
	else
		snprintf(bf, size, "%s-%s", type[t], op[o][1]);
}

static char *derive_name(const struct ds_attr *a)
{
	char buf[128];
	size_t n;

	switch (a->type) {
	case 0:
		snprintf(buf, sizeof(buf), "%s", a->config < sizeof(hw_names) / sizeof(*hw_names)
						 ? hw_names[a->config] : "unknown-hardware");
		break;
	case 1:
		snprintf(buf, sizeof(buf), "%s", a->config < sizeof(sw_names) / sizeof(*sw_names)
						 ? sw_names[a->config] : "unknown-software");
		break;
	case 2:
		return strdup("unknown tracepoint");   /* the tracing data names it */
	case 3:
		hw_cache_name(a->config, buf, sizeof(buf));
		break;
	case 4:
		snprintf(buf, sizeof(buf), "raw 0x%llx", (unsigned long long)a->config);
		break;
	case 5:   /* bp_addr is config1; HW_BREAKPOINT_R 1, W 2, X 4 */
		snprintf(buf, sizeof(buf), "mem:0x%llx:%s%s%s", (unsigned long long)a->config1,
			 a->bp_type & 1 ? "r" : "", a->bp_type & 2 ? "w" : "", a->bp_type & 4 ? "x" : "");
		break;
	default:
		snprintf(buf, sizeof(buf), "unknown attr type: %d", (int)a->type);
		return strdup(buf);
	}
	n = strlen(buf);
	add_modifiers(a, buf + n, sizeof(buf) - n);
	return strdup(buf);
}

uint16_t ds_evsel__id_trailer_size(const struct ds_evsel *e)
{
	uint64_t t = e->attr.sample_type;

	if (!DS_ATTR_FLAG(&e->attr, DS_ATTR_SAMPLE_ID_ALL))
		return 0;
	return (uint16_t)(8 * (!!(t & DS_SAMPLE_TID) + !!(t & DS_SAMPLE_TIME) + !!(t & DS_SAMPLE_ID) +
			       !!(t & DS_SAMPLE_STREAM_ID) + !!(t & DS_SAMPLE_CPU) +
			       !!(t & DS_SAMPLE_IDENTIFIER)));
}

static int popcount64(uint64_t x) { return __builtin_popcountll(x); }

static struct ds_evsel *add_evsel(struct ds_reader *r, const uint8_t *attr, uint32_t size)
{
	struct ds_evsel *e, **ne;

	if (r->nr_evsels >= MAX_EVSELS)
		return NULL;
	ne = realloc(r->evsels, (r->nr_evsels + 1) * sizeof(*ne));
	if (!ne)
		return NULL;
	r->evsels = ne;
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	memcpy(&e->attr, attr, size < DS_ATTR_SIZE_MAX ? size : DS_ATTR_SIZE_MAX);
	e->idx = (int)r->nr_evsels;
	e->nr_regs_user = (uint8_t)popcount64(e->attr.sample_regs_user);
	e->nr_regs_intr = (uint8_t)popcount64(e->attr.sample_regs_intr);
	e->sample_id_size = ds_evsel__id_trailer_size(e);
	r->evsels[r->nr_evsels++] = e;
	return e;
}

static int add_id(struct ds_reader *r, struct ds_evsel *e, uint64_t id)
{
	uint64_t *ni = realloc(e->ids, (e->nr_ids + 1) * sizeof(*ni));

	if (!ni)
		return -ENOMEM;
	e->ids = ni;
	e->ids[e->nr_ids++] = id;
	return dsi_hashmap__set(&r->ids, id, (uint64_t)e->idx);
}

/* Where the sample id sits: perf takes it from the first event's layout. */
static void compute_id_pos(struct ds_reader *r)
{
	const struct ds_attr *a;
	uint64_t t;

	r->id_pos = r->is_pos = -1;
	if (!r->nr_evsels)
		return;
	a = &r->evsels[0]->attr;
	t = a->sample_type;
	if (t & DS_SAMPLE_IDENTIFIER) {
		r->id_pos = 0;
		r->is_pos = 1;
	} else if (t & DS_SAMPLE_ID) {
		r->id_pos = !!(t & DS_SAMPLE_IP) + !!(t & DS_SAMPLE_TID) +
			    !!(t & DS_SAMPLE_TIME) + !!(t & DS_SAMPLE_ADDR);
		r->is_pos = 1 + !!(t & DS_SAMPLE_CPU) + !!(t & DS_SAMPLE_STREAM_ID);
	}
}

struct ds_evsel *ds_reader__evsel_of(const struct ds_reader *r, const struct ds_event_header *hdr)
{
	const uint8_t *rec = (const uint8_t *)hdr;
	uint64_t id, *idx;

	if (r->nr_evsels == 1)
		return r->evsels[0];
	if (!r->nr_evsels)
		return NULL;
	if (hdr->type == DS_REC_SAMPLE) {
		if (r->id_pos < 0)
			return r->evsels[0];
		if (8 + 8 * (size_t)(r->id_pos + 1) > hdr->size)
			return NULL;
		memcpy(&id, rec + 8 + 8 * r->id_pos, 8);
	} else {
		if (r->is_pos < 0 || !DS_ATTR_FLAG(&r->evsels[0]->attr, DS_ATTR_SAMPLE_ID_ALL))
			return r->evsels[0];
		if (8 + 8 * (size_t)r->is_pos > hdr->size)
			return NULL;
		memcpy(&id, rec + hdr->size - 8 * r->is_pos, 8);
	}
	if (!id) /* records perf synthesizes (existing threads, maps) carry id 0 */
		return r->evsels[0];
	idx = dsi_hashmap__find(&r->ids, id);
	return idx ? r->evsels[*idx] : NULL;
}

/* ---- header features ------------------------------------------------- */

struct cursor {
	const uint8_t *p;
	uint64_t len, pos;
};

static bool cur_u32(struct cursor *c, uint32_t *v)
{
	if (c->len - c->pos < 4)
		return false;
	memcpy(v, c->p + c->pos, 4);
	c->pos += 4;
	return true;
}

static bool cur_u64(struct cursor *c, uint64_t *v)
{
	if (c->len - c->pos < 8)
		return false;
	memcpy(v, c->p + c->pos, 8);
	c->pos += 8;
	return true;
}

/* perf_header_string: u32 len (padded, with NUL), bytes */
static char *cur_string(struct cursor *c)
{
	uint32_t len;

	if (!cur_u32(c, &len) || c->len - c->pos < len)
		return NULL;
	char *s = strndup((const char *)c->p + c->pos, len);

	c->pos += len;
	return s;
}

static char *cur_string_list(struct cursor *c)
{
	uint32_t nr;
	size_t total = 0;
	char *out = NULL;

	if (!cur_u32(c, &nr) || nr > 65536)
		return NULL;
	for (uint32_t i = 0; i < nr; i++) {
		char *s = cur_string(c);

		if (!s)
			break;
		size_t l = strlen(s);
		char *n = realloc(out, total + l + 2);

		if (!n) {
			free(s);
			break;
		}
		out = n;
		if (total)
			out[total++] = ' ';
		memcpy(out + total, s, l + 1);
		total += l;
		free(s);
	}
	return out ? out : strdup("");
}

static void replace_str(char **dst, char *s)
{
	free(*dst);
	*dst = s;
}

int dsi_reader__add_build_id(struct ds_reader *r, const uint8_t *p, size_t len)
{
	struct ds_event_header h;
	struct ds_build_id_entry *e, *ne;
	int32_t pid;

	if (len < 8 + 4 + 24)
		return -EINVAL;
	memcpy(&h, p, 8);
	if (h.size < 8 + 4 + 24 || h.size > len)
		return -EINVAL;
	ne = realloc(r->info.build_ids, (r->info.nr_build_ids + 1) * sizeof(*ne));
	if (!ne)
		return -ENOMEM;
	r->info.build_ids = ne;
	e = &ne[r->info.nr_build_ids];
	memset(e, 0, sizeof(*e));
	memcpy(&pid, p + 8, 4);
	e->pid = pid;
	e->misc = h.misc;
	memcpy(e->data, p + 12, 20);
	e->size = (h.misc & DS_MISC_BUILD_ID_SIZE) ? p[32] : 20;
	if (e->size > 20)
		e->size = 20;
	e->filename = strndup((const char *)p + 36, h.size - 36);
	if (!e->filename)
		return -ENOMEM;
	r->info.nr_build_ids++;
	return 0;
}

static void parse_build_ids(struct ds_reader *r, struct cursor *c)
{
	while (c->len - c->pos >= 8) {
		struct ds_event_header h;

		memcpy(&h, c->p + c->pos, 8);
		if (h.size < 8 || h.size > c->len - c->pos)
			break;
		if (dsi_reader__add_build_id(r, c->p + c->pos, h.size))
			break;
		c->pos += h.size;
	}
}

static void parse_event_desc(struct ds_reader *r, struct cursor *c)
{
	uint32_t nr, asz;

	if (!cur_u32(c, &nr) || !cur_u32(c, &asz) || asz < DS_ATTR_SIZE_VER0 || asz > 4096)
		return;
	for (uint32_t i = 0; i < nr; i++) {
		uint32_t nr_ids;

		if (c->len - c->pos < asz)
			return;
		c->pos += asz;
		if (!cur_u32(c, &nr_ids))
			return;
		char *name = cur_string(c);

		if (!name)
			return;
		if (c->len - c->pos < (uint64_t)nr_ids * 8) {
			free(name);
			return;
		}
		/* match the description to the evsel by its first id, else by index */
		struct ds_evsel *e = NULL;

		if (nr_ids) {
			uint64_t id, *idx;

			memcpy(&id, c->p + c->pos, 8);
			idx = dsi_hashmap__find(&r->ids, id);
			if (idx)
				e = r->evsels[*idx];
		}
		if (!e && i < r->nr_evsels)
			e = r->evsels[i];
		c->pos += (uint64_t)nr_ids * 8;
		if (e)
			replace_str(&e->name, name);
		else
			free(name);
	}
}

/*
 * The tracepoint formats (HEADER_TRACING_DATA feature, or the payload of a
 * pipe's HEADER_TRACING_DATA record), kept as they are: lib/format/tracepoint.c
 * parses them when a tracepoint sample needs them.
 */
static void keep_tracing_data(struct ds_reader *r, const uint8_t *p, uint64_t len)
{
	uint8_t *copy = len ? malloc(len) : NULL;

	if (!copy)
		return;
	memcpy(copy, p, len);
	free(r->info.tracing_data);
	r->info.tracing_data = copy;
	r->info.tracing_data_size = len;
}

bool ds_header_info__has_feature(const struct ds_header_info *hi, int feat)
{
	return feat >= 0 && feat < DS_FEAT_BITS && (hi->features[feat / 64] >> (feat % 64) & 1);
}

void dsi_reader__parse_feature(struct ds_reader *r, int feat, const uint8_t *p, uint64_t len, uint64_t off)
{
	struct cursor c = { p, len, 0 };
	struct ds_header_info *in = &r->info;
	uint32_t a, b;

	in->features[feat / 64] |= 1ULL << (feat % 64);
	free(r->feat_raw[feat]);
	r->feat_raw[feat] = malloc(len ? len : 1);
	r->feat_len[feat] = r->feat_raw[feat] ? len : 0;
	r->feat_off[feat] = off;
	if (r->feat_raw[feat])
		memcpy(r->feat_raw[feat], p, len);
	switch (feat) {
	case DS_FEAT_BUILD_ID: parse_build_ids(r, &c); break;
	case DS_FEAT_HOSTNAME: replace_str(&in->hostname, cur_string(&c)); break;
	case DS_FEAT_OSRELEASE: replace_str(&in->osrelease, cur_string(&c)); break;
	case DS_FEAT_VERSION: replace_str(&in->version, cur_string(&c)); break;
	case DS_FEAT_ARCH: replace_str(&in->arch, cur_string(&c)); break;
	case DS_FEAT_CPUDESC: replace_str(&in->cpudesc, cur_string(&c)); break;
	case DS_FEAT_CPUID: replace_str(&in->cpuid, cur_string(&c)); break;
	case DS_FEAT_CMDLINE: replace_str(&in->cmdline, cur_string_list(&c)); break;
	case DS_FEAT_NRCPUS:
		if (cur_u32(&c, &a) && cur_u32(&c, &b)) {
			in->nr_cpus_avail = a;
			in->nr_cpus_online = b;
		}
		break;
	case DS_FEAT_TOTAL_MEM: cur_u64(&c, &in->total_mem); break;
	case DS_FEAT_EVENT_DESC: parse_event_desc(r, &c); break;
	case DS_FEAT_TRACING_DATA:
		keep_tracing_data(r, p, len);
		break;
	case DS_FEAT_SAMPLE_TIME:
		cur_u64(&c, &in->first_sample_time);
		cur_u64(&c, &in->last_sample_time);
		break;
	case DS_FEAT_COMPRESSED: {
		uint32_t ver = 0;

		if (cur_u32(&c, &ver) && cur_u32(&c, &in->comp_type))
			if (cur_u32(&c, &in->comp_level) && cur_u32(&c, &in->comp_ratio))
				cur_u32(&c, &in->comp_mmap_len);
		break;
	}
	default:
		break;
	}
}

static void read_features(struct ds_reader *r, const struct ds_file_header *h)
{
	uint64_t off = h->data.offset + h->data.size;
	int nr = 0;
	const uint8_t *p;

	for (int f = 1; f < DS_FEAT_BITS; f++)
		nr += !!(h->adds_features[f / 64] & (1ULL << (f % 64)));
	if (!nr || h->data.size == 0)
		return;
	if (dsi_source__get(r->src, off, (size_t)nr * 16, &p)) {
		ds_warn("%s: offset %#llx: feature section table past end of file; header features ignored\n",
			r->path, (unsigned long long)off);
		return;
	}
	struct ds_file_section *secs = malloc((size_t)nr * sizeof(*secs));

	if (!secs)
		return;
	memcpy(secs, p, (size_t)nr * 16);
	for (int f = 1, i = 0; f < DS_FEAT_BITS; f++) {
		if (!(h->adds_features[f / 64] & (1ULL << (f % 64))))
			continue;
		struct ds_file_section s = secs[i++];

		if (s.size > (64u << 20) || dsi_source__get(r->src, s.offset, (size_t)s.size, &p)) {
			ds_warn("%s: offset %#llx: header feature %d (size %llu) is outside the file; ignored\n",
				r->path, (unsigned long long)s.offset, f, (unsigned long long)s.size);
			continue;
		}
		dsi_reader__parse_feature(r, f, p, s.size, s.offset);
	}
	free(secs);
}

/* ---- open ------------------------------------------------------------ */

static int read_attrs(struct ds_reader *r, const struct ds_file_header *h)
{
	const uint8_t *p;
	uint64_t fasz = h->attr_size;

	if (fasz < DS_ATTR_SIZE_VER0 + 16 || fasz > 4096 + 16)
		return dsi_reader__fail(r, 16, -EINVAL, "attr size %llu is not a valid perf_file_attr size",
				   (unsigned long long)fasz);
	if (h->attrs.size % fasz || h->attrs.size / fasz > MAX_EVSELS)
		return dsi_reader__fail(r, 24, -EINVAL, "attrs section size %llu is not a multiple of attr size %llu (or too many attrs)",
				   (unsigned long long)h->attrs.size, (unsigned long long)fasz);
	if (h->attrs.size == 0)
		return dsi_reader__fail(r, 24, -EINVAL, "file has no events (attrs section is empty)");
	size_t n = (size_t)(h->attrs.size / fasz);

	for (size_t i = 0; i < n; i++) {
		uint64_t off = h->attrs.offset + i * fasz;
		struct ds_file_section ids;
		struct ds_evsel *e;

		if (dsi_source__get(r->src, off, (size_t)fasz, &p))
			return dsi_reader__fail(r, off, -EINVAL, "attr %zu lies past the end of the file", i);
		uint32_t asz;

		memcpy(&asz, p + 4, 4);
		if (asz == 0)
			asz = DS_ATTR_SIZE_VER0;
		if (asz > fasz - 16)
			return dsi_reader__fail(r, off + 4, -EINVAL, "attr %zu size %u exceeds the file's attr size %llu",
					   i, asz, (unsigned long long)(fasz - 16));
		e = add_evsel(r, p, asz);
		if (!e)
			return dsi_reader__fail(r, off, -ENOMEM, "out of memory");
		memcpy(&ids, p + fasz - 16, 16);
		if (ids.size % 8 || ids.size > (64u << 20))
			return dsi_reader__fail(r, off + fasz - 16, -EINVAL, "attr %zu id section size %llu is invalid",
					   i, (unsigned long long)ids.size);
		if (ids.size) {
			if (dsi_source__get(r->src, ids.offset, (size_t)ids.size, &p))
				return dsi_reader__fail(r, off + fasz - 16, -EINVAL,
						   "attr %zu ids at %#llx lie past the end of the file",
						   i, (unsigned long long)ids.offset);
			uint64_t *tmp = malloc((size_t)ids.size);

			if (!tmp)
				return dsi_reader__fail(r, off, -ENOMEM, "out of memory");
			memcpy(tmp, p, (size_t)ids.size);
			for (size_t k = 0; k < ids.size / 8; k++)
				if (add_id(r, e, tmp[k])) {
					free(tmp);
					return dsi_reader__fail(r, off, -ENOMEM, "out of memory");
				}
			free(tmp);
		}
	}
	return 0;
}

static int open_file(struct ds_reader *r)
{
	struct ds_file_header h;
	const uint8_t *p;
	int err;

	err = dsi_source__get(r->src, 0, 16, &p);
	if (err)
		return dsi_reader__fail(r, 0, -EINVAL, "file is too short for a perf.data header (%llu bytes)",
				   (unsigned long long)(r->src->pipe ? 0 : r->src->size));
	memcpy(&h, p, 16);
	if (h.magic == __builtin_bswap64(DS_PERF_MAGIC2))
		return dsi_reader__fail(r, 0, -EINVAL, "a big-endian perf.data (recorded on s390x, or ppc64 or another "
				   "big-endian machine): dstack reads little-endian recordings only (perf's own "
				   "reader swaps every record)");
	if (!memcmp(&h.magic, "PERFFILE", 8))
		return dsi_reader__fail(r, 0, -EINVAL, "a perf.data of format version 1 (\"PERFFILE\", perf before "
				   "Linux 2.6.37): dstack reads version 2 (\"PERFILE2\") only");
	if (h.magic != DS_PERF_MAGIC2)
		return dsi_reader__fail(r, 0, -EINVAL, "not a perf.data file (bad magic %#llx)",
				   (unsigned long long)h.magic);
	if (h.size == 16) {
		r->info.pipe = true;
		r->pos = 16;
		/* a pipe-mode stream saved to a file ends where the file ends */
		r->end = r->src->pipe ? UINT64_MAX : r->src->size;
		return 0;
	}
	if (h.size != sizeof(h))
		return dsi_reader__fail(r, 8, -EINVAL, "header size %llu is neither %zu (file) nor 16 (pipe)",
				   (unsigned long long)h.size, sizeof(h));
	if (r->src->pipe)
		return dsi_reader__fail(r, 8, -EINVAL, "a perf.data file in file mode cannot be read from a pipe: give its path with -i (only pipe-mode streams, perf record -o -, can be piped)");
	if (dsi_source__get(r->src, 0, sizeof(h), &p))
		return dsi_reader__fail(r, 0, -EINVAL, "file is too short for a perf.data header (%llu bytes)",
				   (unsigned long long)r->src->size);
	memcpy(&h, p, sizeof(h));
	err = read_attrs(r, &h);
	if (err)
		return err;
	compute_id_pos(r);
	if (h.data.offset > r->src->size)
		return dsi_reader__fail(r, 40, -EINVAL, "data section offset %#llx is past the end of the file (%llu bytes)",
				   (unsigned long long)h.data.offset, (unsigned long long)r->src->size);
	read_features(r, &h);
	r->pos = h.data.offset;
	r->end = h.data.offset + h.data.size;
	if (h.data.size == 0) {
		/* a recorder that died before finalising the header: read what is there */
		ds_warn("%s: the header gives no data size (recording not finished?); reading to the end of the file\n",
			r->path);
		r->end = r->src->size;
	} else if (r->end > r->src->size || r->end < h.data.offset) {
		/* a truncated file: read what is there, then report it */
		r->declared_end = r->end < h.data.offset ? UINT64_MAX : r->end;
		r->end = r->src->size;
	}
	r->info.data_offset = h.data.offset;
	r->info.data_size = r->end - r->pos;
	r->info.header_data_size = h.data.size;
	return 0;
}

/*
 * A perf.data directory's files into r->parts: "data" first, then its
 * non-empty regular files named "data.*" with their sizes, in readdir's
 * order as perf takes them (perf_data__open_dir): that order decides the
 * order of records of one timestamp in two files.  0 or -errno.
 */
static int list_dir_parts(struct ds_reader *r, const char *dir)
{
	struct { char *path; uint64_t size; } *v = NULL;
	size_t n = 0, cap = 0, past = 0;
	struct dirent *de;
	DIR *d = opendir(dir);
	int err = 0;

	if (!d)
		return -errno;
	while (!err && (de = readdir(d))) {
		struct stat st;
		char *p;

		if (strncmp(de->d_name, "data.", 5))
			continue;
		if (asprintf(&p, "%s/%s", dir, de->d_name) < 0) {
			err = -ENOMEM;
			break;
		}
		if (stat(p, &st) || !S_ISREG(st.st_mode) || !st.st_size || n >= MAX_PARTS) {
			past += n >= MAX_PARTS;
			free(p);
			continue;
		}
		void *nv = dsi_grow(v, &cap, n + 1, sizeof(*v), 16);

		if (!nv) {
			free(p);
			err = -ENOMEM;
			break;
		}
		v = nv;
		v[n].path = p;
		v[n++].size = (uint64_t)st.st_size;
	}
	closedir(d);
	if (past)
		ds_warn("%s: %zu data.* files past the first %d are not read\n", dir, past, MAX_PARTS);
	if (!err && !(r->parts = calloc(n + 1, sizeof(*r->parts))))
		err = -ENOMEM;
	if (!err && asprintf(&r->parts[0].path, "%s/data", dir) < 0) {
		r->parts[0].path = NULL;
		err = -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		if (err) {
			free(v[i].path);
		} else {
			r->parts[i + 1].path = v[i].path;
			r->parts[i + 1].end = v[i].size;
		}
	}
	free(v);
	if (!err)
		r->nr_parts = n + 1;
	return err;
}

/* r->parts for @path: a perf.data directory's files, or the one file (or pipe). 0 or -errno. */
static int list_parts(struct ds_reader *r, const char *path)
{
	struct stat st;

	if (strcmp(path, "-") && !stat(path, &st) && S_ISDIR(st.st_mode)) {
		char *data;
		bool has_data;

		if (asprintf(&data, "%s/data", path) < 0)
			return -ENOMEM;
		has_data = !stat(data, &st) && S_ISREG(st.st_mode);
		free(data);
		if (!has_data)
			return -EISDIR;   /* not a perf.data directory */
		r->info.dir = true;
		return list_dir_parts(r, path);
	}
	if (!(r->parts = calloc(1, sizeof(*r->parts))) || !(r->parts[0].path = strdup(path)))
		return -ENOMEM;
	r->nr_parts = 1;
	return 0;
}

/* A directory's data.* files follow the data section of its "data": their global offsets. */
static void place_parts(struct ds_reader *r)
{
	uint64_t base = r->end;

	r->parts[0].end = r->end;
	for (size_t i = 1; i < r->nr_parts; i++) {
		r->parts[i].base = base;
		base += r->parts[i].end;
		r->info.parts_size += r->parts[i].end;
	}
}

/* Part @i's file opened, sharing the first's pinned-window count and limit. 0 or the failure. */
static int open_part(struct ds_reader *r, size_t i)
{
	struct ds_reader_part *pt = &r->parts[i];
	int err;

	if (pt->opened)
		return 0;
	err = dsi_source__open(&pt->src, pt->path);
	pt->opened = true;
	if (err) {
		pt->pos = pt->end;   /* nothing to read from it */
		return dsi_reader__fail(r, 0, err, "cannot open: %s", strerror(-err));
	}
	pt->src.pinned = r->parts[0].src.pinned;
	pt->src.pin_limit = r->parts[0].src.pin_limit;
	if (pt->src.size < pt->end)
		pt->end = pt->src.size;
	return 0;
}

void dsi_reader__set_pin_limit(struct ds_reader *r, size_t limit)
{
	for (size_t i = 0; i < r->nr_parts; i++)
		r->parts[i].src.pin_limit = limit;
}

static int end_of_data(struct ds_reader *r);

/* The current part's decompression put aside in @save, part @load's taken up. */
static void swap_decompression(struct ds_reader *r, struct ds_reader_part *save, struct ds_reader_part *load)
{
	save->zstd = r->zstd, save->dbuf = r->dbuf, save->dcap = r->dcap;
	save->dlen = r->dlen, save->dhead = r->dhead, save->doff = r->doff;
	r->zstd = load->zstd, r->dbuf = load->dbuf, r->dcap = load->dcap;
	r->dlen = load->dlen, r->dhead = load->dhead, r->doff = load->doff;
	load->zstd = NULL, load->dbuf = NULL, load->dcap = load->dlen = load->dhead = 0;
}

/*
 * The next part to read from, as perf takes turns: after PART_TURN bytes
 * of one part or at its end, the next part with records left (the current
 * one again if it is the only one).  A main file cut short fails when its
 * data ends.  0 or the failure.
 */
static int next_part(struct ds_reader *r)
{
	size_t i = r->cur;

	if (r->pos >= r->end && r->cur == 0 && r->declared_end)
		return end_of_data(r);
	r->parts[r->cur].pos = r->pos;
	r->turn_bytes = 0;
	for (size_t k = 1; k <= r->nr_parts; k++) {
		i = (r->cur + k) % r->nr_parts;
		if (r->parts[i].pos < r->parts[i].end)
			break;
	}
	if (r->parts[i].pos >= r->parts[i].end)
		return 0;   /* every part is read: r->pos is at the current one's end */
	if (i != r->cur)
		swap_decompression(r, &r->parts[r->cur], &r->parts[i]);
	r->cur = i;
	r->src = &r->parts[i].src;
	r->pos = r->parts[i].pos;
	r->end = r->parts[i].end;
	return open_part(r, i);
}

struct ds_reader *ds_reader__open(const char *path)
{
	struct ds_reader *r = calloc(1, sizeof(*r));
	int err;

	if (!r) {
		dsi_error(-ENOMEM, "%s: out of memory", path);
		return NULL;
	}
	r->path = strdup(path);
	err = !r->path ? -ENOMEM : list_parts(r, path);
	if (!err) {
		r->src = &r->parts[0].src;
		r->parts[0].opened = true;
		err = dsi_source__open(r->src, r->parts[0].path);
	}
	if (err) {
		const char *what = err == -EISDIR ? "Is a directory (a perf.data directory holds a file 'data')"
						  : strerror(-err);

		dsi_error(err, "%s: %s", r->parts && r->parts[0].path ? r->parts[0].path : path, what);
		ds_reader__close(r);
		errno = -err;
		return NULL;
	}
	err = open_file(r);
	if (!err && r->nr_parts > 1)
		place_parts(r);
	if (err) {
		dsi_error_keep(err, r->err);
		ds_reader__close(r);
		errno = -err;
		return NULL;
	}
	return r;
}

void ds_reader__close(struct ds_reader *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nr_evsels; i++) {
		free(r->evsels[i]->ids);
		free(r->evsels[i]->name);
		free(r->evsels[i]);
	}
	free(r->evsels);
	for (int f = 0; f < DS_FEAT_BITS; f++)
		free(r->feat_raw[f]);
	dsi_hashmap__exit(&r->ids);
	for (size_t i = 0; i < r->info.nr_build_ids; i++)
		free(r->info.build_ids[i].filename);
	free(r->info.build_ids);
	free(r->info.hostname);
	free(r->info.osrelease);
	free(r->info.version);
	free(r->info.arch);
	free(r->info.cpudesc);
	free(r->info.cpuid);
	free(r->info.cmdline);
	free(r->info.tracing_data);
	if (r->zstd)
		ZSTD_freeDStream(r->zstd);
	free(r->dbuf);
	free(r->scratch);
	for (size_t i = 0; i < r->nr_parts; i++) {
		if (r->parts[i].opened)
			dsi_source__close(&r->parts[i].src);
		if (r->parts[i].zstd)
			ZSTD_freeDStream(r->parts[i].zstd);
		free(r->parts[i].dbuf);
		free(r->parts[i].path);
	}
	free(r->parts);
	free(r->path);
	free(r);
}

/* Give every evsel a name once the attrs are all known. */
static void name_evsels(struct ds_reader *r)
{
	for (size_t i = 0; i < r->nr_evsels; i++)
		if (!r->evsels[i]->name)
			r->evsels[i]->name = derive_name(&r->evsels[i]->attr);
}

/* ---- records --------------------------------------------------------- */

static int handle_pipe_attr(struct ds_reader *r, uint64_t off, const uint8_t *p, uint16_t size)
{
	uint32_t asz;
	struct ds_evsel *e;

	if (size < 8 + DS_ATTR_SIZE_VER0)
		return dsi_reader__fail(r, off, -EINVAL, "HEADER_ATTR record of size %u is too small", size);
	memcpy(&asz, p + 8 + 4, 4);
	if (asz == 0)
		asz = DS_ATTR_SIZE_VER0;
	if (asz < DS_ATTR_SIZE_VER0 || asz > (uint32_t)size - 8)
		return dsi_reader__fail(r, off, -EINVAL, "HEADER_ATTR attr size %u does not fit the record (%u bytes)", asz, size);
	e = add_evsel(r, p + 8, asz);
	if (!e)
		return dsi_reader__fail(r, off, -ENOMEM, "too many events or out of memory");
	for (uint32_t o = 8 + asz; o + 8 <= size; o += 8) {
		uint64_t id;

		memcpy(&id, p + o, 8);
		if (add_id(r, e, id))
			return dsi_reader__fail(r, off, -ENOMEM, "out of memory");
	}
	compute_id_pos(r);
	return 0;
}

static void handle_id_index(struct ds_reader *r, const uint8_t *p, uint16_t size)
{
	uint64_t nr;

	if (size < 16)
		return;
	memcpy(&nr, p + 8, 8);
	/* entries: id, idx, cpu, tid (4 x u64); newer perf may add more after */
	for (uint64_t i = 0; i < nr && 16 + (i + 1) * 32 <= size; i++) {
		uint64_t id, idx;

		memcpy(&id, p + 16 + i * 32, 8);
		memcpy(&idx, p + 16 + i * 32 + 8, 8);
		if (idx < r->nr_evsels && !dsi_hashmap__find(&r->ids, id))
			add_id(r, r->evsels[idx], id);
	}
}

static void handle_event_update(struct ds_reader *r, const uint8_t *p, uint16_t size)
{
	uint64_t type, id, *idx;

	if (size < 24)
		return;
	memcpy(&type, p + 8, 8);
	memcpy(&id, p + 16, 8);
	if (type != 2 /* PERF_EVENT_UPDATE__NAME */)
		return;
	idx = dsi_hashmap__find(&r->ids, id);
	if (idx)
		replace_str(&r->evsels[*idx]->name, strndup((const char *)p + 24, size - 24));
}

/*
 * TIME_CONV: shift, mult, zero; a newer perf's also cycles, mask and the
 * two caps (an older record ends before them: perf's event_contains).  A
 * record too short for the first three is ignored.  The consumer reads
 * the conversion (jitdumps' TSC times): the pipeline was quiesced.
 */
static void handle_time_conv(struct ds_reader *r, const uint8_t *p, uint16_t size)
{
	struct ds_time_conv tc = { 0 };

	if (size < 32)
		return;
	memcpy(&tc.time_shift, p + 8, 8);
	memcpy(&tc.time_mult, p + 16, 8);
	memcpy(&tc.time_zero, p + 24, 8);
	if (size >= 50) {
		memcpy(&tc.time_cycles, p + 32, 8);
		memcpy(&tc.time_mask, p + 40, 8);
		tc.cap_user_time_zero = p[48] != 0;
		tc.cap_user_time_short = p[49] != 0;
	}
	r->info.time_conv = tc;   /* (a hostile shift past 63: ds_time_conv__perf_time converts nothing) */
}

uint64_t ds_time_conv__perf_time(const struct ds_time_conv *tc, uint64_t cyc)
{
	uint64_t quot, rem;

	if (!tc->time_mult || tc->time_shift >= 64)
		return DS_NO_TIME;
	if (tc->cap_user_time_short)
		cyc = tc->time_cycles + ((cyc - tc->time_cycles) & tc->time_mask);
	quot = cyc >> tc->time_shift;
	rem = cyc & ((1ull << tc->time_shift) - 1);
	return tc->time_zero + quot * tc->time_mult + ((rem * tc->time_mult) >> tc->time_shift);
}

static void quiesce(struct ds_reader *r)
{
	if (r->quiesce)
		r->quiesce(r->quiesce_ctx);
}

/* Side effects of perf-tool records on the reader's own state. */
static int absorb_record(struct ds_reader *r, uint64_t off, const uint8_t *p, uint16_t size, uint32_t type)
{
	switch (type) {
	case DS_REC_HEADER_ATTR:
	case DS_REC_HEADER_FEATURE:
	case DS_REC_HEADER_BUILD_ID:
	case DS_REC_ID_INDEX:
	case DS_REC_EVENT_UPDATE:
	case DS_REC_FINISHED_INIT:
	case DS_REC_TIME_CONV:
		quiesce(r);
		break;
	default:
		return 0;
	}
	switch (type) {
	case DS_REC_HEADER_ATTR:
		if (r->info.pipe)
			return handle_pipe_attr(r, off, p, size);
		break;
	case DS_REC_HEADER_FEATURE:
		if (size >= 16) {
			uint64_t feat;

			memcpy(&feat, p + 8, 8);
			if (feat > 0 && feat < DS_FEAT_BITS)
				dsi_reader__parse_feature(r, (int)feat, p + 16, size - 16, off + 16);
		}
		break;
	case DS_REC_HEADER_BUILD_ID:
		dsi_reader__add_build_id(r, p, size);
		break;
	case DS_REC_ID_INDEX:
		handle_id_index(r, p, size);
		break;
	case DS_REC_EVENT_UPDATE:
		handle_event_update(r, p, size);
		break;
	case DS_REC_TIME_CONV:
		handle_time_conv(r, p, size);
		break;
	default:
		break;
	}
	return 0;
}

/* Extra payload that follows some records outside their header.size. */
static int extra_payload(struct ds_reader *r, uint64_t off, const uint8_t *p, uint32_t type,
			 uint16_t size, uint64_t *extra)
{
	uint64_t n;

	*extra = 0;
	if (type == DS_REC_AUXTRACE && size >= 16) {
		memcpy(&n, p + 8, 8);
		*extra = n;
	} else if (type == DS_REC_HEADER_TRACING_DATA && r->info.pipe && size >= 12) {
		uint32_t n32;

		memcpy(&n32, p + 8, 4);
		*extra = ((uint64_t)n32 + 7) & ~7ULL;
	}
	if (*extra > (1ULL << 40))
		return dsi_reader__fail(r, off, -EINVAL, "payload size %llu after record type %u is absurd",
				   (unsigned long long)*extra, type);
	return 0;
}

static const uint8_t *aligned(struct ds_reader *r, const uint8_t *p, size_t size)
{
	if (!((uintptr_t)p & 7))
		return p;
	if (size > r->scratch_cap) {
		uint8_t *n = realloc(r->scratch, size);

		if (!n)
			return NULL;
		r->scratch = n;
		r->scratch_cap = size;
	}
	memcpy(r->scratch, p, size);
	return r->scratch;
}

static int feed_compressed(struct ds_reader *r, uint64_t off, const uint8_t *p, uint16_t size, uint32_t type)
{
	const uint8_t *src = p + 8;
	size_t src_len = size - 8u;

	if (type == DS_REC_COMPRESSED2) {
		uint64_t dsz;

		if (size < 16)
			return dsi_reader__fail(r, off, -EINVAL, "COMPRESSED2 record of size %u is too small", size);
		memcpy(&dsz, p + 8, 8);
		if (dsz > (uint64_t)size - 16)
			return dsi_reader__fail(r, off, -EINVAL, "COMPRESSED2 data size %llu exceeds the record (%u bytes)",
					   (unsigned long long)dsz, size);
		src = p + 16;
		src_len = (size_t)dsz;
	}
	if (!r->zstd) {
		r->zstd = ZSTD_createDStream();
		if (!r->zstd || ZSTD_isError(ZSTD_initDStream(r->zstd)))
			return dsi_reader__fail(r, off, -ENOMEM, "cannot create a zstd decompressor");
	}
	/* keep the unparsed tail: a record may span two compressed records */
	if (r->dhead) {
		memmove(r->dbuf, r->dbuf + r->dhead, r->dlen - r->dhead);
		r->dlen -= r->dhead;
		r->dhead = 0;
	}
	ZSTD_inBuffer in = { src, src_len, 0 };

	while (in.pos < in.size) {
		if (r->dcap - r->dlen < (1u << 16)) {
			/* doubled, from 1 MiB */
			if (r->dcap > MAX_DECOMP_PENDING / 2)
				return dsi_reader__fail(r, off, -EINVAL, "compressed data expands past %u MiB without a complete record",
						   MAX_DECOMP_PENDING >> 20);
			uint8_t *nb = dsi_grow(r->dbuf, &r->dcap, r->dcap + 1, 1, 1u << 20);

			if (!nb)
				return dsi_reader__fail(r, off, -ENOMEM, "out of memory");
			r->dbuf = nb;
		}
		ZSTD_outBuffer out = { r->dbuf, r->dcap, r->dlen };
		size_t ret = ZSTD_decompressStream(r->zstd, &out, &in);

		if (ZSTD_isError(ret))
			return dsi_reader__fail(r, off, -EINVAL, "corrupt zstd data in compressed record: %s",
					   ZSTD_getErrorName(ret));
		r->dlen = out.pos;
		if (ret == 0 && in.pos < in.size) /* frame ended, another may follow */
			continue;
	}
	r->doff = off;
	return 0;
}

/* Next record from the decompressed buffer: 1, 0 (need more input), <0. */
static int next_decompressed(struct ds_reader *r, struct ds_record *rec)
{
	struct ds_event_header h;
	size_t avail = r->dlen - r->dhead;

	if (avail < 8)
		return 0;
	memcpy(&h, r->dbuf + r->dhead, 8);
	if (h.size < 8)
		return dsi_reader__fail(r, r->doff, -EINVAL, "decompressed record (type %u) has size %u, smaller than its header",
				   h.type, h.size);
	if (h.size > avail)
		return 0;
	const uint8_t *p = aligned(r, r->dbuf + r->dhead, h.size);

	if (!p)
		return dsi_reader__fail(r, r->doff, -ENOMEM, "out of memory");
	r->dhead += h.size;
	rec->hdr = (const struct ds_event_header *)p;
	rec->offset = r->parts[r->cur].base + r->doff;
	rec->decompressed = true;
	rec->in_window = false;
	absorb_record(r, r->doff, p, h.size, h.type);
	/*
	 * Fuzz finding (fuzz_zstd): an attr inside a compressed block made an
	 * evsel with no name, and its samples crashed `dstack script` (NULL
	 * name).  Name new evsels here as the uncompressed path does.
	 */
	if (h.type == DS_REC_FINISHED_INIT || h.type == DS_REC_HEADER_ATTR)
		name_evsels(r);
	return 1;
}

/*
 * The data section is read to its end: 0 when it ends cleanly, else the
 * failure (a compressed record's payload or the declared data cut short).
 */
static int end_of_data(struct ds_reader *r)
{
	if (r->dlen > r->dhead)
		return dsi_reader__fail(r, r->doff, -EINVAL, "data ends inside a compressed record's payload (%zu bytes left over)",
				   r->dlen - r->dhead);
	if (r->declared_end)
		return dsi_reader__fail(r, r->end, -EINVAL, "truncated: the file ends here but its header says the data section ends at %#llx",
				   (unsigned long long)r->declared_end);
	return 0;
}

/*
 * The record at r->pos, whole, into *h and *p (its header checked against
 * the data's end).  1 got it, 0 a pipe ended cleanly before it, or the
 * failure.
 */
static int fetch_record(struct ds_reader *r, struct ds_event_header *h, const uint8_t **p)
{
	int err = dsi_source__get(r->src, r->pos, 8, p);

	if (err == -ENODATA) {
		if (r->info.pipe && r->src->eof && r->src->size == r->pos)
			return 0; /* a pipe ends where it ends */
		return dsi_reader__fail(r, r->pos, -EINVAL, "truncated: %llu bytes where a record header needs 8",
				   (unsigned long long)((r->info.pipe ? r->src->size : r->end) - r->pos));
	}
	if (err)
		return dsi_reader__fail(r, r->pos, err, "read error: %s", strerror(-err));
	memcpy(h, *p, 8);
	if (h->size < 8)
		return dsi_reader__fail(r, r->pos, -EINVAL, "record (type %u) has size %u, smaller than its 8-byte header",
				   h->type, h->size);
	if (h->size > r->end - r->pos)
		return dsi_reader__fail(r, r->pos, -EINVAL, "record (type %u, size %u) extends past the end of the data (%llu bytes left)",
				   h->type, h->size, (unsigned long long)(r->end - r->pos));
	err = dsi_source__get(r->src, r->pos, h->size, p);
	if (err == -ENODATA)
		return dsi_reader__fail(r, r->pos, -EINVAL, "truncated: record (type %u, size %u) is cut off by the end of the input",
				   h->type, h->size);
	if (err)
		return dsi_reader__fail(r, r->pos, err, "read error: %s", strerror(-err));
	return 1;
}

/*
 * The bytes that follow the record at r->pos outside its size (a pipe's
 * tracing data, build ids, ...) into *extra, checked against the data's
 * end; tracing data is kept, the record and it fetched again in one piece
 * into *p.  0 or the failure.
 */
static int take_payload(struct ds_reader *r, const struct ds_event_header *h, const uint8_t **p,
			uint64_t *extra)
{
	uint64_t off = r->pos;
	uint32_t n32;

	if (extra_payload(r, off, *p, h->type, h->size, extra))
		return r->errcode;
	if (*extra > r->end - r->pos - h->size)
		return dsi_reader__fail(r, off, -EINVAL, "record (type %u) payload of %llu bytes extends past the end of the data",
				   h->type, (unsigned long long)*extra);
	if (h->type != DS_REC_HEADER_TRACING_DATA || !*extra)
		return 0;
	/* the record and its payload in one piece: a pipe keeps nothing before */
	memcpy(&n32, *p + 8, 4);
	quiesce(r);
	if (dsi_source__get(r->src, off, (size_t)h->size + n32, p))
		return dsi_reader__fail(r, off, -EINVAL, "truncated: tracing data cut off by the end of the input");
	keep_tracing_data(r, *p + h->size, n32);
	return 0;
}

/*
 * An uncompressed record at @off into *rec, after the reader has taken
 * what it keeps from it (attrs, ids, features); events are named at the
 * first record.  1, or the failure.
 */
static int deliver_record(struct ds_reader *r, struct ds_record *rec, uint64_t off, const uint8_t *in_place,
			  const struct ds_event_header *h)
{
	const uint8_t *p = aligned(r, in_place, h->size);
	int err;

	if (!p)
		return dsi_reader__fail(r, off, -ENOMEM, "out of memory");
	rec->in_window = p == in_place && !r->src->pipe;
	err = absorb_record(r, off, p, h->size, h->type);
	if (err)
		return err;
	if (h->type == DS_REC_FINISHED_INIT || h->type == DS_REC_HEADER_ATTR)
		name_evsels(r);
	rec->hdr = (const struct ds_event_header *)p;
	rec->offset = r->parts[r->cur].base + off;
	rec->decompressed = false;
	if (!r->named) {
		quiesce(r);
		name_evsels(r);
		r->named = true;
	}
	return 1;
}

static int reader_next(struct ds_reader *r, struct ds_record *rec)
{
	struct ds_event_header h;
	const uint8_t *p;
	uint64_t off, extra;
	int err;

	if (r->errcode)
		return r->errcode;
	for (;;) {
		err = next_decompressed(r, rec);
		if (err)
			return err;
		if (r->nr_parts > 1 && (r->pos >= r->end || r->turn_bytes >= PART_TURN) && (err = next_part(r)))
			return err;
		if (r->pos >= r->end)
			return end_of_data(r);
		err = fetch_record(r, &h, &p);
		if (err <= 0)
			return err;
		off = r->pos;
		if ((err = take_payload(r, &h, &p, &extra)))
			return err;
		r->pos += h.size + extra;
		r->turn_bytes += h.size + extra;
		r->bytes = r->parts[r->cur].base + r->pos;
		if (h.type != DS_REC_COMPRESSED && h.type != DS_REC_COMPRESSED2)
			return deliver_record(r, rec, off, p, &h);
		r->nr_compressed++;
		r->compressed_type = h.type;
		err = feed_compressed(r, off, p, h.size, h.type);
		if (err)
			return err;
	}
}

int ds_reader__next(struct ds_reader *r, struct ds_record *rec)
{
	int ret = reader_next(r, rec);

	return ret < 0 ? dsi_error_keep(ret, r->errcode ? r->err : NULL) : ret;
}
