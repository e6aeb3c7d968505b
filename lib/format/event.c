// SPDX-License-Identifier: MIT
/*
 * Zero-copy parsing of sample fields and fixed-layout records.  The record
 * size bounds every read; the layout follows the sample_type bit order of
 * the perf_event ABI.
 */
#include <errno.h>
#include <string.h>
#include "dstack/event.h"

struct rd {
	const uint8_t *p;
	size_t pos, end;
	const char *why;
};

static bool rd_u64(struct rd *r, uint64_t *v, const char *what)
{
	if (r->end - r->pos < 8) {
		r->why = what;
		return false;
	}
	memcpy(v, r->p + r->pos, 8);
	r->pos += 8;
	return true;
}

static bool rd_u32x2(struct rd *r, uint32_t *a, uint32_t *b, const char *what)
{
	if (r->end - r->pos < 8) {
		r->why = what;
		return false;
	}
	memcpy(a, r->p + r->pos, 4);
	memcpy(b, r->p + r->pos + 4, 4);
	r->pos += 8;
	return true;
}

/* Skip @n u64 words, returning a pointer to them (records are 8-aligned). */
static const uint64_t *rd_words(struct rd *r, uint64_t n, const char *what)
{
	if (n > (r->end - r->pos) / 8) {
		r->why = what;
		return NULL;
	}
	const uint64_t *w = (const uint64_t *)(const void *)(r->p + r->pos);

	r->pos += (size_t)n * 8;
	return w;
}

static bool rd_bytes(struct rd *r, uint64_t n, const void **out, const char *what)
{
	if (n > r->end - r->pos) {
		r->why = what;
		return false;
	}
	*out = r->p + r->pos;
	r->pos += (size_t)n;
	return true;
}

static bool skip_read_format(struct rd *r, uint64_t rf, struct ds_sample *s)
{
	uint64_t nr = 1, per;

	s->read = (const uint64_t *)(r->p + r->pos);
	per = 1 + !!(rf & DS_FORMAT_ID) + !!(rf & DS_FORMAT_LOST);
	if (rf & DS_FORMAT_GROUP) {
		if (!rd_u64(r, &nr, "read group count past end of record"))
			return false;
		if (nr > 65536) {
			r->why = "read group count is absurd";
			return false;
		}
		uint64_t hdr = !!(rf & DS_FORMAT_TOTAL_TIME_ENABLED) + !!(rf & DS_FORMAT_TOTAL_TIME_RUNNING);

		s->read_nr = nr;
		return rd_words(r, hdr + nr * per, "read values past end of record") != NULL;
	}
	s->read_nr = 1;
	return rd_words(r, per + !!(rf & DS_FORMAT_TOTAL_TIME_ENABLED) +
			       !!(rf & DS_FORMAT_TOTAL_TIME_RUNNING), "read values past end of record") != NULL;
}

/*
 * A single counter: value, [time_enabled], [time_running], [id], [lost];
 * a group: nr, [time_enabled], [time_running], then per counter value,
 * [id], [lost].
 */
void ds_sample__read_value(const struct ds_evsel *evsel, const struct ds_sample *s, uint64_t i,
			   uint64_t *value, uint64_t *id)
{
	uint64_t rf = evsel->attr.read_format;
	uint64_t times = !!(rf & DS_FORMAT_TOTAL_TIME_ENABLED) + !!(rf & DS_FORMAT_TOTAL_TIME_RUNNING);
	const uint64_t *w = s->read;

	*value = *id = 0;
	if (!w || i >= s->read_nr)
		return;
	if (rf & DS_FORMAT_GROUP) {
		w += 1 + times + i * (1 + !!(rf & DS_FORMAT_ID) + !!(rf & DS_FORMAT_LOST));
		*value = w[0];
		if (rf & DS_FORMAT_ID)
			*id = w[1];
		return;
	}
	*value = w[0];
	if (rf & DS_FORMAT_ID)
		*id = w[1 + times];
}

static void sample_defaults(struct ds_sample *s, const struct ds_event_header *hdr)
{
	memset(s, 0, sizeof(*s));
	s->time = DS_NO_TIME;
	s->pid = s->tid = (uint32_t)-1;
	s->cpu = (uint32_t)-1;
	s->cpumode = hdr->misc & DS_MISC_CPUMODE_MASK;
}

