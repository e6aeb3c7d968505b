// SPDX-License-Identifier: MIT
/*
 * dstack script: samples with stitched callchains, in the text format of
 * `perf script` 7.2: the fields perf shows by default for each kind of
 * event (or those -F names: script_fields.c), the event column padded to
 * the longest event name, and either the sample's "ip sym+off (dso)" on
 * its own line or its callchain below it, inlined frames expanded.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "cli.h"
#include "dstack/log.h"
#include "dstack/machine.h"
#include "dstack/session.h"
#include "dstack/tracepoint.h"
#include "util/grow.h"
#include "util/hashmap.h"
#include "util/outbuf.h"
#include "samples.h"
#include "script_fields.h"
#include "header.h"

/*
 * Formatted frame lines, direct-mapped by frame: a profile prints few
 * distinct frames many times (kernel.fp: 1,036 distinct in 460,244), so
 * most lines are one memcpy instead of two hex conversions and four copies.
 * The names are interned (equal pointers for equal names) and live as long
 * as the machine, so a slot is valid while its key fields are equal.  A
 * slot names its line in a dense array that grows as slots are first used:
 * a short profile touches a few pages, not the whole table (page faults
 * are dear in a VM).
 */
#define FRAME_CACHE_BITS 12
#define FRAME_CACHE_SLOTS (1u << FRAME_CACHE_BITS)
#define FRAME_TEXT_MAX 112

/* What a callchain line or the sample's ip shows besides the address (-F). */
/* PO_KOFF: with PO_DSOFF, no kernel symbols were read: perf's kernel object is then a file like
 * another, and its addresses get an offset ("[kernel.kallsyms]+0xffffffff81000000") */
enum { PO_SYM = 1, PO_SYMOFF = 2, PO_DSO = 4, PO_DSOFF = 8, PO_SRCLINE = 16, PO_IP = 32, PO_KOFF = 64 };

struct frame_line {
	uint64_t ip, offset;
	const char *sym, *dso;
	bool inlined, cookie;
	uint8_t opts;              /* the PO_* it was formatted with */
	uint8_t depth;             /* with PO_SRCLINE: the frame's place in its inline chain */
	uint8_t len;               /* 0: empty slot */
	char text[FRAME_TEXT_MAX];
};

/*
 * Formatted callchains, by the machine's chain id (equal ids, equal
 * frames): a profile prints its chains over and over, so most samples
 * print theirs as one copy.  The text lives in a bounded arena; when it is
 * full the epoch moves on and it refills.
 */
#define CHAIN_TEXT_BITS 12
#define CHAIN_TEXT_ARENA (1u << 20)
#define CHAIN_TEXT_MAX (16u << 10)   /* longer chains are printed each time */

struct chain_text {
	uint64_t id;
	uint32_t off, len, epoch;
	uint8_t opts;
};

struct script {
	struct outbuf *out;
	struct ds_machine *machine;
	const struct ds_reader *reader;
	bool no_merge;
	bool header, header_only;   /* --header, --header-only: the recording's header first */
	const char *input;
	unsigned max_stack;
	struct script_fields f;
	struct sample_filter filter;
	bool filtering;
	bool prepared;              /* fields checked against the events (at the first one) */
	bool bad_fields;            /* they failed the check: said why */
	bool use_callchain;         /* some event samples callchains (perf's symbol_conf.use_callchain) */
	bool hide_callchain;        /* -G: the sample's own ip, never its callchain */
	bool ns, reltime, deltatime; /* --ns, --reltime, --deltatime */
	bool show_task, show_mmap, show_switch; /* --show-task-events, --show-mmap-events, --show-switch-events */
	bool show_lost;                          /* --show-lost-events */
	const char *symbols;                     /* -S/--symbols: the comma list (argv's), NULL for all */
	uint64_t first_time, prev_time;
	int name_width;             /* the longest event name */
	int data_src_width;         /* perf pads the data source to the widest seen so far */
	uint8_t ip_opts[ST_NR];
	uint8_t koff[ST_NR];        /* PO_KOFF where the type's fields have dsoff and no kernel symbols were read */
	uint64_t perf_chain[DS_PROFILE_CHAIN_MAX];   /* a sample's chain as perf reads it (ds_profile_perf_callchain) */
	uint32_t *line_of;         /* FRAME_CACHE_SLOTS: index + 1 into lines, 0 none; NULL: no cache */
	struct frame_line *lines;
	size_t nr_lines, cap_lines;
	struct chain_text *chains;  /* 1 << CHAIN_TEXT_BITS, or NULL (no cache) */
	char *chain_arena;          /* CHAIN_TEXT_ARENA bytes */
	size_t chain_used;
	uint32_t chain_epoch;       /* from 1: a zeroed slot is stale */
	uint64_t aux_records, aux_bytes;  /* AUX-area data, not decoded: said at the end */
	struct ds_profile *profile; /* its counter reads, tracepoint text, unwinding of stack snapshots */
	struct ds_user_unwind *uu;  /* samples with a user stack snapshot */
};

/* The cached line for @slot, which has none yet; NULL on ENOMEM (then not cached). */
static struct frame_line *line_alloc(struct script *sc, uint32_t *slot)
{
	struct frame_line *n = dsi_grow(sc->lines, &sc->cap_lines, sc->nr_lines + 1, sizeof(*n), 256);

	if (!n)
		return NULL;
	sc->lines = n;
	*slot = (uint32_t)++sc->nr_lines;
	return &sc->lines[*slot - 1];
}

static uint64_t field_set(const struct script *sc, const struct ds_evsel *e)
{
	return sc->f.fields[script_field_type(e->attr.type)];
}

/* perf's time column: --reltime from the first line's time, --deltatime from the previous one's */
static void print_time(struct script *sc, uint64_t t)
{
	struct outbuf *o = sc->out;

	if (sc->reltime) {
		if (!sc->first_time)
			sc->first_time = t;
		t -= sc->first_time;
	} else if (sc->deltatime) {
		uint64_t prev = sc->prev_time;

		sc->prev_time = t;
		t = prev ? t - prev : 0;
	}
	outbuf_dec(o, t / 1000000000ULL, 5, ' ');
	outbuf_putc(o, '.');
	if (sc->ns)
		outbuf_dec(o, t % 1000000000ULL, 9, '0');
	else
		outbuf_dec(o, (t % 1000000000ULL) / 1000, 6, '0');
	outbuf_puts(o, ": ");
}

/* A pid or tid as perf's "%*d" prints it: signed, right-aligned in @width. */
static void put_id(struct outbuf *o, uint32_t id, int width)
{
	if ((int32_t)id >= 0) {
		outbuf_dec(o, id, width, ' ');
		return;
	}
	char digits[16];
	int len = snprintf(digits, sizeof(digits), "%d", (int32_t)id);

	for (int n = len; n < width; n++)
		outbuf_putc(o, ' ');
	outbuf_puts(o, digits);
}

/* comm, pid/tid, cpu, time: perf's perf_sample__fprintf_start() */
static void print_start(struct script *sc, const struct ds_event *ev, const struct ds_evsel *evsel,
			struct ds_thread *t)
{
	struct outbuf *o = sc->out;
	const struct ds_sample *s = &ev->sample;
	uint64_t fl = field_set(sc, evsel);

