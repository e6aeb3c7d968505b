// SPDX-License-Identifier: MIT
/* dstack: entry point and subcommand dispatch. */
#include <errno.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "cli.h"
#include "util/outbuf.h"
#include "progress.h"
#include "dstack/debuginfod.h"
#include "dstack/log.h"
#include "dstack/session.h"

static const struct {
	const char *name;
	int (*fn)(int, char **);
	const char *help;
} commands[] = {
	{ "script", cmd_script, "print samples with stitched callchains (perf script format)" },
	{ "stat", cmd_stat, "record counts and stitching statistics" },
	{ "dump", cmd_dump, "every record with its offset, type, size and fields" },
	{ "report", cmd_report, "flat profile and call graphs (perf report --stdio)" },
	{ "flamegraph", cmd_flamegraph, "interactive flame graph (self-contained SVG)" },
	{ "folded", cmd_folded, "folded stacks for FlameGraph tools" },
	{ "pprof", cmd_pprof, "pprof profile.proto (gzip)" },
	{ "speedscope", cmd_speedscope, "speedscope JSON" },
	{ "diff", cmd_diff, "compare two profiles (report delta, folded diff, differential flame graph)" },
	{ "inject", cmd_inject, "rewrite a recording (--merge: classic callchains for old readers)" },
	{ "record", cmd_record, "record a profile (deferred callchains where the kernel has them)" },
};

#ifndef DSTACK_VERSION
#define DSTACK_VERSION "0.9"
#endif

