// SPDX-License-Identifier: MIT
/*
 * dstack recorder: perf_event_open, ring buffers, the poll/drain loop.
 * See include/dstack/recorder.h for the contract.
 *
 * Layout: one ring buffer per CPU.  Every event opened on that CPU (for
 * every target task, or pid -1 system wide) sends its output there with
 * PERF_EVENT_IOC_SET_OUTPUT, so the records of one CPU stay in time order
 * (a deferred record and the samples sharing its cookie are in one buffer).
 * Per-task events with inherit cannot be mmapped with cpu == -1, hence the
 * (task, cpu) pairs, as perf does.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <linux/perf_event.h>

#include "dstack/recorder.h"
#include "dstack/tracepoint.h"
#include "util/error.h"
#include "util/grow.h"
#include "util/hashmap.h"

#define ATTR_SIZE DS_ATTR_SIZE_VER0   /* the fields set lie in the first 64 bytes... */
#define ATTR_SIZE_REGS 104            /* ...but sample_regs_user and sample_stack_user (VER3) */
/* perf's default register set on x86_64: AX..IP, FLAGS, CS, SS, R8..R15 (not DS..GS) */
#define X86_64_REGS_MASK 0xff0fffULL
/*
 * What every event records, as perf does: IDENTIFIER (several events share
 * the file), TID, TIME; CPU only system-wide (-a); PERIOD only when the
 * kernel varies it (-F).  Samples add IP and CALLCHAIN.  Each u64 costs 8
 * bytes per record, so nothing else.
 */
#define BASE_SAMPLE_TYPE (DS_SAMPLE_IDENTIFIER | DS_SAMPLE_IP | DS_SAMPLE_TID | DS_SAMPLE_TIME)

enum ev_role { ROLE_SAMPLE, ROLE_TRACK, ROLE_DEFER_SINK };

struct rec_event {
	struct ds_attr attr;
	enum ev_role role;
	char name[32];
	bool system_wide;       /* pid -1 on each CPU, even for task targets */
	uint64_t *ids;
	size_t nr_ids;
	int *fds;               /* nr_cpus * nr_tids (or nr_cpus if system wide) */
	size_t nr_fds;
};

struct ring {
	int fd;
	void *base;             /* the control page, then data */
	size_t data_size;
};

struct ds_recorder {
	struct ds_recorder_opts opts;
	struct rec_event *ev;
	size_t nr_ev;
	int *cpus;
	uint64_t cpu_wanted[4096 / 64]; /* -C's CPUs */
	size_t nr_cpus;
	pid_t *tids;            /* target tasks; empty for ALL_CPUS */
	size_t nr_tids;
	struct ring *rings;     /* one per CPU */
	pid_t child;
	int go_fd, err_fd;      /* command handshake */
	volatile sig_atomic_t stop;
	bool deferred;
	char fallback[512];   /* lines: what the recording falls short of */
	struct ds_recorder_stats st;
	uint64_t sample_type;   /* BASE_SAMPLE_TYPE (+ CPU) common to every event */
	size_t trailer_bytes;   /* sample_id_all: TID TIME [CPU] IDENTIFIER */
	struct dsi_hashmap cookies;     /* hash(tid, cookie) -> 1 seen in a sample, 2 record seen */
	struct dsi_hashmap known_tids;  /* system-wide defer sink: target tids (FORK, samples) */
	uint32_t last_sample_tid;      /* the last tid set in known_tids by a sample */
	uint8_t *bounce;               /* for records that wrap around the ring end */
	uint8_t *held;                 /* defer records of not yet known tids, within one pass */
	size_t held_len, held_cap;
};

static void set_err(char **errmsg, const char *fmt, ...)
{
	va_list ap;
	if (!errmsg)
		return;
	va_start(ap, fmt);
	if (vasprintf(errmsg, fmt, ap) < 0)
		*errmsg = NULL;
	va_end(ap);
}

static int sys_perf_event_open(struct ds_attr *a, pid_t pid, int cpu, int group, unsigned long fl)
{
	return (int)syscall(SYS_perf_event_open, a, pid, cpu, group, fl | PERF_FLAG_FD_CLOEXEC);
}

/* ---- event names ---- */

