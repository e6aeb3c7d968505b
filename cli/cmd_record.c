// SPDX-License-Identifier: MIT
/*
 * dstack record: the recorder (lib/record/recorder.c) feeding the perf.data writer.
 *
 *   dstack record [-o FILE|-] [-e EVENT,...] [-c PERIOD | -F HZ]
 *                 [-g | --call-graph fp[,defer]|dwarf[,SIZE]] [--user-regs REG,...]
 *                 [--stack-snapshot SIZE] [-a | -p PID | -t TID] [-m PAGES] [--defer-grace MS]
 *                 [-- CMD ARGS...]
 *
 * --call-graph dwarf copies SIZE bytes of user stack (default 8192) and the
 * user registers into each sample, as perf does, on any kernel: the user
 * part of the chain is unwound when the file is read.  --stack-snapshot
 * SIZE adds such a copy to fp,defer samples, for those whose deferred
 * record never arrives (a task exiting in the kernel, or still in it when
 * the profile ends): they are unwound from it instead of keeping a cookie.
 *
 * At the end it prints perf's summary line, then reads the file back with
 * the library and prints the stitching summary.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include "cli.h"
#include "dstack/log.h"
#include "dstack/recorder.h"
#include "dstack/event.h"
#include "dstack/session.h"
#include "dstack/tracepoint.h"
#include "dstack/writer.h"
#include "dstack/unwind.h"
#include <strings.h>
#include "util/outbuf.h"

#define USAGE "usage: dstack record [-o FILE|-] [-e EVENT,...] [-c PERIOD | -F HZ] " \
	"[-g | --call-graph fp[,defer]|dwarf[,SIZE]] [--user-regs REG,...] [--stack-snapshot SIZE] [--off-cpu] " \
	"[-a | -p PID | -t TID] [-C CPUS] [--no-inherit] [-m PAGES] [--defer-grace MS] [-q | -v] [-- CMD ARGS...]"

struct record_args {
	struct ds_recorder_opts ro;
	const char *output;
	const char *events[16];
	uint32_t snapshot;      /* --stack-snapshot SIZE: checked and applied once all options are read */
	int nr_targets;         /* how many of -a, -p, -t were given */
	bool quiet;             /* -q: errors only */
	bool verbose;           /* -v: the events as opened */
};

static int parse_u64(const char *s, uint64_t *v)
{
	char *end;
	errno = 0;
	unsigned long long x = strtoull(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-')
		return -1;
	*v = x;
	return 0;
}

/* A user stack copy size: 8 to 65528 bytes (the kernel's limit), rounded up to 8 as perf does. */
static int parse_stack_size(const char *what, const char *v, uint32_t *size)
{
	uint64_t n;

	if (parse_u64(v, &n) || n < 8 || n > 65528) {
		usage_error("record", "%s needs a size of 8 to 65528 bytes, not '%s'", what, v);
		return -1;
	}
	*size = (uint32_t)((n + 7) & ~7ULL);
	return 0;
}

/* --user-regs: perf's names (ax, bx, ... ip, flags, ..., r8-r15), comma-separated. */
static int parse_user_regs(const char *list, uint64_t *mask)
{
	char buf[256];

	snprintf(buf, sizeof(buf), "%s", list);
	*mask = 0;
	for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		unsigned r;

		for (r = 0; r < DS_X86_NR_REGS; r++)
			if (!strcasecmp(t, ds_x86_reg__name(r)))
				break;
		if (r == DS_X86_NR_REGS) {
			usage_error("record", "--user-regs: unknown register '%s' (ax, bx, cx, dx, si, di, bp, sp, "
				    "ip, flags, cs, ss, ds, es, fs, gs, r8-r15)", t);
			return -1;
		}
		*mask |= 1ULL << r;
	}
	if (!(*mask & (1ULL << DS_X86_IP)) || !(*mask & (1ULL << DS_X86_SP))) {
		usage_error("record", "--user-regs needs at least ip and sp to unwind");
		return -1;
	}
	return 0;
}

static int parse_events(struct record_args *a, const char *list)
{
	static char buf[1024];
	snprintf(buf, sizeof(buf), "%s", list);
	for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (a->ro.nr_events >= sizeof(a->events) / sizeof(a->events[0]))
			return -1;
		a->events[a->ro.nr_events++] = t;
	}
	a->ro.events = a->events;
	return a->ro.nr_events ? 0 : -1;
}

