// SPDX-License-Identifier: MIT
/*
 * perf script's field selection (tools/perf/builtin-script.c, read as a
 * reference): the same names, per-type defaults, `type:` / `+` / `-`
 * forms and checks, so that a -F list gives what perf 7.2 gives.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dstack/abi.h"
#include "script_fields.h"

static const struct {
	const char *name;
	bool supported;   /* false: perf prints it, dstack does not (yet): refused.  callindent is
			   * taken and prints nothing: perf indents only samples with branch flags
			   * (decoded AUX traces), which dstack does not make */
} field_names[SF_NR] = {
	[SF_COMM] = { "comm", true }, [SF_TID] = { "tid", true }, [SF_PID] = { "pid", true },
	[SF_TIME] = { "time", true }, [SF_CPU] = { "cpu", true }, [SF_EVNAME] = { "event", true },
	[SF_TRACE] = { "trace", true }, [SF_IP] = { "ip", true }, [SF_SYM] = { "sym", true },
	[SF_DSO] = { "dso", true }, [SF_DSOFF] = { "dsoff", true }, [SF_ADDR] = { "addr", true },
	[SF_SYMOFFSET] = { "symoff", true }, [SF_SRCLINE] = { "srcline", true },
	[SF_PERIOD] = { "period", true }, [SF_IREGS] = { "iregs", true }, [SF_UREGS] = { "uregs", true },
	[SF_BRSTACK] = { "brstack", true }, [SF_BRSTACKSYM] = { "brstacksym", true },
	[SF_DATA_SRC] = { "data_src", true }, [SF_WEIGHT] = { "weight", true },
	[SF_BPF_OUTPUT] = { "bpf-output", false }, [SF_CALLINDENT] = { "callindent", true },
	[SF_INSN] = { "insn", false }, [SF_DISASM] = { "disasm", false }, [SF_INSNLEN] = { "insnlen", false },
	[SF_BRSTACKINSN] = { "brstackinsn", false }, [SF_BRSTACKOFF] = { "brstackoff", false },
	[SF_SYNTH] = { "synth", false }, [SF_PHYS_ADDR] = { "phys_addr", true },
	[SF_METRIC] = { "metric", false }, [SF_MISC] = { "misc", false }, [SF_SRCCODE] = { "srccode", false },
	[SF_IPC] = { "ipc", false }, [SF_TOD] = { "tod", false },
	[SF_DATA_PAGE_SIZE] = { "data_page_size", true }, [SF_CODE_PAGE_SIZE] = { "code_page_size", true },
	[SF_INS_LAT] = { "ins_lat", true }, [SF_BRSTACKINSNLEN] = { "brstackinsnlen", false },
	[SF_MACHINE_PID] = { "machine_pid", false }, [SF_VCPU] = { "vcpu", false },
	[SF_CGROUP] = { "cgroup", false }, [SF_RETIRE_LAT] = { "retire_lat", true },
	[SF_BRSTACKDISASM] = { "brstackdisasm", false }, [SF_BRCNTR] = { "brcntr", false },
};

static const char *const type_names[ST_NR] = {
	[ST_HW] = "hardware", [ST_SW] = "software", [ST_TRACE] = "tracepoint", [ST_HWCACHE] = "hardware-cache",
	[ST_RAW] = "raw", [ST_BREAK] = "breakpoint", [ST_SYNTH] = "synthesized", [ST_OTHER] = "other",
};

#define DEFAULT_FIELDS (SF(COMM) | SF(TID) | SF(CPU) | SF(TIME) | SF(EVNAME) | SF(IP) | SF(SYM) | \
			SF(SYMOFFSET) | SF(DSO))

static const uint64_t invalid_fields[ST_NR] = {
	[ST_HW] = SF(TRACE) | SF(BPF_OUTPUT), [ST_SW] = SF(TRACE), [ST_TRACE] = 0,
	[ST_HWCACHE] = SF(TRACE) | SF(BPF_OUTPUT), [ST_RAW] = SF(TRACE) | SF(BPF_OUTPUT),
	[ST_BREAK] = SF(TRACE) | SF(BPF_OUTPUT), [ST_SYNTH] = SF(TRACE) | SF(BPF_OUTPUT),
	[ST_OTHER] = SF(TRACE) | SF(BPF_OUTPUT),
};

const char *script_fields_names(void)
{
	static char buf[640];

	if (!buf[0]) {
		size_t n = 0;

		for (int i = 0; i < SF_NR; i++)
			if (field_names[i].supported)
				n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%s", n ? "," : "", field_names[i].name);
	}
	return buf;
}

