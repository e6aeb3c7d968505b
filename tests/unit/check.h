/* SPDX-License-Identifier: MIT */
/*
 * The unit tests' check: CHECK(cond, fmt, ...) counts a pass, or counts a
 * failure and prints "FAIL file:line: " and the message.  For the test
 * programs of tests/unit only, each including it once: the counters
 * (passed, failed) are that program's own, read by its main for the
 * summary line tests/run.sh reads ("N passed, M failed") and its status.
 */
#ifndef DSTACK_TEST_CHECK_H
#define DSTACK_TEST_CHECK_H

#include <stdio.h>

static int passed, failed;

#define CHECK(cond, ...) do { \
	if (cond) { \
		passed++; \
	} else { \
		failed++; \
		printf("FAIL %s:%d: ", __FILE__, __LINE__); \
		printf(__VA_ARGS__); \
		printf("\n"); \
	} \
} while (0)

#endif
