// SPDX-License-Identifier: MIT
/*
 * The recording's header as `perf report --header-only` and `perf script
 * --header` 7.2 print it (dstack/features.h's ds_reader__print_header;
 * tools/perf/util/header.c and perf_event_attr_fprintf.c read as a
 * reference): the file's layout, then one block per header feature in
 * feature order, then the features the file lacks.  Printed with stdio
 * into a stream (fopencookie) that hands its bytes to the caller's
 * ds_write_fn.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>
#include "dstack/abi.h"
#include "dstack/export.h"
#include "dstack/features.h"
#include "dstack/log.h"
#include "util/error.h"

struct bit_name { int bit; const char *name; };

/* The bits of @v that @names lists, "A|B", in the list's order. */
static void named_bits(FILE *f, uint64_t v, const struct bit_name *names, size_t nr)
{
	bool first = true;

	for (size_t i = 0; i < nr; i++)
		if (v >> names[i].bit & 1) {
			fprintf(f, "%s%s", first ? "" : "|", names[i].name);
			first = false;
		}
}

/*
 * perf names a type by the PMU of that type it knows, else by the ABI's
 * name.  Reading a file it knows the PMUs of the machine it runs on; with
 * no sysfs (perf 7.2 in a chroot, as the tests run it) only its core PMU
 * "cpu", whose type is PERF_TYPE_RAW.
 */
#define CORE_PMU_TYPE 4

static const char *type_name(uint32_t t)
{
	static const char *const n[] = { "PERF_TYPE_HARDWARE", "PERF_TYPE_SOFTWARE", "PERF_TYPE_TRACEPOINT",
					 "PERF_TYPE_HW_CACHE", "cpu", "PERF_TYPE_BREAKPOINT" };

	return t < 6 ? n[t] : NULL;
}

static const char *config_name_plain(uint32_t type, uint64_t config);

/* A generic hardware cache event's name, "result | op | cache" as perf prints it; 0 if it has none. */
static int hw_cache_name(uint64_t config, char *buf, size_t n)
{
	static const char *const cache[] = { "PERF_COUNT_HW_CACHE_L1D", "PERF_COUNT_HW_CACHE_L1I",
					     "PERF_COUNT_HW_CACHE_LL", "PERF_COUNT_HW_CACHE_DTLB",
					     "PERF_COUNT_HW_CACHE_ITLB", "PERF_COUNT_HW_CACHE_BPU",
					     "PERF_COUNT_HW_CACHE_NODE" };
	static const char *const op[] = { "PERF_COUNT_HW_CACHE_OP_READ", "PERF_COUNT_HW_CACHE_OP_WRITE",
					  "PERF_COUNT_HW_CACHE_OP_PREFETCH" };
	static const char *const result[] = { "PERF_COUNT_HW_CACHE_RESULT_ACCESS", "PERF_COUNT_HW_CACHE_RESULT_MISS" };
	unsigned c = config & 0xff, o = (config >> 8) & 0xff, r = (config >> 16) & 0xff;

	if (c >= sizeof(cache) / sizeof(*cache) || o >= sizeof(op) / sizeof(*op) || r >= sizeof(result) / sizeof(*result))
		return 0;
	return snprintf(buf, n, "%s | %s | %s", result[r], op[o], cache[c]);
}

/*
 * The config's name in @buf, NULL if perf gives it none.  A hardware
 * event's upper 32 bits name its PMU's type (hybrid machines): perf
 * writes "cpu/NAME/" for its core PMU's, the bare name for a PMU it does
 * not know.
 */
static const char *config_name(uint32_t type, uint64_t config, char *buf, size_t n)
{
	uint64_t ext = type == 0 || type == 3 ? config >> 32 : 0, id = ext ? config & 0xffffffffu : config;
	const char *name = NULL;
	char cbuf[160];

	if (type == 3 && hw_cache_name(id, cbuf, sizeof(cbuf)))
		name = cbuf;
	else if (type != 3)
		name = config_name_plain(type, id);
	if (!name)
		return ext == CORE_PMU_TYPE && snprintf(buf, n, "cpu/config=%#" PRIx64 "/", config) > 0 ? buf : NULL;
	snprintf(buf, n, ext == CORE_PMU_TYPE ? "cpu/%s/" : "%s", name);
	return buf;
}

