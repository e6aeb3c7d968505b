// SPDX-License-Identifier: MIT
/*
 * Address maps, from MMAP and MMAP2 records (the kernel's and each
 * process's), and an address resolved through them into a DSO and its
 * frames (ds_machine__resolve).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/grow.h"
#include "process/machine_int.h"
#include "symbols/jitdump.h"

/* ---- the sorted maps, in chunks -------------------------------------------- */

static _Atomic uint64_t maps_stamps;

static void maps__changed(struct ds_maps *mp)
{
	mp->stamp = atomic_fetch_add(&maps_stamps, 1) + 1;
}

void dsi_maps__init(struct ds_maps *mp, size_t *live)
{
	*mp = (struct ds_maps){ .refs = 1, .live = live };
	maps__changed(mp);
}

void dsi_maps__exit(struct ds_maps *mp)
{
	if (mp->live)
		*mp->live -= mp->nr;
	for (size_t c = 0; c < mp->nr_chunks; c++)
		free(mp->c[c]);
	free(mp->c);
}

struct ds_maps *dsi_maps__new(size_t *live)
{
	struct ds_maps *mp = malloc(sizeof(*mp));

	if (mp)
		dsi_maps__init(mp, live);
	return mp;
}

void dsi_maps__put(struct ds_maps *mp)
{
	if (mp && --mp->refs == 0) {
		dsi_maps__exit(mp);
		free(mp);
	}
}

static struct ds_maps_chunk *chunk_new(size_t cap)
{
	struct ds_maps_chunk *ch = malloc(sizeof(*ch) + cap * sizeof(ch->v[0]));

	if (ch)
		*ch = (struct ds_maps_chunk){ .cap = cap };
	return ch;
}

struct ds_maps *dsi_maps__clone(const struct ds_maps *src)
{
	struct ds_maps *mp = dsi_maps__new(src->live);
	bool jit = false;

	if (!mp || !src->nr)
		return mp;
	mp->c = malloc(src->nr_chunks * sizeof(*mp->c));
	if (!mp->c) {
		free(mp);
		return NULL;
	}
	mp->cap_chunks = src->nr_chunks;
	for (size_t c = 0; c < src->nr_chunks; c++) {
		const struct ds_maps_chunk *from = src->c[c];

		if (!(mp->c[c] = chunk_new(from->nr))) {
			dsi_maps__put(mp);
			return NULL;
		}
		memcpy(mp->c[c]->v, from->v, from->nr * sizeof(from->v[0]));
		mp->c[c]->nr = from->nr;
		mp->nr_chunks++;
		mp->nr += from->nr;
		if (mp->live)
			*mp->live += from->nr;
		for (size_t i = 0; i < from->nr; i++)
			jit |= from->v[i].jit;
	}
	/*
	 * The same maps resolve an address the same way: a forked child shares
	 * its parent's cached frames and chains until either changes (each
	 * change makes a new stamp), unless a map's symbols come from the
	 * process's own perf map (/tmp/perf-PID.map: another pid's file)
	 */
	if (!jit)
		mp->stamp = src->stamp;
	return mp;
}

/* A position among the maps: chunk c, index i in it (c == nr_chunks: the end). */
struct mpos {
	size_t c, i;
};

static struct ds_map *at(const struct ds_maps *mp, struct mpos p)
{
	return p.c < mp->nr_chunks ? &mp->c[p.c]->v[p.i] : NULL;
}

/* The position after @p. */
static struct mpos next(const struct ds_maps *mp, struct mpos p)
{
	if (++p.i >= mp->c[p.c]->nr)
		p = (struct mpos){ p.c + 1, 0 };
	return p;
}

/* The first map whose end is above @addr (its position; the end if none). */
static struct mpos maps__lower(const struct ds_maps *mp, uint64_t addr)
{
	size_t lo = 0, hi = mp->nr_chunks;

