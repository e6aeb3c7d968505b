// SPDX-License-Identifier: MIT
/*
 * The pipeline of resolved samples (dstack/profile.h): a session read with
 * the machine tracking threads and maps, the binaries loading ahead on the
 * symbols' helper thread, each sample's callchain resolved (unwound from
 * its stack snapshot when it has one), its weight worked out (counter
 * reads split, waits measured under off-CPU time).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "dstack/log.h"
#include "dstack/offcpu.h"
#include "dstack/profile.h"
#include "dstack/tracepoint.h"
#include "stream/session_int.h"
#include "profile/profile_int.h"
#include "util/error.h"
#include "util/grow.h"
#include "util/hashmap.h"

/*
 * Tracepoint samples' text: the formats are parsed from the input's
 * tracing data on the first tracepoint sample (again if a pipe sends new
 * data), %pS addresses resolve through the machine's kernel symbols.
 */
struct trace_text {
	struct ds_session *session;
	struct ds_machine *machine;
	struct ds_thread *thread;   /* of the sample being formatted */
	struct ds_tp_set *set;
	const void *parsed;         /* the tracing data the set was parsed from */
	bool warned;
};

/* Counter reads (ds_profile__split_reads): by sample id. */
struct read_split {
	struct dsi_hashmap ids;           /* sample id -> index + 1 into counters */
	struct read_counter {
		const struct ds_evsel *evsel;
		uint64_t last;
	} *counters;
	size_t nr;
	bool ready;
};

/*
 * Memory per map held, the bound's unit (ds_machine__set_max_maps): a map
 * is 48 bytes in chunks of 256 that a split leaves half full
 * (docs/performance.md, "maps"): a budget of 64 MiB holds 1,048,576 maps
 * at once, a large host's thousands of processes with some hundreds each.
 */
#define MAP_COST 64
struct ds_profile {
	struct ds_profile_opts o;
	char *path;
	char *kcore_kallsyms;       /* a --kcore directory's kallsyms, when none was named */
	struct ds_session *session;
	struct ds_symbols *syms;
	struct ds_machine *machine;
	/* the binaries the header lists as sampled: loaded ahead unless no_preload */
	struct ds_dso **listed;
	size_t nr_listed;
	unsigned max_stack;              /* as given to the machine: 0 takes no frames */
	bool ran;
	/* set by the report that reads the samples (profile_int.h) */
	bool want_shapes;
	bool keep_filtered;
	struct ds_user_unwind *uu;
	struct trace_text tt;
	struct read_split reads;
	uint64_t perf_chain[DS_PROFILE_CHAIN_MAX];   /* ds_event__perf_callchain's, for script_comms */
	char comm_buf[24];               /* a script comm (":TID") not interned: transient_comms */
	/* the event callback behind the progress hook */
	ds_event_fn ev_fn;
	void *ev_ctx;
	uint64_t data_offset;
	/* the sample walk */
	ds_profile_sample_fn fn;
	void *ctx;
	/* DS_PROFILE_OFFCPU / WALL */
	struct ds_offcpu *oc;
	struct ds_cc_frame *frames;      /* a wait's frames and its state frame */
	size_t cap_frames;
	uint64_t last_time;
	int64_t parallelism;           /* perf's machine-level count of running tasks, from SWITCH records (1 at first) */
	uint32_t nr_cpus;              /* its bound: the recording's available CPUs */
	const char *state_names[4];      /* "[off-cpu: sleeping]"... interned */
	struct ds_event last_switch;     /* for the waits drained at the end: its evsel (hdr not kept) */
	bool have_switch;
};

/* The bound on maps held at once (ds_machine__set_max_maps): the budget in force over MAP_COST. */
static size_t max_maps(const struct ds_profile *p)
{
	return (p->o.memory_budget ? p->o.memory_budget : DS_DEFAULT_MEMORY_BUDGET) / MAP_COST;
}

/*
 * Why open or a run failed: for ds_errmsg() (the convention), and, for the
 * callers that still take it so, to the error hook or the log.
 */
static void say_error(const struct ds_profile_opts *o, const char *path, int err, const char *msg)
{
	if (err != -ECANCELED)
		dsi_error_keep(err, msg);
	if (o->error)
		o->error(o->hook_ctx, err, msg);
	else if (err != -ECANCELED)
		ds_warn("%s: %s\n", path, msg);
}

