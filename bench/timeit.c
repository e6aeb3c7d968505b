// SPDX-License-Identifier: MIT
/*
 * timeit N CMD [ARGS...]: run CMD N times with stdout and stderr to
 * /dev/null; print "median_s min_s max_rss_kib" of the wall time of each
 * run (fork to wait4) and the largest peak RSS (ru_maxrss).
 *
 * The bench used to time `date; /usr/bin/time CMD; date`, whose own
 * processes (~5 ms) went into every row: small next to perf's 0.3 s, not
 * next to dstack's 0.04 s.  This measures the command and nothing else.
 */
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
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
		execvp(argv[0], argv);
		_exit(127);
	}
	if (wait4(pid, &status, 0, &ru) != pid)
		return false;
	*secs = now() - start;
	*rss_kib = ru.ru_maxrss;
	return !(WIFEXITED(status) && WEXITSTATUS(status) == 127);
}

int main(int argc, char **argv)
{
	int n = argc > 2 ? atoi(argv[1]) : 0;
	double *t;
	long rss = 0;

	if (n < 1) {
		fprintf(stderr, "usage: timeit N CMD [ARGS...]\n");
		return 2;
	}
	t = calloc((size_t)n, sizeof(*t));
	if (!t)
		return 1;
	for (int i = 0; i < n; i++) {
		long r;

		if (!run_once(argv + 2, &t[i], &r)) {
			fprintf(stderr, "timeit: cannot run %s\n", argv[2]);
			return 1;
		}
		if (r > rss)
			rss = r;
	}
	qsort(t, (size_t)n, sizeof(*t), cmp_double);
	/* the median of an even count: the lower middle, as the shell version did */
	printf("%.4f %.4f %ld\n", t[(n - 1) / 2], t[0], rss);
	free(t);
	return 0;
}
