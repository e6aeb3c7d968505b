// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "dstack/log.h"
#include "util/outbuf.h"
#include "samples.h"
#include "dstack/tracepoint.h"
#include "progress.h"
#include "dstack/debuginfod.h"
#include "dstack/offcpu.h"
#include "util/grow.h"

struct walk {
	const struct walk_opts *o;
	struct sample_filter filter;     /* o's, prepared for the recording */
	struct read_split reads;
	const struct ds_reader *reader;
	struct ds_machine *machine;
	walk_fn fn;
	void *ctx;
	struct user_unwind uu;
	/* --off-cpu / --wall */
	struct trace_text tt;
	struct ds_offcpu *oc;
	struct ds_cc_frame *frames;      /* a wait's frames and its state frame */
	size_t cap_frames;
	uint64_t last_time;
	const char *state_names[4];      /* "[off-cpu: sleeping]"... interned */
	struct ds_event last_switch;     /* for the waits drained at the end: its evsel (hdr not kept) */
	bool have_switch;
};

static struct ds_stitch_stats last_stats;
static struct unwind_stats last_unwind;
const struct unwind_stats *walk_last_unwind_stats(void) { return &last_unwind; }

static const struct ds_reader *current_reader;

const struct ds_reader *walk_reader(void) { return current_reader; }
static struct ds_header_info last_header;
static struct ds_session_stats last_session_stats;

const struct ds_stitch_stats *walk_last_stitch_stats(void) { return &last_stats; }
const struct ds_session_stats *walk_last_session_stats(void) { return &last_session_stats; }
const struct ds_header_info *walk_last_header(void) { return &last_header; }

void walk_opts_init(struct walk_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->common.input = "perf.data";
	o->max_stack = 127;
}

const char *walk_usage(void)
{
	return "  -i FILE|-            input (default perf.data)\n"
	       "  --symfs DIR          look binaries up under DIR\n"
	       "  --kallsyms FILE      kernel symbols (default /proc/kallsyms)\n"
	       "  --pid PID[,PID...]   only these processes\n"
	       "  --tid TID[,TID...]   only these threads\n"
	       "  --comm NAME[,...]    only these command names\n"
	       "  -C, --cpu LIST       only samples on these CPUs (0-3,6)\n"
	       "  --time START,END     only samples in this time range (seconds, as perf script prints them;\n"
	       "                       either side may be empty; several ranges separated by spaces;\n"
	       "                       percent slices: 10%/2, 0%-10%,30%-40%)\n"
	       "  --max-stack N        at most N callchain entries (default 127)\n"
	       "  --no-inline          do not expand inlined functions\n"
	       "  --no-demangle        keep C++ names mangled\n"
	       "  --off-cpu            off-CPU time (ns) of sched:sched_switch samples, by stack and wait state\n"
	       "  --wall               off-CPU time and on-CPU samples (by period: use cpu-clock) together\n";
}

/* a list option given again replaces the earlier list, as perf's options do */
static int parse_ids(const char *cmd, const char *opt, const char *v, int32_t *out, size_t *nr)
{
	char *end;

	*nr = 0;
	while (*v) {
		long x = strtol(v, &end, 10);

		if (end == v || (*end && *end != ',') || *nr >= MAX_FILTER) {
			usage_error(cmd, "bad %s list '%s'", opt, v);
			return -1;
		}
		out[(*nr)++] = (int32_t)x;
		v = *end ? end + 1 : end;
	}
	return 1;
}

/*
 * perf's "SEC[.NSEC]": at most nine decimals, read exactly (no float);
 * empty: 0 (open).  0, or -1 if it is not such a number.
 */
static int parse_seconds(const char *s, size_t n, uint64_t *ns)
{
	uint64_t sec = 0, frac = 0;
	size_t i = 0, digits = 0;

	*ns = 0;
	if (!n)
		return 0;
	for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
		if (sec > UINT64_MAX / 10 / 1000000000ULL)
			return -1;
		sec = sec * 10 + (uint64_t)(s[i] - '0');
	}
	if (i < n && s[i] == '.') {
		for (i++; i < n && s[i] >= '0' && s[i] <= '9'; i++, digits++)
			frac = frac * 10 + (uint64_t)(s[i] - '0');
		if (digits > 9)
			return -1;
		for (; digits < 9; digits++)
			frac *= 10;
	}
	if (i != n || (n == 1 && s[0] == '.'))
		return -1;
	*ns = sec * 1000000000ULL + frac;
	return 0;
}

/* "START,END" (either may be empty) */
static int parse_range(const char *s, size_t n, uint64_t *start, uint64_t *end)
{
	const char *comma = memchr(s, ',', n);

	if (!comma)
		return -1;
	return parse_seconds(s, (size_t)(comma - s), start) ||
	       parse_seconds(comma + 1, n - (size_t)(comma - s) - 1, end) || (*end && *start > *end) ? -1 : 0;
}

/* "P%" as a fraction of 1 (0 <= P <= 100); -1 if not */
static double parse_percent(const char *s, size_t n)
{
	char buf[32], *e;
	double p;

	if (n < 2 || n >= sizeof(buf) || s[n - 1] != '%')
		return -1;
	memcpy(buf, s, n - 1);
	buf[n - 1] = 0;
	p = strtod(buf, &e);
	return *e || !(p >= 0 && p <= 100) ? -1 : p / 100;
}

/*
 * One percent item: "P%/N" (the Nth slice of P%) or "A%-B%", of the time
 * between the first and the last sample.
 */
