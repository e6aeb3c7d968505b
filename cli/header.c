// SPDX-License-Identifier: MIT
/*
 * The recording's header as `perf report --header-only` and `perf script
 * --header` 7.2 print it (tools/perf/util/header.c and
 * perf_event_attr_fprintf.c, read as a reference): the file's layout, then
 * one block per header feature in feature order, then the features the
 * file lacks.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "dstack/abi.h"
#include "cli.h"
#include "header.h"

/* perf's feature names; 33 and 34 are 7.x's, named as perf prints them */
static const char *const feat_names[] = {
	[DS_FEAT_TRACING_DATA] = "TRACING_DATA", [DS_FEAT_BUILD_ID] = "BUILD_ID",
	[DS_FEAT_HOSTNAME] = "HOSTNAME", [DS_FEAT_OSRELEASE] = "OSRELEASE", [DS_FEAT_VERSION] = "VERSION",
	[DS_FEAT_ARCH] = "ARCH", [DS_FEAT_NRCPUS] = "NRCPUS", [DS_FEAT_CPUDESC] = "CPUDESC",
	[DS_FEAT_CPUID] = "CPUID", [DS_FEAT_TOTAL_MEM] = "TOTAL_MEM", [DS_FEAT_CMDLINE] = "CMDLINE",
	[DS_FEAT_EVENT_DESC] = "EVENT_DESC", [DS_FEAT_CPU_TOPOLOGY] = "CPU_TOPOLOGY",
	[DS_FEAT_NUMA_TOPOLOGY] = "NUMA_TOPOLOGY", [DS_FEAT_BRANCH_STACK] = "BRANCH_STACK",
	[DS_FEAT_PMU_MAPPINGS] = "PMU_MAPPINGS", [DS_FEAT_GROUP_DESC] = "GROUP_DESC",
	[DS_FEAT_AUXTRACE] = "AUXTRACE", [DS_FEAT_STAT] = "STAT", [DS_FEAT_CACHE] = "CACHE",
	[DS_FEAT_SAMPLE_TIME] = "SAMPLE_TIME", [DS_FEAT_MEM_TOPOLOGY] = "MEM_TOPOLOGY",
	[DS_FEAT_CLOCKID] = "CLOCKID", [DS_FEAT_DIR_FORMAT] = "DIR_FORMAT",
	[DS_FEAT_BPF_PROG_INFO] = "BPF_PROG_INFO", [DS_FEAT_BPF_BTF] = "BPF_BTF",
	[DS_FEAT_COMPRESSED] = "COMPRESSED", [DS_FEAT_CPU_PMU_CAPS] = "CPU_PMU_CAPS",
	[DS_FEAT_CLOCK_DATA] = "CLOCK_DATA", [DS_FEAT_HYBRID_TOPOLOGY] = "HYBRID_TOPOLOGY",
	[DS_FEAT_PMU_CAPS] = "PMU_CAPS", [32] = "CPU_DOMAIN_INFO", [33] = "E_MACHINE", [34] = "CLN_SIZE",
};
#define NR_FEATS ((int)(sizeof(feat_names) / sizeof(*feat_names)))

/* A feature's bytes, read in order; reads past the end give 0 and set bad. */
struct fcur {
	const uint8_t *p;
	uint64_t len, pos;
	bool bad;
};

static uint32_t cur_u32(struct fcur *c)
{
	uint32_t v = 0;

	if (c->len - c->pos < 4 || c->pos > c->len) {
		c->bad = true;
		return 0;
	}
	memcpy(&v, c->p + c->pos, 4);
	c->pos += 4;
	return v;
}

/* perf's string: u32 length (padded), then the bytes, NUL-terminated within */
static void cur_str(struct fcur *c, char *buf, size_t size)
{
	uint32_t n = cur_u32(c);
	size_t k = 0;

	buf[0] = 0;
	if (c->bad || n > c->len - c->pos) {
		c->bad = true;
		return;
	}
	for (; k < n && k + 1 < size && c->p[c->pos + k]; k++)
		buf[k] = (char)c->p[c->pos + k];
	buf[k] = 0;
	c->pos += n;
}

/* A cursor on the recording's feature @feat (empty, reads fail, when it has none). */
static struct fcur feature_cur(const struct ds_reader *rd, int feat)
{
	uint64_t len = 0;
	const uint8_t *p = ds_reader__feature(rd, feat, &len);

	return (struct fcur){ p, p ? len : 0, 0, false };
}

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

static void print_usec(FILE *f, const char *what, uint64_t t)
{
	fprintf(f, "# %s : %" PRIu64 ".%06" PRIu64 "\n", what, t / 1000000000u, t % 1000000000u / 1000);
}

