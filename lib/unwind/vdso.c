// SPDX-License-Identifier: MIT
/*
 * The vDSO's images, kept where perf keeps them: the vDSO lies in no file,
 * so a recording that will be symbolized and unwound needs a copy of it
 * (its symbols and .eh_frame) at $PERF_BUILDID_DIR (else $HOME/.debug)/
 * [vdso]/BUILD-ID/vdso, or [vdso32]/... for the image i386 tasks map,
 * named by build-id in the file's header.
 *
 * The 64-bit image is this process's own.  The i386 one only an i386
 * process maps: perf runs its helper perf-read-vdso32 for it, a program
 * that needs an i386 C library most 64-bit systems lack (Debian's perf in
 * the kernel-vm guest fails there: "perf-read-vdso32: not found").  dstack
 * carries the smallest such program instead, built here as bytes (no
 * i386 toolchain or library is needed to run it), and runs it from a
 * memory file.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "dstack/unwind.h"
#include "symbols/symbols_int.h"

#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U   /* Linux 6.3's executable memory file (older C libraries lack the name) */
#endif

/* No vDSO image is larger (the kernel's are a few pages); a bound for hostile helpers' output. */
#define VDSO_MAX_SIZE (1u << 20)

const char *ds_vdso__name(enum ds_vdso_kind kind)
{
	return kind == DS_VDSO_32 ? "[vdso32]" : "[vdso]";
}

static void hex_of(const uint8_t *bid, size_t len, char *hex)
{
	for (size_t i = 0; i < len; i++)
		snprintf(hex + 2 * i, 3, "%02x", bid[i]);
}

int ds_vdso__cache_path(const char *buildid_dir, enum ds_vdso_kind kind, const uint8_t *bid, size_t bid_len,
			char *buf, size_t size)
{
	char hex[41];
	int n;

	if (!bid_len || bid_len > 20)
		return -EINVAL;
	if (!buildid_dir || !*buildid_dir)
		return -ENOENT;
	hex_of(bid, bid_len, hex);
	n = snprintf(buf, size, "%s/%s/%s/vdso", buildid_dir, ds_vdso__name(kind), hex);
	return n > 0 && (size_t)n < size ? 0 : -ENAMETOOLONG;
}

/* Field @f of ELF header or segment @p, of an image of class @c (ELFCLASS32 or 64). */
#define ELF_FIELD(c, type, p, f) ((c) == ELFCLASS64 ? ((const Elf64_##type *)(p))->f : ((const Elf32_##type *)(p))->f)

/* The build-id of the ELF image (32- or 64-bit, this host's byte order) of @size bytes at @img. */
static int image_build_id(const uint8_t *img, size_t size, uint8_t *bid, size_t *bid_len)
{
	unsigned char c;
	size_t phoff, phent, phnum;
	union { Elf64_Ehdr e64; Elf32_Ehdr e32; Elf64_Phdr p64; Elf32_Phdr p32; } u;

	if (size < sizeof(Elf64_Ehdr) || memcmp(img, ELFMAG, SELFMAG))
		return -EINVAL;
	c = img[EI_CLASS];
	if (c != ELFCLASS32 && c != ELFCLASS64)
		return -EINVAL;
	memcpy(&u, img, sizeof(u.e64));
	phoff = ELF_FIELD(c, Ehdr, &u, e_phoff);
	phent = ELF_FIELD(c, Ehdr, &u, e_phentsize);
	phnum = ELF_FIELD(c, Ehdr, &u, e_phnum);
	if (phent != (c == ELFCLASS64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr)) || phoff > size ||
	    (size - phoff) / phent < phnum)
		return -EINVAL;
	for (size_t i = 0; i < phnum; i++) {
		uint64_t off, len;

		memcpy(&u, img + phoff + i * phent, phent);
		off = ELF_FIELD(c, Phdr, &u, p_offset);
		len = ELF_FIELD(c, Phdr, &u, p_filesz);
		if (ELF_FIELD(c, Phdr, &u, p_type) == PT_NOTE && off <= size && len <= size - off &&
		    !dsi_note_build_id(img + off, len, bid, bid_len))
			return 0;
	}
	return -ENOENT;
}

/* This process's vDSO: the 64-bit image, where the auxiliary vector and /proc/self/maps put it. */
static int own_image(const uint8_t **img, size_t *size)
{
	const uint8_t *at = (const uint8_t *)(uintptr_t)getauxval(AT_SYSINFO_EHDR);
	unsigned long long start = 0, end = 0;
	char line[512];
	FILE *maps;

	if (!at)
		return -ENOENT;
	if (!(maps = fopen("/proc/self/maps", "re")))
		return -errno;
	while (fgets(line, sizeof(line), maps))
		if (strstr(line, "[vdso]") && sscanf(line, "%llx-%llx", &start, &end) == 2)
			break;
	fclose(maps);
	if ((uintptr_t)at != start || end <= start || end - start > VDSO_MAX_SIZE)
		return -ENOENT;
	*img = at;
	*size = end - start;
	return 0;
}

