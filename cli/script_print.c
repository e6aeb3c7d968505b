// SPDX-License-Identifier: MIT
/*
 * dstack script's printers (cli/script.h): perf script 7.2's columns,
 * frame lines (cached by frame) and callchains (cached by chain id), the
 * sample's own address, its branch stack, registers and data source.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dstack/log.h"
#include "dstack/perf_text.h"
#include "util/grow.h"
#include "util/outbuf.h"
#include "script.h"

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
void script_print_start(struct script *sc, const struct ds_event *ev, const struct ds_evsel *evsel,
			struct ds_thread *t)
{
	struct outbuf *o = sc->out;
	const struct ds_sample *s = &ev->sample;
	uint64_t fl = field_set(sc, evsel);

	if (fl & SF(COMM)) {
		char buf[24];
		const char *comm = ds_thread__script_comm(t, ev, buf);

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
void script_print_callchain(struct script *sc, struct ds_thread *t, const uint64_t *ips, uint64_t nr,
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
uint64_t script_sample_period(const struct ds_event *ev)
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
const struct ds_frame *script_own_frame(struct script *sc, struct ds_thread *t, const struct ds_event *ev,
					struct ds_resolved *r)
{
	ds_machine__resolve(sc->machine, t, ev->sample.cpumode, ev->sample.ip, r);
	return &r->frames[r->nr_frames - 1];
}

/* The sample's own address without a callchain (script_own_frame) */
void script_print_ip_line(struct script *sc, const struct ds_event *ev, struct ds_thread *t, uint8_t opts)
{
	struct outbuf *o = sc->out;
	const struct ds_sample *s = &ev->sample;
	struct ds_resolved r;
	const struct ds_frame *fr = script_own_frame(sc, t, ev, &r);

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

void script_print_addr(struct script *sc, const struct ds_event *ev, struct ds_thread *t, uint64_t fl)
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


/* A branch's flags as perf's print_bstack_flags: "/P/-/-/12/CALL/- " */
static void print_branch_flags(struct outbuf *o, uint64_t fl)
{
	char text[96];
	size_t n = ds_branch_flags__text(fl, text, sizeof(text));

	outbuf_write(o, text, n < sizeof(text) ? n : sizeof(text) - 1);
}

/* " (dso)" of a branch's end @r (ds_machine__resolve_fb: @mapped), its offset with PO_DSOFF in @opts */
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
	bool mapped = ds_machine__resolve_fb(sc->machine, t, mode, addr, &r);
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
	mapped = ds_machine__resolve_fb(sc->machine, t, mode, addr, &r);
	print_branch_dso(sc->out, &r, mapped, opts);
}

/* -F brstack / brstacksym: each branch "from/to/flags " (brstack's each after a space), as perf prints them */
void script_print_brstack(struct script *sc, const struct ds_event *ev, struct ds_thread *t, uint64_t fl)
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

/* -F iregs/uregs: " ABI:2    AX:0x200 ..." as perf_sample__fprintf_regs (nothing for a sample without them) */
void script_print_regs(struct outbuf *o, uint64_t abi, const uint64_t *regs, uint64_t mask)
{
	char text[64 * 32];
	size_t n = ds_regs__text(abi, regs, mask, text, sizeof(text));

	outbuf_write(o, text, n < sizeof(text) ? n : sizeof(text) - 1);
}

/* perf's unit_number__scnprintf(): " 4K", " 2M", " N/A" */
void script_print_page_size(struct outbuf *o, uint64_t size)
{
	char text[32];
	size_t n = ds_page_size__text(size, text, sizeof(text));

	outbuf_putc(o, ' ');
	outbuf_write(o, text, n < sizeof(text) ? n : sizeof(text) - 1);
}

/*
 * The sample's trace fields (tracepoints' "trace" field), between the
 * event name and the addresses, as perf prints them (lib/format/tracepoint.c).
 */
void script_print_trace_fields(struct script *sc, const struct ds_event *ev, struct ds_thread *t)
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

/* The AUX area bytes a PERF_RECORD_AUX announces (u64 offset, size, flags after the header). */
uint64_t script_aux_size(const struct ds_event *ev)
{
	uint64_t n;

	if (ev->hdr->size < sizeof(*ev->hdr) + 16)
		return 0;
	memcpy(&n, (const char *)ev->hdr + sizeof(*ev->hdr) + 8, sizeof(n));
	return n;
}

void script_print_data_src(struct script *sc, uint64_t data_src)
{
	char text[160];
	size_t n = (size_t)snprintf(text, sizeof(text), "%16llx ", (unsigned long long)data_src);

	n += ds_data_src__text(data_src, text + n, sizeof(text) - n);
	if ((int)n > sc->data_src_width)
		sc->data_src_width = (int)n;
	outbuf_write(sc->out, text, n);
	for (; (int)n < sc->data_src_width; n++)
		outbuf_putc(sc->out, ' ');
}