	while (lo < hi) {   /* the first chunk whose last map ends above addr */
		size_t mid = (lo + hi) / 2;
		const struct ds_maps_chunk *ch = mp->c[mid];

		if (ch->v[ch->nr - 1].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == mp->nr_chunks)
		return (struct mpos){ lo, 0 };
	const struct ds_maps_chunk *ch = mp->c[lo];
	size_t l = 0, h = ch->nr;

	while (l < h) {
		size_t mid = (l + h) / 2;

		if (ch->v[mid].end <= addr)
			l = mid + 1;
		else
			h = mid;
	}
	return (struct mpos){ lo, l };
}

/* The last map ending at or below @addr, NULL if none. */
static const struct ds_map *maps__before(const struct ds_maps *mp, uint64_t addr)
{
	struct mpos p = maps__lower(mp, addr);

	if (p.i)
		return &mp->c[p.c]->v[p.i - 1];
	return p.c ? &mp->c[p.c - 1]->v[mp->c[p.c - 1]->nr - 1] : NULL;
}

const struct ds_map *dsi_maps__find(struct ds_maps *mp, uint64_t addr)
{
	struct mpos p = { mp->last_c, mp->last_i };
	const struct ds_map *m;

	if (p.c < mp->nr_chunks && p.i < mp->c[p.c]->nr && (m = at(mp, p))->start <= addr && addr < m->end)
		return m;
	p = maps__lower(mp, addr);
	m = at(mp, p);
	if (m && m->start <= addr) {
		mp->last_c = p.c;
		mp->last_i = p.i;
		return m;
	}
	return NULL;
}

/* Remove the map at @p (whose chunk goes when it empties); @p then names the map after it. */
static void erase(struct ds_maps *mp, struct mpos *p)
{
	struct ds_maps_chunk *ch = mp->c[p->c];

	memmove(&ch->v[p->i], &ch->v[p->i + 1], (ch->nr - p->i - 1) * sizeof(ch->v[0]));
	ch->nr--;
	mp->nr--;
	if (mp->live)
		--*mp->live;
	if (!ch->nr) {
		free(ch);
		memmove(&mp->c[p->c], &mp->c[p->c + 1], (mp->nr_chunks - p->c - 1) * sizeof(*mp->c));
		mp->nr_chunks--;
		*p = (struct mpos){ p->c, 0 };
	} else if (p->i >= ch->nr) {
		*p = (struct mpos){ p->c + 1, 0 };
	}
}

/* Room for one more chunk pointer at index @c, filled with @ch.  0 or -ENOMEM. */
static int chunk_insert(struct ds_maps *mp, size_t c, struct ds_maps_chunk *ch)
{
	struct ds_maps_chunk **n = dsi_grow(mp->c, &mp->cap_chunks, mp->nr_chunks + 1, sizeof(*n), 4);

	if (!n)
		return -ENOMEM;
	mp->c = n;
	memmove(&n[c + 1], &n[c], (mp->nr_chunks - c) * sizeof(*n));
	n[c] = ch;
	mp->nr_chunks++;
	return 0;
}

/*
 * Insert @m at @p (before the map there; at the end of the chunk before
 * the end).  A full chunk splits in two.  0 or -ENOMEM (nothing changed);
 * *@p names the new map.
 */
static int insert_at(struct ds_maps *mp, struct mpos *p, const struct ds_map *m)
{
	struct ds_maps_chunk *ch;

	if (!mp->nr_chunks) {
		if (!(ch = chunk_new(4)) || chunk_insert(mp, 0, ch)) {
			free(ch);
			return -ENOMEM;
		}
		*p = (struct mpos){ 0, 0 };
	} else if (p->c == mp->nr_chunks) {
		*p = (struct mpos){ p->c - 1, mp->c[p->c - 1]->nr };
	}
	ch = mp->c[p->c];
	if (ch->nr == DS_MAPS_CHUNK) {   /* split: the upper half to a chunk of its own */
		struct ds_maps_chunk *hi = chunk_new(DS_MAPS_CHUNK);
		size_t half = ch->nr / 2;

		if (!hi || chunk_insert(mp, p->c + 1, hi)) {
			free(hi);
			return -ENOMEM;
		}
		memcpy(hi->v, &ch->v[half], (ch->nr - half) * sizeof(ch->v[0]));
		hi->nr = ch->nr - half;
		ch->nr = half;
		if (p->i > half)
			*p = (struct mpos){ p->c + 1, p->i - half };
		ch = mp->c[p->c];
	}
	if (ch->nr == ch->cap) {
		size_t cap = ch->cap * 2 < DS_MAPS_CHUNK ? ch->cap * 2 : DS_MAPS_CHUNK;
		struct ds_maps_chunk *n = realloc(ch, sizeof(*n) + cap * sizeof(n->v[0]));

		if (!n)
			return -ENOMEM;
		n->cap = cap;
		mp->c[p->c] = ch = n;
	}
	memmove(&ch->v[p->i + 1], &ch->v[p->i], (ch->nr - p->i) * sizeof(ch->v[0]));
	ch->v[p->i] = *m;
	ch->nr++;
	mp->nr++;
	if (mp->live)
		++*mp->live;
	return 0;
}

/*
 * Insert @nm, cutting away whatever part of older maps it covers: the map
 * straddling its start keeps its head (and its tail, past @nm's end, as a
 * map of its own), maps inside it go, the one straddling its end keeps its
 * tail.  0 or -ENOMEM.
 */
static int maps__insert(struct ds_maps *mp, const struct ds_map *nm)
{
	struct mpos p;
	struct ds_map *m;
	int err;

	if (nm->end <= nm->start)
		return 0;
	p = maps__lower(mp, nm->start);
	if ((m = at(mp, p)) && m->start < nm->start) {
		struct ds_map tail = *m;

		m->end = nm->start;
		if (tail.end > nm->end) {
			tail.pgoff += nm->end - tail.start;
			tail.start = nm->end;
			p = next(mp, p);
			if ((err = insert_at(mp, &p, &tail)))
				return err;
		} else {
			p = next(mp, p);
		}
	}
	while ((m = at(mp, p)) && m->end <= nm->end)
		erase(mp, &p);   /* fully covered: dropped */
	if (m && m->start < nm->end) {
		m->pgoff += nm->end - m->start;
		m->start = nm->end;
	}
	if ((err = insert_at(mp, &p, nm)))
		return err;
	mp->last_c = p.c;
	mp->last_i = p.i;
	maps__changed(mp);
	return 0;
}

/* ---- MMAP records ------------------------------------------------------ */

static bool is_anon(const char *name)
{
	return !strncmp(name, "//anon", 6) || !strncmp(name, "[anon", 5) ||
	       !strncmp(name, "/memfd:", 7) || !strncmp(name, "/dev/zero", 9);
}

/* perf maps these 1:1 (identity__map_ip): their addresses print absolute */
static bool is_identity_mapped(const char *name)
{
	return !strcmp(name, "//anon") || !strncmp(name, "/dev/zero", 9) ||
	       !strncmp(name, "/anon_hugepage", 14) || !strncmp(name, "[stack", 6) ||
	       !strncmp(name, "/SYSV", 5) || !strcmp(name, "[heap]");
}

static bool is_special(const char *name)
{
	return name[0] == '[' || is_anon(name) || !name[0];
}

/*
 * perf names an executable anonymous map (and an executable stack, heap or
 * SysV segment) after the process's perf map, /tmp/perf-PID.map, whether
 * that file exists or not: JIT code is found there.  An MMAP (not MMAP2)
 * record has no prot: it is executable unless marked data.
 */
static bool perf_map_named(const struct ds_event *ev, const struct ds_mmap_event *me)
{
	const char *f = me->filename;
	bool exec = ev->hdr->type == DS_REC_MMAP ? !(ev->hdr->misc & DS_MISC_MMAP_DATA) : (me->prot & 4) != 0;   /* PROT_EXEC */

	return exec && (!strcmp(f, "//anon") || !strncmp(f, "/dev/zero", 9) || !strncmp(f, "/anon_hugepage", 14) ||
			!strncmp(f, "[stack", 6) || !strncmp(f, "/SYSV", 5) || !strcmp(f, "[heap]"));
}

/* The map @me describes, named as perf names it (but for the perf map of user JIT code). */
static struct ds_map machine__map_of(struct ds_machine *m, const struct ds_mmap_event *me)
{
	struct ds_map nm = { .start = me->start, .end = me->start + me->len, .pgoff = me->pgoff };

