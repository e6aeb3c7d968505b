// SPDX-License-Identifier: MIT
/*
 * dstack diff BASE NEW: what changed between two profiles, as the
 * library's diff computes and writes it (ds_diff, dstack/diff.h); this
 * file parses the options, tells recordings from folded-stacks files,
 * reads both into the diff and picks the output.
 *
 * Each input is a recording (perf.data, file or pipe mode: it starts with
 * "PERFILE2") or a folded-stacks text file ("frame;frame;... count", what
 * `dstack folded`, stackcollapse-perf.pl and inferno write).  Outputs:
 *
 *  - the default output is the report delta: per --sort key, the
 *    baseline %, the new %, their difference and (--children) the
 *    difference of the inclusive percentages, ordered by the size of the
 *    change.  Percentages are of each side's total weight (so a longer
 *    recording of the same work shows no change); --counts prints the
 *    weights themselves;
 *  - --folded prints "stack BASE NEW" per stack, the output of
 *    FlameGraph's difffolded.pl and inferno-diff-folded (-n: BASE scaled
 *    to NEW's total, as difffolded.pl -n), which flamegraph.pl and
 *    inferno-flamegraph draw as a differential flame graph;
 *  - --flamegraph draws that graph itself: frames sized by NEW, red where
 *    the frame's share grew, blue where it shrank (difffolded.pl's
 *    colouring), the numbers on hover, search and zoom as in
 *    `dstack flamegraph`.
 *
 * Weights are sample periods for the report (as perf diff) and sample
 * counts for --folded and --flamegraph (as `dstack folded`), --period and
 * --samples choose otherwise.  Only one event is compared: -e NAME, else
 * the first one sampled in BASE; the samples of other events are counted
 * and said in the header.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "cli.h"
#include "dstack/diff.h"
#include "dstack/export.h"
#include "export_common.h"
#include "util/outbuf.h"

enum mode { M_REPORT, M_FOLDED, M_FLAME };
enum weight { W_DEFAULT, W_PERIOD, W_SAMPLES };

struct diff_cmd {
	struct walk_opts wo;
	enum mode mode;
	enum weight weight;
	unsigned sort;               /* DS_DIFF_SORT_* */
	bool counts, children, normalize;
	const char *event;           /* -e */
	struct ds_diff *d;
};

static int on_sample(void *ctx, const struct ds_profile_sample *s)
{
	return ds_diff__add(ctx, s);
}

static int read_recording(struct diff_cmd *c, const char *path)
{
	struct walk_opts wo = c->wo;

	wo.common.input = path;
	/* stacks as `dstack folded` names them (perf script's comms) where they are compared with it */
	wo.script_comms = c->mode != M_REPORT;
	wo.transient_comms = true;   /* a comm is copied, never kept by pointer */
	return walk_samples("diff", &wo, on_sample, c->d);
}

/* --- folded text --------------------------------------------------------- */

static int read_folded(struct diff_cmd *c, const char *path)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0, lineno = 0;
	long off = 0;
	ssize_t n;
	int ret = EXIT_OK;

	if (!f) {
		fprintf(stderr, "dstack diff: %s: %s\n", path, strerror(errno));
		return EXIT_INPUT;
	}
	while ((n = getline(&line, &cap, f)) > 0) {
		lineno++;
		if (memchr(line, 0, (size_t)n)) {
			fprintf(stderr, "dstack diff: %s: offset %ld (line %zu): a NUL byte: not a folded-stacks file\n",
				path, off, lineno);
			ret = EXIT_INPUT;
			break;
		}
		int r = ds_diff__add_folded(c->d, line, (size_t)n);

		if (r == -EINVAL) {
			fprintf(stderr, "dstack diff: %s: offset %ld (line %zu): not \"stack count\"\n", path, off, lineno);
			ret = EXIT_INPUT;
			break;
		}
		if (r < 0) {
			fprintf(stderr, "dstack diff: %s\n", strerror(-r));
			ret = EXIT_INPUT;
			break;
		}
		off += n;
	}
	if (ret == EXIT_OK && ferror(f)) {
		fprintf(stderr, "dstack diff: %s: offset %ld: %s\n", path, off, strerror(errno));
		ret = EXIT_INPUT;
	}
	free(line);
	fclose(f);
	return ret;
}