/* -F HZ, or -F max: as perf, the kernel's current limit.  0 or EXIT_USAGE. */
static int parse_freq(struct record_args *a, const char *v)
{
	FILE *f;
	unsigned long long hz = 0;

	if (strcmp(v, "max")) {
		if (parse_u64(v, &a->ro.freq) || !a->ro.freq) {
			usage_error("record", "-F needs a positive frequency in Hz, not '%s'", v);
			return EXIT_USAGE;
		}
		return 0;
	}
	f = fopen("/proc/sys/kernel/perf_event_max_sample_rate", "r");
	if (!f || fscanf(f, "%llu", &hz) != 1 || !hz) {
		if (f)
			fclose(f);
		usage_error("record", "-F max: cannot read /proc/sys/kernel/perf_event_max_sample_rate");
		return EXIT_USAGE;
	}
	fclose(f);
	a->ro.freq = hz;
	return 0;
}

/* --call-graph fp, fp,defer (or defer), dwarf[,SIZE].  0 or EXIT_USAGE. */
static int parse_call_graph(struct record_args *a, const char *v)
{
	a->ro.callchain = true;
	if (!strcmp(v, "fp,defer") || !strcmp(v, "defer")) {
		a->ro.defer = true;
	} else if (!strncmp(v, "dwarf", 5) && (!v[5] || v[5] == ',')) {
		a->ro.dwarf = true;
		a->ro.stack_user = 8192;   /* perf's default */
		if (v[5] && parse_stack_size("--call-graph dwarf,SIZE", v + 6, &a->ro.stack_user))
			return EXIT_USAGE;
	} else if (strcmp(v, "fp")) {
		usage_error("record", "--call-graph %s: fp, fp,defer and dwarf[,SIZE] are supported", v);
		return EXIT_USAGE;
	}
	return 0;
}

/* -p PID / -t TID (@arg: the option as given).  0 or EXIT_USAGE. */
static int parse_target_id(struct record_args *a, const char *arg, const char *v)
{
	uint64_t n;

	a->ro.target = (arg[1] == 'p' || !strncmp(arg, "--pid", 5)) ? DS_TARGET_PID : DS_TARGET_TID;
	if (parse_u64(v, &n) || !n || n > 0x7fffffff) {
		usage_error("record", "%s needs a process or thread id, not '%s'", arg, v);
		return EXIT_USAGE;
	}
	a->ro.pid = (pid_t)n;
	a->nr_targets++;
	return 0;
}

/* -m PAGES: a power of two, at most 2^20.  0 or EXIT_USAGE. */
static int parse_mmap_pages(struct record_args *a, const char *v)
{
	uint64_t n;

	if (parse_u64(v, &n) || !n || (n & (n - 1)) || n > (1u << 20)) {
		usage_error("record", "-m needs a power of two number of pages, not '%s'", v);
		return EXIT_USAGE;
	}
	a->ro.mmap_pages = (unsigned)n;
	return 0;
}

/* --defer-grace MS: 1 to 600000.  0 or EXIT_USAGE. */
static int parse_defer_grace(struct record_args *a, const char *v)
{
	uint64_t n;

	if (parse_u64(v, &n) || !n || n > 600000) {
		usage_error("record", "--defer-grace needs milliseconds (1-600000), not '%s'", v);
		return EXIT_USAGE;
	}
	a->ro.defer_grace_ms = (unsigned)n;
	return 0;
}

/* -c PERIOD: positive.  0 or EXIT_USAGE. */
static int parse_period(struct record_args *a, const char *v)
{
	if (parse_u64(v, &a->ro.period) || !a->ro.period) {
		usage_error("record", "-c needs a positive period, not '%s'", v);
		return EXIT_USAGE;
	}
	return 0;
}

/*
 * The option at argv[*i]; a value may be the next argument, *i then moves
 * past it.  0, or EXIT_USAGE after printing why.
 */