struct ev_name { const char *name; uint32_t type; uint64_t config; };
static const struct ev_name ev_names[] = {
	{ "cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES },
	{ "cpu-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES },
	{ "instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS },
	{ "cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES },
	{ "branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES },
	{ "cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK },
	{ "task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK },
	{ "page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS },
	{ "faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS },
	{ "context-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES },
	{ "cs", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES },
	{ "cpu-migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS },
	{ "minor-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN },
	{ "major-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ },
};

static const struct ev_name *lookup_event(const char *name)
{
	for (size_t i = 0; i < sizeof(ev_names) / sizeof(ev_names[0]); i++)
		if (!strcmp(ev_names[i].name, name))
			return &ev_names[i];
	return NULL;
}

/* ---- targets ---- */

/*
 * The CPUs of a list such as "0-3,6" (sysfs's online file, perf's -C),
 * each passed to @add.  0, or -EINVAL for a list that is not one.
 */
static int for_each_listed_cpu(const char *list, void (*add)(struct ds_recorder *r, int cpu), struct ds_recorder *r)
{
	const char *p = list;
	bool any = false;

	while (*p && *p != '\n') {
		char *end;
		long a = strtol(p, &end, 10), b = a;

		if (end == p || a < 0 || a >= 4096)
			return -EINVAL;
		if (*end == '-') {
			const char *q = end + 1;

			b = strtol(q, &end, 10);
			if (end == q || b < a || b >= 4096)
				return -EINVAL;
		}
		for (long c = a; c <= b; c++)
			add(r, (int)c);
		any = true;
		if (*end == ',')
			end++;
		else if (*end && *end != '\n')
			return -EINVAL;
		p = end;
	}
	return any ? 0 : -EINVAL;
}

static void add_online_cpu(struct ds_recorder *r, int cpu)
{
	if (r->nr_cpus < 4096)
		r->cpus[r->nr_cpus++] = cpu;
}

/* -C: keep the online CPUs the list names (marked in r->cpu_wanted). */
static void mark_wanted_cpu(struct ds_recorder *r, int cpu)
{
	r->cpu_wanted[cpu / 64] |= 1ull << (cpu % 64);
}

static int keep_listed_cpus(struct ds_recorder *r, char **errmsg)
{
	size_t n = 0;

	if (for_each_listed_cpu(r->opts.cpu_list, mark_wanted_cpu, r)) {
		set_err(errmsg, "-C %s: not a list of CPUs (such as 0-3,6)", r->opts.cpu_list);
		return -EINVAL;
	}
	for (size_t i = 0; i < r->nr_cpus; i++)
		if (r->cpu_wanted[r->cpus[i] / 64] & (1ull << (r->cpus[i] % 64)))
			r->cpus[n++] = r->cpus[i];
	if (!n) {
		set_err(errmsg, "-C %s: none of these CPUs is online", r->opts.cpu_list);
		return -EINVAL;
	}
	r->nr_cpus = n;
	return 0;
}

static int read_online_cpus(struct ds_recorder *r, char **errmsg)
{
	char buf[4096];
	FILE *f = fopen("/sys/devices/system/cpu/online", "r");
	bool read = f && fgets(buf, sizeof(buf), f);

	if (f)
		fclose(f);
	r->cpus = calloc(4096, sizeof(int));
	if (!r->cpus)
		return -ENOMEM;
	if (!read || for_each_listed_cpu(buf, add_online_cpu, r)) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);

		r->nr_cpus = 0;
		for (long i = 0; i < (n > 0 ? n : 1) && i < 4096; i++)
			add_online_cpu(r, (int)i);
	}
	return r->opts.cpu_list ? keep_listed_cpus(r, errmsg) : 0;
}

static int add_tid(struct ds_recorder *r, pid_t tid)
{
	pid_t *n = realloc(r->tids, (r->nr_tids + 1) * sizeof(*n));
	if (!n)
		return -ENOMEM;
	r->tids = n;
	r->tids[r->nr_tids++] = tid;
	return dsi_hashmap__set(&r->known_tids, (uint64_t)tid, 1);
}

static int read_threads(struct ds_recorder *r, pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	if (!d)
		return -errno;
	struct dirent *de;
	int err = 0;
	while (!err && (de = readdir(d)))
		if (de->d_name[0] >= '0' && de->d_name[0] <= '9')
			err = add_tid(r, (pid_t)atoi(de->d_name));
	closedir(d);
	return err;
}

/* ---- opening ---- */

static bool per_task(const struct ds_recorder *r, const struct rec_event *e)
{
	return r->opts.target != DS_TARGET_ALL_CPUS && !e->system_wide;
}

static void init_attr(struct ds_recorder *r, struct rec_event *e, uint32_t type, uint64_t config)
{
	struct ds_attr *a = &e->attr;
	memset(a, 0, sizeof(*a));
	a->type = type;
	a->config = config;
	a->size = ATTR_SIZE;
	a->sample_type = r->sample_type;
	a->flags = 1ULL << DS_ATTR_DISABLED | 1ULL << DS_ATTR_SAMPLE_ID_ALL;
	if (r->opts.target != DS_TARGET_ALL_CPUS && !e->system_wide && !r->opts.no_inherit)
		a->flags |= 1ULL << DS_ATTR_INHERIT;
	if (r->opts.target == DS_TARGET_CMD && !e->system_wide)
		a->flags |= 1ULL << DS_ATTR_ENABLE_ON_EXEC;
	if (e->role == ROLE_SAMPLE) {
		if (r->opts.period) {
			a->sample_period = r->opts.period;
		} else {
			a->sample_period = r->opts.freq ? r->opts.freq : 4000;
			a->flags |= 1ULL << DS_ATTR_FREQ;
			a->sample_type |= DS_SAMPLE_PERIOD;
		}
		if (r->opts.callchain)
			a->sample_type |= DS_SAMPLE_CALLCHAIN;
		if (r->opts.callchain && r->deferred)
			a->flags |= 1ULL << DS_ATTR_DEFER_CALLCHAIN;
		if (r->opts.stack_user) {
			a->size = ATTR_SIZE_REGS;
			a->sample_type |= DS_SAMPLE_REGS_USER | DS_SAMPLE_STACK_USER;
			a->sample_regs_user = r->opts.regs_user ? r->opts.regs_user : X86_64_REGS_MASK;
			a->sample_stack_user = r->opts.stack_user;
			if (r->opts.dwarf)
				a->flags |= 1ULL << DS_ATTR_EXCLUDE_CALLCHAIN_USER;
		}
	} else {
		a->type = PERF_TYPE_SOFTWARE;
		a->config = PERF_COUNT_SW_DUMMY;
		a->sample_period = 1;
	}
	if (e->role == ROLE_TRACK) {
		a->flags |= 1ULL << DS_ATTR_MMAP | 1ULL << DS_ATTR_MMAP2 | 1ULL << DS_ATTR_COMM |
			    1ULL << DS_ATTR_COMM_EXEC | 1ULL << DS_ATTR_TASK | 1ULL << DS_ATTR_BUILD_ID;
		if (r->opts.target == DS_TARGET_ALL_CPUS)
			a->flags |= 1ULL << DS_ATTR_KSYMBOL;
	}
}

/* Opens one event on every (task, cpu); returns 0 or -errno of the first failure. */
static int open_event(struct ds_recorder *r, struct rec_event *e)
{
	size_t per_cpu = per_task(r, e) ? r->nr_tids : 1;
	e->nr_fds = r->nr_cpus * per_cpu;
	e->fds = malloc(e->nr_fds * sizeof(int));
	e->ids = calloc(e->nr_fds, sizeof(uint64_t));
	if (!e->fds || !e->ids)
		return -ENOMEM;
	for (size_t i = 0; i < e->nr_fds; i++)
		e->fds[i] = -1;
	for (size_t c = 0; c < r->nr_cpus; c++) {
		for (size_t t = 0; t < per_cpu; t++) {
			pid_t pid = per_task(r, e) ? r->tids[t] : -1;
			int fd = sys_perf_event_open(&e->attr, pid, r->cpus[c], -1, 0);
			if (fd < 0) {
				/* a thread of -p that exited meanwhile */
				if (errno == ESRCH && r->opts.target == DS_TARGET_PID && r->nr_tids > 1)
					continue;
				return -errno;
			}
			e->fds[c * per_cpu + t] = fd;
			uint64_t id = 0;
			if (ioctl(fd, PERF_EVENT_IOC_ID, &id) < 0)
				return -errno;
			e->ids[e->nr_ids++] = id;
		}
	}
	return 0;
}

static void close_event(struct rec_event *e)
{
	for (size_t i = 0; e->fds && i < e->nr_fds; i++)
		if (e->fds[i] >= 0)
			close(e->fds[i]);
	free(e->fds);
	free(e->ids);
	e->fds = NULL;
	e->ids = NULL;
	e->nr_fds = e->nr_ids = 0;
}

static int paranoid_level(void)
{
	int v = 2;
	FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "r");
	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = 2;
		fclose(f);
	}
	return v;
}

static void open_error(struct ds_recorder *r, struct rec_event *e, int err, char **errmsg)
{
	if (err == -EACCES || err == -EPERM) {
		int p = paranoid_level();
		set_err(errmsg, "no permission to open event %s (perf_event_paranoid is %d): %s; "
			"run as root, give the binary CAP_PERFMON, or lower the setting: "
			"sysctl kernel.perf_event_paranoid=%d",
			e->name, p, r->opts.target == DS_TARGET_ALL_CPUS ?
			"system-wide profiling needs perf_event_paranoid <= 0" :
			"profiling other users' tasks or the kernel needs a lower setting",
			r->opts.target == DS_TARGET_ALL_CPUS ? 0 : 1);
	} else if (err == -ESRCH) {
		set_err(errmsg, "no such process: %d", (int)r->opts.pid);
	} else if (err == -ENOENT || err == -EOPNOTSUPP || err == -ENODEV) {
		set_err(errmsg, "event %s is not supported by this machine (%s)", e->name, strerror(-err));
	} else if (err == -EMFILE) {
		set_err(errmsg, "too many open files opening %s: raise `ulimit -n`", e->name);
	} else {
		set_err(errmsg, "cannot open event %s: %s", e->name, strerror(-err));
	}
}

/* Does the kernel take defer_callchain/defer_output? (Linux 6.19+) */
static bool probe_defer(struct ds_recorder *r)
{
	struct ds_attr a = { .type = PERF_TYPE_SOFTWARE, .config = PERF_COUNT_SW_DUMMY,
			     .size = ATTR_SIZE, .sample_period = 1,
			     .sample_type = BASE_SAMPLE_TYPE | DS_SAMPLE_CALLCHAIN };
	a.flags = 1ULL << DS_ATTR_DISABLED | 1ULL << DS_ATTR_DEFER_CALLCHAIN |
		  1ULL << DS_ATTR_DEFER_OUTPUT | 1ULL << DS_ATTR_EXCLUDE_KERNEL;
	int fd = sys_perf_event_open(&a, 0, -1, -1, 0);
	if (fd >= 0) {
		close(fd);
		return true;
	}
	struct utsname u;
	if (uname(&u) < 0)
		strcpy(u.release, "?");
	if (errno == EINVAL || errno == E2BIG)
		snprintf(r->fallback, sizeof(r->fallback),
			 "dstack record: this kernel (%s) does not support deferred callchains "
			 "(needs Linux 6.19+); recording classic frame-pointer callchains", u.release);
	else
		snprintf(r->fallback, sizeof(r->fallback),
			 "dstack record: cannot probe deferred callchains (%s); "
			 "recording classic frame-pointer callchains", strerror(errno));
	return false;
}

/* One more line of what the recording falls short of (ds_recorder__fallback). */
__attribute__((format(printf, 2, 3)))
static void append_note(struct ds_recorder *r, const char *fmt, ...)
{
	size_t used = strlen(r->fallback);
	va_list ap;

	if (used && used + 1 < sizeof(r->fallback))
		r->fallback[used++] = '\n';
	if (used + 1 >= sizeof(r->fallback))
		return;
	r->fallback[used] = 0;
	va_start(ap, fmt);
	vsnprintf(r->fallback + used, sizeof(r->fallback) - used, fmt, ap);
	va_end(ap);
}

static int add_event(struct ds_recorder *r, enum ev_role role, const char *name, bool system_wide)
{
	struct rec_event *n = realloc(r->ev, (r->nr_ev + 1) * sizeof(*n));
	if (!n)
		return -ENOMEM;
	r->ev = n;
	struct rec_event *e = &r->ev[r->nr_ev++];
	memset(e, 0, sizeof(*e));
	e->role = role;
	e->system_wide = system_wide;
	snprintf(e->name, sizeof(e->name), "%s", name);
	return 0;
}

/*
 * A sampling event for each name of --event (cycles by default; without a
 * PMU, as in VMs, the default falls back to cpu-clock as perf's does).
 * 0 or a negative errno, *errmsg saying why.
 */
static int open_sampling_events(struct ds_recorder *r, char **errmsg)
{
	static const char *const dflt[] = { "cycles" };
	const char *const *names = r->opts.nr_events ? r->opts.events : dflt;
	size_t nr = r->opts.nr_events ? r->opts.nr_events : 1;
	int err;

	for (size_t i = 0; i < nr; i++) {
		const struct ev_name *en = lookup_event(names[i]);
		struct rec_event *e;

		if (!en) {
			set_err(errmsg, "unknown event '%s' (known: cycles, instructions, cache-misses, "
				"branch-misses, cpu-clock, task-clock, page-faults, context-switches, "
				"cpu-migrations)", names[i]);
			return -EINVAL;
		}
		if ((err = add_event(r, ROLE_SAMPLE, en->name, false)))
			return err;
		e = &r->ev[r->nr_ev - 1];
		init_attr(r, e, en->type, en->config);
		err = open_event(r, e);
		if (err && !r->opts.nr_events && (err == -ENOENT || err == -EOPNOTSUPP || err == -ENODEV)) {
			close_event(e);
			snprintf(e->name, sizeof(e->name), "cpu-clock");
			init_attr(r, e, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK);
			err = open_event(r, e);
		}
		if (err) {
			open_error(r, e, err, errmsg);
			return err;
		}
	}
	return 0;
}

/*
 * --off-cpu: sched:sched_switch, sampling every switch with the first
 * event's sample fields (PERIOD included, so that records parse alike)
 * plus the tracepoint's raw fields.  0 or a negative errno, *errmsg saying why.
 */
static int open_off_cpu_event(struct ds_recorder *r, char **errmsg)
{
	struct rec_event *e;
	uint64_t id = 0;
	int err;

	if ((err = ds_tracefs__event_id("sched", "sched_switch", &id))) {
		set_err(errmsg, "--off-cpu: cannot read the id of sched:sched_switch from tracefs "
			"(/sys/kernel/tracing/events/sched/sched_switch/id): %s", strerror(-err));
		return err;
	}
	if ((err = add_event(r, ROLE_SAMPLE, "sched:sched_switch", false)))
		return err;
	e = &r->ev[r->nr_ev - 1];
	init_attr(r, e, DS_PERF_TYPE_TRACEPOINT, id);
	e->attr.sample_period = 1;
	e->attr.flags &= ~(1ULL << DS_ATTR_FREQ);
	e->attr.sample_type = r->ev[0].attr.sample_type | DS_SAMPLE_RAW;
	if ((err = open_event(r, e))) {
		open_error(r, e, err, errmsg);
		return err;
	}
	return 0;
}

/*
 * The system-wide sink of deferred records: a task that exits in the
 * kernel gets its record after its own events are gone, and only a
 * system-wide event still receives it.  1 when it opened; 0 when it did
 * not (it is removed again: the tracking event takes the records); a
 * negative errno when it could not be added.  r->ev may move.
 */
static int open_defer_sink(struct ds_recorder *r)
{
	struct rec_event *s;
	int err = add_event(r, ROLE_DEFER_SINK, "dummy:u", true);

	if (err)
		return err;
	s = &r->ev[r->nr_ev - 1];
	init_attr(r, s, 0, 0);
	/* only side-band events (mmap, comm, task, ksymbol, ...) are on the
	 * CPU-wide list the kernel walks for records; ksymbol is the rarest */
	s->attr.flags |= 1ULL << DS_ATTR_DEFER_OUTPUT | 1ULL << DS_ATTR_KSYMBOL;
	for (int try = 0; try < 3; try++) {
		err = open_event(r, s);
		if (!err)
			return 1;
		close_event(s);
		if (err != -EINTR && err != -EAGAIN && err != -EBUSY && err != -ENOMEM)
			break;
		usleep(10000);   /* a transient failure: try again */
	}
	r->nr_ev--;
	/* without the permission it is expected (the tracking event takes the
	 * records, as in perf record); anything else is said */
	if (err != -EACCES && err != -EPERM)
		append_note(r, "dstack record: cannot open the system-wide receiver of deferred "
			    "records (%s): the user stacks of tasks that exit inside the kernel "
			    "may be lost", strerror(-err));
	return 0;
}

/*
 * The tracking event (mmap, comm, task; per target), after the sampling
 * ones; defer_output goes on exactly one event, the system-wide sink when
 * one opens.  0 or a negative errno, *errmsg saying why.
 */
static int open_tracking_events(struct ds_recorder *r, char **errmsg)
{
	size_t track = r->nr_ev;
	bool sink_on_track = r->deferred;
	struct rec_event *t;
	int err;

	if ((err = add_event(r, ROLE_TRACK, "dummy:u", false)))
		return err;
	init_attr(r, &r->ev[track], 0, 0);
	if (r->deferred && r->opts.target != DS_TARGET_ALL_CPUS) {
		int opened = open_defer_sink(r);

		if (opened < 0)
			return opened;
		if (opened)
			sink_on_track = false;
	}
	t = &r->ev[track];
	if (sink_on_track)
		t->attr.flags |= 1ULL << DS_ATTR_DEFER_OUTPUT;
	if (r->opts.off_cpu)
		t->attr.flags |= 1ULL << DS_ATTR_CONTEXT_SWITCH;   /* the switches back in */
	err = open_event(r, t);
	if (err) {
		open_error(r, t, err, errmsg);
		return err;
	}
	return 0;
}

/* The events to open, in the order the file lists them: sampling, off-cpu, tracking (and sink). */
static int setup_events(struct ds_recorder *r, char **errmsg)
{
	int err;

	if ((err = open_sampling_events(r, errmsg)))
		return err;
	if (r->opts.off_cpu && (err = open_off_cpu_event(r, errmsg)))
		return err;
	return open_tracking_events(r, errmsg);
}

/* ---- ring buffers ---- */

static int map_rings(struct ds_recorder *r, char **errmsg)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	unsigned pages = r->opts.mmap_pages ? r->opts.mmap_pages : 128;
	if (pages & (pages - 1)) {
		set_err(errmsg, "-m %u: the number of pages must be a power of two", pages);
		return -EINVAL;
	}
	r->rings = calloc(r->nr_cpus, sizeof(*r->rings));
	r->bounce = malloc(65536);
	if (!r->rings || !r->bounce)
		return -ENOMEM;
	for (size_t c = 0; c < r->nr_cpus; c++) {
		struct ring *rg = &r->rings[c];
		rg->fd = -1;
		/* a system-wide event owns the buffer when there is one: a per-task
		 * owner reports POLLHUP forever once its task exits */
		for (size_t k = 0; k < r->nr_ev; k++) {
			size_t i = (k + r->nr_ev - 1) % r->nr_ev;   /* the system-wide sink is last */
			struct rec_event *e = &r->ev[i];
			size_t per_cpu = e->nr_fds / r->nr_cpus;
			for (size_t t = 0; t < per_cpu; t++) {
				int fd = e->fds[c * per_cpu + t];
				if (fd < 0)
					continue;
				if (rg->fd < 0) {
					rg->data_size = pages * page;
					rg->base = mmap(NULL, page + rg->data_size, PROT_READ | PROT_WRITE,
							MAP_SHARED, fd, 0);
					if (rg->base == MAP_FAILED) {
						int err = -errno;
						rg->base = NULL;
						set_err(errmsg, "cannot map the ring buffer of CPU %d (%u pages): %s%s",
							r->cpus[c], pages, strerror(-err), err == -EPERM ?
							" (raise kernel.perf_event_mlock_kb or use a smaller -m)" : "");
						return err;
					}
					rg->fd = fd;
				} else if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, rg->fd) < 0) {
					int err = -errno;
					set_err(errmsg, "cannot redirect an event to the buffer of CPU %d: %s",
						r->cpus[c], strerror(-err));
					return err;
				}
			}
		}
	}
	return 0;
}

/* ---- the command ---- */

static int fork_command(struct ds_recorder *r, char **errmsg)
{
	int go[2], ep[2];
	if (pipe2(go, O_CLOEXEC) < 0 || pipe2(ep, O_CLOEXEC) < 0) {
		set_err(errmsg, "pipe: %s", strerror(errno));
		return -errno;
	}
	pid_t pid = fork();
	if (pid < 0) {
		set_err(errmsg, "fork: %s", strerror(errno));
		return -errno;
	}
	if (pid == 0) {
		char c;
		close(go[1]);
		close(ep[0]);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		/* stop before exec until the events are open on us */
		if (read(go[0], &c, 1) != 1)
			_exit(126);
		if (r->opts.command_stdout_to_stderr && dup2(2, 1) < 0)
			_exit(126);
		execvp(r->opts.argv[0], r->opts.argv);
		int e = errno;
		if (write(ep[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(go[0]);
	close(ep[1]);
	r->child = pid;
	r->go_fd = go[1];
	r->err_fd = ep[0];
	return 0;
}

/* Lets the child exec; false if exec failed (errno in stats). */
static bool release_command(struct ds_recorder *r)
{
	int e;
	if (r->go_fd < 0)
		return true;
	if (write(r->go_fd, "g", 1) != 1) { /* the child is gone */ }
	close(r->go_fd);
	r->go_fd = -1;
	ssize_t n = read(r->err_fd, &e, sizeof(e));
	close(r->err_fd);
	r->err_fd = -1;
	if (n == (ssize_t)sizeof(e)) {
		r->st.exec_failed = true;
		r->st.exec_errno = e;
		return false;
	}
	return true;
}

/* ---- construction ---- */

/*
 * The tasks to record: the command (forked now, stopped before its exec;
 * also with -a), the threads of -p PID, or the thread -t TID.  0 or a
 * negative errno, *errmsg saying why where a reason is known.
 */
static int add_targets(struct ds_recorder *r, char **errmsg)
{
	const struct ds_recorder_opts *opts = &r->opts;
	char p[64];
	int err;

	if (opts->target == DS_TARGET_CMD && (!opts->argv || !opts->argv[0])) {
		set_err(errmsg, "no command to record (give one after --, or -a, -p or -t)");
		return -EINVAL;
	}
	if (opts->argv && opts->argv[0] &&
	    (opts->target == DS_TARGET_CMD || opts->target == DS_TARGET_ALL_CPUS)) {
		if ((err = fork_command(r, errmsg)))
			return err;
	}
	switch (opts->target) {
	case DS_TARGET_CMD:
		return add_tid(r, r->child);
	case DS_TARGET_PID:
		if ((err = read_threads(r, opts->pid)))
			set_err(errmsg, "no such process: %d", (int)opts->pid);
		return err;
	case DS_TARGET_TID:
		snprintf(p, sizeof(p), "/proc/%d", (int)opts->pid);
		if (access(p, F_OK) < 0) {
			set_err(errmsg, "no such thread: %d", (int)opts->pid);
			return -ESRCH;
		}
		return add_tid(r, opts->pid);
	default:
		return 0;
	}
}

/* The recorder's opening; *@errmsg (malloc'd) says why it failed. */
static struct ds_recorder *recorder_new(const struct ds_recorder_opts *opts, char **errmsg)
{
	struct ds_recorder *r = calloc(1, sizeof(*r));
	int err;

	*errmsg = NULL;
	if (!r) {
		errno = ENOMEM;
		return NULL;
	}
	r->opts = *opts;
	r->child = -1;
	r->go_fd = r->err_fd = -1;
	r->st.child_status = -1;
	if ((err = read_online_cpus(r, errmsg)) || (err = add_targets(r, errmsg)))
		goto fail;
	r->deferred = opts->callchain && opts->defer && probe_defer(r);
	r->sample_type = BASE_SAMPLE_TYPE;
	if (opts->target == DS_TARGET_ALL_CPUS)
		r->sample_type |= DS_SAMPLE_CPU;
	r->trailer_bytes = 8 * (3 + !!(r->sample_type & DS_SAMPLE_CPU));
	if ((err = setup_events(r, errmsg)) || (err = map_rings(r, errmsg)))
		goto fail;
	return r;
fail:
	ds_recorder__free(r);
	errno = -err;
	return NULL;
}

struct ds_recorder *ds_recorder__new(const struct ds_recorder_opts *opts)
{
	char *msg = NULL;
	struct ds_recorder *r = recorder_new(opts, &msg);
	int e = errno;

	if (!r) {
		dsi_error_keep(-e, msg);
		free(msg);
		errno = e;
	}
	return r;
}

void ds_recorder__free(struct ds_recorder *r)
{
	if (!r)
		return;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	if (r->child > 0 && r->st.child_status == -1) {
		/* never released or still running: do not leave it behind */
		if (r->go_fd >= 0)
			close(r->go_fd);
		kill(r->child, SIGTERM);
		waitpid(r->child, NULL, 0);
	}
	if (r->err_fd >= 0)
		close(r->err_fd);
	for (size_t c = 0; r->rings && c < r->nr_cpus; c++)
		if (r->rings[c].base)
			munmap(r->rings[c].base, page + r->rings[c].data_size);
	for (size_t i = 0; i < r->nr_ev; i++)
		close_event(&r->ev[i]);
	free(r->ev);
	free(r->rings);
	free(r->cpus);
	free(r->tids);
	free(r->bounce);
	free(r->held);
	dsi_hashmap__exit(&r->cookies);
	dsi_hashmap__exit(&r->known_tids);
	free(r);
}

size_t ds_recorder__nr_attrs(const struct ds_recorder *r) { return r->nr_ev; }

void ds_recorder__attr(const struct ds_recorder *r, size_t i, const struct ds_attr **attr,
		       uint32_t *attr_size, const uint64_t **ids, size_t *nr_ids, const char **name)
{
	*attr = &r->ev[i].attr;
	*attr_size = r->ev[i].attr.size;   /* ATTR_SIZE, or ATTR_SIZE_REGS with a stack copy */
	*ids = r->ev[i].ids;
	*nr_ids = r->ev[i].nr_ids;
	*name = r->ev[i].name;
}

const char *ds_recorder__fallback(const struct ds_recorder *r) { return r->fallback[0] ? r->fallback : NULL; }
bool ds_recorder__deferred(const struct ds_recorder *r) { return r->deferred; }
const struct ds_recorder_stats *ds_recorder__stats(const struct ds_recorder *r) { return &r->st; }
void ds_recorder__stop(struct ds_recorder *r) { r->stop = 1; }

/* ---- synthesized records (existing state, like perf) ---- */

static uint64_t track_id(const struct ds_recorder *r)
{
	for (size_t i = 0; i < r->nr_ev; i++)
		if (r->ev[i].role == ROLE_TRACK && r->ev[i].nr_ids)
			return r->ev[i].ids[0];
	return 0;
}

/* Appends the sample_id_all trailer (TID TIME [CPU] IDENTIFIER) at buf+off. */
static size_t put_trailer(const struct ds_recorder *r, uint8_t *buf, size_t off, uint32_t pid, uint32_t tid)
{
	uint64_t id = track_id(r);
	uint32_t pt[2] = { pid, tid };
	memcpy(buf + off, pt, 8);
	memset(buf + off + 8, 0, r->trailer_bytes - 16);   /* time, cpu */
	memcpy(buf + off + r->trailer_bytes - 8, &id, 8);
	return off + r->trailer_bytes;
}

static int synth_comm(struct ds_recorder *r, ds_record_sink sink, void *ctx, pid_t pid, pid_t tid)
{
	char path[64], comm[32] = "";
	_Alignas(8) uint8_t buf[128];
	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)pid, (int)tid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;   /* exited meanwhile */
	if (!fgets(comm, 16, f))
		comm[0] = 0;
	fclose(f);
	comm[strcspn(comm, "\n")] = 0;
	size_t len = (strlen(comm) + 1 + 7) & ~(size_t)7;
	memset(buf, 0, sizeof(buf));
	struct ds_event_header h = { DS_REC_COMM, 0, 0 };
	uint32_t pt[2] = { (uint32_t)pid, (uint32_t)tid };
	memcpy(buf + 8, pt, 8);
	memcpy(buf + 16, comm, strlen(comm));
	size_t off = put_trailer(r, buf, 16 + len, (uint32_t)pid, (uint32_t)tid);
	h.size = (uint16_t)off;
	memcpy(buf, &h, sizeof(h));
	return sink(ctx, buf, off);
}

static int synth_maps(struct ds_recorder *r, ds_record_sink sink, void *ctx, pid_t pid)
{
	char path[64], line[4352];
	_Alignas(8) uint8_t buf[4608];
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	int err = 0;
	while (!err && fgets(line, sizeof(line), f)) {
		unsigned long long start, end, pgoff, ino;
		unsigned maj, min;
		char prot[8], name[4096] = "";
		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %4095[^\n]", &start, &end, prot,
			   &pgoff, &maj, &min, &ino, name) < 7)
			continue;
		if (prot[2] != 'x')
			continue;   /* perf synthesizes executable maps only (no -d) */
		char *n = name;
		while (*n == ' ')
			n++;
		if (!*n)
			n = "//anon";
		size_t nl = (strlen(n) + 1 + 7) & ~(size_t)7;
		memset(buf, 0, 80 + nl + r->trailer_bytes);
		uint32_t pt[2] = { (uint32_t)pid, (uint32_t)pid };
		uint64_t a[3] = { start, end - start, pgoff };
		uint32_t mm[2] = { maj, min };
		uint64_t i64[2] = { ino, 0 };
		uint32_t pf[2] = { (uint32_t)((prot[0] == 'r' ? PROT_READ : 0) | (prot[1] == 'w' ? PROT_WRITE : 0) | PROT_EXEC),
				   prot[3] == 's' ? MAP_SHARED : MAP_PRIVATE };
		memcpy(buf + 8, pt, 8);
		memcpy(buf + 16, a, 24);
		memcpy(buf + 40, mm, 8);
		memcpy(buf + 48, i64, 16);
		memcpy(buf + 64, pf, 8);
		memcpy(buf + 72, n, strlen(n));
		size_t off = put_trailer(r, buf, 72 + nl, (uint32_t)pid, (uint32_t)pid);
		struct ds_event_header h = { DS_REC_MMAP2, DS_MISC_USER, (uint16_t)off };
		memcpy(buf, &h, sizeof(h));
		err = sink(ctx, buf, off);
	}
	fclose(f);
	return err;
}

static int synth_kernel(struct ds_recorder *r, ds_record_sink sink, void *ctx)
{
	FILE *f = fopen("/proc/kallsyms", "r");
	unsigned long long text = 0, addr;
	char type, sym[256];
	if (!f)
		return 0;
	while (fscanf(f, "%llx %c %255s%*[^\n]", &addr, &type, sym) == 3)
		if (!strcmp(sym, "_text")) {
			text = addr;
			break;
		}
	fclose(f);
	if (!text)
		return 0;  /* kptr_restrict hides addresses: no kernel map to offer */
	_Alignas(8) uint8_t buf[128] = { 0 };
	const char *name = "[kernel.kallsyms]_text";
	size_t nl = (strlen(name) + 1 + 7) & ~(size_t)7;
	uint32_t pt[2] = { (uint32_t)-1, 0 };
	uint64_t a[3] = { text, ~0ULL - text, text };
	memcpy(buf + 8, pt, 8);
	memcpy(buf + 16, a, 24);
	memcpy(buf + 40, name, strlen(name));
	size_t off = put_trailer(r, buf, 40 + nl, (uint32_t)-1, 0);
	struct ds_event_header h = { DS_REC_MMAP, DS_MISC_KERNEL, (uint16_t)off };
	memcpy(buf, &h, sizeof(h));
	return sink(ctx, buf, off);
}

static int synth_process(struct ds_recorder *r, ds_record_sink sink, void *ctx, pid_t pid, pid_t only_tid)
{
	char path[64];
	int err = 0;
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	if (!d)
		return 0;
	struct dirent *de;
	while (!err && (de = readdir(d))) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		pid_t tid = (pid_t)atoi(de->d_name);
		if (!only_tid || tid == only_tid)
			err = synth_comm(r, sink, ctx, pid, tid);
	}
	closedir(d);
	return err ? err : synth_maps(r, sink, ctx, pid);
}

int ds_recorder__synthesize(struct ds_recorder *r, ds_record_sink sink, void *ctx)
{
	int err = synth_kernel(r, sink, ctx);
	if (err)
		return err;
	switch (r->opts.target) {
	case DS_TARGET_CMD:
		return 0;   /* the exec brings COMM and MMAP2 records of its own */
	case DS_TARGET_PID:
		return synth_process(r, sink, ctx, r->opts.pid, 0);
	case DS_TARGET_TID: {
		char p[64], buf[256];
		pid_t tgid = r->opts.pid;
		snprintf(p, sizeof(p), "/proc/%d/status", (int)r->opts.pid);
		FILE *f = fopen(p, "r");
		while (f && fgets(buf, sizeof(buf), f))
			if (!strncmp(buf, "Tgid:", 5))
				tgid = (pid_t)atoi(buf + 5);
		if (f)
			fclose(f);
		return synth_process(r, sink, ctx, tgid, r->opts.pid);
	}
	case DS_TARGET_ALL_CPUS: {
		DIR *d = opendir("/proc");
		struct dirent *de;
		if (!d)
			return -errno;
		while (!err && (de = readdir(d)))
			if (de->d_name[0] >= '0' && de->d_name[0] <= '9')
				err = synth_process(r, sink, ctx, (pid_t)atoi(de->d_name), 0);
		closedir(d);
		return err;
	}
	}
	return 0;
}

/* ---- draining ---- */

/*
 * The map's key for a deferred cookie: the cookie itself, exact (a hash of
 * tid and cookie would merge two on a collision).  The kernel makes each
 * cookie of a CPU number and that CPU's count of kernel entries, so no two
 * tasks share one; @tid is not needed to tell them apart.
 */
static uint64_t cookie_key(uint32_t tid, uint64_t cookie)
{
	(void)tid;
	return cookie;
}

/* The tid of a record's sample_id trailer (TID TIME [CPU] IDENTIFIER: after the pid); @len holds it. */
static uint32_t trailer_tid(const struct ds_recorder *r, const uint8_t *rec, size_t len)
{
	uint32_t tid;

	memcpy(&tid, rec + len - r->trailer_bytes + 4, 4);
	return tid;
}

/* Counts samples, cookies seen and records received, to end the grace period early. */
static void account(struct ds_recorder *r, const uint8_t *rec, size_t len)
{
	struct ds_event_header h;
	memcpy(&h, rec, sizeof(h));
	if (h.type == DS_REC_SAMPLE) {
		r->st.samples++;
		/* IDENTIFIER IP TID TIME [CPU] [PERIOD], then CALLCHAIN */
		uint64_t st = r->ev[0].attr.sample_type;
		size_t off = 8 + 8 * (4 + !!(st & DS_SAMPLE_CPU) + !!(st & DS_SAMPLE_PERIOD));
		uint64_t nr;
		uint32_t tid;
		if (!(r->ev[0].attr.sample_type & DS_SAMPLE_CALLCHAIN) || len < off + 8)
			return;
		memcpy(&tid, rec + 8 + 16 + 4, 4);
		memcpy(&nr, rec + off, 8);
		if (nr < 2 || nr > (len - off - 8) / 8)
			return;
		uint64_t ctx, cookie;
		memcpy(&ctx, rec + off + 8 + (nr - 2) * 8, 8);
		memcpy(&cookie, rec + off + 8 + (nr - 1) * 8, 8);
		if (ctx != DS_CONTEXT_USER_DEFERRED)
			return;
		/* the task is ours even when its FORK was lost (LOST records) */
		if (tid != r->last_sample_tid) {
			dsi_hashmap__set(&r->known_tids, tid, 1);
			r->last_sample_tid = tid;
		}
		bool found;
		uint64_t *v = dsi_hashmap__upsert(&r->cookies, cookie_key(tid, cookie), 1, &found);
		if (v && !found) /* else: known, or its record came first (sample on the way out) */
			r->st.cookies_seen++;
	} else if (h.type == DS_REC_CALLCHAIN_DEFERRED && len >= 24 + r->trailer_bytes) {
		uint32_t tid = trailer_tid(r, rec, len);
		uint64_t cookie;
		r->st.deferred_records++;
		memcpy(&cookie, rec + 8, 8);
		bool found;
		uint64_t *v = dsi_hashmap__upsert(&r->cookies, cookie_key(tid, cookie), 2, &found);
		if (!v)
			return;
		if (!found) {
			r->st.cookies_seen++;
			r->st.cookies_resolved++;
		} else if (*v == 1) {
			*v = 2;
			r->st.cookies_resolved++;
		}
	} else if (h.type == DS_REC_LOST && len >= 24) {
		uint64_t lost;
		memcpy(&lost, rec + 16, 8);
		r->st.lost_records++;
		r->st.lost_events += lost;
	} else if (h.type == DS_REC_FORK && len >= 24) {
		uint32_t tid;   /* pid, ppid, tid, ptid after the header */
		memcpy(&tid, rec + 16, 4);
		dsi_hashmap__set(&r->known_tids, tid, 1);
	}
}

static bool sink_record_wanted(struct ds_recorder *r, const uint8_t *rec, size_t len, bool *hold)
{
	struct ds_event_header h;
	*hold = false;
	memcpy(&h, rec, sizeof(h));
	if (h.type != DS_REC_CALLCHAIN_DEFERRED || r->opts.target == DS_TARGET_ALL_CPUS ||
	    len < 24 + r->trailer_bytes)
		return true;
	/* the system-wide defer sink sees every task: keep our targets' records */
	if (dsi_hashmap__find(&r->known_tids, trailer_tid(r, rec, len)))
		return true;
	*hold = true;   /* its FORK may not be read yet (drain_all decides) */
	return false;
}

static int hold_record(struct ds_recorder *r, const uint8_t *rec, size_t len)
{
	uint8_t *n = dsi_grow(r->held, &r->held_cap, r->held_len + len, 1, 65536);

	if (!n)
		return -ENOMEM;
	r->held = n;
	memcpy(r->held + r->held_len, rec, len);
	r->held_len += len;
	return 0;
}

static int emit(struct ds_recorder *r, const uint8_t *rec, size_t len, ds_record_sink sink, void *ctx)
{
	bool hold;
	if (!sink_record_wanted(r, rec, len, &hold))
		return hold ? hold_record(r, rec, len) : 0;
	account(r, rec, len);
	r->st.bytes += len;
	return sink(ctx, rec, len);
}

static int drain_ring(struct ds_recorder *r, struct ring *rg, ds_record_sink sink, void *ctx)
{
	struct perf_event_mmap_page *pg = rg->base;
	uint8_t *data = (uint8_t *)rg->base + (size_t)sysconf(_SC_PAGESIZE);
	uint64_t head = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = pg->data_tail;
	uint64_t mask = rg->data_size - 1;
	int err = 0;

	while (!err && tail < head) {
		struct ds_event_header h;
		size_t at = (size_t)(tail & mask);
		/* the header itself may wrap */
		for (size_t i = 0; i < sizeof(h); i++)
			((uint8_t *)&h)[i] = data[(at + i) & mask];
		if (h.size < sizeof(h) || h.size > head - tail) {
			err = -EPROTO;   /* corrupt ring: skip what is there */
			tail = head;
			break;
		}
		const uint8_t *rec = data + at;
		if (at + h.size > rg->data_size) {
			size_t first = rg->data_size - at;
			memcpy(r->bounce, data + at, first);
			memcpy(r->bounce + first, data, h.size - first);
			rec = r->bounce;
		}
		err = emit(r, rec, h.size, sink, ctx);
		tail += h.size;
	}
	__atomic_store_n(&pg->data_tail, tail, __ATOMIC_RELEASE);
	return err == -EPROTO ? 0 : err;
}

static int finished_round(ds_record_sink sink, void *ctx)
{
	struct ds_event_header h = { DS_REC_FINISHED_ROUND, 0, sizeof(h) };
	return sink(ctx, &h, sizeof(h));
}

static int drain_rings(struct ds_recorder *r, ds_record_sink sink, void *ctx)
{
	int err = 0;
	for (size_t c = 0; !err && c < r->nr_cpus; c++)
		if (r->rings[c].base)
			err = drain_ring(r, &r->rings[c], sink, ctx);
	return err;
}

/*
 * Held defer-sink records whose tid is now known go to the sink; the others
 * stay held (kept in order at the front) or, with drop, are counted as other
 * tasks' records and discarded.
 */
static int release_held(struct ds_recorder *r, ds_record_sink sink, void *ctx, bool drop)
{
	size_t keep = 0;
	int err = 0;

	for (size_t off = 0; !err && off < r->held_len;) {
		struct ds_event_header h;
		memcpy(&h, r->held + off, sizeof(h));
		if (dsi_hashmap__find(&r->known_tids, trailer_tid(r, r->held + off, h.size))) {
			account(r, r->held + off, h.size);
			r->st.bytes += h.size;
			err = sink(ctx, r->held + off, h.size);
		} else if (drop) {
			r->st.foreign_deferred++;
		} else {
			memmove(r->held + keep, r->held + off, h.size);
			keep += h.size;
		}
		off += h.size;
	}
	r->held_len = keep;
	return err;
}

/*
 * One pass over every ring, then a round marker.  A deferred record of a
 * task whose FORK is not yet known is held: the FORK was written before
 * the record, but possibly to a ring this pass had already drained (a
 * child that forks and exits while a later ring is drained).  Draining
 * again makes every such FORK visible, so the held records of one drain
 * are decided by the next; two more drains at most, then what is still
 * unknown belongs to tasks that are not ours.  All of it stays in the
 * same round, so readers still see the records in order.
 */
static int drain_all(struct ds_recorder *r, ds_record_sink sink, void *ctx)
{
	uint64_t before = r->st.bytes;
	int err = drain_rings(r, sink, ctx);

	for (int again = 0; !err && r->held_len && again < 2; again++) {
		err = release_held(r, sink, ctx, false);
		if (!err && r->held_len)
			err = drain_rings(r, sink, ctx);
	}
	if (!err)
		err = release_held(r, sink, ctx, true);
	r->held_len = 0;
	if (err || r->st.bytes == before)
		return err;   /* an empty pass needs no round marker */
	return finished_round(sink, ctx);
}

static void ioctl_role(struct ds_recorder *r, bool sampling, unsigned long req)
{
	for (size_t i = 0; i < r->nr_ev; i++)
		if ((r->ev[i].role == ROLE_SAMPLE) == sampling)
			for (size_t j = 0; j < r->ev[i].nr_fds; j++)
				if (r->ev[i].fds[j] >= 0)
					ioctl(r->ev[i].fds[j], req, 0);
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static bool child_done(struct ds_recorder *r)
{
	int status;
	if (r->child <= 0 || r->st.child_status != -1)
		return r->child > 0;
	pid_t p = waitpid(r->child, &status, WNOHANG);
	if (p == r->child) {
		r->st.child_status = status;
		return true;
	}
	return false;
}

/* -p/-t: every target task gone (its per-task fds all report POLLHUP) */
static bool targets_gone(struct ds_recorder *r)
{
	if (r->opts.target != DS_TARGET_PID && r->opts.target != DS_TARGET_TID)
		return false;
	struct rec_event *e = &r->ev[0];
	for (size_t i = 0; i < e->nr_fds; i++) {
		struct pollfd p = { .fd = e->fds[i], .events = POLLIN };
		if (e->fds[i] >= 0 && (poll(&p, 1, 0) <= 0 || !(p.revents & POLLHUP)))
			return false;
	}
	return true;
}

int ds_recorder__run(struct ds_recorder *r, ds_record_sink sink, void *ctx)
{
	struct pollfd *pfd = calloc(r->nr_cpus, sizeof(*pfd));
	int err = 0;
	if (!pfd)
		return -ENOMEM;
	for (size_t c = 0; c < r->nr_cpus; c++)
		pfd[c] = (struct pollfd){ .fd = r->rings[c].fd, .events = POLLIN };

	/* a command's per-task events enable on its exec; otherwise enable now */
	ioctl_role(r, false, PERF_EVENT_IOC_ENABLE);
	if (r->opts.target != DS_TARGET_CMD)
		ioctl_role(r, true, PERF_EVENT_IOC_ENABLE);
	if (r->child > 0 && !release_command(r)) {
		waitpid(r->child, &r->st.child_status, 0);
		err = drain_all(r, sink, ctx);
		free(pfd);
		return err;
	}
	while (!err && !r->stop && !child_done(r) && !targets_gone(r)) {
		int n = poll(pfd, r->nr_cpus, 100);
		if (n < 0 && errno != EINTR) {
			err = -errno;
			break;
		}
		for (size_t c = 0; n > 0 && c < r->nr_cpus; c++)
			if (pfd[c].revents & (POLLHUP | POLLERR))
				pfd[c].fd = -1;   /* its task is gone: the poll timeout drains the rest */
		err = drain_all(r, sink, ctx);
	}

	/* stop sampling; keep the tracking events open until every cookie seen in a
	 * sample has its record (the task returns to user space) or the grace ends */
	ioctl_role(r, true, PERF_EVENT_IOC_DISABLE);
	if (!err)
		err = drain_all(r, sink, ctx);
	uint64_t grace = r->opts.defer_grace_ms ? r->opts.defer_grace_ms : 100;
	uint64_t end = now_ms() + grace;
	while (!err && r->deferred && r->st.cookies_resolved < r->st.cookies_seen && now_ms() < end) {
		if (poll(pfd, r->nr_cpus, 20) < 0 && errno != EINTR)
			break;
		err = drain_all(r, sink, ctx);
	}
	ioctl_role(r, false, PERF_EVENT_IOC_DISABLE);
	if (!err)
		err = drain_all(r, sink, ctx);
	if (r->child > 0 && r->st.child_status == -1) {
		/* stopped by a signal: end the command as perf does (it may have had
		 * the signal already, from the terminal), and leave no zombie */
		kill(r->child, SIGTERM);
		if (waitpid(r->child, &r->st.child_status, 0) < 0)
			r->st.child_status = 0;
	}
	free(pfd);
	return err;
}