	nm.name = ds_machine__intern(m, me->filename);
	/*
	 * perf names the vDSO of a 32-bit task "[vdso32]" (it asks the task's
	 * ELF class); a 32-bit task's address space, its vDSO included, lies
	 * below 4 GiB, where a 64-bit task's vDSO never is.
	 */
	if (!strcmp(me->filename, "[vdso]") && nm.end <= (1ULL << 32))
		nm.name = ds_machine__intern(m, "[vdso32]");
	/* perf's map__new maps the vDSO from its start whatever the record's
	 * pgoff (older kernels wrote its address there) */
	if (!strcmp(me->filename, "[vdso]"))
		nm.pgoff = 0;
	nm.jit = is_anon(me->filename);
	nm.identity = is_identity_mapped(me->filename);
	return nm;
}

/* Number user map name @name in the order of first mmap (ds_machine__map_name_seq). */
static int machine__note_map_name(struct ds_machine *m, const char *name)
{
	if (dsi_hashmap__find(&m->map_names, (uintptr_t)name))
		return 0;
	return dsi_hashmap__set(&m->map_names, (uintptr_t)name, m->map_names.len + 1) ? -ENOMEM : 0;
}

/*
 * The kernel image's MMAP, "[kernel.kallsyms]_text" with the symbol's
 * address as pgoff (perf's ref_reloc_sym): given to the symbols, which
 * move a kallsyms file of another boot by it.
 */
static void note_kernel_reloc(struct ds_machine *m, const struct ds_mmap_event *me)
{
	static const char prefix[] = "[kernel.kallsyms]";

	if (m->syms && !strncmp(me->filename, prefix, sizeof(prefix) - 1)) {
		ds_symbols__kernel_reloc(m->syms, me->filename + sizeof(prefix) - 1, me->pgoff);
		if (me->has_build_id)
			ds_symbols__recorded_kernel(m->syms, me->build_id, me->build_id_size);
	}
}

int dsi_machine__process_mmap(struct ds_machine *m, const struct ds_event *ev)
{
	struct ds_mmap_event me;
	const char *why;
	struct ds_map nm;
	struct ds_thread *t;

	if (ds_mmap__parse(ev->evsel, ev->hdr, &me, &why))
		return 0;
	if (me.len == 0 || me.start + me.len < me.start)
		return 0;
	nm = machine__map_of(m, &me);
	if ((ev->hdr->misc & DS_MISC_CPUMODE_MASK) == DS_MISC_KERNEL) {
		note_kernel_reloc(m, &me);
		return maps__insert(&m->kmaps, &nm);
	}
	if (perf_map_named(ev, &me)) {
		char name[64];

		snprintf(name, sizeof(name), "/tmp/perf-%u.map", me.pid);
		nm.name = ds_machine__intern(m, name);
	}
	if (m->syms && dsi_jitdump__name_matches(me.filename, me.pid)) {
		int err = dsi_machine__jitdump_mmap(m, me.pid, me.filename, ev->sample.time);

		if (err)
			return err;
	}
	if (!is_special(me.filename))
		nm.dso = ds_symbols__dso(m->syms, me.filename, me.has_build_id ? me.build_id : NULL,
					 me.has_build_id ? me.build_id_size : 0);
	t = ds_machine__thread(m, (int32_t)me.pid, (int32_t)me.tid);
	if (!t)
		return -ENOMEM;
	return dsi_machine__insert_user_map(m, t, &nm);
}

int dsi_machine__insert_user_map(struct ds_machine *m, struct ds_thread *t, const struct ds_map *map)
{
	struct ds_map nm = *map;

	if (machine__note_map_name(m, nm.name))
		return -ENOMEM;
	/*
	 * perf forgets a thread at its EXIT: what it maps after (an exec's
	 * image) goes to the new thread perf makes, whose maps perf script
	 * resolves the later samples with (ds_machine__script_thread)
	 */
	if ((t->exit_time || t->exited_untimed) && (t->pid < 0 || t->pid == t->tid)) {
		if (!t->reborn && !(t->reborn = dsi_maps__new(&m->live_maps)))
			return -ENOMEM;
		int err = maps__insert(t->reborn, &nm);

		if (err)
			return err;
	}
	if (m->max_maps && m->live_maps >= m->max_maps)
		dsi_machine__release_exited_maps(m);
	if (m->max_maps && m->live_maps >= m->max_maps) {
		m->maps_dropped++;   /* (a flood of maps, hostile or not: the budget's, said at the end) */
		return 0;
	}
	return maps__insert(t->maps, &nm);
}

/* ---- address resolution ------------------------------------------------ */

static void unknown(struct ds_resolved *out, const char *dso)
{
	out->dso = dso;
	out->addr = out->ip;
	out->map_start = out->map_end = out->map_pgoff = 0;
	out->dso_obj = NULL;
	out->nr_frames = 1;
	out->frames[0] = (struct ds_frame){ .name = NULL };
}

/*
 * perf's name of a kernel map's DSO from its file name @path (its
 * kmod_path): a module file's "[virtio_blk]" ("virtio-blk.ko", compressed
 * ".ko.gz" or ".ko.xz" too; perf 7.2 reads no other suffix), a "[name]"
 * as it is, anything else its base name; '-' made '_'.  Into @buf.
 * Returns whether @path names a module.
 */
static bool kmod_name(const char *path, char *buf, size_t n)
{
	const char *base = strrchr(path, '/'), *ext = strrchr(path, '.');
	bool kmod = false;
	size_t len;

	base = base ? base + 1 : path;
	if (base[0] == '[') {
		snprintf(buf, n, "%s", base);
		return strncmp(base, "[kernel.kallsyms]", 17) && strncmp(base, "[guest.kernel.kallsyms", 22) &&
		       strncmp(base, "[vdso]", 6) && strncmp(base, "[vdso32]", 8) && strncmp(base, "[vdsox32]", 9) &&
		       strncmp(base, "[vsyscall]", 10);
	}
	if (ext && (!strcmp(ext, ".gz") || !strcmp(ext, ".xz")))
		ext -= 3;
	kmod = ext && ext > base && !strncmp(ext, ".ko", 3);
	len = kmod ? (size_t)(ext - base) : strlen(base);
	snprintf(buf, n, kmod ? "[%.*s]" : "%.*s", (int)(len < n ? len : n), base);
	for (char *c = buf; *c; c++)
		if (*c == '-')
			*c = '_';
	return kmod;
}

/* The interned kmod_name() of @path. */
static const char *module_name(struct ds_machine *m, const char *path)
{
	char buf[256];

	kmod_name(path, buf, sizeof(buf));
	return ds_machine__intern(m, buf);
}

const char *ds_dso__short_name(const char *dso, bool kernel, char *buf, size_t n)
{
	const char *b = strrchr(dso, '/');

	if (kernel && dso[0] == '/') {
		if (kmod_name(dso, buf, n))
			return buf;
		if (strstr(dso, "vmlinux"))
			return "[kernel.vmlinux]";
	}
	return dso[0] == '[' || !b ? dso : b + 1;
}

void ds_machine__set_max_maps(struct ds_machine *m, size_t max)
{
	m->max_maps = max;
}

uint64_t ds_machine__maps_dropped(const struct ds_machine *m)
{
	return m->maps_dropped;
}

int ds_machine__list_dso(struct ds_machine *m, uint16_t misc, const char *filename)
{
	const char *name, *short_name;
	char buf[256];
	bool kmod;

	if ((misc & DS_MISC_CPUMODE_MASK) != DS_MISC_KERNEL)
		return 0;
	/* a module's short name is its "[name]" (module_name()'s), the key of its maps' lookup */
	kmod = kmod_name(filename, buf, sizeof(buf));
	name = ds_machine__intern(m, filename);
	short_name = ds_machine__intern(m, kmod ? buf : ds_dso__short_name(filename, true, buf, sizeof(buf)));
	if (!name || !short_name)
		return -ENOMEM;
	if (dsi_hashmap__set(&m->kernel_names, (uintptr_t)name, (uintptr_t)short_name))
		return -ENOMEM;
	if (kmod) {
		if (!dsi_hashmap__find(&m->listed_modules, (uintptr_t)short_name) &&
		    dsi_hashmap__set(&m->listed_modules, (uintptr_t)short_name, (uintptr_t)name))
			return -ENOMEM;
	} else if (!m->kernel_listed) {
		m->kernel_dso = name;
		m->kernel_listed = true;
	}
	return 0;
}

const char *ds_machine__kernel_dso(const struct ds_machine *m)
{
	return m->kernel_dso;
}

const char *ds_machine__dso_short_name(struct ds_machine *m, const char *dso)
{
	uint64_t *listed = dsi_hashmap__find(&m->kernel_names, (uintptr_t)dso);
	int pid, n = 0;

	if (listed)
		return (const char *)(uintptr_t)*listed;
	if (!strncmp(dso, "/tmp/perf-", 10) && sscanf(dso + 10, "%d.map%n", &pid, &n) == 1 && n && !dso[10 + n]) {
		char buf[32];

		snprintf(buf, sizeof(buf), "[JIT] tid %d", pid);
		return ds_machine__intern(m, buf);
	}
	return ds_dso__short_name(dso, false, NULL, 0);
}

/* A kernel map of a module: its path, or (perf when it found no module file) its "[name]". */
static bool module_map(const struct ds_map *map)
{
	return map->name[0] == '/' || (map->name[0] == '[' && strncmp(map->name, "[kernel.kallsyms]", 17));
}

/* @ip in the kernel's maps into @out; false: in none (dso "[unknown]") */
static bool resolve_kernel(struct ds_machine *m, uint64_t ip, struct ds_resolved *out)
{
	const struct ds_map *map = dsi_maps__find(&m->kmaps, ip);

	out->kernel = true;
	if (map && module_map(map)) {
		const char *mod = map->name[0] == '[' ? map->name : module_name(m, map->name);
		uint64_t *listed = mod ? dsi_hashmap__find(&m->listed_modules, (uintptr_t)mod) : NULL;

		/* perf's DSO of the module is the build-id table's, named by its path, where it lists one */
		unknown(out, listed ? (const char *)(uintptr_t)*listed : mod ? mod : "[unknown]");
		/* perf's address in a module: its map's (an unknown line prints "[mod][17f6]") */
		out->addr = ip - map->start + map->pgoff;
		out->map_start = map->start;
		out->map_end = map->end;
		out->map_pgoff = map->pgoff;
		ds_symbols__kernel_module(m->syms, mod, ip, &out->frames[0]);
		return true;
	}
	if (!m->kmaps.nr) {
		/*
		 * No kernel map recorded (perf record could not read the kernel's
		 * addresses: kptr_restrict): perf 7.2 maps no kernel address then,
		 * whatever kallsyms it is given.
		 */
		unknown(out, "[unknown]");
		return false;
	}
	if (!map) {
		/*
		 * Once it has read kernel symbols, perf ends the kernel image's
		 * map where the next kernel map (a module) starts, not where its
		 * MMAP record said: init text (start_kernel at the bottom of the
		 * idle tasks' stacks) lies past the recorded length and resolves
		 * through kallsyms.  Without symbols the recorded end holds.
		 */
		const struct ds_map *below = maps__before(&m->kmaps, ip);

		if (!below || module_map(below) || !m->syms || !ds_symbols__kernel_known(m->syms)) {
			unknown(out, "[unknown]");
			return false;
		}
	}
	unknown(out, m->kernel_dso);
	if (!ds_symbols__kernel(m->syms, ip, &out->frames[0]))
		out->frames[0].name = NULL;
	return true;
}

const struct ds_map *ds_thread__find_map(struct ds_thread *t, uint64_t addr)
{
	return t ? dsi_maps__find(t->maps, addr) : NULL;
}

void ds_machine__set_vdso_finder(struct ds_machine *m, ds_vdso_finder fn, void *ctx)
{
	m->vdso_finder = fn;
	m->vdso_ctx = ctx;
	m->vdso_asked[0] = m->vdso_asked[1] = false;
	m->vdso[0] = m->vdso[1] = NULL;
}

struct ds_dso *ds_machine__map_dso(struct ds_machine *m, const struct ds_map *map)
{
	int k;