/*
 * The i386 program that writes its own vDSO to stdout: it finds
 * AT_SYSINFO_EHDR past argv and envp on its initial stack, writes the
 * image's bytes up to the end of its section headers, and exits 0 (1 if
 * there is no vDSO or a write fails).  Assembled by binutils 2.47 (as --32):
 *
 *	mov (%esp),%ecx; lea 0x8(%esp,%ecx,4),%esi      argc; envp
 *   1: lods; test %eax,%eax; jne 1b                   skip envp
 *   2: lods; mov %eax,%edx; lods                      auxv type, value
 *	test %edx,%edx; je 5f; cmp $33,%edx; jne 2b     AT_NULL; AT_SYSINFO_EHDR
 *	mov %eax,%ecx                                   buf = the ELF header
 *	movzwl 0x30(%ecx),%eax; movzwl 0x2e(%ecx),%edx  e_shnum, e_shentsize
 *	imul %eax,%edx; add 0x20(%ecx),%edx; mov $1,%ebx   count = e_shoff + both; fd 1
 *   3: mov $4,%eax; int $0x80                         write
 *	test %eax,%eax; jle 5f; add %eax,%ecx; sub %eax,%edx; jne 3b
 *	xor %ebx,%ebx; jmp 6f
 *   5: mov $1,%ebx
 *   6: mov $1,%eax; int $0x80                         exit
 */
static const uint8_t vdso32_writer_code[] = {
	0x8b, 0x0c, 0x24, 0x8d, 0x74, 0x8c, 0x08, 0xad, 0x85, 0xc0, 0x75, 0xfb, 0xad, 0x89, 0xc2, 0xad,
	0x85, 0xd2, 0x74, 0x2f, 0x83, 0xfa, 0x21, 0x75, 0xf3, 0x89, 0xc1, 0x0f, 0xb7, 0x41, 0x30, 0x0f,
	0xb7, 0x51, 0x2e, 0x0f, 0xaf, 0xd0, 0x03, 0x51, 0x20, 0xbb, 0x01, 0x00, 0x00, 0x00, 0xb8, 0x04,
	0x00, 0x00, 0x00, 0xcd, 0x80, 0x85, 0xc0, 0x7e, 0x0a, 0x01, 0xc1, 0x29, 0xc2, 0x75, 0xef, 0x31,
	0xdb, 0xeb, 0x05, 0xbb, 0x01, 0x00, 0x00, 0x00, 0xb8, 0x01, 0x00, 0x00, 0x00, 0xcd, 0x80,
};

/* The writer as a static i386 executable: one read-only, executable segment holding it all. */
struct vdso32_writer {
	Elf32_Ehdr eh;
	Elf32_Phdr ph;
	uint8_t code[sizeof(vdso32_writer_code)];
};

static void build_writer(struct vdso32_writer *w)
{
	const uint32_t base = 0x08048000;

	memset(w, 0, sizeof(*w));
	memcpy(w->eh.e_ident, ELFMAG, SELFMAG);
	w->eh.e_ident[EI_CLASS] = ELFCLASS32;
	w->eh.e_ident[EI_DATA] = ELFDATA2LSB;
	w->eh.e_ident[EI_VERSION] = EV_CURRENT;
	w->eh.e_type = ET_EXEC;
	w->eh.e_machine = EM_386;
	w->eh.e_version = EV_CURRENT;
	w->eh.e_entry = base + offsetof(struct vdso32_writer, code);
	w->eh.e_phoff = offsetof(struct vdso32_writer, ph);
	w->eh.e_ehsize = sizeof(w->eh);
	w->eh.e_phentsize = sizeof(w->ph);
	w->eh.e_phnum = 1;
	w->ph.p_type = PT_LOAD;
	w->ph.p_vaddr = w->ph.p_paddr = base;
	w->ph.p_filesz = w->ph.p_memsz = sizeof(*w);
	w->ph.p_flags = PF_R | PF_X;
	w->ph.p_align = 0x1000;
	memcpy(w->code, vdso32_writer_code, sizeof(w->code));
}

/* A memory file holding @size bytes of @data, positioned at 0 (@flags: MFD_EXEC or 0); -errno. */
static int memory_file(const char *name, const void *data, size_t size, unsigned flags)
{
	int fd = memfd_create(name, MFD_CLOEXEC | flags);
	ssize_t n;

	if (fd < 0 && errno == EINVAL && flags)   /* a kernel before 6.3 knows no MFD_EXEC */
		fd = memfd_create(name, MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, data, size);
	if (n != (ssize_t)size) {
		int err = n < 0 ? -errno : -EIO;

		close(fd);
		return err;
	}
	lseek(fd, 0, SEEK_SET);
	return fd;
}