static enum ds_profile_verdict verdict(struct ds_profile *p, const struct ds_sample *s, const char *comm)
{
	return p->o.filter ? p->o.filter(p->o.hook_ctx, s, comm) : DS_PROFILE_KEEP;
}

/* ---- tracepoint text ---------------------------------------------------- */

static const struct ds_tp_event *trace_text_event(struct trace_text *tt, const struct ds_event *ev)
{
	const struct ds_header_info *in = ds_reader__info(ds_session__reader(tt->session));

	if (ev->evsel->attr.type != DS_PERF_TYPE_TRACEPOINT)
		return NULL;
	if (in->tracing_data != tt->parsed) {
		ds_tp_set__delete(tt->set);
		tt->parsed = in->tracing_data;
		tt->set = ds_tp_set__parse(in->tracing_data, (size_t)in->tracing_data_size);
		if (!tt->set && !tt->warned) {
			ds_warn("%s: %s; tracepoint fields not printed\n",
				ds_reader__path(ds_session__reader(tt->session)), ds_errmsg());
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

size_t ds_profile__tracepoint_text(struct ds_profile *p, const struct ds_event *ev, struct ds_thread *t,
				   char *buf, size_t cap)
{
	struct trace_text *tt = &p->tt;
	const struct ds_tp_event *tpe = trace_text_event(tt, ev);

	if (!tpe) {
		if (cap)
			*buf = 0;
		return 0;
	}
	tt->thread = t;
	return ds_tp_event__format(tpe, ev->sample.raw, ev->sample.raw_size, trace_resolve, tt, buf, cap);
}

/* ---- counter reads ------------------------------------------------------ */

/* The counters, by sample id, from the events' ids (all known by the first sample, pipes too). */
static int read_split_init(struct read_split *rs, const struct ds_reader *rd)
{
	size_t n = 0;

	rs->ready = true;
	dsi_hashmap__init(&rs->ids);
	for (size_t i = 0; i < ds_reader__nr_evsels(rd); i++)
		n += ds_reader__evsel(rd, i)->nr_ids;
	rs->counters = calloc(n ? n : 1, sizeof(*rs->counters));
	if (!rs->counters)
		return -ENOMEM;
	for (size_t i = 0; i < ds_reader__nr_evsels(rd); i++) {
		const struct ds_evsel *e = ds_reader__evsel(rd, i);

		for (size_t k = 0; k < e->nr_ids; k++) {
			if (dsi_hashmap__find(&rs->ids, e->ids[k]))
				continue;
			rs->counters[rs->nr].evsel = e;
			if (dsi_hashmap__set(&rs->ids, e->ids[k], ++rs->nr))
				return -ENOMEM;
		}
	}
	return 0;
}

int ds_profile__split_reads(struct ds_profile *p, const struct ds_event *ev, ds_profile_read_fn fn, void *ctx)
{
	struct read_split *rs = &p->reads;
	int ret;

	if (!rs->ready && (ret = read_split_init(rs, ds_session__reader(p->session))))
		return ret;
	for (uint64_t i = 0; i < ev->sample.read_nr; i++) {
		uint64_t value, id, *idx;
		struct read_counter *c;

		ds_sample__read_value(ev->evsel, &ev->sample, i, &value, &id);
		idx = dsi_hashmap__find(&rs->ids, id);
		if (!idx)
			continue;
		c = &rs->counters[*idx - 1];
		if (value == c->last)
			continue;
		ret = fn ? fn(ctx, c->evsel, value - c->last) : 0;
		c->last = value;
		if (ret)
			return ret;
	}
	return 0;
}

static void read_split_exit(struct read_split *rs)
{
	if (rs->ready)
		dsi_hashmap__exit(&rs->ids);
	free(rs->counters);
	memset(rs, 0, sizeof(*rs));
}

struct walk_read {
	struct ds_profile *p;
	struct ds_profile_sample *ws;
};

static int walk_read_one(void *ctx, const struct ds_evsel *evsel, uint64_t period)
{
	struct walk_read *wr = ctx;

	wr->ws->evsel = evsel;
	wr->ws->period = period;
	return wr->p->fn(wr->p->ctx, wr->ws);
}

/* ---- off-CPU time ------------------------------------------------------- */


/*
 * A comm kept past its sample (the consumers' entries, caches by pointer):
 * the machine's own names live as long as it, but a thread's ":TID"
 * placeholder lives in the thread (dstack/machine.h), and a script name
 * in a buffer.  Both start with ':'; interning a name already interned
 * gives it back.  Unless the caller keeps no comm (transient_comms): then
 * they are handed out as they are, valid during the callback.
 */
static const char *kept_comm(struct ds_profile *w, const char *comm)
{
	return comm[0] == ':' && !w->o.transient_comms ? ds_machine__intern(w->machine, comm) : comm;
}
/* A finished wait to the caller: its stack as at the switch-out, the wait state as the leaf frame. */
static int offcpu_emit(struct ds_profile *w, const struct ds_event *ev, const struct ds_offcpu_wait *wt)
{
	struct ds_profile_sample ws = { .evsel = ev->evsel, .off_cpu = true };
	struct ds_event at = *ev;   /* the switch-out's time and thread */
	struct ds_callchain cc = { 0 };
	const struct ds_cc_frame *f;
	size_t nr;
	struct ds_cc_frame *buf;

	at.sample.time = wt->time;
	at.sample.pid = (uint32_t)wt->pid;
	at.sample.tid = (uint32_t)wt->tid;
	ws.ev = &at;
	ws.time = at.sample.time;
	ws.cpu = at.sample.has_cpu ? at.sample.cpu : (uint32_t)-1;
	ws.thread = ds_machine__thread(w->machine, wt->pid, wt->tid);
	ws.machine = w->machine;
	if (!ws.thread)
		return -ENOMEM;
	ws.comm = kept_comm(w, ds_thread__comm_at(ws.thread, wt->time));
	ws.pid = wt->pid;
	ws.tid = wt->tid;
	ws.period = wt->duration;
	if (wt->nr_ips)
		ds_machine__callchain(w->machine, ws.thread, wt->ips, wt->nr_ips, w->max_stack, 0, &cc);
	f = cc.frames;
	nr = cc.nr;
	buf = dsi_grow(w->frames, &w->cap_frames, nr + 1, sizeof(*buf), 64);
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
	ws.nr_frames = nr + 1;   /* chain_id and shape_id 0: the callers cache nothing for it */
	return w->fn(w->ctx, &ws);
}

/* A tracepoint sample under off-CPU time: a sched_switch ends one wait and starts another. */
static int offcpu_switch(struct ds_profile *w, const struct ds_event *ev)
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
	/* a switch-out the filter leaves out is not held (its switch-in still ends nothing) */
	if (!s->has_tid || (int32_t)s->tid == (int32_t)prev) {
		struct ds_thread *t = ds_machine__thread(w->machine, (int32_t)s->pid, (int32_t)prev);

		if (t && verdict(w, s, ds_thread__comm_at(t, s->time)) == DS_PROFILE_KEEP) {
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
static int offcpu_ran(struct ds_profile *w, const struct ds_event *ev)
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
static int offcpu_drain(struct ds_profile *w)
{
	struct ds_offcpu_wait wt;
	int ret = 0;

	while (!ret && w->oc && w->have_switch && ds_offcpu__drain(w->oc, w->last_time, &wt) == 1)
		ret = offcpu_emit(w, &w->last_switch, &wt);
	return ret;
}

/* ---- samples ------------------------------------------------------------ */

/* When perf script prints @ev: its sample's time, its deferred record's, or at the end */
static uint64_t script_time(const struct ds_thread *t, const struct ds_event *ev)
{
	uint64_t exited = ds_thread__exit_time(t);

	/* a sample whose record never came, or one perf held to the end: it prints it then */
	if ((ev->stitch == DS_STITCH_UNRESOLVED && !ev->cookie_passed) || ev->record_time == DS_NO_TIME)
		return exited ? exited + 1 : DS_NO_TIME;
	return ev->record_time ? ev->record_time : ev->sample.time;
}

/*
 * The thread's comm for @ev as perf script prints it: at the sample's
 * time, or, for a sample held for its deferred record, when perf printed
 * it (stitch.h: record_time; after an exec that is the new comm).  perf
 * script forgets a thread at its EXIT: a sample it prints after that finds
 * a new thread named ":TID" (perf report keeps the thread).  @buf holds
 * that name.
 */
const char *ds_thread__script_comm(struct ds_thread *t, const struct ds_event *ev, char buf[24])
{
	uint64_t when;

	if (!t)
		return ":-1";
	when = script_time(t, ev);
	/* (an EXIT record itself is printed before perf forgets its thread;
	 * a second one, after: a thread perf made anew, with no comm) */
	if ((ev->hdr->type != DS_REC_EXIT || when != DS_NO_TIME) && ds_thread__exited_by(t, when)) {
		snprintf(buf, 24, ":%d", (int32_t)ev->sample.tid);
		return buf;
	}
	return when == DS_NO_TIME ? ds_thread__comm(t) : ds_thread__comm_at(t, when);
}

const uint64_t *ds_event__perf_callchain(const struct ds_event *ev, uint64_t buf[DS_PROFILE_CHAIN_MAX], uint64_t *nr)
{
	const struct ds_sample *s = &ev->sample;
	uint64_t n = s->callchain_nr;

	*nr = n;
	if (!s->callchain || !ev->cookie_passed || n > DS_PROFILE_CHAIN_MAX)
		return s->callchain;
	memcpy(buf, s->callchain, n * sizeof(*buf));
	for (uint64_t i = 0; i + 1 < n; i++)
		if (buf[i] == DS_CONTEXT_USER_DEFERRED)
			buf[i] = DS_CONTEXT_USER;
	return buf;
}

struct ds_thread *ds_machine__script_event_thread(struct ds_machine *m, struct ds_thread *t, const struct ds_event *ev)
{
	struct ds_thread *st;

	if (!t)
		return NULL;
	/* perf leaves it with its cookie, the user frames are ours: resolved where it was taken */
	if (ev->stitch == DS_STITCH_BEFORE)
		return t;
	st = ds_machine__script_thread(m, t, script_time(t, ev));
	return st ? st : t;
}

/*
 * The comm a sample is shown with: perf script's (the comm when a deferred
 * record completed it, ":TID" after the thread exited), else the comm at
 * the record's or the sample's time.  Interned (kept_comm): it outlives the event.
 */
static const char *sample_comm(struct ds_profile *w, struct ds_thread *t, const struct ds_event *ev)
{
	const struct ds_sample *s = &ev->sample;

	if (w->o.script_comms)
		return kept_comm(w, ds_thread__script_comm(t, ev, w->comm_buf));
	if (ev->record_time)
		return kept_comm(w, ds_thread__comm_at(t, ev->record_time));
	return kept_comm(w, s->time == DS_NO_TIME ? ds_thread__comm(t) : ds_thread__comm_at(t, s->time));
}

/* A sample's period: its own, else 1 for a frequency event, else the event's fixed period. */
static uint64_t sample_period(const struct ds_event *ev)
{
	const struct ds_attr *attr = &ev->evsel->attr;

	if (attr->sample_type & DS_SAMPLE_PERIOD)
		return ev->sample.period;
	return DS_ATTR_FLAG(attr, DS_ATTR_FREQ) ? 1 : attr->sample_period;
}

/*
 * The frames of a shown sample into ws: its chain unwound from a stack
 * copy, else its callchain, else its ip alone; with the chain's id and,
 * when wanted, its shape.
 */
static void sample_frames(struct ds_profile *w, const struct ds_event *ev, struct ds_profile_sample *ws)
{
	const struct ds_sample *s = &ev->sample;
	struct ds_callchain cc = { 0 };
	unsigned cc_flags = w->want_shapes ? DS_CALLCHAIN_SHAPE : 0;
	const uint64_t *unwound;
	uint64_t unwound_nr = 0;
	size_t nr;
	/* perf script's: none after the thread's EXIT */
	struct ds_thread *t = w->o.script_comms ? ds_machine__script_event_thread(w->machine, ws->thread, ev) : ws->thread;

	if ((unwound = ds_user_unwind__chain(w->uu, t, ev, w->max_stack, &unwound_nr))) {
		/* cut to --max-stack already, its kernel part and its unwind apart */
		ds_machine__callchain(w->machine, t, unwound, unwound_nr, (unsigned)unwound_nr,
				      cc_flags | DS_CALLCHAIN_UNWOUND, &cc);
	} else if (s->callchain) {
		uint64_t n = s->callchain_nr;
		/* script's names and cookies: perf script's (a given-up cookie is an address) */
		const uint64_t *ips = w->o.script_comms ? ds_event__perf_callchain(ev, w->perf_chain, &n) : s->callchain;

		/* (a stack copy's unwind keeps its innermost frames either way, as perf's) */
		ds_machine__callchain(w->machine, t, ips, n, w->max_stack,
				      cc_flags | (w->o.max_stack_from_root ? DS_CALLCHAIN_FROM_ROOT : 0), &cc);
	}
	/*
	 * No callchain, or an empty one (a user-mode sample of an event with
	 * exclude_callchain_user: --kernel-callchains): the sample is its ip,
	 * as perf's report counts it.
	 */
	if (!cc.nr && (ev->evsel->attr.sample_type & DS_SAMPLE_IP)) {
		uint64_t ips[2] = { s->cpumode == DS_MISC_KERNEL ? DS_CONTEXT_KERNEL : DS_CONTEXT_USER, s->ip };

		ds_machine__callchain(w->machine, t, ips, 2, w->max_stack, cc_flags, &cc);
		ws->ip_only = true;
	}
	ws->frames = cc.frames;
	ws->nr_frames = cc.nr;
	if (!ws->frames)
		return;
	ws->chain_id = cc.id;
	if (w->want_shapes) {
		ws->shape_id = cc.shape;
		ws->frame_ids = ds_machine__shape_frames(w->machine, ws->shape_id, &nr);
		if (nr != ws->nr_frames)
			ws->frame_ids = NULL;   /* cannot be: a shape is its chain's frames */
	}
}

/*
 * Off-CPU time modes see every record first: a sched_switch sample or any
 * record of a thread moves its off-CPU span.  1 when @ev was only that (its
 * result into *ret), 0 when it goes on as a CPU sample.
 */
static int offcpu_consumed(struct ds_profile *w, const struct ds_event *ev, int *ret)
{
	const struct ds_sample *s = &ev->sample;

	if (w->o.time_mode == DS_PROFILE_CPU)
		return 0;
	if (ev->hdr->type != DS_REC_SAMPLE) {
		*ret = offcpu_ran(w, ev);   /* a SWITCH, a deferred callchain, any record of a thread */
		return 1;
	}
	if (s->time != DS_NO_TIME && s->time > w->last_time)
		w->last_time = s->time;
	if (ev->evsel->attr.type == DS_PERF_TYPE_TRACEPOINT) {
		*ret = offcpu_switch(w, ev);
		return 1;
	}
	*ret = offcpu_ran(w, ev);
	return *ret || w->o.time_mode == DS_PROFILE_OFFCPU;
}

/* perf's parallelism of a sample: the running tasks, at least 1, at most the CPUs (switch records may come out of order). */
static uint32_t sample_parallelism(const struct ds_profile *w)
{
	int64_t n = w->parallelism < (int64_t)w->nr_cpus ? w->parallelism : (int64_t)w->nr_cpus;

	return n > 1 ? (uint32_t)n : 1;
}

/* A record of the stream: a sample becomes a ds_profile_sample for w->fn, or off-CPU time. */
static int on_event(void *ctx, const struct ds_event *ev)
{
	struct ds_profile *w = ctx;
	const struct ds_sample *s = &ev->sample;
	struct ds_profile_sample ws = { .ev = ev, .evsel = ev->evsel };
	enum ds_profile_verdict v;
	int ret;

	if (!ev->evsel)
		return 0;
	if (ev->hdr->type == DS_REC_SWITCH || ev->hdr->type == DS_REC_SWITCH_CPU_WIDE)
		w->parallelism += (ev->hdr->misc & DS_MISC_SWITCH_OUT) ? -1 : 1;
	else if (ev->hdr->type == DS_REC_EXIT)
		w->parallelism--;   /* an exiting task is switched out without a record (perf counts it so) */
	if (offcpu_consumed(w, ev, &ret))
		return ret;
	if (ev->hdr->type != DS_REC_SAMPLE)
		return 0;
	ws.thread = ds_machine__thread(w->machine, (int32_t)s->pid, (int32_t)s->tid);
	ws.machine = w->machine;
	if (!ws.thread)
		return -ENOMEM;
	ws.comm = sample_comm(w, ws.thread, ev);
	v = verdict(w, s, ws.comm);
	if (v == DS_PROFILE_DROP)   /* its counter reads still count: the next sample's growth starts here */
		return (ev->evsel->attr.sample_type & DS_SAMPLE_READ) ? ds_profile__split_reads(w, ev, NULL, NULL) : 0;
	ws.pid = (int32_t)s->pid;
	ws.tid = (int32_t)s->tid;
	ws.time = s->time;
	ws.cpu = s->has_cpu ? s->cpu : (uint32_t)-1;
	ws.parallelism = sample_parallelism(w);
	if (v == DS_PROFILE_HIDE) {
		if (!w->keep_filtered)
			return 0;
		ws.filtered = true;   /* counted, not shown: no frames */
	}
	ws.period = sample_period(ev);
	if (!ws.filtered)
		sample_frames(w, ev, &ws);
	if (ev->evsel->attr.sample_type & DS_SAMPLE_READ) {
		struct walk_read wr = { w, &ws };

		return ds_profile__split_reads(w, ev, walk_read_one, &wr);
	}
	return w->fn(w->ctx, &ws);
}

/* ---- the recording ------------------------------------------------------ */

static int machine_sideband(void *ctx, const struct ds_event *ev)
{
	return ds_machine__process(ctx, ev);
}

/*
 * Kernel symbols will be looked up: the caller named a kallsyms file, or
 * an event samples the kernel.  Their load then overlaps the reading.
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
 * The binaries the header names by build-id, looked up now: symbols then
 * reject a wrong binary, and the kernel's name its maps' DSOs.  Out of
 * memory, a kernel DSO keeps the name its MMAP gave.
 */
static void list_build_ids(struct ds_profile *p, const struct ds_header_info *hi)
{
	p->listed = calloc(hi->nr_build_ids ? hi->nr_build_ids : 1, sizeof(*p->listed));
	for (size_t i = 0; i < hi->nr_build_ids; i++) {
		struct ds_dso *d;

		(void)ds_machine__list_dso(p->machine, hi->build_ids[i].misc, hi->build_ids[i].filename);
		if (!strcmp(hi->build_ids[i].filename, "[kernel.kallsyms]") &&
		    (hi->build_ids[i].misc & DS_MISC_CPUMODE_MASK) == DS_MISC_KERNEL)
			ds_symbols__recorded_kernel(p->syms, hi->build_ids[i].data, hi->build_ids[i].size);
		if (hi->build_ids[i].filename[0] != '/')
			continue;
		d = ds_symbols__dso(p->syms, hi->build_ids[i].filename, hi->build_ids[i].data, hi->build_ids[i].size);
		if (d && p->listed)
			p->listed[p->nr_listed++] = d;
	}
}

/* Out of memory while opening: said, @p closed, errno ENOMEM.  NULL, for ds_profile__open to return. */
static struct ds_profile *open_out_of_memory(struct ds_profile *p, const struct ds_profile_opts *opts,
					     const char *path)
{
	say_error(opts, path, -ENOMEM, "out of memory");
	ds_profile__close(p);
	errno = ENOMEM;
	return NULL;
}

/* The input's session; when it cannot be opened: said, @p closed, errno set, false. */
static bool open_session(struct ds_profile *p, const struct ds_profile_opts *opts, const char *path)
{
	int saved;

	p->session = ds_session__open(path);
	if (p->session)
		return true;
	saved = errno;
	say_error(opts, path, saved ? -saved : -EINVAL, *ds_errmsg() ? ds_errmsg() : strerror(saved));
	saved = saved ? saved : EINVAL;
	ds_profile__close(p);
	errno = saved;
	return false;
}

/* DIR/kcore_dir/kallsyms of a perf.data directory DIR (perf record --kcore) if it is a file, else NULL. */
static char *kcore_kallsyms(const char *path)
{
	struct stat st;
	char *ks;

	if (stat(path, &st) || !S_ISDIR(st.st_mode) || asprintf(&ks, "%s/kcore_dir/kallsyms", path) < 0)
		return NULL;
	if (!stat(ks, &st) && S_ISREG(st.st_mode))
		return ks;
	free(ks);
	return NULL;
}

struct ds_profile *ds_profile__open(const char *path, const struct ds_profile_opts *opts)
{
	static const struct ds_profile_opts defaults;
	const struct ds_symbols_opts *so;
	const struct ds_header_info *hi;
	const struct ds_reader *rd;
	struct ds_profile *p;

	if (!opts)
		opts = &defaults;
	p = calloc(1, sizeof(*p));
	if (!p || !(p->path = strdup(path))) {
		free(p);
		say_error(opts, path, -ENOMEM, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	p->o = *opts;
	so = &p->o.symbols;
	/* perf's kernel symbols of a perf.data directory recorded with --kcore: its copy of kallsyms */
	if (!so->kallsyms && (p->kcore_kallsyms = kcore_kallsyms(path)))
		p->o.symbols.kallsyms = p->kcore_kallsyms;
	p->max_stack = p->o.no_frames ? 0 : p->o.max_stack ? p->o.max_stack : 127;
	p->syms = ds_symbols__new(so);
	/* a kallsyms file named: its load overlaps setting up and opening the input too */
	if (p->syms && so->kallsyms)
		ds_symbols__preload_kernel(p->syms);
	p->machine = p->syms ? ds_machine__new(p->syms) : NULL;
	if (!p->machine)
		return open_out_of_memory(p, opts, path);
	ds_machine__set_max_maps(p->machine, max_maps(p));
	if (!open_session(p, opts, path))
		return NULL;
	rd = ds_session__reader(p->session);
	hi = ds_reader__info(rd);
	ds_machine__set_time_conv(p->machine, &hi->time_conv);
	if (wants_kernel(rd, so))
		ds_symbols__preload_kernel(p->syms);   /* no-op if started above */
	if (p->o.before_symbols)
		p->o.before_symbols(p->o.hook_ctx, p);
	list_build_ids(p, hi);
	/* the listed binaries' debug files asked at once, before the samples (the others' at their first need) */
	ds_symbols__debuginfod_ahead(p->syms, p->listed, p->nr_listed);
	p->uu = ds_user_unwind__new(p->machine, p->syms, hi, p->o.buildid_dir);
	p->tt = (struct trace_text){ .session = p->session, .machine = p->machine };
	p->parallelism = 1;
	p->nr_cpus = hi->nr_cpus_avail ? hi->nr_cpus_avail : (uint32_t)sysconf(_SC_NPROCESSORS_CONF);
	if (!p->uu)
		return open_out_of_memory(p, opts, path);
	return p;
}

void ds_profile__close(struct ds_profile *p)
{
	if (!p)
		return;
	ds_offcpu__delete(p->oc);
	free(p->frames);
	ds_tp_set__delete(p->tt.set);
	read_split_exit(&p->reads);
	ds_user_unwind__delete(p->uu);
	ds_machine__delete(p->machine);
	ds_symbols__delete(p->syms);
	ds_session__close(p->session);
	free(p->listed);
	free(p->kcore_kallsyms);
	free(p->path);
	free(p);
}

/*
 * On the reading thread, a few rounds ahead of the samples: a binary an
 * MMAP names starts loading on the symbols' helper thread, so that its
 * first lookup finds it loaded (docs/performance.md, "symbol loads").
 */
static void prefetch_mapped(void *ctx, const struct ds_evsel *evsel, const struct ds_event_header *hdr)
{
	struct ds_profile *p = ctx;
	struct ds_mmap_event me;
	const char *why;

	if ((hdr->type != DS_REC_MMAP && hdr->type != DS_REC_MMAP2) ||
	    (hdr->misc & DS_MISC_CPUMODE_MASK) == DS_MISC_KERNEL || (hdr->misc & DS_MISC_MMAP_DATA) ||
	    ds_mmap__parse(evsel, hdr, &me, &why))
		return;
	if (!strncmp(me.filename, "//", 2) || !strncmp(me.filename, "/memfd:", 7) || !strncmp(me.filename, "/dev/", 5))
		return;   /* anonymous and device memory: nothing to load */
	ds_symbols__prefetch(p->syms, me.filename);
}

/* The caller's callback behind the progress hook (only when there is one). */
static int progress_fn(void *ctx, const struct ds_event *ev)
{
	struct ds_profile *p = ctx;

	p->o.progress(p->o.hook_ctx, ev->offset > p->data_offset ? ev->offset - p->data_offset : 0,
		      ev->hdr->type == DS_REC_SAMPLE);
	return p->ev_fn(p->ev_ctx, ev);
}

/* No event has timestamps (a recording without time order: perf's order is the one there is). */
static bool untimed(const struct ds_reader *rd)
{
	size_t n = ds_reader__nr_evsels(rd);

	for (size_t i = 0; i < n; i++)
		if (ds_reader__evsel(rd, i)->attr.sample_type & DS_SAMPLE_TIME)
			return false;
	return n > 0;
}

/* The session run with threads and maps tracked (the sideband is the machine); its error said. */
static int profile_run(struct ds_profile *p, ds_event_fn fn, void *ctx)
{
	const struct ds_header_info *hi = ds_reader__info(ds_session__reader(p->session));
	struct ds_session_opts sopts = { .no_stitch = p->o.no_stitch, .memory_budget = p->o.memory_budget };
	int ret;

	/* off-CPU time pairs each switch-out with the next switch-in: time order */
	sopts.stitch.perf_order = (p->o.perf_order || untimed(ds_session__reader(p->session))) &&
				  p->o.time_mode == DS_PROFILE_CPU;
	p->data_offset = hi->pipe ? 0 : hi->data_offset;
	p->ev_fn = fn;
	p->ev_ctx = ctx;
	if (p->o.progress) {
		fn = progress_fn;
		ctx = p;
	}
	sopts.sideband = machine_sideband;
	sopts.sideband_ctx = p->machine;
	sopts.reader_thread = !p->o.one_thread;
	if (!p->o.no_preload) {   /* filtered samples may need few of the binaries */
		for (size_t i = 0; i < p->nr_listed; i++)
			ds_symbols__prefetch(p->syms, ds_dso__path(p->listed[i]));
		sopts.peek = prefetch_mapped;
		sopts.peek_ctx = p;
	}
	ret = ds_session__run(p->session, &sopts, fn, ctx);
	if (p->o.progress)
		p->o.progress(p->o.hook_ctx, DS_PROFILE_READ_DONE, false);
	if (ds_machine__maps_dropped(p->machine))
		ds_warn("%s: more than %zu maps held at once: %llu MMAP records not kept, their addresses in no map "
			"(memory budget: DSTACK_MEMORY_BUDGET)\n", p->path,
			max_maps(p),
			(unsigned long long)ds_machine__maps_dropped(p->machine));
	if (ret) {
		const char *msg = dsi_session__errmsg(p->session);

		say_error(&p->o, p->path, ret, *msg ? msg : strerror(-ret));
	}
	return ret;
}

int ds_profile__for_each_event(struct ds_profile *p, ds_event_fn fn, void *ctx)
{
	if (p->ran)
		return -EALREADY;
	p->ran = true;
	return profile_run(p, fn, ctx);
}

int ds_profile__for_each_sample(struct ds_profile *p, ds_profile_sample_fn fn, void *ctx)
{
	int ret;

	if (p->ran)
		return -EALREADY;
	p->ran = true;
	p->fn = fn;
	p->ctx = ctx;
	ret = profile_run(p, on_event, p);
	/* a damaged recording's waits still open are not counted up to its end */
	if (!ret && !ds_session__stats(p->session)->bad_records && (ret = offcpu_drain(p)))
		say_error(&p->o, p->path, ret, "out of memory");
	if (p->oc && ds_offcpu__unmatched(p->oc))
		ds_warn("%s: %llu switch-outs had no switch-in before the same thread's next one (lost events?)\n",
			p->path, (unsigned long long)ds_offcpu__unmatched(p->oc));
	if (p->o.time_mode == DS_PROFILE_OFFCPU && !p->have_switch)
		ds_warn("%s: --off-cpu: no sched:sched_switch sample in the recording\n", p->path);
	return ret;
}

void ds_profile__stats(const struct ds_profile *p, struct ds_profile_stats *st)
{
	const struct ds_stitch_stats *ss = ds_session__stitch_stats(p->session);

	memset(st, 0, sizeof(*st));
	st->session = *ds_session__stats(p->session);
	if (ss)
		st->stitch = *ss;
	st->unwind = *ds_user_unwind__stats(p->uu);
}

const struct ds_reader *ds_profile__reader(const struct ds_profile *p) { return ds_session__reader(p->session); }
struct ds_session *ds_profile__session(const struct ds_profile *p) { return p->session; }
struct ds_symbols *ds_profile__symbols(const struct ds_profile *p) { return p->syms; }
struct ds_machine *ds_profile__machine(const struct ds_profile *p) { return p->machine; }
struct ds_user_unwind *ds_profile__user_unwind(const struct ds_profile *p) { return p->uu; }

int dsi_profile__want_shapes(struct ds_profile *p, bool on)
{
	if (p->ran)
		return -EALREADY;
	p->want_shapes = on;
	return 0;
}

int dsi_profile__keep_filtered(struct ds_profile *p, bool on)
{
	if (p->ran)
		return -EALREADY;
	p->keep_filtered = on;
	return 0;
}