static int parse_percent_item(const char *s, size_t n, uint64_t first, uint64_t last, uint64_t *start,
			      uint64_t *end)
{
	const char *slash = memchr(s, '/', n), *dash = memchr(s, '-', n);
	double total = (double)(last - first);

	if (slash) {
		double p = parse_percent(s, (size_t)(slash - s));
		char *e;
		long k = strtol(slash + 1, &e, 10);

		if (p <= 0 || e != s + n || k < 1 || (double)k * p > 1.0 + 1e-9)
			return -1;
		*start = first + (uint64_t)(total * p * (double)(k - 1));
		*end = first + (uint64_t)(total * p * (double)k);
		return 0;
	}
	if (dash) {
		double a = parse_percent(s, (size_t)(dash - s)), b = parse_percent(dash + 1, n - (size_t)(dash - s) - 1);

		if (a < 0 || b < 0 || a > b)
			return -1;
		*start = first + (uint64_t)(total * a);
		*end = first + (uint64_t)(total * b);
		return 0;
	}
	return -1;
}

/*
 * --time: ranges separated by spaces, or percent items separated by
 * commas.  @first/@last: the recording's sample times (percent only).
 */
static int parse_times(struct sample_filter *f, const char *v, uint64_t first, uint64_t last)
{
	bool percent = strchr(v, '%') != NULL;
	const char sep = percent ? ',' : ' ';

	f->nr_times = 0;
	while (*v) {
		const char *e = strchr(v, sep);
		size_t n = e ? (size_t)(e - v) : strlen(v);

		if (!n)
			return -1;   /* perf takes no empty item, nor doubled or trailing separators */
		{
			if (f->nr_times >= MAX_FILTER)
				return -1;
			if (percent ? parse_percent_item(v, n, first, last, &f->times[f->nr_times].start,
							 &f->times[f->nr_times].end)
				    : parse_range(v, n, &f->times[f->nr_times].start, &f->times[f->nr_times].end))
				return -1;
			f->nr_times++;
		}
		v += n + (e != NULL);
	}
	return f->nr_times ? 0 : -1;
}

static int parse_time_opt(const char *cmd, const char *v, struct sample_filter *f)
{
	/* percent slices need the recording: checked for their syntax now, computed later */
	if (parse_times(f, v, 0, strchr(v, '%') ? 1000000000ULL : 0)) {
		usage_error(cmd, "bad --time '%s' (START,END in seconds, as perf script prints them, either side "
				 "empty; several ranges separated by spaces; or percent: 10%%/2, 0%%-10%%,30%%-40%%)", v);
		return -1;
	}
	f->time_str = v;
	return 1;
}

/* perf's CPU lists: "0-3,6" */
static int parse_cpus(const char *cmd, const char *v, struct sample_filter *f)
{
	const char *p = v;

	memset(f->cpus, 0, sizeof(f->cpus));
	while (*p) {
		char *e;
		unsigned long a = strtoul(p, &e, 10), b = a;

		if (e == p)
			goto bad;
		if (*e == '-') {
			p = e + 1;
			b = strtoul(p, &e, 10);
			if (e == p)
				goto bad;
		}
		if (a > b || b >= MAX_FILTER_CPUS || (*e && *e != ','))
			goto bad;
		for (unsigned long c = a; c <= b; c++)
			f->cpus[c / 64] |= 1ULL << (c % 64);
		p = *e ? e + 1 : e;
	}
	f->by_cpu = true;
	return 1;
bad:
	usage_error(cmd, "bad CPU list '%s' (like 0-3,6; CPUs below %d)", v, MAX_FILTER_CPUS);
	return -1;
}

bool sample_filter_active(const struct sample_filter *f)
{
	return f->nr_pids || f->nr_tids || f->nr_comms || f->time_str || f->by_cpu;
}

int sample_filter_prepare(struct sample_filter *f, const char *cmd, const struct ds_reader *rd)
{
	const struct ds_header_info *hi = ds_reader__info(rd);

	if (f->by_cpu) {
		bool any = false;

		for (size_t i = 0; i < ds_reader__nr_evsels(rd); i++)
			any |= !!(ds_reader__evsel(rd, i)->attr.sample_type & DS_SAMPLE_CPU);
		if (!any && ds_reader__nr_evsels(rd)) {
			fprintf(stderr, "dstack %s: File does not contain CPU events. Remove -C option to proceed.\n", cmd);
			return -1;
		}
		/* perf takes CPUs up to the recording's count (none known in a pipe) */
		for (size_t c = 0; c < MAX_FILTER_CPUS; c++)
			if ((f->cpus[c / 64] >> (c % 64) & 1) && c >= hi->nr_cpus_avail) {
				fprintf(stderr, "dstack %s: -C: CPU %zu is not one of the recording's %u CPUs%s\n", cmd, c,
					hi->nr_cpus_avail, hi->pipe ? " (a pipe-mode recording does not say how many)" : "");
				return -1;
			}
	}
	if (f->time_str && strchr(f->time_str, '%')) {
		if (!hi->last_sample_time) {
			fprintf(stderr, "dstack %s: --time %s: the recording does not say its first and last sample "
					"times (no HEADER_SAMPLE_TIME): percent ranges need them\n", cmd, f->time_str);
			return -1;
		}
		if (parse_times(f, f->time_str, hi->first_sample_time, hi->last_sample_time)) {
			fprintf(stderr, "dstack %s: bad --time '%s'\n", cmd, f->time_str);
			return -1;
		}
	}
	return 0;
}

static int parse_comms(const char *cmd, char *v, struct sample_filter *f)
{
	f->nr_comms = 0;
	for (char *tok = strtok(v, ","); tok; tok = strtok(NULL, ",")) {
		if (f->nr_comms >= MAX_FILTER) {
			usage_error(cmd, "too many --comm names");
			return -1;
		}
		f->comms[f->nr_comms++] = tok;
	}
	return 1;
}

