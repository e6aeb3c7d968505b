// SPDX-License-Identifier: MIT
/*
 * dstack symbols: address -> names, printed the way perf 7.2's `perf script`
 * prints them.  The rules below were learnt from perf's behaviour (and
 * checked against the corpus oracles); the code is our own.
 *
 * ELF symbols (symbols/elf.c)
 *   - .symtab, then the same file's .dynsym (perf 7.2 reads both, and
 *     fixes its whole tree up after each), else .dynsym alone.  Kept:
 *     STT_FUNC and STT_GNU_IFUNC with a name, defined (not SHN_UNDEF) in an
 *     SHF_ALLOC section, plus "labels" (named, visible STT_NOTYPE symbols in
 *     a section whose name contains "text").  Zero-sized ones too.  Data
 *     objects (STT_OBJECT in an SHF_ALLOC section) too: perf's tree holds
 *     them, they take part in the fix-ups, and they name the addresses
 *     they hold (perf script -F addr of a page fault: __TMC_END__+0x0).
 *     addr2line's names (below) skip them.
 *   - Sorted by start (ties in symbol-table order); a zero-sized symbol ends
 *     where the next one starts, the last one a page past its page.
 *   - Same start: one survives, as perf's choose_best_symbol(): non-zero size,
 *     then non-weak, then global, then fewer leading '_', then the longer
 *     (demangled) name, then the one that came first (wl: recurse_b at index
 *     14 beats recurse_a at 15).
 *   - Names starting with "_Z" are demangled with libiberty's cplus_demangle_v3 (parameters
 *     included); names are interned, each at its first hit (a load keeps
 *     them where they lie in the file: interning a library's every name
 *     at load cost more than the few a profile hits; docs/performance.md).
 * PLT (symbols/elf.c), as perf's dso__synthesize_plt_symbols()
 *   - A symbol extended over the start of .plt (typically _init) is cut there.
 *   - ".plt" for the header (x86: entry size = sh_entsize if 8 or 16, else 8
 *     or 16 by alignment; header = one entry).  With .plt.sec the header
 *     symbol covers all of .plt and the entries are in .plt.sec.
 *   - One "NAME@plt" per .rela.plt/.rel.plt relocation, sorted by GOT slot
 *     on x86, NAME demangled; IRELATIVE slots take the name of the IFUNC at
 *     the addend; else "offset_0x...@plt".  A lazy .plt with exactly one slot
 *     per relocation has no header (the ".plt" symbol is dropped).
 *   - .plt.got entries ("jmp *disp(%rip)", maybe after endbr64/bnd) are named
 *     after the .rela.dyn relocation of the GOT slot they jump through.
 * Addresses
 *   - Callers pass file offsets; PT_LOAD headers turn them into ELF virtual
 *     addresses; the printed offset is vaddr - symbol start.
 *   - Lookup: the symbol with start <= vaddr < end (binary search); where
 *     symbols overlap, the one perf's red-black tree descent meets
 *     (symbols/symtree.c replays the tree).
 * Inline frames (symbols/dwarf.c), perf's default inline expansion
 *   - Only when an ELF symbol covers the address (perf expands inlines of a
 *     known symbol only) and the file has .debug_info.
 *   - The CU (dwarf_addrdie), then the concrete DIE nesting down to the
 *     innermost scope holding the address (what dwarf_getscopes finds, but
 *     without jumping to abstract origins); each DW_TAG_inlined_subroutine
 *     and the innermost enclosing DW_TAG_subprogram is a frame, innermost
 *     first.
 *   - Frame name: DW_AT_linkage_name / DW_AT_MIPS_linkage_name (through
 *     abstract_origin/specification), demangled; else DW_AT_name; else "??".
 *     A frame named like the ELF symbol is that symbol (not inlined); any
 *     other is "(inlined)", e.g. wl's fault_pages.constprop.0 at 0x16a0
 *     prints as the single frame "fault_pages+0x30 (inlined)".  Every
 *     frame's offset is relative to the ELF symbol's start.
 *   - No DWARF frames for the address: the ELF symbol alone.
 * Files
 *   - symfs + path (nothing else when a symfs is given), else the path
 *     itself.  A build-id known from the
 *     recording that differs from the file's NT_GNU_BUILD_ID disqualifies the
 *     file ("build-id mismatch for PATH", warned once).
 * Kernel (symbols/kallsyms.c)
 *   - kallsyms lines, types perf keeps (T/t, W/w, D/d, B/b, u, l, N, 1),
 *     module symbols skipped; ends are the next symbol's start (the last:
 *     a page past its page); duplicates resolved as for ELF, with 'W' weak
 *     and upper case global (all sizes come from the end fix-up, so in a
 *     same-address group the last one listed wins).  Loaded on first use.
 * JIT: /tmp/perf-PID.map ("START SIZE NAME", hex), under symfs if set, read
 *   once per pid.
 * Caching: each DSO caches its resolved frames per file offset; a repeated
 *   address costs one hash lookup and no allocation.
 * Threads: one helper thread loads the kernel's symbols
 *   (ds_symbols__preload_kernel), then binaries asked for ahead
 *   (ds_symbols__prefetch: an ELF image loads without touching anything
 *   shared, names interned at their first hit); everything else runs on the
 *   caller's thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <libelf.h>

#include "dstack/debuginfod.h"
#include "dstack/log.h"
#include "dstack/symbols.h"
#include "util/grow.h"
#include "util/hashmap.h"
#include "record/spawn.h"
#include "symbols/symbols_int.h"
#include "symbols/jitdump.h"

#define MAX_INLINE 32   /* deeper inline chains are cut (perf has no limit) */