void script_fields_init(struct script_fields *f)
{
	memset(f, 0, sizeof(*f));
	f->fields[ST_HW] = f->fields[ST_HWCACHE] = f->fields[ST_BREAK] = f->fields[ST_OTHER] =
		DEFAULT_FIELDS | SF(PERIOD);
	f->fields[ST_SW] = DEFAULT_FIELDS | SF(PERIOD) | SF(BPF_OUTPUT);
	f->fields[ST_TRACE] = SF(COMM) | SF(TID) | SF(CPU) | SF(TIME) | SF(EVNAME) | SF(TRACE);
	f->fields[ST_RAW] = DEFAULT_FIELDS | SF(PERIOD) | SF(ADDR) | SF(DATA_SRC) | SF(WEIGHT) | SF(PHYS_ADDR) |
			    SF(DATA_PAGE_SIZE) | SF(CODE_PAGE_SIZE) | SF(INS_LAT) | SF(RETIRE_LAT);
	f->fields[ST_SYNTH] = DEFAULT_FIELDS | SF(SYNTH);
}

int script_field_type(uint32_t attr_type)
{
	if (attr_type == 6)   /* PERF_TYPE_SYNTH is INT_MAX + 1 in perf; 6 is PERF_TYPE_MAX */
		return ST_OTHER;
	if (attr_type < 6)
		return (int)attr_type;
	return attr_type == 0x80000000u ? ST_SYNTH : ST_OTHER;
}

static int parse_type(const char *s)
{
	static const char *const prefixes[] = { "hw", "sw", "trace", NULL, "raw", "break", "synth" };

	for (int i = 0; i < (int)(sizeof(prefixes) / sizeof(*prefixes)); i++)
		if (prefixes[i] && !strcmp(s, prefixes[i]))
			return i;
	return -1;
}

static bool user_set_any(const struct script_fields *f)
{
	for (int j = 0; j < ST_NR; j++)
		if (f->user_set[j])
			return true;
	return false;
}

static int find_field(const char *tok)
{
	for (int i = 0; i < SF_NR; i++)
		if (!strcmp(tok, field_names[i].name))
			return i;
	return -1;
}

/* One field of a -F list, for @type (-1: every type it is valid for). */
static int apply_field(struct script_fields *f, int type, int i, bool remove)
{
	uint64_t bit = 1ULL << i;

	if (!field_names[i].supported && !remove) {
		fprintf(stderr, "dstack script: not supported: -F %s (perf prints it, dstack does not)\n",
			field_names[i].name);
		return -1;
	}
	if (type >= 0) {
		if (invalid_fields[type] & bit) {
			fprintf(stderr, "'%s' not valid for %s events.\n", field_names[i].name, type_names[type]);
			return -1;
		}
		if (remove)
			f->fields[type] &= ~bit;
		else
			f->fields[type] |= bit;
		f->user_set[type] = f->wildcard_set[type] = true;
		return 0;
	}
	for (int j = 0; j < ST_NR; j++) {
		if (invalid_fields[j] & bit) {
			/* perf warns for the kinds of events the file may well not have */
			if (j != ST_HWCACHE && j != ST_OTHER)
				fprintf(stderr, "'%s' not valid for %s events. Ignoring.\n", field_names[i].name,
					type_names[j]);
			continue;
		}
		if (remove) {
			f->fields[j] &= ~bit;
			f->user_set_fields[j] &= ~bit;
			f->user_unset_fields[j] |= bit;
		} else {
			f->fields[j] |= bit;
			f->user_set_fields[j] |= bit;
			f->user_unset_fields[j] &= ~bit;
		}
		f->user_set[j] = f->wildcard_set[j] = true;
	}
	return 0;
}

static int parse_list(struct script_fields *f, int type, char *list)
{
	enum { DEFAULT, SET, ADD, REMOVE } change = DEFAULT;
	char *save = NULL;

	for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int i;

		if (*tok == '+' || *tok == '-') {
			if (change == SET)
				goto badmix;
			change = *tok++ == '+' ? ADD : REMOVE;
		} else {
			if (change != SET && change != DEFAULT)
				goto badmix;
			change = SET;
		}
		if (!strcmp(tok, "flags")) {
			if (change == REMOVE)
				continue;
			fprintf(stderr, "dstack script: not supported: -F flags (perf prints it, dstack does not)\n");
			return -1;
		}
		i = find_field(tok);
		if (i < 0) {
			fprintf(stderr, "Invalid field requested: '%s' (fields: %s)\n", tok, script_fields_names());
			return -1;
		}
		if (apply_field(f, type, i, change == REMOVE))
			return -1;
	}
	return 0;
