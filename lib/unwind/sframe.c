// SPDX-License-Identifier: MIT
/*
 * SFrame decoder, versions 2 and 3 (binutils' sframe-spec; x86_64 only:
 * SFrame has no i386 ABI).  Hand-written because bookworm's libsframe
 * (binutils 2.40) reads neither the version 2 sections binutils 2.44
 * writes nor version 3.  Every offset is checked against the section: the
 * section comes from a file and is hostile.
 *
 * Version 2: 28-byte header, 20-byte FDEs (int32 start, size, FRE offset,
 * FRE count, info, repeat size), FREs after them.  Version 3: 16-byte FDE
 * index entries (int64 start, size, FRE offset) whose count and info
 * bytes (u16 count, info, info2, repeat size) head their FREs.  An FRE is
 * a start offset (1, 2 or 4 bytes), an info byte (bit 0: CFA from SP, else
 * FP; bits 1-4: number of offsets; bits 5-6: their size) and the offsets:
 * the CFA's, then on AMD64 the FP's (the RA lies at the header's fixed
 * offset).  A version 3 FRE with no offset marks the outermost frame.
 */
#include <errno.h>
#include <string.h>
#include "unwind/unwind_int.h"

#define SFRAME_MAGIC 0xdee2
#define SFRAME_HDR 28
#define SFRAME_F_FDE_SORTED 0x1
#define SFRAME_F_FDE_FUNC_START_PCREL 0x4
#define SFRAME_ABI_AMD64 3

static uint32_t get32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint16_t get16(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return v; }

int dsi_uw_sframe__init(struct uw_sframe *sf, const void *p, size_t size, uint64_t vaddr, const char **why)
{
	const uint8_t *b = p;
	size_t hdr, fde_size;

	memset(sf, 0, sizeof(*sf));
	if (size < SFRAME_HDR || get16(b) != SFRAME_MAGIC) {
		*why = "not an SFrame section (magic)";
		return -EINVAL;
	}
	sf->version = b[2];
	sf->flags = b[3];
	sf->abi = b[4];
	sf->fixed_fp = (int8_t)b[5];
	sf->fixed_ra = (int8_t)b[6];
	if (sf->version != 2 && sf->version != 3) {
		*why = "SFrame version is not 2 or 3";
		return -EINVAL;
	}
	if (sf->abi != SFRAME_ABI_AMD64) {
		*why = "SFrame ABI is not AMD64";
		return -EINVAL;
	}
	hdr = SFRAME_HDR + b[7];
	sf->nfdes = get32(b + 8);
	fde_size = sf->version == 2 ? 20 : 16;
	sf->fdes = hdr + (size_t)get32(b + 20);
	sf->fres = hdr + (size_t)get32(b + 24);
	sf->fres_end = sf->fres + (size_t)get32(b + 16);
	if (hdr > size || sf->fdes > size || (size - sf->fdes) / fde_size < sf->nfdes ||
	    sf->fres > size || sf->fres_end > size || sf->fres_end < sf->fres) {
		*why = "SFrame header offsets past the section";
		return -EINVAL;
	}
	sf->p = b;
	sf->size = size;
	sf->vaddr = vaddr;
	return 0;
}

struct fde {
	uint64_t start;
	uint32_t size, nfres;
	uint8_t info, info2, rep;
	size_t fres;             /* its first FRE's offset in the section */
};

/* FDE @i (checked against the section). */
static int fde_get(const struct uw_sframe *sf, uint32_t i, struct fde *f, const char **why)
{
	const uint8_t *e;
	size_t off;
	int64_t start;

	if (sf->version == 2) {
		int32_t s32;

		off = sf->fdes + (size_t)i * 20;
		e = sf->p + off;
		memcpy(&s32, e, 4);
		start = s32;
		f->size = get32(e + 4);
		f->fres = sf->fres + get32(e + 8);
		f->nfres = get32(e + 12);
		f->info = e[16];
		f->rep = e[17];
		f->info2 = 0;
	} else {
		off = sf->fdes + (size_t)i * 16;
		e = sf->p + off;
		memcpy(&start, e, 8);
		f->size = get32(e + 8);
		f->fres = sf->fres + get32(e + 12);
		if (f->fres < sf->fres || f->fres > sf->fres_end || sf->fres_end - f->fres < 5) {
			*why = "SFrame FDE's FRE offset past the section";
			return -EINVAL;
		}
		f->nfres = get16(sf->p + f->fres);
		f->info = sf->p[f->fres + 2];
		f->info2 = sf->p[f->fres + 3];
		f->rep = sf->p[f->fres + 4];
		f->fres += 5;
	}
	if (f->fres < sf->fres || f->fres > sf->fres_end) {
		*why = "SFrame FDE's FRE offset past the section";
		return -EINVAL;
	}
	/* relative to the field itself (the FDE's first byte), else to the section */
	f->start = (sf->flags & SFRAME_F_FDE_FUNC_START_PCREL) ? sf->vaddr + off + (uint64_t)start
							       : sf->vaddr + (uint64_t)start;
	return 0;
}