struct ds_dso {
	struct ds_symbols *syms;
	struct ds_dso *next_hash;      /* same path hash */
	struct ds_dso *next_all;
	char *path;
	char *file;                    /* read instead of path (never under the symfs), or NULL */
	uint8_t bid[64];
	size_t bid_len;
	bool loaded;                   /* a load was attempted */
	bool usable;                   /* img holds a good file */
	bool mismatch;                 /* a file was found, with another build-id */
	bool rejected;                 /* a file was found but unusable (corrupt, not regular): warned then */
	bool warned;
	bool di_asked;                 /* its debug file was asked of debuginfod (ds_symbols_opts.debuginfod) */
	char *mismatch_file;           /* the file whose build-id differs (messages name it) */
	struct ds_elf_image img;
	struct dsi_hashmap cache;       /* file offset -> pool index << 8 | count */
	struct ds_frame *pool;
	size_t pool_nr, pool_cap;
	struct ds_dwarf_cache dw;      /* DWARF names and scopes (zeroed: empty) */
	struct ds_srcline_cache *srclines; /* symbols/srcline.c's, NULL until asked */
	/*
	 * A code load of a jitdump (dsi_symbols__jit_dso): its image is the
	 * ELF perf inject --jit would write, built in memory at the first
	 * load (jit_elf, owned); no file is looked for.
	 */
	const struct dsi_jitdump *jd;
	const struct ds_jit_code *jit;
	uint8_t *jit_elf;
};

/* A jitdump read (dsi_symbols__jitdump), by the path its MMAP recorded. */
struct jitdump_node {
	struct jitdump_node *next;
	char *recorded;
	bool ok;                       /* read (maybe with a problem said); false: not found or unreadable */
	struct dsi_jitdump jd;
};

struct ds_symbols {
	char *symfs;
	char *kallsyms;
	char *debuginfod_cache;
	/* ds_symbols_opts.debuginfod, its strings our own copies; di_on: it was given */
	struct ds_debuginfod_opts di;
	bool di_on;
	void (*di_done)(void *ctx, const struct ds_debuginfod_req *r);
	void *di_ctx;
	bool no_inline, no_demangle;
	struct ds_intern in;
	struct dsi_hashmap dsos;        /* path hash -> struct ds_dso * chain */
	struct ds_dso *all;
	struct ds_kallsyms kernel;
	uint64_t generation;           /* bumped when resolved results become stale */
	bool kernel_tried;             /* kernel is loaded (or failed to): kernel_ok says which */
	/*
	 * perf's ref_reloc_sym: the kernel image's reference symbol ("_text")
	 * and its address in the recording ("[kernel.kallsyms]_text"'s
	 * MMAP).  A kallsyms of another boot lists it elsewhere (KASLR): the
	 * image's addresses are looked up moved by the difference, as perf
	 * moves its kallsyms symbols; modules' are not moved.
	 */
	char reloc_sym[64];
	uint64_t reloc_addr;
	int64_t reloc_delta;
	bool reloc_known, reloc_done;
	bool kernel_ok;
	bool kernel_foreign;           /* the running kernel's kallsyms, another kernel recorded: not used */
	bool kernel_bid_checked;
	struct dsi_hashmap jit;         /* pid -> struct ds_textsyms * (0: no file) */
	struct jitdump_node *jitdumps; /* every jitdump read, newest first */
	/*
	 * The helper thread ("dstack-syms"): the kernel's symbols first, if
	 * asked for (it owns s->kernel until kernel_done), then the binaries
	 * queued to load ahead (struct prefetch).  Everything below under
	 * pf_lock.  One thread for both: as two, the binaries' thread woke on
	 * the kernel thread's CPU as it finished and kept it from exiting, and
	 * the first sample waited in its join (docs/performance.md).
	 */
	pthread_mutex_t pf_lock;
	pthread_cond_t pf_cond;        /* something was queued or finished */
	bool kernel_queued, kernel_done;
	struct dsi_hashmap pf_files;    /* path hash of the file -> struct prefetch * chain */
	struct prefetch *pf_all;       /* every request, for freeing */
	struct prefetch *pf_head, *pf_tail; /* queued, oldest first */
	size_t pf_busy;                /* requests queued or loading */
	bool pf_started, pf_quit;
	pthread_t pf_thread;
};

/*
 * A binary named by the recording, loaded on the helper thread before
 * its first lookup.  Its first lookup takes the image (waiting if the load
 * is under way) instead of loading the file; a failed load is not taken,
 * the file is loaded again on the caller's thread, which warns about it in
 * order.
 */
enum prefetch_state { PF_QUEUED, PF_LOADING, PF_DONE, PF_TAKEN };

static void prefetch_stop(struct ds_symbols *s);

struct prefetch {
	struct prefetch *next_hash, *next_all, *next_queued;
	char *file;                    /* what is opened (under the symfs, if any) */
	char *path;                    /* as recorded: where its debug file is looked for */
	enum prefetch_state state;
	bool ok;
	struct ds_elf_image img;
};

static char *dup_or_null(const char *s, bool *fail)
{
	char *d;

	if (!s)
		return NULL;
	d = strdup(s);
	if (!d)
		*fail = true;
	return d;
}

struct ds_symbols *ds_symbols__new(const struct ds_symbols_opts *opts)
{
	struct ds_symbols *s = calloc(1, sizeof(*s));
	bool fail = false;

	if (!s)
		return NULL;
	if (elf_version(EV_CURRENT) == EV_NONE) {
		free(s);
		errno = ENOSYS;
		return NULL;
	}
	pthread_mutex_init(&s->pf_lock, NULL);
	pthread_cond_init(&s->pf_cond, NULL);
	if (opts) {
		/* an empty symfs is the same as none */
		s->symfs = opts->symfs && *opts->symfs ? dup_or_null(opts->symfs, &fail) : NULL;
		s->kallsyms = dup_or_null(opts->kallsyms, &fail);
		s->debuginfod_cache = dup_or_null(opts->debuginfod_cache, &fail);
		s->no_inline = opts->no_inline;
		s->no_demangle = opts->no_demangle;
		if (opts->debuginfod) {
			s->di = *opts->debuginfod;
			s->di.urls = dup_or_null(opts->debuginfod->urls, &fail);
			s->di.cache_dir = dup_or_null(opts->debuginfod->cache_dir, &fail);
			s->di.path = dup_or_null(opts->debuginfod->path, &fail);
			s->di_on = true;
			s->di_done = opts->debuginfod_done;
			s->di_ctx = opts->debuginfod_ctx;
		}
	}
	if (fail) {
		ds_symbols__delete(s);
		errno = ENOMEM;
		return NULL;
	}
	return s;
}

