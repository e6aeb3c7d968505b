/* SPDX-License-Identifier: MIT */
/*
 * Numbers as text, the way printf writes them but without its cost: the
 * digits written right to left, ending just before @end, and their count
 * returned (the caller copies end - n .. end).  The CLI's output buffer
 * (util/outbuf.c) and the library's export stream (lib/analysis/wbuf.c)
 * both print through these, so that report and script print numbers alike.
 *
 * Who may use it: the library, the CLI and the tests.
 */
#ifndef DSTACK_NUMTEXT_H
#define DSTACK_NUMTEXT_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

/* The room the functions below may write: dsi_numtext_dec's, dsi_numtext_fixed2's. */
#define DSI_NUMTEXT_DEC_MAX 32
#define DSI_NUMTEXT_MAX 40

/* "00".."99": two digits per division */
static const char dsi_digit_pairs[201] =
	"00010203040506070809101112131415161718192021222324252627282930313233343536373839"
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879"
	"8081828384858687888990919293949596979899";

/* printf's "%*llu" (@pad ' ') or "%0*llu" (@pad '0'), padded to at most DSI_NUMTEXT_DEC_MAX. */
static inline size_t dsi_numtext_dec(char *end, uint64_t v, int width, char pad)
{
	size_t n = 0;

	while (v >= 100) {
		unsigned d = (unsigned)(v % 100) * 2;

		v /= 100;
		end[-1 - (ptrdiff_t)n++] = dsi_digit_pairs[d + 1];
		end[-1 - (ptrdiff_t)n++] = dsi_digit_pairs[d];
	}
	if (v >= 10) {
		end[-1 - (ptrdiff_t)n++] = dsi_digit_pairs[v * 2 + 1];
		end[-1 - (ptrdiff_t)n++] = dsi_digit_pairs[v * 2];
	} else {
		end[-1 - (ptrdiff_t)n++] = (char)('0' + v);
	}
	while ((int)n < width && n < DSI_NUMTEXT_DEC_MAX)
		end[-1 - (ptrdiff_t)n++] = pad;
	return n;
}

/*
 * printf's "%*.2f", or 0 where the caller must call printf itself.
 * printf rounds the exact binary value of @v to two decimals, ties to
 * even.  A double times 100 needs at most 60 significant bits, so it is
 * exact in long double where that has a 64-bit mantissa (x86's), and
 * nearbyintl() in the default rounding mode rounds it as printf does.
 * Elsewhere, and for what a percentage never is (negative, huge, NaN): 0.
 */
static inline size_t dsi_numtext_fixed2(char *end, double v, int width)
{
	size_t n = 0;

	if (__LDBL_MANT_DIG__ < 64 || !(v >= 0 && v < 1e15))
		return 0;
	uint64_t k = (uint64_t)nearbyintl((long double)v * 100), ip = k / 100;
	unsigned frac = (unsigned)(k % 100) * 2;

	end[-1 - (ptrdiff_t)n++] = dsi_digit_pairs[frac + 1];
	end[-1 - (ptrdiff_t)n++] = dsi_digit_pairs[frac];
	end[-1 - (ptrdiff_t)n++] = '.';
	do {
		end[-1 - (ptrdiff_t)n++] = (char)('0' + ip % 10);
		ip /= 10;
	} while (ip);
	while ((int)n < width && n < DSI_NUMTEXT_MAX)
		end[-1 - (ptrdiff_t)n++] = ' ';
	return n;
}

#endif