int walk_opt(struct walk_opts *o, const char *cmd, int argc, char **argv, int *i)
{
	const char *v;

	if (common_opt(&o->common, argc, argv, i))
		return 1;
	if ((v = opt_value("--pid", argc, argv, i)))
		return parse_ids(cmd, "--pid", v, o->filter.pids, &o->filter.nr_pids);
	if ((v = opt_value("--tid", argc, argv, i)))
		return parse_ids(cmd, "--tid", v, o->filter.tids, &o->filter.nr_tids);
	if ((v = opt_value("--comm", argc, argv, i)))
		return parse_comms(cmd, (char *)v, &o->filter);
	if ((v = opt_value("--time", argc, argv, i)))
		return parse_time_opt(cmd, v, &o->filter);
	if ((v = opt_value("-C", argc, argv, i)) || (v = opt_value("--cpu", argc, argv, i)))
		return parse_cpus(cmd, v, &o->filter);
	if (!strcmp(argv[*i], "--off-cpu") || !strcmp(argv[*i], "--wall")) {
		o->time_mode = argv[*i][2] == 'o' ? WALK_OFFCPU : WALK_WALL;
		return 1;
	}
	if ((v = opt_value("--max-stack", argc, argv, i))) {
		o->max_stack = (unsigned)strtoul(v, NULL, 0);
		return 1;
	}
	if (!strcmp(argv[*i], "--no-inline")) {
		o->no_inline = true;
		return 1;
	}
	if (!strcmp(argv[*i], "--no-demangle")) {
		o->no_demangle = true;
		return 1;
	}
	return 0;
}

static bool in_list(const int32_t *v, size_t n, int32_t x)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == x)
			return true;
	return false;
}

/* perf's perf_time__ranges_skip_sample(): one range bounds, several are a union */
static bool time_wanted(const struct sample_filter *f, uint64_t t)
{
	if (!f->nr_times || !t || t == DS_NO_TIME)
		return true;
	if (f->nr_times == 1)
		return !((f->times[0].start && t < f->times[0].start) || (f->times[0].end && t > f->times[0].end));
	for (size_t i = 0; i < f->nr_times; i++)
		if (t >= f->times[i].start && (t <= f->times[i].end || !f->times[i].end))
			return true;
	return false;
}

bool sample_filter_time_cpu(const struct sample_filter *f, const struct ds_sample *s)
{
	if (!time_wanted(f, s->time))
		return false;
	return !(f->by_cpu && s->has_cpu && s->cpu != (uint32_t)-1 &&
		 (s->cpu >= MAX_FILTER_CPUS || !(f->cpus[s->cpu / 64] >> (s->cpu % 64) & 1)));
}

bool sample_filter_wanted(const struct sample_filter *f, const struct ds_sample *s, const char *comm)
{
	return sample_filter_time_cpu(f, s) && sample_filter_thread(f, s, comm);
}

bool sample_filter_thread(const struct sample_filter *f, const struct ds_sample *s, const char *comm)
{
	if (f->nr_pids && !in_list(f->pids, f->nr_pids, (int32_t)s->pid))
		return false;
	if (f->nr_tids && !in_list(f->tids, f->nr_tids, (int32_t)s->tid))
		return false;
	if (f->nr_comms) {
		size_t i;

		for (i = 0; i < f->nr_comms; i++)
			if (!strcmp(f->comms[i], comm))
				break;
		if (i == f->nr_comms)
			return false;
	}
	return true;
}

const uint64_t *user_unwind__chain(struct user_unwind *uu, struct ds_machine *m, struct ds_thread *t,
				   const struct ds_event *ev, unsigned max, uint64_t *nr_out)
{
	const struct ds_sample *s = &ev->sample;
	const uint64_t *cc = s->callchain;
	uint64_t nr = cc ? s->callchain_nr : 0, k;
	struct ds_unwind_result res;
	size_t need, pre = 0;

	if (!ds_unwind__has_snapshot(ev->evsel, s))
		return NULL;
	for (k = 0; k < nr; k++)
		if (cc[k] == DS_CONTEXT_USER || cc[k] == DS_CONTEXT_USER_DEFERRED)
			break;
	if (k < nr && cc[k] == DS_CONTEXT_USER && k + 1 < nr)
		return NULL;   /* the kernel recorded the user part */
	if (!uu->unwinder) {
		if (!(uu->unwinder = ds_unwinder__new(m)))
			return NULL;
		ds_unwinder__set_vdso(uu->unwinder, uu->vdso);
	}
	if (!max)
		max = 127;
	need = (size_t)k + 3 + max;
	if (need > uu->chain_cap) {
		uint64_t *v = realloc(uu->chain, need * sizeof(*v));

		if (!v)
			return NULL;
		uu->chain = v;
		uu->chain_cap = need;
	}
	if (!cc && s->cpumode == DS_MISC_KERNEL) {
		uu->chain[pre++] = DS_CONTEXT_KERNEL;
		uu->chain[pre++] = s->ip;
	}
	if (k)
		memcpy(uu->chain + pre, cc, (size_t)k * sizeof(*cc));
	pre += (size_t)k;
	uu->chain[pre++] = DS_CONTEXT_USER;
	ds_unwinder__unwind(uu->unwinder, t, ev->evsel, s, uu->chain + pre, max, &res);
	uu->stats.samples++;
	uu->stats.ends[res.end]++;
	uu->stats.frames += res.nr;
	for (int m = 0; m < DS_UNWIND_METHOD__NR; m++) {
		uu->stats.steps[m] += res.steps[m];
		uu->stats.by_method[m] += res.steps[m] != 0;
	}
	if (!res.nr)
		return NULL;
	*nr_out = pre + res.nr;
	return uu->chain;
}

void user_unwind__find_vdso(struct user_unwind *uu, struct ds_symbols *syms, const struct ds_header_info *in)
{
	char path[4096];

	for (size_t i = 0; in && i < in->nr_build_ids; i++) {
		const struct ds_build_id_entry *b = &in->build_ids[i];

		if (b->filename && !strcmp(b->filename, "[vdso]") &&
		    !ds_vdso__cache_path(b->data, b->size, path, sizeof(path)) && !access(path, R_OK)) {
			uu->vdso = ds_symbols__dso(syms, path, b->data, b->size);
			return;
		}
	}
}

