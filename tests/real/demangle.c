// SPDX-License-Identifier: MIT
/*
 * tests/suites/90-real.sh: C++ names, one a line on stdin, demangled one a
 * line on stdout ("-" where a name does not demangle): by dstack's C++
 * demangler, or, built with -DORACLE, by the __cxa_demangle of the
 * libstdc++ it runs with (run in the guest's root: perf 7.2's).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef ORACLE
char *__cxa_demangle(const char *mangled, char *buf, size_t *n, int *status);

static char *demangle(const char *s)
{
	int status = -1;
	char *dm = __cxa_demangle(s, NULL, NULL, &status);

	if (dm && status == 0)
		return dm;
	free(dm);
	return NULL;
}
#else
#include "symbols/symbols_int.h"

static char *demangle(const char *s)
{
	return dsi_demangle_cxx(s);
}
#endif

int main(void)
{
	static char line[1 << 16];

	while (fgets(line, sizeof(line), stdin)) {
		char *dm;

		line[strcspn(line, "\n")] = 0;
		dm = demangle(line);
		printf("%s\n", dm ? dm : "-");
		free(dm);
	}
	return fflush(stdout) ? 1 : 0;
}