static void dso_unload(struct ds_dso *d)
{
	if (d->img.elf || d->img.fd >= 0)
		dsi_elf__close(&d->img);
	dsi_hashmap__exit(&d->cache);
	dsi_dwarf_cache__exit(&d->dw);
	dsi_srcline_cache__free(d->srclines);   /* its lines came from the image */
	d->srclines = NULL;
	d->pool_nr = 0;
	d->usable = false;
	free(d->jit_elf);   /* after the image that read it */
	d->jit_elf = NULL;
}

static void dso_free(struct ds_dso *d)
{
	dso_unload(d);
	free(d->pool);
	free(d->path);
	free(d->file);
	free(d->mismatch_file);
	free(d);
}

/* ---- kernel symbols, loaded on a helper thread ------------------------- */

static const char *kallsyms_path(const struct ds_symbols *s)
{
	return s->kallsyms ? s->kallsyms : "/proc/kallsyms";
}

static int helper_start(struct ds_symbols *s);

int ds_symbols__preload_kernel(struct ds_symbols *s)
{
	int err = 0;

	if (s->kernel_tried)
		return 0;
	pthread_mutex_lock(&s->pf_lock);
	if (!s->kernel_queued) {
		s->kernel_queued = true;
		err = helper_start(s);
		if (err)
			s->kernel_queued = false;   /* the first lookup loads them then */
		pthread_cond_broadcast(&s->pf_cond);
	}
	pthread_mutex_unlock(&s->pf_lock);
	return err;
}

static bool load_next_queued(struct ds_symbols *s);

/* Kernel symbols ready, on the first lookup: the helper's, or loaded here if it was not asked. */
static void kernel_ready(struct ds_symbols *s)
{
	bool queued;

	if (s->kernel_tried)
		return;
	pthread_mutex_lock(&s->pf_lock);
	queued = s->kernel_queued;
	/*
	 * While the helper reads them, the binaries queued after them load
	 * here: this thread has nothing else to do, and each would otherwise
	 * wait its turn on the helper, behind the kernel's symbols.
	 */
	while (queued && !s->kernel_done)
		if (!load_next_queued(s))
			pthread_cond_wait(&s->pf_cond, &s->pf_lock);
	pthread_mutex_unlock(&s->pf_lock);
	if (!queued)
		s->kernel_ok = dsi_kallsyms__load(&s->kernel, kallsyms_path(s));
	s->kernel_tried = true;
	if (!s->kernel_ok) {
		struct stat st;

		if (!stat(kallsyms_path(s), &st) && !S_ISREG(st.st_mode))   /* refused unopened (dsi_open_regular) */
			ds_warn("%s: not a regular file, not read: no kernel symbols\n", kallsyms_path(s));
		else
			ds_warn("%s: cannot load kernel symbols\n", kallsyms_path(s));
	}
}

void ds_symbols__delete(struct ds_symbols *s)
{
	uint64_t k, v;

	if (!s)
		return;
	while (s->all) {
		struct ds_dso *next = s->all->next_all;

		dso_free(s->all);
		s->all = next;
	}
	dsi_hashmap__exit(&s->dsos);
	for (size_t i = 0; dsi_hashmap__next(&s->jit, &i, &k, &v);) {
		struct ds_textsyms *ts = (struct ds_textsyms *)(uintptr_t)v;

		if (ts) {
			dsi_textsyms__exit(ts);
			free(ts);
		}
	}
	dsi_hashmap__exit(&s->jit);
	while (s->jitdumps) {
		struct jitdump_node *next = s->jitdumps->next;

		dsi_jitdump__exit(&s->jitdumps->jd);
		free(s->jitdumps->recorded);
		free(s->jitdumps);
		s->jitdumps = next;
	}
	prefetch_stop(s);   /* a kernel preload nobody needed: no warning if it failed */
	dsi_kallsyms__exit(&s->kernel);
	dsi_intern__exit(&s->in);
	free(s->symfs);
	free(s->kallsyms);
	free(s->debuginfod_cache);
	free((char *)s->di.urls);
	free((char *)s->di.cache_dir);
	free((char *)s->di.path);
	pthread_mutex_destroy(&s->pf_lock);
	pthread_cond_destroy(&s->pf_cond);
	free(s);
}

/* ---- binaries loaded ahead, on a helper thread ------------------------- */

static uint64_t path_hash(const char *p);

/* @path under the symfs (malloc'd): the file a DSO's load tries first; NULL without a symfs or memory. */
static char *symfs_file(const struct ds_symbols *s, const char *path)
{
	char *full;

	return s->symfs && asprintf(&full, "%s/%s", s->symfs, path) >= 0 ? full : NULL;
}

/* The request for @file, or NULL; under pf_lock. */
static struct prefetch *prefetch_find(struct ds_symbols *s, const char *file)
{
	uint64_t *slot = dsi_hashmap__find(&s->pf_files, path_hash(file));
	struct prefetch *p;

	for (p = slot ? (struct prefetch *)(uintptr_t)*slot : NULL; p; p = p->next_hash)
		if (!strcmp(p->file, file))
			return p;
	return NULL;
}

/* Load one file the way try_file() does, quietly (its caller warns, in order, if it must load it again). */
static bool prefetch_load(const struct ds_symbols *s, struct prefetch *p)
{
	if (dsi_elf__open(&p->img, p->file))
		return false;
	if (!dsi_elf__load(&p->img, !s->no_demangle, s->symfs, p->path, s->debuginfod_cache)) {
		dsi_elf__close(&p->img);
		return false;
	}
	return true;
}

/*
 * The next queued binary loaded by the calling thread; under pf_lock
 * (dropped while loading).  False if none is queued.
 */
