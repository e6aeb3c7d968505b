// SPDX-License-Identifier: MIT
/*
 * dstack record: the recorder (lib/recorder.c) feeding the perf.data writer.
 *
 *   dstack record [-o FILE|-] [-e EVENT,...] [-c PERIOD | -F HZ] [-g | --call-graph fp[,defer]]
 *                 [-a | -p PID | -t TID] [-m PAGES] [--defer-grace MS] [-- CMD ARGS...]
 *
 * At the end it prints perf's summary line, then reads the file back with
 * the library and prints the stitching summary.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include "cli.h"
#include "dstack/recorder.h"
#include "dstack/event.h"
#include "dstack/session.h"
#include "dstack/tracepoint.h"
#include "dstack/writer.h"
#include "hashmap.h"

#define USAGE "usage: dstack record [-o FILE|-] [-e EVENT,...] [-c PERIOD | -F HZ] " \
	"[-g | --call-graph fp[,defer]] [--off-cpu] [-a | -p PID | -t TID] [-m PAGES] [--defer-grace MS] [-- CMD ARGS...]"

struct record_args {
	struct ds_recorder_opts ro;
	const char *output;
	const char *events[16];
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

/* Returns 0, or EXIT_USAGE after printing why. */
static int parse_args(struct record_args *a, int argc, char **argv)
{
	const char *v;
	uint64_t n;
	int targets = 0;

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
		if ((v = opt_value("-o", argc, argv, &i)) || (v = opt_value("--output", argc, argv, &i))) {
			a->output = v;
		} else if ((v = opt_value("-e", argc, argv, &i)) || (v = opt_value("--event", argc, argv, &i))) {
			if (parse_events(a, v)) {
				usage_error("record", "bad event list '%s'", v);
				return EXIT_USAGE;
			}
		} else if ((v = opt_value("-c", argc, argv, &i)) || (v = opt_value("--count", argc, argv, &i))) {
			if (parse_u64(v, &a->ro.period) || !a->ro.period) {
				usage_error("record", "-c needs a positive period, not '%s'", v);
				return EXIT_USAGE;
			}
		} else if ((v = opt_value("-F", argc, argv, &i)) || (v = opt_value("--freq", argc, argv, &i))) {
			if (parse_u64(v, &a->ro.freq) || !a->ro.freq) {
				usage_error("record", "-F needs a positive frequency in Hz, not '%s'", v);
				return EXIT_USAGE;
			}
		} else if (!strcmp(arg, "-g")) {
			a->ro.callchain = true;
		} else if ((v = opt_value("--call-graph", argc, argv, &i))) {
			a->ro.callchain = true;
			if (!strcmp(v, "fp,defer") || !strcmp(v, "defer"))
				a->ro.defer = true;
			else if (strcmp(v, "fp")) {
				usage_error("record", "--call-graph %s: only fp and fp,defer are supported", v);
				return EXIT_USAGE;
			}
		} else if (!strcmp(arg, "-a") || !strcmp(arg, "--all-cpus")) {
			a->ro.target = DS_TARGET_ALL_CPUS;
			targets++;
		} else if ((v = opt_value("-p", argc, argv, &i)) || (v = opt_value("--pid", argc, argv, &i)) ||
			   (v = opt_value("-t", argc, argv, &i)) || (v = opt_value("--tid", argc, argv, &i))) {
			a->ro.target = (arg[1] == 'p' || !strncmp(arg, "--pid", 5)) ? DS_TARGET_PID : DS_TARGET_TID;
			if (parse_u64(v, &n) || !n || n > 0x7fffffff) {
				usage_error("record", "%s needs a process or thread id, not '%s'", arg, v);
				return EXIT_USAGE;
			}
			a->ro.pid = (pid_t)n;
			targets++;
		} else if ((v = opt_value("-m", argc, argv, &i)) || (v = opt_value("--mmap-pages", argc, argv, &i))) {
			if (parse_u64(v, &n) || !n || (n & (n - 1)) || n > (1u << 20)) {
				usage_error("record", "-m needs a power of two number of pages, not '%s'", v);
				return EXIT_USAGE;
			}
			a->ro.mmap_pages = (unsigned)n;
		} else if (!strcmp(arg, "--off-cpu")) {
			a->ro.off_cpu = true;
		} else if ((v = opt_value("--defer-grace", argc, argv, &i))) {
			if (parse_u64(v, &n) || !n || n > 600000) {
				usage_error("record", "--defer-grace needs milliseconds (1-600000), not '%s'", v);
				return EXIT_USAGE;
			}
			a->ro.defer_grace_ms = (unsigned)n;
		} else {
			usage_error("record", "unknown option '%s'\n%s", arg, USAGE);
			return EXIT_USAGE;
		}
	}
	if (a->ro.period && a->ro.freq) {
		usage_error("record", "-c and -F exclude each other");
		return EXIT_USAGE;
	}
	if (a->ro.off_cpu && !strcmp(a->output, "-")) {
		/* perf reads a pipe's tracepoint formats only from a HEADER_TRACING_DATA record */
		usage_error("record", "--off-cpu writes to a file, not to a pipe (-o -)");
		return EXIT_USAGE;
	}
	if (targets > 1) {
		usage_error("record", "-a, -p and -t exclude each other");
		return EXIT_USAGE;
	}
	if (a->ro.target == DS_TARGET_CMD && (!a->ro.argv || !a->ro.argv[0])) {
		usage_error("record", "nothing to record: give a command, -a, -p or -t\n%s", USAGE);
		return EXIT_USAGE;
	}
	if ((a->ro.target == DS_TARGET_PID || a->ro.target == DS_TARGET_TID) && a->ro.argv && a->ro.argv[0]) {
		usage_error("record", "-p/-t and a command exclude each other");
		return EXIT_USAGE;
	}
	return 0;
}