static const char *config_name_plain(uint32_t type, uint64_t config)
{
	static const char *const hw[] = {
		"PERF_COUNT_HW_CPU_CYCLES", "PERF_COUNT_HW_INSTRUCTIONS", "PERF_COUNT_HW_CACHE_REFERENCES",
		"PERF_COUNT_HW_CACHE_MISSES", "PERF_COUNT_HW_BRANCH_INSTRUCTIONS", "PERF_COUNT_HW_BRANCH_MISSES",
		"PERF_COUNT_HW_BUS_CYCLES", "PERF_COUNT_HW_STALLED_CYCLES_FRONTEND",
		"PERF_COUNT_HW_STALLED_CYCLES_BACKEND", "PERF_COUNT_HW_REF_CPU_CYCLES" };
	static const char *const sw[] = {
		"PERF_COUNT_SW_CPU_CLOCK", "PERF_COUNT_SW_TASK_CLOCK", "PERF_COUNT_SW_PAGE_FAULTS",
		"PERF_COUNT_SW_CONTEXT_SWITCHES", "PERF_COUNT_SW_CPU_MIGRATIONS", "PERF_COUNT_SW_PAGE_FAULTS_MIN",
		"PERF_COUNT_SW_PAGE_FAULTS_MAJ", "PERF_COUNT_SW_ALIGNMENT_FAULTS", "PERF_COUNT_SW_EMULATION_FAULTS",
		"PERF_COUNT_SW_DUMMY", "PERF_COUNT_SW_BPF_OUTPUT", "PERF_COUNT_SW_CGROUP_SWITCHES" };

	if (type == 0 && config < sizeof(hw) / sizeof(*hw))
		return hw[config];
	if (type == 1 && config < sizeof(sw) / sizeof(*sw))
		return sw[config];
	return NULL;
}

/* one "name = value" of an attr; perf prints the fields that are not 0 */
static void attr_u(FILE *f, const char *name, uint64_t v)
{
	if (v)
		fprintf(f, ", %s = %" PRIu64, name, v);
}

static void attr_x(FILE *f, const char *name, uint64_t v)
{
	if (v)
		fprintf(f, ", %s = %#" PRIx64, name, v);
}