static bool parse_regs(struct rd *r, uint64_t *abi, const uint64_t **regs, unsigned nr, const char *what)
{
	if (!rd_u64(r, abi, what))
		return false;
	/* PERF_SAMPLE_REGS_ABI_NONE, _32, _64: anything else is no kernel's */
	if (*abi > DS_REGS_ABI_64) {
		r->why = "register ABI is not none, 32-bit or 64-bit";
		return false;
	}
	if (*abi) {
		*regs = rd_words(r, nr, what);
		return *regs != NULL;
	}
	return true;
}

static bool parse_branch(struct rd *r, const struct ds_attr *a, struct ds_sample *s)
{
	uint64_t hw_idx, words;

	if (!rd_u64(r, &s->branch_nr, "branch stack count past end of record"))
		return false;
	if (a->branch_sample_type & DS_BRANCH_HW_INDEX)
		if (!rd_u64(r, &hw_idx, "branch hw_idx past end of record"))
			return false;
	if (s->branch_nr > 1u << 20) {
		r->why = "branch stack count is absurd";
		return false;
	}
	words = s->branch_nr * 3 + ((a->branch_sample_type & DS_BRANCH_COUNTERS) ? s->branch_nr : 0);
	s->branch = rd_words(r, words, "branch stack past end of record");
	return s->branch != NULL;
}

static bool parse_tail(struct rd *r, const struct ds_evsel *e, struct ds_sample *s)
{
	uint64_t t = e->attr.sample_type;

	if ((t & DS_SAMPLE_STACK_USER)) {
		if (!rd_u64(r, &s->stack_user_size, "user stack size past end of record") ||
		    !rd_bytes(r, s->stack_user_size, &s->stack_user, "user stack past end of record"))
			return false;
		if (s->stack_user_size && !rd_u64(r, &s->stack_user_dyn, "user stack dyn_size past end of record"))
			return false;
		/* the kernel copies at most the size it reserved (perf refuses this too) */
		if (s->stack_user_dyn > s->stack_user_size) {
			r->why = "user stack dyn_size larger than the stack copied";
			return false;
		}
	}
	if ((t & (DS_SAMPLE_WEIGHT | DS_SAMPLE_WEIGHT_STRUCT)) && !rd_u64(r, &s->weight, "weight past end of record"))
		return false;
	if ((t & DS_SAMPLE_DATA_SRC) && !rd_u64(r, &s->data_src, "data_src past end of record"))
		return false;
	if ((t & DS_SAMPLE_TRANSACTION) && !rd_u64(r, &s->transaction, "transaction past end of record"))
		return false;
	if ((t & DS_SAMPLE_REGS_INTR) &&
	    !parse_regs(r, &s->regs_intr_abi, &s->regs_intr, e->nr_regs_intr, "intr regs past end of record"))
		return false;
	if ((t & DS_SAMPLE_PHYS_ADDR) && !rd_u64(r, &s->phys_addr, "phys_addr past end of record"))
		return false;
	if ((t & DS_SAMPLE_CGROUP) && !rd_u64(r, &s->cgroup, "cgroup past end of record"))
		return false;
	if ((t & DS_SAMPLE_DATA_PAGE_SIZE) && !rd_u64(r, &s->data_page_size, "data_page_size past end of record"))
		return false;
	if ((t & DS_SAMPLE_CODE_PAGE_SIZE) && !rd_u64(r, &s->code_page_size, "code_page_size past end of record"))
		return false;
	if ((t & DS_SAMPLE_AUX) &&
	    (!rd_u64(r, &s->aux_size, "aux size past end of record") ||
	     !rd_bytes(r, s->aux_size, &s->aux, "aux data past end of record")))
		return false;
	return true;
}