/*
 * A recording starts with "PERFILE2" (file and pipe mode); "-" is one on
 * stdin, and so is anything but a regular file (a pipe cannot be peeked
 * at without taking what it gives).
 */
static int input_kind(const char *path, bool *folded_text)
{
	char magic[8];
	struct stat st;
	int fd;
	ssize_t n;

	*folded_text = false;
	if (!strcmp(path, "-"))
		return 0;
	if (!stat(path, &st) && !S_ISREG(st.st_mode))
		return 0;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		fprintf(stderr, "dstack diff: %s: %s\n", path, strerror(errno));
		return -1;
	}
	n = read(fd, magic, sizeof(magic));
	close(fd);
	*folded_text = n != (ssize_t)sizeof(magic) || memcmp(magic, "PERFILE2", 8);
	return 0;
}

/* --- the command --------------------------------------------------------- */

static void diff_usage(void)
{
	fprintf(stderr,
		"usage: dstack diff [options] BASE NEW\n"
		"  BASE, NEW            recordings (perf.data) or folded-stacks files\n"
		"  --sort KEYS          comm, dso, sym, comma-separated (default dso,sym)\n"
		"  --children           also the change of each key's inclusive share\n"
		"  --counts             weights instead of percentages of each side's total\n"
		"  --folded             \"stack BASE NEW\" lines (difffolded.pl's format)\n"
		"  -n, --normalize      with --folded: BASE scaled to NEW's total\n"
		"  --flamegraph         differential flame graph (SVG)\n"
		"  --period, --samples  weigh by period (report's default) or count samples\n"
		"  -e, --event NAME     compare this event (default: BASE's first)\n"
		"  -o FILE              write to FILE (default stdout; diff.svg for --flamegraph)\n%s",
		walk_usage());
}

static int parse_sort(struct diff_cmd *d, const char *v)
{
	char buf[256];

	snprintf(buf, sizeof(buf), "%s", v);
	d->sort = 0;
	for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (!strcmp(t, "comm"))
			d->sort |= DS_DIFF_SORT_COMM;
		else if (!strcmp(t, "dso"))
			d->sort |= DS_DIFF_SORT_DSO;
		else if (!strcmp(t, "sym") || !strcmp(t, "symbol"))
			d->sort |= DS_DIFF_SORT_SYM;
		else
			return -1;
	}
	return d->sort ? 0 : -1;
}

static int parse_args(struct diff_cmd *d, int argc, char **argv, const char **in, const char **output)
{
	const char *v;
	size_t nin = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-i") || !strncmp(argv[i], "--input", 7)) {
			usage_error("diff", "-i is not taken: name BASE and NEW");
			return EXIT_USAGE;
		}
		int c = walk_opt(&d->wo, "diff", argc, argv, &i);

		if (c < 0)
			return EXIT_USAGE;
		if (c)
			continue;
		if ((v = opt_value("-o", argc, argv, &i)) || (v = opt_value("--output", argc, argv, &i)))
			*output = v;
		else if ((v = opt_value("--sort", argc, argv, &i)) || (v = opt_value("-s", argc, argv, &i))) {
			if (parse_sort(d, v)) {
				usage_error("diff", "bad --sort '%s' (comm, dso, sym)", v);
				return EXIT_USAGE;
			}
		} else if ((v = opt_value("-e", argc, argv, &i)) || (v = opt_value("--event", argc, argv, &i)))
			d->event = v;
		else if (!strcmp(argv[i], "--children"))
			d->children = true;
		else if (!strcmp(argv[i], "--counts"))
			d->counts = true;
		else if (!strcmp(argv[i], "--folded"))
			d->mode = M_FOLDED;
		else if (!strcmp(argv[i], "--flamegraph"))
			d->mode = M_FLAME;
		else if (!strcmp(argv[i], "-n") || !strcmp(argv[i], "--normalize"))
			d->normalize = true;
		else if (!strcmp(argv[i], "--period"))
			d->weight = W_PERIOD;
		else if (!strcmp(argv[i], "--samples"))
			d->weight = W_SAMPLES;
		else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			diff_usage();
			return -1;
		} else if (argv[i][0] == '-' && argv[i][1]) {
			usage_error("diff", "unknown option '%s'", argv[i]);
			diff_usage();
			return EXIT_USAGE;
		} else if (nin < 2) {
			in[nin++] = argv[i];
		} else {
			usage_error("diff", "more than two inputs ('%s')", argv[i]);
			return EXIT_USAGE;
		}
	}
	if (nin != 2) {
		usage_error("diff", "two inputs are needed: BASE NEW");
		diff_usage();
		return EXIT_USAGE;
	}
	return EXIT_OK;
}