static void print_attr(FILE *f, const struct ds_attr *a)
{
	/* sample_type's bits in the order perf prints them (bit numbers; it names no TRANSACTION, bit 17) */
	static const struct bit_name st[] = {
		{ 0, "IP" }, { 1, "TID" }, { 2, "TIME" }, { 3, "ADDR" }, { 4, "READ" }, { 5, "CALLCHAIN" },
		{ 6, "ID" }, { 7, "CPU" }, { 8, "PERIOD" }, { 9, "STREAM_ID" }, { 10, "RAW" },
		{ 11, "BRANCH_STACK" }, { 12, "REGS_USER" }, { 13, "STACK_USER" }, { 16, "IDENTIFIER" },
		{ 18, "REGS_INTR" }, { 15, "DATA_SRC" }, { 14, "WEIGHT" }, { 19, "PHYS_ADDR" }, { 20, "AUX" },
		{ 21, "CGROUP" }, { 22, "DATA_PAGE_SIZE" }, { 23, "CODE_PAGE_SIZE" }, { 24, "WEIGHT_STRUCT" },
	};
	/* branch_sample_type's bits, perf's names (p_branch_sample_type) */
	static const struct bit_name bst[] = {
		{ 0, "USER" }, { 1, "KERNEL" }, { 2, "HV" }, { 3, "ANY" }, { 4, "ANY_CALL" }, { 5, "ANY_RETURN" },
		{ 6, "IND_CALL" }, { 7, "ABORT_TX" }, { 8, "IN_TX" }, { 9, "NO_TX" }, { 10, "COND" },
		{ 11, "CALL_STACK" }, { 12, "IND_JUMP" }, { 13, "CALL" }, { 14, "NO_FLAGS" }, { 15, "NO_CYCLES" },
		{ 16, "TYPE_SAVE" }, { 17, "HW_INDEX" }, { 18, "PRIV_SAVE" }, { 19, "COUNTERS" },
	};
	static const struct bit_name rf[] = {
		{ 0, "TOTAL_TIME_ENABLED" }, { 1, "TOTAL_TIME_RUNNING" }, { 2, "ID" }, { 3, "GROUP" }, { 4, "LOST" },
	};
	/* the attr's flag bits in the order perf prints them (bit numbers; precise_ip is two bits) */
	static const struct bit_name flags[] = {
		{ 0, "disabled" }, { 1, "inherit" }, { 2, "pinned" }, { 3, "exclusive" }, { 4, "exclude_user" },
		{ 5, "exclude_kernel" }, { 6, "exclude_hv" }, { 7, "exclude_idle" }, { 8, "mmap" }, { 9, "comm" },
		{ 10, "freq" }, { 11, "inherit_stat" }, { 12, "enable_on_exec" }, { 13, "task" },
		{ 14, "watermark" }, { 15, "precise_ip" }, { 17, "mmap_data" }, { 18, "sample_id_all" },
		{ 19, "exclude_host" }, { 20, "exclude_guest" }, { 21, "exclude_callchain_kernel" },
		{ 22, "exclude_callchain_user" }, { 23, "mmap2" }, { 24, "comm_exec" }, { 25, "use_clockid" },
		{ 26, "context_switch" }, { 27, "write_backward" }, { 28, "namespaces" }, { 29, "ksymbol" },
		{ 30, "bpf_event" }, { 31, "aux_output" }, { 32, "cgroup" }, { 33, "text_poke" },
		{ 34, "build_id" }, { 35, "inherit_thread" }, { 36, "remove_on_exec" }, { 37, "sigtrap" },
		{ 38, "defer_callchain" }, { 39, "defer_output" },
	};
	char cbuf[200];
	const char *tn = type_name(a->type), *cn = config_name(a->type, a->config, cbuf, sizeof(cbuf));

	if (tn)
		fprintf(f, ", type = %u (%s)", a->type, tn);
	else
		attr_u(f, "type", a->type);
	attr_u(f, "size", a->size);
	/* perf shows the config even when 0, and names it when it can */
	fprintf(f, a->config ? ", config = %#" PRIx64 : ", config = %" PRIu64, a->config);
	if (cn)
		fprintf(f, " (%s)", cn);
	attr_u(f, "{ sample_period, sample_freq }", a->sample_period);
	if (a->sample_type) {
		fputs(", sample_type = ", f);
		named_bits(f, a->sample_type, st, sizeof(st) / sizeof(*st));
	}
	if (a->read_format) {
		fputs(", read_format = ", f);
		named_bits(f, a->read_format, rf, sizeof(rf) / sizeof(*rf));
	}
	for (size_t i = 0; i < sizeof(flags) / sizeof(*flags); i++)
		attr_u(f, flags[i].name, flags[i].bit == 15 ? (a->flags >> 15 & 3) : (a->flags >> flags[i].bit & 1));
	attr_u(f, "{ wakeup_events, wakeup_watermark }", a->wakeup_events);
	attr_u(f, "bp_type", a->bp_type);
	attr_x(f, "{ bp_addr, config1 }", a->config1);
	attr_x(f, "{ bp_len, config2 }", a->config2);
	if (a->branch_sample_type) {
		fputs(", branch_sample_type = ", f);
		named_bits(f, a->branch_sample_type, bst, sizeof(bst) / sizeof(*bst));
	}
	attr_x(f, "sample_regs_user", a->sample_regs_user);
	attr_u(f, "sample_stack_user", a->sample_stack_user);
	if (a->clockid)
		fprintf(f, ", clockid = %d", a->clockid);
	attr_x(f, "sample_regs_intr", a->sample_regs_intr);
	attr_u(f, "aux_watermark", a->aux_watermark);
	attr_u(f, "sample_max_stack", a->sample_max_stack);
	attr_u(f, "aux_sample_size", a->aux_sample_size);
	attr_u(f, "sig_data", a->sig_data);
}