static struct ds_recorder *the_recorder;

static void on_signal(int sig)
{
	(void)sig;
	if (the_recorder)
		ds_recorder__stop(the_recorder);
}

struct sink_ctx {
	struct ds_writer *w;
	struct ds_hashmap build_ids;  /* hash of filename -> 1 */
	int err;
};

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ULL;
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 1099511628211ULL;
	return h;
}

/* MMAP2 with a build id (attr.build_id): remember it for the header */
static void note_build_id(struct sink_ctx *c, const uint8_t *rec, size_t len)
{
	struct ds_event_header h;
	memcpy(&h, rec, sizeof(h));
	if (h.type != DS_REC_MMAP2 || !(h.misc & DS_MISC_MMAP_BUILD_ID) || len <= 73)
		return;
	const char *name = (const char *)rec + 72;
	size_t max = len - 72;
	if (!memchr(name, 0, max))
		return;
	uint8_t bid_size = rec[40];
	if (bid_size == 0 || bid_size > 20)
		return;
	bool found;
	uint64_t *v = ds_hashmap__upsert(&c->build_ids, hash_str(name), 1, &found);
	if (!v || found)
		return;
	/* perf files build ids under the machine's pid: -1 for the host */
	ds_writer__add_build_id(c->w, -1, h.misc & DS_MISC_CPUMODE_MASK, rec + 44, bid_size, name);
}

static int sink(void *ctx, const void *rec, size_t len)
{
	struct sink_ctx *c = ctx;
	note_build_id(c, rec, len);
	int err = ds_writer__write(c->w, rec, len);
	if (err && !c->err)
		c->err = err;
	return err;
}

static void put_string(uint8_t **p, const char *s)
{
	uint32_t len = (uint32_t)((strlen(s) + 1 + 63) & ~(size_t)63);
	memcpy(*p, &len, 4);
	memset(*p + 4, 0, len);
	memcpy(*p + 4, s, strlen(s));
	*p += 4 + len;
}

static void write_features(struct ds_writer *w, int argc, char **argv)
{
	struct utsname u;
	char host[256] = "", desc[256] = "";
	if (uname(&u) == 0) {
		ds_writer__feature_string(w, DS_FEAT_OSRELEASE, u.release);
		ds_writer__feature_string(w, DS_FEAT_ARCH, u.machine);
	}
	if (gethostname(host, sizeof(host) - 1) == 0)
		ds_writer__feature_string(w, DS_FEAT_HOSTNAME, host);
	long online = sysconf(_SC_NPROCESSORS_ONLN), conf = sysconf(_SC_NPROCESSORS_CONF);
	ds_writer__feature_nrcpus(w, (uint32_t)(conf > 0 ? conf : 1), (uint32_t)(online > 0 ? online : 1));
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[512];
	while (f && fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');
		if (colon && !strncmp(line, "model name", 10)) {
			snprintf(desc, sizeof(desc), "%s", colon + 2);
			desc[strcspn(desc, "\n")] = 0;
			break;
		}
	}
	if (f)
		fclose(f);
	ds_writer__feature_string(w, DS_FEAT_CPUDESC, desc[0] ? desc : u.machine);

	/* CMDLINE: u32 nr, then nr perf strings; perf writes its own path first */
	size_t sz = 4;
	for (int i = 0; i < argc; i++)
		sz += 4 + strlen(argv[i]) + 64;
	sz += 4 + 64 + 16;
	uint8_t *buf = malloc(sz), *p;
	if (!buf)
		return;
	uint32_t nr = (uint32_t)argc + 1;
	memcpy(buf, &nr, 4);
	p = buf + 4;
	put_string(&p, "dstack");
	for (int i = 0; i < argc; i++)
		put_string(&p, argv[i]);
	ds_writer__feature(w, DS_FEAT_CMDLINE, buf, (size_t)(p - buf));
	free(buf);
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
	char *err = NULL;
	if (stat(path, &sb) < 0)
		sb.st_size = 0;
	struct ds_session *s = ds_session__open(path, &err);
	if (!s) {
		fprintf(stderr, "[ perf record: Captured and wrote %.3f MB %s (%llu samples) ]\n",
			(double)sb.st_size / (1024.0 * 1024.0), path, (unsigned long long)st->samples);
		fprintf(stderr, "dstack record: cannot read %s back: %s\n", path, err ? err : strerror(errno));
		free(err);
		return;
	}
	int ret = ds_session__run(s, NULL, count_only, NULL);
	const struct ds_stitch_stats *ss = ds_session__stitch_stats(s);
	fprintf(stderr, "[ perf record: Captured and wrote %.3f MB %s (%llu samples) ]\n",
		(double)sb.st_size / (1024.0 * 1024.0), path,
		(unsigned long long)(ss ? ss->samples : st->samples));
	if (ret)
		fprintf(stderr, "dstack record: reading %s back: %s\n", path, ds_session__error(s));
	if (ss && (ss->records || ss->deferred_samples))
		fprintf(stderr, "[ dstack record: %llu deferred records, %llu samples stitched, %llu unresolved ]\n",
			(unsigned long long)ss->records,
			(unsigned long long)(ss->stitched_before + ss->stitched_after),
			(unsigned long long)ss->unresolved);
	ds_session__close(s);
}