static void print_strings(FILE *f, struct fcur *c, const char *sep, const char *none)
{
	uint32_t n = cur_u32(c);
	char buf[4096];

	if (!n && none)
		fputs(none, f);
	for (uint32_t i = 0; i < n && !c->bad; i++) {
		cur_str(c, buf, sizeof(buf));
		fprintf(f, "%s%s", i && sep ? sep : "", buf);
		if (!sep)
			fputc(' ', f);
	}
}

/* One PMU's capabilities ("name=value" pairs) as perf prints them: "# PMU pmu capabilities: ...". */
static void print_caps(FILE *f, struct fcur *c, uint32_t n, const char *pmu)
{
	char name[256], value[256];

	fprintf(f, "# %s pmu capabilities: ", pmu);
	if (!n)
		fputs("not available", f);
	for (uint32_t i = 0; i < n && !c->bad; i++) {
		cur_str(c, name, sizeof(name));
		cur_str(c, value, sizeof(value));
		fprintf(f, "%s%s=%s", i ? ", " : "", name, value);
	}
	fputc('\n', f);
}

/* HEADER_PMU_CAPS: per PMU, its capabilities then its name (the name comes last in the file). */
static void print_pmu_caps(FILE *f, struct fcur *c)
{
	uint32_t nr_pmu = cur_u32(c);
	char pmu[256];

	for (uint32_t p = 0; p < nr_pmu && !c->bad; p++) {
		struct fcur at = *c;
		uint32_t n = cur_u32(c);

		for (uint32_t i = 0; i < 2 * n && !c->bad; i++)
			cur_str(c, pmu, sizeof(pmu));
		cur_str(c, pmu, sizeof(pmu));
		if (c->bad)
			return;
		n = cur_u32(&at);
		print_caps(f, &at, n, pmu);
	}
}

/* Does the recording's PMU mappings feature name @pmu? */
static bool has_pmu_mapping(const struct ds_reader *rd, const char *pmu)
{
	struct fcur c = feature_cur(rd, DS_FEAT_PMU_MAPPINGS);
	uint32_t n = cur_u32(&c);
	char name[256];

	for (uint32_t i = 0; i < n && !c.bad; i++) {
		cur_u32(&c);
		cur_str(&c, name, sizeof(name));
		if (!c.bad && !strcmp(name, pmu))
			return true;
	}
	return false;
}

/* The cpu PMU's capability @cap (from HEADER_CPU_PMU_CAPS) into @value; false if none. */
static bool cpu_pmu_cap(const struct ds_reader *rd, const char *cap, char *value, size_t n)
{
	struct fcur c = feature_cur(rd, DS_FEAT_CPU_PMU_CAPS);
	uint32_t nr = cur_u32(&c);
	char name[256];

	for (uint32_t i = 0; i < nr && !c.bad; i++) {
		cur_str(&c, name, sizeof(name));
		cur_str(&c, value, n);
		if (!c.bad && !strcmp(name, cap))
			return true;
	}
	return false;
}

/* perf's note after the PMUs' capabilities on an AMD machine whose core PMU has no precise events. */
static void print_amd_note(FILE *f, const struct ds_reader *rd, const struct ds_header_info *hi)
{
	char v[64];
	bool x86 = hi->arch && (!strcmp(hi->arch, "x86_64") || !strcmp(hi->arch, "x86") ||
				(hi->arch[0] == 'i' && !strcmp(hi->arch + 2, "86")));

	if (x86 && has_pmu_mapping(rd, "ibs_op") && cpu_pmu_cap(rd, "max_precise", v, sizeof(v)) && atoi(v) == 0)
		fputs("# AMD systems uses ibs_op// PMU for some precise events, e.g.: cycles:p, see the 'perf list' "
		      "man page for further details.\n", f);
}

static void print_pmu_mappings(FILE *f, struct fcur *c)
{
	uint32_t n = cur_u32(c);
	char name[256];

	fputs("# pmu mappings: ", f);
	for (uint32_t i = 0; i < n && !c->bad; i++) {
		uint32_t type = cur_u32(c);

		cur_str(c, name, sizeof(name));
		fprintf(f, "%s%s = %" PRIu32, i ? ", " : "", name, type);
	}
	if (!n)
		fputs("not available", f);
	fputc('\n', f);
}

void header_for_each_group(const struct ds_reader *rd, header_group_fn *fn, void *ctx)
{
	struct fcur c = feature_cur(rd, DS_FEAT_GROUP_DESC);
	uint32_t n = cur_u32(&c);
	char name[256];

	for (uint32_t i = 0; i < n && !c.bad; i++) {
		uint32_t leader, members;

		cur_str(&c, name, sizeof(name));
		leader = cur_u32(&c);
		members = cur_u32(&c);
		if (!c.bad)
			fn(ctx, name, leader, members);
	}
}

struct group_print {
	FILE *f;
	const struct ds_reader *rd;
};

