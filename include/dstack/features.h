/* SPDX-License-Identifier: MIT */
/*
 * dstack features: a recording's header features (perf's HEADER_*
 * sections) decoded into records, one feature at a time, as tools/lib/perf
 * and perf's util/header.c read them.  Each feature is read through a
 * bounds-checked cursor of its own: every count, length and offset is
 * checked against the section's bytes, and a section that does not hold
 * what it says ends its records with an error naming the file offset.
 *
 *   struct ds_feat_iter *it = ds_feat_iter__new(rd, DS_FEAT_PMU_MAPPINGS);
 *   struct ds_feat_rec rec;
 *   int err;
 *
 *   while ((err = ds_feat_iter__next(it, &rec)) > 0)
 *           printf("%s = %u\n", rec.pmu.name, rec.pmu.type);
 *   if (err < 0)
 *           fprintf(stderr, "%s\n", ds_errmsg());
 *   ds_feat_iter__delete(it);
 *
 * Which features give which records (all others, e.g. TRACING_DATA,
 * BUILD_ID, EVENT_DESC, CPU_TOPOLOGY, give none: the reader and
 * dstack/reader.h's evsels and header info hold what dstack uses of them):
 *
 *   HOSTNAME OSRELEASE VERSION ARCH CPUDESC CPUID   one STRING
 *   CMDLINE                                        one STRING per word
 *   NRCPUS                                         one NRCPUS
 *   TOTAL_MEM (kB), CLOCKID (resolution, ns),      one U64
 *   DIR_FORMAT (version), CLN_SIZE (bytes)
 *   SAMPLE_TIME                                    one SAMPLE_TIME
 *   COMPRESSED                                     one COMPRESSED
 *   CLOCK_DATA                                     one CLOCK_DATA
 *   E_MACHINE                                      one E_MACHINE
 *   PMU_MAPPINGS                                   one PMU per PMU
 *   GROUP_DESC                                     one GROUP per group
 *   CPU_PMU_CAPS                                   one PMU_CAPS ("cpu"), then one CAP per capability
 *   PMU_CAPS                                       per PMU: one PMU_CAPS, then its CAPs
 *   BPF_PROG_INFO                                  per program, by id: one BPF_PROG, then
 *                                                  (when valid) one BPF_SUBPROG per subprogram
 *   BPF_BTF                                        one BTF per blob, by id
 *
 * An empty section gives no records and no error (perf's own end-of-
 * features mark in old pipes has a number newer perf gave a feature).
 *
 * Ownership: a record's strings live until the next ds_feat_iter__next()
 * or ds_feat_iter__delete(); the iterator reads the reader's copy of the
 * section and lives no longer than the reader.
 *
 * Errors (dstack/log.h): ds_feat_iter__new() returns NULL and sets errno
 * (ENOENT: the recording has no such feature; EINVAL: no feature of that
 * number; ENOMEM).  ds_feat_iter__next() returns 1 (a record), 0 (the end)
 * or -EBADMSG (the section is damaged: no more records, the same error
 * again); ds_errmsg() then says "header feature NAME at offset 0xN: what".
 */
#ifndef DSTACK_FEATURES_H
#define DSTACK_FEATURES_H

#include <stdbool.h>
#include <stdint.h>
#include "dstack/log.h"
#include "dstack/export.h"
#include "dstack/reader.h"

/* Features perf 7.2 names: 1..DS_FEAT_NR_NAMED-1 (beyond DS_FEAT_MAX_KNOWN: 7.x's) */
enum {
	DS_FEAT_CPU_DOMAIN_INFO = 32, DS_FEAT_E_MACHINE = 33, DS_FEAT_CLN_SIZE = 34,
	DS_FEAT_NR_NAMED = 35,
};

/* perf's name of feature @feat ("HOSTNAME", "CPU_PMU_CAPS", ...); NULL for a number it does not name. */
const char *ds_feature__name(int feat);