static bool parse_body(struct rd *r, const struct ds_evsel *e, struct ds_sample *s)
{
	uint64_t t = e->attr.sample_type;
	uint32_t res;

	if ((t & DS_SAMPLE_IDENTIFIER) && !rd_u64(r, &s->id, "identifier past end of record"))
		return false;
	if ((t & DS_SAMPLE_IP) && !rd_u64(r, &s->ip, "ip past end of record"))
		return false;
	if (t & DS_SAMPLE_TID) {
		if (!rd_u32x2(r, &s->pid, &s->tid, "pid/tid past end of record"))
			return false;
		s->has_tid = true;
	}
	if ((t & DS_SAMPLE_TIME) && !rd_u64(r, &s->time, "time past end of record"))
		return false;
	if ((t & DS_SAMPLE_ADDR) && !rd_u64(r, &s->addr, "addr past end of record"))
		return false;
	if ((t & DS_SAMPLE_ID) && !rd_u64(r, &s->id, "id past end of record"))
		return false;
	if ((t & DS_SAMPLE_STREAM_ID) && !rd_u64(r, &s->stream_id, "stream_id past end of record"))
		return false;
	if (t & DS_SAMPLE_CPU) {
		if (!rd_u32x2(r, &s->cpu, &res, "cpu past end of record"))
			return false;
		s->has_cpu = true;
	}
	if ((t & DS_SAMPLE_PERIOD) && !rd_u64(r, &s->period, "period past end of record"))
		return false;
	if ((t & DS_SAMPLE_READ) && !skip_read_format(r, e->attr.read_format, s))
		return false;
	if (t & DS_SAMPLE_CALLCHAIN) {
		if (!rd_u64(r, &s->callchain_nr, "callchain nr past end of record"))
			return false;
		s->callchain = rd_words(r, s->callchain_nr, "callchain nr exceeds the record");
		if (!s->callchain)
			return false;
	}
	if (t & DS_SAMPLE_RAW) {
		uint32_t sz;

		if (r->end - r->pos < 4) {
			r->why = "raw size past end of record";
			return false;
		}
		memcpy(&sz, r->p + r->pos, 4);
		r->pos += 4;
		if (!rd_bytes(r, sz, &s->raw, "raw data past end of record"))
			return false;
		s->raw_size = sz;
		/* raw data is padded so that the next field is u64 aligned */
		r->pos = (r->pos + 7) & ~(size_t)7;
		if (r->pos > r->end) {
			r->why = "raw data padding past end of record";
			return false;
		}
	}
	if ((t & DS_SAMPLE_BRANCH_STACK) && !parse_branch(r, &e->attr, s))
		return false;
	if ((t & DS_SAMPLE_REGS_USER) &&
	    !parse_regs(r, &s->regs_user_abi, &s->regs_user, e->nr_regs_user, "user regs past end of record"))
		return false;
	return parse_tail(r, e, s);
}

int ds_sample__parse(const struct ds_evsel *e, const struct ds_event_header *hdr,
		     struct ds_sample *s, const char **why)
{
	struct rd r = { (const uint8_t *)hdr, 8, hdr->size, NULL };

	sample_defaults(s, hdr);
	if (e->attr.sample_type & ~(uint64_t)DS_SAMPLE_KNOWN) {
		*why = "sample_type has bits this reader does not know";
		return -EINVAL;
	}
	if (!parse_body(&r, e, s)) {
		*why = r.why;
		return -EINVAL;
	}
	return 0;
}

int ds_sample_id__parse(const struct ds_evsel *e, const struct ds_event_header *hdr,
			struct ds_sample *s, const char **why)
{
	uint64_t t = e->attr.sample_type;
	uint16_t n = e->sample_id_size;
	uint32_t res;

	sample_defaults(s, hdr);
	if (!n)
		return 0;
	if (hdr->size < 8 + n) {
		*why = "record too small for its sample_id_all trailer";
		return -EINVAL;
	}
	struct rd r = { (const uint8_t *)hdr, hdr->size - n, hdr->size, NULL };

	if (t & DS_SAMPLE_TID) {
		rd_u32x2(&r, &s->pid, &s->tid, "");
		s->has_tid = true;
	}
	if (t & DS_SAMPLE_TIME)
		rd_u64(&r, &s->time, "");
	if (t & DS_SAMPLE_ID)
		rd_u64(&r, &s->id, "");
	if (t & DS_SAMPLE_STREAM_ID)
		rd_u64(&r, &s->stream_id, "");
	if (t & DS_SAMPLE_CPU) {
		rd_u32x2(&r, &s->cpu, &res, "");
		s->has_cpu = true;
	}
	if (t & DS_SAMPLE_IDENTIFIER)
		rd_u64(&r, &s->id, "");
	return 0;
}

int ds_record__parse_sample(const struct ds_evsel *e, const struct ds_event_header *hdr,
			    struct ds_sample *s, const char **why)
{
	return hdr->type == DS_REC_SAMPLE ? ds_sample__parse(e, hdr, s, why) : ds_sample_id__parse(e, hdr, s, why);
}