	if (fl & SF(COMM)) {
		char buf[24];
		const char *comm = ds_profile_script_comm(t, ev, buf);

		/* the callchain below says the rest: no column */
		if ((fl & SF(IP)) && (evsel->attr.sample_type & DS_SAMPLE_CALLCHAIN) && sc->use_callchain) {
			outbuf_puts(o, comm);
		} else {
			for (size_t n = strlen(comm); n < 16; n++)
				outbuf_putc(o, ' ');
			outbuf_puts(o, comm);
		}
		outbuf_putc(o, ' ');
	}
	if (fl & (SF(PID) | SF(TID))) {
		/* "%7d/%-7d": the kernel writes -1 for a task past its exit */
		if ((fl & SF(PID)) && (fl & SF(TID))) {
			/* "%-7d": left-aligned.  Its length is the digits', not the
			 * buffer's growth: a flush in between would empty that */
			char tid[16];
			int n = snprintf(tid, sizeof(tid), "%d", (int32_t)s->tid);

			put_id(o, s->pid, 7);
			outbuf_putc(o, '/');
			outbuf_puts(o, tid);
			for (; n < 7; n++)
				outbuf_putc(o, ' ');
		} else {
			put_id(o, (fl & SF(PID)) ? s->pid : s->tid, 7);
		}
		outbuf_putc(o, ' ');
	}
	if (fl & SF(CPU)) {
		/* perf's "[%03d] " of a record that carries no CPU: its default, -1 */
		outbuf_putc(o, '[');
		if (s->has_cpu && (int32_t)s->cpu >= 0)
			outbuf_dec(o, s->cpu, 3, '0');
		else
			outbuf_puts(o, "-01");
		outbuf_puts(o, "] ");
	}
	if ((fl & SF(TIME)) && s->time != DS_NO_TIME)
		print_time(sc, s->time);
}

/* Does perf print an offset after @dso with -F dsoff: an object in a map, or the kernel's, unread (PO_KOFF)? */
static bool dso_has_offset(const char *dso, bool kernel, uint64_t map_end, uint8_t opts)
{
	return map_end || (kernel && (opts & PO_KOFF) && strcmp(dso, "[unknown]"));
}

static void print_dso(struct outbuf *o, const char *dso, bool has_map, uint64_t addr, uint8_t opts)
{
	outbuf_puts(o, " (");
	outbuf_puts(o, dso);
	if ((opts & PO_DSOFF) && has_map) {
		outbuf_puts(o, "+0x");
		outbuf_hex(o, addr, 0);
	}
	outbuf_putc(o, ')');
}

/* "sym+0xoff", "sym" or "[unknown]", after a space */
static void print_sym(struct outbuf *o, const char *sym, uint64_t offset, uint8_t opts)
{
	outbuf_putc(o, ' ');
	if (!sym) {
		outbuf_puts(o, "[unknown]");
		return;
	}
	outbuf_puts(o, sym);
	if (opts & PO_SYMOFF) {
		outbuf_puts(o, "+0x");
		outbuf_hex(o, offset, 0);
	}
}

/*
 * perf's srcline line under a frame ("\n  wl.c:15"): what
 * ds_cc_frame__srcline says for frame @depth of the frame's inline chain,
 * " (inlined)" after it for an inlined one.  A frame outside any map
 * ("[unknown]", a deferred cookie) has none.
 */
static void print_srcline(struct outbuf *o, const struct ds_cc_frame *f, unsigned depth)
{
	char buf[512];
	size_t n;

	if (f->cookie || !strcmp(f->dso, "[unknown]"))
		return;
	n = ds_cc_frame__srcline(f, depth, false, buf, sizeof(buf));
	outbuf_puts(o, "\n  ");
	outbuf_write(o, buf, n);
	if (f->inlined)
		outbuf_puts(o, " (inlined)");
}

/* One callchain line: perf's sample__fprintf_callchain(); @depth: the frame's place in its inline chain */
static void format_frame(struct outbuf *o, const struct ds_cc_frame *f, uint8_t opts, unsigned depth)
{
	if (opts & PO_IP) {
		outbuf_putc(o, '\t');
		outbuf_hex(o, f->ip, 16);
	}
	if (f->cookie) {
		if (opts & PO_SYM)
			outbuf_puts(o, " (cookie)");
		if (opts & PO_DSO)
			outbuf_puts(o, " ([unknown])");
		outbuf_putc(o, '\n');
		return;
	}
	if (opts & PO_SYM)
		print_sym(o, f->sym, f->offset, opts);
	/* with a srcline, " (inlined)" goes after it */
	if (f->inlined && !(opts & PO_SRCLINE))
		outbuf_puts(o, " (inlined)");
	else if (!f->inlined && (opts & PO_DSO))
		print_dso(o, f->dso, dso_has_offset(f->dso, f->kernel, f->map_end, opts), f->addr, opts);
	if (opts & PO_SRCLINE)
		print_srcline(o, f, depth);
	outbuf_putc(o, '\n');
}

static bool same_frame(const struct frame_line *l, const struct ds_cc_frame *f, uint8_t opts, uint8_t depth)
{
	return l->len && l->ip == f->ip && l->sym == f->sym && l->offset == f->offset && l->opts == opts &&
	       l->dso == f->dso && l->inlined == f->inlined && l->cookie == f->cookie && l->depth == depth;
}

static void print_frame(struct script *sc, const struct ds_cc_frame *f, uint8_t opts, unsigned depth)
{
	struct outbuf *o = sc->out;
	struct frame_line *l;
	uint32_t *slot;
	unsigned long flushes;
	size_t start;

	/* the offset in the DSO is not in the key: such lines are made each time */
	if (!sc->line_of || (opts & PO_DSOFF) || depth > UINT8_MAX) {
		format_frame(o, f, opts, depth);
		return;
	}
	slot = &sc->line_of[((f->ip ^ (uintptr_t)f->sym << 16) * 0x9e3779b97f4a7c15ULL) >> (64 - FRAME_CACHE_BITS)];
	l = *slot ? &sc->lines[*slot - 1] : NULL;
	if (l && same_frame(l, f, opts, (uint8_t)depth)) {
		outbuf_write(o, l->text, l->len);
		return;
	}
	if (OUTBUF_SIZE - o->len < 2 * FRAME_TEXT_MAX)
		outbuf_flush(o);
	start = o->len;
	flushes = o->flushes;
	format_frame(o, f, opts, depth);
	/* cache the line if it is short and still whole in the buffer */
	if (o->flushes == flushes && o->len - start < FRAME_TEXT_MAX && (l || (l = line_alloc(sc, slot)))) {
		*l = (struct frame_line){ .ip = f->ip, .offset = f->offset, .sym = f->sym, .dso = f->dso,
					  .inlined = f->inlined, .cookie = f->cookie, .opts = opts,
					  .depth = (uint8_t)depth, .len = (uint8_t)(o->len - start) };
		memcpy(l->text, o->buf + start, l->len);
	}
}

static void keep_chain_text(struct script *sc, struct chain_text *c, uint64_t id, uint8_t opts, const char *text,
			    size_t len)
{
	if (sc->chain_used + len > CHAIN_TEXT_ARENA) {
		sc->chain_epoch++;   /* every kept chain is stale: refill from the start */
		sc->chain_used = 0;
	}
	memcpy(sc->chain_arena + sc->chain_used, text, len);
	*c = (struct chain_text){ .id = id, .off = (uint32_t)sc->chain_used, .len = (uint32_t)len,
				  .epoch = sc->chain_epoch, .opts = opts };
	sc->chain_used += len;
}

/*
 * @unwound: @ips is ds_user_unwind__chain's, cut to --max-stack already
 * (its kernel part and its unwind apart, as perf's): resolved whole, its
 * user entries all addresses (DS_CALLCHAIN_UNWOUND).
 */
