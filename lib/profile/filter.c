// SPDX-License-Identifier: MIT
/*
 * perf's sample filters (dstack/filter.h): pid, tid and comm lists, a CPU
 * bitmap, and time ranges read exactly (no float but for percent slices,
 * which perf computes in double), as perf's perf_time__parse_for_ranges()
 * and perf_time__ranges_skip_sample() read and apply them.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "dstack/filter.h"
#include "util/error.h"

struct time_range {
	uint64_t start, end;     /* ns; 0: open */
};

struct ds_filter {
	int32_t *pids, *tids;
	size_t nr_pids, nr_tids;
	char **comms;            /* one allocation: the pointers, then the texts */
	size_t nr_comms;
	char *time_str;          /* the --time as set; percent items computed by prepare */
	struct time_range times[DS_FILTER_MAX_TIMES];
	size_t nr_times;
	bool by_cpu;
	uint64_t cpus[DS_FILTER_MAX_CPUS / 64];
};

struct ds_filter *ds_filter__new(void)
{
	struct ds_filter *f = calloc(1, sizeof(*f));

	if (!f)
		dsi_error(-ENOMEM, "filter: out of memory");
	return f;
}

void ds_filter__delete(struct ds_filter *f)
{
	if (!f)
		return;
	free(f->pids);
	free(f->tids);
	free(f->comms);
	free(f->time_str);
	free(f);
}

static int set_ids(int32_t **out, size_t *nr, const int32_t *ids, size_t n)
{
	int32_t *copy = NULL;

	if (n && !(copy = malloc(n * sizeof(*copy))))
		return dsi_error(-ENOMEM, "filter: out of memory");
	if (n)
		memcpy(copy, ids, n * sizeof(*copy));
	free(*out);
	*out = copy;
	*nr = n;
	return 0;
}

int ds_filter__set_pids(struct ds_filter *f, const int32_t *pids, size_t n)
{
	return set_ids(&f->pids, &f->nr_pids, pids, n);
}

int ds_filter__set_tids(struct ds_filter *f, const int32_t *tids, size_t n)
{
	return set_ids(&f->tids, &f->nr_tids, tids, n);
}

int ds_filter__set_comms(struct ds_filter *f, const char *const *comms, size_t n)
{
	size_t bytes = n * sizeof(char *);
	char **copy = NULL, *text;

	for (size_t i = 0; i < n; i++)
		bytes += strlen(comms[i]) + 1;
	if (n && !(copy = malloc(bytes)))
		return dsi_error(-ENOMEM, "filter: out of memory");
	text = (char *)(copy + n);
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(comms[i]) + 1;

		copy[i] = memcpy(text, comms[i], len);
		text += len;
	}
	free(f->comms);
	f->comms = copy;
	f->nr_comms = n;
	return 0;
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
static int parse_range(const char *s, size_t n, struct time_range *r)
{
	const char *comma = memchr(s, ',', n);

	if (!comma)
		return -1;
	return parse_seconds(s, (size_t)(comma - s), &r->start) ||
	       parse_seconds(comma + 1, n - (size_t)(comma - s) - 1, &r->end) || (r->end && r->start > r->end) ? -1 : 0;
}

/* "P%" as a fraction (what follows the first '%' is ignored, as perf does); -1 if not a number */
static int parse_percent(const char *s, size_t n, double *p)
{
	const char *pc = memchr(s, '%', n);
	char buf[32], *e;

	if (!pc || pc == s || (size_t)(pc - s) >= sizeof(buf))
		return -1;
	memcpy(buf, s, (size_t)(pc - s));
	buf[pc - s] = 0;
	*p = strtod(buf, &e) / 100;
	return *e ? -1 : 0;
}

/*
 * The slice from fraction @a to @b of the time between the first and the
 * last sample, as perf sets it: both in [0, 1], rounded to the nanosecond,
 * the end one before the next slice's start (but at the last sample).
 */
static int percent_slice(double a, double b, uint64_t first, uint64_t last, struct time_range *r)
{
	double total = (double)(last - first);

	if (!(a >= 0 && a <= 1 && b >= 0 && b <= 1))
		return -1;
	r->start = first + (uint64_t)llround(a * total);
	r->end = first + (uint64_t)llround(b * total);
	if (r->end > r->start && r->end != last)
		r->end--;
	return 0;
}

/* One percent item of the form @form: '/' "P%/N" (the Nth slice of P%), '-' "A%-B%". */
static int parse_percent_item(const char *s, size_t n, char form, uint64_t first, uint64_t last,
			      struct time_range *r)
{
	const char *sep = memchr(s, form, n);
	double a, b;