enum ds_feat_rec_type {
	DS_FEAT_REC_STRING = 1,
	DS_FEAT_REC_NRCPUS,
	DS_FEAT_REC_U64,
	DS_FEAT_REC_SAMPLE_TIME,
	DS_FEAT_REC_COMPRESSED,
	DS_FEAT_REC_CLOCK_DATA,
	DS_FEAT_REC_E_MACHINE,
	DS_FEAT_REC_PMU,
	DS_FEAT_REC_GROUP,
	DS_FEAT_REC_PMU_CAPS,
	DS_FEAT_REC_CAP,
	DS_FEAT_REC_BPF_PROG,
	DS_FEAT_REC_BPF_SUBPROG,
	DS_FEAT_REC_BTF,
};

struct ds_feat_rec {
	enum ds_feat_rec_type type;
	uint64_t offset;               /* file offset of the bytes it was decoded from */
	union {
		const char *str;                                        /* STRING */
		struct { uint32_t avail, online; } nrcpus;              /* NRCPUS */
		uint64_t u64;                                           /* U64 */
		struct { uint64_t first, last; } sample_time;           /* SAMPLE_TIME: ns */
		struct { uint32_t version, type, level, ratio, mmap_len; } compressed;   /* type: DS_COMP_* */
		struct { uint32_t version, clockid; uint64_t tod_ns, clock_ns; } clock_data;
		struct { uint32_t machine, flags; } e_machine;
		struct { uint32_t type; const char *name; } pmu;        /* PMU */
		/* GROUP: its name as recorded ("{anon_group}" unnamed), its leader's
		 * event index, its number of members (consecutive events) */
		struct { const char *name; uint32_t leader, nr_members; } group;
		struct { const char *pmu; uint32_t nr_caps; } pmu_caps; /* PMU_CAPS: nr_caps CAPs follow */
		struct { const char *name, *value; } cap;               /* CAP */
		/* BPF_PROG: a program; valid when its counts of JITed symbols, tags
		 * and function lengths agree (perf shows nothing of one whose do
		 * not, and no BPF_SUBPROG follows); then nr_subprogs BPF_SUBPROGs */
		struct { uint32_t id, nr_subprogs; bool valid; } bpf_prog;
		/* BPF_SUBPROG: perf's name "bpf_prog_<tag>_<name>", the name from
		 * the program's BTF (BPF_BTF) if it has one */
		struct { uint32_t prog_id, index; const char *name; uint64_t addr; uint32_t size; } bpf_subprog;
		struct { uint32_t id; } btf;                            /* BTF */
	};
};

struct ds_feat_iter;

struct ds_feat_iter *ds_feat_iter__new(const struct ds_reader *rd, int feat);
int ds_feat_iter__next(struct ds_feat_iter *it, struct ds_feat_rec *rec);
void ds_feat_iter__delete(struct ds_feat_iter *it);

/*
 * The event groups of @rd's GROUP_DESC feature, each to @fn: its name as
 * recorded ("{anon_group}" for an unnamed one), its leader's event index
 * and its number of members (consecutive events).  Nothing without one;
 * a damaged feature ends at its last whole group, the damage warned about
 * (the log, dstack/log.h) with its offset.
 */
typedef void (*ds_group_fn)(void *ctx, const char *name, uint32_t leader, uint32_t members);
void ds_reader__for_each_group(const struct ds_reader *rd, ds_group_fn fn, void *ctx);

/*
 * The header as perf report --header-only and perf script --header 7.2
 * print it, to @fn (dstack/export.h's write callback): with
 * DS_HEADER_LAYOUT the file's layout ("# ========", when it was captured:
 * the modification time of @path's file, standard input's for "-", then
 * the data offset and size), with DS_HEADER_FEATURES one block per feature
 * the file has, in feature order ("# hostname : ...", "# event : ...",
 * "# pmu mappings: ...", ...), then "# missing features: ..." (not for a
 * pipe); with both, the whole block, closed by "# ========\n#\n" (a
 * pipe's after its layout, as perf prints a pipe's features as they
 * come).  A damaged feature section is warned about (the log) after the
 * records before the damage.  0, or the first failed write's negative
 * errno (nothing more written), or -ENOMEM.
 */
#define DS_HEADER_LAYOUT 1u
#define DS_HEADER_FEATURES 2u
int ds_reader__print_header(const struct ds_reader *rd, const char *path, unsigned parts, ds_write_fn fn, void *ctx);

#endif