static bool load_next_queued(struct ds_symbols *s)
{
	struct prefetch *p;

	do {
		p = s->pf_head;
		if (!p)
			return false;
		s->pf_head = p->next_queued;
		if (!s->pf_head)
			s->pf_tail = NULL;
	} while (p->state != PF_QUEUED);   /* its first lookup came first and loads it itself */
	p->state = PF_LOADING;
	pthread_mutex_unlock(&s->pf_lock);
	bool ok = prefetch_load(s, p);

	pthread_mutex_lock(&s->pf_lock);
	p->ok = ok;
	p->state = PF_DONE;
	s->pf_busy--;
	pthread_cond_broadcast(&s->pf_cond);
	return true;
}

static void *helper_thread(void *arg)
{
	struct ds_symbols *s = arg;

	pthread_setname_np(pthread_self(), "dstack-syms");   /* for top, perf --comm */
	pthread_mutex_lock(&s->pf_lock);
	for (;;) {
		while (!s->pf_quit && !s->pf_head && !(s->kernel_queued && !s->kernel_done))
			pthread_cond_wait(&s->pf_cond, &s->pf_lock);
		if (s->pf_quit)
			break;
		if (s->kernel_queued && !s->kernel_done) {   /* first: the first sample waits for them */
			pthread_mutex_unlock(&s->pf_lock);
			bool ok = dsi_kallsyms__load(&s->kernel, kallsyms_path(s));

			pthread_mutex_lock(&s->pf_lock);
			s->kernel_ok = ok;
			s->kernel_done = true;
			pthread_cond_broadcast(&s->pf_cond);
			continue;
		}
		load_next_queued(s);
	}
	pthread_mutex_unlock(&s->pf_lock);
	return NULL;
}

/* The helper thread, started once; under pf_lock.  0 or -errno (then it never runs). */
static int helper_start(struct ds_symbols *s)
{
	int err;

	if (s->pf_started || s->pf_quit)
		return s->pf_started ? 0 : -EAGAIN;
	err = dsi_spawn_elsewhere(&s->pf_thread, helper_thread, s);
	s->pf_started = !err;
	if (err)   /* no thread: every binary is loaded at its first lookup */
		s->pf_quit = true;
	return -err;
}

int ds_symbols__prefetch(struct ds_symbols *s, const char *path)
{
	struct prefetch *p;
	char *file;
	int err = 0;

	if (!path || path[0] != '/')
		return 0;
	/* the file dso_load() tries first */
	file = s->symfs ? symfs_file(s, path) : strdup(path);
	if (!file)
		return -ENOMEM;
	pthread_mutex_lock(&s->pf_lock);
	if (s->pf_quit || prefetch_find(s, file))
		goto out;
	p = calloc(1, sizeof(*p));
	if (!p || !(p->path = strdup(path))) {
		free(p);
		err = -ENOMEM;
		goto out;
	}
	p->file = file;
	file = NULL;
	p->img.fd = -1;
	uint64_t h = path_hash(p->file), *slot = dsi_hashmap__find(&s->pf_files, h);

	p->next_hash = slot ? (struct prefetch *)(uintptr_t)*slot : NULL;
	if (dsi_hashmap__set(&s->pf_files, h, (uint64_t)(uintptr_t)p)) {
		free(p->file);
		free(p->path);
		free(p);
		err = -ENOMEM;
		goto out;
	}
	p->next_all = s->pf_all;
	s->pf_all = p;
	if (s->pf_tail)
		s->pf_tail->next_queued = p;
	else
		s->pf_head = p;
	s->pf_tail = p;
	s->pf_busy++;
	err = helper_start(s);
	pthread_cond_broadcast(&s->pf_cond);
out:
	pthread_mutex_unlock(&s->pf_lock);
	free(file);
	return err;
}

/*
 * The image prefetched for @file (and recorded @path) into *@img, waiting
 * for a load under way; false if there is none or it failed.
 */
static bool prefetch_take(struct ds_symbols *s, const char *file, const char *path, struct ds_elf_image *img)
{
	struct prefetch *p;
	bool ok = false;

	pthread_mutex_lock(&s->pf_lock);
	p = prefetch_find(s, file);
	if (p && strcmp(p->path, path))
		p = NULL;   /* another recorded path under the same file: its debug-file search differs */
	while (p && p->state == PF_LOADING)
		pthread_cond_wait(&s->pf_cond, &s->pf_lock);
	if (p && p->state == PF_DONE && p->ok) {
		*img = p->img;
		memset(&p->img, 0, sizeof(p->img));
		p->img.fd = p->img.dbg_fd = -1;
		ok = true;
	}
	if (p && p->state == PF_QUEUED)
		s->pf_busy--;   /* the helper will skip it */
	if (p)
		p->state = PF_TAKEN;
	pthread_mutex_unlock(&s->pf_lock);
	return ok;
}

void ds_symbols__prefetch_wait(struct ds_symbols *s)
{
	pthread_mutex_lock(&s->pf_lock);
	while (s->pf_busy && !s->pf_quit)
		pthread_cond_wait(&s->pf_cond, &s->pf_lock);
	pthread_mutex_unlock(&s->pf_lock);
}

/* Stop the helper thread (after its current load) and free every request. */
static void prefetch_stop(struct ds_symbols *s)
{
	pthread_mutex_lock(&s->pf_lock);
	s->pf_quit = true;
	pthread_cond_broadcast(&s->pf_cond);
	pthread_mutex_unlock(&s->pf_lock);
	if (s->pf_started)
		pthread_join(s->pf_thread, NULL);
	s->pf_started = false;
	while (s->pf_all) {
		struct prefetch *next = s->pf_all->next_all;

		if (s->pf_all->state == PF_DONE && s->pf_all->ok)
			dsi_elf__close(&s->pf_all->img);
		free(s->pf_all->file);
		free(s->pf_all->path);
		free(s->pf_all);
		s->pf_all = next;
	}
	s->pf_head = s->pf_tail = NULL;
	dsi_hashmap__exit(&s->pf_files);
}

/* ---- DSO objects ------------------------------------------------------ */

static uint64_t path_hash(const char *p)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	while (*p)
		h = (h ^ (unsigned char)*p++) * 0x100000001b3ULL;
	return dsi_hash64(h);
}

static void set_bid(struct ds_dso *d, const uint8_t *bid, size_t len)
{
	if (len > sizeof(d->bid))
		len = sizeof(d->bid);
	memcpy(d->bid, bid, len);
	d->bid_len = len;
}