/* The output chosen written to @fd: 0 or an errno (the buffer's failure said by it). */
static int write_output(struct diff_cmd *c, int fd)
{
	struct outbuf *o = outbuf_new(fd);
	struct ds_diff_report_opts ro = { .sz = sizeof(ro), .sort = c->sort, .children = c->children, .counts = c->counts };
	int err;

	if (!o)
		return ENOMEM;
	err = c->mode == M_FOLDED ? ds_diff__write_folded(c->d, c->normalize, cli_write_outbuf, o) :
	      c->mode == M_FLAME ? ds_diff__write_flamegraph(c->d, cli_write_outbuf, o) :
	      ds_diff__write_report(c->d, &ro, cli_write_outbuf, o);
	outbuf_flush(o);
	err = err ? -err : o->error;
	outbuf_delete(o);
	return err;
}

int cmd_diff(int argc, char **argv)
{
	struct diff_cmd c = { .sort = DS_DIFF_SORT_DSO | DS_DIFF_SORT_SYM };
	const char *in[2] = { NULL, NULL }, *output = NULL;
	bool folded_text[2];
	int ret, fd = STDOUT_FILENO, err = 0;

	walk_opts_init(&c.wo);
	ret = parse_args(&c, argc, argv, in, &output);
	if (ret)
		return ret < 0 ? EXIT_OK : ret;
	bool sorted = c.sort != (DS_DIFF_SORT_DSO | DS_DIFF_SORT_SYM);

	for (int s = 0; s < 2; s++)
		if (input_kind(in[s], &folded_text[s]))
			return EXIT_INPUT;
	/* folded stacks know no DSO */
	if (!sorted && folded_text[0] && folded_text[1])
		c.sort = DS_DIFF_SORT_SYM;
	if (!output && c.mode == M_FLAME)
		output = "diff.svg";
	if (output && strcmp(output, "-") &&
	    (fd = open(output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0) {
		fprintf(stderr, "dstack diff: %s: %s\n", output, strerror(errno));
		return EXIT_USAGE;
	}
	struct ds_diff_opts o = {
		.sz = sizeof(o),
		/* a report not by comm needs no comm: one root */
		.by_comm = !(c.mode == M_REPORT && !(c.sort & DS_DIFF_SORT_COMM)),
		/* periods for the report (as perf diff), counts for --folded and --flamegraph (as dstack folded) */
		.by_period = c.weight == W_PERIOD || (c.weight == W_DEFAULT && c.mode == M_REPORT),
		.event = c.event,
	};

	if (!(c.d = ds_diff__new(&o))) {
		err = ENOMEM;
		ret = EXIT_INPUT;
	}
	for (int s = 0; s < 2 && ret == EXIT_OK; s++) {
		if ((err = -ds_diff__begin_side(c.d, s, in[s], folded_text[s]))) {
			ret = EXIT_INPUT;
			break;
		}
		ret = folded_text[s] ? read_folded(&c, in[s]) : read_recording(&c, in[s]);
	}
	if (ret == EXIT_OK && !err)
		err = write_output(&c, fd);
	if (err) {
		fprintf(stderr, "dstack diff: %s%s%s\n", output ? output : "", output ? ": " : "", strerror(err));
		ret = EXIT_INPUT;
	}
	if (fd != STDOUT_FILENO && close(fd)) {
		fprintf(stderr, "dstack diff: %s: %s\n", output, strerror(errno));
		ret = EXIT_INPUT;
	}
	ds_diff__delete(c.d);
	return ret;
}
