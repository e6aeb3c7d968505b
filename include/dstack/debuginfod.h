/* SPDX-License-Identifier: MIT */
/*
 * dstack debuginfod: debug files of sampled binaries fetched by build-id
 * from debuginfod servers, into libdebuginfod's own cache, where the
 * symbols look for them (ds_symbols_opts.debuginfod_cache).
 *
 * Through Debian's libdebuginfod, by its command-line client
 * (debuginfod-find, package "debuginfod"): the dstack command is linked
 * statically and libdebuginfod is shipped as a shared object only (with
 * libcurl behind it); loading it with dlopen into a static program would
 * bring a second C library into the process.  A client process per
 * build-id also bounds each fetch: it is killed at its deadline, so a
 * server that never answers cannot hang a profile.
 *
 * The cache is libdebuginfod's: $DEBUGINFOD_CACHE_PATH, else
 * $XDG_CACHE_HOME/debuginfod_client, else ~/.cache/debuginfod_client,
 * a file per build-id at CACHE/HEX/debuginfo (shared with gdb, perf and
 * every other libdebuginfod client).  A build-id found there is taken
 * without any request.
 */
#ifndef DSTACK_DEBUGINFOD_H
#define DSTACK_DEBUGINFOD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ds_debuginfod_opts {
	const char *urls;         /* servers, space-separated as DEBUGINFOD_URLS */
	const char *cache_dir;    /* NULL: no cache (each build-id asked of the servers) */
	const char *path;         /* where debuginfod-find is looked for, as $PATH; NULL: /usr/bin:/bin */
	unsigned timeout_s;       /* per fetch; 0: 10 s */
	unsigned jobs;            /* fetches at once; 0: 4 */
};

enum ds_debuginfod_result {
	DS_DI_NOT_ASKED,          /* not needed, or not tried */
	DS_DI_CACHED,             /* in the cache already: no request */
	DS_DI_FETCHED,
	DS_DI_NOT_FOUND,          /* the servers do not know the build-id */
	DS_DI_FAILED,             /* no answer: unreachable, refused, timed out */
};

struct ds_debuginfod_req {
	const char *path;         /* the binary as recorded (for messages) */
	const uint8_t *build_id;
	size_t bid_len;
	/* out */
	enum ds_debuginfod_result result;
	char why[160];            /* DS_DI_FAILED/NOT_FOUND: the client's reason */
	uint64_t size;            /* bytes of the debug file (CACHED, FETCHED) */
};

/*
 * libdebuginfod's cache directory (see above) from the environment's
 * values, which the program reads (the library reads no environment):
 * @cache_path ($DEBUGINFOD_CACHE_PATH) itself, else in @buf of @size
 * bytes; NULL when none of them is set (or the path does not fit).
 */
const char *ds_debuginfod__cache_dir(const char *cache_path, const char *xdg_cache_home, const char *home,
				     char *buf, size_t size);

/*
 * Whether the binary at @root/@path (root NULL: none) lacks what a debug
 * file gives (a .symtab or DWARF) and has no installed one
 * (/usr/lib/debug/.build-id/..): false when it is complete, or missing.
 */
bool ds_debuginfod__wanted(const char *root, const char *path, const uint8_t *build_id, size_t bid_len);

/*
 * Get the debug files of @reqs: each from the cache, else asked of the
 * servers, @o->jobs at once, each within @o->timeout_s (the client is
 * killed after it, with a margin).  Each request's result says what came
 * of it (the caller prints it: nothing is logged here).  0, or -errno when
 * no fetch could start at all (no client: every request FAILED with the
 * reason).
 */
int ds_debuginfod__fetch(const struct ds_debuginfod_opts *o, struct ds_debuginfod_req *reqs, size_t n);

#endif
