// SPDX-License-Identifier: MIT
/* Debug files by build-id from debuginfod servers (include/dstack/debuginfod.h). */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "dstack/debuginfod.h"

extern char **environ;

#define DEFAULT_TIMEOUT_S 10
#define DEFAULT_JOBS 4
/* what the client gets past its own timeout before it is killed: its start, the cache write */
#define KILL_MARGIN_NS 5000000000ULL

const char *ds_debuginfod__cache_dir(const char *cache_path, const char *xdg_cache_home, const char *home,
				     char *buf, size_t size)
{
	int n;

	if (cache_path && *cache_path)
		return cache_path;
	if (xdg_cache_home && *xdg_cache_home == '/')
		n = snprintf(buf, size, "%s/debuginfod_client", xdg_cache_home);
	else if (home && *home == '/')
		n = snprintf(buf, size, "%s/.cache/debuginfod_client", home);
	else
		return NULL;
	return n > 0 && (size_t)n < size ? buf : NULL;
}

static void hex(char *out, const uint8_t *b, size_t n)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[b[i] >> 4];
		out[2 * i + 1] = digits[b[i] & 15];
	}
	out[2 * n] = 0;
}

static bool has_section(Elf *elf, const char *name, Elf64_Word type)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return false;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		if (type != SHT_NULL && sh.sh_type == type)
			return true;
		if (name && (n = elf_strptr(elf, shstrndx, sh.sh_name)) && !strcmp(n, name))
			return true;
	}
	return false;
}

bool ds_debuginfod__wanted(const char *root, const char *path, const uint8_t *build_id, size_t bid_len)
{
	char file[4096], id[2 * 64 + 1];
	bool complete;
	int fd;
	Elf *elf;

	if (!bid_len || bid_len > 64 || !path || path[0] != '/')
		return false;
	root = root ? root : "";
	hex(id, build_id, bid_len);
	/* an installed debug file is what the symbols take first */
	if (snprintf(file, sizeof(file), "%s/usr/lib/debug/.build-id/%.2s/%s.debug", root, id, id + 2) <
		    (int)sizeof(file) && !access(file, R_OK))
		return false;
	if (snprintf(file, sizeof(file), "%s%s", root, path) >= (int)sizeof(file) ||
	    (fd = open(file, O_RDONLY | O_CLOEXEC)) < 0)
		return false;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	complete = elf && elf_kind(elf) == ELF_K_ELF && has_section(elf, NULL, SHT_SYMTAB) &&
		   has_section(elf, ".debug_info", SHT_NULL);
	/* not an ELF file at all: no debug file would help */
	bool wanted = elf && elf_kind(elf) == ELF_K_ELF && !complete;

	if (elf)
		elf_end(elf);
	close(fd);
	return wanted;
}

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

/* The size of CACHE/HEX/debuginfo; 0 when absent or empty (libdebuginfod's mark of a miss). */
static uint64_t cached_size(const char *cache, const char *id)
{
	char file[4096];
	struct stat st;

	if (!cache || snprintf(file, sizeof(file), "%s/%s/debuginfo", cache, id) >= (int)sizeof(file) ||
	    stat(file, &st) || !S_ISREG(st.st_mode))
		return 0;
	return (uint64_t)st.st_size;
}

struct job {
	pid_t pid;
	int out;                  /* memfd: the client's stderr */
	uint64_t deadline;
	size_t req;
};

/* The environment of the client: ours with the servers, cache and timeout set. */
static char **client_env(const struct ds_debuginfod_opts *o, const char *cache, unsigned timeout_s)
{
	size_t n = 0, k = 0;
	char **env;

	while (environ[n])
		n++;
	env = calloc(n + 4, sizeof(*env));
	if (!env)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "DEBUGINFOD_URLS=", 16) && strncmp(environ[i], "DEBUGINFOD_CACHE_PATH=", 22) &&
		    strncmp(environ[i], "DEBUGINFOD_TIMEOUT=", 19) && strncmp(environ[i], "DEBUGINFOD_PROGRESS=", 20))
			env[k++] = environ[i];
	if (asprintf(&env[k++], "DEBUGINFOD_URLS=%s", o->urls) < 0 ||
	    asprintf(&env[k++], "DEBUGINFOD_CACHE_PATH=%s", cache) < 0 ||
	    asprintf(&env[k++], "DEBUGINFOD_TIMEOUT=%u", timeout_s) < 0) {
		free(env);
		return NULL;
	}
	env[k] = NULL;
	return env;
}