badmix:
	fprintf(stderr, "Cannot mix +-field with overridden fields\n");
	return -1;
}

int script_fields_parse(struct script_fields *f, const char *arg)
{
	char *str = strdup(arg), *list, *colon;
	int type = -1, ret;

	if (!str) {
		fprintf(stderr, "dstack script: out of memory\n");
		return -1;
	}
	colon = strchr(str, ':');
	list = str;
	if (colon) {
		*colon = 0;
		list = colon + 1;
		type = parse_type(str);
		if (type < 0) {
			fprintf(stderr, "Invalid event type in field string: '%s' (hw, sw, trace, raw, break, synth)\n", str);
			free(str);
			return -1;
		}
		if (f->user_set[type])
			fprintf(stderr, "Overriding previous field request for %s events.\n", type_names[type]);
		/* a +/- list changes the defaults; a plain one replaces them */
		if (!strchr(list, '+') && !strchr(list, '-')) {
			f->fields[type] = 0;
			f->user_set[type] = true;
			f->wildcard_set[type] = false;
		}
	} else {
		if (!*str) {
			fprintf(stderr, "Cannot set fields to 'none' for all event types.\n");
			free(str);
			return -1;
		}
		if (!strchr(str, '+') && !strchr(str, '-')) {
			if (user_set_any(f))
				fprintf(stderr, "Overriding previous field request for all events.\n");
			for (int j = 0; j < ST_NR; j++) {
				f->fields[j] = 0;
				f->user_set[j] = f->wildcard_set[j] = true;
			}
		}
	}
	ret = parse_list(f, type, list);
	free(str);
	return ret;
}

static bool is_dummy(const struct ds_evsel *e)
{
	return e->attr.type == 1 && e->attr.config == 9;
}

static const char *sample_msg(int field)
{
	switch (field) {
	case SF_IP: return "IP";
	case SF_ADDR: return "ADDR";
	case SF_DATA_SRC: return "DATA_SRC";
	case SF_WEIGHT: return "WEIGHT";
	case SF_TID: case SF_PID: return "TID";
	case SF_TIME: return "TIME";
	case SF_CPU: return "CPU";
	case SF_IREGS: return "IREGS";
	case SF_UREGS: return "UREGS";
	case SF_PHYS_ADDR: return "PHYS_ADDR";
	case SF_DATA_PAGE_SIZE: return "DATA_PAGE_SIZE";
	case SF_CODE_PAGE_SIZE: return "CODE_PAGE_SIZE";
	default: return "WEIGHT_STRUCT";
	}
}

/*
 * A field needs @stype bits in the samples: without them it leaves the
 * defaults, or, asked for by the user, it is an error (perf lets a file
 * with AUX data have them anyway: its samples are synthesized).
 */
static int need_stype(struct script_fields *f, int type, const struct ds_evsel *e, uint64_t stype, int field,
		      uint64_t bits, bool allow_user_set)
{
	if (!(f->fields[type] & (1ULL << field)) || (e->attr.sample_type & stype))
		return 0;
	if (f->user_set_fields[type] & bits) {
		if (allow_user_set)
			return 0;
		fprintf(stderr, "Samples for '%s' event do not have %s attribute set. Cannot print '%s' field.\n",
			e->name, sample_msg(field), field_names[field].name);
		return -1;
	}
	f->fields[type] &= ~bits;
	return 0;
}

