/* SPDX-License-Identifier: MIT */
/*
 * The kallsyms scanner: a text's lines found 64 bytes at a time, and the
 * 16-digit addresses of the usual line ("%016lx T name") read and checked
 * with SSE2 (plain C elsewhere).  An 8.5 MB kallsyms is read once per run
 * and is most of a short run's time: docs/performance.md has what the
 * vector code saves.
 *
 * Who may use it: lib/symbols/kallsyms.c (the scanner), perfmap.c (ds_hexval).
 */
#ifndef DSTACK_KALLSYMS_SCAN_H
#define DSTACK_KALLSYMS_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "util/io.h"
#include "util/prefault.h"

#define DS_ALWAYS_INLINE inline __attribute__((always_inline))

/* Each hex digit's value + 1, 0 for any other byte: a constant table, built by no one. */
static const unsigned char ds_hex_plus1[256] = {
	['0'] = 1, ['1'] = 2, ['2'] = 3, ['3'] = 4, ['4'] = 5,
	['5'] = 6, ['6'] = 7, ['7'] = 8, ['8'] = 9, ['9'] = 10,
	['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14, ['e'] = 15, ['f'] = 16,
	['A'] = 11, ['B'] = 12, ['C'] = 13, ['D'] = 14, ['E'] = 15, ['F'] = 16,
};

/* The value of the hex digit @c, or -1 if it is not one. */
static inline int ds_hexval(char c)
{
	return ds_hex_plus1[(unsigned char)c] - 1;
}

#ifndef __SSE2__
/* Eight validated hex digits (ASCII, most significant first) in @x to their value. */
static inline uint32_t ds_swar_hex8(uint64_t x)
{
	uint64_t d = (x & 0x0f0f0f0f0f0f0f0fULL) + ((x >> 6) & 0x0101010101010101ULL) * 9;

	d = ((d & 0x0f000f000f000f00ULL) >> 8) | ((d & 0x000f000f000f000fULL) << 4);
	d = ((d & 0x00ff000000ff0000ULL) >> 16) | ((d & 0x000000ff000000ffULL) << 8);
	d = ((d & 0x0000ffff00000000ULL) >> 32) | ((d & 0x000000000000ffffULL) << 16);
	return (uint32_t)d;
}
#endif

/* The 16 hex digits at @s (16 readable bytes); false if one is not a digit. */
static inline bool ds_hex16(const char *s, uint64_t *v)
{
#ifdef __SSE2__
	const __m128i flip = _mm_set1_epi8((char)0x80);
	__m128i c = _mm_loadu_si128((const __m128i *)(const void *)s);
	__m128i dig = _mm_xor_si128(_mm_sub_epi8(c, _mm_set1_epi8('0')), flip);
	__m128i let = _mm_xor_si128(_mm_sub_epi8(_mm_or_si128(c, _mm_set1_epi8(0x20)), _mm_set1_epi8('a')), flip);
	/* unsigned "< 10" and "< 6" as signed compares of the values flipped by 0x80 */
	__m128i ok = _mm_or_si128(_mm_cmplt_epi8(dig, _mm_set1_epi8((char)(0x80 + 10))),
				  _mm_cmplt_epi8(let, _mm_set1_epi8((char)(0x80 + 6))));
	/* digit values: low nibble, +9 for letters (bit 6 set) */
	__m128i letter = _mm_and_si128(_mm_srli_epi16(c, 6), _mm_set1_epi8(1));
	__m128i val = _mm_add_epi8(_mm_and_si128(c, _mm_set1_epi8(0x0f)),
				   _mm_add_epi8(_mm_slli_epi16(letter, 3), letter));
	/* each 16-bit lane holds two digits, first in the low byte: one byte value */
	__m128i pair = _mm_or_si128(_mm_and_si128(_mm_slli_epi16(val, 4), _mm_set1_epi16(0xf0)),
				    _mm_srli_epi16(val, 8));
	uint64_t be;

	if (_mm_movemask_epi8(ok) != 0xffff)
		return false;
	be = (uint64_t)_mm_cvtsi128_si64(_mm_packus_epi16(pair, pair));
	*v = __builtin_bswap64(be);   /* the first pair is the most significant byte */
	return true;
#else
	uint64_t a, b;

	for (int i = 0; i < 16; i++)
		if (ds_hexval(s[i]) < 0)
			return false;
	memcpy(&a, s, 8);
	memcpy(&b, s + 8, 8);
	*v = (uint64_t)ds_swar_hex8(a) << 32 | ds_swar_hex8(b);
	return true;
#endif
}

/* The 16 characters at @s are lower-case hex digits (16 readable bytes). */
static inline bool ds_hex16_lower(const char *s)
{
#ifdef __SSE2__
	const __m128i flip = _mm_set1_epi8((char)0x80);
	__m128i c = _mm_loadu_si128((const __m128i *)(const void *)s);
	__m128i dig = _mm_xor_si128(_mm_sub_epi8(c, _mm_set1_epi8('0')), flip);
	__m128i let = _mm_xor_si128(_mm_sub_epi8(c, _mm_set1_epi8('a')), flip);
	__m128i ok = _mm_or_si128(_mm_cmplt_epi8(dig, _mm_set1_epi8((char)(0x80 + 10))),
				  _mm_cmplt_epi8(let, _mm_set1_epi8((char)(0x80 + 6))));

	return _mm_movemask_epi8(ok) == 0xffff;
#else
	for (int i = 0; i < 16; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
#endif
}

/* Bit i set when @p[i] is a newline or a tab (64 readable bytes). */
static inline uint64_t ds_line_marks(const char *p)
{
#ifdef __SSE2__
	uint64_t m = 0;

#pragma GCC unroll 4   /* -O2 kept the loop (docs/performance.md) */
	for (int i = 0; i < 4; i++) {
		__m128i c = _mm_loadu_si128((const __m128i *)(const void *)(p + 16 * i));
		unsigned x = (unsigned)_mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(c, _mm_set1_epi8('\n')),
								     _mm_cmpeq_epi8(c, _mm_set1_epi8('\t'))));

		m |= (uint64_t)x << (16 * i);
	}
	return m;
#else
	uint64_t m = 0;

	for (int i = 0; i < 64; i++)
		if (p[i] == '\n' || p[i] == '\t')
			m |= 1ULL << i;
	return m;
#endif
}