static void print_callchain(struct script *sc, struct ds_thread *t, const uint64_t *ips, uint64_t nr,
			    bool unwound, uint8_t opts)
{
	struct outbuf *o = sc->out;
	struct ds_callchain cc;
	struct chain_text *c;
	size_t start;
	unsigned long flushes;

	ds_machine__callchain(sc->machine, t, ips, nr, unwound ? (unsigned)nr : sc->max_stack,
			      unwound ? DS_CALLCHAIN_UNWOUND : 0, &cc);
	c = cc.id && sc->chains && !(opts & PO_DSOFF)
		    ? &sc->chains[(cc.id * 0x9e3779b97f4a7c15ULL) >> (64 - CHAIN_TEXT_BITS)] : NULL;
	if (c && c->id == cc.id && c->epoch == sc->chain_epoch && c->opts == opts) {
		outbuf_write(o, sc->chain_arena + c->off, c->len);
		return;
	}
	if (c && OUTBUF_SIZE - o->len < CHAIN_TEXT_MAX)
		outbuf_flush(o);   /* so that the chain's text is whole in the buffer */
	start = o->len;
	flushes = o->flushes;
	for (size_t i = 0, group = 0, len = 0; i < cc.nr; i++) {
		/* the frames of one entry's address: its inline chain, innermost first */
		if (i - group >= len) {
			group = i;
			len = (opts & PO_SRCLINE) && i + 1 < cc.nr && cc.frames[i + 1].ip == cc.frames[i].ip ?
			      ds_cc_frame__inline_chain(&cc.frames[i]) : 1;
		}
		print_frame(sc, &cc.frames[i], opts, (unsigned)(i - group));
	}
	if (c && o->flushes == flushes && o->len - start <= CHAIN_TEXT_MAX)
		keep_chain_text(sc, c, cc.id, opts, o->buf + start, o->len - start);
}

/* perf's sample->period: the sample's, else the attr's (its frequency when it has one) */
static uint64_t sample_period(const struct ds_event *ev)
{
	if (ev->evsel->attr.sample_type & DS_SAMPLE_PERIOD)
		return ev->sample.period;
	return ev->evsel->attr.sample_period;
}

/*
 * The sample's own address resolved in @t into @r: perf's al->sym, the
 * function holding it (inlined functions are not expanded there), whose
 * symbol-table name is fr->elf_name (else DWARF's name).
 */
static const struct ds_frame *own_frame(struct script *sc, struct ds_thread *t, const struct ds_event *ev,
					struct ds_resolved *r)
{
	ds_machine__resolve(sc->machine, t, ev->sample.cpumode, ev->sample.ip, r);
	return &r->frames[r->nr_frames - 1];
}

/* The sample's own address without a callchain (own_frame) */
static void print_ip_line(struct script *sc, const struct ds_event *ev, struct ds_thread *t, uint8_t opts)
{
	struct outbuf *o = sc->out;
	const struct ds_sample *s = &ev->sample;
	struct ds_resolved r;
	const struct ds_frame *fr = own_frame(sc, t, ev, &r);

	if (opts & PO_IP) {
		outbuf_putc(o, ' ');
		outbuf_hex(o, s->ip, 16);
	}
	/* the symbol table's name (perf's al->sym), not DWARF's */
	if (opts & PO_SYM)
		print_sym(o, fr->elf_name ? fr->elf_name : fr->name, fr->offset, opts);
	if (opts & PO_DSO)
		print_dso(o, r.dso, dso_has_offset(r.dso, r.kernel, r.map_end, opts), r.addr, opts);
	if (opts & PO_SRCLINE) {
		/* the innermost position, as for a frame that is not inlined */
		struct ds_cc_frame f = { .ip = s->ip, .sym = fr->name, .offset = fr->offset, .dso = r.dso,
					 .kernel = r.kernel, .elf_sym = fr->elf_name, .addr = r.addr,
					 .map_start = r.map_start, .map_end = r.map_end, .map_pgoff = r.map_pgoff,
					 .dso_obj = r.dso_obj };

		print_srcline(o, &f, 0);
	}
}

/* Page faults' addresses are data addresses worth resolving (perf's sample_addr_correlates_sym). */
static bool addr_correlates(const struct ds_evsel *e)
{
	return e->attr.type == 1 && (e->attr.config == 2 || e->attr.config == 5 || e->attr.config == 6);
}

static void print_addr(struct script *sc, const struct ds_event *ev, struct ds_thread *t, uint64_t fl)
{
	struct outbuf *o = sc->out;
	const struct ds_sample *s = &ev->sample;
	struct ds_resolved r;
	const struct ds_frame *fr;
	/* the address is the task's or the kernel's by its value, not by where the sample was taken */
	uint16_t mode = s->addr >> 63 ? DS_MISC_KERNEL : DS_MISC_USER;

	outbuf_hex(o, s->addr, 16);
	if (!addr_correlates(ev->evsel))
		return;
	ds_machine__resolve(sc->machine, t, mode, s->addr, &r);
	fr = &r.frames[r.nr_frames - 1];
	if (fl & SF(SYM))
		print_sym(o, fr->elf_name ? fr->elf_name : fr->name, fr->offset, (fl & SF(SYMOFFSET)) ? PO_SYMOFF : 0);
	if (fl & SF(DSO))
		print_dso(o, r.dso, dso_has_offset(r.dso, r.kernel, r.map_end, sc->koff[script_field_type(ev->evsel->attr.type)]),
			  r.addr, (fl & SF(DSOFF)) ? PO_DSOFF : 0);
}

/*
 * perf's thread__find_map_fb: @addr in the sample's mode (@mode), else in
 * the mode its value says (the top half is the kernel's).  false: in no map.
 */
static bool resolve_fb(struct script *sc, struct ds_thread *t, uint16_t mode, uint64_t addr, struct ds_resolved *r)
{
	uint16_t by_value = addr >> 63 ? DS_MISC_KERNEL : DS_MISC_USER;

	for (int k = 0; k < 2; k++, mode = by_value) {
		if (mode != DS_MISC_USER && mode != DS_MISC_KERNEL)
			continue;   /* perf takes no guest or hypervisor address here */
		if (ds_machine__resolve(sc->machine, t, mode, addr, r))
			return true;
		if (mode == by_value)
			break;
	}
	return false;
}

/* A branch's flags as perf's print_bstack_flags: "/P/-/-/12/CALL/- " */
static void print_branch_flags(struct outbuf *o, uint64_t fl)
{
	/* perf's names of PERF_BR_* (0, unknown: none) and of PERF_BR_NEW_* (type 15, EXTEND_ABI) */
	static const char *const types[15] = { "", "COND", "UNCOND", "IND", "CALL", "IND_CALL", "RET", "SYSCALL",
					       "SYSRET", "COND_CALL", "COND_RET", "ERET", "IRQ", "SERROR", "NO_TX" };
	static const char *const new_types[8] = { "FAULT_ALGN", "FAULT_DATA", "FAULT_INST", "ARCH_1", "ARCH_2",
						  "ARCH_3", "ARCH_4", "ARCH_5" };
	static const char *const spec[4] = { "-", "SPEC_WRONG_PATH", "NON_SPEC_CORRECT_PATH", "SPEC_CORRECT_PATH" };
	/* perf_branch_entry's bits: mispred 0, predicted 1, in_tx 2, abort 3, cycles 4-19, type 20-23,
	 * spec 24-25, new_type 26-29; perf's not_taken 33 */
	unsigned type = fl >> 20 & 15, new_type = fl >> 26 & 15;
	bool mispred = fl & 1, predicted = fl >> 1 & 1, not_taken = fl >> 33 & 1;

	outbuf_putc(o, '/');
	if (!(mispred || predicted || not_taken))
		outbuf_putc(o, '-');
	else
		outbuf_puts(o, not_taken ? (predicted ? "PN" : "MN") : predicted ? "P" : "M");
	outbuf_printf(o, "/%c/%c/%u/%s/%s ", fl >> 2 & 1 ? 'X' : '-', fl >> 3 & 1 ? 'A' : '-', (unsigned)(fl >> 4 & 0xffff),
		      type < 15 ? types[type] : new_type < 8 ? new_types[new_type] : "(null)", spec[fl >> 24 & 3]);
}