void user_unwind__exit(struct user_unwind *uu)
{
	last_unwind = uu->stats;
	ds_unwinder__delete(uu->unwinder);
	free(uu->chain);
	memset(uu, 0, sizeof(*uu));
}

/* The counters, by sample id, from the events' ids (all known by the first sample, pipes too). */
static int read_split_init(struct read_split *rs, const struct ds_reader *rd)
{
	size_t n = 0;

	rs->ready = true;
	ds_hashmap__init(&rs->ids);
	for (size_t i = 0; i < ds_reader__nr_evsels(rd); i++)
		n += ds_reader__evsel(rd, i)->nr_ids;
	rs->counters = calloc(n ? n : 1, sizeof(*rs->counters));
	if (!rs->counters)
		return -ENOMEM;
	for (size_t i = 0; i < ds_reader__nr_evsels(rd); i++) {
		const struct ds_evsel *e = ds_reader__evsel(rd, i);

		for (size_t k = 0; k < e->nr_ids; k++) {
			if (ds_hashmap__find(&rs->ids, e->ids[k]))
				continue;
			rs->counters[rs->nr].evsel = e;
			if (ds_hashmap__set(&rs->ids, e->ids[k], ++rs->nr))
				return -ENOMEM;
		}
	}
	return 0;
}

int read_split_sample(struct read_split *rs, const struct ds_reader *rd, const struct ds_event *ev,
		      read_split_fn fn, void *ctx)
{
	int ret;

	if (!rs->ready && (ret = read_split_init(rs, rd)))
		return ret;
	for (uint64_t i = 0; i < ev->sample.read_nr; i++) {
		uint64_t value, id, *idx;
		struct read_counter *c;

		ds_sample__read_value(ev->evsel, &ev->sample, i, &value, &id);
		idx = ds_hashmap__find(&rs->ids, id);
		if (!idx)
			continue;
		c = &rs->counters[*idx - 1];
		if (value == c->last)
			continue;
		ret = fn(ctx, c->evsel, value - c->last);
		c->last = value;
		if (ret)
			return ret;
	}
	return 0;
}

void read_split_exit(struct read_split *rs)
{
	if (rs->ready)
		ds_hashmap__exit(&rs->ids);
	free(rs->counters);
	memset(rs, 0, sizeof(*rs));
}

struct walk_read {
	struct walk *w;
	struct walk_sample *ws;
};

static int walk_read_one(void *ctx, const struct ds_evsel *evsel, uint64_t period)
{
	struct walk_read *wr = ctx;

	wr->ws->evsel = evsel;
	wr->ws->period = period;
	return wr->w->fn(wr->w->ctx, wr->ws);
}

/* A finished wait to the command: its stack as at the switch-out, the wait state as the leaf frame. */
static int offcpu_emit(struct walk *w, const struct ds_event *ev, const struct ds_offcpu_wait *wt)
{
	struct walk_sample ws = { .evsel = ev->evsel, .off_cpu = true };
	struct ds_event at = *ev;   /* the switch-out's time and thread */
	struct ds_callchain cc = { 0 };
	const struct ds_cc_frame *f;
	size_t nr;
	struct ds_cc_frame *buf;

	at.sample.time = wt->time;
	at.sample.pid = (uint32_t)wt->pid;
	at.sample.tid = (uint32_t)wt->tid;
	ws.ev = &at;
	ws.thread = ds_machine__thread(w->machine, wt->pid, wt->tid);
	ws.machine = w->machine;
	if (!ws.thread)
		return -ENOMEM;
	ws.comm = ds_thread__comm_at(ws.thread, wt->time);
	ws.pid = wt->pid;
	ws.tid = wt->tid;
	ws.period = wt->duration;
	if (wt->nr_ips)
		ds_machine__callchain(w->machine, ws.thread, wt->ips, wt->nr_ips, w->o->max_stack, 0, &cc);
	f = cc.frames;
	nr = cc.nr;
	buf = ds_grow(w->frames, &w->cap_frames, nr + 1, sizeof(*buf), 64);
	if (!buf)
		return -ENOMEM;
	w->frames = buf;
	if (!w->state_names[wt->state]) {
		char name[64];

		snprintf(name, sizeof(name), "[off-cpu: %s]", ds_offcpu__state_name(wt->state));
		w->state_names[wt->state] = ds_machine__intern(w->machine, name);
	}
	buf[0] = (struct ds_cc_frame){ .sym = w->state_names[wt->state], .dso = "[off-cpu]" };
	if (nr)
		memcpy(buf + 1, f, nr * sizeof(*buf));
	ws.frames = buf;
	ws.nr_frames = nr + 1;   /* chain_id and shape_id 0: the commands cache nothing for it */
	return w->fn(w->ctx, &ws);
}

