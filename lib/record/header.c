// SPDX-License-Identifier: MIT
/*
 * A recording's header as perf record writes it: the recorder's events
 * (attrs, ids, names) and the features that describe the machine and the
 * command (dstack/recorder.h: ds_recorder__write_header).  Everything goes
 * through the writer, whose checks (sizes, E2BIG) apply.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/utsname.h>
#include "dstack/recorder.h"
#include "dstack/writer.h"
#include "util/error.h"

static int write_attrs(struct ds_writer *w, const struct ds_recorder *r)
{
	int ret = 0;

	for (size_t i = 0; i < ds_recorder__nr_attrs(r) && !ret; i++) {
		const struct ds_attr *attr;
		uint32_t size;
		const uint64_t *ids;
		size_t nr;
		const char *name;

		ds_recorder__attr(r, i, &attr, &size, &ids, &nr, &name);
		ret = ds_writer__add_attr(w, attr, size, ids, nr, name);
	}
	return ret;
}

/* The CPU's model name from /proc/cpuinfo into @desc ("" if none). */
static void cpu_desc(char *desc, size_t size)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[512];

	desc[0] = 0;
	while (f && fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');

		if (colon && !strncmp(line, "model name", 10)) {
			snprintf(desc, size, "%s", colon + 2);
			desc[strcspn(desc, "\n")] = 0;
			break;
		}
	}
	if (f)
		fclose(f);
}

/* CMDLINE: perf writes its own name first, then the words it was given. */
static int write_cmdline(struct ds_writer *w, int argc, const char *const *argv)
{
	const char **words = malloc(((size_t)(argc > 0 ? argc : 0) + 1) * sizeof(*words));
	int ret;

	if (!words)
		return dsi_error(-ENOMEM, "out of memory");
	words[0] = "dstack";
	for (int i = 0; i < argc; i++)
		words[i + 1] = argv[i];
	ret = ds_writer__feature_cmdline(w, (argc > 0 ? argc : 0) + 1, words);
	free(words);
	return ret;
}

static int write_host_features(struct ds_writer *w, int argc, const char *const *argv)
{
	struct utsname u;
	char host[256] = "", desc[256];
	long online = sysconf(_SC_NPROCESSORS_ONLN), conf = sysconf(_SC_NPROCESSORS_CONF);
	bool have_uname = uname(&u) == 0;
	int ret = 0;

	if (have_uname) {
		ret = ds_writer__feature_string(w, DS_FEAT_OSRELEASE, u.release);
		if (!ret)
			ret = ds_writer__feature_string(w, DS_FEAT_ARCH, u.machine);
	}
	if (!ret && gethostname(host, sizeof(host) - 1) == 0)
		ret = ds_writer__feature_string(w, DS_FEAT_HOSTNAME, host);
	if (!ret)
		ret = ds_writer__feature_nrcpus(w, (uint32_t)(conf > 0 ? conf : 1), (uint32_t)(online > 0 ? online : 1));
	cpu_desc(desc, sizeof(desc));
	if (!ret && (desc[0] || have_uname))
		ret = ds_writer__feature_string(w, DS_FEAT_CPUDESC, desc[0] ? desc : u.machine);
	if (!ret)
		ret = write_cmdline(w, argc, argv);
	return ret;
}

int ds_recorder__write_header(const struct ds_recorder *r, struct ds_writer *w, int argc, const char *const *argv)
{
	int ret = write_attrs(w, r), fret = write_host_features(w, argc, argv);

	return ret ? ret : fret;
}