static int parse_option(struct record_args *a, int argc, char **argv, int *i)
{
	const char *arg = argv[*i], *v;

	if ((v = opt_value("-o", argc, argv, i)) || (v = opt_value("--output", argc, argv, i))) {
		a->output = v;
	} else if ((v = opt_value("-e", argc, argv, i)) || (v = opt_value("--event", argc, argv, i))) {
		if (parse_events(a, v)) {
			usage_error("record", "bad event list '%s'", v);
			return EXIT_USAGE;
		}
	} else if ((v = opt_value("-c", argc, argv, i)) || (v = opt_value("--count", argc, argv, i))) {
		return parse_period(a, v);
	} else if ((v = opt_value("-F", argc, argv, i)) || (v = opt_value("--freq", argc, argv, i))) {
		return parse_freq(a, v);
	} else if (!strcmp(arg, "-g")) {
		a->ro.callchain = true;
	} else if ((v = opt_value("--call-graph", argc, argv, i))) {
		return parse_call_graph(a, v);
	} else if ((v = opt_value("--stack-snapshot", argc, argv, i))) {
		return parse_stack_size("--stack-snapshot", v, &a->snapshot) ? EXIT_USAGE : 0;
	} else if ((v = opt_value("--user-regs", argc, argv, i))) {
		return parse_user_regs(v, &a->ro.regs_user) ? EXIT_USAGE : 0;
	} else if (!strcmp(arg, "-a") || !strcmp(arg, "--all-cpus")) {
		a->ro.target = DS_TARGET_ALL_CPUS;
		a->nr_targets++;
	} else if ((v = opt_value("-C", argc, argv, i)) || (v = opt_value("--cpu", argc, argv, i))) {
		a->ro.cpu_list = v;
	} else if (!strcmp(arg, "--no-inherit")) {
		a->ro.no_inherit = true;
	} else if (!strcmp(arg, "-q") || !strcmp(arg, "--quiet")) {
		a->quiet = true;
	} else if (!strcmp(arg, "-v") || !strcmp(arg, "--verbose")) {
		a->verbose = true;
	} else if ((v = opt_value("-p", argc, argv, i)) || (v = opt_value("--pid", argc, argv, i)) ||
		   (v = opt_value("-t", argc, argv, i)) || (v = opt_value("--tid", argc, argv, i))) {
		return parse_target_id(a, arg, v);
	} else if ((v = opt_value("-m", argc, argv, i)) || (v = opt_value("--mmap-pages", argc, argv, i))) {
		return parse_mmap_pages(a, v);
	} else if (!strcmp(arg, "--off-cpu")) {
		a->ro.off_cpu = true;
	} else if ((v = opt_value("--defer-grace", argc, argv, i))) {
		return parse_defer_grace(a, v);
	} else {
		usage_error("record", "unknown option '%s'\n%s", arg, USAGE);
		return EXIT_USAGE;
	}
	return 0;
}

/* The stack options' combinations, once all are read.  0 or EXIT_USAGE. */
static int check_stack_options(struct record_args *a)
{
	if (a->snapshot) {
		if (!a->ro.defer) {
			usage_error("record", "--stack-snapshot goes with --call-graph fp,defer");
			return EXIT_USAGE;
		}
		a->ro.stack_user = a->snapshot;
	}
	if (a->ro.regs_user && !a->ro.stack_user) {
		usage_error("record", "--user-regs goes with --call-graph dwarf or --stack-snapshot");
		return EXIT_USAGE;
	}
	return 0;
}

/* What to record: one of a command, -a, -p, -t.  0 or EXIT_USAGE. */
static int check_target(const struct record_args *a)
{
	bool command = a->ro.argv && a->ro.argv[0];

	if (a->nr_targets > 1) {
		usage_error("record", "-a, -p and -t exclude each other");
		return EXIT_USAGE;
	}
	if (a->ro.target == DS_TARGET_CMD && !command) {
		usage_error("record", "nothing to record: give a command, -a, -p or -t\n%s", USAGE);
		return EXIT_USAGE;
	}
	if ((a->ro.target == DS_TARGET_PID || a->ro.target == DS_TARGET_TID) && command) {
		usage_error("record", "-p/-t and a command exclude each other");
		return EXIT_USAGE;
	}
	return 0;
}

/* The options' combinations, in the order their errors are reported.  0 or EXIT_USAGE. */
static int check_args(struct record_args *a)
{
	/* -C without -p/-t watches every task on those CPUs, as -a does (perf's rule) */
	if (a->ro.cpu_list && a->ro.target == DS_TARGET_CMD)
		a->ro.target = DS_TARGET_ALL_CPUS;
	if (check_stack_options(a))
		return EXIT_USAGE;
	if (a->ro.period && a->ro.freq) {
		usage_error("record", "-c and -F exclude each other");
		return EXIT_USAGE;
	}
	if (a->ro.off_cpu && !strcmp(a->output, "-")) {
		/* perf reads a pipe's tracepoint formats only from a HEADER_TRACING_DATA record */
		usage_error("record", "--off-cpu writes to a file, not to a pipe (-o -)");
		return EXIT_USAGE;
	}
	return check_target(a);
}

