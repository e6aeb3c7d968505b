// SPDX-License-Identifier: MIT
/*
 * Unit test of lib/symbols/ against the corpus binaries.
 *
 *   test_symbols SYMFS KALLSYMS
 *
 * SYMFS is the corpus symfs directory and KALLSYMS its kallsyms file (the
 * boot of every recording but threads2).  Expected values are what perf
 * 7.2.13's `perf script` printed for the same addresses (see the oracles);
 * file offsets are ip - map start + pgoff from the recordings' MMAP2 events.
 * Also exercises the JIT map, a synthetic kallsyms, build-id checks and
 * corrupted ELF files (under a temporary directory).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dstack/debuginfod.h"
#include "dstack/log.h"
#include "dstack/symbols.h"
#include "symbols/symbols_int.h"   /* which kallsyms search a file gets */
#include "check.h"

static int warnings;
static char last_warning[512];

static void capture_log(enum ds_log_level level, const char *fmt, va_list ap)
{
	if (level != DS_WARN)
		return;
	warnings++;
	vsnprintf(last_warning, sizeof(last_warning), fmt, ap);
}

/* One frame as perf prints it: "name+0xoff", "[unknown]", " (inlined)". */
static void fmt_frame(const struct ds_frame *f, char *buf, size_t sz)
{
	if (!f->name)
		snprintf(buf, sz, "[unknown]");
	else
		snprintf(buf, sz, "%s+0x%" PRIx64 "%s", f->name, f->offset,
			 f->inlined ? " (inlined)" : "");
}

/* Resolve and compare with @nexp expected frames (innermost first). */
static void expect(struct ds_symbols *s, const char *path, uint64_t off, size_t nexp, ...)
{
	struct ds_frame fr[16];
	size_t n = ds_dso__resolve(ds_symbols__dso(s, path, NULL, 0), off, fr, 16);
	va_list ap;

	CHECK(n == nexp, "%s@%#" PRIx64 ": %zu frames, expected %zu", path, off, n, nexp);
	va_start(ap, nexp);
	for (size_t i = 0; i < nexp && i < n; i++) {
		const char *want = va_arg(ap, const char *);
		char got[2048];

		fmt_frame(&fr[i], got, sizeof(got));
		CHECK(!strcmp(got, want), "%s@%#" PRIx64 " frame %zu: got '%s', want '%s'",
		      path, off, i, got, want);
	}
	va_end(ap);
}

/* With @prefetch, every binary is first loaded ahead on the helper thread: the same frames. */
static void test_elf(const char *symfs, const char *kallsyms, bool prefetch)
{
	static const char *const files[] = {
		"/usr/local/bin/wl", "/job/wl", "/usr/local/bin/wlxx", "/usr/lib/x86_64-linux-gnu/libc.so.6",
		"/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2",
	};
	struct ds_symbols_opts o = { .symfs = symfs, .kallsyms = kallsyms };
	struct ds_symbols *s = ds_symbols__new(&o);

	CHECK(s != NULL, "ds_symbols__new");
	for (size_t i = 0; prefetch && i < sizeof(files) / sizeof(*files); i++)
		CHECK(ds_symbols__prefetch(s, files[i]) == 0 && ds_symbols__prefetch(s, files[i]) == 0,
		      "prefetch %s (twice)", files[i]);
	if (prefetch)   /* every lookup below takes a loaded image */
		ds_symbols__prefetch_wait(s);
	/* recurse_a and recurse_b share an address: perf keeps the first (index 14) */
	expect(s, "/usr/local/bin/wl", 0x17d2, 1, "recurse_b+0x12");
	/* fault_pages.constprop.0 in ELF, "fault_pages" in DWARF: one inlined frame */
	expect(s, "/usr/local/bin/wl", 0x16a0, 1, "fault_pages+0x30 (inlined)");
	expect(s, "/usr/local/bin/wl", 0x11b3, 1, "main+0x43");
	/* PLT: header and the first entry of a lazy .plt */
	expect(s, "/usr/local/bin/wl", 0x1020, 1, ".plt+0x0");
	expect(s, "/job/wl", 0x1030, 1, "free@plt+0x0");
	expect(s, "/usr/local/bin/wlxx", 0x1040, 1,
	       "std::_Rb_tree_insert_and_rebalance(bool, std::_Rb_tree_node_base*, "
	       "std::_Rb_tree_node_base*, std::_Rb_tree_node_base&)@plt+0x0");
	/* a C++ inline chain, innermost first; the outermost is the ELF symbol */
	expect(s, "/usr/local/bin/wlxx", 0x1645, 3,
	       "unsigned long const& std::max<unsigned long>(unsigned long const&, "
	       "unsigned long const&)+0x35 (inlined)",
	       "std::vector<double, std::allocator<double> >::_M_check_len(unsigned long, "
	       "char const*) const+0x35 (inlined)",
	       "void std::vector<double, std::allocator<double> >::_M_realloc_insert<double>"
	       "(__gnu_cxx::__normal_iterator<double*, std::vector<double, "
	       "std::allocator<double> > >, double&&)+0x35");
	/* libc: .dynsym only; aliases resolved as perf does */
	expect(s, "/usr/lib/x86_64-linux-gnu/libc.so.6", 0x2a060, 1, "__libc_start_main+0x10");
	expect(s, "/usr/lib/x86_64-linux-gnu/libc.so.6", 0xa5293, 1, "cfree+0xb3");
	expect(s, "/usr/lib/x86_64-linux-gnu/libc.so.6", 0x10fd77, 1, "__munmap+0x7");
	/* no symbol covers it: [unknown] */
	expect(s, "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", 0x1d00, 1, "[unknown]");
	ds_symbols__delete(s);
}

static void test_cache_and_options(const char *symfs)
{
	struct ds_symbols_opts o = { .symfs = symfs, .no_inline = true };
	struct ds_symbols *s = ds_symbols__new(&o);
	struct ds_dso *d = ds_symbols__dso(s, "/usr/local/bin/wlxx", NULL, 0);
	struct ds_frame a[8], b[8];
	size_t na, nb;

	CHECK(d == ds_symbols__dso(s, "/usr/local/bin/wlxx", NULL, 0), "same path, same dso");
	CHECK(!strcmp(ds_dso__path(d), "/usr/local/bin/wlxx"), "path");
	expect(s, "/usr/local/bin/wl", 0x16a0, 1, "fault_pages.constprop.0+0x30");
	na = ds_dso__resolve(d, 0x1645, a, 8);
	nb = ds_dso__resolve(d, 0x1645, b, 8);
	CHECK(na == 1 && nb == 1 && a[0].name == b[0].name, "cached result is the same interned name");
	CHECK(ds_dso__resolve(d, 0x1645, a, 0) == 0, "max 0");
	ds_symbols__delete(s);

	o.no_inline = false;
	o.no_demangle = true;
	s = ds_symbols__new(&o);
	d = ds_symbols__dso(s, "/usr/local/bin/wlxx", NULL, 0);
	na = ds_dso__resolve(d, 0x1645, a, 1);
	CHECK(na == 1 && a[0].inlined && !strcmp(a[0].name, "_ZSt3maxImERKT_S2_S2_"),
	      "max=1 keeps the innermost frame, mangled: %s", na ? a[0].name : "-");
	ds_symbols__delete(s);
}

