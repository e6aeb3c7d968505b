// SPDX-License-Identifier: MIT
/*
 * Callchains resolved into frames (ds_machine__callchain), behind two
 * caches: one of single resolved entries, one of whole chains.  A chain's
 * shape (shapes.c) is worked out when a caller asks for it, and kept with
 * the cached chain.
 */
#include <stdlib.h>
#include <string.h>
#include "util/grow.h"
#include "util/prefault.h"
#include "process/machine_int.h"

/*
 * Resolved callchain entries, direct-mapped by (maps stamp, ip): a profile
 * resolves the same few thousand addresses over and over.  Only entries
 * that resolve to one frame (no inlines) are kept.  A slot is small and
 * names its frame in a dense array that grows as slots are first used, so
 * a short profile touches few pages (page faults are dear in a VM).
 */
#define FRAME_CACHE_BITS 13
#define FRAME_CACHE_SLOTS (1u << FRAME_CACHE_BITS)

struct frame_cache_slot {
	uint64_t stamp, ip, generation;
	uint16_t mode;
	uint32_t frame;            /* index + 1 into frame_cache.frames; 0: none yet */
};

struct frame_cache {
	struct frame_cache_slot *slots; /* FRAME_CACHE_SLOTS, NULL if not allocated: resolve every time */
	struct ds_cc_frame *frames;     /* the cached frames, one per slot ever used */
	uint32_t *ids;                  /* each one's shape table frame id, UINT32_MAX until asked */
	size_t nr, frames_cap, ids_cap;
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

#define SHAPE_UNKNOWN UINT64_MAX

struct chain_slot {
	uint64_t hash;
	uint64_t id;               /* unique over the machine's life (ds_callchain.id) */
	uint64_t ustamp, kstamp, generation;
	uint32_t epoch;            /* valid when it is the cache's epoch */
	uint32_t max_stack;
	uint32_t nr_ips, nr_frames;
	size_t off;                /* in the arena: the frames, then the raw entries */
	uint64_t shape;            /* ds_callchain.shape of the frames, SHAPE_UNKNOWN until asked */
};

struct chain_cache {
	struct chain_slot *slots;  /* 1 << CHAIN_CACHE_BITS, NULL if not allocated: no chain cache */
	unsigned char *arena;      /* CHAIN_ARENA bytes */
	size_t used, populated;
	uint32_t epoch;            /* starts at 1: a zeroed slot is stale */
	uint64_t last_id;          /* the last id given */
};

struct callchain_cache {
	struct ds_cc_frame *out;   /* the frames resolved last (ds_callchain.frames) */
	uint32_t *src;             /* per frame of out: its frame cache index + 1, 0 if not from there */
	size_t out_cap, src_cap;
	struct frame_cache fc;
	struct chain_cache chains;
	struct shape_table *shapes; /* NULL until a shape is asked for */
	uint32_t *ids;             /* a chain's frame ids, while its shape is looked up */
	size_t ids_cap;
};

struct callchain_cache *dsi_callchain_cache__new(void)
{
	struct callchain_cache *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	/* hashed into all over: populated now, not a fault per slot's page later */
	c->fc.slots = dsi_calloc_populated(FRAME_CACHE_SLOTS, sizeof(*c->fc.slots));
	c->chains.slots = dsi_calloc_populated(1u << CHAIN_CACHE_BITS, sizeof(*c->chains.slots));
	c->chains.arena = malloc(CHAIN_ARENA);
	c->chains.epoch = 1;
	if (!c->chains.slots || !c->chains.arena) {
		free(c->chains.slots);
		free(c->chains.arena);
		c->chains.slots = NULL;
		c->chains.arena = NULL;
	}
	return c;
}

void dsi_callchain_cache__delete(struct callchain_cache *c)
{
	if (!c)
		return;
	free(c->out);
	free(c->src);
	free(c->fc.slots);
	free(c->fc.frames);
	free(c->fc.ids);
	free(c->chains.slots);
	free(c->chains.arena);
	dsi_shape_table__delete(c->shapes);
	free(c->ids);
	free(c);
}

/* ---- the frames out ---------------------------------------------------- */

static struct ds_cc_frame *out_grow(struct callchain_cache *c, size_t n, size_t more)
{
	struct ds_cc_frame *f = dsi_grow(c->out, &c->out_cap, n + more, sizeof(*f), 256);
	uint32_t *s;