/* Returns 0, or EXIT_USAGE after printing why. */
static int parse_args(struct record_args *a, int argc, char **argv)
{
	a->output = "perf.data";
	a->ro.target = DS_TARGET_CMD;
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i];

		if (!strcmp(arg, "--")) {
			a->ro.argv = argv + i + 1;
			break;
		}
		if (arg[0] != '-') {   /* perf takes the command without -- too */
			a->ro.argv = argv + i;
			break;
		}
		if (parse_option(a, argc, argv, &i))
			return EXIT_USAGE;
	}
	return check_args(a);
}


static struct ds_recorder *the_recorder;

static void on_signal(int sig)
{
	(void)sig;
	if (the_recorder)
		ds_recorder__stop(the_recorder);
}

/*
 * -o - into a pipe: the writer fills a 1 MiB buffer before it writes, so a
 * reader that went away would be noticed only then, after the command ran
 * its course.  This thread waits for the pipe's POLLERR (no reader left)
 * and stops the recorder as SIGINT would; the next write then fails with
 * EPIPE and says so.  A byte on wake[1] ends it.
 */
struct pipe_watch {
	pthread_t thread;
	int wake[2];
	bool started;
};

static void *watch_pipe(void *arg)
{
	struct pipe_watch *pw = arg;
	struct pollfd p[2] = { { .fd = STDOUT_FILENO, .events = 0 }, { .fd = pw->wake[0], .events = POLLIN } };

	for (;;) {
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			break;
		if (p[1].revents)
			break;
		if (p[0].revents & (POLLERR | POLLHUP | POLLNVAL)) {
			if (the_recorder)
				ds_recorder__stop(the_recorder);
			break;
		}
	}
	return NULL;
}

static void pipe_watch_start(struct pipe_watch *pw)
{
	struct stat st;

	pw->started = false;
	if (fstat(STDOUT_FILENO, &st) || !S_ISFIFO(st.st_mode) || pipe(pw->wake))
		return;
	pw->started = !pthread_create(&pw->thread, NULL, watch_pipe, pw);
	if (!pw->started) {
		close(pw->wake[0]);
		close(pw->wake[1]);
	}
}

static void pipe_watch_stop(struct pipe_watch *pw)
{
	if (!pw->started)
		return;
	if (write(pw->wake[1], "", 1) < 0) {
		/* cannot fail on an empty pipe of our own; the join would wait */
	}
	pthread_join(pw->thread, NULL);
	close(pw->wake[0]);
	close(pw->wake[1]);
}

struct sink_ctx {
	struct ds_writer *w;
	struct ds_record_out *out;      /* the records into w, their build ids noted */
};

/*
 * Samples with a stack copy are unwound later, maybe through the vDSO,
 * which lies in no file: its images (the 64-bit one, and the i386 one if
 * an i386 task ran) are kept in perf's build-id cache and named in the
 * header, as perf record does.
 */
static void keep_vdso(struct sink_ctx *c, enum ds_vdso_kind kind, bool quiet)
{
	int err = ds_record_out__keep_vdso(c->out, cli_buildid_dir(), kind);

	if (err && !quiet)
		fprintf(stderr, "dstack record: the %s image was not kept (%s): walks through it will stop there\n",
			ds_vdso__name(kind), err == -ENOEXEC ? "this kernel runs no i386 program" : strerror(-err));
}

static int count_only(void *ctx, const struct ds_event *ev)
{
	(void)ctx;
	(void)ev;
	return 0;
}

static void print_summary(const char *path, const struct ds_recorder_stats *st)
{
	struct stat sb;
	if (stat(path, &sb) < 0)
		sb.st_size = 0;
	struct ds_session *s = ds_session__open(path);
	if (!s) {
		fprintf(stderr, "[ perf record: Captured and wrote %.3f MB %s (%llu samples) ]\n",
			(double)sb.st_size / (1024.0 * 1024.0), path, (unsigned long long)st->samples);
		fprintf(stderr, "dstack record: cannot read %s back: %s\n", path, ds_errmsg());
		return;
	}
	struct ds_session_opts so = { .memory_budget = cli_memory_budget() };
	int ret = ds_session__run(s, &so, count_only, NULL);
	char why[640];

	snprintf(why, sizeof(why), "%s", ret ? ds_errmsg() : "");
	const struct ds_stitch_stats *ss = ds_session__stitch_stats(s);
	fprintf(stderr, "[ perf record: Captured and wrote %.3f MB %s (%llu samples) ]\n",
		(double)sb.st_size / (1024.0 * 1024.0), path,
		(unsigned long long)(ss ? ss->samples : st->samples));
	if (ret)
		fprintf(stderr, "dstack record: reading %s back: %s\n", path, why);
	if (ss && (ss->records || ss->deferred_samples))
		fprintf(stderr, "[ dstack record: %llu deferred records, %llu samples stitched, %llu unresolved ]\n",
			(unsigned long long)ss->records,
			(unsigned long long)(ss->stitched_before + ss->stitched_after),
			(unsigned long long)ss->unresolved);
	ds_session__close(s);
}

