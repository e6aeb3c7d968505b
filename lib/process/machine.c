// SPDX-License-Identifier: MIT
/*
 * Threads and maps.  Maps of a process live in one sorted array shared by
 * its threads (refcounted); a lookup is a binary search behind a last-hit
 * cache, so the common run of ips in one DSO costs a compare.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dstack/machine.h"
#include "util/grow.h"
#include "util/hashmap.h"
#include "util/prefault.h"

struct ds_maps {
	uint32_t refs;
	struct ds_map *v;
	size_t nr, cap;
	size_t last;               /* last-hit cache */
	uint64_t stamp;            /* new, never reused, on every change: keys the frame cache */
};

static _Atomic uint64_t maps_stamps;

static void maps_changed(struct ds_maps *mp)
{
	mp->stamp = atomic_fetch_add(&maps_stamps, 1) + 1;
}

/*
 * Resolved callchain entries, direct-mapped by (maps stamp, ip): a profile
 * resolves the same few thousand addresses over and over.  Only entries
 * that resolve to one frame (no inlines) are kept.  A slot is small and
 * names its frame in a dense array that grows as slots are first used, so
 * a short profile touches few pages (page faults are dear in a VM, see
 * docs/performance.md).
 */
#define FRAME_CACHE_BITS 13
#define FRAME_CACHE_SLOTS (1u << FRAME_CACHE_BITS)

struct frame_cache_slot {
	uint64_t stamp, ip, generation;
	uint16_t mode;
	uint32_t frame;            /* index + 1 into ds_machine.fframes; 0: none yet */
};

/*
 * Whole callchains, resolved: a profile repeats its chains (a kernel
 * profile is ~20 entries deep, sampled thousands of times), and one lookup
 * keyed by a hash of the raw entries replaces a frame-cache probe (a cache
 * miss, at that) per entry.  Chains are copied into a bounded arena; when
 * it is full the epoch moves on, every slot is stale and the arena refills,
 * so memory stays CHAIN_ARENA however long the input.
 */
#define CHAIN_CACHE_BITS 11
#define CHAIN_ARENA (1u << 20)
#define CHAIN_MAX_BYTES (CHAIN_ARENA / 16)   /* longer chains are not cached */

struct chain_slot {
	uint64_t hash;
	uint64_t id;               /* unique over the machine's life (ds_machine__callchain_id) */
	uint64_t ustamp, kstamp, generation;
	uint32_t epoch;            /* valid when it is the machine's chain_epoch */
	uint32_t max_stack;
	uint32_t nr_ips, nr_frames;
	size_t off;                /* in chain_arena: the frames, then the raw entries */
	uint64_t shape;            /* ds_machine__callchain_shape() of the frames, SHAPE_UNKNOWN until asked */
};

#define SHAPE_UNKNOWN UINT64_MAX

/*
 * Shapes: chains whose frames are the same but for what the analyses do
 * not look at (the addresses of frames with a symbol, the maps they came
 * from) share a shape id, so the same code run by many processes adds up
 * under one id.  Each distinct frame is kept once (struct shape_frame: what
 * a shape compares), each shape as the array of its frames' ids.
 */
struct shape_frame {
	const char *sym, *dso, *elf_sym;
	uint64_t ip, addr;             /* only for frames with no symbol */
	uint8_t flags;                 /* inlined, kernel, cookie */
};

#define SHAPE_IDS_MAX ((4u << 20) / sizeof(uint32_t))   /* frame ids kept in shapes, at most */

struct shape {
	uint32_t off, nr;          /* in shape_ids */
};

struct comm_entry {
	uint64_t time;             /* from when this comm holds */
	const char *comm;
};

struct ds_thread {
	int32_t pid, tid;
	const char *comm;          /* the newest */
	struct comm_entry *comms;  /* history, oldest first: samples printed late get the comm of their time */
	size_t nr_comms, cap_comms;
	bool comm_set;             /* a real comm replaced the ":TID" placeholder */
	uint64_t exit_time;        /* its EXIT record's, 0 while it has none */
	struct ds_maps *maps;
};

struct ds_machine {
	struct ds_symbols *syms;
	struct ds_hashmap threads;     /* tid -> struct ds_thread * */
	struct ds_thread *last_thread; /* the one found last: samples come in runs of one thread */
	struct ds_hashmap strings;     /* hash -> char * (interned) */
	struct ds_hashmap map_names;   /* interned user map name -> its order of first mmap (1, 2, ...) */
	struct ds_maps kmaps;          /* kernel and module maps */
	struct ds_cc_frame *cc;        /* ds_machine__callchain's buffer */
	size_t cc_cap;
	struct frame_cache_slot *fcache; /* FRAME_CACHE_SLOTS, NULL if not allocated */
	struct ds_cc_frame *fframes;     /* the cached frames, one per slot ever used */
	uint32_t *fframe_ids;            /* each one's frame id for shapes (frame_id), UINT32_MAX until asked */
	size_t fframes_nr, fframes_cap, fframe_ids_cap;
	uint32_t *cc_src;                /* per frame of cc: its fframes index + 1, 0 if not from there */
	struct chain_slot *chains;       /* 1 << CHAIN_CACHE_BITS, NULL if not allocated */
	unsigned char *chain_arena;      /* CHAIN_ARENA bytes */
	size_t chain_used, chain_populated;
	uint32_t chain_epoch;            /* starts at 1: a zeroed slot is stale */
	uint64_t chain_ids;              /* the last id given */
	const struct ds_cc_frame *last_frames; /* the chain returned last, for its shape */
	size_t last_nr;
	struct chain_slot *last_slot;    /* its cache slot (its id), NULL if not cached */
	struct ds_hashmap shape_map;     /* hash of the frame ids (probed on) -> index in shapes */
	struct shape *shapes;
	size_t nr_shapes, cap_shapes;
	uint32_t *shape_ids;             /* each shape's frames, as ids in frames_seen */
	size_t nr_shape_ids, cap_shape_ids;
	struct ds_hashmap frame_map;     /* frame hash (probed on) -> index in frames_seen */
	struct shape_frame *frames_seen;
	size_t nr_frames_seen, cap_frames_seen;
	uint32_t *ids_tmp;               /* a chain's frame ids, while its shape is looked up */
	size_t cap_ids_tmp;
};

