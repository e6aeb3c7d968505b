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
#include <unistd.h>
#include "cli.h"
#include "dstack/log.h"
#include "dstack/machine.h"
#include "dstack/perf_text.h"
#include "dstack/session.h"
#include "dstack/tracepoint.h"
#include "util/outbuf.h"
#include "util/prefault.h"
#include "samples.h"
#include "script.h"
#include "script_fields.h"
#include "header.h"

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
	script_print_start(sc, ev, evsel, t);
	t = ds_machine__script_event_thread(sc->machine, t, ev);   /* its addresses' (none after its EXIT) */
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
		script_print_trace_fields(sc, ev, t);
	if (fl & SF(ADDR))
		script_print_addr(sc, ev, t, fl);
	if (fl & SF(DATA_SRC))
		script_print_data_src(sc, s->data_src);
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
			script_print_callchain(sc, t, unwound, unwound_nr, true, opts);
		} else if (s->callchain && sc->use_callchain) {
			uint64_t n;
			const uint64_t *ips = ds_event__perf_callchain(ev, sc->perf_chain, &n);

			outbuf_putc(o, '\n');
			script_print_callchain(sc, t, ips, n, false, opts);
		} else {
			script_print_ip_line(sc, ev, t, opts);
		}
	}
	if (fl & SF(IREGS))
		script_print_regs(o, s->regs_intr_abi, s->regs_intr, ev->evsel->attr.sample_regs_intr);
	if (fl & SF(UREGS))
		script_print_regs(o, s->regs_user_abi, s->regs_user, ev->evsel->attr.sample_regs_user);
	if (fl & (SF(BRSTACK) | SF(BRSTACKSYM)))
		script_print_brstack(sc, ev, t, fl);
	if (fl & SF(PHYS_ADDR))
		outbuf_hex(o, s->phys_addr, 16);
	if (fl & SF(DATA_PAGE_SIZE))
		script_print_page_size(o, s->data_page_size);
	if (fl & SF(CODE_PAGE_SIZE))
		script_print_page_size(o, s->code_page_size);
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
	script_print_start(sc, ev, ev->evsel, t);
	t = ds_machine__script_event_thread(sc->machine, t, ev);
	outbuf_puts(sc->out, "DEFERRED CALLCHAIN [cookie: ");
	outbuf_hex(sc->out, d.cookie, 0);
	outbuf_putc(sc->out, ']');
	if ((sc->f.fields[type] & SF(IP)) && sc->use_callchain) {
		outbuf_putc(sc->out, '\n');
		script_print_callchain(sc, t, d.ips, d.nr, false, sc->ip_opts[type]);
	} else if (sc->f.fields[type] & SF(IP)) {
		script_print_ip_line(sc, ev, t, sc->ip_opts[type]);   /* -G: the record's own ip, 0, as perf */
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
	int err;

	outbuf_flush(sc->out);
	if ((err = header_print(stdout, sc->input, sc->reader)) && !sc->out->error)
		sc->out->error = -output_failed("stdout", err);
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
	const struct ds_frame *fr = script_own_frame(sc, ds_machine__script_event_thread(sc->machine, t, ev), ev, &r);
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
	comm = ds_thread__script_comm(t, ev, buf);
	return sample_filter_wanted(&sc->filter, s, comm);
}

/*
 * --show-task-events, --show-mmap-events, --show-switch-events: a side-band
 * record as perf script prints it, the sample's columns (comm of the task
 * the record names, the record's own tid, cpu and time) then perf's text.
 */
static void print_side_band(struct script *sc, const struct ds_event *ev)
{
	char text[4096], *big = NULL;
	const char *line = text;
	int32_t pid, tid;
	int n;

	/* perf filters these by CPU only: a --comm, --pid or --time filter keeps them all */
	if (!ev->evsel || !sample_filter_cpu(&sc->filter, &ev->sample))
		return;
	if (!sc->prepared && prepare(sc))
		return;
	/* a record that does not parse is not printed */
	if ((n = ds_side_band__text(ev, &pid, &tid, text, sizeof(text))) < 0)
		return;
	if ((size_t)n >= sizeof(text) && (big = malloc((size_t)n + 1)))   /* a long file name: once more, whole */
		line = big, ds_side_band__text(ev, &pid, &tid, big, (size_t)n + 1);
	script_print_start(sc, ev, ev->evsel, ds_machine__thread(sc->machine, pid, tid));
	outbuf_write(sc->out, line, big || (size_t)n < sizeof(text) ? (size_t)n : sizeof(text) - 1);
	free(big);
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
			print_sample(sc, ev, ev->evsel, script_sample_period(ev));
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
		sc->aux_bytes += script_aux_size(ev);
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
			int err = header_print_layout(stdout, sc.input, sc.reader);

			fputs("# ========\n#\n", stdout);
			if (!err)
				err = header_flushed(stdout, 0);
			if (err && !sc.out->error)
				sc.out->error = -output_failed("stdout", err);
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