static int check_evsel(struct script_fields *f, int t, const struct ds_evsel *e, bool aux)
{
	uint64_t st = e->attr.sample_type, fl = f->fields[t];

	if (need_stype(f, t, e, DS_SAMPLE_IP, SF_IP, SF(IP), false) ||
	    need_stype(f, t, e, DS_SAMPLE_ADDR, SF_ADDR, SF(ADDR), aux) ||
	    need_stype(f, t, e, DS_SAMPLE_DATA_SRC, SF_DATA_SRC, SF(DATA_SRC), aux) ||
	    need_stype(f, t, e, DS_SAMPLE_WEIGHT | DS_SAMPLE_WEIGHT_STRUCT, SF_WEIGHT, SF(WEIGHT), aux))
		return -1;
	fl = f->fields[t];
	if ((fl & SF(SYM)) && !(st & (DS_SAMPLE_IP | DS_SAMPLE_ADDR))) {
		fprintf(stderr, "Display of symbols requested but neither sample IP nor sample address\n"
				"available. Hence, no addresses to convert to symbols.\n");
		return -1;
	}
	if ((fl & SF(SYMOFFSET)) && !(fl & SF(SYM))) {
		fprintf(stderr, "Display of offsets requested but symbol is not selected.\n");
		return -1;
	}
	if ((fl & SF(DSO)) && !(st & (DS_SAMPLE_IP | DS_SAMPLE_ADDR))) {
		fprintf(stderr, "Display of DSO requested but no address to convert.\n");
		return -1;
	}
	if ((fl & SF(SRCLINE)) && !(fl & SF(IP))) {
		fprintf(stderr, "Display of source line number requested but sample IP is not\n"
				"selected. Hence, no address to lookup the source line number.\n");
		return -1;
	}
	if ((fl & (SF(PID) | SF(TID))) &&
	    need_stype(f, t, e, DS_SAMPLE_TID, (fl & SF(TID)) ? SF_TID : SF_PID, SF(TID) | SF(PID), false))
		return -1;
	if (need_stype(f, t, e, DS_SAMPLE_TIME, SF_TIME, SF(TIME), false) ||
	    need_stype(f, t, e, DS_SAMPLE_CPU, SF_CPU, SF(CPU), aux) ||
	    need_stype(f, t, e, DS_SAMPLE_REGS_INTR, SF_IREGS, SF(IREGS), aux) ||
	    need_stype(f, t, e, DS_SAMPLE_REGS_USER, SF_UREGS, SF(UREGS), false) ||
	    need_stype(f, t, e, DS_SAMPLE_PHYS_ADDR, SF_PHYS_ADDR, SF(PHYS_ADDR), aux) ||
	    need_stype(f, t, e, DS_SAMPLE_DATA_PAGE_SIZE, SF_DATA_PAGE_SIZE, SF(DATA_PAGE_SIZE), false) ||
	    need_stype(f, t, e, DS_SAMPLE_CODE_PAGE_SIZE, SF_CODE_PAGE_SIZE, SF(CODE_PAGE_SIZE), false) ||
	    need_stype(f, t, e, DS_SAMPLE_WEIGHT_STRUCT, SF_INS_LAT, SF(INS_LAT), false) ||
	    need_stype(f, t, e, DS_SAMPLE_WEIGHT_STRUCT, SF_RETIRE_LAT, SF(RETIRE_LAT), false))
		return -1;
	return 0;
}

int script_fields_check(struct script_fields *f, const struct ds_reader *rd)
{
	const struct ds_header_info *hi = ds_reader__info(rd);
	bool aux = ds_header_info__has_feature(hi, DS_FEAT_AUXTRACE);
	bool stat = ds_header_info__has_feature(hi, DS_FEAT_STAT);
	size_t nr = ds_reader__nr_evsels(rd);

	for (int t = 0; t < ST_NR; t++) {
		const struct ds_evsel *first = NULL;

		for (size_t i = 0; i < nr && !first; i++) {
			const struct ds_evsel *e = ds_reader__evsel(rd, i);

			if (script_field_type(e->attr.type) != t)
				continue;
			f->frame_opts[t] |= hi->pipe;   /* a pipe's first event of the type, dummy or not */
			if (!is_dummy(e))
				first = e;
		}
		f->frame_opts[t] |= first != NULL;
		if (!first) {
			if (f->user_set[t] && !f->wildcard_set[t] && t != ST_SYNTH) {
				fprintf(stderr, "%s events do not exist. Remove corresponding -F option to proceed.\n",
					type_names[t]);
				return -1;
			}
			continue;
		}
		if (f->fields[t] && !stat && check_evsel(f, t, first, aux))
			return -1;
		if (f->fields[t] & SF(DSOFF))
			f->fields[t] |= SF(DSO);
	}
	return 0;
}

void script_fields_pipe_callchains(struct script_fields *f, const struct ds_reader *rd)
{
	size_t nr = ds_reader__nr_evsels(rd);

	for (int t = 0; t < ST_NR; t++) {
		uint64_t combined = 0;

		for (size_t i = 0; i < nr; i++) {
			const struct ds_evsel *e = ds_reader__evsel(rd, i);

			combined |= e->attr.sample_type;
			if (script_field_type(e->attr.type) != t)
				continue;
			if ((combined & (DS_SAMPLE_CALLCHAIN | DS_SAMPLE_BRANCH_STACK)) ||
			    ((combined & DS_SAMPLE_REGS_USER) && (combined & DS_SAMPLE_STACK_USER))) {
				if (!(f->user_unset_fields[t] & SF(IP)))
					f->fields[t] |= SF(IP);
				if (!(f->user_unset_fields[t] & SF(SYM)))
					f->fields[t] |= SF(SYM);
			}
			break;   /* perf looks at a type's first event only */
		}
	}
}