	if (!sep)
		return -1;
	if (form == '/') {
		char num[24], *e;
		long k;

		if (parse_percent(s, (size_t)(sep - s), &a) || a <= 0 || n - (size_t)(sep - s) - 1 >= sizeof(num))
			return -1;
		memcpy(num, sep + 1, n - (size_t)(sep - s) - 1);
		num[n - (size_t)(sep - s) - 1] = 0;
		k = strtol(num, &e, 10);
		if (*e)
			return -1;
		return percent_slice(a * (double)(k - 1), a * (double)k, first, last, r);
	}
	if (parse_percent(s, (size_t)(sep - s), &a) || parse_percent(sep + 1, n - (size_t)(sep - s) - 1, &b))
		return -1;
	return percent_slice(a, b, first, last, r);
}

/*
 * START,END ranges, split the way perf splits them: as many ranges as
 * commas; each range's END is the word after its comma (spaces after the
 * comma skipped), which may hold no comma; the next range starts after
 * the space that ends it.  Ranges come in order: each ends before the
 * next starts (compared as written, an open end being 0, as perf compares).
 */
static int parse_time_ranges(struct time_range *t, size_t *nr, const char *v)
{
	size_t commas = 0;
	const char *p = v;

	for (const char *c = v; *c; c++)
		commas += *c == ',';
	if (!commas || commas > DS_FILTER_MAX_TIMES)
		return -1;
	for (size_t i = 0; i < commas; i++) {
		const char *arg = p, *end;

		if (i + 1 < commas) {
			for (p = strchr(p, ',') + 1; isspace((unsigned char)*p); p++)
				;
			for (; *p && !isspace((unsigned char)*p); p++)
				if (*p == ',')
					return -1;
			end = p;
			p += *p != 0;
		} else {
			end = arg + strlen(arg);
		}
		while (arg < end && isspace((unsigned char)*arg))
			arg++;
		if (parse_range(arg, (size_t)(end - arg), &t[i]))
			return -1;
		*nr = i + 1;
	}
	for (size_t i = 0; i + 1 < *nr; i++)
		if (t[i].end >= t[i + 1].start)
			return -1;
	return 0;
}

/*
 * Percent items of the time from @first to @last, read as perf reads
 * them: with a '/' anywhere, every comma-separated item is "P%/N"; else
 * with a '-', every one "A%-B%"; else the whole is one "P%" (its only '%'
 * last), the first slice of P%.
 */
static int parse_time_percents(struct time_range *t, size_t *nr, const char *v, uint64_t first, uint64_t last)
{
	char form = strchr(v, '/') ? '/' : strchr(v, '-') ? '-' : 0;

	if (!form) {
		double p;

		if (strchr(v, '%') != v + strlen(v) - 1 || parse_percent(v, strlen(v), &p) || p <= 0 ||
		    percent_slice(0, p, first, last, &t[0]))
			return -1;
		*nr = 1;
		return 0;
	}
	while (*v) {
		const char *e = strchr(v, ',');
		size_t n = e ? (size_t)(e - v) : strlen(v);

		if (!n || *nr >= DS_FILTER_MAX_TIMES)
			return -1;   /* perf takes no empty item, nor doubled or trailing separators */
		if (parse_percent_item(v, n, form, first, last, &t[*nr]))
			return -1;
		(*nr)++;
		v += n + (e != NULL);
	}
	return *nr ? 0 : -1;
}

/* START,END ranges, or percent items.  @first/@last: the recording's sample times (percent only). */
static int parse_times(struct time_range *t, size_t *nr, const char *v, uint64_t first, uint64_t last)
{
	*nr = 0;
	return strchr(v, '%') ? parse_time_percents(t, nr, v, first, last) : parse_time_ranges(t, nr, v);
}

int ds_filter__set_time(struct ds_filter *f, const char *spec)
{
	struct time_range t[DS_FILTER_MAX_TIMES];
	size_t nr;
	char *copy;

	/* percent slices need the recording: checked for their syntax now, computed by prepare */
	if (parse_times(t, &nr, spec, 0, strchr(spec, '%') ? 1000000000ULL : 0))
		return dsi_error(-EINVAL, "bad time '%s' (START,END in seconds, either side empty; several ranges "
				 "separated by spaces; or percent: 10%%/2, 0%%-10%%,30%%-40%%, 10%%)", spec);
	if (!(copy = strdup(spec)))
		return dsi_error(-ENOMEM, "filter: out of memory");
	free(f->time_str);
	f->time_str = copy;
	memcpy(f->times, t, nr * sizeof(*t));
	f->nr_times = nr;
	return 0;
}

