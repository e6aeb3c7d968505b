// SPDX-License-Identifier: MIT
/*
 * Fuzz target 4: the ELF symbol loader.  The input is written to a file
 * in an otherwise empty symfs, loaded with ds_symbols__dso (ELF symtab,
 * dynsym, DWARF inline info, demangling) and resolved at several file
 * offsets: the first 8 input bytes seed them, plus fixed probes.
 */
#include <fcntl.h>
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[128];
	struct ds_frame frames[64];

	fz_init();
	snprintf(path, sizeof(path), "%s/lib.so", fz_dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	if (fd < 0)
		return 0;
	if (size && write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	close(fd);

	struct ds_symbols_opts so = { .symfs = fz_dir, .kallsyms = fz_kallsyms };
	struct ds_symbols *syms = ds_symbols__new(&so);

	if (!syms)
		return 0;
	struct ds_dso *dso = ds_symbols__dso(syms, "/lib.so", NULL, 0);

	if (dso) {
		uint64_t seed = 0;

		memcpy(&seed, data, size < 8 ? size : 8);
		uint64_t probes[] = { 0, 0x40, 0x1000, 0x1139, size / 2, size, seed, seed >> 32, seed & 0xffff,
				      UINT64_MAX, UINT64_MAX - 1 };

		for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++)
			(void)ds_dso__resolve(dso, probes[i], frames, 64);
		/* every symbol-ish offset the fuzzer can point at */
		for (size_t o = 8; o + 8 <= size && o < 8 + 16 * 8; o += 8) {
			uint64_t v;

			memcpy(&v, data + o, 8);
			(void)ds_dso__resolve(dso, v & 0xffffff, frames, 64);
		}
	}
	ds_symbols__delete(syms);
	return 0;
}