int cmd_record(int argc, char **argv)
{
	struct record_args a = { 0 };
	int ret = parse_args(&a, argc, argv);
	char *err = NULL;
	if (ret)
		return ret;
	bool pipe = !strcmp(a.output, "-");
	a.ro.command_stdout_to_stderr = pipe;

	struct ds_recorder *r = ds_recorder__new(&a.ro, &err);
	if (!r) {
		fprintf(stderr, "dstack record: %s\n", err ? err : strerror(errno));
		free(err);
		return EXIT_INPUT;
	}
	if (ds_recorder__fallback(r))
		fprintf(stderr, "%s\n", ds_recorder__fallback(r));

	struct sink_ctx c = { 0 };
	c.w = ds_writer__open(a.output, pipe, &err);
	if (!c.w) {
		fprintf(stderr, "dstack record: %s\n", err ? err : strerror(errno));
		free(err);
		ds_recorder__free(r);
		return EXIT_INPUT;
	}
	for (size_t i = 0; i < ds_recorder__nr_attrs(r); i++) {
		const struct ds_attr *attr;
		uint32_t size;
		const uint64_t *ids;
		size_t nr;
		const char *name;
		ds_recorder__attr(r, i, &attr, &size, &ids, &nr, &name);
		if ((ret = ds_writer__add_attr(c.w, attr, size, ids, nr, name)))
			break;
	}
	write_features(c.w, argc, argv);
	if (!ret && a.ro.off_cpu) {
		static const char *const tps[] = { "sched:sched_switch" };
		size_t len;
		void *td = ds_tp_tracing_data(tps, 1, &len);

		if (!td) {
			fprintf(stderr, "dstack record: --off-cpu: cannot read the tracepoint formats from tracefs: %s\n",
				strerror(errno));
			ret = -errno;
		} else {
			ret = ds_writer__feature(c.w, DS_FEAT_TRACING_DATA, td, len);
			free(td);
		}
	}

	the_recorder = r;
	struct sigaction sa = { .sa_handler = on_signal };
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (!ret)
		ret = ds_recorder__synthesize(r, sink, &c);
	if (!ret)
		ret = ds_recorder__run(r, sink, &c);
	the_recorder = NULL;
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);

	const struct ds_recorder_stats *st = ds_recorder__stats(r);
	int exit_code = EXIT_OK;
	if (st->exec_failed) {
		fprintf(stderr, "dstack record: cannot run '%s': %s\n", a.ro.argv[0], strerror(st->exec_errno));
		exit_code = st->exec_errno == ENOENT ? 127 : 126;
	}
	if (ds_recorder__deferred(r) && st->cookies_resolved < st->cookies_seen)
		fprintf(stderr, "dstack record: %llu user stacks still pending when the grace period ended "
			"(tasks inside the kernel): --defer-grace MS waits longer\n",
			(unsigned long long)(st->cookies_seen - st->cookies_resolved));
	if (st->lost_records)
		fprintf(stderr, "dstack record: lost %llu events in %llu LOST records: raise -m\n",
			(unsigned long long)st->lost_events, (unsigned long long)st->lost_records);
	int cerr = ds_writer__close(c.w);
	if (c.err || cerr) {
		fprintf(stderr, "dstack record: writing %s: %s\n", a.output, strerror(-(c.err ? c.err : cerr)));
		exit_code = EXIT_INPUT;
	} else if (ret) {
		fprintf(stderr, "dstack record: %s\n", strerror(-ret));
		exit_code = EXIT_INPUT;
	}
	if (!pipe && !st->exec_failed)
		print_summary(a.output, st);
	ds_hashmap__exit(&c.build_ids);
	ds_recorder__free(r);
	return exit_code;
}