int ds_filter__set_cpus(struct ds_filter *f, const char *list)
{
	uint64_t cpus[DS_FILTER_MAX_CPUS / 64] = { 0 };
	const char *p = list;

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
		if (a > b || b >= DS_FILTER_MAX_CPUS || (*e && *e != ','))
			goto bad;
		for (unsigned long c = a; c <= b; c++)
			cpus[c / 64] |= 1ULL << (c % 64);
		p = *e ? e + 1 : e;
	}
	memcpy(f->cpus, cpus, sizeof(cpus));
	f->by_cpu = true;
	return 0;
bad:
	return dsi_error(-EINVAL, "bad CPU list '%s' (like 0-3,6; CPUs below %d)", list, DS_FILTER_MAX_CPUS);
}

bool ds_filter__active(const struct ds_filter *f)
{
	return f->nr_pids || f->nr_tids || f->nr_comms || f->time_str || f->by_cpu;
}

int ds_filter__prepare(struct ds_filter *f, const struct ds_reader *rd)
{
	const struct ds_header_info *hi = ds_reader__info(rd);

	if (f->by_cpu) {
		/* perf's rule (perf_session__cpu_bitmap): the first event of each type samples the CPU */
		bool seen[6] = { false }, all = true;   /* by type, up to PERF_TYPE_MAX: those perf asks */

		for (size_t i = 0; i < ds_reader__nr_evsels(rd); i++) {
			const struct ds_evsel *e = ds_reader__evsel(rd, i);

			if (e->attr.type >= sizeof(seen) / sizeof(*seen) || seen[e->attr.type])
				continue;
			seen[e->attr.type] = true;
			all = all && (e->attr.sample_type & DS_SAMPLE_CPU);
		}
		if (!all)
			return dsi_error(-EOPNOTSUPP, "the recording's samples do not carry their CPU");
		/* perf takes CPUs up to the recording's count (none known in a pipe) */
		for (size_t c = 0; c < DS_FILTER_MAX_CPUS; c++)
			if ((f->cpus[c / 64] >> (c % 64) & 1) && c >= hi->nr_cpus_avail)
				return dsi_error(-ERANGE, "CPU %zu is not one of the recording's %u CPUs%s", c,
						 hi->nr_cpus_avail,
						 hi->pipe ? " (a pipe-mode recording does not say how many)" : "");
	}
	if (f->time_str && strchr(f->time_str, '%')) {
		if (!hi->last_sample_time)
			return dsi_error(-ENODATA, "the recording does not say its first and last sample times "
					 "(no HEADER_SAMPLE_TIME): percent ranges need them");
		if (parse_times(f->times, &f->nr_times, f->time_str, hi->first_sample_time, hi->last_sample_time))
			return dsi_error(-EINVAL, "bad time '%s'", f->time_str);
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

/*
 * perf's perf_time__ranges_skip_sample(): one range bounds, several are a
 * union.  A sample without a time is perf's time -1, past any range's end
 * (only a time of 0 passes every filter).
 */
static bool time_wanted(const struct ds_filter *f, uint64_t t)
{
	if (!f->nr_times || !t)
		return true;
	if (f->nr_times == 1)
		return !((f->times[0].start && t < f->times[0].start) || (f->times[0].end && t > f->times[0].end));
	for (size_t i = 0; i < f->nr_times; i++)
		if (t >= f->times[i].start && (t <= f->times[i].end || !f->times[i].end))
			return true;
	return false;
}

bool ds_filter__cpu(const struct ds_filter *f, const struct ds_sample *s)
{
	return !(f->by_cpu && s->has_cpu && s->cpu != (uint32_t)-1 &&
		 (s->cpu >= DS_FILTER_MAX_CPUS || !(f->cpus[s->cpu / 64] >> (s->cpu % 64) & 1)));
}

bool ds_filter__time_cpu(const struct ds_filter *f, const struct ds_sample *s)
{
	return time_wanted(f, s->time) && ds_filter__cpu(f, s);
}

bool ds_filter__thread(const struct ds_filter *f, const struct ds_sample *s, const char *comm)
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

bool ds_filter__wanted(const struct ds_filter *f, const struct ds_sample *s, const char *comm)
{
	return ds_filter__time_cpu(f, s) && ds_filter__thread(f, s, comm);
}