/* " (dso)" of a branch's end @r (resolve_fb: @mapped), its offset with PO_DSOFF in @opts */
static void print_branch_dso(struct outbuf *o, const struct ds_resolved *r, bool mapped, uint8_t opts)
{
	print_dso(o, mapped ? r->dso : "[unknown]", mapped && dso_has_offset(r->dso, r->kernel, r->map_end, opts),
		  r->addr, opts);
}

/* One end of a branch as perf's brstacksym: "sym+0xoff" or "[unknown]", then " (dso)" with -F dso */
static void print_branch_sym(struct script *sc, struct ds_thread *t, uint16_t mode, uint64_t addr, uint64_t fl,
			     uint8_t opts)
{
	struct ds_resolved r;
	bool mapped = resolve_fb(sc, t, mode, addr, &r);
	const struct ds_frame *fr = &r.frames[r.nr_frames ? r.nr_frames - 1 : 0];
	const char *sym = mapped ? (fr->elf_name ? fr->elf_name : fr->name) : NULL;

	if (sym) {
		outbuf_puts(sc->out, sym);
		outbuf_puts(sc->out, "+0x");
		outbuf_hex(sc->out, fr->offset, 0);
	} else {
		outbuf_puts(sc->out, "[unknown]");
	}
	if (fl & SF(DSO))
		print_branch_dso(sc->out, &r, mapped, opts);
}

/* One end of a branch as perf's brstack: " 0xADDR" (the caller's), then " (dso)" with -F dso */
static void print_branch_addr(struct script *sc, struct ds_thread *t, uint16_t mode, uint64_t addr, uint64_t fl,
			      uint8_t opts)
{
	struct ds_resolved r;
	bool mapped;

	outbuf_puts(sc->out, "0x");
	outbuf_hex(sc->out, addr, 0);
	if (!(fl & SF(DSO)))
		return;
	mapped = resolve_fb(sc, t, mode, addr, &r);
	print_branch_dso(sc->out, &r, mapped, opts);
}

/* -F brstack / brstacksym: each branch "from/to/flags " (brstack's each after a space), as perf prints them */
static void print_brstack(struct script *sc, const struct ds_event *ev, struct ds_thread *t, uint64_t fl)
{
	const struct ds_sample *s = &ev->sample;
	const uint64_t *b = s->branch;
	bool sym = !(fl & SF(BRSTACK));   /* perf prints brstack when both are asked */
	uint8_t opts = (uint8_t)(sc->koff[script_field_type(ev->evsel->attr.type)] | ((fl & SF(DSOFF)) ? PO_DSOFF : 0));

	for (uint64_t i = 0; b && i < s->branch_nr; i++) {
		if (sym) {
			print_branch_sym(sc, t, s->cpumode, b[3 * i], fl, opts);
			outbuf_putc(sc->out, '/');
			print_branch_sym(sc, t, s->cpumode, b[3 * i + 1], fl, opts);
		} else {
			outbuf_putc(sc->out, ' ');
			print_branch_addr(sc, t, s->cpumode, b[3 * i], fl, opts);
			outbuf_putc(sc->out, '/');
			print_branch_addr(sc, t, s->cpumode, b[3 * i + 1], fl, opts);
		}
		print_branch_flags(sc->out, b[3 * i + 2]);
	}
}

/* perf's name of x86 register @r: the general ones, XMM0-15 (two slots each), else "unknown" */
static const char *reg_name(unsigned r, char buf[8])
{
	const char *n = ds_x86_reg__name(r);

	if (n)
		return n;
	if (r >= 32 && r < 64 && !(r & 1)) {
		snprintf(buf, 8, "XMM%u", (r - 32) / 2);
		return buf;
	}
	return "unknown";
}

/* -F iregs/uregs: " ABI:2    AX:0x200 ..." as perf_sample__fprintf_regs (nothing for a sample without them) */
static void print_regs(struct outbuf *o, uint64_t abi, const uint64_t *regs, uint64_t mask)
{
	unsigned i = 0;
	char buf[8];

	if (!regs)
		return;
	outbuf_printf(o, " ABI:%llu ", (unsigned long long)abi);
	for (unsigned r = 0; r < 64; r++)
		if (mask >> r & 1)
			outbuf_printf(o, "%5s:0x%llx ", reg_name(r, buf), (unsigned long long)regs[i++]);
}

/* perf's unit_number__scnprintf(): "4K", "2M", "N/A" */
static void print_page_size(struct outbuf *o, uint64_t size)
{
	static const char unit[] = "BKMG";
	int i = 0;

	outbuf_putc(o, ' ');
	if (!size) {
		outbuf_puts(o, "N/A");
		return;
	}
	while (size / 1024 > 1 && i < 3) {
		size /= 1024;
		i++;
	}
	outbuf_dec(o, size, 0, ' ');
	outbuf_putc(o, unit[i]);
}

/*
 * The sample's trace fields (tracepoints' "trace" field), between the
 * event name and the addresses, as perf prints them (lib/format/tracepoint.c).
 */
static void print_trace_fields(struct script *sc, const struct ds_event *ev, struct ds_thread *t)
{
	char buf[4096], *big;
	size_t n;
	const char *text = walk_trace_text(sc->profile, ev, t, buf, sizeof(buf), &n, &big);

	if (text)
		outbuf_write(sc->out, text, n);
	else   /* no memory for a long text: its start */
		outbuf_write(sc->out, buf, sizeof(buf) - 1);
	free(big);
}

/*
 * perf's decoding of a data source (union perf_mem_data_src, in
 * linux/perf_event.h; the words are perf's, tools/perf/util/mem-events.c
 * read as a reference): "|OP LOAD|LVL L1 hit|SNP None|TLB L1 or L2 hit|LCK No|BLK  N/A".
 */
struct strbuf {
	char *p;
	size_t n, cap;
};

static void sb_add(struct strbuf *b, const char *s)
{
	size_t l = strlen(s);

	if (b->n + l >= b->cap)
		l = b->cap - 1 - b->n;
	memcpy(b->p + b->n, s, l);
	b->n += l;
	b->p[b->n] = 0;
}

/* the names of the set bits of @m, from bit 0, joined by " or " */
static bool sb_bits(struct strbuf *b, uint64_t m, const char *const *names, size_t nr, size_t *printed)
{
	for (size_t i = 0; m && i < nr; i++, m >>= 1) {
		if (!(m & 1))
			continue;
		if ((*printed)++)
			sb_add(b, " or ");
		sb_add(b, names[i]);
	}
	return *printed != 0;
}

#define BITS(v, lo, n) (((v) >> (lo)) & ((1ULL << (n)) - 1))

static void decode_op(struct strbuf *b, uint64_t op)
{
	sb_add(b, op & 1 ? "N/A" : op & 2 ? "LOAD" : op & 4 ? "STORE" : op & 8 ? "PFETCH" : op & 16 ? "EXEC" : "No");
}

