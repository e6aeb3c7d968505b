/* SPDX-License-Identifier: MIT */
/*
 * The perf.data and perf_event ABI as dstack reads it, defined here rather
 * than taken from <linux/perf_event.h>: Debian bookworm's 6.1 headers lack
 * the deferred-callchain parts (Linux 6.19), and a file reader must not
 * depend on the build host's kernel headers anyway.  Little-endian only.
 */
#ifndef DSTACK_ABI_H
#define DSTACK_ABI_H

#include <stdint.h>

#define DS_PERF_MAGIC2 0x32454c4946524550ULL /* "PERFILE2" */

/* kernel record types */
enum {
	DS_REC_MMAP = 1,
	DS_REC_LOST = 2,
	DS_REC_COMM = 3,
	DS_REC_EXIT = 4,
	DS_REC_THROTTLE = 5,
	DS_REC_UNTHROTTLE = 6,
	DS_REC_FORK = 7,
	DS_REC_READ = 8,
	DS_REC_SAMPLE = 9,
	DS_REC_MMAP2 = 10,
	DS_REC_AUX = 11,
	DS_REC_ITRACE_START = 12,
	DS_REC_LOST_SAMPLES = 13,
	DS_REC_SWITCH = 14,
	DS_REC_SWITCH_CPU_WIDE = 15,
	DS_REC_NAMESPACES = 16,
	DS_REC_KSYMBOL = 17,
	DS_REC_BPF_EVENT = 18,
	DS_REC_CGROUP = 19,
	DS_REC_TEXT_POKE = 20,
	DS_REC_AUX_OUTPUT_HW_ID = 21,
	DS_REC_CALLCHAIN_DEFERRED = 22,
	DS_REC_KERNEL_MAX,

	/* perf tool ("user") record types */
	DS_REC_HEADER_ATTR = 64,
	DS_REC_HEADER_EVENT_TYPE = 65,
	DS_REC_HEADER_TRACING_DATA = 66,
	DS_REC_HEADER_BUILD_ID = 67,
	DS_REC_FINISHED_ROUND = 68,
	DS_REC_ID_INDEX = 69,
	DS_REC_AUXTRACE_INFO = 70,
	DS_REC_AUXTRACE = 71,
	DS_REC_AUXTRACE_ERROR = 72,
	DS_REC_THREAD_MAP = 73,
	DS_REC_CPU_MAP = 74,
	DS_REC_STAT_CONFIG = 75,
	DS_REC_STAT = 76,
	DS_REC_STAT_ROUND = 77,
	DS_REC_EVENT_UPDATE = 78,
	DS_REC_TIME_CONV = 79,
	DS_REC_HEADER_FEATURE = 80,
	DS_REC_COMPRESSED = 81,
	DS_REC_FINISHED_INIT = 82,
	DS_REC_COMPRESSED2 = 83,
	DS_REC_MAX = 256,
};

/* perf_event_header.misc */
#define DS_MISC_CPUMODE_MASK   7
#define DS_MISC_KERNEL         1
#define DS_MISC_USER           2
#define DS_MISC_HYPERVISOR     3
#define DS_MISC_GUEST_KERNEL   4
#define DS_MISC_GUEST_USER     5
#define DS_MISC_MMAP_BUILD_ID  (1 << 14)
#define DS_MISC_COMM_EXEC      (1 << 13)
#define DS_MISC_MMAP_DATA      (1 << 13)   /* the same bit, in MMAP records */
#define DS_MISC_SWITCH_OUT_PREEMPT (1 << 14) /* SWITCH records: the task was preempted */
#define DS_MISC_BUILD_ID_SIZE  (1 << 15)
#define DS_MISC_SWITCH_OUT     (1 << 13)   /* the same bit, in SWITCH records */