	if (!f)
		return NULL;
	c->out = f;
	s = dsi_grow(c->src, &c->src_cap, n + more, sizeof(*s), 256);
	if (!s)
		return NULL;
	c->src = s;
	return &c->out[n];
}

/* Room for @more frames after the first @n; NULL on ENOMEM. */
static inline struct ds_cc_frame *out_room(struct callchain_cache *c, size_t n, size_t more)
{
	/* src grows second: its capacity is the one both arrays have */
	return n + more <= c->src_cap ? &c->out[n] : out_grow(c, n, more);
}

/* Append one frame (@src: its frame cache index + 1, or 0); false on ENOMEM. */
static inline bool push_frame(struct callchain_cache *c, size_t *n, const struct ds_cc_frame *frame, uint32_t src)
{
	struct ds_cc_frame *f = out_room(c, *n, 1);

	if (!f)
		return false;
	*f = *frame;
	c->src[(*n)++] = src;
	return true;
}

/* ---- the frame cache --------------------------------------------------- */

static bool is_kernel_mode(uint16_t mode)
{
	return mode == DS_MISC_KERNEL || mode == DS_MISC_GUEST_KERNEL;
}

/*
 * The cache slot for @ip in @mode for @t, and in *@stamp the stamp of the
 * maps it is found in; NULL when there is no cache or no maps.
 */
static struct frame_cache_slot *frame_cache__slot(struct ds_machine *m, struct ds_thread *t, uint16_t mode,
						  uint64_t ip, uint64_t *stamp)
{
	const struct ds_maps *mp = is_kernel_mode(mode) ? &m->kmaps : t ? t->maps : NULL;
	struct frame_cache *fc = &m->callchains->fc;

	if (!fc->slots || !mp)
		return NULL;
	*stamp = mp->stamp;
	/* multiplicative hashing: the top bits of ip * golden ratio, mixed with the stamp */
	return &fc->slots[((ip ^ mp->stamp << 40) * 0x9e3779b97f4a7c15ULL) >> (64 - FRAME_CACHE_BITS)];
}

static bool frame_cache__hit(const struct frame_cache_slot *slot, uint64_t ip, uint16_t mode, uint64_t gen,
			     uint64_t stamp)
{
	return slot->frame && slot->ip == ip && slot->mode == mode && slot->generation == gen &&
	       slot->stamp && slot->stamp == stamp;
}

/* A frame in the dense array for @slot, which has none yet; false on ENOMEM (then not cached). */
static bool frame_cache__alloc(struct frame_cache *fc, struct frame_cache_slot *slot)
{
	struct ds_cc_frame *n = dsi_grow(fc->frames, &fc->frames_cap, fc->nr + 1, sizeof(*n), 256);
	uint32_t *ids;

	if (!n)
		return false;
	fc->frames = n;
	ids = dsi_grow(fc->ids, &fc->ids_cap, fc->nr + 1, sizeof(*ids), 256);
	if (!ids)
		return false;
	fc->ids = ids;
	slot->frame = (uint32_t)++fc->nr;
	return true;
}

/* Keep frame @at of the frames out (just resolved, alone for its ip) in @slot. */
static void frame_cache__store(struct callchain_cache *c, struct frame_cache_slot *slot, size_t at,
			       uint64_t stamp, uint16_t mode, uint64_t gen)
{
	struct frame_cache *fc = &c->fc;

	if (slot->frame)   /* given to another frame: not the earlier frames' any more */
		for (size_t j = 0; j < at; j++)
			if (c->src[j] == slot->frame)
				c->src[j] = 0;
	if (!slot->frame && !frame_cache__alloc(fc, slot))
		return;
	slot->stamp = stamp;
	slot->ip = c->out[at].ip;
	slot->mode = mode;
	slot->generation = gen;
	fc->frames[slot->frame - 1] = c->out[at];
	fc->ids[slot->frame - 1] = UINT32_MAX;   /* another frame: its id is asked anew */
	c->src[at] = slot->frame;
}

/* ---- resolving a chain ------------------------------------------------- */

/* The mode a context marker starts; 0 for a value no kernel writes there */
static uint16_t context_mode(uint64_t marker, uint16_t cur)
{
	switch (marker) {
	case DS_CONTEXT_KERNEL: return DS_MISC_KERNEL;
	case DS_CONTEXT_USER: return DS_MISC_USER;
	case DS_CONTEXT_USER_DEFERRED: return DS_MISC_USER;   /* without its cookie: at the chain's end */
	case DS_CONTEXT_HV: return DS_MISC_HYPERVISOR;
	case DS_CONTEXT_GUEST_KERNEL: return DS_MISC_GUEST_KERNEL;
	case DS_CONTEXT_GUEST_USER: return DS_MISC_GUEST_USER;
	case DS_CONTEXT_GUEST: return cur;
	default: return 0;
	}
}

struct ds_cc_frame ds_resolved__frame(const struct ds_resolved *r, size_t k)
{
	return (struct ds_cc_frame){ .ip = r->ip, .sym = r->frames[k].name,
				     .offset = r->frames[k].offset, .dso = r->dso,
				     .inlined = r->frames[k].inlined, .kernel = r->kernel,
				     .elf_sym = r->frames[k].elf_name, .sym_size = r->frames[k].size,
				     .addr = r->addr, .map_start = r->map_start,
				     .map_end = r->map_end, .map_pgoff = r->map_pgoff,
				     .dso_obj = r->dso_obj, .object = r->frames[k].object };
}

/* Append the frames of @ip resolved now, and keep a lone one in @slot (if any); false on ENOMEM. */
static bool push_resolved(struct ds_machine *m, struct ds_thread *t, uint16_t mode, uint64_t ip,
			  struct frame_cache_slot *slot, uint64_t stamp, uint64_t gen, size_t *n)
{
	struct callchain_cache *c = m->callchains;
	struct ds_resolved r;
	struct ds_cc_frame *f;