static void usage(FILE *f)
{
	fprintf(f, "usage: dstack COMMAND [OPTIONS]\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(*commands); i++)
		fprintf(f, "  %-11s %s\n", commands[i].name, commands[i].help);
	fprintf(f, "\ncommon options: -i FILE (default perf.data, - for stdin), --symfs DIR, --kallsyms FILE,\n"
		   "  --debuginfod[=URLS] (debug files of sampled binaries by build-id; default $DEBUGINFOD_URLS, which\n"
		   "  alone turns it on), --no-debuginfod,\n"
		   "  -q (no progress line on a terminal)\n"
		   "dstack help COMMAND, dstack COMMAND --help: a command's options; dstack --version\n");
}

/*
 * The options of the commands whose own parsers print no help: here, so
 * that every command answers -h/--help with its whole option list.
 */
static const struct {
	const char *cmd, *text;
} help_texts[] = {
	{ "stat", "usage: dstack stat [-i FILE|-]\n"
		  "Record counts by type and the stitching statistics of a recording.\n"
		  "  -i, --input FILE|-   input (default perf.data; - for stdin)\n"
		  "  -h, --help           this text\n" },
	{ "dump", "usage: dstack dump [-i FILE|-]\n"
		  "Every record: file offset, type, size and fields (like perf report -D).\n"
		  "  -i, --input FILE|-   input (default perf.data; - for stdin)\n"
		  "  -h, --help           this text\n" },
	{ "inject", "usage: dstack inject --merge|--jit [-i IN|-] [-o OUT|-]\n"
		    "Rewrite a recording with classic callchains (the stitched user part in place,\n"
		    "deferred records dropped), for readers older than Linux 6.19's perf.\n"
		    "  --merge              the rewrite (done in either mode)\n"
		    "  -j, --jit            also as perf inject --jit: each jitdump's code written as\n"
		    "                       jitted-PID-N.so beside the dump (under --symfs), mapped by MMAP2s\n"
		    "  -i, --input IN|-     input (default stdin)\n"
		    "  -o, --output OUT|-   output (default stdout, not a terminal)\n"
		    "  --symfs DIR, --kallsyms FILE  binaries (and jitdumps) under DIR, kernel symbols\n"
		    "  -h, --help           this text\n" },
	{ "record", "usage: dstack record [OPTIONS] [--] CMD ARGS... | -a | -p PID | -t TID\n"
		    "Record a profile (deferred user callchains where the kernel has them).\n"
		    "  -o, --output FILE|-  output (default perf.data; - for a pipe-mode stream)\n"
		    "  -e, --event EV,...   cycles, instructions, cache-misses, branch-misses, cpu-clock,\n"
		    "                       task-clock, page-faults, context-switches, cpu-migrations\n"
		    "  -c, --count N        sample every N events\n"
		    "  -F, --freq HZ        sample HZ times a second\n"
		    "  -g                   frame-pointer callchains\n"
		    "  --call-graph fp[,defer]|dwarf[,SIZE]\n"
		    "                       fp,defer: deferred user callchains (Linux 6.19+), else fp;\n"
		    "                       dwarf: user stack copies (SIZE bytes, default 8192) unwound later\n"
		    "  --user-regs REG,...  user registers to record (with dwarf or --stack-snapshot)\n"
		    "  --stack-snapshot SIZE  with fp,defer: also a SIZE-byte stack copy, unwound for the\n"
		    "                       samples whose deferred callchain never arrives\n"
		    "  --off-cpu            also sched:sched_switch samples (off-CPU time, see --off-cpu\n"
		    "                       in report/folded/flamegraph/pprof/speedscope)\n"
		    "  -a, --all-cpus       every CPU\n"
		    "  -p, --pid PID        an existing process\n"
		    "  -t, --tid TID        an existing thread\n"
		    "  -C, --cpu CPUS       only these CPUs (0-3,6); without -p/-t every task on them\n"
		    "  --no-inherit         do not follow the tasks the targets create\n"
		    "  -q, --quiet          errors only\n"
		    "  -v, --verbose        the events as opened\n"
		    "  -m, --mmap-pages N   ring buffer pages per CPU (a power of two)\n"
		    "  --defer-grace MS     after stopping, wait up to MS ms for pending deferred\n"
		    "                       callchains (default 100)\n"
		    "  -h, --help           this text\n" },
};

/* perf's options that dstack does not have, by command: refused by name, not by a usage dump */
static const char *const perf_only_report[] = {
	"-v", "--verbose", "-D", "--dump-raw-trace", "--show-cpu-utilization",
	"-T", "--threads", "-f", "--force", "-m", "--modules", "-d",
	"--symbol-filter", "-F", "--fields", "-p", "--parent", "-x",
	"--exclude-other", "-b", "--branch-stack", "--branch-history", "--group", "--full-source-path", "--objdump", "--demangle-kernel", "--mem-mode",
	"--ns", "--ignore-callees", "-M", "--disassembler-style", "--raw-trace", "--socket-filter", "--samples",
	"--tasks", "--mmaps", "--itrace", "--switch-on", "--switch-off",
	"--show-on-off-events", "--stitch-lbr", "--disable-order", "--total-cycles", "--tui", "--gtk",
	"-I", "--show-info", "-w", "--column-widths", "-t", "--field-separator",
	"--vmlinux", "--ignore-vmlinux", "--show-ref-call-graph", "--no-children-sort",
	"--socket", "--cgroup", "--sort-by", "--hierarchy", "--no-hierarchy", "--latency", "--dump-hierarchy",
};
static const char *const perf_only_record[] = {
	"-R", "--raw-samples", "-d", "--data", "-T", "--timestamp", "-P", "--period",
	"-n", "--no-samples", "-N", "--no-buildid-cache", "-B", "--no-buildid", "-G", "--cgroup", "-u",
	"--uid", "-b", "--branch-any", "-j", "--branch-filter", "-W", "--weight", "--namespaces",
	"--all-cgroups", "--transaction", "--per-thread", "-D", "--delay", "-I", "--intr-regs",
	"--running-time", "-k", "--clockid", "-S", "--snapshot", "--aux-sample",
	"--proc-map-timeout", "--switch-events", "--vmlinux", "--buildid-all", "--buildid-mmap",
	"--mmap-flush", "-z", "--compression-level", "--max-size", "--switch-output",
	"--switch-max-files", "--timestamp-filename", "--timestamp-boundary", "--affinity", "--overwrite",
	"--strict-freq", "--kernel-callchains", "--user-callchains", "--sample-cpu", "--sample-identifier",
	"--phys-data", "--data-page-size", "--code-page-size", "--setup-filter", "--control",
	"-s", "--stat", "-i", "--tail-synthesize",
	"--no-bpf-event", "--kcore", "--threads", "--debuginfod", "--synth", "--all-kernel", "--all-user",
	"--filter", "--exclude-perf", "-r", "--realtime", "--no-buffering", "--group", "--sample-mem-info",
};
static const char *const perf_only_inject[] = {
	"-b", "--build-ids", "--buildid-all", "--known-build-ids", "-s", "--sched-stat", "-v", "--verbose",
	"--itrace", "--strip", "-f", "--force", "--vm-time-correlation", "--guest-data",
	"--vmlinux", "--kallsyms-path", "--convert-callchain",
};

static const struct {
	const char *cmd;
	const char *const *opts;
	size_t nr;
} perf_only[] = {
	{ "report", perf_only_report, sizeof(perf_only_report) / sizeof(*perf_only_report) },
	{ "record", perf_only_record, sizeof(perf_only_record) / sizeof(*perf_only_record) },
	{ "inject", perf_only_inject, sizeof(perf_only_inject) / sizeof(*perf_only_inject) },
};

static bool in_options(const char *arg, const char *const *opts, size_t nr)
{
	size_t n = strcspn(arg, "=");

	for (size_t i = 0; i < nr; i++)
		if (strlen(opts[i]) == n && !strncmp(arg, opts[i], n))
			return true;
	return false;
}

/*
 * -h/--help, and perf's options dstack lacks, for @cmd before it parses:
 * options only, up to "--" (and to record's command).  Returns -1 to go
 * on, else the exit status.
 */
static int pre_parse(const char *cmd, int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--") || (!strcmp(cmd, "record") && a[0] != '-'))
			break;
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			for (size_t k = 0; k < sizeof(help_texts) / sizeof(*help_texts); k++)
				if (!strcmp(cmd, help_texts[k].cmd)) {
					fputs(help_texts[k].text, stdout);
					return fflush(stdout) || ferror(stdout) ? EXIT_INPUT : EXIT_OK;
				}
			return -1;   /* the command's own help */
		}
		for (size_t k = 0; k < sizeof(perf_only) / sizeof(*perf_only); k++)
			if (!strcmp(cmd, perf_only[k].cmd) && in_options(a, perf_only[k].opts, perf_only[k].nr)) {
				usage_error(cmd, "not supported: %s (a perf %s option dstack does not have; see dstack %s --help)",
					    a, cmd, cmd);
				return EXIT_USAGE;
			}
	}
	return -1;
}