/* sample_type bits */
enum {
	DS_SAMPLE_IP = 1U << 0,
	DS_SAMPLE_TID = 1U << 1,
	DS_SAMPLE_TIME = 1U << 2,
	DS_SAMPLE_ADDR = 1U << 3,
	DS_SAMPLE_READ = 1U << 4,
	DS_SAMPLE_CALLCHAIN = 1U << 5,
	DS_SAMPLE_ID = 1U << 6,
	DS_SAMPLE_CPU = 1U << 7,
	DS_SAMPLE_PERIOD = 1U << 8,
	DS_SAMPLE_STREAM_ID = 1U << 9,
	DS_SAMPLE_RAW = 1U << 10,
	DS_SAMPLE_BRANCH_STACK = 1U << 11,
	DS_SAMPLE_REGS_USER = 1U << 12,
	DS_SAMPLE_STACK_USER = 1U << 13,
	DS_SAMPLE_WEIGHT = 1U << 14,
	DS_SAMPLE_DATA_SRC = 1U << 15,
	DS_SAMPLE_IDENTIFIER = 1U << 16,
	DS_SAMPLE_TRANSACTION = 1U << 17,
	DS_SAMPLE_REGS_INTR = 1U << 18,
	DS_SAMPLE_PHYS_ADDR = 1U << 19,
	DS_SAMPLE_AUX = 1U << 20,
	DS_SAMPLE_CGROUP = 1U << 21,
	DS_SAMPLE_DATA_PAGE_SIZE = 1U << 22,
	DS_SAMPLE_CODE_PAGE_SIZE = 1U << 23,
	DS_SAMPLE_WEIGHT_STRUCT = 1U << 24,
	DS_SAMPLE_KNOWN = (1U << 25) - 1,
};

/* PERF_SAMPLE_REGS_USER / _INTR: the ABI word before the registers */
enum {
	DS_REGS_ABI_NONE = 0,
	DS_REGS_ABI_32 = 1,
	DS_REGS_ABI_64 = 2,
};

/*
 * x86's perf register numbers (bits of sample_regs_user), the same for
 * 64-bit and 32-bit tasks: AX..GS, then R8..R15 (0 in a 32-bit task).
 */
enum {
	DS_X86_AX, DS_X86_BX, DS_X86_CX, DS_X86_DX, DS_X86_SI, DS_X86_DI, DS_X86_BP, DS_X86_SP,
	DS_X86_IP, DS_X86_FLAGS, DS_X86_CS, DS_X86_SS, DS_X86_DS, DS_X86_ES, DS_X86_FS, DS_X86_GS,
	DS_X86_R8, DS_X86_R15 = DS_X86_R8 + 7,
	DS_X86_NR_REGS
};

/* read_format bits */
enum {
	DS_FORMAT_TOTAL_TIME_ENABLED = 1 << 0,
	DS_FORMAT_TOTAL_TIME_RUNNING = 1 << 1,
	DS_FORMAT_ID = 1 << 2,
	DS_FORMAT_GROUP = 1 << 3,
	DS_FORMAT_LOST = 1 << 4,
};

/* branch_sample_type bits that change the sample layout */
#define DS_BRANCH_HW_INDEX (1ULL << 17)
#define DS_BRANCH_COUNTERS (1ULL << 19)

/* perf_event_attr flag bits (the bitfield word at offset 40) */
enum {
	DS_ATTR_DISABLED = 0, DS_ATTR_INHERIT = 1, DS_ATTR_PINNED = 2,
	DS_ATTR_EXCLUSIVE = 3, DS_ATTR_EXCLUDE_USER = 4, DS_ATTR_EXCLUDE_KERNEL = 5,
	DS_ATTR_EXCLUDE_HV = 6, DS_ATTR_EXCLUDE_IDLE = 7, DS_ATTR_MMAP = 8,
	DS_ATTR_COMM = 9, DS_ATTR_FREQ = 10, DS_ATTR_INHERIT_STAT = 11,
	DS_ATTR_ENABLE_ON_EXEC = 12, DS_ATTR_TASK = 13, DS_ATTR_WATERMARK = 14,
	DS_ATTR_PRECISE_IP = 15 /* 2 bits */, DS_ATTR_MMAP_DATA = 17,
	DS_ATTR_SAMPLE_ID_ALL = 18, DS_ATTR_EXCLUDE_HOST = 19,
	DS_ATTR_EXCLUDE_GUEST = 20, DS_ATTR_EXCLUDE_CALLCHAIN_KERNEL = 21,
	DS_ATTR_EXCLUDE_CALLCHAIN_USER = 22, DS_ATTR_MMAP2 = 23,
	DS_ATTR_COMM_EXEC = 24, DS_ATTR_USE_CLOCKID = 25,
	DS_ATTR_CONTEXT_SWITCH = 26, DS_ATTR_WRITE_BACKWARD = 27,
	DS_ATTR_NAMESPACES = 28, DS_ATTR_KSYMBOL = 29, DS_ATTR_BPF_EVENT = 30,
	DS_ATTR_AUX_OUTPUT = 31, DS_ATTR_CGROUP = 32, DS_ATTR_TEXT_POKE = 33,
	DS_ATTR_BUILD_ID = 34, DS_ATTR_INHERIT_THREAD = 35,
	DS_ATTR_REMOVE_ON_EXEC = 36, DS_ATTR_SIGTRAP = 37,
	DS_ATTR_DEFER_CALLCHAIN = 38, DS_ATTR_DEFER_OUTPUT = 39,
};
#define DS_ATTR_FLAG(attr, bit) (((attr)->flags >> (bit)) & 1)