	ds_machine__resolve(m, t, mode, ip, &r);
	f = out_room(c, *n, r.nr_frames);
	if (!f)
		return false;
	for (size_t k = 0; k < r.nr_frames; k++) {
		c->src[*n + k] = 0;
		f[k] = ds_resolved__frame(&r, k);
	}
	if (slot && r.nr_frames == 1)
		frame_cache__store(c, slot, *n, stamp, mode, gen);
	*n += r.nr_frames;
	return true;
}

/* Append the frames of @ip in @mode, from the frame cache if it has them; false on ENOMEM. */
static inline bool push_entry(struct ds_machine *m, struct ds_thread *t, uint16_t mode, uint64_t ip,
			      uint64_t gen, size_t *n)
{
	struct callchain_cache *c = m->callchains;
	uint64_t stamp = 0;
	struct frame_cache_slot *slot = frame_cache__slot(m, t, mode, ip, &stamp);

	if (slot && frame_cache__hit(slot, ip, mode, gen, stamp))
		return push_frame(c, n, &c->fc.frames[slot->frame - 1], slot->frame);
	return push_resolved(m, t, mode, ip, slot, stamp, gen, n);
}

/* The entries of @ips that are frames: all but context markers (a deferred cookie is one). */
static uint64_t chain_entries(const uint64_t *ips, uint64_t nr)
{
	uint64_t n = 0;

	for (uint64_t i = 0; i < nr; i++) {
		if (ips[i] == DS_CONTEXT_USER_DEFERRED && i + 1 < nr)
			i++;
		else if (ips[i] >= DS_CONTEXT_MAX)
			continue;
		n++;
	}
	return n;
}

/*
 * Resolve @ips into the frames out; the number of frames, 0 for a corrupt
 * chain.  The first @skip entries are passed over (their markers still
 * set the mode).
 */
static size_t resolve_chain(struct ds_machine *m, struct ds_thread *t, const uint64_t *ips, uint64_t nr,
			    unsigned max_stack, uint64_t skip, bool unwound)
{
	uint16_t mode = DS_MISC_USER;
	unsigned taken = 0;
	size_t n = 0;
	uint64_t gen = ds_symbols__generation(m->syms);
	bool addresses = false;   /* past an unwound chain's PERF_CONTEXT_USER */

	for (uint64_t i = 0; i < nr && taken < max_stack; i++) {
		if (addresses) {
			if (!push_entry(m, t, mode, ips[i], gen, &n))
				break;
		} else if (ips[i] == DS_CONTEXT_USER_DEFERRED && i + 1 < nr) {
			struct ds_cc_frame cookie = { .ip = ips[++i], .dso = "[unknown]", .cookie = true };

			if (skip) {
				skip--;
				continue;
			}
			if (!push_frame(m->callchains, &n, &cookie, 0))
				break;
		} else if (ips[i] >= DS_CONTEXT_MAX) {
			/*
			 * Past the entries taken (skip), as perf's walk never
			 * gets there; else a chain with a bad marker (a
			 * frame-pointer walk that read -2s from a freed stack)
			 * is corrupt: none of it, as perf's.
			 */
			uint16_t next = context_mode(ips[i], mode);

			if (!next && !skip)
				return 0;
			mode = next ? next : mode;
			addresses = unwound && ips[i] == DS_CONTEXT_USER;
			continue;
		} else if (skip) {
			skip--;
			continue;
		} else if (!push_entry(m, t, mode, ips[i], gen, &n)) {
			break;
		}
		taken++;
	}
	return n;
}

/* ---- the chain cache --------------------------------------------------- */

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
	return dsi_hash64(a ^ (b << 17 | b >> 47) ^ (c << 31 | c >> 33) ^ (d << 47 | d >> 17) ^ nr);
}