uint64_t ds_evsel__record_time(const struct ds_evsel *e, const struct ds_event_header *hdr)
{
	uint64_t t = e->attr.sample_type, v;
	size_t off;

	if (hdr->type >= DS_REC_KERNEL_MAX || !(t & DS_SAMPLE_TIME))
		return DS_NO_TIME;
	if (hdr->type == DS_REC_SAMPLE) {
		/* the fields before TIME have fixed sizes */
		off = 8 + 8 * (!!(t & DS_SAMPLE_IDENTIFIER) + !!(t & DS_SAMPLE_IP) + !!(t & DS_SAMPLE_TID));
	} else {
		if (!e->sample_id_size || hdr->size < 8 + e->sample_id_size)
			return DS_NO_TIME;
		off = hdr->size - e->sample_id_size + 8 * !!(t & DS_SAMPLE_TID);
	}
	if (off + 8 > hdr->size)
		return DS_NO_TIME;
	memcpy(&v, (const uint8_t *)hdr + off, 8);
	return v;
}

uint64_t ds_record__time(const struct ds_reader *rd, const struct ds_event_header *hdr)
{
	const struct ds_evsel *e;

	if (hdr->type >= DS_REC_KERNEL_MAX || !ds_reader__nr_evsels(rd))
		return DS_NO_TIME;
	e = ds_reader__evsel_of(rd, hdr);
	return ds_evsel__record_time(e ? e : ds_reader__evsel(rd, 0), hdr);
}

/* Body size of a non-sample record, without its sample_id_all trailer. */
static size_t body_end(const struct ds_evsel *e, const struct ds_event_header *hdr)
{
	size_t n = e ? e->sample_id_size : 0;

	return hdr->size >= 8 + n ? hdr->size - n : hdr->size;
}

static const char *bounded_string(const uint8_t *p, size_t len)
{
	return memchr(p, 0, len) ? (const char *)p : NULL;
}

int ds_mmap__parse(const struct ds_evsel *e, const struct ds_event_header *hdr,
		   struct ds_mmap_event *m, const char **why)
{
	const uint8_t *p = (const uint8_t *)hdr;
	size_t end = body_end(e, hdr);
	size_t fixed = hdr->type == DS_REC_MMAP2 ? 8 + 8 + 24 + 24 + 8 : 8 + 8 + 24;

	memset(m, 0, sizeof(*m));
	if (end < fixed + 1) {
		*why = "mmap record too small";
		return -EINVAL;
	}
	memcpy(&m->pid, p + 8, 4);
	memcpy(&m->tid, p + 12, 4);
	memcpy(&m->start, p + 16, 8);
	memcpy(&m->len, p + 24, 8);
	memcpy(&m->pgoff, p + 32, 8);
	if (hdr->type == DS_REC_MMAP2) {
		if (hdr->misc & DS_MISC_MMAP_BUILD_ID) {
			m->has_build_id = true;
			m->build_id_size = p[40];
			if (m->build_id_size > 20)
				m->build_id_size = 20;
			m->build_id = p + 44;
		} else {
			memcpy(&m->maj, p + 40, 4);
			memcpy(&m->min, p + 44, 4);
			memcpy(&m->ino, p + 48, 8);
			memcpy(&m->ino_generation, p + 56, 8);
		}
		memcpy(&m->prot, p + 64, 4);
		memcpy(&m->flags, p + 68, 4);
	}
	m->filename = bounded_string(p + fixed, end - fixed);
	if (!m->filename) {
		*why = "mmap filename is not NUL-terminated within the record";
		return -EINVAL;
	}
	return 0;
}

int ds_comm__parse(const struct ds_evsel *e, const struct ds_event_header *hdr,
		   struct ds_comm_event *c, const char **why)
{
	const uint8_t *p = (const uint8_t *)hdr;
	size_t end = body_end(e, hdr);

	if (end < 8 + 8 + 1) {
		*why = "comm record too small";
		return -EINVAL;
	}
	memcpy(&c->pid, p + 8, 4);
	memcpy(&c->tid, p + 12, 4);
	c->exec = hdr->misc & DS_MISC_COMM_EXEC;
	c->comm = bounded_string(p + 16, end - 16);
	if (!c->comm) {
		*why = "comm is not NUL-terminated within the record";
		return -EINVAL;
	}
	return 0;
}