struct ds_dso *ds_symbols__dso(struct ds_symbols *s, const char *path,
			       const uint8_t *build_id, size_t bid_len)
{
	uint64_t h = path_hash(path);
	uint64_t *slot = dsi_hashmap__find(&s->dsos, h);
	struct ds_dso *d;

	for (d = slot ? (struct ds_dso *)(uintptr_t)*slot : NULL; d; d = d->next_hash)
		if (!strcmp(d->path, path)) {
			if (build_id && bid_len && !d->bid_len)
				ds_dso__set_build_id(d, build_id, bid_len);
			return d;
		}
	d = calloc(1, sizeof(*d));
	if (!d || !(d->path = strdup(path))) {
		free(d);
		return NULL;
	}
	d->syms = s;
	d->img.fd = -1;
	if (build_id && bid_len)
		set_bid(d, build_id, bid_len);
	d->next_hash = slot ? (struct ds_dso *)(uintptr_t)*slot : NULL;
	if (dsi_hashmap__set(&s->dsos, h, (uint64_t)(uintptr_t)d)) {
		dso_free(d);
		return NULL;
	}
	d->next_all = s->all;
	s->all = d;
	return d;
}

struct ds_dso *ds_symbols__dso_file(struct ds_symbols *s, const char *name, const char *file,
				    const uint8_t *build_id, size_t bid_len)
{
	struct ds_dso *d = ds_symbols__dso(s, name, build_id, bid_len);

	if (d && !d->file && !d->loaded && !(d->file = strdup(file)))
		return NULL;
	return d;
}

const char *ds_dso__path(const struct ds_dso *d)
{
	return d->path;
}

const uint8_t *ds_dso__build_id(const struct ds_dso *d, size_t *len)
{
	if (d->bid_len) {
		*len = d->bid_len;
		return d->bid;
	}
	*len = d->img.bid_len;
	return d->img.bid_len ? d->img.build_id : NULL;
}

static bool bid_differs(const struct ds_dso *d)
{
	return d->bid_len && d->img.bid_len &&
	       (d->bid_len != d->img.bid_len || memcmp(d->bid, d->img.build_id, d->bid_len));
}

void ds_dso__set_build_id(struct ds_dso *d, const uint8_t *build_id, size_t bid_len)
{
	if (!build_id || !bid_len)
		return;
	set_bid(d, build_id, bid_len);
	if (d->usable && bid_differs(d)) {
		/* learnt too late: what was resolved from this file is wrong */
		if (!d->warned)
			ds_warn("build-id mismatch for %s\n", d->path);
		d->warned = true;
		dso_unload(d);
		d->syms->generation++;
	}
}

uint64_t ds_symbols__generation(const struct ds_symbols *s)
{
	return s->generation;
}

/* Try one candidate file; true if it is usable for this DSO. */
static bool try_file(struct ds_dso *d, const char *file)
{
	struct ds_symbols *s = d->syms;

	if (!prefetch_take(s, file, d->path, &d->img)) {
		int err = dsi_elf__open(&d->img, file);

		if (err == -ENOEXEC)
			ds_warn("%s: not an ELF file\n", file);
		else if (err == -EINVAL)   /* a FIFO, a device, a directory: never opened for reading */
			ds_warn("%s: not a regular file, not read\n", file);
		else if (err && err != -ENOENT && err != -ENOTDIR)
			ds_warn("%s: %s\n", file, strerror(-err));
		if (err) {
			d->rejected |= err != -ENOENT && err != -ENOTDIR;
			return false;
		}
		if (!dsi_elf__load(&d->img, !s->no_demangle, s->symfs, d->path, s->debuginfod_cache)) {
			ds_warn("%s: corrupt or unreadable ELF (%s), no symbols\n", file,
				d->img.bad ? d->img.bad : "unreadable");
			dsi_elf__close(&d->img);
			d->rejected = true;
			return false;
		}
	}
	if (bid_differs(d)) {
		d->mismatch = true;
		if (!d->mismatch_file)
			d->mismatch_file = strdup(file);
		dsi_elf__close(&d->img);
		return false;
	}
	return true;
}

/* A jitdump's code: its image built from the dump (the helper never loads one: no warning here). */
static bool jitdump_load(struct ds_dso *d)
{
	struct ds_symbols *s = d->syms;
	size_t len;

	if (dsi_jitdump__elf(d->jd, d->jit, false, &d->jit_elf, &len, NULL))
		return false;
	if (dsi_elf__open_memory(&d->img, d->jit_elf, len) ||
	    !dsi_elf__load(&d->img, !s->no_demangle, NULL, d->path, NULL)) {
		dsi_elf__close(&d->img);
		free(d->jit_elf);
		d->jit_elf = NULL;
		return false;
	}
	return true;
}

/*
 * Open the DSO's file: under the symfs when there is one (perf 7.2 looks
 * nowhere else then: a file the symfs lacks is no symbols, not this
 * machine's copy), else the path itself.  Why it is unusable is said at
 * its first use (dso_warn).
 */
static void dso_open(struct ds_dso *d)
{
	char *full = d->syms->symfs && !d->file && !d->jit ? symfs_file(d->syms, d->path) : NULL;

	if (d->jit) {
		d->usable = jitdump_load(d);
		d->warned = true;   /* its dump's problems were said when it was read */
	} else if (d->file)
		d->usable = try_file(d, d->file);
	else
		d->usable = d->syms->symfs ? full && try_file(d, full) : try_file(d, d->path);
	free(full);
}

/* ---- debuginfod (ds_symbols_opts.debuginfod) --------------------------- */

/* @r's outcome, to the caller's hook. */
static void di_report(struct ds_symbols *s, const struct ds_debuginfod_req *r)
{
	if (s->di_done && r->result != DS_DI_NOT_ASKED)
		s->di_done(s->di_ctx, r);
}

/*
 * Whether a debug file would give @d what it lacks: a .symtab or DWARF,
 * with no installed debug file.  Not for a binary not found: the samples'
 * file offsets are the binary's, and a debug file's program headers do
 * not give them (its sections are NOBITS, its segments' offsets moved).
 */