/*
 * What a scan does with each line: @l (@n bytes, no newline) at file
 * offset @off; @has_tab: a tab in it.  False stops the scan.  The scans
 * below are inlined into each caller with its own constant @on_line, so
 * the per-line work is inline too.
 */
typedef bool ds_kline_fn(void *ctx, const char *l, size_t off, size_t n, bool has_tab);

/*
 * The whole lines in @buf (@len bytes, at file offset @base): newlines end
 * lines, tabs are noted (module lines only, in a real file); at @eof the
 * last line needs no newline.  *@used: the bytes taken (a partial line
 * stays).  False when @on_line stopped it.
 */
static DS_ALWAYS_INLINE bool ds_kscan_buf(const char *buf, size_t len, size_t base, bool eof, size_t *used,
					  ds_kline_fn *on_line, void *ctx)
{
	size_t start = 0, tab = SIZE_MAX;

	for (size_t b = 0; b < len; b += 64) {
		uint64_t m = 0;

		if (b + 64 <= len)
			m = ds_line_marks(buf + b);
		else   /* the last bytes, one at a time */
			for (size_t i = b; i < len; i++)
				if (buf[i] == '\n' || buf[i] == '\t')
					m |= 1ULL << (i - b);
		for (; m; m &= m - 1) {
			size_t pos = b + (size_t)__builtin_ctzll(m);

			if (buf[pos] == '\t') {
				tab = pos;
				continue;
			}
			if (!on_line(ctx, buf + start, base + start, pos - start, tab != SIZE_MAX && tab >= start))
				return false;
			start = pos + 1;
		}
	}
	if (eof && start < len) {
		if (!on_line(ctx, buf + start, base + start, len - start, tab != SIZE_MAX && tab >= start))
			return false;
		start = len;
	}
	*used = start;
	return true;
}

/*
 * A file is scanned through a buffer this big: small enough to stay in L2
 * and to be little fresh memory in a fresh process (a command loads the
 * file once); docs/performance.md has the measurements.
 */
#define DS_KSCAN_CHUNK (64u << 10)

/*
 * Every line of the regular file @fd, read through a DS_KSCAN_CHUNK buffer
 * (copying it is cheaper than mapping 8 MB page by page).  A line longer
 * than the buffer (no real one is) is passed cut, marked as having a tab,
 * and the rest of it skipped.  False when @on_line stopped it, or on a
 * read error or ENOMEM.
 */
static DS_ALWAYS_INLINE bool ds_kscan_file(int fd, ds_kline_fn *on_line, void *ctx)
{
	size_t have = 0, base = 0, used;
	bool ok = true, skipping = false;
	char *buf = dsi_malloc_populated(DS_KSCAN_CHUNK);

	if (!buf)
		return false;
	for (;;) {
		ssize_t got = dsi_pread_full(fd, buf + have, DS_KSCAN_CHUNK - have, base + have);
		size_t len = have + (got > 0 ? (size_t)got : 0);
		bool eof = got <= 0;

		if (got < 0 && !(ok = false))
			break;
		if (skipping) {   /* the rest of an over-long line */
			const char *nl = memchr(buf, '\n', len);

			used = nl ? (size_t)(nl - buf) + 1 : len;
			skipping = !nl;
		} else if (!(ok = ds_kscan_buf(buf, len, base, eof, &used, on_line, ctx))) {
			break;
		} else if (!used && len == DS_KSCAN_CHUNK) {
			if (!(ok = on_line(ctx, buf, base, len, true)))
				break;
			used = len;
			skipping = true;
		}
		if (eof)
			break;
		memmove(buf, buf + used, len - used);
		have = len - used;
		base += used;
	}
	free(buf);
	return ok;
}

#endif