const char *opt_value(const char *name, int argc, char **argv, int *i)
{
	size_t n = strlen(name);
	const char *a = argv[*i];

	if (strncmp(a, name, n))
		return NULL;
	if (a[n] == '=')
		return a + n + 1;
	if (a[n] && n == 2 && name[1] != '-')
		return a + n;   /* a short option's attached value, as perf takes it: -F+period, -c100000 */
	if (a[n])
		return NULL;
	if (*i + 1 >= argc) {
		usage_error(argv[0], "option %s needs a value", name);
		exit(EXIT_USAGE);
	}
	return argv[++*i];
}

const char *cli_debuginfod;
static bool cli_no_debuginfod;

const char *cli_debuginfod_urls(void)
{
	const char *env = getenv("DEBUGINFOD_URLS");

	if (cli_no_debuginfod)
		return NULL;
	if (cli_debuginfod && *cli_debuginfod)
		return cli_debuginfod;
	return env && *env ? env : NULL;
}

const char *cli_buildid_dir(void)
{
	static char buf[4096];
	const char *dir = getenv("PERF_BUILDID_DIR"), *home = getenv("HOME");
	int n;

	if (dir && *dir)
		return dir;
	if (!home || !*home)
		return NULL;
	n = snprintf(buf, sizeof(buf), "%s/.debug", home);
	return n > 0 && (size_t)n < sizeof(buf) ? buf : NULL;
}