/* "# group: NAME{a,b}" per group of more than one event (perf names an unnamed group "{anon_group}") */
static void print_group(void *ctx, const char *name, uint32_t leader, uint32_t members)
{
	struct group_print *g = ctx;

	if (members < 2 || leader >= ds_reader__nr_evsels(g->rd))
		return;
	fprintf(g->f, "# group: %s{", strcmp(name, "{anon_group}") ? name : "");
	for (uint32_t k = 0; k < members && leader + k < ds_reader__nr_evsels(g->rd); k++)
		fprintf(g->f, "%s%s", k ? "," : "", ds_reader__evsel(g->rd, leader + k)->name);
	fputs("}\n", g->f);
}

/* A feature that is one string: "# hostname : NAME" and the like. */
static void print_string_feature(FILE *f, int feat, struct fcur *c)
{
	static const char *const what[] = { [DS_FEAT_HOSTNAME] = "hostname", [DS_FEAT_OSRELEASE] = "os release",
					    [DS_FEAT_VERSION] = "perf version", [DS_FEAT_ARCH] = "arch",
					    [DS_FEAT_CPUDESC] = "cpudesc", [DS_FEAT_CPUID] = "cpuid" };
	char buf[4096];

	cur_str(c, buf, sizeof(buf));
	fprintf(f, "# %s : %s\n", what[feat], buf);
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
		fprintf(f, "# %s info available, use -I to display\n", feat_names[feat]);
		break;
	}
}

/* HEADER_SAMPLE_TIME: the first and last samples' times and the span between. */
static void print_sample_time(FILE *f, const struct ds_header_info *hi)
{
	print_usec(f, "time of first sample", hi->first_sample_time);
	print_usec(f, "time of last sample", hi->last_sample_time);
	fprintf(f, "# sample duration : %10.3f ms\n",
		(double)(hi->last_sample_time - hi->first_sample_time) / 1e6);
}