static void test_build_id(const char *symfs)
{
	static const uint8_t good[20] = {
		0xe2, 0x76, 0xfd, 0x0a, 0x55, 0x2c, 0x2d, 0x41, 0xa3, 0xb4,
		0x72, 0x00, 0x32, 0xcd, 0x1f, 0xba, 0x5d, 0xf1, 0xef, 0x69,
	};
	uint8_t bad[20];
	struct ds_symbols_opts o = { .symfs = symfs };
	struct ds_symbols *s = ds_symbols__new(&o);
	struct ds_frame f[8];
	struct ds_dso *d;

	memcpy(bad, good, sizeof(bad));
	bad[0] ^= 1;
	d = ds_symbols__dso(s, "/usr/local/bin/wlxx", good, sizeof(good));
	CHECK(ds_dso__resolve(d, 0x1040, f, 8) == 1 && f[0].name, "matching build-id is used");
	/* a build-id learnt later that does not match drops the file */
	warnings = 0;
	ds_dso__set_build_id(d, bad, sizeof(bad));
	CHECK(ds_dso__resolve(d, 0x1040, f, 8) == 1 && !f[0].name, "mismatch after the fact");
	CHECK(warnings == 1 && strstr(last_warning, "build-id mismatch for /usr/local/bin/wlxx"),
	      "one mismatch warning: %d '%s'", warnings, last_warning);

	warnings = 0;
	d = ds_symbols__dso(s, "/usr/local/bin/wl", bad, sizeof(bad));
	CHECK(ds_dso__resolve(d, 0x17d2, f, 8) == 1 && !f[0].name, "mismatch at load");
	CHECK(ds_dso__resolve(d, 0x17d2, f, 8) == 1 && !f[0].name, "still nothing");
	CHECK(warnings == 1 && strstr(last_warning, "build-id mismatch"), "warned once");

	warnings = 0;
	d = ds_symbols__dso(s, "/no/such/file.so", NULL, 0);
	CHECK(ds_dso__resolve(d, 0x1000, f, 8) == 1 && !f[0].name, "missing file");
	ds_dso__resolve(d, 0x2000, f, 8);
	CHECK(warnings == 1, "missing file warned once: %d", warnings);

	ds_symbols__delete(s);

	/* loaded ahead on the helper thread: quiet too, said at first use, once */
	s = ds_symbols__new(&o);
	warnings = 0;
	CHECK(ds_symbols__prefetch(s, "/no/such/prefetched.so") == 0 && ds_symbols__prefetch(s, "relative.so") == 0 &&
	      ds_symbols__prefetch(s, NULL) == 0, "prefetch: missing, relative and no path are fine");
	ds_symbols__prefetch_wait(s);
	CHECK(warnings == 0, "the helper says nothing: %d", warnings);
	d = ds_symbols__dso(s, "/no/such/prefetched.so", NULL, 0);
	CHECK(ds_dso__resolve(d, 0x1000, f, 8) == 1 && !f[0].name && warnings == 1 &&
	      strstr(last_warning, "/no/such/prefetched.so: no symbols"), "prefetched missing file warned at use: %d '%s'",
	      warnings, last_warning);
	ds_dso__resolve(d, 0x2000, f, 8);
	CHECK(warnings == 1, "and once: %d", warnings);
	ds_symbols__prefetch(s, "/usr/local/bin/wl-nofp");
	ds_symbols__prefetch_wait(s);
	d = ds_symbols__dso(s, "/usr/local/bin/wl-nofp", bad, sizeof(bad));
	ds_dso__resolve(d, 0x17d2, f, 8);
	CHECK(warnings == 2 && strstr(last_warning, "build-id mismatch for /usr/local/bin/wl-nofp"),
	      "a prefetched file is checked against the build-id as any: %d '%s'", warnings, last_warning);
	/* requests nobody takes, some maybe loading: freed with the object */
	ds_symbols__prefetch(s, "/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.36");
	ds_symbols__prefetch(s, "/usr/lib/x86_64-linux-gnu/libm.so.6");
	ds_symbols__prefetch(s, "/usr/lib/x86_64-linux-gnu/libgcc_s.so.1");
	ds_symbols__delete(s);

	/* loaded ahead (the header's list): quiet until the DSO is asked for */
	s = ds_symbols__new(&o);
	warnings = 0;
	d = ds_symbols__dso(s, "/usr/local/bin/wl", NULL, 0);
	CHECK(ds_dso__load(d), "a good file loads ahead");
	d = ds_symbols__dso(s, "/no/such/other.so", NULL, 0);
	CHECK(!ds_dso__load(d) && warnings == 0, "a missing file loaded ahead is not warned about yet: %d", warnings);
	CHECK(ds_dso__resolve(d, 0x1000, f, 8) == 1 && !f[0].name && warnings == 1 &&
	      strstr(last_warning, "/no/such/other.so: no symbols"), "but at its first use: %d '%s'", warnings, last_warning);
	d = ds_symbols__dso(s, "/usr/local/bin/wl-nofp", bad, sizeof(bad));
	CHECK(!ds_dso__load(d) && warnings == 1, "a mismatching file loaded ahead: quiet");
	ds_dso__resolve(d, 0x17d2, f, 8);
	CHECK(warnings == 2 && strstr(last_warning, "build-id mismatch for /usr/local/bin/wl-nofp"),
	      "mismatch said at first use: %d '%s'", warnings, last_warning);
	ds_symbols__delete(s);
}

/* Runs a shell command built from @fmt; false if it fails. */
__attribute__((format(printf, 1, 2)))
static bool sh(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd) == 0;
}

/* Frame 0's name at @off of @path in a symbols object over @symfs ("?" if none). */
static const char *name_at(const char *symfs, const char *path, uint64_t off, bool no_inline)
{
	static char buf[256];
	struct ds_symbols_opts o = { .symfs = symfs, .no_inline = no_inline };
	struct ds_symbols *s = ds_symbols__new(&o);
	struct ds_frame f[8];
	size_t n = ds_dso__resolve(ds_symbols__dso(s, path, NULL, 0), off, f, 8);

	snprintf(buf, sizeof(buf), "%s", n && f[n - 1].name ? f[n - 1].name : "?");
	ds_symbols__delete(s);
	return buf;
}