static void print_events(FILE *f, const struct ds_reader *rd)
{
	for (size_t i = 0; i < ds_reader__nr_evsels(rd); i++) {
		const struct ds_evsel *e = ds_reader__evsel(rd, i);

		fprintf(f, "# event : name = %s, ", e->name);
		if (e->nr_ids) {
			fputs(", id = {", f);
			for (size_t k = 0; k < e->nr_ids; k++)
				fprintf(f, "%s %" PRIu64, k ? "," : "", e->ids[k]);
			fputs(" }", f);
		}
		print_attr(f, &e->attr);
		fputc('\n', f);
	}
}

/*
 * A feature's records, each to @fn; a damaged section is warned about
 * (its offset named) after the records before the damage.
 */
typedef void feat_rec_fn(void *ctx, const struct ds_feat_rec *rec);

static void for_each_rec(const struct ds_reader *rd, int feat, feat_rec_fn *fn, void *ctx)
{
	struct ds_feat_iter *it = ds_feat_iter__new(rd, feat);
	struct ds_feat_rec rec;
	int err;

	if (!it) {
		if (errno != ENOENT)
			ds_warn("%s: header feature %s: %s\n", ds_reader__path(rd), ds_feature__name(feat),
				strerror(errno));
		return;
	}
	while ((err = ds_feat_iter__next(it, &rec)) > 0)
		fn(ctx, &rec);
	if (err < 0)
		ds_warn("%s: %s\n", ds_reader__path(rd), ds_errmsg());
	ds_feat_iter__delete(it);
}

struct feat_print {
	FILE *f;
	const struct ds_reader *rd;
	int feat;
	unsigned n;                     /* records printed */
	uint32_t prog_subs;             /* BPF_PROG_INFO: the current program's subprograms */
	bool found;                     /* a search's answer */
	const char *want;
	char value[64];
};

/* "# cmdline : a b c " (each word followed by a blank) */
static void print_word(void *ctx, const struct ds_feat_rec *rec)
{
	struct feat_print *fp = ctx;

	fprintf(fp->f, "%s ", rec->str);
}

/* One PMU's capabilities as perf prints them: "# PMU pmu capabilities: a=b, c=d" */
static void print_cap(void *ctx, const struct ds_feat_rec *rec)
{
	struct feat_print *fp = ctx;

	if (rec->type == DS_FEAT_REC_PMU_CAPS) {
		if (fp->n)
			fputc('\n', fp->f);
		fprintf(fp->f, "# %s pmu capabilities: %s", rec->pmu_caps.pmu, rec->pmu_caps.nr_caps ? "" : "not available");
		fp->n = 1;
		fp->prog_subs = 0;
		return;
	}
	fprintf(fp->f, "%s%s=%s", fp->prog_subs++ ? ", " : "", rec->cap.name, rec->cap.value);
}

static void print_pmu_caps(FILE *f, const struct ds_reader *rd, int feat)
{
	struct feat_print fp = { .f = f, .rd = rd, .feat = feat };

	for_each_rec(rd, feat, print_cap, &fp);
	if (fp.n)
		fputc('\n', f);
}

static void find_pmu(void *ctx, const struct ds_feat_rec *rec)
{
	struct feat_print *fp = ctx;

	fp->found |= !strcmp(rec->pmu.name, fp->want);
}

/* The cpu PMU's capability @want (CPU_PMU_CAPS), its value in fp->value. */
static void find_cap(void *ctx, const struct ds_feat_rec *rec)
{
	struct feat_print *fp = ctx;

	if (rec->type == DS_FEAT_REC_CAP && !fp->found && !strcmp(rec->cap.name, fp->want)) {
		snprintf(fp->value, sizeof(fp->value), "%s", rec->cap.value);
		fp->found = true;
	}
}

