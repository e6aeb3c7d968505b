// SPDX-License-Identifier: MIT
/*
 * The vDSO's image, kept where perf keeps it: the vDSO lies in no file, so
 * a recording that will be unwound needs a copy of it (its .eh_frame) at
 * $PERF_BUILDID_DIR (else $HOME/.debug)/[vdso]/BUILD-ID/vdso, named by
 * build-id in the file's header.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>
#include "dstack/unwind.h"

int ds_vdso__cache_path(const char *buildid_dir, const uint8_t *bid, size_t bid_len, char *buf, size_t size)
{
	char hex[41];
	int n;

	if (!bid_len || bid_len > 20)
		return -EINVAL;
	if (!buildid_dir || !*buildid_dir)
		return -ENOENT;
	for (size_t i = 0; i < bid_len; i++)
		snprintf(hex + 2 * i, 3, "%02x", bid[i]);
	n = snprintf(buf, size, "%s/[vdso]/%s/vdso", buildid_dir, hex);
	return n > 0 && (size_t)n < size ? 0 : -ENAMETOOLONG;
}

/* The build-id note of an ELF64 image of @size bytes in memory. */
static int image_build_id(const uint8_t *img, size_t size, uint8_t *bid, size_t *bid_len)
{
	Elf64_Ehdr eh;

	if (size < sizeof(eh))
		return -EINVAL;
	memcpy(&eh, img, sizeof(eh));
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phoff > size ||
	    (size - eh.e_phoff) / sizeof(Elf64_Phdr) < eh.e_phnum)
		return -EINVAL;
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;
		size_t at;

		memcpy(&ph, img + eh.e_phoff + i * sizeof(ph), sizeof(ph));
		if (ph.p_type != PT_NOTE || ph.p_offset > size || ph.p_filesz > size - ph.p_offset)
			continue;
		for (at = ph.p_offset; at + 12 <= ph.p_offset + ph.p_filesz;) {
			Elf64_Nhdr nh;
			size_t name = (sizeof(nh) + 3) & ~3u, desc;

			memcpy(&nh, img + at, sizeof(nh));
			desc = name + ((nh.n_namesz + 3) & ~3u);
			if (at + desc + nh.n_descsz > ph.p_offset + ph.p_filesz)
				break;
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && !memcmp(img + at + name, "GNU", 4) &&
			    nh.n_descsz && nh.n_descsz <= 20) {
				memcpy(bid, img + at + desc, nh.n_descsz);
				*bid_len = nh.n_descsz;
				return 0;
			}
			at += desc + ((nh.n_descsz + 3) & ~3u);
		}
	}
	return -ENOENT;
}

static int mkdirs(char *path)
{
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(path, 0755) && errno != EEXIST) {
			*p = '/';
			return -errno;
		}
		*p = '/';
	}
	return 0;
}

int ds_vdso__keep(const char *buildid_dir, uint8_t *bid, size_t *bid_len)
{
	const uint8_t *img = (const uint8_t *)(uintptr_t)getauxval(AT_SYSINFO_EHDR);
	char line[512], path[4096], tmp[4200];
	unsigned long long start = 0, end = 0;
	FILE *maps;
	int fd, err;
	ssize_t n;

	if (!img)
		return -ENOENT;
	if (!(maps = fopen("/proc/self/maps", "r")))
		return -errno;
	while (fgets(line, sizeof(line), maps))
		if (strstr(line, "[vdso]") && sscanf(line, "%llx-%llx", &start, &end) == 2)
			break;
	fclose(maps);
	if ((uintptr_t)img != start || end <= start || end - start > (64u << 20))
		return -ENOENT;
	if ((err = image_build_id(img, end - start, bid, bid_len)))
		return err;
	if ((err = ds_vdso__cache_path(buildid_dir, bid, *bid_len, path, sizeof(path))))
		return err;
	if (!access(path, R_OK))
		return 0;   /* kept already (by perf, or an earlier run) */
	if ((err = mkdirs(path)))
		return err;
	snprintf(tmp, sizeof(tmp), "%s.%d", path, (int)getpid());
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0)
		return -errno;
	n = write(fd, img, end - start);
	err = n == (ssize_t)(end - start) ? 0 : n < 0 ? -errno : -EIO;
	if (close(fd) && !err)
		err = -errno;
	if (!err && rename(tmp, path))
		err = -errno;
	if (err)
		unlink(tmp);
	return err;
}