/*
 * A stripped binary (Debian's packages ship them so) is symbolized from
 * its debug file: by build-id under /usr/lib/debug/.build-id, or by
 * .gnu_debuglink; a debug file of another build is not used.
 */
static void test_debug_files(const char *symfs, const char *dir)
{
	const char *wl = "/usr/local/bin/wl";
	char a[512], b[512], c[512];

	snprintf(a, sizeof(a), "%s/byid", dir);
	snprintf(b, sizeof(b), "%s/bylink", dir);
	snprintf(c, sizeof(c), "%s/other", dir);
	if (!sh("command -v objcopy >/dev/null")) {
		printf("SKIPPED: debug files: *** no objcopy (binutils) ***\n");
		return;
	}
	/* by build-id: e2 76 fd ... of wl, as test_build_id knows it for wlxx: read it */
	CHECK(sh("set -e; mkdir -p %s/usr/local/bin %s/usr/lib/debug/.build-id; "
		 "objcopy --strip-all %s%s %s%s; "
		 "id=$(readelf -n %s%s | awk '/Build ID/ {print $3}'); "
		 "mkdir -p %s/usr/lib/debug/.build-id/$(echo $id | cut -c1-2); "
		 "objcopy --only-keep-debug %s%s %s/usr/lib/debug/.build-id/$(echo $id | cut -c1-2)/$(echo $id | cut -c3-).debug",
		 a, a, symfs, wl, a, wl, symfs, wl, a, symfs, wl, a), "set up a build-id debug file");
	CHECK(!strcmp(name_at(a, wl, 0x17d2, true), "recurse_b"), "by build-id: recurse_b, got %s",
	      name_at(a, wl, 0x17d2, true));
	CHECK(!strcmp(name_at(a, wl, 0x16a0, false), "fault_pages"), "DWARF from the debug file: got %s",
	      name_at(a, wl, 0x16a0, false));
	CHECK(sh("set -e; mkdir -p %s/usr/local/bin/.debug; "
		 "objcopy --only-keep-debug %s%s %s/usr/local/bin/.debug/wl.debug; "
		 "objcopy --strip-all --add-gnu-debuglink=%s/usr/local/bin/.debug/wl.debug %s%s %s%s",
		 b, symfs, wl, b, b, symfs, wl, b, wl), "set up a debuglink debug file");
	CHECK(!strcmp(name_at(b, wl, 0x17d2, true), "recurse_b"), "by debuglink: got %s",
	      name_at(b, wl, 0x17d2, true));
	/* the debug file of another binary (wlxx) under wl's build-id: refused */
	CHECK(sh("set -e; mkdir -p %s/usr/local/bin; objcopy --strip-all %s%s %s%s; "
		 "id=$(readelf -n %s%s | awk '/Build ID/ {print $3}'); "
		 "mkdir -p %s/usr/lib/debug/.build-id/$(echo $id | cut -c1-2); "
		 "objcopy --only-keep-debug %s/usr/local/bin/wlxx %s/usr/lib/debug/.build-id/$(echo $id | cut -c1-2)/$(echo $id | cut -c3-).debug",
		 c, symfs, wl, c, wl, symfs, wl, c, symfs, c), "set up a wrong debug file");
	CHECK(strcmp(name_at(c, wl, 0x17d2, true), "recurse_b"), "a debug file of another build is not used");
	CHECK(strcmp(name_at(symfs, "/no/such", 0x17d2, true), "recurse_b"), "control");
}

/* ds_symbols_opts.debuginfod's hook: the requests said, in order */
struct di_seen {
	int n;
	char paths[8][128];
	enum ds_debuginfod_result results[8];
};

static void di_done(void *ctx, const struct ds_debuginfod_req *r)
{
	struct di_seen *seen = ctx;

	if (seen->n < 8) {
		snprintf(seen->paths[seen->n], sizeof(seen->paths[0]), "%s", r->path);
		seen->results[seen->n] = r->result;
	}
	seen->n++;
}

