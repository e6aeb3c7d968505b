// SPDX-License-Identifier: MIT
/*
 * Fuzz target: symbol names, as a binary's symbol table or DWARF gives
 * them, through the demangler (Rust v0 and legacy, then C++).  The input
 * is one name; it is also tried behind "_R" and "_ZN", so that mutations
 * reach the Rust parsers' back references, nesting and lengths.  A result
 * must be a terminated string.
 */
#include "fuzz_common.h"
#include "symbols/symbols_int.h"

static void one(const char *prefix, const uint8_t *data, size_t size)
{
	size_t n = strlen(prefix);
	char *s = malloc(n + size + 1), *dm;

	if (!s)
		return;
	memcpy(s, prefix, n);
	memcpy(s + n, data, size);
	s[n + size] = 0;
	dm = dsi_demangle(s);
	if (dm && strlen(dm) > 65536)
		abort();   /* bounded by the demangler's own limit */
	free(dm);
	free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fz_init();
	if (size > 8192)
		return 0;
	one("", data, size);
	one("_R", data, size);
	one("_ZN", data, size);
	return 0;
}