const char *cli_debuginfod_cache(void)
{
	static char buf[4096];

	return ds_debuginfod__cache_dir(getenv("DEBUGINFOD_CACHE_PATH"), getenv("XDG_CACHE_HOME"), getenv("HOME"),
					buf, sizeof(buf));
}

size_t cli_budget(void)
{
	size_t b = cli_memory_budget();

	return b ? b : DS_DEFAULT_MEMORY_BUDGET;
}

size_t cli_memory_budget(void)
{
	static bool warned;
	const char *v = getenv("DSTACK_MEMORY_BUDGET");
	char *end;
	unsigned long long n;

	if (!v || !*v)
		return 0;
	errno = 0;
	n = strtoull(v, &end, 10);
	switch (*end) {
	case 'G': case 'g': n <<= 10; /* fall through */
	case 'M': case 'm': n <<= 10; /* fall through */
	case 'K': case 'k': n <<= 10; end++; break;
	default: break;
	}
	if (errno || *end || n < 4096 || n > (1ULL << 40)) {
		if (!warned)
			ds_warn("DSTACK_MEMORY_BUDGET=%s is not a size from 4K to 1T: using 64 MiB\n", v);
		warned = true;
		return 0;
	}
	return (size_t)n;
}

int common_opt(struct common_opts *o, int argc, char **argv, int *i)
{
	const char *v;

	/* --debuginfod alone takes no value: the next argument is not its URLS */
	if (!strcmp(argv[*i], "--debuginfod") || !strncmp(argv[*i], "--debuginfod=", 13)) {
		cli_debuginfod = argv[*i][12] ? argv[*i] + 13 : "";
		cli_no_debuginfod = false;
		return 1;
	}
	if (!strcmp(argv[*i], "-q") || !strcmp(argv[*i], "--quiet")) {
		cli_quiet = true;   /* no progress line */
		return 1;
	}
	if (!strcmp(argv[*i], "--no-debuginfod")) {
		cli_debuginfod = NULL;
		cli_no_debuginfod = true;
		return 1;
	}
	if ((v = opt_value("-i", argc, argv, i)) || (v = opt_value("--input", argc, argv, i))) {
		o->input = v;
		return 1;
	}
	if ((v = opt_value("--symfs", argc, argv, i))) {
		o->symfs = v;
		return 1;
	}
	if ((v = opt_value("--kallsyms", argc, argv, i)) || (v = opt_value("-k", argc, argv, i))) {
		o->kallsyms = v;
		return 1;
	}
	return 0;
}

void usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "dstack %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
}

/*
 * The heap in transparent huge pages, where the kernel has them
 * ("madvise" mode; "always" does this anyway, "never" ignores it).
 *
 * Fresh pages are what a short run pays for most, and in a VM faulting in
 * 4 KiB pages one by one costs far more than the few 2 MiB huge pages
 * that hold the same bytes: a run takes a few faults where it took
 * thousands, for a little more peak RSS (docs/performance.md).
 *
 * glibc's own switch for this (the glibc.malloc.hugetlb tunable) is read
 * from the environment at start-up only, so the same is done here with
 * mallopt: one arena for every thread (a thread's own arena would not be
 * advised; dstack's threads allocate rarely, so the shared lock costs
 * nothing measurable), the heap grown 32 MiB at a time, and the heap just
 * made advised.  Blocks up to 8 MiB come from it too, not from mappings
 * of their own (glibc's default above 128 KiB): those were in 4 KiB pages,
 * and populating them (the callchain arena, the report's growing hash
 * tables, the kallsyms buffer) cost many times what the same bytes cost
 * in the heap's huge pages.  Freed tables stay in the heap.
 * Only touched huge pages are resident: the pad costs address space.
 * Later growth and a heap glibc placed elsewhere (sanitizers) are left as
 * they are: all of this is a hint.
 */