static void decode_lvl(struct strbuf *b, uint64_t v)
{
	static const char *const lvl[] = { "N/A", "HIT", "MISS", "L1", "LFB/MAB", "L2", "L3", "Local RAM",
					   "Remote RAM (1 hop)", "Remote RAM (2 hops)", "Remote Cache (1 hop)",
					   "Remote Cache (2 hops)", "I/O", "Uncached" };
	static const char *const lvlnum[16] = { [1] = "L1", [2] = "L2", [3] = "L3", [4] = "L4", [5] = "L2 MHB",
						[6] = "Memory-side Cache", [7] = "Uncached", [9] = "CXL",
						[10] = "I/O", [11] = "Any cache", [12] = "LFB/MAB", [13] = "RAM",
						[14] = "PMEM", [15] = "N/A" };
	static const char *const hops[] = { "N/A", "core, same node", "node, same socket", "socket, same board",
					    "board", "", "", "" };
	uint64_t m = BITS(v, 5, 14), num = BITS(v, 33, 4);
	const char *hit_miss = m & 2 ? "hit" : m & 4 ? "miss" : "";
	size_t printed = 0;

	if (num && num != 15) {
		if (BITS(v, 37, 1))
			sb_add(b, "Remote ");
		if (BITS(v, 43, 3)) {
			sb_add(b, hops[BITS(v, 43, 3)]);
			sb_add(b, " ");
		}
		if (lvlnum[num]) {
			sb_add(b, lvlnum[num]);
		} else {
			char u[32];

			snprintf(u, sizeof(u), "Unknown level %u", (unsigned)num);
			sb_add(b, u);
		}
		sb_add(b, " ");
		sb_add(b, hit_miss);
		return;
	}
	m &= ~7ULL;
	if (m && sb_bits(b, m, lvl, sizeof(lvl) / sizeof(*lvl), &printed)) {
		sb_add(b, " ");
		sb_add(b, hit_miss);
		return;
	}
	sb_add(b, "N/A");
}

static void decode_snoop(struct strbuf *b, uint64_t v)
{
	static const char *const snoop[] = { "N/A", "None", "Hit", "Miss", "HitM" };
	static const char *const snoopx[] = { "Fwd", "Peer" };
	size_t printed = 0;

	sb_bits(b, BITS(v, 19, 5), snoop, 5, &printed);
	sb_bits(b, BITS(v, 38, 2), snoopx, 2, &printed);
	if (!printed)
		sb_add(b, "N/A");
}

static void decode_tlb(struct strbuf *b, uint64_t v)
{
	static const char *const tlb[] = { "N/A", "HIT", "MISS", "L1", "L2", "Walker", "Fault" };
	uint64_t m = BITS(v, 26, 7);
	size_t printed = 0;

	sb_bits(b, m & ~6ULL, tlb, 7, &printed);
	if (!printed)
		sb_add(b, "N/A");
	if (m & 2)
		sb_add(b, " hit");
	if (m & 4)
		sb_add(b, " miss");
}

static void decode_blk(struct strbuf *b, uint64_t v)
{
	uint64_t m = BITS(v, 40, 3);

	if (!m || (m & 1)) {
		sb_add(b, " N/A");
		return;
	}
	if (m & 2)
		sb_add(b, " Data");
	if (m & 4)
		sb_add(b, " Addr");
}

/* The decoded text of @v into @out (@cap bytes); its length. */
static size_t data_src_decode(uint64_t v, char *out, size_t cap)
{
	struct strbuf b = { out, 0, cap };
	uint64_t lock = BITS(v, 24, 2);

	out[0] = 0;
	sb_add(&b, "|OP ");
	decode_op(&b, BITS(v, 0, 5));
	sb_add(&b, "|LVL ");
	decode_lvl(&b, v);
	sb_add(&b, "|SNP ");
	decode_snoop(&b, v);
	sb_add(&b, "|TLB ");
	decode_tlb(&b, v);
	sb_add(&b, "|LCK ");
	sb_add(&b, lock & 1 ? "N/A" : lock & 2 ? "Yes" : "No");
	sb_add(&b, "|BLK ");
	decode_blk(&b, v);
	return b.n;
}

/* The AUX area bytes a PERF_RECORD_AUX announces (u64 offset, size, flags after the header). */
static uint64_t aux_size(const struct ds_event *ev)
{
	uint64_t n;

	if (ev->hdr->size < sizeof(*ev->hdr) + 16)
		return 0;
	memcpy(&n, (const char *)ev->hdr + sizeof(*ev->hdr) + 8, sizeof(n));
	return n;
}

static void print_data_src(struct script *sc, uint64_t data_src)
{
	char text[160];
	size_t n = (size_t)snprintf(text, sizeof(text), "%16llx ", (unsigned long long)data_src);

	n += data_src_decode(data_src, text + n, sizeof(text) - n);
	if ((int)n > sc->data_src_width)
		sc->data_src_width = (int)n;
	outbuf_write(sc->out, text, n);
	for (; (int)n < sc->data_src_width; n++)
		outbuf_putc(sc->out, ' ');
}

/* @ev as a sample of @evsel with @period (a counter it read, or its own) */
static void print_sample(struct script *sc, const struct ds_event *ev, const struct ds_evsel *evsel,
			 uint64_t period)
{
	const struct ds_sample *s = &ev->sample;
	int type = script_field_type(evsel->attr.type);
	uint64_t fl = sc->f.fields[type];
	struct ds_thread *t;
	struct outbuf *o = sc->out;
	const uint64_t *unwound;
	uint64_t unwound_nr = 0;

	if (!fl)
		return;
	t = ds_machine__thread(sc->machine, (int32_t)s->pid, (int32_t)s->tid);
	print_start(sc, ev, evsel, t);
	t = ds_profile_script_thread(sc->machine, t, ev);   /* its addresses' (none after its EXIT) */
	if (fl & SF(PERIOD)) {
		outbuf_dec(o, period, 10, ' ');
		outbuf_putc(o, ' ');
	}
	if (fl & SF(EVNAME)) {
		for (size_t n = strlen(evsel->name); (int)n < sc->name_width; n++)
			outbuf_putc(o, ' ');
		outbuf_puts(o, evsel->name);
		outbuf_puts(o, ": ");
	}
	if ((fl & SF(TRACE)) && s->raw)
		print_trace_fields(sc, ev, t);
	if (fl & SF(ADDR))
		print_addr(sc, ev, t, fl);
	if (fl & SF(DATA_SRC))
		print_data_src(sc, s->data_src);
	/* a weight struct holds the weight in its low 32 bits, then two 16-bit latencies */
	if (fl & SF(WEIGHT))
		outbuf_dec(o, (ev->evsel->attr.sample_type & DS_SAMPLE_WEIGHT_STRUCT) ? (uint32_t)s->weight : s->weight,
			   16, ' ');
	if (fl & SF(INS_LAT))
		outbuf_dec(o, (uint16_t)(s->weight >> 32), 16, ' ');
	if (fl & SF(RETIRE_LAT))
		outbuf_dec(o, (uint16_t)(s->weight >> 48), 16, ' ');
	if (fl & SF(IP)) {
		uint8_t opts = sc->ip_opts[type];

		if (sc->use_callchain &&
		    (unwound = ds_user_unwind__chain(sc->uu, t, ev, sc->max_stack, &unwound_nr))) {
			outbuf_putc(o, '\n');
			print_callchain(sc, t, unwound, unwound_nr, true, opts);
		} else if (s->callchain && sc->use_callchain) {
			uint64_t n;
			const uint64_t *ips = ds_profile_perf_callchain(ev, sc->perf_chain, &n);

			outbuf_putc(o, '\n');
			print_callchain(sc, t, ips, n, false, opts);
		} else {
			print_ip_line(sc, ev, t, opts);
		}
	}
	if (fl & SF(IREGS))
		print_regs(o, s->regs_intr_abi, s->regs_intr, ev->evsel->attr.sample_regs_intr);
	if (fl & SF(UREGS))
		print_regs(o, s->regs_user_abi, s->regs_user, ev->evsel->attr.sample_regs_user);
	if (fl & (SF(BRSTACK) | SF(BRSTACKSYM)))
		print_brstack(sc, ev, t, fl);
	if (fl & SF(PHYS_ADDR))
		outbuf_hex(o, s->phys_addr, 16);
	if (fl & SF(DATA_PAGE_SIZE))
		print_page_size(o, s->data_page_size);
	if (fl & SF(CODE_PAGE_SIZE))
		print_page_size(o, s->code_page_size);
	outbuf_putc(o, '\n');
}

