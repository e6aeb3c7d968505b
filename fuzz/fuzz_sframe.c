// SPDX-License-Identifier: MIT
/*
 * Fuzz target: the SFrame decoder.  The input is a .sframe section at
 * address 0x2000; its rows are looked up at addresses the input names
 * (bytes 8..136 read as words) and over a sweep below the section, where
 * the functions it describes lie.
 */
#include "fuzz_common.h"
#include "unwind/unwind_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct uw_sframe sf;
	struct uw_sframe_row r;
	const char *why = NULL;

	fz_init();
	if (dsi_uw_sframe__init(&sf, data, size, 0x2000, &why))
		return 0;
	for (uint64_t pc = 0; pc < 0x3000; pc += 5)
		(void)dsi_uw_sframe__find(&sf, pc, &r, &why);
	for (size_t o = 8; o + 8 <= size && o < 136; o += 8) {
		uint64_t v;

		memcpy(&v, data + o, 8);
		(void)dsi_uw_sframe__find(&sf, v, &r, &why);
		(void)dsi_uw_sframe__find(&sf, v & 0xffff, &r, &why);
	}
	return 0;
}