/* --off-cpu: sched_switch's format from tracefs, as HEADER_TRACING_DATA.  0 or a negative errno. */
static int write_off_cpu_formats(struct ds_writer *w)
{
	static const char *const tps[] = { "sched:sched_switch" };
	size_t len;
	void *td = ds_tracefs__tracing_data(tps, 1, &len);
	int ret;

	if (!td) {
		fprintf(stderr, "dstack record: --off-cpu: cannot read the tracepoint formats from tracefs: %s\n",
			strerror(errno));
		return -errno;
	}
	ret = ds_writer__feature(w, DS_FEAT_TRACING_DATA, td, len);
	free(td);
	return ret;
}

/* The header: attrs, features (written even when the attrs failed), tracing data.  0 or a negative errno. */
static int write_header(struct ds_writer *w, const struct ds_recorder *r, const struct record_args *a,
			int argc, char **argv)
{
	int ret = ds_recorder__write_header(r, w, argc, (const char *const *)argv);

	if (ret)
		fprintf(stderr, "dstack record: %s\n", ds_errmsg());
	if (!ret && a->ro.off_cpu)
		ret = write_off_cpu_formats(w);
	return ret;
}

/*
 * Synthesize the existing tasks, then record until the command ends or
 * SIGINT/SIGTERM (or, into a pipe, its reader going away) stops the
 * recorder.  @ret: the header's result; nothing runs if it failed.
 * 0 or a negative errno.
 */
static int record_until_stopped(struct ds_recorder *r, struct sink_ctx *c, bool pipe, int ret)
{
	struct pipe_watch pw = { .started = false };
	struct sigaction sa = { .sa_handler = on_signal };

	/*
	 * -o -: a reader that closes the pipe must not kill the recorder by
	 * SIGPIPE, which would leave the command running unprofiled: the write
	 * fails with EPIPE instead, and the recorder stops and ends the command.
	 * (The command, forked already, keeps its own disposition.)
	 */
	if (pipe)
		signal(SIGPIPE, SIG_IGN);
	the_recorder = r;
	if (pipe)
		pipe_watch_start(&pw);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (!ret)
		ret = ds_recorder__synthesize(r, ds_record_out__write, c->out);
	if (!ret)
		ret = ds_recorder__run(r, ds_record_out__write, c->out);
	if (pipe)
		pipe_watch_stop(&pw);
	the_recorder = NULL;
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	return ret;
}

/*
 * What the recording's end says about the command and the events: a
 * command that could not run (exit 127 or 126, as a shell), one killed by
 * a signal other than the stop's own, stacks still pending, lost events.
 * EXIT_OK or the exec failure's code.
 */
static int report_run(const struct ds_recorder *r, const struct record_args *a)
{
	const struct ds_recorder_stats *st = ds_recorder__stats(r);
	int exit_code = EXIT_OK;

	if (st->exec_failed) {
		fprintf(stderr, "dstack record: cannot run '%s': %s\n", a->ro.argv[0], strerror(st->exec_errno));
		exit_code = st->exec_errno == ENOENT ? 127 : 126;
	}
	/* a command that crashed is the command's business, but it is said:
	 * the recording up to its end is whole (SIGTERM, SIGINT: the stop's own) */
	if (!st->exec_failed && st->child_status != -1 && WIFSIGNALED(st->child_status) &&
	    WTERMSIG(st->child_status) != SIGTERM && WTERMSIG(st->child_status) != SIGINT)
		fprintf(stderr, "dstack record: the command was killed by signal %d (%s)\n",
			WTERMSIG(st->child_status), strsignal(WTERMSIG(st->child_status)));
	if (a->quiet)
		return exit_code;
	if (ds_recorder__deferred(r) && st->cookies_resolved < st->cookies_seen)
		fprintf(stderr, "dstack record: %llu user stacks still pending when the grace period ended "
			"(tasks inside the kernel): --defer-grace MS waits longer\n",
			(unsigned long long)(st->cookies_seen - st->cookies_resolved));
	if (st->lost_records)
		fprintf(stderr, "dstack record: lost %llu events in %llu LOST records: raise -m\n",
			(unsigned long long)st->lost_events, (unsigned long long)st->lost_records);
	if (a->verbose && st->foreign_deferred)
		fprintf(stderr, "dstack record: %llu deferred records of other tasks not written\n",
			(unsigned long long)st->foreign_deferred);
	return exit_code;
}