/* perf's note after the PMUs' capabilities on an AMD machine whose core PMU has no precise events. */
static void print_amd_note(FILE *f, const struct ds_reader *rd, const struct ds_header_info *hi)
{
	struct feat_print pmu = { .want = "ibs_op" }, cap = { .want = "max_precise" };
	bool x86 = hi->arch && (!strcmp(hi->arch, "x86_64") || !strcmp(hi->arch, "x86") ||
				(hi->arch[0] == 'i' && !strcmp(hi->arch + 2, "86")));

	if (!x86)
		return;
	for_each_rec(rd, DS_FEAT_PMU_MAPPINGS, find_pmu, &pmu);
	if (pmu.found)
		for_each_rec(rd, DS_FEAT_CPU_PMU_CAPS, find_cap, &cap);
	if (pmu.found && cap.found && atoi(cap.value) == 0)
		fputs("# AMD systems uses ibs_op// PMU for some precise events, e.g.: cycles:p, see the 'perf list' "
		      "man page for further details.\n", f);
}

static void print_pmu(void *ctx, const struct ds_feat_rec *rec)
{
	struct feat_print *fp = ctx;

	fprintf(fp->f, "%s%s = %" PRIu32, fp->n++ ? ", " : "", rec->pmu.name, rec->pmu.type);
}

static void print_pmu_mappings(FILE *f, const struct ds_reader *rd)
{
	struct feat_print fp = { .f = f, .rd = rd };

	fputs("# pmu mappings: ", f);
	for_each_rec(rd, DS_FEAT_PMU_MAPPINGS, print_pmu, &fp);
	if (!fp.n)
		fputs("not available", f);
	fputc('\n', f);
}

struct group_each {
	ds_group_fn fn;
	void *ctx;
};

static void each_group(void *ctx, const struct ds_feat_rec *rec)
{
	struct group_each *g = ctx;

	g->fn(g->ctx, rec->group.name, rec->group.leader, rec->group.nr_members);
}

void ds_reader__for_each_group(const struct ds_reader *rd, ds_group_fn fn, void *ctx)
{
	struct group_each g = { fn, ctx };

	for_each_rec(rd, DS_FEAT_GROUP_DESC, each_group, &g);
}

/* "# group: NAME{a,b}" per group of more than one event (perf names an unnamed group "{anon_group}") */
static void print_group(void *ctx, const char *name, uint32_t leader, uint32_t members)
{
	struct feat_print *g = ctx;

	if (members < 2 || leader >= ds_reader__nr_evsels(g->rd))
		return;
	fprintf(g->f, "# group: %s{", strcmp(name, "{anon_group}") ? name : "");
	for (uint32_t k = 0; k < members && leader + k < ds_reader__nr_evsels(g->rd); k++)
		fprintf(g->f, "%s%s", k ? "," : "", ds_reader__evsel(g->rd, leader + k)->name);
	fputs("}\n", g->f);
}

/* HEADER_BPF_PROG_INFO as perf prints it: a program of one function on one line, else one per subprogram */
static void print_bpf(void *ctx, const struct ds_feat_rec *rec)
{
	struct feat_print *fp = ctx;

	if (rec->type == DS_FEAT_REC_BPF_PROG) {
		fp->n++;
		fp->prog_subs = rec->bpf_prog.nr_subprogs;
		if (rec->bpf_prog.valid && fp->prog_subs != 1)
			fprintf(fp->f, "# bpf_prog_info %u:\n", rec->bpf_prog.id);
		return;
	}
	if (fp->prog_subs == 1)
		fprintf(fp->f, "# bpf_prog_info %u: %s addr 0x%" PRIx64 " size %u\n", rec->bpf_subprog.prog_id,
			rec->bpf_subprog.name, rec->bpf_subprog.addr, rec->bpf_subprog.size);
	else
		fprintf(fp->f, "# \tsub_prog %u: %s addr 0x%" PRIx64 " size %u\n", rec->bpf_subprog.index,
			rec->bpf_subprog.name, rec->bpf_subprog.addr, rec->bpf_subprog.size);
}