	if (map->dso || !map->name || map->name[0] != '[')
		return map->dso;
	if (!strcmp(map->name, "[vdso]"))
		k = DS_VDSO_64;
	else if (!strcmp(map->name, "[vdso32]"))
		k = DS_VDSO_32;
	else
		return NULL;
	if (!m->vdso_asked[k] && m->vdso_finder) {
		m->vdso_asked[k] = true;
		m->vdso[k] = m->vdso_finder(m->vdso_ctx, (enum ds_vdso_kind)k);
	}
	return m->vdso[k];
}

/* @ip in @t's user map @map: its DSO's frames, else the JIT symbol of /tmp/perf-PID.map. */
static void resolve_user(struct ds_machine *m, const struct ds_thread *t, const struct ds_map *map,
			 uint64_t ip, struct ds_resolved *out)
{
	struct ds_dso *dso = ds_machine__map_dso(m, map);

	if (dso) {
		out->dso = map->name;
		out->nr_frames = ds_dso__resolve(dso, ip - map->start + map->pgoff,
						 out->frames, sizeof(out->frames) / sizeof(*out->frames));
		if (!out->nr_frames)
			unknown(out, map->name);
		out->dso_obj = dso;
	} else {
		unknown(out, map->name);
	}
	out->addr = map->identity ? ip : ip - map->start + map->pgoff;
	out->map_start = map->start;
	out->map_end = map->end;
	out->map_pgoff = map->pgoff;
	if (!dso && map->jit && ds_symbols__jit(m->syms, t->pid, ip, &out->frames[0])) {
		char name[64];

		/* perf names the DSO of JIT code after the map file it came from */
		snprintf(name, sizeof(name), "/tmp/perf-%d.map", t->pid);
		out->dso = ds_machine__intern(m, name);
	}
}

bool ds_machine__resolve(struct ds_machine *m, struct ds_thread *t, uint16_t cpumode,
			 uint64_t ip, struct ds_resolved *out)
{
	const struct ds_map *map;

	out->ip = ip;
	out->kernel = false;
	if (cpumode == DS_MISC_KERNEL || cpumode == DS_MISC_GUEST_KERNEL)
		return resolve_kernel(m, ip, out);
	map = t ? dsi_maps__find(t->maps, ip) : NULL;
	if (map)
		resolve_user(m, t, map, ip, out);
	else
		unknown(out, "[unknown]");
	return map != NULL;
}

bool ds_machine__resolve_any(struct ds_machine *m, struct ds_thread *t, uint64_t addr,
			     struct ds_resolved *out, char *level)
{
	*level = 'H';
	if (ds_machine__resolve(m, t, DS_MISC_USER, addr, out))
		*level = '.';
	else if (ds_machine__resolve(m, t, DS_MISC_KERNEL, addr, out))
		*level = 'k';
	return *level != 'H';
}

bool ds_machine__resolve_fb(struct ds_machine *m, struct ds_thread *t, uint16_t cpumode,
			    uint64_t addr, struct ds_resolved *out)
{
	uint16_t by_value = addr >> 63 ? DS_MISC_KERNEL : DS_MISC_USER;

	for (int k = 0; k < 2; k++, cpumode = by_value) {
		if (cpumode != DS_MISC_USER && cpumode != DS_MISC_KERNEL)
			continue;
		if (ds_machine__resolve(m, t, cpumode, addr, out))
			return true;
		if (cpumode == by_value)
			break;
	}
	return false;
}