static uint64_t cur_u64(struct fcur *c)
{
	uint64_t lo = cur_u32(c), hi = cur_u32(c);

	return lo | hi << 32;
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

/* CLOCKID (record -k): the clock's resolution, as perf prints it */
static void print_clockid(FILE *f, struct fcur *c)
{
	uint64_t res_ns = cur_u64(c);

	if (!c->bad)
		fprintf(f, "# clockid frequency: %" PRIu64 " MHz\n", res_ns * 1000);
}

/* CLOCK_DATA: the clock and a reference time of day, as perf prints them (version 1 only, as perf reads it) */
static void print_clock_data(FILE *f, struct fcur *c)
{
	uint32_t version = cur_u32(c), id = cur_u32(c);
	uint64_t tod = cur_u64(c), clk = cur_u64(c);
	time_t sec = (time_t)(tod / 1000000000ULL);
	char date[64] = "<error>";
	struct tm tm;

	if (c->bad || version != 1)
		return;
	if (localtime_r(&sec, &tm))
		strftime(date, sizeof(date), "%F %T", &tm);
	fprintf(f, "# clockid: %s (%u)\n", clockid_name(id), id);
	fprintf(f, "# reference time: %s.%06d = %ld.%06d (TOD) = %ld.%09ld (%s)\n", date,
		(int)(tod % 1000000000ULL / 1000), (long)sec, (int)(tod % 1000000000ULL / 1000),
		(long)(clk / 1000000000ULL), (long)(clk % 1000000000ULL), clockid_name(id));
}

/* One feature's block; features perf prints only with -I are announced. */
static void print_feature(FILE *f, const struct ds_reader *rd, int feat)
{
	const struct ds_header_info *hi = ds_reader__info(rd);
	struct fcur c = feature_cur(rd, feat);

	/* nothing to read (an older perf's end-of-features mark in a pipe, whose id a newer perf has
	 * given to a feature): perf fails to read it and prints nothing; but BRANCH_STACK and STAT
	 * have no body, their presence is what they say */
	if (!c.len && feat != DS_FEAT_BRANCH_STACK && feat != DS_FEAT_STAT)
		return;
	switch (feat) {
	case DS_FEAT_HOSTNAME: case DS_FEAT_OSRELEASE: case DS_FEAT_VERSION: case DS_FEAT_ARCH:
	case DS_FEAT_CPUDESC: case DS_FEAT_CPUID:
		print_string_feature(f, feat, &c);
		break;
	case DS_FEAT_NRCPUS:
		fprintf(f, "# nrcpus online : %u\n# nrcpus avail : %u\n", hi->nr_cpus_online, hi->nr_cpus_avail);
		break;
	case DS_FEAT_TOTAL_MEM:
		fprintf(f, "# total memory : %" PRIu64 " kB\n", hi->total_mem);
		break;
	case DS_FEAT_CMDLINE:
		fputs("# cmdline : ", f);
		print_strings(f, &c, NULL, NULL);
		fputc('\n', f);
		break;
	case DS_FEAT_EVENT_DESC:
		print_events(f, rd);
		break;
	case DS_FEAT_CPU_TOPOLOGY: case DS_FEAT_NUMA_TOPOLOGY: case DS_FEAT_CACHE: case DS_FEAT_MEM_TOPOLOGY:
	case DS_FEAT_HYBRID_TOPOLOGY: case 32: case DS_FEAT_BRANCH_STACK: case DS_FEAT_AUXTRACE: case DS_FEAT_STAT:
		print_feature_note(f, feat);
		break;
	case DS_FEAT_PMU_MAPPINGS:
		print_pmu_mappings(f, &c);
		break;
	case DS_FEAT_GROUP_DESC: {
		struct group_print g = { f, rd };

		header_for_each_group(rd, print_group, &g);
		break;
	}
	case DS_FEAT_SAMPLE_TIME:
		print_sample_time(f, hi);
		break;
	case DS_FEAT_BPF_PROG_INFO: {
		struct fcur btf = feature_cur(rd, DS_FEAT_BPF_BTF);

		header_print_bpf_progs(f, c.p, c.len, btf.p, btf.len);
		break;
	}
	case DS_FEAT_BPF_BTF:
		header_print_btfs(f, c.p, c.len);
		break;
	case DS_FEAT_COMPRESSED:
		fprintf(f, "# compressed : %s, level = %u, ratio = %u\n", hi->comp_type == DS_COMP_ZSTD ? "Zstd" : "Unknown",
			hi->comp_level, hi->comp_ratio);
		break;
	case DS_FEAT_CPU_PMU_CAPS:
		print_caps(f, &c, cur_u32(&c), "cpu");
		break;
	case DS_FEAT_PMU_CAPS:
		print_pmu_caps(f, &c);
		print_amd_note(f, rd, hi);
		break;
	case 33: {
		uint32_t machine = cur_u32(&c), eflags = cur_u32(&c);

		fprintf(f, "# e_machine : %u\n#   e_flags : %u\n", machine, eflags);
		break;
	}
	case 34:
		fprintf(f, "# cacheline size: %u\n", cur_u32(&c));
		break;
	case DS_FEAT_DIR_FORMAT:
		fprintf(f, "# directory data version : %" PRIu64 "\n", cur_u64(&c));
		break;
	case DS_FEAT_CLOCKID:
		print_clockid(f, &c);
		break;
	case DS_FEAT_CLOCK_DATA:
		print_clock_data(f, &c);
		break;
	default:   /* tracing data, build-ids, group details: perf prints them with -I only or not at all */
		break;
	}
}

void header_print_layout(FILE *f, const char *path, const struct ds_reader *rd)
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

void header_print_features(FILE *f, const struct ds_reader *rd)
{
	const struct ds_header_info *hi = ds_reader__info(rd);

	for (int feat = 1; feat < NR_FEATS; feat++)
		if (ds_header_info__has_feature(hi, feat))
			print_feature(f, rd, feat);
	if (!hi->pipe) {
		fputs("# missing features: ", f);
		for (int feat = 1; feat < NR_FEATS; feat++)
			if (!ds_header_info__has_feature(hi, feat))
				fprintf(f, "%s ", feat_names[feat]);
		fputc('\n', f);
	}
}

void header_print(FILE *f, const char *path, const struct ds_reader *rd)
{
	const struct ds_header_info *hi = ds_reader__info(rd);

	header_print_layout(f, path, rd);
	if (hi->pipe) {   /* perf prints a pipe's features as they come, after the layout */
		fputs("# ========\n#\n", f);
		header_print_features(f, rd);
		return;
	}
	header_print_features(f, rd);
	fputs("# ========\n#\n", f);
}

int header_print_only(const char *cmd, const char *input)
{
	char *err = NULL;
	struct ds_reader *rd = ds_reader__open(input, &err);
	struct ds_record rec;
	int ret = 0;

	if (!rd) {
		fprintf(stderr, "dstack %s: %s\n", cmd, err ? err : "cannot open the input");
		free(err);
		return EXIT_INPUT;
	}
	/* a pipe's features are records ahead of its first kernel event */
	while (ds_reader__info(rd)->pipe && (ret = ds_reader__next(rd, &rec)) > 0 && rec.hdr->type >= 64)
		;
	if (ret < 0)
		fprintf(stderr, "dstack %s: %s\n", cmd, ds_reader__error(rd));
	header_print(stdout, input, rd);
	ds_reader__close(rd);
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "dstack %s: writing the output failed\n", cmd);
		return EXIT_INPUT;
	}
	return ret < 0 ? EXIT_INPUT : EXIT_OK;
}