static void print_btf(void *ctx, const struct ds_feat_rec *rec)
{
	struct feat_print *fp = ctx;

	fp->n++;
	fprintf(fp->f, "# btf info of id %u\n", rec->btf.id);
}

static void print_bpf_feature(FILE *f, const struct ds_reader *rd, int feat)
{
	struct feat_print fp = { .f = f, .rd = rd };

	for_each_rec(rd, feat, feat == DS_FEAT_BPF_BTF ? print_btf : print_bpf, &fp);
	if (!fp.n)
		fputs(feat == DS_FEAT_BPF_BTF ? "# btf info empty\n" : "# bpf_prog_info empty\n", f);
}

/* A feature perf only announces: its details with -I, or its mere presence. */
static void print_feature_note(FILE *f, int feat)
{
	switch (feat) {
	case DS_FEAT_BRANCH_STACK:
		fputs("# contains samples with branch stack\n", f);
		break;
	case DS_FEAT_AUXTRACE:
		fputs("# contains AUX area data (e.g. instruction trace)\n", f);
		break;
	case DS_FEAT_STAT:
		fputs("# contains stat data\n", f);
		break;
	default:
		fprintf(f, "# %s info available, use -I to display\n", ds_feature__name(feat));
		break;
	}
}

static void print_usec(FILE *f, const char *what, uint64_t t)
{
	fprintf(f, "# %s : %" PRIu64 ".%06" PRIu64 "\n", what, t / 1000000000u, t % 1000000000u / 1000);
}

/* perf's name of a clock (its clockid table: the first name of a number) */
static const char *clockid_name(uint32_t id)
{
	switch (id) {
	case 1: return "monotonic";
	case 4: return "monotonic_raw";
	case 0: return "realtime";
	case 7: return "boottime";
	case 11: return "tai";
	default: return "(not found)";
	}
}

/* CLOCK_DATA: the clock and a reference time of day, as perf prints them (version 1 only, as perf reads it) */
static void print_clock_data(FILE *f, const struct ds_feat_rec *rec)
{
	uint32_t id = rec->clock_data.clockid;
	uint64_t tod = rec->clock_data.tod_ns, clk = rec->clock_data.clock_ns;
	time_t sec = (time_t)(tod / 1000000000ULL);
	char date[64] = "<error>";
	struct tm tm;

	if (rec->clock_data.version != 1)
		return;
	if (localtime_r(&sec, &tm))
		strftime(date, sizeof(date), "%F %T", &tm);
	fprintf(f, "# clockid: %s (%u)\n", clockid_name(id), id);
	fprintf(f, "# reference time: %s.%06d = %ld.%06d (TOD) = %ld.%09ld (%s)\n", date,
		(int)(tod % 1000000000ULL / 1000), (long)sec, (int)(tod % 1000000000ULL / 1000),
		(long)(clk / 1000000000ULL), (long)(clk % 1000000000ULL), clockid_name(id));
}