/* A deferred callchain record on its own (--no-merge-callchains), with its event's fields */
static void print_deferred(struct script *sc, const struct ds_event *ev)
{
	struct ds_deferred_event d;
	const char *why;
	const struct ds_sample *s = &ev->sample;
	int type = script_field_type(ev->evsel->attr.type);
	struct ds_thread *t;

	if (!sc->f.fields[type] || ds_deferred__parse(ev->evsel, ev->hdr, &d, &why))
		return;
	t = ds_machine__thread(sc->machine, (int32_t)s->pid, (int32_t)s->tid);
	print_start(sc, ev, ev->evsel, t);
	t = ds_profile_script_thread(sc->machine, t, ev);
	outbuf_puts(sc->out, "DEFERRED CALLCHAIN [cookie: ");
	outbuf_hex(sc->out, d.cookie, 0);
	outbuf_putc(sc->out, ']');
	if ((sc->f.fields[type] & SF(IP)) && sc->use_callchain) {
		outbuf_putc(sc->out, '\n');
		print_callchain(sc, t, d.ips, d.nr, false, sc->ip_opts[type]);
	} else if (sc->f.fields[type] & SF(IP)) {
		print_ip_line(sc, ev, t, sc->ip_opts[type]);   /* -G: the record's own ip, 0, as perf */
	}
	outbuf_putc(sc->out, '\n');
}

/*
 * At the first event (the events are all known then, in pipe mode too):
 * the fields checked against them, the event column's width, whether
 * callchains are printed.
 */
static void print_header(struct script *sc)
{
	outbuf_flush(sc->out);
	header_print(stdout, sc->input, sc->reader);
	if (fflush(stdout) || ferror(stdout))
		sc->out->error = sc->out->error ? sc->out->error : EIO;
	sc->header = false;
}

static int prepare(struct script *sc)
{
	size_t nr = ds_reader__nr_evsels(sc->reader);

	sc->prepared = true;
	if (sc->header && ds_reader__info(sc->reader)->pipe)
		print_header(sc);   /* a pipe's features have come by now */
	if (script_fields_check(&sc->f, sc->reader)) {
		sc->bad_fields = true;
		return -1;
	}
	/* perf adds a pipe's callchain fields only where it uses callchains (not with -G) */
	if (ds_reader__info(sc->reader)->pipe && !sc->hide_callchain)
		script_fields_pipe_callchains(&sc->f, sc->reader);
	sc->use_callchain = false;
	for (size_t i = 0; i < nr; i++) {
		const struct ds_evsel *e = ds_reader__evsel(sc->reader, i);
		int len = (int)strlen(e->name);

		if (len > sc->name_width)
			sc->name_width = len;
		sc->use_callchain |= !!(e->attr.sample_type & DS_SAMPLE_CALLCHAIN) && !sc->hide_callchain;
	}
	/* tracepoints show where they were hit when they have callchains, unless -F said otherwise */
	if (sc->use_callchain && !sc->f.user_set[ST_TRACE])
		for (size_t i = 0; i < nr; i++) {
			const struct ds_evsel *e = ds_reader__evsel(sc->reader, i);

			if (script_field_type(e->attr.type) == ST_TRACE && (e->attr.sample_type & DS_SAMPLE_CALLCHAIN)) {
				sc->f.fields[ST_TRACE] |= SF(IP) | SF(SYM) | SF(SYMOFFSET) | SF(DSO);
				break;
			}
		}
	for (int t = 0; t < ST_NR; t++) {
		uint64_t fl = sc->f.frame_opts[t] ? sc->f.fields[t] : 0;

		sc->ip_opts[t] = (uint8_t)(((fl & SF(IP)) ? PO_IP : 0) | ((fl & SF(SYM)) ? PO_SYM : 0) |
					   ((fl & SF(SYMOFFSET)) ? PO_SYMOFF : 0) | ((fl & SF(DSO)) ? PO_DSO : 0) |
					   ((fl & SF(DSOFF)) ? PO_DSOFF : 0) | ((fl & SF(SRCLINE)) ? PO_SRCLINE : 0));
		/* asked only with dsoff: reading kallsyms is no cost of the other outputs */
		if ((sc->f.fields[t] & SF(DSOFF)) && !ds_symbols__kernel_known(ds_profile__symbols(sc->profile)))
			sc->koff[t] = PO_KOFF;
		sc->ip_opts[t] |= sc->koff[t];
	}
	return 0;
}

struct script_read {
	struct script *sc;
	const struct ds_event *ev;
};

static int print_read_one(void *ctx, const struct ds_evsel *evsel, uint64_t period)
{
	struct script_read *sr = ctx;

	print_sample(sr->sc, sr->ev, evsel, period);
	return 0;
}

/* Is @name one of the comma list @list's entries (perf's strlist)? */
static bool in_list(const char *list, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = list; *p;) {
		size_t len = strcspn(p, ",");

		if (len == n && !memcmp(p, name, n))
			return true;
		p += len + (p[len] == ',');
	}
	return false;
}

/*
 * -S: does the sample's own address lie in a symbol named, as perf's
 * machine__resolve filters it?  (perf also takes a symbol's start address,
 * "0x...", but its own matches of those do not follow the samples'
 * symbols: user ones match none.  Names only here.)
 */
static bool symbol_wanted(struct script *sc, const struct ds_event *ev)
{
	const struct ds_sample *s = &ev->sample;
	struct ds_thread *t = ds_machine__thread(sc->machine, (int32_t)s->pid, (int32_t)s->tid);
	struct ds_resolved r;
	const struct ds_frame *fr = own_frame(sc, ds_profile_script_thread(sc->machine, t, ev), ev, &r);
	const char *name = fr->elf_name ? fr->elf_name : fr->name;

	return name && in_list(sc->symbols, name);
}

static bool wanted(struct script *sc, const struct ds_event *ev)
{
	const struct ds_sample *s = &ev->sample;
	struct ds_thread *t;
	const char *comm;
	char buf[24];

	if (sc->symbols && !symbol_wanted(sc, ev))
		return false;
	if (!sc->filtering)
		return true;
	t = ds_machine__thread(sc->machine, (int32_t)s->pid, (int32_t)s->tid);
	comm = ds_profile_script_comm(t, ev, buf);
	return sample_filter_wanted(&sc->filter, s, comm);
}

/* The text of a MMAP or MMAP2 record after "PERF_RECORD_MMAP[2]", as perf_event__fprintf_mmap[2]. */
static void print_mmap_text(struct outbuf *o, const struct ds_event *ev)
{
	struct ds_mmap_event m;
	const char *why;

	if (ds_mmap__parse(ev->evsel, ev->hdr, &m, &why)) {
		outbuf_puts(o, ": ?\n");
		return;
	}
	outbuf_printf(o, " %d/%d: [%#llx(%#llx) @ %#llx", (int)m.pid, (int)m.tid, (unsigned long long)m.start,
		      (unsigned long long)m.len, (unsigned long long)m.pgoff);
	if (ev->hdr->type == DS_REC_MMAP) {
		outbuf_printf(o, "]: %c %s\n", (ev->hdr->misc & DS_MISC_MMAP_DATA) ? 'r' : 'x', m.filename);
		return;
	}
	if (m.has_build_id) {
		outbuf_puts(o, " <");
		for (unsigned i = 0; i < m.build_id_size; i++)
			outbuf_printf(o, "%02x", m.build_id[i]);
		outbuf_putc(o, '>');
	} else {
		outbuf_printf(o, " %02x:%02x %llu %llu", m.maj, m.min, (unsigned long long)m.ino,
			      (unsigned long long)m.ino_generation);
	}
	outbuf_printf(o, "]: %c%c%c%c %s\n", (m.prot & PROT_READ) ? 'r' : '-', (m.prot & PROT_WRITE) ? 'w' : '-',
		      (m.prot & PROT_EXEC) ? 'x' : '-', (m.flags & MAP_SHARED) ? 's' : 'p', m.filename);
}