/* Lines of @file (0 if it is missing). */
static int lines_of(const char *file)
{
	FILE *f = fopen(file, "r");
	int n = 0, c;

	if (!f)
		return 0;
	while ((c = fgetc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

/*
 * debuginfod through the symbols (ds_symbols_opts.debuginfod), with a
 * client of our own on the opts' path (it serves DIR/di/srv/HEX.debug and
 * logs each request): a stripped binary is asked once, at its first
 * lookup, by the recorded build-id, and its names come from the answer,
 * from the cache the next time; a complete or missing one is never asked;
 * an unknown build-id is said once; a DSO asked ahead is not asked again
 * at its load.
 */
static void test_debuginfod(const char *symfs, const char *dir)
{
	const char *wl = "/usr/local/bin/wl";
	char root[512], bin[512], cache[512], log[512], id[64] = "";
	struct di_seen seen = { 0 };
	struct ds_debuginfod_opts di = { .urls = "http://unused", .cache_dir = cache, .path = bin, .timeout_s = 5 };
	struct ds_symbols_opts o = { .symfs = root, .no_inline = true, .debuginfod_cache = cache, .debuginfod = &di,
				     .debuginfod_done = di_done, .debuginfod_ctx = &seen };
	uint8_t bid[20];
	struct ds_frame f[8];
	struct ds_symbols *s;
	struct ds_dso *d;
	FILE *p;

	snprintf(root, sizeof(root), "%s/di/root", dir);
	snprintf(bin, sizeof(bin), "%s/di/bin", dir);
	snprintf(cache, sizeof(cache), "%s/di/cache", dir);
	snprintf(log, sizeof(log), "%s/di/asked", dir);
	if (!sh("command -v objcopy >/dev/null")) {
		printf("SKIPPED: debuginfod: *** no objcopy (binutils) ***\n");
		return;
	}
	CHECK(sh("set -e; mkdir -p %s/usr/local/bin %s %s/di/srv; objcopy --strip-all %s%s %s%s; "
		 "objcopy --strip-all %s/usr/local/bin/wlxx %s/usr/local/bin/wlxx; "
		 "id=$(readelf -n %s%s | awk '/Build ID/ {print $3}'); objcopy --only-keep-debug %s%s %s/di/srv/$id.debug; "
		 "printf '%%s\\n' '#!/bin/sh' 'echo \"$2\" >>%s' "
		 "'if [ -f %s/di/srv/$2.debug ]; then mkdir -p \"$DEBUGINFOD_CACHE_PATH/$2\"; "
		 "cp %s/di/srv/$2.debug \"$DEBUGINFOD_CACHE_PATH/$2/debuginfo\"; exit 0; fi' "
		 "'echo \"Server query failed: No such file or directory\" >&2; exit 2' >%s/debuginfod-find; "
		 "chmod +x %s/debuginfod-find",
		 root, bin, dir, symfs, wl, root, wl, symfs, root, symfs, wl, symfs, wl, dir, log, dir, dir, bin, bin),
	      "set up a stripped binary, its debug file served, a client");
	{   /* the build-id, as an MMAP2 record gives it */
		char cmd[1024];

		snprintf(cmd, sizeof(cmd), "readelf -n %s%s | awk '/Build ID/ {print $3}'", symfs, wl);
		p = popen(cmd, "r");
		if (!p || !fgets(id, sizeof(id), p))
			id[0] = 0;
		if (p)
			pclose(p);
	}
	for (size_t i = 0; i < sizeof(bid); i++)
		sscanf(id + 2 * i, "%2hhx", &bid[i]);
	s = ds_symbols__new(&o);
	d = ds_symbols__dso(s, wl, bid, sizeof(bid));
	CHECK(seen.n == 0 && lines_of(log) == 0, "nothing asked before the first lookup: %d", seen.n);
	ds_dso__resolve(d, 0x17d2, f, 8);
	CHECK(f[0].name && !strcmp(f[0].name, "recurse_b"), "the stripped binary, through the server: %s",
	      f[0].name ? f[0].name : "[unknown]");
	ds_dso__resolve(d, 0x16a0, f, 8);
	CHECK(seen.n == 1 && seen.results[0] == DS_DI_FETCHED && !strcmp(seen.paths[0], wl) && lines_of(log) == 1,
	      "asked once, fetched, said once: %d said, %d asked", seen.n, lines_of(log));
	/* a complete binary (the corpus's, with .symtab and DWARF) is not asked */
	d = ds_symbols__dso(s, "/usr/local/bin/wl-nofp", NULL, 0);
	ds_dso__resolve(d, 0x17d2, f, 8);
	CHECK(seen.n == 1 && lines_of(log) == 1, "a complete binary is not asked");
	/* a build-id the server does not know: said once, frames unknown */
	d = ds_symbols__dso(s, "/usr/local/bin/wlxx", NULL, 0);
	ds_dso__resolve(d, 0x17d2, f, 8);
	ds_dso__resolve(d, 0x16a0, f, 8);
	CHECK(seen.n == 2 && seen.results[1] == DS_DI_NOT_FOUND && lines_of(log) == 2 && !f[0].name,
	      "an unknown build-id: said once (%d), asked once (%d)", seen.n, lines_of(log));
	ds_symbols__delete(s);
	/* the next run: from the cache, said so, no request; a missing binary is not asked */
	seen.n = 0;
	s = ds_symbols__new(&o);
	d = ds_symbols__dso(s, wl, bid, sizeof(bid));
	ds_dso__resolve(d, 0x17d2, f, 8);
	CHECK(f[0].name && !strcmp(f[0].name, "recurse_b") && seen.n == 1 && seen.results[0] == DS_DI_CACHED &&
	      lines_of(log) == 2, "the debug file from the cache, no request: %s, %d said, %d asked",
	      f[0].name ? f[0].name : "[unknown]", seen.n, lines_of(log));
	d = ds_symbols__dso(s, "/usr/local/bin/wl-gone", bid, sizeof(bid));
	ds_dso__resolve(d, 0x17d2, f, 8);
	CHECK(seen.n == 1 && lines_of(log) == 2, "a missing binary is not asked: %d said", seen.n);
	/* asked ahead (a header's table): not again at its load */
	d = ds_symbols__dso(s, "/usr/local/bin/wlxx", NULL, 0);
	{
		uint8_t xid[20] = { 1, 2, 3 };

		ds_dso__set_build_id(d, xid, sizeof(xid));
	}
	CHECK(!ds_symbols__debuginfod_ahead(s, &d, 1) && seen.n == 2 && lines_of(log) == 3, "asked ahead");
	ds_dso__resolve(d, 0x17d2, f, 8);
	CHECK(seen.n == 2 && lines_of(log) == 3, "not asked again at its load: %d said, %d asked", seen.n, lines_of(log));
	ds_symbols__delete(s);
	sh("rm -rf %s/di", dir);
}

static void test_kernel(const char *kallsyms)
{
	struct ds_symbols_opts o = { .kallsyms = kallsyms };
	struct ds_symbols *s = ds_symbols__new(&o);
	struct ds_frame f;

	CHECK(ds_symbols__kernel(s, 0xffffffff95a8d6a1ULL, &f) && !strcmp(f.name, "uprobe_clear_state") &&
	      f.offset == 0x21, "uprobe_clear_state+0x21");
	CHECK(ds_symbols__kernel(s, 0xffffffff96637b41ULL, &f) && !strcmp(f.name, "do_syscall_64") &&
	      f.offset == 0xe1, "do_syscall_64+0xe1");
	CHECK(!ds_symbols__kernel(s, 0x1000, &f), "user address is not kernel");
	ds_symbols__delete(s);
}

/* ---- files under a temporary directory ---------------------------------- */

static int write_file(const char *dir, const char *name, const void *data, size_t len)
{
	char path[4096];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fp = fopen(path, "wb");
	if (!fp)
		return -1;
	fwrite(data, 1, len, fp);
	return fclose(fp);
}

static void test_synthetic_kallsyms(const char *dir)
{
	static const char ks[] =
		"ffffffff81000000 T _text\n"
		"ffffffff81000000 T _stext\n"
		"ffffffff81000100 t local_fn\n"
		"ffffffff81000100 W weak_alias\n"
		"ffffffff81000200 r some_rodata\n"
		"ffffffff81000300 T last_fn\n"
		"ffffffffc0000000 t mod_fn\t[some_mod]\n";
	char path[4096];
	struct ds_symbols_opts o = { .kallsyms = path };
	struct ds_symbols *s;
	struct ds_frame f;

	snprintf(path, sizeof(path), "%s/kallsyms", dir);
	CHECK(write_file(dir, "kallsyms", ks, sizeof(ks) - 1) == 0, "write kallsyms");
	s = ds_symbols__new(&o);
	/* same address: the last one has the size after the end fix-up */
	CHECK(ds_symbols__kernel(s, 0xffffffff81000010ULL, &f) && !strcmp(f.name, "_stext"),
	      "dup group: %s", f.name);
	CHECK(ds_symbols__kernel(s, 0xffffffff81000250ULL, &f) && !strcmp(f.name, "weak_alias") &&
	      f.offset == 0x150, "rodata is not a symbol boundary: %s", f.name);
	CHECK(ds_symbols__kernel(s, 0xffffffff81000fffULL, &f) && !strcmp(f.name, "last_fn"), "last");
	CHECK(!ds_symbols__kernel(s, 0xffffffff81002000ULL, &f), "last symbol is bounded");
	CHECK(!ds_symbols__kernel(s, 0xffffffffc0000010ULL, &f), "module symbols skipped");
	ds_symbols__delete(s);
}

/*
 * kallsyms lookups against a plain reference, on generated files over 1 MiB
 * (more than one scan buffer), the last line without a newline:
 *   KS_SHAPES  every line shape (the 16-digit fast path, upper case, short
 *              and 0x addresses, extra blanks, modules, '$' names, unkept
 *              types), out of order: the full index;
 *   KS_SORTED  a real file's shape, in order but for module lines (inside
 *              and, out of order, at the end), same-address groups: the
 *              text searched in place;
 *   KS_LONGNAMES KS_SORTED with names of 100-400 bytes, one in 997 of
 *              50 KB: walks over long lines, and names cut at 1 KiB;
 *   KS_LONGRUN the same with a long run of unkept lines: the in-place
 *              search gives up on it and builds the full index mid-way.
 */
enum ks_mode { KS_SHAPES, KS_SORTED, KS_LONGNAMES, KS_LONGRUN };
struct ref_sym { uint64_t start; unsigned order; char *name; };

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* The symbol perf's rules give @addr: the last listed of the highest start <= addr, bounded. */
static const struct ref_sym *ref_find(const struct ref_sym *v, size_t nr, uint64_t addr)
{
	const struct ref_sym *best = NULL;
	bool next = false;

	for (size_t i = 0; i < nr; i++) {
		if (v[i].start > addr)
			next = true;
		else if (!best || v[i].start > best->start || (v[i].start == best->start && v[i].order > best->order))
			best = &v[i];
	}
	if (best && !next && addr >= ((best->start + 4095) & ~4095ULL) + 4096)
		return NULL;
	return best;
}

/* The lowest start above @addr, or 0. */
static uint64_t ref_next_start(const struct ref_sym *v, size_t nr, uint64_t addr)
{
	uint64_t next = 0;

	for (size_t i = 0; i < nr; i++)
		if (v[i].start > addr && (!next || v[i].start < next))
			next = v[i].start;
	return next;
}

/* One direct lookup of @addr checked against the reference; true if they agree. */
static bool ks_agrees(struct ds_kallsyms *ks, const struct ref_sym *ref, size_t nref, uint64_t addr)
{
	const struct ref_sym *want = ref_find(ref, nref, addr);
	const char *kname;
	uint64_t kstart;
	bool kgot = dsi_kallsyms__find(ks, addr, &kname, &kstart);

	return kgot == (want != NULL) && (!kgot || (!strcmp(kname, want->name) && kstart == want->start));
}

static void test_kallsyms_file(const char *dir, enum ks_mode mode)
{
	enum { LINES = 40000, QUERIES = 3000 };
	static const char types[] = "TtWwDdBbulN1rRAaUV";
	struct ref_sym *ref = calloc(LINES, sizeof(*ref));
	size_t nref = 0, len = 0, cap = (size_t)LINES * (mode == KS_LONGNAMES ? 448 : 64) + (mode == KS_LONGNAMES ? 41u * 50100 : 0);
	char *text = malloc(cap), path[4096];
	uint64_t base = 0xffffffff81000000ULL, next = base, run_lo = 0, run_hi = 0;
	static const char *const fnames[] = { "kallsyms.shapes", "kallsyms.sorted", "kallsyms.longnames", "kallsyms.longrun" };
	const char *fname = fnames[mode];

	for (unsigned i = 0; i < LINES; i++) {
		uint64_t addr = base + (rng() % 0x1000000) * ((rng() % 8) ? 1 : 0) + i * 16;
		char type = types[rng() % (sizeof(types) - 1)];
		static char name[60000];
		unsigned shape = (unsigned)(rng() % 20);

		if (mode != KS_SHAPES) {
			/* ascending, a fifth of them sharing the previous address; modules
			 * here and there and, out of order, the last 500 lines */
			addr = next;
			next += rng() % 5 ? 16 + rng() % 64 : 0;
			shape = i >= LINES - 500 || rng() % 50 == 0 ? 4 : shape == 6 ? 6 : 0;
			if (shape == 4 && i >= LINES - 500)
				addr = base + rng() % 0x1000000;
			if (mode == KS_LONGRUN && i >= LINES / 2 && i < LINES / 2 + 3000) {
				type = 'r';
				run_lo = run_lo ? run_lo : addr;
				run_hi = addr;
			}
		}
		bool kept = strchr("TtWwDdBbulN1", type) != NULL;

		int nl = snprintf(name, sizeof(name), "%s%u_%u", shape == 6 ? "$x" : "sym", i, (unsigned)(rng() % 1000));

		if (mode == KS_LONGNAMES)   /* 100-400 bytes, one in 997 50 KB */
			for (int pad = i % 997 == 500 ? 50000 : 100 + (int)(rng() % 300); nl < pad; nl++)
				name[nl] = (char)('a' + nl % 26), name[nl + 1] = '\0';
		if (shape == 1)
			len += (size_t)sprintf(text + len, "%016llX %c %s\n", (unsigned long long)addr, type, name);
		else if (shape == 2)
			len += (size_t)sprintf(text + len, "%llx %c %s\n", (unsigned long long)(addr & 0xffffffffULL), type, name);
		else if (shape == 3)
			len += (size_t)sprintf(text + len, "0x%llx  %c  %s\n", (unsigned long long)addr, type, name);
		else if (shape == 4)
			len += (size_t)sprintf(text + len, "%016llx %c %s\t[mod_%u]\n", (unsigned long long)addr, type, name, i);
		else
			len += (size_t)sprintf(text + len, "%016llx %c %s\n", (unsigned long long)addr, type, name);
		if (shape == 2)
			addr &= 0xffffffffULL;
		if (kept && shape != 4 && shape != 6)
			ref[nref++] = (struct ref_sym){ .start = addr, .order = i };
		if (kept && shape != 4 && shape != 6)
			ref[nref - 1].name = strndup(name, 1024);   /* a longer name is cut at 1 KiB */
	}
	len--;   /* the last line has no newline */
	snprintf(path, sizeof(path), "%s/%s", dir, fname);
	CHECK(len > (1u << 20) && write_file(dir, fname, text, len) == 0, "write %s", fname);

	struct ds_symbols_opts o = { .kallsyms = path };
	struct ds_symbols *s = ds_symbols__new(&o);
	struct ds_kallsyms ks;
	unsigned agree = 0, agree_ks = 0, again = 0, nagain = 0;
	uint64_t *asked = calloc(QUERIES, sizeof(*asked));

	CHECK(dsi_kallsyms__load(&ks, path), "load %s", fname);
	CHECK(ks.in_place == (mode != KS_SHAPES), "%s: searched %s", fname, ks.in_place ? "in place" : "by the full index");

	for (unsigned q = 0; q < QUERIES; q++) {
		uint64_t addr = q % 3 ? ref[rng() % nref].start + rng() % 64 : (rng() & 0xffffffffULL) | (q % 2 ? base : 0);

		if (mode == KS_LONGRUN)   /* in place first, then inside the long run */
			addr = q < QUERIES / 2 ? ref[rng() % (nref / 3)].start + rng() % 64
					       : run_lo + rng() % (run_hi - run_lo + 1);
		const struct ref_sym *want = ref_find(ref, nref, addr);
		struct ds_frame f;

		asked[q] = addr;
		bool got = ds_symbols__kernel(s, addr, &f);

		const char *kname;
		uint64_t kstart;
		bool kgot = dsi_kallsyms__find(&ks, addr, &kname, &kstart);

		if (kgot == (want != NULL) && (!kgot || (!strcmp(kname, want->name) && kstart == want->start)))
			agree_ks++;
		if (got == (want != NULL) && (!got || (!strcmp(f.name, want->name) && f.offset == addr - want->start)))
			agree++;
		else if (agree + 5 > q)
			printf("  kallsyms %#llx: got %s, want %s\n", (unsigned long long)addr,
			       got ? f.name : "-", want ? want->name : "-");
	}
	CHECK(agree == QUERIES, "%s: %u of %u lookups agree with the reference", fname, agree, QUERIES);
	CHECK(agree_ks == QUERIES, "%s: %u of %u direct lookups agree", fname, agree_ks, QUERIES);
	/* again, backwards, with each symbol's first and last address and the next one's first */
	for (unsigned q = QUERIES; q-- > 0;) {
		const struct ref_sym *want = ref_find(ref, nref, asked[q]);
		uint64_t next = want ? ref_next_start(ref, nref, want->start) : 0;
		uint64_t probe[4] = { asked[q], want ? want->start : asked[q], next ? next - 1 : asked[q], next ? next : asked[q] };

		for (int i = 0; i < 4; i++, nagain++)
			again += ks_agrees(&ks, ref, nref, probe[i]);
	}
	CHECK(again == nagain, "%s: %u of %u repeated and boundary lookups agree", fname, again, nagain);
	free(asked);
	if (mode == KS_LONGRUN)
		CHECK(!ks.in_place, "%s: the long run sent the search to the full index", fname);
	if (mode == KS_SORTED || mode == KS_LONGNAMES)
		CHECK(ks.in_place, "%s: still searched in place after every lookup", fname);
	dsi_kallsyms__exit(&ks);
	ds_symbols__delete(s);
	for (size_t i = 0; i < nref; i++)
		free(ref[i].name);
	free(ref);
	free(text);
}

/* A line longer than the scan buffer (DS_KSCAN_CHUNK, 64 KiB) is cut, not a crash or a lost neighbour. */
static void test_kallsyms_long_line(const char *dir)
{
	size_t long_name = 600u << 10, len = 0;
	char *text = malloc(long_name + 256), path[4096];
	struct ds_symbols_opts o = { .kallsyms = path };
	struct ds_symbols *s;
	struct ds_frame f;

	len += (size_t)sprintf(text + len, "ffffffff81000000 T first\nffffffff81000100 T ");
	memset(text + len, 'x', long_name);
	len += long_name;
	len += (size_t)sprintf(text + len, "\nffffffff81000200 T last\n");
	CHECK(write_file(dir, "kallsyms.long", text, len) == 0, "write kallsyms.long");
	snprintf(path, sizeof(path), "%s/kallsyms.long", dir);
	s = ds_symbols__new(&o);
	CHECK(ds_symbols__kernel(s, 0xffffffff81000010ULL, &f) && !strcmp(f.name, "first"), "before the long line");
	CHECK(ds_symbols__kernel(s, 0xffffffff81000110ULL, &f) && !strncmp(f.name, "xxxx", 4) && strlen(f.name) < long_name,
	      "the long line: its name cut");
	CHECK(ds_symbols__kernel(s, 0xffffffff81000210ULL, &f) && !strcmp(f.name, "last"), "after the long line");
	ds_symbols__delete(s);
	free(text);
}

static void test_jit(const char *dir)
{
	static const char map[] = "1000 10 jitted_a\n0x2000 0x20 jitted b with spaces\nbad line\n";
	struct ds_symbols_opts o = { .symfs = dir };
	struct ds_symbols *s;
	char sub[4096];
	struct ds_frame f;

	snprintf(sub, sizeof(sub), "%s/tmp", dir);
	CHECK(mkdir(sub, 0700) == 0 || errno == EEXIST, "mkdir");
	CHECK(write_file(dir, "tmp/perf-4242.map", map, sizeof(map) - 1) == 0, "write map");
	s = ds_symbols__new(&o);
	CHECK(ds_symbols__jit(s, 4242, 0x1008, &f) && !strcmp(f.name, "jitted_a") && f.offset == 8,
	      "jit a");
	CHECK(ds_symbols__jit(s, 4242, 0x201f, &f) && !strcmp(f.name, "jitted b with spaces") &&
	      f.offset == 0x1f, "jit b");
	CHECK(!ds_symbols__jit(s, 4242, 0x1010, &f), "past the end of a");
	CHECK(!ds_symbols__jit(s, 4243, 0x1008, &f), "no map for that pid");
	CHECK(!ds_symbols__jit(s, 4243, 0x1008, &f), "still none");
	ds_symbols__delete(s);
}

static unsigned char *slurp(const char *path, size_t *len)
{
	FILE *fp = fopen(path, "rb");
	unsigned char *buf;
	long sz;

	if (!fp)
		return NULL;
	fseek(fp, 0, SEEK_END);
	sz = ftell(fp);
	rewind(fp);
	buf = malloc(sz > 0 ? (size_t)sz : 1);
	if (buf && fread(buf, 1, (size_t)sz, fp) != (size_t)sz) {
		free(buf);
		buf = NULL;
	}
	fclose(fp);
	*len = (size_t)sz;
	return buf;
}

/* Corrupt copies of wl (truncated, random bytes flipped) must never crash. */
static void test_hostile(const char *symfs, const char *dir)
{
	char path[4096];
	unsigned char *orig, *buf;
	size_t len;
	unsigned seed = 12345;
	int resolved = 0;

	snprintf(path, sizeof(path), "%s/usr/local/bin/wl", symfs);
	orig = slurp(path, &len);
	CHECK(orig != NULL, "read wl");
	if (!orig)
		return;
	buf = malloc(len);
	for (int iter = 0; iter < 300; iter++) {
		struct ds_symbols_opts o = { .symfs = dir };
		struct ds_symbols *s;
		size_t n = len;
		struct ds_frame f[16];

		memcpy(buf, orig, len);
		if (iter % 3 == 0)
			n = (size_t)(rand_r(&seed) % len);           /* truncated */
		for (int k = 0; k < 1 + iter % 16; k++) {        /* flipped bytes */
			size_t at = (size_t)rand_r(&seed) % (iter % 2 ? 0x100 : len);

			buf[at] = (unsigned char)rand_r(&seed);
		}
		write_file(dir, "wl", buf, n);
		s = ds_symbols__new(&o);
		if (iter % 4 >= 2)   /* half of them loaded on the helper thread first */
			ds_symbols__prefetch(s, "/wl");
		if (iter % 4 == 3)   /* to the end, or racing with the first lookup */
			ds_symbols__prefetch_wait(s);
		for (uint64_t off = 0x1000; off < 0x1900; off += 0x37)
			resolved += ds_dso__resolve(ds_symbols__dso(s, "/wl", NULL, 0), off, f, 16) > 0;
		ds_symbols__delete(s);
	}
	CHECK(resolved > 0, "survived corrupt files");
	write_file(dir, "wl", "not an elf", 10);
	{
		struct ds_symbols_opts o = { .symfs = dir };
		struct ds_symbols *s = ds_symbols__new(&o);
		struct ds_frame f[2];

		CHECK(ds_dso__resolve(ds_symbols__dso(s, "/wl", NULL, 0), 0x1000, f, 2) == 1 &&
		      !f[0].name, "not an ELF: unknown");
		ds_symbols__delete(s);
		/* prefetched: the helper stays quiet, the first use says it once */
		s = ds_symbols__new(&o);
		warnings = 0;
		ds_symbols__prefetch(s, "/wl");
		ds_symbols__prefetch_wait(s);
		CHECK(ds_dso__resolve(ds_symbols__dso(s, "/wl", NULL, 0), 0x1000, f, 2) == 1 && !f[0].name &&
		      warnings == 1 && strstr(last_warning, "/wl: not an ELF file"), "prefetched not an ELF: %d '%s'",
		      warnings, last_warning);
		ds_symbols__delete(s);
	}
	free(buf);
	free(orig);
}

/*
 * Inline chains through a DWARF cache (each CU's outermost scopes by
 * address, symbols/dwarf.c) are what the walk from the CU finds without
 * one: at the start, middle and last byte of every function of the
 * corpus binaries that have DWARF, and at every byte of the first 4 KiB
 * of each one's text.
 */
static void dwarf_same(struct ds_elf_image *img, struct ds_intern *in, struct ds_dwarf_cache *cache,
		       uint64_t a, size_t *nr, size_t *with_inlines, const char *bin)
{
	struct ds_inline_frame x[16], y[16];
	size_t nx = dsi_dwarf__inlines(img, a, in, true, cache, x, 16);
	size_t ny = dsi_dwarf__inlines(img, a, in, true, NULL, y, 16);
	bool same = nx == ny;

	for (size_t i = 0; same && i < nx; i++)
		same = x[i].name == y[i].name;
	(*nr)++;
	*with_inlines += nx > 1;
	if (!same) {
		CHECK(false, "%s %#" PRIx64 ": %zu frames with the cache (%s), %zu without (%s)", bin, a, nx,
		      nx ? x[0].name : "-", ny, ny ? y[0].name : "-");
	}
}

static void test_dwarf_scopes(const char *symfs)
{
	static const char *const bins[] = { "/usr/local/bin/wl", "/usr/local/bin/wlxx", "/job/wl" };

	for (size_t b = 0; b < sizeof(bins) / sizeof(*bins); b++) {
		char path[4096];
		struct ds_elf_image img;
		struct ds_intern in = { 0 };
		struct ds_dwarf_cache cache;
		size_t nr = 0, with_inlines = 0, failed_before = (size_t)failed;

		snprintf(path, sizeof(path), "%s%s", symfs, bins[b]);
		if (dsi_elf__open(&img, path) || !dsi_elf__load(&img, true, symfs, bins[b], NULL) || !img.dwarf) {
			CHECK(false, "%s: no DWARF to test", bins[b]);
			continue;
		}
		dsi_dwarf_cache__init(&cache);
		for (size_t i = 0; i < img.symtab.nr; i++) {
			const struct ds_sym *f = &img.symtab.syms[i];

			if (f->end <= f->start)
				continue;
			dwarf_same(&img, &in, &cache, f->start, &nr, &with_inlines, bins[b]);
			dwarf_same(&img, &in, &cache, f->start + (f->end - f->start) / 2, &nr, &with_inlines, bins[b]);
			dwarf_same(&img, &in, &cache, f->end - 1, &nr, &with_inlines, bins[b]);
		}
		for (size_t i = 0; i < img.nr_segs; i++)
			if (img.segs[i].filesz && img.segs[i].off)   /* the first loaded segment after the headers: text */
				for (uint64_t a = img.segs[i].vaddr; a < img.segs[i].vaddr + 4096; a++)
					dwarf_same(&img, &in, &cache, a, &nr, &with_inlines, bins[b]);
		CHECK(nr > 1000 && with_inlines > 0, "%s: %zu addresses, %zu with inline frames", bins[b], nr, with_inlines);
		if ((size_t)failed == failed_before)
			printf("dwarf scopes %s: %zu addresses the same (%zu with inline frames)\n", bins[b], nr, with_inlines);
		dsi_dwarf_cache__exit(&cache);
		dsi_intern__exit(&in);
		dsi_elf__close(&img);
	}
}

/*
 * A loaded table is sorted by start with the PLT entries merged in (they
 * are appended after the sorted ELF symbols), equal starts in the order a
 * stable sort gives, and every "@plt" entry is what a lookup at its start
 * finds.
 */
static void test_symtab_sorted(const char *symfs)
{
	static const char *const bins[] = { "/usr/lib/x86_64-linux-gnu/libc.so.6", "/usr/local/bin/wlxx", "/job/wl" };

	for (size_t b = 0; b < sizeof(bins) / sizeof(*bins); b++) {
		char path[4096];
		struct ds_elf_image img;
		size_t plt = 0, found = 0, unsorted = 0;

		snprintf(path, sizeof(path), "%s%s", symfs, bins[b]);
		if (dsi_elf__open(&img, path) || !dsi_elf__load(&img, true, symfs, bins[b], NULL)) {
			CHECK(false, "%s: cannot load", bins[b]);
			continue;
		}
		for (size_t i = 0; i < img.symtab.nr; i++) {
			const struct ds_sym *f = &img.symtab.syms[i], *g;

			unsorted += i && img.symtab.syms[i - 1].start > f->start;
			if (!f->raw || !strstr(f->name, "@plt"))
				continue;
			plt++;
			g = dsi_symtab__find(&img.symtab, f->start);
			found += g && g->start == f->start;
		}
		CHECK(!unsorted && plt > 0 && found == plt, "%s: %zu symbols, %zu out of order, %zu PLT entries, %zu found",
		      bins[b], img.symtab.nr, unsorted, plt, found);
		dsi_elf__close(&img);
	}
}

static void cleanup(const char *dir)
{
	static const char *const files[] = { "kallsyms", "tmp/perf-4242.map", "wl", "tmp" };
	char path[4096];

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		if (unlink(path))
			rmdir(path);
	}
	rmdir(dir);
}

/*
 * Rust names as perf 7.2 printed them (each pair seen in its script output
 * of a Rust program, recorded in the guest): v0 paths, impls, closures,
 * generics with back references; legacy names without their hash, with
 * escapes and an LLVM suffix; C++ names stay C++'s; broken ones stay mangled.
 */
static void test_demangle_rust(void)
{
	static const char *const pairs[][2] = {
		{ "_RNvXs_Cs6GmmlP4bgsG_1rNtB4_1ANtB4_4Work4work", "<r::A as r::Work>::work" },
		{ "_RNvMsD_NtCsgEmfK2I1SDS_4core3numy16from_ascii_radix", "<u64>::from_ascii_radix" },
		{ "_RNCNvNtNtNtCsjrHSEGnQ3l9_3std3sys3env4unix6getenv0B9_", "std::sys::env::unix::getenv::{closure#0}" },
		{ "_RNvXsf_NtNtCsjrHSEGnQ3l9_3std2io5stdioRNtB5_6StdoutNtB7_5Write9write_fmt",
		  "<&std::io::stdio::Stdout as std::io::Write>::write_fmt" },
		{ "_RINvNtCsgEmfK2I1SDS_4core3ptr13drop_in_placeINtNtB4_6result6ResultINtNtNtNtCsjrHSEGnQ3l9_3std4sync6poison5mutex10MutexGuarduEINtB17_11PoisonErrorB12_EEEB1b_",
		  "core::ptr::drop_in_place::<core::result::Result<std::sync::poison::mutex::MutexGuard<()>, std::sync::poison::PoisonError<std::sync::poison::mutex::MutexGuard<()>>>>" },
		{ "_RINvNtNtCsjrHSEGnQ3l9_3std3sys9backtrace28___rust_begin_short_backtraceFEuuECs6GmmlP4bgsG_1r",
		  "std::sys::backtrace::__rust_begin_short_backtrace::<fn(), ()>" },
		{ "_ZN1r12Acc$LT$T$GT$9push_many17h6328ea700ca828d1E", "r::Acc<T>::push_many" },
		{ "_ZN32_$LT$r..A$u20$as$u20$r..Work$GT$4work17h5f618a1cc4a5bce3E", "<r::A as r::Work>::work" },
		{ "_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17ha86af84d9cc65291E.llvm.13523495155110721004",
		  "std::rt::lang_start::{{closure}}" },
		{ "_ZN4core3ops8function6FnOnce40call_once$u7b$$u7b$vtable.shim$u7d$$u7d$17h0123456789abcdefE",
		  "core::ops::function::FnOnce::call_once{{vtable.shim}}" },
		{ "_ZN3foo3barEv", "foo::bar()" },
		/* BOLTed librustc_driver (rustc 1.95): a ".llvm.N" that is not the
		 * whole suffix stays, as perf 7.2 printed it (suite 90, rustc) */
		{ "_RNvNtNtNtCsjrHSEGnQ3l9_3std3sys6random5linux9getrandom.llvm.3643936799275306673.cold",
		  "std::sys::random::linux::getrandom.llvm.3643936799275306673.cold" },
		{ "_RNvNtNtNtCsjrHSEGnQ3l9_3std3sys6random5linux9getrandom.llvm.3643936799275306673",
		  "std::sys::random::linux::getrandom" },
		{ "_RNvNtNtNtCsjrHSEGnQ3l9_3std3sys6random5linux9getrandom.cold", "std::sys::random::linux::getrandom.cold" },
	};
	static const char *const broken[] = {
		"_RNvB0_3foo", "_RNvCs_3foo5", "_RINvC3fooE", "_R", "_RC999999999999999999999x", "_RNvC3fooBzzzzzzzzzzzz_",
	};

	for (size_t i = 0; i < sizeof(pairs) / sizeof(*pairs); i++) {
		char *dm = dsi_demangle(pairs[i][0]);

		CHECK(dm && !strcmp(dm, pairs[i][1]), "%s: \"%s\", perf 7.2 prints \"%s\"", pairs[i][0], dm ? dm : "(none)",
		      pairs[i][1]);
		free(dm);
	}
	for (size_t i = 0; i < sizeof(broken) / sizeof(*broken); i++) {
		char *dm = dsi_demangle(broken[i]);

		CHECK(!dm, "%s: not a name, left mangled (got \"%s\")", broken[i], dm ? dm : "");
		free(dm);
	}
}

int main(int argc, char **argv)
{
	char dir[] = "/tmp/test_symbols.XXXXXX";

	if (argc < 3) {
		fprintf(stderr, "usage: %s SYMFS KALLSYMS\n", argv[0]);
		return 2;
	}
	ds_set_log(capture_log);
	test_demangle_rust();
	test_elf(argv[1], argv[2], false);
	test_elf(argv[1], argv[2], true);
	test_cache_and_options(argv[1]);
	test_dwarf_scopes(argv[1]);
	test_symtab_sorted(argv[1]);
	test_build_id(argv[1]);
	test_kernel(argv[2]);
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 2;
	}
	test_synthetic_kallsyms(dir);
	test_kallsyms_file(dir, KS_SHAPES);
	test_kallsyms_file(dir, KS_SORTED);
	test_kallsyms_file(dir, KS_LONGNAMES);
	test_kallsyms_file(dir, KS_LONGRUN);
	test_kallsyms_long_line(dir);
	test_jit(dir);
	test_hostile(argv[1], dir);
	test_debug_files(argv[1], dir);
	test_debuginfod(argv[1], dir);
	sh("rm -rf %s/byid %s/bylink %s/other", dir, dir, dir);
	cleanup(dir);
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