/* A feature that is one record: "# hostname : NAME" and the like. */
static void print_single(void *ctx, const struct ds_feat_rec *rec)
{
	static const char *const what[] = { [DS_FEAT_HOSTNAME] = "hostname", [DS_FEAT_OSRELEASE] = "os release",
					    [DS_FEAT_VERSION] = "perf version", [DS_FEAT_ARCH] = "arch",
					    [DS_FEAT_CPUDESC] = "cpudesc", [DS_FEAT_CPUID] = "cpuid" };
	struct feat_print *fp = ctx;
	FILE *f = fp->f;

	switch (fp->feat) {
	case DS_FEAT_HOSTNAME: case DS_FEAT_OSRELEASE: case DS_FEAT_VERSION: case DS_FEAT_ARCH:
	case DS_FEAT_CPUDESC: case DS_FEAT_CPUID:
		fprintf(f, "# %s : %s\n", what[fp->feat], rec->str);
		break;
	case DS_FEAT_NRCPUS:
		fprintf(f, "# nrcpus online : %u\n# nrcpus avail : %u\n", rec->nrcpus.online, rec->nrcpus.avail);
		break;
	case DS_FEAT_TOTAL_MEM:
		fprintf(f, "# total memory : %" PRIu64 " kB\n", rec->u64);
		break;
	case DS_FEAT_SAMPLE_TIME:   /* the first and last samples' times and the span between */
		print_usec(f, "time of first sample", rec->sample_time.first);
		print_usec(f, "time of last sample", rec->sample_time.last);
		fprintf(f, "# sample duration : %10.3f ms\n",
			(double)(rec->sample_time.last - rec->sample_time.first) / 1e6);
		break;
	case DS_FEAT_COMPRESSED:
		fprintf(f, "# compressed : %s, level = %u, ratio = %u\n",
			rec->compressed.type == DS_COMP_ZSTD ? "Zstd" : "Unknown", rec->compressed.level,
			rec->compressed.ratio);
		break;
	case DS_FEAT_E_MACHINE:
		fprintf(f, "# e_machine : %u\n#   e_flags : %u\n", rec->e_machine.machine, rec->e_machine.flags);
		break;
	case DS_FEAT_CLN_SIZE:
		fprintf(f, "# cacheline size: %" PRIu64 "\n", rec->u64);
		break;
	case DS_FEAT_DIR_FORMAT:
		fprintf(f, "# directory data version : %" PRIu64 "\n", rec->u64);
		break;
	case DS_FEAT_CLOCKID:   /* record -k: the clock's resolution, as perf prints it */
		fprintf(f, "# clockid frequency: %" PRIu64 " MHz\n", rec->u64 * 1000);
		break;
	case DS_FEAT_CLOCK_DATA:
		print_clock_data(f, rec);
		break;
	}
}

/* One feature's block; features perf prints only with -I are announced. */
static void print_feature(FILE *f, const struct ds_reader *rd, int feat)
{
	struct feat_print fp = { .f = f, .rd = rd, .feat = feat };
	uint64_t len = 0;

	/* nothing to read (an older perf's end-of-features mark in a pipe, whose id a newer perf has
	 * given to a feature): perf fails to read it and prints nothing; but BRANCH_STACK and STAT
	 * have no body, their presence is what they say */
	if ((!ds_reader__feature(rd, feat, &len) || !len) && feat != DS_FEAT_BRANCH_STACK && feat != DS_FEAT_STAT)
		return;
	switch (feat) {
	case DS_FEAT_CMDLINE:
		fputs("# cmdline : ", f);
		for_each_rec(rd, feat, print_word, &fp);
		fputc('\n', f);
		break;
	case DS_FEAT_EVENT_DESC:
		print_events(f, rd);
		break;
	case DS_FEAT_CPU_TOPOLOGY: case DS_FEAT_NUMA_TOPOLOGY: case DS_FEAT_CACHE: case DS_FEAT_MEM_TOPOLOGY:
	case DS_FEAT_HYBRID_TOPOLOGY: case DS_FEAT_CPU_DOMAIN_INFO: case DS_FEAT_BRANCH_STACK: case DS_FEAT_AUXTRACE:
	case DS_FEAT_STAT:
		print_feature_note(f, feat);
		break;
	case DS_FEAT_PMU_MAPPINGS:
		print_pmu_mappings(f, rd);
		break;
	case DS_FEAT_GROUP_DESC:
		ds_reader__for_each_group(rd, print_group, &fp);
		break;
	case DS_FEAT_BPF_PROG_INFO: case DS_FEAT_BPF_BTF:
		print_bpf_feature(f, rd, feat);
		break;
	case DS_FEAT_CPU_PMU_CAPS:
		print_pmu_caps(f, rd, feat);
		break;
	case DS_FEAT_PMU_CAPS:
		print_pmu_caps(f, rd, feat);
		print_amd_note(f, rd, ds_reader__info(rd));
		break;
	default:   /* the one-record features; tracing data, build-ids: perf prints them with -I only or not at all */
		for_each_rec(rd, feat, print_single, &fp);
		break;
	}
}