static void *skip_hole;   /* kept: see skip_unaligned_head */

/*
 * Only whole aligned 2 MiB of the heap can be a huge page, and the heap
 * starts wherever the program's data ended: the first blocks fell in the
 * 4 KiB pages below the first boundary, each to fault and to tear down at
 * exit (docs/performance.md).  A block that spans them is taken, never
 * touched beyond its header and never freed: it costs address space, not
 * memory.
 */
static void skip_unaligned_head(uintptr_t huge, uintptr_t limit)
{
	void *first = malloc(1);
	uintptr_t at, gap, brk_now = (uintptr_t)sbrk(0);

	if (!first)
		return;
	at = (uintptr_t)first;
	gap = ((at + huge - 1) & ~(huge - 1)) - at;
	free(first);
	/* not in the brk heap (a sanitizer's allocator): left alone; what
	 * malloc adds to a block (its header, alignment) stays on this side */
	if (at <= brk_now && brk_now - at <= limit && gap > (64u << 10))
		skip_hole = malloc(gap - 64);
}

static void heap_in_huge_pages(void)
{
	const uintptr_t limit = 64u << 20, pad = 32u << 20, huge = 2u << 20;
	uintptr_t page, from, to;
	void *volatile probe[8];   /* volatile: the malloc/free pairs must not be optimised away */
	size_t nr;

	mallopt(M_ARENA_MAX, 1);
	mallopt(M_TOP_PAD, (int)pad);
	mallopt(M_MMAP_THRESHOLD, 8 << 20);
	skip_unaligned_head(huge, limit);
	/*
	 * Grow the heap, with the pad beyond: the first block does it when
	 * there is no heap yet; in a static build the C library made one
	 * already, and blocks are taken until it grows (a few).
	 */
	from = to = 0;
	page = (uintptr_t)sysconf(_SC_PAGESIZE);
	for (nr = 0; nr < sizeof(probe) / sizeof(*probe);) {
		void *p = malloc(nr ? 64u << 10 : 1);

		if (!p)
			break;
		probe[nr++] = p;
		if (!from)
			from = (uintptr_t)p / page * page;
		to = (uintptr_t)sbrk(0);
		if (to - from >= pad)
			break;
	}
	if (to > from && to - from <= limit)
		madvise((void *)from, to - from, MADV_HUGEPAGE);
	while (nr-- > 0)
		free(probe[nr]);
}

int main(int argc, char **argv)
{
	heap_in_huge_pages();
	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") ||
	    (!strcmp(argv[1], "help") && argc == 2)) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? EXIT_USAGE : fflush(stdout) || ferror(stdout) ? EXIT_INPUT : EXIT_OK;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
		printf("dstack %s (reads and prints perf.data as perf 7.2 does)\n", DSTACK_VERSION);
		return fflush(stdout) || ferror(stdout) ? EXIT_INPUT : EXIT_OK;
	}
	if (!strcmp(argv[1], "help")) {   /* dstack help COMMAND: COMMAND --help */
		static char help_opt[] = "--help";
		static char *args[4];

		args[0] = argv[0];
		args[1] = argv[2];
		args[2] = help_opt;
		argc = 3;
		argv = args;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(*commands); i++)
		if (!strcmp(argv[1], commands[i].name)) {
			int ret = pre_parse(argv[1], argc - 1, argv + 1);

			if (ret >= 0)
				return ret;
			output_begin(commands[i].name);
			return output_end(commands[i].fn(argc - 1, argv + 1));
		}
	fprintf(stderr, "dstack: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return EXIT_USAGE;
}