/* A tracepoint sample under --off-cpu/--wall: a sched_switch ends one wait and starts another. */
static int offcpu_switch(struct walk *w, const struct ds_event *ev)
{
	const struct ds_tp_event *tpe = trace_text_event(&w->tt, ev);
	const struct ds_sample *s = &ev->sample;
	struct ds_offcpu_switch sw = { .time = s->time, .pid = (int32_t)s->pid };
	struct ds_offcpu_wait done;
	uint64_t prev, next, state;
	int ret;

	if (!tpe || s->time == DS_NO_TIME || strcmp(ds_tp_event__name(tpe), "sched_switch") ||
	    !ds_tp_event__field_u64(tpe, "prev_pid", s->raw, s->raw_size, &prev) ||
	    !ds_tp_event__field_u64(tpe, "next_pid", s->raw, s->raw_size, &next) ||
	    !ds_tp_event__field_u64(tpe, "prev_state", s->raw, s->raw_size, &state))
		return 0;
	if (!w->oc && !(w->oc = ds_offcpu__new()))
		return -ENOMEM;
	sw.next_tid = (int32_t)next;
	sw.prev_state = state;
	/* a switch-out the filters leave out is not held (its switch-in still ends nothing) */
	if (!s->has_tid || (int32_t)s->tid == (int32_t)prev) {
		struct ds_thread *t = ds_machine__thread(w->machine, (int32_t)s->pid, (int32_t)prev);

		if (t && sample_filter_wanted(&w->filter, s, ds_thread__comm_at(t, s->time))) {
			sw.prev_tid = (int32_t)prev;
			sw.ips = s->callchain;
			sw.nr_ips = s->callchain ? s->callchain_nr : 0;
		}
	}
	w->last_switch = *ev;
	w->last_switch.hdr = NULL;
	w->have_switch = true;
	/* the thread switching out ran since its last switch-out, if nothing said so yet */
	if (ds_offcpu__ran(w->oc, (int32_t)prev, s->time, &done) && (ret = offcpu_emit(w, ev, &done)))
		return ret;
	ret = ds_offcpu__switch(w->oc, &sw, &done);
	if (ret <= 0)
		return ret;
	return offcpu_emit(w, ev, &done);
}

/* A record that shows its thread running: ends the thread's wait (see ds_offcpu__ran). */
static int offcpu_ran(struct walk *w, const struct ds_event *ev)
{
	const struct ds_sample *s = &ev->sample;
	struct ds_offcpu_wait done;

	if (!w->oc || !s->has_tid || s->time == DS_NO_TIME || !w->have_switch)
		return 0;
	/* a SWITCH record out of a task is no sign that it runs after */
	if (ev->hdr && (ev->hdr->type == DS_REC_SWITCH || ev->hdr->type == DS_REC_SWITCH_CPU_WIDE) &&
	    (ev->hdr->misc & DS_MISC_SWITCH_OUT))
		return 0;
	if (!ds_offcpu__ran(w->oc, (int32_t)s->tid, s->time, &done))
		return 0;
	return offcpu_emit(w, w->have_switch ? &w->last_switch : ev, &done);
}

/* The waits no switch-in ended: counted up to the last sample's time. */
static int offcpu_drain(struct walk *w)
{
	struct ds_offcpu_wait wt;
	int ret = 0;

	while (!ret && w->oc && w->have_switch && ds_offcpu__drain(w->oc, w->last_time, &wt) == 1)
		ret = offcpu_emit(w, &w->last_switch, &wt);
	return ret;
}

/*
 * The thread's comm for @ev as perf script prints it: at the sample's
 * time, or, for a sample held for its deferred record, when perf printed
 * it (stitch.h: record_time; after an exec that is the new comm).  perf
 * script forgets a thread at its EXIT: a sample it prints after that finds
 * a new thread named ":TID" (perf report keeps the thread).  @buf holds
 * that name.
 */
const char *script_comm(struct ds_thread *t, const struct ds_event *ev, char buf[24])
{
	const struct ds_sample *s = &ev->sample;
	uint64_t when = ev->record_time ? ev->record_time : s->time, exited;

	if (!t)
		return ":-1";
	exited = ds_thread__exit_time(t);
	/* a sample whose record never came: perf prints it at the end */
	if (ev->stitch == DS_STITCH_UNRESOLVED)
		when = exited ? exited + 1 : DS_NO_TIME;
	if (exited && when != DS_NO_TIME && when > exited) {
		snprintf(buf, 24, ":%d", (int32_t)s->tid);
		return buf;
	}
	return when == DS_NO_TIME ? ds_thread__comm(t) : ds_thread__comm_at(t, when);
}