/* A SWITCH record's text after its name, as perf_event__fprintf_switch. */
static void print_switch_text(struct outbuf *o, const struct ds_event *ev)
{
	bool out = ev->hdr->misc & DS_MISC_SWITCH_OUT;
	const char *in_out = !out ? "IN         " : !(ev->hdr->misc & DS_MISC_SWITCH_OUT_PREEMPT) ? "OUT        " :
										       "OUT preempt";
	uint32_t pid_tid[2] = { 0, 0 };

	if (ev->hdr->type == DS_REC_SWITCH) {
		outbuf_printf(o, " %s\n", in_out);
		return;
	}
	if (ev->hdr->size >= sizeof(*ev->hdr) + sizeof(pid_tid))
		memcpy(pid_tid, (const char *)ev->hdr + sizeof(*ev->hdr), sizeof(pid_tid));
	outbuf_printf(o, " %s  %s pid/tid: %5d/%-5d\n", in_out, out ? "next" : "prev", (int)pid_tid[0], (int)pid_tid[1]);
}

/*
 * --show-task-events, --show-mmap-events, --show-switch-events: a side-band
 * record as perf script prints it, the sample's columns (comm of the task
 * the record names, the record's own tid, cpu and time) then perf's text.
 */
static void print_side_band(struct script *sc, const struct ds_event *ev)
{
	static const char *const names[] = { [DS_REC_MMAP] = "MMAP", [DS_REC_COMM] = "COMM", [DS_REC_EXIT] = "EXIT",
					     [DS_REC_FORK] = "FORK", [DS_REC_MMAP2] = "MMAP2", [DS_REC_SWITCH] = "SWITCH",
					     [DS_REC_SWITCH_CPU_WIDE] = "SWITCH_CPU_WIDE", [DS_REC_LOST] = "LOST" };
	const struct ds_sample *s = &ev->sample;
	struct outbuf *o = sc->out;
	int32_t pid = (int32_t)s->pid, tid = (int32_t)s->tid;
	struct ds_comm_event c;
	struct ds_task_event t;
	struct ds_mmap_event m;
	const char *why;

	/* perf filters these by CPU only: a --comm, --pid or --time filter keeps them all */
	if (!ev->evsel || !sample_filter_cpu(&sc->filter, &ev->sample))
		return;
	if (!sc->prepared && prepare(sc))
		return;
	/* the task a record names; a record that does not parse is not printed */
	switch (ev->hdr->type) {
	case DS_REC_COMM:
		if (ds_comm__parse(ev->evsel, ev->hdr, &c, &why))
			return;
		pid = (int32_t)c.pid, tid = (int32_t)c.tid;
		break;
	case DS_REC_FORK: case DS_REC_EXIT:
		if (ds_task__parse(ev->evsel, ev->hdr, &t, &why))
			return;
		pid = (int32_t)t.pid, tid = (int32_t)t.tid;
		break;
	case DS_REC_MMAP: case DS_REC_MMAP2:
		if (ds_mmap__parse(ev->evsel, ev->hdr, &m, &why))
			return;
		pid = (int32_t)m.pid, tid = (int32_t)m.tid;
		break;
	}
	print_start(sc, ev, ev->evsel, ds_machine__thread(sc->machine, pid, tid));
	outbuf_puts(o, "PERF_RECORD_");
	outbuf_puts(o, names[ev->hdr->type]);
	switch (ev->hdr->type) {
	case DS_REC_COMM:
		outbuf_printf(o, "%s: %s:%d/%d\n", c.exec ? " exec" : "", c.comm, (int)c.pid, (int)c.tid);
		break;
	case DS_REC_FORK: case DS_REC_EXIT:
		outbuf_printf(o, "(%d:%d):(%d:%d)\n", (int)t.pid, (int)t.tid, (int)t.ppid, (int)t.ptid);
		break;
	case DS_REC_MMAP: case DS_REC_MMAP2:
		print_mmap_text(o, ev);
		break;
	case DS_REC_LOST:
		outbuf_printf(o, " lost %llu\n", (unsigned long long)ds_record__lost(ev->hdr));
		break;
	default:
		print_switch_text(o, ev);
		break;
	}
}

static int on_event(void *ctx, const struct ds_event *ev)
{
	struct script *sc = ctx;

	switch (ev->hdr->type) {
	case DS_REC_SAMPLE:
		if (!sc->prepared && prepare(sc))
			return -ECANCELED;
		if (!wanted(sc, ev))
			return (ev->evsel->attr.sample_type & DS_SAMPLE_READ) ?
				       ds_profile__split_reads(sc->profile, ev, NULL, NULL) : 0;
		if (ev->evsel->attr.sample_type & DS_SAMPLE_READ) {
			struct script_read sr = { sc, ev };
			int ret = ds_profile__split_reads(sc->profile, ev, print_read_one, &sr);

			if (ret)
				return ret;
		} else {
			print_sample(sc, ev, ev->evsel, sample_period(ev));
		}
		break;
	case DS_REC_CALLCHAIN_DEFERRED:
		if (!sc->no_merge)
			break;
		if (!sc->prepared && prepare(sc))
			return -ECANCELED;
		if (wanted(sc, ev))
			print_deferred(sc, ev);
		break;
	case DS_REC_AUX:
		sc->aux_records++;
		sc->aux_bytes += aux_size(ev);
		break;
	case DS_REC_COMM: case DS_REC_FORK: case DS_REC_EXIT:
		if (sc->show_task)
			print_side_band(sc, ev);
		break;
	case DS_REC_MMAP: case DS_REC_MMAP2:
		if (sc->show_mmap)
			print_side_band(sc, ev);
		break;
	case DS_REC_SWITCH: case DS_REC_SWITCH_CPU_WIDE:
		if (sc->show_switch)
			print_side_band(sc, ev);
		break;
	case DS_REC_LOST:
		if (sc->show_lost)
			print_side_band(sc, ev);
		break;
	default:
		break;
	}
	return sc->out->error ? -sc->out->error : 0;
}

static const char script_usage_text[] =
	"usage: dstack script [OPTIONS]\n"
	"\n"
	"Print every sample (time order) with its stitched callchain, as `perf script` 7.2 does.\n"
	"\n"
	"  -F, --fields LIST    the fields to show, perf's way: comm,tid,time,... replaces the\n"
	"                       default list, +field/-field change it, TYPE:LIST does it for one\n"
	"                       kind of event (hw, sw, trace, raw, break, synth); repeatable\n"
	"  --no-merge-callchains  print deferred callchains as their own records, samples unstitched\n"
	"  --perf-order         samples in perf 7.2's order, not time order: a deferred sample when its\n"
	"                       task's next deferred record comes (or at the end), as perf prints it\n"
	"  --header             the recording's header first (perf report --header-only's text)\n"
	"  --header-only        only the header\n"
	"  --ns                 times with nanoseconds\n"
	"  --reltime            times from the first sample's\n"
	"  --deltatime          times from the previous sample's\n"
	"  -G, --hide-call-graph  the sample's own address, not its callchain\n"
	"  --show-task-events, --show-mmap-events, --show-switch-events, --show-lost-events\n"
	"                       the COMM/FORK/EXIT, MMAP, SWITCH or LOST records among the samples\n"
	"  -c, --comms NAME[,...]  only these command names (also --comm)\n"
	"  -S, --symbols NAME[,...]  only samples whose own address is in one of these functions\n"
	"%s"
	"  -h, --help           this text\n"
	"\n"
	"fields: %s\n";