static bool dso_wants_debug(const struct ds_dso *d)
{
	return d->usable && !d->img.dbg_elf && !(d->img.has_symtab && d->img.dwarf);
}

/*
 * At @d's first load: its debug file asked of the servers when it lacks
 * one (dso_wants_debug), once, by the build-id the recording gave, else
 * its file's own; a file fetched is loaded at once.  One taken from the
 * cache by the load is said too, as the request would say it.
 */
static void dso_debuginfod(struct ds_dso *d)
{
	struct ds_symbols *s = d->syms;
	struct ds_debuginfod_req r = { .path = d->path };
	uint8_t bid[64];
	const uint8_t *known;
	size_t len = 0;
	if (!s->di_on || d->di_asked || d->path[0] != '/' || d->file || d->jit)
		return;
	known = ds_dso__build_id(d, &len);
	if (!known || !len || len > sizeof(bid))
		return;
	if (!(d->usable && d->img.dbg_fetched) && !dso_wants_debug(d))
		return;
	memcpy(bid, known, len);   /* the image's own may go below */
	d->di_asked = true;
	r.build_id = bid;
	r.bid_len = len;
	ds_debuginfod__fetch(&s->di, &r, 1);   /* taken from the cache already: CACHED, no request */
	di_report(s, &r);
	if ((r.result != DS_DI_FETCHED && r.result != DS_DI_CACHED) || d->img.dbg_fetched)
		return;
	/* its debug file is in the cache now: the load finds it */
	dso_unload(d);
	dso_open(d);
}

int ds_symbols__debuginfod_ahead(struct ds_symbols *s, struct ds_dso *const *dsos, size_t n)
{
	struct ds_debuginfod_req *reqs;
	size_t nr = 0;

	if (!s->di_on || !n)
		return 0;
	reqs = calloc(n, sizeof(*reqs));
	if (!reqs)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct ds_dso *d = dsos[i];

		if (d->di_asked || d->loaded || d->file || !d->bid_len ||
		    !ds_debuginfod__wanted(s->symfs, d->path, d->bid, d->bid_len))
			continue;
		d->di_asked = true;
		reqs[nr++] = (struct ds_debuginfod_req){ .path = d->path, .build_id = d->bid, .bid_len = d->bid_len };
	}
	if (nr)
		ds_debuginfod__fetch(&s->di, reqs, nr);
	for (size_t i = 0; i < nr; i++)
		di_report(s, &reqs[i]);
	free(reqs);
	return 0;
}

static void dso_load(struct ds_dso *d)
{
	d->loaded = true;
	dso_open(d);
	dso_debuginfod(d);
}

static void dso_warn(struct ds_dso *d)
{
	if (d->usable || d->warned)
		return;
	d->warned = true;
	/* the file named is the one that failed: a damaged symfs copy was
	 * warned about when it was read, and is not blamed on a build-id */
	if (d->rejected)
		return;   /* what was wrong with it was said: a fallback's build-id is beside the point */
	if (d->mismatch)
		ds_warn("build-id mismatch for %s: %s has another build-id, not used\n",
			d->path, d->mismatch_file ? d->mismatch_file : d->path);
	else
		ds_warn("%s: no symbols (file not found)\n", d->path);
}

bool ds_dso__load(struct ds_dso *d)
{
	if (!d->loaded)
		dso_load(d);
	return d->usable;
}

const struct ds_elf_image *dsi_dso__image(struct ds_dso *d)
{
	return ds_dso__load(d) && !d->mismatch ? &d->img : NULL;
}

struct ds_srcline_cache **dsi_dso__srclines(struct ds_dso *d)
{
	return &d->srclines;
}


/* ---- resolving -------------------------------------------------------- */

static struct ds_frame *pool_reserve(struct ds_dso *d, size_t n)
{
	struct ds_frame *p = n <= SIZE_MAX - d->pool_nr ?
			     dsi_grow(d->pool, &d->pool_cap, d->pool_nr + n, sizeof(*p), 1024) : NULL;

	if (!p)
		return NULL;
	d->pool = p;
	return &d->pool[d->pool_nr];
}

/*
 * A name of the DSO's own symbol: *@name, interned (and demangled if
 * @demangle) on its first use while *@raw says it still points into the
 * ELF image (see struct ds_sym); NULL on ENOMEM.
 */
static const char *interned(struct ds_dso *d, const char **name, bool *raw, bool demangle)
{
	if (*raw) {
		const char *s = dsi_intern__sym(&d->syms->in, *name, demangle);

		if (!s)
			return NULL;
		*name = s;
		*raw = false;
	}
	return *name;
}

/* @found's own copy in the DSO's table (the names are interned there) */
static struct ds_sym *own_sym(struct ds_dso *d, const struct ds_sym *found)
{
	return &d->img.symtab.syms[found - d->img.symtab.syms];
}

/* @sym's name, interned (and demangled) on its first hit (see struct ds_sym); NULL on ENOMEM. */
static const char *sym_name(struct ds_dso *d, const struct ds_sym *found)
{
	struct ds_sym *sym = own_sym(d, found);

	return interned(d, &sym->name, &sym->raw, sym->demangle);
}

/*
 * The name addr2line gives @vaddr by the symbol table: of the symbols
 * starting nearest below it (bfd's better_fit: the closest start wins,
 * whatever its size; perf's @found is another where symbols overlap), at
 * their start or past it.
 */
static const char *a2l_name_at(struct ds_dso *d, const struct ds_sym *found, uint64_t vaddr)
{
	const struct ds_sym *near = dsi_symtab__nearest(&d->img.symtab, vaddr);
	struct ds_sym *sym;

	/* (bfd weighs functions: not the data objects perf's table holds) */
	while (near && near->object)
		near = near > d->img.symtab.syms ? near - 1 : NULL;
	sym = own_sym(d, near ? near : found);

	if (vaddr == sym->start && sym->a2l0_name)
		return interned(d, &sym->a2l0_name, &sym->a2l0_raw, sym->a2l0_demangle);
	if (vaddr != sym->start && sym->a2l_name)
		return interned(d, &sym->a2l_name, &sym->a2l_raw, sym->a2l_demangle);
	return interned(d, &sym->name, &sym->raw, sym->demangle);
}