/* Everything the child @pid writes to @fd, at most VDSO_MAX_SIZE bytes, into *buf; its exit status checked. */
static int read_child(pid_t pid, int fd, uint8_t **buf, size_t *size)
{
	uint8_t *b = malloc(VDSO_MAX_SIZE);
	size_t got = 0;
	int st = 0, err = 0;
	ssize_t n;

	if (!b)
		err = -ENOMEM;
	while (!err && (n = read(fd, b + got, VDSO_MAX_SIZE - got)) != 0) {
		if (n < 0 && errno != EINTR)
			err = -errno;
		else if (n > 0 && (got += (size_t)n) == VDSO_MAX_SIZE)
			err = -EFBIG;
	}
	if (err)
		kill(pid, SIGKILL);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (!err && !(WIFEXITED(st) && WEXITSTATUS(st) == 0))
		err = WIFEXITED(st) && WEXITSTATUS(st) == 127 ? -ENOEXEC : -ENOENT;
	if (err || !got) {
		free(b);
		return err ? err : -ENOENT;
	}
	*buf = b;
	*size = got;
	return 0;
}

/* The i386 vDSO image, written by the built-in writer run as a child; -ENOEXEC where no i386 code runs. */
static int compat_image(uint8_t **buf, size_t *size)
{
	struct vdso32_writer w;
	char *argv[] = { "dstack-vdso32", NULL }, *envp[] = { NULL };
	int exe, pipefd[2], err;
	pid_t pid;

	build_writer(&w);
	exe = memory_file("dstack-vdso32", &w, sizeof(w), MFD_EXEC);
	if (exe < 0)
		return exe;
	if (pipe2(pipefd, O_CLOEXEC)) {
		err = -errno;
		close(exe);
		return err;
	}
	pid = fork();
	if (pid == 0) {
		/* the child: stdout to the pipe, then the writer (no allocation, no stdio here) */
		if (dup2(pipefd[1], STDOUT_FILENO) == STDOUT_FILENO)
			fexecve(exe, argv, envp);
		_exit(127);
	}
	err = pid < 0 ? -errno : 0;
	close(pipefd[1]);
	close(exe);
	if (!err)
		err = read_child(pid, pipefd[0], buf, size);
	close(pipefd[0]);
	return err;
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

/*
 * perf's index of its cache by build-id, .build-id/XX/REST -> the image's
 * directory, as perf record makes it.  Best effort: the image is found
 * through its own path too.
 */
static void link_build_id(const char *buildid_dir, enum ds_vdso_kind kind, const char *hex)
{
	char link[4200], target[128];

	if (snprintf(link, sizeof(link), "%s/.build-id/%.2s/%s", buildid_dir, hex, hex + 2) >= (int)sizeof(link) ||
	    mkdirs(link))
		return;
	snprintf(target, sizeof(target), "../../%s/%s", ds_vdso__name(kind), hex);
	(void)!symlink(target, link);
}

/* @size bytes of @img into the cache as @kind's image of build-id @bid, unless it is there. */
static int store(const char *buildid_dir, enum ds_vdso_kind kind, const uint8_t *img, size_t size,
		 const uint8_t *bid, size_t bid_len)
{
	char path[4096], tmp[4200], hex[41];
	int fd, err;
	ssize_t n;

	if ((err = ds_vdso__cache_path(buildid_dir, kind, bid, bid_len, path, sizeof(path))))
		return err;
	if (!access(path, R_OK))
		return 0;   /* kept already (by perf, or an earlier run) */
	if ((err = mkdirs(path)))
		return err;
	snprintf(tmp, sizeof(tmp), "%s.%d", path, (int)getpid());
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0)
		return -errno;
	n = write(fd, img, size);
	err = n == (ssize_t)size ? 0 : n < 0 ? -errno : -EIO;
	if (close(fd) && !err)
		err = -errno;
	if (!err && rename(tmp, path))
		err = -errno;
	if (err) {
		unlink(tmp);
		return err;
	}
	hex_of(bid, bid_len, hex);
	link_build_id(buildid_dir, kind, hex);
	return 0;
}

int ds_vdso__keep(const char *buildid_dir, enum ds_vdso_kind kind, uint8_t *bid, size_t *bid_len)
{
	const uint8_t *own = NULL;
	uint8_t *img = NULL;
	size_t size = 0;
	int err;

	err = kind == DS_VDSO_32 ? compat_image(&img, &size) : own_image(&own, &size);
	if (err)
		return err;
	if (!img)
		img = (uint8_t *)(uintptr_t)own;
	err = image_build_id(img, size, bid, bid_len);
	if (!err && kind == DS_VDSO_32 && img[EI_CLASS] != ELFCLASS32)
		err = -EINVAL;
	if (!err)
		err = store(buildid_dir, kind, img, size, bid, *bid_len);
	if (img != own)
		free(img);
	return err;
}

int ds_vdso__own_file(uint8_t *bid, size_t *bid_len)
{
	const uint8_t *img;
	size_t size;
	int err;

	if ((err = own_image(&img, &size)) || (err = image_build_id(img, size, bid, bid_len)))
		return err;
	return memory_file("dstack-vdso", img, size, 0);
}