/* ---- interning ------------------------------------------------------- */

static uint64_t str_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return h;
}

const char *ds_machine__intern(struct ds_machine *m, const char *s)
{
	/* probe successive keys on a (rare) hash collision */
	for (uint64_t k = str_hash(s);; k++) {
		uint64_t *v = ds_hashmap__find(&m->strings, k);

		if (!v) {
			char *d = strdup(s);

			if (!d || ds_hashmap__set(&m->strings, k, (uint64_t)(uintptr_t)d)) {
				free(d);
				return "";
			}
			return d;
		}
		if (!strcmp((const char *)(uintptr_t)*v, s))
			return (const char *)(uintptr_t)*v;
	}
}

/* ---- maps ------------------------------------------------------------ */

static struct ds_maps *maps_new(void)
{
	struct ds_maps *mp = calloc(1, sizeof(*mp));

	if (mp) {
		mp->refs = 1;
		maps_changed(mp);
	}
	return mp;
}

static void maps_put(struct ds_maps *mp)
{
	if (mp && --mp->refs == 0) {
		free(mp->v);
		free(mp);
	}
}

static struct ds_maps *maps_clone(const struct ds_maps *src)
{
	struct ds_maps *mp = maps_new();

	if (!mp || !src->nr)
		return mp;
	mp->v = malloc(src->nr * sizeof(*mp->v));
	if (!mp->v) {
		free(mp);
		return NULL;
	}
	memcpy(mp->v, src->v, src->nr * sizeof(*mp->v));
	mp->nr = mp->cap = src->nr;
	return mp;
}