int ds_task__parse(const struct ds_evsel *e, const struct ds_event_header *hdr,
		   struct ds_task_event *t, const char **why)
{
	const uint8_t *p = (const uint8_t *)hdr;

	if (body_end(e, hdr) < 8 + 24) {
		*why = "fork/exit record too small";
		return -EINVAL;
	}
	memcpy(&t->pid, p + 8, 4);
	memcpy(&t->ppid, p + 12, 4);
	memcpy(&t->tid, p + 16, 4);
	memcpy(&t->ptid, p + 20, 4);
	memcpy(&t->time, p + 24, 8);
	return 0;
}

int ds_deferred__parse(const struct ds_evsel *e, const struct ds_event_header *hdr,
		       struct ds_deferred_event *d, const char **why)
{
	struct rd r = { (const uint8_t *)hdr, 8, body_end(e, hdr), NULL };

	if (!rd_u64(&r, &d->cookie, "deferred callchain cookie past end of record") ||
	    !rd_u64(&r, &d->nr, "deferred callchain nr past end of record")) {
		*why = r.why;
		return -EINVAL;
	}
	d->ips = rd_words(&r, d->nr, "deferred callchain nr exceeds the record");
	if (!d->ips) {
		*why = r.why;
		return -EINVAL;
	}
	return 0;
}

static const char *const kernel_names[] = {
	[DS_REC_MMAP] = "MMAP", [DS_REC_LOST] = "LOST", [DS_REC_COMM] = "COMM",
	[DS_REC_EXIT] = "EXIT", [DS_REC_THROTTLE] = "THROTTLE",
	[DS_REC_UNTHROTTLE] = "UNTHROTTLE", [DS_REC_FORK] = "FORK",
	[DS_REC_READ] = "READ", [DS_REC_SAMPLE] = "SAMPLE", [DS_REC_MMAP2] = "MMAP2",
	[DS_REC_AUX] = "AUX", [DS_REC_ITRACE_START] = "ITRACE_START",
	[DS_REC_LOST_SAMPLES] = "LOST_SAMPLES", [DS_REC_SWITCH] = "SWITCH",
	[DS_REC_SWITCH_CPU_WIDE] = "SWITCH_CPU_WIDE", [DS_REC_NAMESPACES] = "NAMESPACES",
	[DS_REC_KSYMBOL] = "KSYMBOL", [DS_REC_BPF_EVENT] = "BPF_EVENT",
	[DS_REC_CGROUP] = "CGROUP", [DS_REC_TEXT_POKE] = "TEXT_POKE",
	[DS_REC_AUX_OUTPUT_HW_ID] = "AUX_OUTPUT_HW_ID",
	[DS_REC_CALLCHAIN_DEFERRED] = "CALLCHAIN_DEFERRED",
};
static const char *const user_names[] = {
	"HEADER_ATTR", "HEADER_EVENT_TYPE", "HEADER_TRACING_DATA", "HEADER_BUILD_ID",
	"FINISHED_ROUND", "ID_INDEX", "AUXTRACE_INFO", "AUXTRACE", "AUXTRACE_ERROR",
	"THREAD_MAP", "CPU_MAP", "STAT_CONFIG", "STAT", "STAT_ROUND", "EVENT_UPDATE",
	"TIME_CONV", "HEADER_FEATURE", "COMPRESSED", "FINISHED_INIT", "COMPRESSED2",
};

uint64_t ds_record__lost(const struct ds_event_header *hdr)
{
	size_t at = hdr->type == DS_REC_LOST ? 16 : hdr->type == DS_REC_LOST_SAMPLES ? 8 : 0;
	uint64_t n = 0;

	if (at && hdr->size >= at + sizeof(n))
		memcpy(&n, (const uint8_t *)hdr + at, sizeof(n));
	return n;
}

const char *ds_record_type__name(uint32_t type)
{
	if (type < DS_REC_KERNEL_MAX)
		return kernel_names[type];
	if (type >= DS_REC_HEADER_ATTR && type - DS_REC_HEADER_ATTR < sizeof(user_names) / sizeof(*user_names))
		return user_names[type - DS_REC_HEADER_ATTR];
	return NULL;
}