#define A2L_DWARF_NAME 1   /* in dw.a2l: asked before, named from DWARF since */

/*
 * The name perf 7.2 gets for inline frame @f, which runs binutils'
 * addr2line (one process per DSO, asked each address once, in the order
 * perf meets them).  addr2line does not trust the DWARF name of an
 * "unlinked" function (dwarf.c: die_unlinked) the first time an address
 * falls in it: it answers the ELF symbol holding the address (@elf_name:
 * main for glibc's atoi inlined in a C++ main) and from then on the DWARF
 * name, or the ELF name for good when that symbol starts where the
 * function does.  Only the innermost function is asked that way; callers
 * are named as they stand.  Stateful, like perf's output: the frame cache
 * in front of this keeps each address's first answer.
 */
static const char *a2l_inline_name(struct ds_dso *d, const struct ds_inline_frame *f, bool innermost,
				   const struct ds_sym *sym, const char *elf_name)
{
	uint64_t *named;

	if (!f->unlinked)
		return f->name;
	named = dsi_hashmap__find(&d->dw.a2l, f->die);
	if (named)
		return *named == A2L_DWARF_NAME ? f->name : (const char *)(uintptr_t)*named;
	if (!innermost)
		return f->name;
	/* on ENOMEM the next address in it is named the same way again */
	dsi_hashmap__set(&d->dw.a2l, f->die,
			sym->start == f->low ? (uint64_t)(uintptr_t)elf_name : A2L_DWARF_NAME);
	return elf_name;
}

/* Frames for @vaddr into @out (MAX_INLINE slots); returns the count. */
static size_t compute_frames(struct ds_dso *d, uint64_t vaddr, struct ds_frame *out)
{
	struct ds_symbols *s = d->syms;
	const struct ds_sym *sym = dsi_symtab__find(&d->img.symtab, vaddr);
	struct ds_inline_frame inl[MAX_INLINE];
	const char *alias;
	size_t n = 0;

	if (!sym || !sym_name(d, sym)) {
		out[0] = (struct ds_frame){ .name = NULL };
		return 1;
	}
	if (sym->object) {   /* data: no function, inlined or not, of addr2line's */
		out[0] = (struct ds_frame){ .name = sym->name, .offset = vaddr - sym->start, .elf_name = sym->name,
					    .size = sym->end - sym->start, .object = true };
		return 1;
	}
	if (d->img.dwarf && !s->no_inline)
		n = dsi_dwarf__inlines(&d->img, vaddr, &s->in, !s->no_demangle,
				      &d->dw, inl, MAX_INLINE);
	if (n == 0 && d->img.dwarf && !s->no_inline && (alias = a2l_name_at(d, sym, vaddr)) && alias != sym->name) {
		/*
		 * No DWARF function here (a file with DWARF for some of its code,
		 * e.g. a static binary's libc parts): perf's inline lookup asks
		 * addr2line, which names another alias of the symbol ("getrlimit"
		 * for __new_getrlimit), and perf prints that, as inlined, in place
		 * of the symbol.
		 */
		out[0] = (struct ds_frame){ .name = alias, .offset = vaddr - sym->start, .inlined = true,
					    .elf_name = sym->name, .size = sym->end - sym->start };
		return 1;
	}
	if (n == 0) {
		out[0] = (struct ds_frame){ .name = sym->name, .offset = vaddr - sym->start, .elf_name = sym->name,
					    .size = sym->end - sym->start };
		return 1;
	}
	alias = a2l_name_at(d, sym, vaddr);
	for (size_t i = 0; i < n; i++) {
		const char *name = a2l_inline_name(d, &inl[i], i == 0, sym, alias ? alias : sym->name);

		out[i] = (struct ds_frame){
			.name = name,
			.offset = vaddr - sym->start,
			/* interned: equal names are equal pointers */
			.inlined = name != sym->name,
			.elf_name = sym->name,
			.size = sym->end - sym->start,
		};
	}
	return n;
}

static size_t copy_out(const struct ds_frame *src, size_t n, struct ds_frame *frames, size_t max)
{
	if (n > max)
		n = max;
	memcpy(frames, src, n * sizeof(*frames));
	return n;
}

size_t ds_dso__resolve(struct ds_dso *d, uint64_t file_off, struct ds_frame *frames, size_t max)
{
	struct ds_frame tmp[MAX_INLINE], *slot;
	uint64_t *hit, vaddr;
	size_t n;

	if (!max)
		return 0;
	ds_dso__load(d);
	dso_warn(d);
	if (!d->usable || !dsi_elf__off_to_vaddr(&d->img, file_off, &vaddr)) {
		frames[0] = (struct ds_frame){ .name = NULL };
		return 1;
	}
	hit = dsi_hashmap__find(&d->cache, file_off);
	if (hit)
		return copy_out(&d->pool[*hit >> 8], *hit & 0xff, frames, max);
	n = compute_frames(d, vaddr, tmp);
	slot = pool_reserve(d, n);
	if (slot && !dsi_hashmap__set(&d->cache, file_off, (uint64_t)d->pool_nr << 8 | n)) {
		memcpy(slot, tmp, n * sizeof(*slot));
		d->pool_nr += n;
	}
	return copy_out(tmp, n, frames, max);
}

/* ---- kernel and JIT --------------------------------------------------- */

static bool textsyms_frame(const struct ds_textsyms *ts, uint64_t addr, struct ds_frame *f)
{
	const struct ds_sym *sym = dsi_symtab__find(&ts->tab, addr);

	if (!sym)
		return false;
	*f = (struct ds_frame){ .name = sym->name, .offset = addr - sym->start, .elf_name = sym->name,
				.size = sym->end - sym->start };
	return true;
}

