// SPDX-License-Identifier: MIT
/*
 * Fuzz target: jitdump files (jit-PID.dump).  The input is written as
 * SYMFS/tmp/jit-4242.dump and read as a recording's mmap of it would read
 * it (dsi_symbols__jitdump); each of its first code records becomes its
 * DSO, whose ELF image is built from the dump in memory and loaded
 * (symbols, program headers), resolved at its start, middle and end, and
 * its .eh_frame searched by libdw and converted by the unwinder's CFI
 * reader at the same addresses.  The API's reader and ELF writer
 * (ds_jitdump__open, ds_jitdump__write_elf) run on the same file, and
 * its codes' times go through a TSC conversion made of the input's bytes.
 */
#include <fcntl.h>
#include "fuzz_common.h"
#include "dstack/jitdump.h"
#include "dstack/log.h"
#include "dstack/reader.h"
#include "symbols/jitdump.h"
#include "symbols/symbols_int.h"
#include "unwind/unwind_int.h"

#define MAX_IMAGES 8

static bool write_file(const char *path, const uint8_t *data, size_t size)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	bool ok = fd >= 0 && (!size || write(fd, data, size) == (ssize_t)size);

	if (fd >= 0)
		close(fd);
	return ok;
}

static void probe_image(struct ds_dso *d, const struct ds_jit_code *c)
{
	uint64_t offs[] = { DS_JIT_TEXT_OFFSET, DS_JIT_TEXT_OFFSET + c->size / 2,
			    DS_JIT_TEXT_OFFSET + (c->size ? c->size - 1 : 0), DS_JIT_TEXT_OFFSET + c->map_len };
	struct ds_frame fr[8];
	const struct ds_elf_image *img = dsi_dso__image(d);
	Dwarf_CFI *cfi = img && img->elf ? dwarf_getcfi_elf(img->elf) : NULL;

	for (size_t i = 0; i < sizeof(offs) / sizeof(*offs); i++) {
		struct ds_srcline sl;

		(void)ds_dso__resolve(d, offs[i], fr, 8);
		(void)ds_dso__srcline(d, offs[i], 0, &sl);   /* the debug-info record's lines */
		if (cfi) {
			struct uw_row row;
			struct uw_opstore ops = { 0 };

			(void)dsi_uw_cfi__row(cfi, offs[i], 17, 16, &row, &ops);
			free(ops.v);
		}
	}
	if (cfi)
		dwarf_cfi_end(cfi);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char tmp[128], dump[160], elf[160];

	fz_init();
	snprintf(tmp, sizeof(tmp), "%s/tmp", fz_dir);
	snprintf(dump, sizeof(dump), "%s/tmp/jit-4242.dump", fz_dir);
	snprintf(elf, sizeof(elf), "%s/tmp/jitted.so", fz_dir);
	mkdir(tmp, 0700);
	if (!write_file(dump, data, size))
		return 0;

	struct ds_symbols_opts so = { .symfs = fz_dir, .kallsyms = fz_kallsyms };
	struct ds_symbols *syms = ds_symbols__new(&so);

	if (!syms)
		return 0;
	const struct dsi_jitdump *jd = dsi_symbols__jitdump(syms, "/tmp/jit-4242.dump");

	for (size_t i = 0; jd && i < jd->nr && i < MAX_IMAGES; i++) {
		char name[64];

		snprintf(name, sizeof(name), "/tmp/jitted-4242-%zu.so", i);
		struct ds_dso *d = dsi_symbols__jit_dso(syms, name, jd, &jd->codes[i]);

		if (d)
			probe_image(d, &jd->codes[i]);
	}
	ds_symbols__delete(syms);

	struct ds_jitdump *pub = ds_jitdump__open(dump);
	/* a TSC conversion as hostile as the dump: its fields from the input's first bytes */
	struct ds_time_conv tc = { 0 };

	memcpy(&tc, data, size < sizeof(tc) ? size : sizeof(tc));
	tc.cap_user_time_zero = false;   /* (bools from raw bytes would not be bools) */
	tc.cap_user_time_short = size > 48 && (data[48] & 1);
	if (pub) {
		if (ds_jitdump__status(pub))
			(void)ds_errmsg();
		for (size_t i = 0; i < ds_jitdump__nr_codes(pub) && i < 64; i++)
			(void)ds_jitdump__code_time(pub, i, &tc);
		for (size_t i = 0; i < ds_jitdump__nr_codes(pub) && i < 2; i++)
			(void)ds_jitdump__write_elf(pub, i, elf, NULL);
		ds_jitdump__close(pub);
	}
	return 0;
}