static int on_event(void *ctx, const struct ds_event *ev)
{
	struct walk *w = ctx;
	const struct ds_sample *s = &ev->sample;
	struct walk_sample ws = { .ev = ev, .evsel = ev->evsel };
	const uint64_t *unwound;
	uint64_t unwound_nr = 0;
	struct ds_callchain cc = { 0 };
	unsigned cc_flags = w->o->want_shapes ? DS_CALLCHAIN_SHAPE : 0;
	char comm_buf[24];

	if (w->o->time_mode != WALK_CPU && ev->hdr->type != DS_REC_SAMPLE && ev->evsel)
		return offcpu_ran(w, ev);   /* a SWITCH, a deferred callchain, any record of a thread */
	if (ev->hdr->type != DS_REC_SAMPLE || !ev->evsel)
		return 0;
	if (w->o->time_mode != WALK_CPU) {
		int ret;

		if (s->time != DS_NO_TIME && s->time > w->last_time)
			w->last_time = s->time;
		if (ev->evsel->attr.type == DS_PERF_TYPE_TRACEPOINT)
			return offcpu_switch(w, ev);
		if ((ret = offcpu_ran(w, ev)) || w->o->time_mode == WALK_OFFCPU)
			return ret;
	}
	ws.thread = ds_machine__thread(w->machine, (int32_t)s->pid, (int32_t)s->tid);
	ws.machine = w->machine;
	if (!ws.thread)
		return -ENOMEM;
	/* a sample its deferred record completed: the comm when that record came, as perf (stitch.h) */
	if (w->o->script_comms) {
		ws.comm = script_comm(ws.thread, ev, comm_buf);
		if (ws.comm == comm_buf)   /* ":TID": the others are the machine's already */
			ws.comm = ds_machine__intern(w->machine, comm_buf);
	} else
		ws.comm = ev->record_time ? ds_thread__comm_at(ws.thread, ev->record_time)
			: s->time == DS_NO_TIME ? ds_thread__comm(ws.thread) : ds_thread__comm_at(ws.thread, s->time);
	if (!sample_filter_time_cpu(&w->filter, s))
		return 0;
	ws.pid = (int32_t)s->pid;
	ws.tid = (int32_t)s->tid;
	if (!sample_filter_thread(&w->filter, s, ws.comm)) {
		if (!w->o->keep_filtered)
			return 0;
		ws.filtered = true;
	}
	if (ev->evsel->attr.sample_type & DS_SAMPLE_PERIOD)
		ws.period = s->period;
	else
		ws.period = DS_ATTR_FLAG(&ev->evsel->attr, DS_ATTR_FREQ) ? 1 : ev->evsel->attr.sample_period;
	if (ws.filtered) {
		/* counted, not shown: no frames */
	} else if ((unwound = user_unwind__chain(&w->uu, w->machine, ws.thread, ev, w->o->max_stack, &unwound_nr))) {
		ds_machine__callchain(w->machine, ws.thread, unwound, unwound_nr, w->o->max_stack, cc_flags, &cc);
	} else if (s->callchain) {
		ds_machine__callchain(w->machine, ws.thread, s->callchain, s->callchain_nr,
				      w->o->max_stack, cc_flags, &cc);
	} else if (ev->evsel->attr.sample_type & DS_SAMPLE_IP) {
		uint64_t ips[2] = { s->cpumode == DS_MISC_KERNEL ? DS_CONTEXT_KERNEL : DS_CONTEXT_USER, s->ip };

		ds_machine__callchain(w->machine, ws.thread, ips, 2, w->o->max_stack, cc_flags, &cc);
	}
	ws.frames = cc.frames;
	ws.nr_frames = cc.nr;
	if (ws.frames) {
		ws.chain_id = cc.id;
		if (w->o->want_shapes) {
			size_t nr;

			ws.shape_id = cc.shape;
			ws.frame_ids = ds_machine__shape_frames(w->machine, ws.shape_id, &nr);
			if (nr != ws.nr_frames)
				ws.frame_ids = NULL;   /* cannot be: a shape is its chain's frames */
		}
	}
	if (ev->evsel->attr.sample_type & DS_SAMPLE_READ) {
		struct walk_read wr = { w, &ws };

		return read_split_sample(&w->reads, w->reader, ev, walk_read_one, &wr);
	}
	return w->fn(w->ctx, &ws);
}

static int machine_sideband(void *ctx, const struct ds_event *ev)
{
	return ds_machine__process(ctx, ev);
}

/*
 * Kernel symbols will be looked up: the user named a kallsyms file, or an
 * event samples the kernel.  Their load then overlaps the reading.
 */
static bool wants_kernel(const struct ds_reader *rd, const struct ds_symbols_opts *so)
{
	if (so->kallsyms)
		return true;
	for (size_t i = 0; i < ds_reader__nr_evsels(rd); i++)
		if (!DS_ATTR_FLAG(&ds_reader__evsel(rd, i)->attr, DS_ATTR_EXCLUDE_KERNEL))
			return true;
	return false;
}

/*
 * Where dstack keeps what is worth keeping across runs (the check of a
 * kallsyms file): $DSTACK_CACHE_DIR (empty: nowhere), else
 * $XDG_CACHE_HOME/dstack, else $HOME/.cache/dstack; NULL for nowhere.
 */
static const char *cache_dir(void)
{
	static char buf[4096];
	const char *v = getenv("DSTACK_CACHE_DIR"), *base;
	int n;

	if (v)
		return *v ? v : NULL;
	if ((base = getenv("XDG_CACHE_HOME")) && *base == '/')
		n = snprintf(buf, sizeof(buf), "%s/dstack", base);
	else if ((base = getenv("HOME")) && *base == '/')
		n = snprintf(buf, sizeof(buf), "%s/.cache/dstack", base);
	else
		return NULL;
	return n > 0 && (size_t)n < sizeof(buf) ? buf : NULL;
}

/*
 * --debuginfod: the debug files of the binaries the header lists as
 * sampled (perf's build-id table holds the binaries with samples) that
 * lack symbols or DWARF here, fetched into libdebuginfod's cache before
 * any loads (the symbols look there); one line per binary says what came
 * of it.
 */
static void fetch_debuginfo(struct analysis *a, const char *cmd, const struct ds_header_info *hi, const char *symfs)
{
	const char *urls = *cli_debuginfod ? cli_debuginfod : getenv("DEBUGINFOD_URLS");
	const char *t = getenv("DEBUGINFOD_TIMEOUT");
	struct ds_debuginfod_opts o = { .urls = urls, .timeout_s = t ? (unsigned)strtoul(t, NULL, 10) : 0 };
	struct ds_debuginfod_req *reqs = calloc(hi->nr_build_ids + 1, sizeof(*reqs));
	size_t n = 0;

	if (!urls || !*urls) {
		fprintf(stderr, "dstack %s: --debuginfod: no server: name one (--debuginfod=URL) or set DEBUGINFOD_URLS\n", cmd);
		free(reqs);
		return;
	}
	for (size_t i = 0; reqs && i < hi->nr_build_ids; i++) {
		const struct ds_build_id_entry *b = &hi->build_ids[i];

		if (b->filename[0] == '/' && ds_debuginfod__wanted(symfs, b->filename, b->data, b->size))
			reqs[n++] = (struct ds_debuginfod_req){ .path = b->filename, .build_id = b->data, .bid_len = b->size };
	}
	if (n)
		ds_debuginfod__fetch(&o, reqs, n);
	for (size_t i = 0; i < n; i++) {
		const struct ds_debuginfod_req *r = &reqs[i];
		char id[2 * 64 + 1];

		for (size_t k = 0; k < r->bid_len; k++)
			snprintf(id + 2 * k, 3, "%02x", r->build_id[k]);
		id[2 * r->bid_len] = 0;
		switch (r->result) {
		case DS_DI_FETCHED:
		case DS_DI_CACHED:
			fprintf(stderr, "dstack %s: debuginfod: %s: debug file %s (%llu KiB, build-id %s)\n", cmd, r->path,
				r->result == DS_DI_FETCHED ? "fetched" : "from the cache",
				(unsigned long long)(r->size + 1023) / 1024, id);
			break;
		case DS_DI_NOT_FOUND:
			fprintf(stderr, "dstack %s: debuginfod: %s: build-id %s unknown to the servers\n", cmd, r->path, id);
			break;
		case DS_DI_FAILED:
			fprintf(stderr, "dstack %s: debuginfod: %s: build-id %s: %s\n", cmd, r->path, id, r->why);
			break;
		case DS_DI_NOT_ASKED:
			break;
		}
	}
	(void)a;
	free(reqs);
}

