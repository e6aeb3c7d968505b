// SPDX-License-Identifier: MIT
/*
 * timeit N CMD [ARGS...]: run CMD N times with stdout and stderr to
 * /dev/null; print "median_s min_s max_rss_kib" of the wall time of each
 * run (fork to wait4) and the largest peak RSS (ru_maxrss).  Leading
 * NAME=VALUE words are set in the command's environment.
 *
 * timeit N1 CMD1... :: N2 CMD2... : the runs of both interleaved in
 * proportion (one line each, in order), so that a slow minute of this VM
 * (+-20% for seconds at a time) falls on both sides of a ratio, not one.
 *
 * The bench used to time `date; /usr/bin/time CMD; date`, whose own
 * processes (~5 ms) went into every row: small next to perf's 0.3 s, not
 * next to dstack's 0.04 s.  This measures the command and nothing else.
 */
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/wait.h>

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* One run: its wall time in *@secs, its peak RSS in *@rss_kib; false if it failed to run. */
static bool run_once(char **argv, double *secs, long *rss_kib)
{
	struct rusage ru;
	int status;
	double start = now();
	pid_t pid = fork();

	if (pid < 0)
		return false;
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(null, STDOUT_FILENO);
		dup2(null, STDERR_FILENO);
		/* leading NAME=VALUE words set the command's environment (no env(1) exec timed) */
		for (; argv[0] && strchr(argv[0], '=') && argv[0][0] != '/'; argv++)
			putenv(argv[0]);
		execvp(argv[0], argv);
		_exit(127);
	}
	if (wait4(pid, &status, 0, &ru) != pid)
		return false;
	*secs = now() - start;
	*rss_kib = ru.ru_maxrss;
	return !(WIFEXITED(status) && WEXITSTATUS(status) == 127);
}

struct cmd {
	char **argv;       /* NULL-terminated (its "::" replaced) */
	int n, done;
	double *t;
	long rss;
};

/* Split "N CMD ARGS [:: N CMD ARGS]..." into @c; the count of commands, 0 if malformed. */
static int parse_cmds(int argc, char **argv, struct cmd *c, int max)
{
	int nr = 0;

	for (int i = 1; i < argc;) {
		if (nr == max || i + 1 >= argc || atoi(argv[i]) < 1)
			return 0;
		c[nr] = (struct cmd){ .n = atoi(argv[i]), .argv = argv + i + 1 };
		c[nr].t = calloc((size_t)c[nr].n, sizeof(double));
		if (!c[nr].t)
			return 0;
		for (i += 2; i < argc && strcmp(argv[i], "::"); i++)
			;
		if (i < argc)
			argv[i++] = NULL;   /* the separator ends this command's argv */
		nr++;
	}
	return nr;
}

int main(int argc, char **argv)
{
	struct cmd c[8];
	int nr = parse_cmds(argc, argv, c, 8), total = 0;

	if (!nr) {
		fprintf(stderr, "usage: timeit N CMD [ARGS...] [:: N CMD [ARGS...]]...\n"
				"  (several commands: their runs interleaved, one line each)\n");
		return 2;
	}
	for (int i = 0; i < nr; i++)
		total += c[i].n;
	for (int s = 0; s < total; s++) {
		int k = -1;

		/* the command furthest behind its share, so all see the same minutes */
		for (int i = 0; i < nr; i++)
			if (c[i].done < c[i].n &&
			    (k < 0 || (c[i].done + 0.5) / c[i].n < (c[k].done + 0.5) / c[k].n))
				k = i;
		long r;

		if (!run_once(c[k].argv, &c[k].t[c[k].done], &r)) {
			fprintf(stderr, "timeit: cannot run %s\n", c[k].argv[0]);
			return 1;
		}
		if (r > c[k].rss)
			c[k].rss = r;
		c[k].done++;
	}
	for (int i = 0; i < nr; i++) {
		qsort(c[i].t, (size_t)c[i].n, sizeof(double), cmp_double);
		/* the median of an even count: the lower middle, as the shell version did */
		printf("%.4f %.4f %ld\n", c[i].t[(c[i].n - 1) / 2], c[i].t[0], c[i].rss);
		free(c[i].t);
	}
	return 0;
}
