/* SPDX-License-Identifier: MIT */
/*
 * What a command keeps past its memory budget goes to disk: an unlinked
 * temporary file (dsi_spill_open), and a tally of texts that spills its
 * sorted runs there and merges them back (struct dsi_tally, an external
 * sort that sums the counts of equal texts).
 *
 * Who may use it: the library's exports (dstack/export.h: what they keep
 * past the caller's budget, in the directory the caller names) and the
 * CLI's commands.  The environment is the CLI's: dsi_spill_dir() and
 * dsi_tally__new() (util/spill_dir.c) are linked into the command and the
 * tests, not into libdstack, which reads no environment variable.
 */
#ifndef DSTACK_SPILL_H
#define DSTACK_SPILL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Where spill files are made: $TMPDIR if set and not empty, else /tmp (a static string, or the environment's). */
const char *dsi_spill_dir(void);

/*
 * A new file in @dir open for reading and writing, unlinked from the start
 * where the file system allows (O_TMPFILE), else made and unlinked at
 * once: nothing is left behind whatever ends the command.  The fd, or
 * -errno.
 */
int dsi_spill_open(const char *dir);

/*
 * A tally: texts, each with a count and a weight, read back once in byte
 * order (strcmp's) with the counts and weights of equal texts summed.  Memory stays within the bound it
 * is made with (a record longer than the bound excepted: it is kept whole):
 * past it the texts held are sorted, equal ones summed, and written as a
 * run to a spill file in dsi_spill_dir(); reading merges the runs, at most
 * a fan-in at a time.  A tally that never passes its bound never touches
 * the disk.
 *
 * Lifecycle: dsi_tally__new, dsi_tally__add (any number), then
 * dsi_tally__next until it returns 0, then dsi_tally__delete.  Errors
 * are -errno: -ENOMEM, or the spill file's failure (dsi_tally__error
 * says which step failed, in which directory).  After an error the tally
 * can only be deleted.
 */
struct dsi_tally;

/*
 * A tally holding at most about @mem bytes in memory (at least 64 KiB),
 * spilling to @dir (NULL or "": /tmp; kept as a pointer: it must outlive
 * the tally); NULL on ENOMEM.
 */
struct dsi_tally *dsi_tally__new_in(size_t mem, const char *dir);
/* The same in dsi_spill_dir() (the CLI's). */
struct dsi_tally *dsi_tally__new(size_t mem);

/* Add @count and @weight to the text @text[0 .. @len) (copied; may hold any byte).  0 or -errno. */
int dsi_tally__add(struct dsi_tally *t, const char *text, size_t len, uint64_t count, uint64_t weight);

/*
 * The next distinct text, in byte order, and its summed count and weight
 * (@weight may be NULL): 1, with *@text (not NUL-terminated, valid until
 * the next call) and *@len set; 0 at the end; -errno.  The first call
 * ends adding.
 */
int dsi_tally__next(struct dsi_tally *t, const char **text, size_t *len, uint64_t *count, uint64_t *weight);

/* How many sorted runs went to disk (0: it stayed in memory), for tests and messages. */
size_t dsi_tally__runs(const struct dsi_tally *t);

/* After a spill file's failure: "writing a temporary file in /tmp: No space left on device"; else NULL. */
const char *dsi_tally__error(const struct dsi_tally *t);

/* Frees @t (NULL is fine) and closes its spill files. */
void dsi_tally__delete(struct dsi_tally *t);

#endif
