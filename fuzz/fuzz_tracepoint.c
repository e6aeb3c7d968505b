// SPDX-License-Identifier: MIT
/*
 * Fuzz target 6: tracepoint formats and their print fmt (lib/format/tracepoint.c).
 * The input is read three ways: as one event's format file (name, ID,
 * fields, print fmt), rendered over raw data made of the input's own bytes
 * at several sizes (none, short, whole); as a whole tracing-data blob; and
 * as the raw data of a fixed sched_switch-like format with a print fmt
 * that uses every conversion and helper the evaluator knows.  Nothing may
 * crash, hang, read outside the raw data or overflow the output buffer.
 */
#include "fuzz_common.h"
#include "dstack/tracepoint.h"

static const char fixed_fmt[] =
	"name: all\nID: 7\nformat:\n"
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
	"\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;\n"
	"\tfield:long state;\toffset:24;\tsize:8;\tsigned:1;\n"
	"\tfield:__data_loc char[] name;\toffset:32;\tsize:4;\tsigned:0;\n"
	"\tfield:__rel_loc u8[] buf;\toffset:36;\tsize:4;\tsigned:0;\n"
	"\tfield:unsigned long args[2];\toffset:40;\tsize:16;\tsigned:0;\n"
	"\tfield:void * fn;\toffset:56;\tsize:8;\tsigned:0;\n\n"
	"print fmt: \"%s %-8s %d %lx %5u %p %pS %ps %c %*d %s %s %s %s %s %llu %hhx %%\", REC->comm, __get_str(name), "
	"REC->state, REC->args[1], (unsigned int)(REC->state >> 3) & 7, REC->fn, REC->fn, (void *)REC->fn, "
	"REC->comm[0], 4, REC->common_pid, REC->state ? __print_flags(REC->state, \"|\", { 1, \"A\" }, { 2, \"B\" }, "
	"{ IOPRIO_X, \"Z\" }) : \"R\", __print_symbolic(REC->state & 3, { 0, \"zero\" }, { 1, \"one\" }), "
	"__print_hex(__get_dynamic_array(buf), __get_dynamic_array_len(buf)), "
	"__print_array(__get_dynamic_array(buf), __get_dynamic_array_len(buf) / 2, 2), "
	"__print_hex_str(REC->comm, 4), (unsigned long long)__builtin_expect(!!(REC->state > -4095UL), 0) ? 1 : 2, "
	"-REC->state, REC->common_pid / (REC->state % 3)\n";

static const char *resolve(void *ctx, uint64_t addr, uint64_t *start)
{
	(void)ctx;
	if (addr < 0xffffffff80000000ULL)
		return NULL;
	*start = addr & ~0xfffULL;
	return "func";
}

static void render(const struct ds_tp_event *ev, const uint8_t *raw, size_t size)
{
	static char out[4096];
	size_t caps[] = { 0, 1, 17, sizeof(out) };

	for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
		size_t n = ds_tp_event__format(ev, raw, size, resolve, NULL, out, caps[i]);

		if (caps[i] && strlen(out) != (n < caps[i] ? n : caps[i] - 1))
			abort();   /* the text must be cut where the buffer ends, and terminated */
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ds_tp_event *ev;
	struct ds_tp_set *set;
	uint64_t v;
	char s[32];

	fz_init();
	/* the input as one format file, over raw data from the input itself */
	ev = ds_tp_event__parse("fz", (const char *)data, size, size & 1 ? 4 : 8);
	if (ev) {
		render(ev, NULL, 0);
		render(ev, data, size < 16 ? size : 16);
		render(ev, data, size);
		(void)ds_tp_event__field_u64(ev, "common_pid", data, size, &v);
		ds_tp_event__delete(ev);
	}
	/* as a tracing-data blob */
	set = ds_tp_set__parse(data, size);
	for (uint64_t id = 0; set && id < 4; id++) {
		const struct ds_tp_event *e = ds_tp_set__find(set, id);

		if (e)
			render(e, data, size);
	}
	ds_tp_set__delete(set);
	/* as the raw data of a format that uses everything */
	ev = ds_tp_event__parse("fz", fixed_fmt, sizeof(fixed_fmt) - 1, 8);
	if (!ev || !ds_tp_event__printable(ev))
		abort();
	render(ev, data, size);
	(void)ds_tp_event__field_str(ev, "comm", data, size, s, sizeof(s));
	ds_tp_event__delete(ev);
	return 0;
}