static void script_usage(FILE *f)
{
	fprintf(f, script_usage_text, walk_usage(), script_fields_names());
}

/* perf script's options that dstack does not have: refused by name */
static const char *const perf_only[] = {
	"-D", "--dump-raw-trace", "--dump-unsorted-raw-trace", "-L", "--Latency", "-l", "--list", "-s", "--script",
	"-g", "--gen-script", "--dlfilter", "--dlarg", "--list-dlfilters", "-d", "--debug-mode", "-v", "--verbose",
	"--vmlinux", "-a", "--all-cpus", "-I", "--show-info", "--show-kernel-path",
	"--show-namespace-events",
	"--show-cgroup-events", "--show-round-events", "--show-bpf-events",
	"--show-text-poke-events", "--per-event-dump", "--demangle", "--demangle-kernel", "--inline", "--itrace", "--full-source-path", "--max-blocks", "-f",
	"--force", "--graph-function", "--insn-trace", "--xed", "--call-trace", "--call-ret-trace", "--guestmount",
	"--guestvmlinux", "--guestkallsyms", "--guestmodules", "--stitch-lbr", "--merge-callchains", "--addr-range",
	"--switch-on", "--switch-off", "--show-on-off-events", "--objdump", "--disassembler-style", "--cpu-list",
	"--no-demangle-kernel", "--sample-cpu",
};

static bool is_perf_only(const char *arg)
{
	size_t n = strcspn(arg, "=");

	for (size_t i = 0; i < sizeof(perf_only) / sizeof(*perf_only); i++)
		if (strlen(perf_only[i]) == n && !strncmp(arg, perf_only[i], n))
			return true;
	return false;
}

/* 0: parsed; else the exit status */
static int parse_args(struct script *sc, struct walk_opts *wo, int argc, char **argv)
{
	const char *v;

	for (int i = 1; i < argc; i++) {
		int c = walk_opt(wo, "script", argc, argv, &i);

		if (c < 0)
			return EXIT_USAGE;
		if (c)
			continue;
		if (!strcmp(argv[i], "--no-merge-callchains")) {
			sc->no_merge = true;
		} else if (!strcmp(argv[i], "--perf-order")) {
			wo->perf_order = true;
		} else if (!strcmp(argv[i], "--header")) {
			sc->header = true;
		} else if (!strcmp(argv[i], "--ns")) {
			sc->ns = true;
		} else if (!strcmp(argv[i], "--reltime")) {
			sc->reltime = true;
		} else if (!strcmp(argv[i], "--deltatime")) {
			sc->deltatime = true;
		} else if (!strcmp(argv[i], "--show-task-events")) {
			sc->show_task = true;
		} else if (!strcmp(argv[i], "--show-mmap-events")) {
			sc->show_mmap = true;
		} else if (!strcmp(argv[i], "--show-switch-events")) {
			sc->show_switch = true;
		} else if (!strcmp(argv[i], "--show-lost-events")) {
			sc->show_lost = true;
		} else if (!strcmp(argv[i], "--inline")) {
			/* perf's default */
		} else if (!strcmp(argv[i], "-G") || !strcmp(argv[i], "--hide-call-graph")) {
			sc->hide_callchain = true;
		} else if (!strcmp(argv[i], "--header-only")) {
			sc->header = sc->header_only = true;
		} else if ((v = opt_value("-F", argc, argv, &i)) || (v = opt_value("--fields", argc, argv, &i))) {
			if (script_fields_parse(&sc->f, v))
				return EXIT_USAGE;
		} else if ((v = opt_value("-S", argc, argv, &i)) || (v = opt_value("--symbols", argc, argv, &i))) {
			sc->symbols = v;
		} else if ((v = opt_value("-c", argc, argv, &i)) || (v = opt_value("--comms", argc, argv, &i))) {
			char arg[] = "--comm";
			char *args[] = { arg, (char *)v };
			int j = 0;

			if (walk_opt(wo, "script", 2, args, &j) < 0)
				return EXIT_USAGE;
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			script_usage(stdout);
			exit(fflush(stdout) || ferror(stdout) ? EXIT_INPUT : EXIT_OK);
		} else if (is_perf_only(argv[i])) {
			usage_error("script", "not supported: %s (a perf script option dstack does not have; see "
					      "dstack script --help)", argv[i]);
			return EXIT_USAGE;
		} else {
			usage_error("script", "unknown option '%s' (see dstack script --help)", argv[i]);
			return EXIT_USAGE;
		}
	}
	return 0;
}

/* What was in the recording and not shown: said once, at the end. */
static void say_skipped(const struct script *sc, const struct ds_session *session)
{
	const struct ds_session_stats *st = ds_session__stats(session);
	uint64_t traces = st->records[DS_REC_AUXTRACE];

	if (sc->aux_records || traces)
		fprintf(stderr, "dstack script: AUX-area data not decoded (Intel PT, CoreSight, SPE...): skipped "
				"%llu AUXTRACE records holding %llu bytes of trace (%llu AUX records announced %llu bytes)\n",
			(unsigned long long)traces, (unsigned long long)st->auxtrace_bytes,
			(unsigned long long)sc->aux_records, (unsigned long long)sc->aux_bytes);
}

int cmd_script(int argc, char **argv)
{
	struct walk_opts wo;
	struct script sc = { 0 };
	struct walk w;
	int ret;

	walk_opts_init(&wo);
	script_fields_init(&sc.f);
	ret = parse_args(&sc, &wo, argc, argv);
	if (ret)
		return ret;
	sc.max_stack = wo.max_stack;
	sc.input = wo.common.input;
	wo.no_stitch = sc.no_merge;
	ret = walk_open(&w, "script", &wo);
	if (ret)
		return ret;
	sc.profile = w.profile;
	sc.machine = ds_profile__machine(w.profile);
	sc.reader = ds_profile__reader(w.profile);
	sc.uu = ds_profile__user_unwind(w.profile);
	sc.filter = w.filter;
	sc.filtering = sample_filter_active(&sc.filter);
	/* hashed into all over: populated now, not a fault per slot's page later */
	sc.line_of = dsi_calloc_populated(FRAME_CACHE_SLOTS, sizeof(*sc.line_of));   /* NULL: no cache, same output */
	sc.chains = dsi_calloc_populated(1u << CHAIN_TEXT_BITS, sizeof(*sc.chains));
	sc.chain_arena = malloc(CHAIN_TEXT_ARENA);
	sc.chain_epoch = 1;
	if (!sc.chain_arena) {   /* no chain cache then: same output */
		free(sc.chains);
		sc.chains = NULL;
	}
	sc.out = outbuf_new(STDOUT_FILENO);
	if (!sc.out) {
		fprintf(stderr, "dstack script: out of memory\n");
		ret = EXIT_INPUT;
	} else {
		bool pipe = ds_reader__info(sc.reader)->pipe;

		if (sc.header_only && pipe) {
			/* perf stops before a pipe's features come: the layout only */
			header_print_layout(stdout, sc.input, sc.reader);
			fputs("# ========\n#\n", stdout);
			if (fflush(stdout) || ferror(stdout))
				ret = EXIT_INPUT;
		} else if (sc.header && !pipe) {
			print_header(&sc);
		}
		if (!sc.header_only)
			ret = walk_run_events(&w, on_event, &sc);
		if ((outbuf_flush(sc.out) || sc.out->error) && !ret)
			ret = EXIT_INPUT;
		if (sc.bad_fields)
			ret = EXIT_USAGE;   /* -F asked for what the events do not have */
		say_skipped(&sc, ds_profile__session(w.profile));
	}
	outbuf_delete(sc.out);
	walk_finish(&w);
	free(sc.line_of);
	free(sc.lines);
	free(sc.chains);
	free(sc.chain_arena);
	return ret;
}
