// SPDX-License-Identifier: MIT
/*
 * dstack dump: every record in file order with its offset, type, size and
 * parsed fields (the role of `perf report -D`, not its text: the
 * library's ds_record__dump_text, dstack/perf_text.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "util/outbuf.h"
#include "dstack/log.h"
#include "dstack/perf_text.h"
#include "dstack/reader.h"

int cmd_dump(int argc, char **argv)
{
	struct common_opts co = { .input = "perf.data" };
	struct ds_record rec;
	int ret;

	for (int i = 1; i < argc; i++) {
		if (common_opt(&co, argc, argv, &i))
			continue;
		usage_error("dump", "unknown option '%s' (usage: dstack dump [-i FILE])", argv[i]);
		return EXIT_USAGE;
	}
	struct ds_reader *r = ds_reader__open(co.input);
	const char *last_file = NULL;
	size_t cap = 4096;
	char *text;

	if (!r) {
		fprintf(stderr, "dstack dump: %s\n", ds_errmsg());
		return EXIT_INPUT;
	}
	if (!(text = malloc(cap))) {
		fprintf(stderr, "dstack dump: out of memory\n");
		ds_reader__close(r);
		return EXIT_INPUT;
	}
	for (size_t i = 0; i < ds_reader__nr_evsels(r); i++) {
		struct ds_evsel *e = ds_reader__evsel(r, i);

		printf("# event %zu: type %u config %#llx sample_type %#llx flags %#llx ids %zu\n", i,
		       e->attr.type, (unsigned long long)e->attr.config, (unsigned long long)e->attr.sample_type,
		       (unsigned long long)e->attr.flags, e->nr_ids);
	}
	while ((ret = ds_reader__next(r, &rec)) == 1) {
		uint64_t off = rec.offset;
		const char *file = ds_reader__locate(r, &off);
		size_t n;

		if (file != last_file && ds_reader__info(r)->dir)   /* a directory's records: each file's own offsets */
			printf("# %s\n", file);
		last_file = file;
		while ((n = ds_record__dump_text(r, &rec, text, cap)) >= cap) {   /* a long chain: a larger buffer */
			char *grown = realloc(text, n + 1);

			if (!grown)
				break;
			text = grown;
			cap = n + 1;
		}
		fwrite(text, 1, n < cap ? n : cap - 1, stdout);
		if (ferror(stdout)) {   /* a full disk or closed pipe: stop, do not read on for nothing */
			output_failed("stdout", errno);
			break;
		}
	}
	if (fflush(stdout))
		output_failed("stdout", errno);
	if (ret < 0)
		fprintf(stderr, "dstack dump: %s\n", ds_errmsg());   /* the reader's: nothing failed since */
	ds_reader__close(r);
	free(text);
	return ret < 0 ? EXIT_INPUT : EXIT_OK;
}