static void free_env(char **env)
{
	size_t n = 0;

	if (!env)
		return;
	while (env[n])
		n++;
	for (size_t i = n >= 3 ? n - 3 : 0; i < n; i++)
		free(env[i]);
	free(env);
}

/* debuginfod-find's path, found on @path (as $PATH) before any fork (the child may only exec). */
static int find_client(const char *path, char *buf, size_t n)
{
	for (const char *p = path ? path : "/usr/bin:/bin"; *p;) {
		const char *colon = strchr(p, ':');
		size_t len = colon ? (size_t)(colon - p) : strlen(p);

		if (len && snprintf(buf, n, "%.*s/debuginfod-find", (int)len, p) < (int)n && !access(buf, X_OK))
			return 0;
		p += len + (colon ? 1 : 0);
	}
	return -ENOENT;
}

/*
 * The client for @id, its stderr into a memfd.  fork, then only
 * async-signal-safe calls in the child (dup2, execve): the process may
 * have threads.
 */
static int start(struct job *j, const char *client, char **env, const char *id)
{
	char *argv[] = { "debuginfod-find", "debuginfo", (char *)id, NULL };
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);

	j->out = memfd_create("debuginfod-find", MFD_CLOEXEC);
	if (j->out < 0 || null < 0) {
		int err = -errno;

		if (j->out >= 0)
			close(j->out);
		if (null >= 0)
			close(null);
		return err;
	}
	j->pid = fork();
	if (j->pid == 0) {
		if (dup2(null, STDIN_FILENO) < 0 || dup2(null, STDOUT_FILENO) < 0 || dup2(j->out, STDERR_FILENO) < 0)
			_exit(126);
		execve(client, argv, env);
		_exit(127);
	}
	close(null);
	if (j->pid < 0) {
		int err = -errno;

		j->pid = 0;
		close(j->out);
		return err;
	}
	return 0;
}

/* The client's last line of stderr, as its reason ("Server query failed: Connection refused"). */
static void reason(int fd, char *why, size_t n)
{
	char buf[1024];
	ssize_t got = pread(fd, buf, sizeof(buf) - 1, 0);
	char *line, *p;

	if (got <= 0) {
		snprintf(why, n, "no reason given");
		return;
	}
	buf[got] = 0;
	while (got > 0 && (buf[got - 1] == '\n' || buf[got - 1] == '\r'))
		buf[--got] = 0;
	line = (p = strrchr(buf, '\n')) ? p + 1 : buf;
	if (!strncmp(line, "Server query failed: ", 21))
		line += 21;
	snprintf(why, n, "%.*s", (int)(n - 1), line);   /* a longer reason is cut */
	for (p = why; *p; p++)
		if ((unsigned char)*p < 0x20)
			*p = '?';
}

static void finish(struct job *j, struct ds_debuginfod_req *r, int status, bool killed, const char *cache,
		   const char *id, unsigned timeout_s)
{
	if (killed) {
		r->result = DS_DI_FAILED;
		snprintf(r->why, sizeof(r->why), "no answer within %u s", timeout_s);
	} else if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && (r->size = cached_size(cache, id))) {
		r->result = DS_DI_FETCHED;
	} else {
		reason(j->out, r->why, sizeof(r->why));
		r->result = strstr(r->why, "No such file") ? DS_DI_NOT_FOUND : DS_DI_FAILED;
		/* libdebuginfod's ETIME, after its retries */
		if (strstr(r->why, "Timer expired"))
			snprintf(r->why, sizeof(r->why), "no answer within %u s (each try)", timeout_s);
		if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
			snprintf(r->why, sizeof(r->why), "debuginfod-find (Debian package debuginfod) cannot be run");
	}
	close(j->out);
	j->pid = 0;
}

/* One ds_debuginfod__fetch(): its requests and the client processes asking for them. */
struct fetch {
	struct ds_debuginfod_req *reqs;
	size_t n;
	const char *cache;
	unsigned timeout_s, jobs;
	struct job *job;                /* jobs slots; pid 0: free */
	char **env;
	char (*ids)[2 * 64 + 1];        /* reqs[i]'s build id in hex */
	char client[4096];
	int no_client;                  /* find_client()'s error: every start fails with it */
	size_t next, running;           /* the next request to start; the clients running */
	int ret;                        /* the first start's error */
};