/*
 * struct perf_event_attr as laid out on disk, up to PERF_ATTR_SIZE_VER8
 * (144 bytes, what perf 7.2 writes).  Smaller on-disk attrs are zero
 * extended; larger ones are truncated (the extra bytes must be zero).
 */
/* perf_event_attr.type of a tracepoint event (its config is the format's ID) */
#define DS_PERF_TYPE_TRACEPOINT 2

struct ds_attr {
	uint32_t type;
	uint32_t size;
	uint64_t config;
	uint64_t sample_period;         /* or sample_freq when freq is set */
	uint64_t sample_type;
	uint64_t read_format;
	uint64_t flags;
	uint32_t wakeup_events;
	uint32_t bp_type;
	uint64_t config1;
	uint64_t config2;
	uint64_t branch_sample_type;
	uint64_t sample_regs_user;
	uint32_t sample_stack_user;
	int32_t clockid;
	uint64_t sample_regs_intr;
	uint32_t aux_watermark;
	uint16_t sample_max_stack;
	uint16_t reserved_2;
	uint32_t aux_sample_size;
	uint32_t aux_action;
	uint64_t sig_data;
	uint64_t config3;
	uint64_t config4;
};
#define DS_ATTR_SIZE_VER0 64
#define DS_ATTR_SIZE_MAX  ((uint32_t)sizeof(struct ds_attr))

struct ds_event_header {
	uint32_t type;
	uint16_t misc;
	uint16_t size;
};

/* callchain context markers */
#define DS_CONTEXT_HV            ((uint64_t)-32)
#define DS_CONTEXT_KERNEL        ((uint64_t)-128)
#define DS_CONTEXT_USER          ((uint64_t)-512)
#define DS_CONTEXT_USER_DEFERRED ((uint64_t)-640)
#define DS_CONTEXT_GUEST         ((uint64_t)-2048)
#define DS_CONTEXT_GUEST_KERNEL  ((uint64_t)-2176)
#define DS_CONTEXT_GUEST_USER    ((uint64_t)-2560)
#define DS_CONTEXT_MAX           ((uint64_t)-4095)

/* perf.data file header features (bit numbers in adds_features) */
enum {
	DS_FEAT_TRACING_DATA = 1, DS_FEAT_BUILD_ID, DS_FEAT_HOSTNAME,
	DS_FEAT_OSRELEASE, DS_FEAT_VERSION, DS_FEAT_ARCH, DS_FEAT_NRCPUS,
	DS_FEAT_CPUDESC, DS_FEAT_CPUID, DS_FEAT_TOTAL_MEM, DS_FEAT_CMDLINE,
	DS_FEAT_EVENT_DESC, DS_FEAT_CPU_TOPOLOGY, DS_FEAT_NUMA_TOPOLOGY,
	DS_FEAT_BRANCH_STACK, DS_FEAT_PMU_MAPPINGS, DS_FEAT_GROUP_DESC,
	DS_FEAT_AUXTRACE, DS_FEAT_STAT, DS_FEAT_CACHE, DS_FEAT_SAMPLE_TIME,
	DS_FEAT_MEM_TOPOLOGY, DS_FEAT_CLOCKID, DS_FEAT_DIR_FORMAT,
	DS_FEAT_BPF_PROG_INFO, DS_FEAT_BPF_BTF, DS_FEAT_COMPRESSED,
	DS_FEAT_CPU_PMU_CAPS, DS_FEAT_CLOCK_DATA, DS_FEAT_HYBRID_TOPOLOGY,
	DS_FEAT_PMU_CAPS, DS_FEAT_MAX_KNOWN,
	DS_FEAT_BITS = 256,
};

struct ds_file_section {
	uint64_t offset;
	uint64_t size;
};

struct ds_file_header {
	uint64_t magic;
	uint64_t size;
	uint64_t attr_size;
	struct ds_file_section attrs;
	struct ds_file_section data;
	struct ds_file_section event_types;
	uint64_t adds_features[DS_FEAT_BITS / 64];
};

#define DS_COMP_ZSTD 1

#endif