/* The FDE holding @pc: 1 (into *f), 0 none, -EINVAL. */
static int fde_find(const struct uw_sframe *sf, uint64_t pc, struct fde *f, const char **why)
{
	if (sf->flags & SFRAME_F_FDE_SORTED) {
		uint32_t lo = 0, hi = sf->nfdes;

		while (lo < hi) {
			uint32_t mid = lo + (hi - lo) / 2;

			if (fde_get(sf, mid, f, why))
				return -EINVAL;
			if (f->start <= pc)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (!lo)
			return 0;
		if (fde_get(sf, lo - 1, f, why))
			return -EINVAL;
		return pc - f->start < f->size;
	}
	for (uint32_t i = 0; i < sf->nfdes; i++) {
		if (fde_get(sf, i, f, why))
			return -EINVAL;
		if (pc >= f->start && pc - f->start < f->size)
			return 1;
	}
	return 0;
}

struct fre {
	uint32_t start;
	uint8_t info;
	int32_t off[3];
	unsigned noff;
};

/* Decode the FRE at *pos (advanced past it). */
static int fre_get(const struct uw_sframe *sf, unsigned type, size_t *pos, struct fre *r, const char **why)
{
	static const unsigned asize[3] = { 1, 2, 4 };
	const uint8_t *p = sf->p;
	size_t at = *pos, osz;
	unsigned noff;

	if (type > 2 || sf->fres_end - at < asize[type] + 1) {
		*why = type > 2 ? "SFrame FRE type unknown" : "SFrame FRE past the section";
		return -EINVAL;
	}
	r->start = type == 0 ? p[at] : type == 1 ? get16(p + at) : get32(p + at);
	at += asize[type];
	r->info = p[at++];
	noff = (r->info >> 1) & 0xf;
	osz = (r->info >> 5) & 3;
	if (osz > 2 || noff > 3) {
		*why = osz > 2 ? "SFrame FRE offset size unknown" : "SFrame FRE has more than 3 offsets";
		return -EINVAL;
	}
	osz = asize[osz];
	if ((sf->fres_end - at) / osz < noff) {
		*why = "SFrame FRE offsets past the section";
		return -EINVAL;
	}
	for (unsigned i = 0; i < noff; i++, at += osz)
		r->off[i] = osz == 1 ? (int8_t)p[at] : osz == 2 ? (int16_t)get16(p + at) : (int32_t)get32(p + at);
	r->noff = noff;
	*pos = at;
	return 0;
}

int dsi_uw_sframe__find(const struct uw_sframe *sf, uint64_t pc, struct uw_sframe_row *row, const char **why)
{
	struct fde f;
	struct fre r, best = { 0 };
	size_t pos;
	uint64_t base, key, next = 0;
	bool mask, found = false;
	int rc = fde_find(sf, pc, &f, why);

	if (rc <= 0)
		return rc;
	if (sf->version == 3 && (f.info2 & 0x1f) != 0)
		return 0;   /* a "flexible" FDE (DRAP, odd registers): left to the frame pointer */
	mask = (f.info >> 4) & 1;
	if (mask && !f.rep) {
		*why = "SFrame repeating FDE with block size 0";
		return -EINVAL;
	}
	base = mask ? f.start + (pc - f.start) / f.rep * f.rep : f.start;
	key = pc - base;
	pos = f.fres;
	for (uint32_t i = 0; i < f.nfres; i++) {
		if (fre_get(sf, f.info & 0xf, &pos, &r, why))
			return -EINVAL;
		if (r.start <= key) {
			best = r;
			found = true;
		} else {
			next = r.start;
			break;
		}
	}
	if (!found)
		return 0;
	row->start = base + best.start;
	row->end = next ? base + next : mask ? base + f.rep : f.start + f.size;
	row->sp_based = best.info & 1;
	row->outermost = best.noff == 0;
	row->cfa_off = best.noff ? best.off[0] : 0;
	row->has_fp = best.noff >= 2;
	row->fp_off = best.noff >= 2 ? best.off[1] : 0;
	row->ra_off = sf->fixed_ra;
	row->signal = sf->version == 3 && (f.info & 0x80);
	return 1;
}