static bool chain_hit(const struct ds_machine *m, const struct chain_slot *s, const struct ds_thread *t,
		      uint64_t h, const uint64_t *ips, uint64_t nr, unsigned max_stack, uint64_t gen)
{
	const struct chain_cache *cc = &m->callchains->chains;

	return s->epoch == cc->epoch && s->hash == h && s->nr_ips == nr && s->max_stack == max_stack &&
	       s->generation == gen && s->ustamp == t->maps->stamp && s->kstamp == m->kmaps.stamp &&
	       (!nr || !memcmp(cc->arena + s->off + s->nr_frames * sizeof(struct ds_cc_frame), ips, nr * sizeof(*ips)));
}

/* Room for @need bytes in the arena, a new epoch if it is full; where it starts. */
static size_t chain_arena_take(struct chain_cache *cc, size_t need)
{
	size_t at;

	if (cc->used + need > CHAIN_ARENA) {
		cc->epoch++;   /* every cached chain is stale: refill from the start */
		cc->used = 0;
	}
	if (cc->used + need > cc->populated) {   /* in 64 KiB steps, not a fault per page */
		size_t step = CHAIN_ARENA - cc->populated < (64u << 10) ? CHAIN_ARENA - cc->populated : (64u << 10);

		dsi_prefault_write(cc->arena + cc->populated, step);
		cc->populated += step;
	}
	at = cc->used;
	cc->used += need;
	return at;
}

/* Copy chain @ips, resolved into @out, into the arena and @s; false (not cached) when it is too long. */
static bool chain_store(struct ds_machine *m, struct chain_slot *s, const struct ds_thread *t, uint64_t h,
			const uint64_t *ips, uint64_t nr, unsigned max_stack, uint64_t gen,
			const struct ds_callchain *out)
{
	struct chain_cache *cc = &m->callchains->chains;
	size_t fbytes = out->nr * sizeof(*out->frames), need = fbytes + nr * sizeof(*ips), at;

	if (need > CHAIN_MAX_BYTES)
		return false;
	at = chain_arena_take(cc, need);
	if (fbytes)   /* fuzz finding: no frames can come as NULL, and memcpy(NULL, 0) is UB */
		memcpy(cc->arena + at, out->frames, fbytes);
	if (nr)
		memcpy(cc->arena + at + fbytes, ips, nr * sizeof(*ips));
	*s = (struct chain_slot){ .hash = h, .id = ++cc->last_id, .ustamp = t->maps->stamp, .kstamp = m->kmaps.stamp,
				  .generation = gen, .epoch = cc->epoch, .max_stack = max_stack,
				  .nr_ips = (uint32_t)nr, .nr_frames = (uint32_t)out->nr, .off = at,
				  .shape = SHAPE_UNKNOWN };
	return true;
}

/*
 * The chain cache's max_stack is a limit: the entries taken, with
 * FROM_ROOT_LIMIT when they are the outermost (a chain taken either way
 * is cached apart).
 */
#define FROM_ROOT_LIMIT (1u << 31)
/* ... and with UNWOUND_LIMIT when the chain is an unwound one (DS_CALLCHAIN_UNWOUND) */
#define UNWOUND_LIMIT (1u << 30)

static void resolve_out(struct ds_machine *m, struct ds_thread *t, const uint64_t *ips, uint64_t nr,
			unsigned limit, struct ds_callchain *out)
{
	unsigned max_stack = limit & ~(FROM_ROOT_LIMIT | UNWOUND_LIMIT);
	uint64_t skip = 0;

	if (limit & FROM_ROOT_LIMIT) {
		uint64_t entries = chain_entries(ips, nr);

		skip = entries > max_stack ? entries - max_stack : 0;
	}
	out->nr = resolve_chain(m, t, ips, nr, max_stack, skip, limit & UNWOUND_LIMIT);
	out->frames = m->callchains->out;
}

