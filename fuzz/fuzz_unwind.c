// SPDX-License-Identifier: MIT
/*
 * Fuzz target: the stack walker with its rule readers (libdw's CFI
 * parser, the SFrame decoder, the expression evaluator).  Input:
 *
 *   u32 elf_size, ELF bytes, u8 abi (bit 0: 32-bit), u64 ip, sp, bp, bx,
 *   then the stack copy
 *
 * The ELF file is written to an empty symfs and mapped at 0x400000 (file
 * offset 0, its size rounded up to pages); the walk must end with a reason
 * whatever the tables and the stack hold.
 */
#include <fcntl.h>
#include "fuzz_common.h"
#include "dstack/unwind.h"

static struct ds_map fz_map;

static const struct ds_map *find(void *ctx, uint64_t addr)
{
	(void)ctx;
	return addr >= fz_map.start && addr < fz_map.end ? &fz_map : NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[128];
	uint32_t elf_size;
	uint64_t regs[4], ips[256];
	struct ds_unwind_result res;
	int fd;

	fz_init();
	if (size < 4)
		return 0;
	memcpy(&elf_size, data, 4);
	if (elf_size > size - 4 || size - 4 - elf_size < 33)
		return 0;
	snprintf(path, sizeof(path), "%s/bin", fz_dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return 0;
	if (elf_size && write(fd, data + 4, elf_size) != (ssize_t)elf_size) {
		close(fd);
		return 0;
	}
	close(fd);

	struct ds_symbols_opts so = { .symfs = fz_dir, .kallsyms = fz_kallsyms, .no_inline = true };
	struct ds_symbols *syms = ds_symbols__new(&so);
	struct ds_unwinder *u = ds_unwinder__new(NULL);
	const uint8_t *p = data + 4 + elf_size;

	if (!syms || !u)
		goto out;
	fz_map = (struct ds_map){ .start = 0x400000, .end = 0x400000 + ((elf_size + 4095) & ~4095u) + 4096,
				  .name = "/bin", .dso = ds_symbols__dso(syms, "/bin", NULL, 0) };
	memcpy(regs, p + 1, sizeof(regs));
	/* the perf registers BX, BP, SP, IP (bits 1, 6, 7, 8), lowest first */
	uint64_t vals[4] = { regs[3], regs[2], regs[1], regs[0] };
	struct ds_unwind_regs in = {
		.abi = (p[0] & 1) ? DS_REGS_ABI_32 : DS_REGS_ABI_64,
		.mask = (1u << DS_X86_BX) | (1u << DS_X86_BP) | (1u << DS_X86_SP) | (1u << DS_X86_IP),
		.regs = vals, .nr_regs = 4, .stack = p + 33, .stack_size = size - 4 - elf_size - 33,
	};

	ds_unwinder__unwind_regs(u, find, NULL, &in, ips, 256, &res);
	if (res.nr > 256 || res.end >= DS_UNWIND_END__NR)
		abort();
	/* and again: the rows are cached now */
	ds_unwinder__unwind_regs(u, find, NULL, &in, ips, 256, &res);
out:
	ds_unwinder__delete(u);
	ds_symbols__delete(syms);
	return 0;
}