int analysis_open(struct analysis *a, const char *cmd, const char *input, const struct ds_symbols_opts *opts)
{
	struct ds_symbols_opts with_cache = *opts;
	const struct ds_symbols_opts *so = &with_cache;
	char *err = NULL;

	if (!with_cache.cache_dir)
		with_cache.cache_dir = cache_dir();
	if (cli_debuginfod && !with_cache.debuginfod_cache)
		with_cache.debuginfod_cache = ds_debuginfod__cache_dir();
	memset(a, 0, sizeof(*a));
	a->syms = ds_symbols__new(so);
	/* a kallsyms file named: its load overlaps setting up and opening the input too */
	if (a->syms && so->kallsyms)
		ds_symbols__preload_kernel(a->syms);
	a->machine = a->syms ? ds_machine__new(a->syms) : NULL;
	if (!a->machine) {
		fprintf(stderr, "dstack %s: out of memory\n", cmd);
		analysis_close(a);
		return EXIT_INPUT;
	}
	a->session = ds_session__open(input, &err);
	if (!a->session) {
		fprintf(stderr, "dstack %s: %s\n", cmd, err ? err : strerror(errno));
		free(err);
		analysis_close(a);
		return EXIT_INPUT;
	}
	/* build-ids recorded in the header let symbols reject a wrong binary */
	const struct ds_reader *rd = ds_session__reader(a->session);
	const struct ds_header_info *hi = ds_reader__info(rd);

	if (wants_kernel(rd, so))
		ds_symbols__preload_kernel(a->syms);   /* no-op if started above */

	if (cli_debuginfod)
		fetch_debuginfo(a, cmd, hi, so->symfs);
	a->listed = calloc(hi->nr_build_ids ? hi->nr_build_ids : 1, sizeof(*a->listed));
	for (size_t i = 0; i < hi->nr_build_ids; i++) {
		struct ds_dso *d;

		if (hi->build_ids[i].filename[0] != '/')
			continue;
		d = ds_symbols__dso(a->syms, hi->build_ids[i].filename, hi->build_ids[i].data, hi->build_ids[i].size);
		if (d && a->listed)
			a->listed[a->nr_listed++] = d;
	}
	return EXIT_OK;
}

/*
 * On the reading thread, a few rounds ahead of the samples: a binary an
 * MMAP names starts loading on the symbols' helper thread, so that its
 * first lookup finds it loaded instead of loading it on this thread.
 */
static void prefetch_mapped(void *ctx, const struct ds_evsel *evsel, const struct ds_event_header *hdr)
{
	struct analysis *a = ctx;
	struct ds_mmap_event me;
	const char *why;

	if ((hdr->type != DS_REC_MMAP && hdr->type != DS_REC_MMAP2) ||
	    (hdr->misc & DS_MISC_CPUMODE_MASK) == DS_MISC_KERNEL || (hdr->misc & DS_MISC_MMAP_DATA) ||
	    ds_mmap__parse(evsel, hdr, &me, &why))
		return;
	if (!strncmp(me.filename, "//", 2) || !strncmp(me.filename, "/memfd:", 7) || !strncmp(me.filename, "/dev/", 5))
		return;   /* anonymous and device memory: nothing to load */
	ds_symbols__prefetch(a->syms, me.filename);
}

/* The command's callback behind the progress line (only when one is shown). */
struct with_progress {
	struct progress p;
	ds_event_fn fn;
	void *ctx;
	uint64_t data_offset;
};

static int progress_fn(void *ctx, const struct ds_event *ev)
{
	struct with_progress *wp = ctx;

	progress_event(&wp->p, ev->offset > wp->data_offset ? ev->offset - wp->data_offset : 0,
		       ev->hdr->type == DS_REC_SAMPLE);
	return wp->fn(wp->ctx, ev);
}

int analysis_run(struct analysis *a, const char *cmd, struct ds_session_opts *sopts, ds_event_fn fn, void *ctx)
{
	const struct ds_header_info *hi = ds_reader__info(ds_session__reader(a->session));
	struct with_progress wp = { .fn = fn, .ctx = ctx, .data_offset = hi->pipe ? 0 : hi->data_offset };
	int ret;

	progress_init(&wp.p, cmd, hi->pipe ? 0 : hi->data_size);
	if (wp.p.on) {
		fn = progress_fn;
		ctx = &wp;
	}

	sopts->sideband = machine_sideband;
	sopts->sideband_ctx = a->machine;
	sopts->reader_thread = !getenv("DSTACK_ONE_THREAD");
	if (!a->no_preload) {   /* filtered samples may need few of the binaries */
		for (size_t i = 0; i < a->nr_listed; i++)
			ds_symbols__prefetch(a->syms, ds_dso__path(a->listed[i]));
		sopts->peek = prefetch_mapped;
		sopts->peek_ctx = a;
	}
	ret = ds_session__run(a->session, sopts, fn, ctx);
	progress_done(&wp.p);
	/* a failed output was reported where it failed; -ECANCELED: the callback said why already */
	if (ret && !output_error() && ret != -ECANCELED) {
		const char *msg = ds_session__error(a->session);

		fprintf(stderr, "dstack %s: %s\n", cmd, *msg ? msg : strerror(-ret));
	}
	if (!ret && ds_session__stats(a->session)->bad_records)
		ret = -EINVAL; /* records were skipped: say so in the exit status */
	return ret ? EXIT_INPUT : EXIT_OK;
}