/*
 * Close the output and say how the recording ended: EXIT_OUTPUT when a
 * write failed, EXIT_INPUT when recording failed (@ret), else @exit_code;
 * perf's summary line for a file unless the write or the command failed.
 */
static int finish_output(struct sink_ctx *c, const struct ds_recorder *r, const struct record_args *a,
			 bool pipe, int ret, int exit_code)
{
	const struct ds_recorder_stats *st = ds_recorder__stats(r);
	int werr = ds_record_out__status(c->out), cerr;

	if (a->ro.stack_user && !werr) {
		keep_vdso(c, DS_VDSO_64, a->quiet);
		if (ds_record_out__vdso32_mapped(c->out))
			keep_vdso(c, DS_VDSO_32, a->quiet);
	}
	cerr = ds_writer__close(c->w);
	if (werr || cerr) {
		output_failed(pipe ? "stdout" : a->output, -(werr ? werr : cerr));
		exit_code = EXIT_OUTPUT;
	} else if (ret) {
		fprintf(stderr, "dstack record: %s\n", strerror(-ret));
		exit_code = EXIT_INPUT;
	}
	if (!pipe && !st->exec_failed && exit_code != EXIT_OUTPUT && !a->quiet)   /* no success line after a failed write */
		print_summary(a->output, st);
	return exit_code;
}

/* -v: each event as opened, on stderr. */
static void print_events(const struct ds_recorder *r)
{
	for (size_t i = 0; i < ds_recorder__nr_attrs(r); i++) {
		const struct ds_attr *at;
		uint32_t size;
		const uint64_t *ids;
		size_t nr;
		const char *name;

		ds_recorder__attr(r, i, &at, &size, &ids, &nr, &name);
		fprintf(stderr, "dstack record: event %s: type %u config %#llx, %s %llu, sample_type %#llx, "
			"flags %#llx, %zu fds\n", name ? name : "?", at->type, (unsigned long long)at->config,
			(at->flags & (1ULL << DS_ATTR_FREQ)) ? "freq" : "period", (unsigned long long)at->sample_period,
			(unsigned long long)at->sample_type, (unsigned long long)at->flags, nr);
	}
	if (ds_recorder__deferred(r))
		fprintf(stderr, "dstack record: deferred user callchains\n");
}

/* An error of the recorder's or the writer's opening, as "dstack record: WHY"; frees @err. */
static void open_failed(void)
{
	fprintf(stderr, "dstack record: %s\n", ds_errmsg());
}

int cmd_record(int argc, char **argv)
{
	struct record_args a = { 0 };
	struct sink_ctx c = { 0 };
	struct ds_recorder *r;
	int ret = parse_args(&a, argc, argv), exit_code;
	bool pipe;

	if (ret)
		return ret;
	pipe = !strcmp(a.output, "-");
	a.ro.command_stdout_to_stderr = pipe;
	r = ds_recorder__new(&a.ro);
	if (!r) {
		open_failed();
		return EXIT_INPUT;
	}
	if (ds_recorder__fallback(r) && !a.quiet)
		fprintf(stderr, "%s\n", ds_recorder__fallback(r));
	if (a.verbose)
		print_events(r);
	c.w = ds_writer__open(a.output, pipe);
	if (!c.w || !(c.out = ds_record_out__new(c.w))) {
		open_failed();
		if (c.w)
			ds_writer__close(c.w);
		ds_recorder__free(r);
		return EXIT_INPUT;
	}
	ret = write_header(c.w, r, &a, argc, argv);
	ret = record_until_stopped(r, &c, pipe, ret);
	exit_code = report_run(r, &a);
	exit_code = finish_output(&c, r, &a, pipe, ret, exit_code);
	ds_record_out__delete(c.out);
	ds_recorder__free(r);
	return exit_code;
}