static void print_layout(FILE *f, const char *path, const struct ds_reader *rd)
{
	const struct ds_header_info *hi = ds_reader__info(rd);
	struct stat st;
	uint64_t at = 0;
	/* perf's time is the header's file's (a directory's "data") */
	int ok = strcmp(path, "-") ? stat(ds_reader__locate(rd, &at), &st) : fstat(STDIN_FILENO, &st);
	char when[64] = "\n";
	time_t t;

	if (!ok) {
		t = st.st_mtime;
		ctime_r(&t, when);
	}
	fputs("# ========\n", f);
	fprintf(f, "# captured on    : %s", when);
	fputs("# header version : 1\n", f);
	fprintf(f, "# data offset    : %" PRIu64 "\n", hi->pipe ? 0 : hi->data_offset);
	/* the header's own values, as perf prints them (an unfinished recording's data size is 0) */
	fprintf(f, "# data size      : %" PRIu64 "\n", hi->pipe ? 0 : hi->header_data_size);
	fprintf(f, "# feat offset    : %" PRIu64 "\n", hi->pipe ? 0 : hi->data_offset + hi->header_data_size);
}

static void print_features(FILE *f, const struct ds_reader *rd)
{
	const struct ds_header_info *hi = ds_reader__info(rd);

	for (int feat = 1; feat < DS_FEAT_NR_NAMED; feat++)
		if (ds_header_info__has_feature(hi, feat))
			print_feature(f, rd, feat);
	if (!hi->pipe) {
		fputs("# missing features: ", f);
		for (int feat = 1; feat < DS_FEAT_NR_NAMED; feat++)
			if (!ds_header_info__has_feature(hi, feat))
				fprintf(f, "%s ", ds_feature__name(feat));
		fputc('\n', f);
	}
}

static void print_all(FILE *f, const char *path, const struct ds_reader *rd)
{
	const struct ds_header_info *hi = ds_reader__info(rd);

	print_layout(f, path, rd);
	if (hi->pipe) {   /* perf prints a pipe's features as they come, after the layout */
		fputs("# ========\n#\n", f);
		print_features(f, rd);
		return;
	}
	print_features(f, rd);
	fputs("# ========\n#\n", f);
}


/* the stdio stream's side of ds_reader__print_header: each buffer to the caller's write function */
struct sink {
	ds_write_fn fn;
	void *ctx;
	int err;                        /* the first failed write's, then nothing more */
};

static ssize_t sink_write(void *cookie, const char *buf, size_t n)
{
	struct sink *s = cookie;

	if (!s->err && n)
		s->err = s->fn(s->ctx, buf, n);
	return s->err ? -1 : (ssize_t)n;
}

int ds_reader__print_header(const struct ds_reader *rd, const char *path, unsigned parts, ds_write_fn fn, void *ctx)
{
	struct sink s = { fn, ctx, 0 };
	FILE *f = fopencookie(&s, "w", (cookie_io_functions_t){ .write = sink_write });

	if (!f)
		return dsi_error(-ENOMEM, "printing the header: out of memory");
	/* a line at a time: the caller's stream keeps its own buffering, between the warnings as before */
	setvbuf(f, NULL, _IOLBF, BUFSIZ);
	if ((parts & DS_HEADER_LAYOUT) && (parts & DS_HEADER_FEATURES))
		print_all(f, path, rd);
	else if (parts & DS_HEADER_LAYOUT)
		print_layout(f, path, rd);
	else if (parts & DS_HEADER_FEATURES)
		print_features(f, rd);
	fclose(f);
	return s.err ? dsi_error(s.err, "writing the header: %s", strerror(-s.err)) : 0;
}
