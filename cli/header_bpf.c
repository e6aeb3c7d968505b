// SPDX-License-Identifier: MIT
/*
 * The BPF programs a recording's header lists (HEADER_BPF_PROG_INFO), as
 * perf 7.2's --header-only prints them: "bpf_prog_<tag>_<name>" with each
 * (sub)program's address and size, the name from the program's BTF
 * (HEADER_BPF_BTF) when it has one.  Every byte read here comes from the
 * file: each offset and count is checked against what is there.
 *
 * Layouts (perf's write_bpf_prog_info / write_bpf_btf, the kernel's uapi):
 *   prog info: u32 count; per program: u32 info_len, u32 data_len,
 *     u64 arrays, struct bpf_prog_info (info_len bytes), data (data_len),
 *     the info's array pointers rewritten as offsets into data;
 *   btf: u32 count; per BTF: u32 id, u32 size, the BTF blob.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "header.h"

/* struct bpf_prog_info's fields perf prints from (byte offsets, uapi) */
enum {
	PI_ID = 4, PI_NAME = 64, PI_NR_JITED_KSYMS = 104, PI_NR_JITED_FUNC_LENS = 108,
	PI_JITED_KSYMS = 112, PI_JITED_FUNC_LENS = 120, PI_BTF_ID = 128, PI_FUNC_INFO_REC_SIZE = 132,
	PI_FUNC_INFO = 136, PI_NR_PROG_TAGS = 180, PI_PROG_TAGS = 184,
};

struct bytes {
	const uint8_t *p;
	uint64_t len;
};

struct prog {
	uint32_t id;
	struct bytes info, data;
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

static void print_prog(FILE *f, const struct prog *pr, struct bytes btfs)
{
	uint32_t nr = (uint32_t)info_u(pr, PI_NR_JITED_KSYMS, 4);
	uint64_t addrs = info_u(pr, PI_JITED_KSYMS, 8), lens = info_u(pr, PI_JITED_FUNC_LENS, 8);
	uint32_t btf_id = (uint32_t)info_u(pr, PI_BTF_ID, 4);
	struct bytes btf = btf_id ? find_btf(btfs, btf_id) : (struct bytes){ NULL, 0 };
	char name[256];

	if (nr != info_u(pr, PI_NR_PROG_TAGS, 4) || nr != info_u(pr, PI_NR_JITED_FUNC_LENS, 4))
		return;   /* perf prints nothing for it */
	if (nr == 1) {
		uint64_t addr = 0;
		uint32_t len = 0;

		get(pr->data, addrs, &addr, 8);
		get(pr->data, lens, &len, 4);
		prog_name(pr, btf, 0, nr, name, sizeof(name));
		fprintf(f, "# bpf_prog_info %u: %s addr 0x%" PRIx64 " size %u\n", pr->id, name, addr, len);
		return;
	}
	fprintf(f, "# bpf_prog_info %u:\n", pr->id);
	for (uint32_t i = 0; i < nr; i++) {
		uint64_t addr = 0;
		uint32_t len = 0;

		if (!get(pr->data, addrs + 8ULL * i, &addr, 8) || !get(pr->data, lens + 4ULL * i, &len, 4))
			break;
		prog_name(pr, btf, i, nr, name, sizeof(name));
		fprintf(f, "# \tsub_prog %u: %s addr 0x%" PRIx64 " size %u\n", i, name, addr, len);
	}
}

static int cmp_prog(const void *a, const void *b)
{
	const struct prog *x = a, *y = b;

	return (x->id > y->id) - (x->id < y->id);
}

void header_print_bpf_progs(FILE *f, const uint8_t *p, uint64_t len, const uint8_t *btf_p, uint64_t btf_len)
{
	struct bytes all = { p, len }, btfs = { btf_p, btf_p ? btf_len : 0 };
	uint32_t n = 0, info_len, data_len;
	uint64_t at = 4;
	size_t nr = 0;
	struct prog *progs;

	get(all, 0, &n, 4);
	size_t cap = n < len / 16 ? n : len / 16;   /* a program takes 16 bytes at least */

	progs = cap ? calloc(cap, sizeof(*progs)) : NULL;
	for (; progs && nr < cap && get(all, at, &info_len, 4) && get(all, at + 4, &data_len, 4);) {
		uint64_t need = 16 + (uint64_t)info_len + data_len;

		if (need > len - at)
			break;
		progs[nr] = (struct prog){ .info = { p + at + 16, info_len }, .data = { p + at + 16 + info_len, data_len } };
		progs[nr].id = (uint32_t)info_u(&progs[nr], PI_ID, 4);
		nr++;
		at += need;
	}
	if (!nr)
		fputs("# bpf_prog_info empty\n", f);
	/* perf's tree of programs, by id */
	if (nr)
		qsort(progs, nr, sizeof(*progs), cmp_prog);
	for (size_t i = 0; i < nr; i++)
		print_prog(f, &progs[i], btfs);
	free(progs);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

void header_print_btfs(FILE *f, const uint8_t *p, uint64_t len)
{
	struct bytes all = { p, len };
	uint32_t n = 0, id, size, *ids;
	uint64_t at = 4;
	size_t nr = 0, cap;

	get(all, 0, &n, 4);
	cap = n < len / 8 ? n : len / 8;   /* a BTF takes 8 bytes at least */
	ids = cap ? calloc(cap, sizeof(*ids)) : NULL;
	for (; ids && nr < cap && get(all, at, &id, 4) && get(all, at + 4, &size, 4) && size <= len - at - 8;
	     at += 8 + (uint64_t)size)
		ids[nr++] = id;
	if (!nr)
		fputs("# btf info empty\n", f);
	if (nr)
		qsort(ids, nr, sizeof(*ids), cmp_u32);   /* perf's tree of BTFs, by id */
	for (size_t i = 0; i < nr; i++)
		fprintf(f, "# btf info of id %u\n", ids[i]);
	free(ids);
}