void analysis_close(struct analysis *a)
{
	ds_machine__delete(a->machine);
	ds_symbols__delete(a->syms);
	ds_session__close(a->session);
	free(a->listed);
	memset(a, 0, sizeof(*a));
}

#ifndef DSTACK_TIDY_EXIT
/* what analysis_finish() leaves to the exit: global, so it stays reachable (valgrind) */
struct analysis analysis_left_to_exit;
#endif

void analysis_finish(struct analysis *a)
{
#ifdef DSTACK_TIDY_EXIT
	analysis_close(a);
#else
	analysis_left_to_exit = *a;
	memset(a, 0, sizeof(*a));
#endif
}

int walk_samples(const char *cmd, const struct walk_opts *o, walk_fn fn, void *ctx)
{
	struct ds_symbols_opts so = { .symfs = o->common.symfs, .kallsyms = o->common.kallsyms,
				      .no_inline = o->no_inline, .no_demangle = o->no_demangle };
	struct walk w = { .o = o, .fn = fn, .ctx = ctx };
	struct ds_session_opts sopts = { 0 };
	struct analysis a;
	int ret = analysis_open(&a, cmd, o->common.input, &so);

	if (ret)
		return ret;
	a.no_preload = sample_filter_active(&o->filter);
	w.filter = o->filter;
	if (sample_filter_prepare(&w.filter, cmd, ds_session__reader(a.session))) {
		analysis_finish(&a);
		return EXIT_USAGE;
	}
	w.machine = a.machine;
	user_unwind__find_vdso(&w.uu, a.syms, ds_reader__info(ds_session__reader(a.session)));
	w.reader = current_reader = ds_session__reader(a.session);
	trace_text_init(&w.tt, a.session, a.machine);
	ret = analysis_run(&a, cmd, &sopts, on_event, &w);
	if (ret == EXIT_OK && offcpu_drain(&w)) {
		fprintf(stderr, "dstack %s: out of memory\n", cmd);
		ret = EXIT_INPUT;
	}
	if (w.oc && ds_offcpu__unmatched(w.oc))
		ds_warn("%s: %llu switch-outs had no switch-in before the same thread's next one (lost events?)\n",
			o->common.input, (unsigned long long)ds_offcpu__unmatched(w.oc));
	if (o->time_mode == WALK_OFFCPU && !w.have_switch)
		ds_warn("%s: --off-cpu: no sched:sched_switch sample in the recording\n", o->common.input);
	ds_offcpu__delete(w.oc);
	free(w.frames);
	trace_text_exit(&w.tt);
	read_split_exit(&w.reads);
	if (ds_session__stitch_stats(a.session))
		last_stats = *ds_session__stitch_stats(a.session);
	last_session_stats = *ds_session__stats(a.session);
	user_unwind__exit(&w.uu);
	last_header = *ds_reader__info(ds_session__reader(a.session));
	/* shallow copy: the strings and build-ids die with the session */
	last_header.hostname = last_header.osrelease = last_header.version = NULL;
	last_header.arch = last_header.cpudesc = last_header.cpuid = last_header.cmdline = NULL;
	last_header.build_ids = NULL;
	last_header.nr_build_ids = 0;
	last_header.tracing_data = NULL;
	last_header.tracing_data_size = 0;
	if (o->at_end)
		o->at_end(ctx, ret);
	current_reader = NULL;
	analysis_finish(&a);
	return ret;
}

void trace_text_init(struct trace_text *tt, struct ds_session *s, struct ds_machine *m)
{
	*tt = (struct trace_text){ .session = s, .machine = m };
}

void trace_text_exit(struct trace_text *tt)
{
	ds_tp_set__delete(tt->set);
	tt->set = NULL;
}

const struct ds_tp_event *trace_text_event(struct trace_text *tt, const struct ds_event *ev)
{
	const struct ds_header_info *in = ds_reader__info(ds_session__reader(tt->session));

	if (ev->evsel->attr.type != DS_PERF_TYPE_TRACEPOINT)
		return NULL;
	if (in->tracing_data != tt->parsed) {
		char err[256] = "";

		ds_tp_set__delete(tt->set);
		tt->parsed = in->tracing_data;
		tt->set = ds_tp_set__parse(in->tracing_data, (size_t)in->tracing_data_size, err, sizeof(err));
		if (!tt->set && !tt->warned) {
			ds_warn("%s: %s; tracepoint fields not printed\n",
				ds_reader__path(ds_session__reader(tt->session)), err);
			tt->warned = true;
		}
	}
	return ds_tp_set__find(tt->set, ev->evsel->attr.config);
}

/* perf's resolver for %pS: the kernel symbol holding addr */
static const char *trace_resolve(void *ctx, uint64_t addr, uint64_t *start)
{
	struct trace_text *tt = ctx;
	struct ds_resolved r;
	const struct ds_frame *f;

	ds_machine__resolve(tt->machine, tt->thread, DS_MISC_KERNEL, addr, &r);
	f = &r.frames[r.nr_frames - 1];
	if (!r.kernel || !f->name)
		return NULL;
	*start = addr - f->offset;
	return f->name;
}

size_t trace_text(struct trace_text *tt, const struct ds_event *ev, struct ds_thread *t, char *buf, size_t cap)
{
	const struct ds_tp_event *tpe = trace_text_event(tt, ev);

	if (!tpe) {
		if (cap)
			*buf = 0;
		return 0;
	}
	tt->thread = t;
	return ds_tp_event__format(tpe, ev->sample.raw, ev->sample.raw_size, trace_resolve, tt, buf, cap);
}