/* @ips resolved into out->frames and out->nr through the chain cache; its slot there, NULL if not cached. */
static struct chain_slot *lookup_chain(struct ds_machine *m, struct ds_thread *t, const uint64_t *ips, uint64_t nr,
				       unsigned max_stack, struct ds_callchain *out)
{
	struct chain_cache *cc = &m->callchains->chains;
	uint64_t gen = ds_symbols__generation(m->syms), h;
	struct chain_slot *s;

	if (!cc->slots || !t || !t->maps || nr > CHAIN_MAX_BYTES / sizeof(*ips)) {
		resolve_out(m, t, ips, nr, max_stack, out);
		return NULL;
	}
	h = chain_hash(m, t, ips, nr, max_stack, gen);
	s = &cc->slots[h >> (64 - CHAIN_CACHE_BITS)];
	if (chain_hit(m, s, t, h, ips, nr, max_stack, gen)) {
		out->frames = (const struct ds_cc_frame *)(const void *)(cc->arena + s->off);
		out->nr = s->nr_frames;
		return s;
	}
	resolve_out(m, t, ips, nr, max_stack, out);
	/* resolving may load a file that makes results stale: then not cached */
	if (ds_symbols__generation(m->syms) == gen && chain_store(m, s, t, h, ips, nr, max_stack, gen, out))
		return s;
	return NULL;
}

/* ---- shapes ------------------------------------------------------------ */

/* The shape table's id of @f, remembered with the cached frame it came from (@src: its index + 1, 0: none). */
static uint32_t frame_id_of(struct callchain_cache *c, const struct ds_cc_frame *f, uint32_t src)
{
	uint32_t id;

	if (!src)
		return dsi_shape_table__frame_id(c->shapes, f);
	id = c->fc.ids[src - 1];
	if (id == UINT32_MAX)
		id = c->fc.ids[src - 1] = dsi_shape_table__frame_id(c->shapes, f);
	return id;
}

/*
 * The shape of @n frames, a new one if unseen; 0 if none can be kept.
 * @src says where each frame came from (see callchain_cache.src; NULL if
 * unknown): a frame's id is worked out once per cached frame, not once per
 * chain it is in.
 */
static uint64_t shape_of(struct callchain_cache *c, const struct ds_cc_frame *f, size_t n, const uint32_t *src)
{
	uint32_t *ids;

	/* an unresolved deferred chain ends in its cookie, unique to its kernel
	 * entry: such chains never share a shape, so none is kept */
	if (!n || n > UINT32_MAX)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (f[i].cookie)
			return 0;
	if (!c->shapes && !(c->shapes = dsi_shape_table__new()))
		return 0;
	ids = dsi_grow(c->ids, &c->ids_cap, n, sizeof(*ids), 256);
	if (!ids)
		return 0;
	c->ids = ids;
	for (size_t i = 0; i < n; i++)
		if ((ids[i] = frame_id_of(c, &f[i], src ? src[i] : 0)) == UINT32_MAX)
			return 0;
	return dsi_shape_table__add(c->shapes, ids, n);
}

/* The shape of chain @out (cached in @s, if any): worked out when first asked, then kept with the chain. */
static uint64_t chain_shape(struct ds_machine *m, struct chain_slot *s, const struct ds_callchain *out)
{
	struct callchain_cache *c = m->callchains;
	uint64_t shape;

	if (s && s->shape != SHAPE_UNKNOWN)
		return s->shape;
	/* frames just resolved are in out, and src says where each came from */
	shape = out->frames ? shape_of(c, out->frames, out->nr, out->frames == c->out ? c->src : NULL) : 0;
	if (s)
		s->shape = shape;
	return shape;
}

void ds_machine__callchain(struct ds_machine *m, struct ds_thread *t, const uint64_t *ips, uint64_t nr,
			   unsigned max_stack, unsigned flags, struct ds_callchain *out)
{
	unsigned limit = max_stack < UNWOUND_LIMIT ? max_stack : UNWOUND_LIMIT - 1;
	struct chain_slot *s;

	if (flags & DS_CALLCHAIN_FROM_ROOT)
		limit |= FROM_ROOT_LIMIT;
	if (flags & DS_CALLCHAIN_UNWOUND)
		limit |= UNWOUND_LIMIT;
	s = lookup_chain(m, t, ips, nr, limit, out);

	out->id = s ? s->id : 0;
	out->shape = flags & DS_CALLCHAIN_SHAPE ? chain_shape(m, s, out) : 0;
}

const uint32_t *ds_machine__shape_frames(const struct ds_machine *m, uint64_t shape, size_t *nr)
{
	return dsi_shape_table__frames(m->callchains->shapes, shape, nr);
}