/* Every request fails (no cache, no server, no memory), saying why; the return of ds_debuginfod__fetch(). */
static int fail_all(const struct ds_debuginfod_opts *o, struct ds_debuginfod_req *reqs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		reqs[i].result = DS_DI_FAILED;
		snprintf(reqs[i].why, sizeof(reqs[i].why), "%s", !o->cache_dir ? "no cache directory (HOME unset)" :
			 !o->urls ? "no server named" : "out of memory");
	}
	return o->cache_dir && o->urls ? -ENOMEM : -EINVAL;
}

/* Each request with a usable build id: its hex id, and DS_DI_CACHED when the cache has it. */
static void look_in_cache(struct fetch *f)
{
	for (size_t i = 0; i < f->n; i++) {
		struct ds_debuginfod_req *r = &f->reqs[i];

		r->result = DS_DI_NOT_ASKED;
		r->why[0] = 0;
		if (!r->bid_len || r->bid_len > 64)
			continue;
		hex(f->ids[i], r->build_id, r->bid_len);
		if ((r->size = cached_size(f->cache, f->ids[i])))
			r->result = DS_DI_CACHED;
	}
}

static struct job *free_job(struct fetch *f)
{
	for (unsigned k = 0; k < f->jobs; k++)
		if (!f->job[k].pid)
			return &f->job[k];
	return NULL;
}

/* Clients for the next requests to ask, while a job slot is free; a client that cannot start fails its request. */
static void start_jobs(struct fetch *f)
{
	while (f->running < f->jobs && f->next < f->n) {
		struct ds_debuginfod_req *r = &f->reqs[f->next];
		struct job *j;
		int err;

		if (!r->bid_len || r->bid_len > 64 || r->result == DS_DI_CACHED) {
			f->next++;
			continue;
		}
		j = free_job(f);
		err = f->no_client ? f->no_client : start(j, f->client, f->env, f->ids[f->next]);
		if (err) {
			r->result = DS_DI_FAILED;
			snprintf(r->why, sizeof(r->why), "debuginfod-find (Debian package debuginfod): %s",
				 strerror(-err));
			f->ret = f->ret ? f->ret : err;
			f->next++;
			continue;
		}
		j->req = f->next++;
		j->deadline = now_ns() + f->timeout_s * 1000000000ULL + KILL_MARGIN_NS;
		f->running++;
	}
}

/* The clients that ended, or are killed now at their deadline: their requests' results. */
static void reap_jobs(struct fetch *f)
{
	for (unsigned k = 0; k < f->jobs; k++) {
		struct job *j = &f->job[k];
		int status = 0;
		bool killed = false;
		pid_t w;

		if (!j->pid)
			continue;
		w = waitpid(j->pid, &status, WNOHANG);
		if (w == 0 && now_ns() > j->deadline) {
			kill(j->pid, SIGKILL);
			w = waitpid(j->pid, &status, 0);
			killed = true;
		}
		if (w == 0 || (w < 0 && errno == EINTR))
			continue;
		finish(j, &f->reqs[j->req], status, killed, f->cache, f->ids[j->req], f->timeout_s);
		f->running--;
	}
}

int ds_debuginfod__fetch(const struct ds_debuginfod_opts *o, struct ds_debuginfod_req *reqs, size_t n)
{
	struct fetch f = {
		.reqs = reqs, .n = n, .cache = o->cache_dir,
		.timeout_s = o->timeout_s ? o->timeout_s : DEFAULT_TIMEOUT_S,
		.jobs = o->jobs ? o->jobs : DEFAULT_JOBS,
	};
	int ret;

	f.job = calloc(f.jobs, sizeof(*f.job));
	f.env = f.cache && o->urls ? client_env(o, f.cache, f.timeout_s) : NULL;
	f.ids = calloc(n ? n : 1, sizeof(*f.ids));
	f.no_client = find_client(o->path, f.client, sizeof(f.client));
	if (!f.job || !f.env || !f.ids) {
		ret = fail_all(o, reqs, n);
	} else {
		look_in_cache(&f);
		/* the client processes, jobs at once; each killed at its deadline */
		for (start_jobs(&f); f.running; start_jobs(&f)) {
			struct timespec tick = { 0, 5000000 };

			nanosleep(&tick, NULL);
			reap_jobs(&f);
		}
		ret = f.ret;
	}
	free(f.job);
	free_env(f.env);
	free(f.ids);
	return ret;
}
