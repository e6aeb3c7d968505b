// SPDX-License-Identifier: MIT
/*
 * folded: a recording's folded stacks, the lines `dstack folded` prints,
 * through libdstack's public API only: the profile's resolved samples
 * (dstack/profile.h) handed to the library's folded export
 * (dstack/export.h), written to stdout.
 *
 *   folded FILE [SYMFS [KALLSYMS]]
 *
 * One line per distinct stack, "comm;outer;...;inner count", sorted, with
 * the frames named as FlameGraph's stackcollapse-perf.pl names perf
 * script's: the symbol (its C++ argument list cut), else the DSO's base
 * name in brackets, kernel frames suffixed "_[k]".
 *
 * Build against an installed tree (make install PREFIX=$P):
 *   cc -I$P/include folded.c $P/lib/libdstack.a -lelf -ldw -lzstd -lz -liberty -lm -lpthread
 */
#include <stdio.h>
#include <dstack/export.h>
#include <dstack/log.h>
#include <dstack/profile.h>

static int on_sample(void *ctx, const struct ds_profile_sample *s)
{
	return ds_folded__add(ctx, s);
}

int main(int argc, char **argv)
{
	struct ds_profile_opts opts = {
		.symbols = { .symfs = argc > 2 ? argv[2] : NULL, .kallsyms = argc > 3 ? argv[3] : NULL },
		.script_comms = true,   /* named as perf script names them: folded is its output collapsed */
	};
	struct ds_folded_opts fopts = { .sz = sizeof(fopts) };   /* counts; 1 GiB; spills to /tmp */
	struct ds_folded *fo;
	struct ds_profile *p;
	int err, werr;

	if (argc < 2 || argc > 4) {
		fprintf(stderr, "usage: %s FILE [SYMFS [KALLSYMS]]\n", argv[0]);
		return 2;
	}
	if (!(fo = ds_folded__new(&fopts))) {
		perror("folded");
		return 1;
	}
	p = ds_profile__open(argv[1], &opts);   /* why it fails: logged */
	if (!p) {
		ds_folded__delete(fo);
		return 1;
	}
	err = ds_profile__for_each_sample(p, on_sample, fo);
	/* the stacks read before an error are printed all the same, as dstack folded does */
	werr = ds_folded__write(fo, ds_write_stdio, stdout);
	if (werr)
		fprintf(stderr, "folded: %s\n", ds_errmsg());   /* a spill file's failure names its directory */
	ds_folded__delete(fo);
	ds_profile__close(p);
	if (fflush(stdout) || ferror(stdout) || werr)
		return 1;
	return err ? 1 : 0;
}