/* First map whose end is above @addr. */
static size_t maps_lower(const struct ds_maps *mp, uint64_t addr)
{
	size_t lo = 0, hi = mp->nr;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (mp->v[mid].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static const struct ds_map *maps_find(struct ds_maps *mp, uint64_t addr)
{
	size_t i;

	if (mp->last < mp->nr && mp->v[mp->last].start <= addr && addr < mp->v[mp->last].end)
		return &mp->v[mp->last];
	i = maps_lower(mp, addr);
	if (i < mp->nr && mp->v[i].start <= addr) {
		mp->last = i;
		return &mp->v[i];
	}
	return NULL;
}

static int maps_reserve(struct ds_maps *mp, size_t n)
{
	if (mp->nr + n <= mp->cap)
		return 0;
	size_t ncap = mp->cap ? mp->cap * 2 : 16;

	while (ncap < mp->nr + n)
		ncap *= 2;
	struct ds_map *nv = realloc(mp->v, ncap * sizeof(*nv));

	if (!nv)
		return -ENOMEM;
	mp->v = nv;
	mp->cap = ncap;
	return 0;
}

/* Insert @nm, cutting away whatever part of older maps it covers. */
static int maps_insert(struct ds_maps *mp, const struct ds_map *nm)
{
	size_t i, j;

	if (nm->end <= nm->start || maps_reserve(mp, 2))
		return nm->end <= nm->start ? 0 : -ENOMEM;
	i = maps_lower(mp, nm->start);
	/* an old map straddling the new start keeps its head (and maybe tail) */
	if (i < mp->nr && mp->v[i].start < nm->start) {
		struct ds_map old = mp->v[i];

		mp->v[i].end = nm->start;
		i++;
		if (old.end > nm->end) {
			struct ds_map tail = old;

			tail.pgoff += nm->end - old.start;
			tail.start = nm->end;
			memmove(&mp->v[i + 1], &mp->v[i], (mp->nr - i) * sizeof(*mp->v));
			mp->v[i] = tail;
			mp->nr++;
		}
	}
	for (j = i; j < mp->nr && mp->v[j].end <= nm->end; j++)
		; /* fully covered: dropped */
	if (j < mp->nr && mp->v[j].start < nm->end) {
		mp->v[j].pgoff += nm->end - mp->v[j].start;
		mp->v[j].start = nm->end;
	}
	/* replace [i, j) by the new map */
	memmove(&mp->v[i + 1], &mp->v[j], (mp->nr - j) * sizeof(*mp->v));
	mp->nr = mp->nr - (j - i) + 1;
	mp->v[i] = *nm;
	mp->last = i;
	maps_changed(mp);
	return 0;
}

/* ---- threads --------------------------------------------------------- */

struct ds_machine *ds_machine__new(struct ds_symbols *syms)
{
	struct ds_machine *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->syms = syms;
	m->kmaps.refs = 1;
	maps_changed(&m->kmaps);
	/* hashed into all over: populated now, not a fault per slot's page later */
	m->fcache = ds_calloc_populated(FRAME_CACHE_SLOTS, sizeof(*m->fcache));   /* NULL: resolve every time */
	m->chains = ds_calloc_populated(1u << CHAIN_CACHE_BITS, sizeof(*m->chains));
	m->chain_arena = malloc(CHAIN_ARENA);
	m->chain_epoch = 1;
	if (!m->chains || !m->chain_arena) {   /* no chain cache then */
		free(m->chains);
		free(m->chain_arena);
		m->chains = NULL;
		m->chain_arena = NULL;
	}
	return m;
}

static void thread_free(struct ds_thread *t)
{
	maps_put(t->maps);
	free(t->comms);
	free(t);
}

static int thread_set_comm(struct ds_thread *t, const char *comm, uint64_t time)
{
	if (!t->comm_set || !t->nr_comms) {
		/* the placeholder (or an inherited name) is replaced, not kept */
		t->nr_comms = 0;
		time = 0;
	}
	if (t->nr_comms == t->cap_comms) {
		size_t ncap = t->cap_comms ? t->cap_comms * 2 : 2;
		struct comm_entry *n = realloc(t->comms, ncap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		t->comms = n;
		t->cap_comms = ncap;
	}
	t->comms[t->nr_comms++] = (struct comm_entry){ time, comm };
	t->comm = comm;
	t->comm_set = true;
	return 0;
}

unsigned ds_machine__map_name_seq(const struct ds_machine *m, const char *name)
{
	const uint64_t *v = ds_hashmap__find(&m->map_names, (uintptr_t)name);

	return v ? (unsigned)*v : 0;
}

const char *ds_thread__comm_at(const struct ds_thread *t, uint64_t time)
{
	size_t lo = 0, hi = t->nr_comms;

	if (!t->nr_comms)
		return t->comm;
	while (lo < hi) { /* first entry newer than @time */
		size_t mid = (lo + hi) / 2;

		if (t->comms[mid].time <= time)
			lo = mid + 1;
		else
			hi = mid;
	}
	return t->comms[lo ? lo - 1 : 0].comm;
}

void ds_machine__delete(struct ds_machine *m)
{
	uint64_t k, v;

	if (!m)
		return;
	for (size_t i = 0; ds_hashmap__next(&m->threads, &i, &k, &v);)
		thread_free((struct ds_thread *)(uintptr_t)v);
	for (size_t i = 0; ds_hashmap__next(&m->strings, &i, &k, &v);)
		free((char *)(uintptr_t)v);
	ds_hashmap__exit(&m->threads);
	ds_hashmap__exit(&m->strings);
	ds_hashmap__exit(&m->map_names);
	free(m->kmaps.v);
	free(m->cc);
	free(m->fcache);
	free(m->fframes);
	free(m->fframe_ids);
	free(m->cc_src);
	free(m->chains);
	free(m->chain_arena);
	ds_hashmap__exit(&m->shape_map);
	ds_hashmap__exit(&m->frame_map);
	free(m->shapes);
	free(m->shape_ids);
	free(m->frames_seen);
	free(m->ids_tmp);
	free(m);
}

static struct ds_thread *thread_lookup(struct ds_machine *m, int32_t tid)
{
	uint64_t *v;

	if (m->last_thread && m->last_thread->tid == tid)
		return m->last_thread;
	v = ds_hashmap__find(&m->threads, (uint32_t)tid);
	if (v)
		m->last_thread = (struct ds_thread *)(uintptr_t)*v;
	return v ? m->last_thread : NULL;
}

/* A new thread; shares the maps of its process leader if there is one. */
static struct ds_thread *thread_new(struct ds_machine *m, int32_t pid, int32_t tid, struct ds_maps *maps)
{
	struct ds_thread *t = calloc(1, sizeof(*t)), *old;
	char buf[32];

	if (!t)
		return NULL;
	t->pid = pid;
	t->tid = tid;
	/* perf names the idle task of every CPU "swapper" */
	snprintf(buf, sizeof(buf), tid == 0 ? "swapper" : ":%d", tid);
	t->comm = ds_machine__intern(m, buf);
	if (maps) {
		t->maps = maps;
		maps->refs++;
	} else if (pid != tid && pid >= 0 && (old = thread_lookup(m, pid)) && old->pid == pid) {
		t->maps = old->maps;
		t->maps->refs++;
	} else {
		t->maps = maps_new();
	}
	old = thread_lookup(m, tid);
	/* no maps: not put in the table (it would keep a freed thread) */
	if (!t->maps || ds_hashmap__set(&m->threads, (uint32_t)tid, (uint64_t)(uintptr_t)t)) {
		thread_free(t);
		return NULL;
	}
	if (old)
		thread_free(old);
	m->last_thread = t;   /* never the freed one */
	return t;
}

struct ds_thread *ds_machine__thread(struct ds_machine *m, int32_t pid, int32_t tid)
{
	struct ds_thread *t = thread_lookup(m, tid);

	if (t) {
		if (t->pid < 0 && pid >= 0)
			t->pid = pid;
		return t;
	}
	return thread_new(m, pid, tid, NULL);
}

const char *ds_thread__comm(const struct ds_thread *t) { return t->comm; }
uint64_t ds_thread__exit_time(const struct ds_thread *t) { return t->exit_time; }
int32_t ds_thread__pid(const struct ds_thread *t) { return t->pid; }

static int process_fork(struct ds_machine *m, const struct ds_event *ev)
{
	struct ds_task_event te;
	const char *why;
	struct ds_thread *parent, *child;

	if (ds_task__parse(ev->evsel, ev->hdr, &te, &why))
		return 0;
	parent = ds_machine__thread(m, (int32_t)te.ppid, (int32_t)te.ptid);
	if (!parent)
		return -ENOMEM;
	struct ds_maps *maps = NULL;
	bool same_process = te.pid == te.ppid;

	if (same_process) {
		maps = parent->maps;
	} else {
		maps = maps_clone(parent->maps);
		if (!maps)
			return -ENOMEM;
	}
	const char *comm = parent->comm;

	child = thread_new(m, (int32_t)te.pid, (int32_t)te.tid, maps);
	if (!same_process)
		maps_put(maps); /* the child holds its own reference */
	if (!child)
		return -ENOMEM;
	/* the child starts with its parent's name; a later COMM adds to the history */
	return thread_set_comm(child, comm, 0);
}

static int process_comm(struct ds_machine *m, const struct ds_event *ev)
{
	struct ds_comm_event ce;
	const char *why;
	struct ds_thread *t;

	if (ds_comm__parse(ev->evsel, ev->hdr, &ce, &why))
		return 0;
	t = ds_machine__thread(m, (int32_t)ce.pid, (int32_t)ce.tid);
	if (!t)
		return -ENOMEM;
	t->exit_time = 0;   /* a COMM after an EXIT names a new thread of that tid */
	return thread_set_comm(t, ds_machine__intern(m, ce.comm), ev->sample.time == DS_NO_TIME ? 0 : ev->sample.time);
}

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

static int process_mmap(struct ds_machine *m, const struct ds_event *ev)
{
	struct ds_mmap_event me;
	const char *why;
	struct ds_map nm = { 0 };
	struct ds_maps *maps;

	if (ds_mmap__parse(ev->evsel, ev->hdr, &me, &why))
		return 0;
	if (me.len == 0 || me.start + me.len < me.start)
		return 0;
	nm.start = me.start;
	nm.end = me.start + me.len;
	nm.pgoff = me.pgoff;
	nm.name = ds_machine__intern(m, me.filename);
	/*
	 * perf names the vDSO of a 32-bit task "[vdso32]" (it asks the task's
	 * ELF class); a 32-bit task's address space, its vDSO included, lies
	 * below 4 GiB, where a 64-bit task's vDSO never is.
	 */
	if (!strcmp(me.filename, "[vdso]") && nm.end <= (1ULL << 32))
		nm.name = ds_machine__intern(m, "[vdso32]");
	nm.jit = is_anon(me.filename);
	nm.identity = is_identity_mapped(me.filename);
	if ((ev->hdr->misc & DS_MISC_CPUMODE_MASK) == DS_MISC_KERNEL) {
		return maps_insert(&m->kmaps, &nm);
	}
	if (perf_map_named(ev, &me)) {
		char name[64];

		snprintf(name, sizeof(name), "/tmp/perf-%u.map", me.pid);
		nm.name = ds_machine__intern(m, name);
	}
	if (!ds_hashmap__find(&m->map_names, (uintptr_t)nm.name) &&
	    ds_hashmap__set(&m->map_names, (uintptr_t)nm.name, m->map_names.len + 1))
		return -ENOMEM;
	if (!is_special(me.filename))
		nm.dso = ds_symbols__dso(m->syms, me.filename, me.has_build_id ? me.build_id : NULL,
					 me.has_build_id ? me.build_id_size : 0);
	struct ds_thread *t = ds_machine__thread(m, (int32_t)me.pid, (int32_t)me.tid);

	if (!t)
		return -ENOMEM;
	maps = t->maps;
	return maps_insert(maps, &nm);
}

/* The thread's EXIT: its time is kept (ds_thread__exit_time); nothing else changes. */
static int process_exit(struct ds_machine *m, const struct ds_event *ev)
{
	struct ds_task_event te;
	const char *why;
	struct ds_thread *t;

	if (ds_task__parse(ev->evsel, ev->hdr, &te, &why) || ev->sample.time == DS_NO_TIME)
		return 0;
	t = ds_machine__thread(m, (int32_t)te.pid, (int32_t)te.tid);
	if (!t)
		return -ENOMEM;
	t->exit_time = ev->sample.time;
	return 0;
}

int ds_machine__process(struct ds_machine *m, const struct ds_event *ev)
{
	if (!ev->evsel)
		return 0;
	switch (ev->hdr->type) {
	case DS_REC_COMM: return process_comm(m, ev);
	case DS_REC_FORK: return process_fork(m, ev);
	case DS_REC_EXIT: return process_exit(m, ev);
	case DS_REC_MMAP:
	case DS_REC_MMAP2: return process_mmap(m, ev);
	default: return 0;
	}
}

/* ---- resolution ------------------------------------------------------ */

static void unknown(struct ds_resolved *out, const char *dso)
{
	out->dso = dso;
	out->addr = out->ip;
	out->map_start = out->map_end = out->map_pgoff = 0;
	out->dso_obj = NULL;
	out->nr_frames = 1;
	out->frames[0] = (struct ds_frame){ .name = NULL };
}

/* "[virtio_blk]" for a module map, as perf names module DSOs. */
static const char *module_name(struct ds_machine *m, const char *path)
{
	const char *base = strrchr(path, '/');
	char buf[256];
	size_t n;

	base = base ? base + 1 : path;
	n = strcspn(base, ".");
	if (n > sizeof(buf) - 3)
		n = sizeof(buf) - 3;
	buf[0] = '[';
	for (size_t i = 0; i < n; i++)
		buf[i + 1] = base[i] == '-' ? '_' : base[i];
	buf[n + 1] = ']';
	buf[n + 2] = 0;
	return ds_machine__intern(m, buf);
}

static void resolve_kernel(struct ds_machine *m, uint64_t ip, struct ds_resolved *out)
{
	const struct ds_map *map = maps_find(&m->kmaps, ip);

	out->kernel = true;
	if (map && map->name[0] == '/') {
		unknown(out, module_name(m, map->name));
		ds_symbols__kernel(m->syms, ip, &out->frames[0]);
		return;
	}
	if (!map && m->kmaps.nr) {
		/*
		 * perf ends the kernel image's map where the next kernel map (a
		 * module) starts, not where its MMAP record said: init text
		 * (start_kernel at the bottom of the idle tasks' stacks) lies past
		 * the recorded length and resolves through kallsyms.
		 */
		size_t i = maps_lower(&m->kmaps, ip);

		if (!i || m->kmaps.v[i - 1].name[0] == '/') {
			unknown(out, "[unknown]");
			return;
		}
	}
	unknown(out, "[kernel.kallsyms]");
	if (!ds_symbols__kernel(m->syms, ip, &out->frames[0]))
		out->frames[0].name = NULL;
}

const struct ds_map *ds_thread__find_map(struct ds_thread *t, uint64_t addr)
{
	return t ? maps_find(t->maps, addr) : NULL;
}

void ds_machine__resolve(struct ds_machine *m, struct ds_thread *t, uint16_t cpumode,
			 uint64_t ip, struct ds_resolved *out)
{
	const struct ds_map *map;

	out->ip = ip;
	out->kernel = false;
	if (cpumode == DS_MISC_KERNEL || cpumode == DS_MISC_GUEST_KERNEL) {
		resolve_kernel(m, ip, out);
		return;
	}
	map = t ? maps_find(t->maps, ip) : NULL;
	if (!map) {
		unknown(out, "[unknown]");
		return;
	}
	if (map->dso) {
		out->dso = map->name;
		out->nr_frames = ds_dso__resolve(map->dso, ip - map->start + map->pgoff,
						 out->frames, sizeof(out->frames) / sizeof(*out->frames));
		if (!out->nr_frames)
			unknown(out, map->name);
		out->dso_obj = map->dso;
	} else {
		unknown(out, map->name);
	}
	out->addr = map->identity ? ip : ip - map->start + map->pgoff;
	out->map_start = map->start;
	out->map_end = map->end;
	out->map_pgoff = map->pgoff;
	if (map->dso)
		return;
	if (map->jit && t && ds_symbols__jit(m->syms, t->pid, ip, &out->frames[0])) {
		char name[64];

		/* perf names the DSO of JIT code after the map file it came from */
		snprintf(name, sizeof(name), "/tmp/perf-%d.map", t->pid);
		out->dso = ds_machine__intern(m, name);
	}
}

static uint16_t context_mode(uint64_t marker, uint16_t cur)
{
	switch (marker) {
	case DS_CONTEXT_KERNEL: return DS_MISC_KERNEL;
	case DS_CONTEXT_USER: return DS_MISC_USER;
	case DS_CONTEXT_HV: return DS_MISC_HYPERVISOR;
	case DS_CONTEXT_GUEST_KERNEL: return DS_MISC_GUEST_KERNEL;
	case DS_CONTEXT_GUEST_USER: return DS_MISC_GUEST_USER;
	default: return cur;
	}
}

static struct ds_cc_frame *cc_grow(struct ds_machine *m, size_t n, size_t more)
{
	size_t ncap = m->cc_cap ? m->cc_cap * 2 : 256;
	struct ds_cc_frame *nc;
	uint32_t *ns;

	while (ncap < n + more)
		ncap *= 2;
	nc = realloc(m->cc, ncap * sizeof(*nc));
	if (!nc)
		return NULL;
	m->cc = nc;
	ns = realloc(m->cc_src, ncap * sizeof(*ns));
	if (!ns)
		return NULL;   /* cc_cap unchanged: both are retried */
	m->cc_src = ns;
	m->cc_cap = ncap;
	return &m->cc[n];
}

static bool is_kernel_mode(uint16_t mode)
{
	return mode == DS_MISC_KERNEL || mode == DS_MISC_GUEST_KERNEL;
}

/* The cache slot for @ip in @mode for @t, NULL when there is no cache or no maps. */
static struct frame_cache_slot *cache_slot(struct ds_machine *m, struct ds_thread *t, uint16_t mode, uint64_t ip)
{
	const struct ds_maps *mp = is_kernel_mode(mode) ? &m->kmaps : t ? t->maps : NULL;

	if (!m->fcache || !mp)
		return NULL;
	/* multiplicative hashing: the top bits of ip * golden ratio, mixed with the stamp */
	return &m->fcache[((ip ^ mp->stamp << 40) * 0x9e3779b97f4a7c15ULL) >> (64 - FRAME_CACHE_BITS)];
}

/* A frame in the dense array for @slot, which has none yet; false on ENOMEM (then not cached). */
static bool cache_frame_alloc(struct ds_machine *m, struct frame_cache_slot *slot)
{
	struct ds_cc_frame *n = ds_grow(m->fframes, &m->fframes_cap, m->fframes_nr + 1, sizeof(*n), 256);
	uint32_t *ids;

	if (!n)
		return false;
	m->fframes = n;
	ids = ds_grow(m->fframe_ids, &m->fframe_ids_cap, m->fframes_nr + 1, sizeof(*ids), 256);
	if (!ids)
		return false;
	m->fframe_ids = ids;
	slot->frame = (uint32_t)++m->fframes_nr;
	return true;
}

static inline struct ds_cc_frame *cc_slot(struct ds_machine *m, size_t n, size_t more)
{
	return n + more <= m->cc_cap ? &m->cc[n] : cc_grow(m, n, more);
}

/* Append one frame to the callchain buffer (@src: its fframes index + 1, or 0); false on ENOMEM. */
static inline bool push_frame(struct ds_machine *m, size_t *n, const struct ds_cc_frame *frame, uint32_t src)
{
	struct ds_cc_frame *f = cc_slot(m, *n, 1);

	if (!f)
		return false;
	*f = *frame;
	m->cc_src[(*n)++] = src;
	return true;
}

static const struct ds_cc_frame *resolve_chain(struct ds_machine *m, struct ds_thread *t,
					       const uint64_t *ips, uint64_t nr, unsigned max_stack,
					       size_t *nr_frames)
{
	uint16_t mode = DS_MISC_USER;
	unsigned taken = 0;
	size_t n = 0;
	struct ds_resolved r;
	uint64_t gen = ds_symbols__generation(m->syms);

	for (uint64_t i = 0; i < nr && taken < max_stack; i++) {
		struct ds_cc_frame *f;

		if (ips[i] == DS_CONTEXT_USER_DEFERRED && i + 1 < nr) {
			struct ds_cc_frame cookie = { .ip = ips[++i], .dso = "[unknown]", .cookie = true };

			if (!push_frame(m, &n, &cookie, 0))
				break;
			taken++;
			continue;
		}
		if (ips[i] >= DS_CONTEXT_MAX) {
			mode = context_mode(ips[i], mode);
			continue;
		}
		struct frame_cache_slot *slot = cache_slot(m, t, mode, ips[i]);

		if (slot && slot->frame && slot->ip == ips[i] && slot->mode == mode && slot->generation == gen &&
		    slot->stamp && slot->stamp == (is_kernel_mode(mode) ? m->kmaps.stamp : t->maps->stamp)) {
			if (!push_frame(m, &n, &m->fframes[slot->frame - 1], slot->frame))
				break;
			taken++;
			continue;
		}
		ds_machine__resolve(m, t, mode, ips[i], &r);
		f = cc_slot(m, n, r.nr_frames);
		if (!f)
			break;
		for (size_t k = 0; k < r.nr_frames; k++) {
			m->cc_src[n + k] = 0;
			f[k] = (struct ds_cc_frame){ .ip = ips[i], .sym = r.frames[k].name,
						     .offset = r.frames[k].offset, .dso = r.dso,
						     .inlined = r.frames[k].inlined, .kernel = r.kernel,
						     .elf_sym = r.frames[k].elf_name,
						     .addr = r.addr, .map_start = r.map_start,
						     .map_end = r.map_end, .map_pgoff = r.map_pgoff,
						     .dso_obj = r.dso_obj };
		}
		if (slot && slot->frame && r.nr_frames == 1)   /* given to another frame: not theirs any more */
			for (size_t j = 0; j < n; j++)
				if (m->cc_src[j] == slot->frame)
					m->cc_src[j] = 0;
		if (slot && r.nr_frames == 1 && (slot->frame || cache_frame_alloc(m, slot))) {
			slot->stamp = is_kernel_mode(mode) ? m->kmaps.stamp : t->maps->stamp;
			slot->ip = ips[i];
			slot->mode = mode;
			slot->generation = gen;
			m->fframes[slot->frame - 1] = f[0];
			m->fframe_ids[slot->frame - 1] = UINT32_MAX;   /* another frame: its id is asked anew */
			m->cc_src[n] = slot->frame;
		}
		n += r.nr_frames;
		taken++;
	}
	*nr_frames = n;
	return m->cc;
}

/* The chain cache's key for @ips under @t's maps as they are now. */
static uint64_t chain_hash(const struct ds_machine *m, const struct ds_thread *t, const uint64_t *ips,
			   uint64_t nr, unsigned max_stack, uint64_t gen)
{
	/*
	 * Per sample, so cheap: the context words are spread by odd multipliers
	 * and the one finaliser below mixes everything (a splitmix round per
	 * word was a large share of the callchain lookup: docs/performance.md).
	 */
	uint64_t h = t->maps->stamp * 0x9e3779b97f4a7c15ULL ^ m->kmaps.stamp * 0xc2b2ae3d27d4eb4fULL ^
		     gen * 0x165667b19e3779f9ULL ^ max_stack;
	/*
	 * Four independent lanes: a chain of 40 ips is not 40 dependent
	 * multiplies.  Each lane shifts by its own amount, which also keeps the
	 * compiler from packing them into SSE2 (no 64-bit vector multiply: slower).
	 */
	uint64_t a = h, b = h ^ 0x243f6a8885a308d3ULL, c = h ^ 0x13198a2e03707344ULL, d = h ^ 0xa4093822299f31d0ULL;
	uint64_t i = 0;

	for (; i + 4 <= nr; i += 4) {
		a = (a ^ ips[i]) * 0x9e3779b97f4a7c15ULL;
		b = (b ^ ips[i + 1]) * 0xc2b2ae3d27d4eb4fULL;
		c = (c ^ ips[i + 2]) * 0x165667b19e3779f9ULL;
		d = (d ^ ips[i + 3]) * 0x27d4eb2f165667c5ULL;
		a ^= a >> 29;
		b ^= b >> 31;
		c ^= c >> 27;
		d ^= d >> 33;
	}
	for (; i < nr; i++) {
		a = (a ^ ips[i]) * 0x9e3779b97f4a7c15ULL;
		a ^= a >> 29;
	}
	/* lanes combined by rotation: equal lanes must not cancel */
	return ds_hash64(a ^ (b << 17 | b >> 47) ^ (c << 31 | c >> 33) ^ (d << 47 | d >> 17) ^ nr);
}

static bool chain_hit(const struct ds_machine *m, const struct chain_slot *c, const struct ds_thread *t,
		      uint64_t h, const uint64_t *ips, uint64_t nr, unsigned max_stack, uint64_t gen)
{
	return c->epoch == m->chain_epoch && c->hash == h && c->nr_ips == nr && c->max_stack == max_stack &&
	       c->generation == gen && c->ustamp == t->maps->stamp && c->kstamp == m->kmaps.stamp &&
	       (!nr || !memcmp(m->chain_arena + c->off + c->nr_frames * sizeof(struct ds_cc_frame), ips, nr * sizeof(*ips)));
}

/* Copy the resolved chain into the arena and @c; false (not cached) when it is too long. */
static bool chain_store(struct ds_machine *m, struct chain_slot *c, const struct ds_thread *t, uint64_t h,
			const uint64_t *ips, uint64_t nr, unsigned max_stack, uint64_t gen,
			const struct ds_cc_frame *frames, size_t n)
{
	size_t fbytes = n * sizeof(*frames), need = fbytes + nr * sizeof(*ips);

	if (need > CHAIN_MAX_BYTES)
		return false;
	if (m->chain_used + need > CHAIN_ARENA) {
		m->chain_epoch++;   /* every cached chain is stale: refill from the start */
		m->chain_used = 0;
	}
	if (m->chain_used + need > m->chain_populated) {   /* in 64 KiB steps, not a fault per page */
		size_t step = CHAIN_ARENA - m->chain_populated < (64u << 10) ? CHAIN_ARENA - m->chain_populated : (64u << 10);

		ds_prefault_write(m->chain_arena + m->chain_populated, step);
		m->chain_populated += step;
	}
	if (fbytes)   /* fuzz finding: no frames can come as NULL, and memcpy(NULL, 0) is UB */
		memcpy(m->chain_arena + m->chain_used, frames, fbytes);
	if (nr)
		memcpy(m->chain_arena + m->chain_used + fbytes, ips, nr * sizeof(*ips));
	*c = (struct chain_slot){ .hash = h, .id = ++m->chain_ids, .ustamp = t->maps->stamp, .kstamp = m->kmaps.stamp,
				  .generation = gen, .epoch = m->chain_epoch, .max_stack = max_stack,
				  .nr_ips = (uint32_t)nr, .nr_frames = (uint32_t)n, .off = m->chain_used };
	m->chain_used += need;
	return true;
}

/* ---- shapes ----------------------------------------------------------- */

static uint8_t frame_flags(const struct ds_cc_frame *f)
{
	return (uint8_t)(f->inlined | f->kernel << 1 | f->cookie << 2);
}

static struct shape_frame shape_frame_of(const struct ds_cc_frame *f)
{
	return (struct shape_frame){ .sym = f->sym, .dso = f->dso, .elf_sym = f->elf_sym, .flags = frame_flags(f),
				     .ip = f->sym ? 0 : f->ip, .addr = f->sym ? 0 : f->addr };
}

/*
 * Equal for every analysis: names (interned: compared as pointers), flags,
 * and the addresses only of frames with no symbol (shape_frame_of zeroes
 * them otherwise).
 */
static bool frame_same(const struct shape_frame *a, const struct shape_frame *b)
{
	return a->sym == b->sym && a->dso == b->dso && a->elf_sym == b->elf_sym && a->flags == b->flags &&
	       a->ip == b->ip && a->addr == b->addr;
}

/* The id of @f among the frames seen, added if new; UINT32_MAX on ENOMEM. */
static uint32_t frame_id(struct ds_machine *m, const struct ds_cc_frame *f)
{
	struct shape_frame sf = shape_frame_of(f);
	uint64_t k = ds_hash_pair(ds_hash_pair((uintptr_t)sf.sym, (uintptr_t)sf.dso),
				  ds_hash_pair((uintptr_t)sf.elf_sym ^ sf.flags, sf.ip ^ sf.addr * 0x9e3779b97f4a7c15ULL));
	uint64_t *v;

	for (;; k = ds_hash64(k + 1)) {   /* collisions: the next key */
		v = ds_hashmap__find(&m->frame_map, k);
		if (!v)
			break;
		if (frame_same(&m->frames_seen[*v], &sf))
			return (uint32_t)*v;
	}
	struct shape_frame *n = ds_grow(m->frames_seen, &m->cap_frames_seen, m->nr_frames_seen + 1, sizeof(*n), 1024);

	if (!n || m->nr_frames_seen >= UINT32_MAX - 1)
		return UINT32_MAX;
	m->frames_seen = n;
	if (ds_hashmap__set(&m->frame_map, k, m->nr_frames_seen) < 0)
		return UINT32_MAX;
	m->frames_seen[m->nr_frames_seen] = sf;
	return (uint32_t)m->nr_frames_seen++;
}

/* frame_id() of @f, remembered with the cached frame it came from (@src: fframes index + 1, 0: none) */
static uint32_t frame_id_of(struct ds_machine *m, const struct ds_cc_frame *f, uint32_t src)
{
	uint32_t id;

	if (!src)
		return frame_id(m, f);
	id = m->fframe_ids[src - 1];
	if (id == UINT32_MAX)
		id = m->fframe_ids[src - 1] = frame_id(m, f);
	return id;
}

/*
 * The shape id (index + 1) of @n frames, a new one if unseen; 0 if none can
 * be kept.  Frames are kept once each, shapes as their ids (4 bytes a frame).
 * @src says where each frame came from (see cc_src; NULL if unknown): a
 * frame's id is worked out once per cached frame, not once per chain it is
 * in: a profile makes new chains out of frames it has seen.
 */
static uint64_t shape_of(struct ds_machine *m, const struct ds_cc_frame *f, size_t n, const uint32_t *src)
{
	uint64_t k = n;
	uint32_t *ids;
	size_t i;

	/* an unresolved deferred chain ends in its cookie, unique to its kernel
	 * entry: such chains never share a shape, so none is kept */
	if (!n || n > UINT32_MAX)
		return 0;
	for (i = 0; i < n; i++)
		if (f[i].cookie)
			return 0;
	ids = ds_grow(m->ids_tmp, &m->cap_ids_tmp, n, sizeof(*ids), 256);
	if (!ids)
		return 0;
	m->ids_tmp = ids;
	for (i = 0; i < n; i++) {
		if ((ids[i] = frame_id_of(m, &f[i], src ? src[i] : 0)) == UINT32_MAX)
			return 0;
		k = (k ^ ids[i]) * 0x9e3779b97f4a7c15ULL;
		k ^= k >> 29;
	}
	for (k = ds_hash64(k);; k = ds_hash64(k + 1)) {   /* collisions: the next key */
		uint64_t *v = ds_hashmap__find(&m->shape_map, k);
		const struct shape *sh;

		if (!v)
			break;
		sh = &m->shapes[*v];
		if (sh->nr == n && !memcmp(m->shape_ids + sh->off, ids, n * sizeof(*ids)))
			return *v + 1;
	}
	if (m->nr_shape_ids + n > SHAPE_IDS_MAX)
		return 0;   /* full: later shapes go without an id */
	struct shape *ns = ds_grow(m->shapes, &m->cap_shapes, m->nr_shapes + 1, sizeof(*ns), 256);

	if (!ns)
		return 0;
	m->shapes = ns;
	uint32_t *ni = ds_grow(m->shape_ids, &m->cap_shape_ids, m->nr_shape_ids + n, sizeof(*ni), 4096);

	if (!ni)
		return 0;
	m->shape_ids = ni;
	if (ds_hashmap__set(&m->shape_map, k, m->nr_shapes) < 0)
		return 0;
	memcpy(m->shape_ids + m->nr_shape_ids, ids, n * sizeof(*ids));
	m->shapes[m->nr_shapes] = (struct shape){ .off = (uint32_t)m->nr_shape_ids, .nr = (uint32_t)n };
	m->nr_shape_ids += n;
	return ++m->nr_shapes;
}

const struct ds_cc_frame *ds_machine__callchain(struct ds_machine *m, struct ds_thread *t,
						const uint64_t *ips, uint64_t nr, unsigned max_stack,
						size_t *nr_frames)
{
	uint64_t gen = ds_symbols__generation(m->syms), h;
	const struct ds_cc_frame *frames;
	struct chain_slot *c;

	m->last_slot = NULL;
	if (!m->chains || !t || !t->maps || nr > CHAIN_MAX_BYTES / sizeof(*ips)) {
		frames = resolve_chain(m, t, ips, nr, max_stack, nr_frames);
		goto out;
	}
	h = chain_hash(m, t, ips, nr, max_stack, gen);
	c = &m->chains[h >> (64 - CHAIN_CACHE_BITS)];
	if (chain_hit(m, c, t, h, ips, nr, max_stack, gen)) {
		m->last_slot = c;
		*nr_frames = c->nr_frames;
		frames = (const struct ds_cc_frame *)(const void *)(m->chain_arena + c->off);
		goto out;
	}
	frames = resolve_chain(m, t, ips, nr, max_stack, nr_frames);
	/* resolving may load a file that makes results stale: then not cached */
	if (ds_symbols__generation(m->syms) == gen && chain_store(m, c, t, h, ips, nr, max_stack, gen, frames, *nr_frames)) {
		m->last_slot = c;
		c->shape = SHAPE_UNKNOWN;
	}
out:
	m->last_frames = frames;
	m->last_nr = *nr_frames;
	return frames;
}

uint64_t ds_machine__callchain_id(const struct ds_machine *m)
{
	return m->last_slot ? m->last_slot->id : 0;
}

/* Worked out when asked (report does; script need not pay), then kept with the cached chain. */
const uint32_t *ds_machine__shape_frames(const struct ds_machine *m, uint64_t shape, size_t *nr)
{
	if (!shape || shape > m->nr_shapes) {
		*nr = 0;
		return NULL;
	}
	*nr = m->shapes[shape - 1].nr;
	return m->shape_ids + m->shapes[shape - 1].off;
}

uint64_t ds_machine__callchain_shape(struct ds_machine *m)
{
	struct chain_slot *c = m->last_slot;
	uint64_t shape;

	if (c && c->shape != SHAPE_UNKNOWN)
		return c->shape;
	/* frames just resolved are in cc, and cc_src says where each came from */
	shape = m->last_frames ? shape_of(m, m->last_frames, m->last_nr, m->last_frames == m->cc ? m->cc_src : NULL) : 0;
	if (c)
		c->shape = shape;
	return shape;
}