void ds_symbols__kernel_reloc(struct ds_symbols *s, const char *sym, uint64_t addr)
{
	if (s->reloc_known || !sym[0] || strlen(sym) >= sizeof(s->reloc_sym))
		return;
	strcpy(s->reloc_sym, sym);
	s->reloc_addr = addr;
	s->reloc_known = true;
}

/* The kernel image's move from the recording to the kallsyms file: 0 unless both know the reference symbol. */
static int64_t kernel_delta(struct ds_symbols *s)
{
	uint64_t at;

	if (!s->reloc_done) {
		s->reloc_done = true;
		if (s->kernel_ok && s->reloc_known && dsi_kallsyms__function_addr(&s->kernel, s->reloc_sym, &at) && at)
			s->reloc_delta = (int64_t)(at - s->reloc_addr);
	}
	return s->reloc_delta;
}

/* The kallsyms symbol holding @addr (the file's address) into @frame. */
static bool kallsyms_frame(struct ds_symbols *s, uint64_t addr, struct ds_frame *frame)
{
	/* no cache here: ds_machine's frame cache is in front of this */
	const char *name;
	uint64_t start;

	if (!dsi_kallsyms__find(&s->kernel, addr, &name, &start))
		return false;
	*frame = (struct ds_frame){ .name = name, .offset = addr - start, .elf_name = name };
	return true;
}

/* The running kernel's build-id, from its notes (/sys/kernel/notes); 0 or -errno. */
static int running_kernel_build_id(uint8_t *bid, size_t *len)
{
	uint8_t notes[4096];
	ssize_t n;
	int fd = open("/sys/kernel/notes", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	n = read(fd, notes, sizeof(notes));
	close(fd);
	return n > 0 ? dsi_note_build_id(notes, (size_t)n, bid, len) : -ENOENT;
}

void ds_symbols__recorded_kernel(struct ds_symbols *s, const uint8_t *bid, size_t len)
{
	uint8_t run[20];
	size_t run_len = 0;

	if (s->kallsyms || s->kernel_bid_checked || !len)
		return;
	s->kernel_bid_checked = true;
	if (running_kernel_build_id(run, &run_len) || (run_len == len && !memcmp(run, bid, len)))
		return;
	s->kernel_foreign = true;
	ds_warn("the recording's kernel is not the running one (another build-id): no kernel symbols "
		"(give its kallsyms with --kallsyms)\n");
}

bool ds_symbols__kernel(struct ds_symbols *s, uint64_t addr, struct ds_frame *frame)
{
	kernel_ready(s);
	return !s->kernel_foreign && kallsyms_frame(s, addr + (uint64_t)kernel_delta(s), frame);
}

bool ds_symbols__kernel_known(struct ds_symbols *s)
{
	kernel_ready(s);
	return s->kernel_ok && dsi_kallsyms__any(&s->kernel) && !s->kernel_foreign;
}

bool ds_symbols__kernel_module(struct ds_symbols *s, const char *module, uint64_t addr, struct ds_frame *frame)
{
	size_t len = strlen(module);
	const char *name;
	uint64_t start;

	kernel_ready(s);
	if (s->kernel_foreign)
		return false;
	if (len > 2 && module[0] == '[' && module[len - 1] == ']') {
		module++;
		len -= 2;
	}
	if (!dsi_kallsyms__find_module(&s->kernel, module, len, addr, &name, &start))
		return false;
	*frame = (struct ds_frame){ .name = name, .offset = addr - start, .elf_name = name };
	return true;
}

static struct ds_textsyms *jit_load(struct ds_symbols *s, int pid)
{
	struct ds_textsyms *ts = calloc(1, sizeof(*ts));
	char *path = NULL;
	int rc;

	if (!ts)
		return NULL;
	rc = asprintf(&path, "%s/tmp/perf-%d.map", s->symfs ? s->symfs : "", pid);
	if (rc < 0 || !dsi_perfmap__load(ts, path)) {
		free(ts);
		ts = NULL;
	}
	free(rc < 0 ? NULL : path);
	return ts;
}

bool ds_symbols__jit(struct ds_symbols *s, int pid, uint64_t addr, struct ds_frame *frame)
{
	bool found;
	uint64_t *v = dsi_hashmap__upsert(&s->jit, (uint64_t)(uint32_t)pid, 0, &found);

	if (!v)
		return false;
	if (!found)
		*v = (uint64_t)(uintptr_t)jit_load(s, pid);
	return *v && textsyms_frame((const struct ds_textsyms *)(uintptr_t)*v, addr, frame);
}

/* ---- jitdumps ------------------------------------------------------------ */

const struct dsi_jitdump *dsi_symbols__jitdump(struct ds_symbols *s, const char *recorded)
{
	struct jitdump_node *n;
	char *file;

	for (n = s->jitdumps; n; n = n->next)
		if (!strcmp(n->recorded, recorded))
			return n->ok ? &n->jd : NULL;
	if (!(n = calloc(1, sizeof(*n))) || !(n->recorded = strdup(recorded))) {
		free(n);
		return NULL;
	}
	n->next = s->jitdumps;
	s->jitdumps = n;
	file = s->symfs ? symfs_file(s, recorded) : strdup(recorded);
	if (!file)
		return NULL;
	n->ok = dsi_jitdump__read(&n->jd, file) == 0 && (n->jd.recorded = strdup(recorded));
	if (n->jd.problem[0])
		ds_warn("%s\n", n->jd.problem);
	free(file);
	return n->ok ? &n->jd : NULL;
}

struct ds_dso *dsi_symbols__jit_dso(struct ds_symbols *s, const char *name, const struct dsi_jitdump *jd,
				    const struct ds_jit_code *c)
{
	struct ds_dso *d = ds_symbols__dso(s, name, NULL, 0);

	if (d && !d->loaded && !d->file && !d->jit) {
		d->jd = jd;
		d->jit = c;
	}
	return d;
}

bool dsi_dso__is_jitdump(const struct ds_dso *d)
{
	return d && d->jit;
}

const struct ds_jit_code *dsi_dso__jit_code(const struct ds_dso *d, const struct dsi_jitdump **jd)
{
	if (!d || !d->jit)
		return NULL;
	*jd = d->jd;
	return d->jit;
}
