# dstack: make builds build/dstack and build/libdstack.a; make test; make bench.
CC      ?= cc
MODE    ?= release
BUILD   ?= build
WARN    := -Wall -Wextra -Werror -Wno-unused-parameter
CSTD    := -std=c11 -D_GNU_SOURCE
ifeq ($(MODE),release)
OPT     := -O2 -g
else ifeq ($(MODE),debug)
OPT     := -O0 -g
else ifeq ($(MODE),asan)
OPT     := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
LDOPT   := -fsanitize=address,undefined
else ifeq ($(MODE),tsan)
OPT     := -O1 -g -fsanitize=thread
LDOPT   := -fsanitize=thread
endif
# Builds that look for leaks free everything at the end of a command (see walk_finish)
ifneq ($(MODE),release)
TIDY    := -DDSTACK_TIDY_EXIT
endif
CFLAGS  ?=
# Include paths: the public headers (include/dstack), the utilities
# (util/, for the library and the CLI: "util/hashmap.h"), and for the
# library's own sources its private headers ("symbols/symbols_int.h"):
# the CLI and the examples never see lib/.
CFLAGS  += $(WARN) $(CSTD) $(OPT) $(TIDY) -Iinclude -I. -MMD -MP
LIB_CFLAGS := -Ilib
LDLIBS  := -lelf -ldw -lzstd -lz -liberty -lm
ifeq ($(MODE),release)
# The command is linked statically: loading and relocating its shared
# objects (libstdc++ for its demangler, glibc too) was a large part of a
# short run (docs/performance.md).  Nothing in it looks up users or hosts
# (NSS).
DSTACK_LIBS := -static -ldw -lelf -lzstd -lz -llzma -liberty -lm -lpthread
else
DSTACK_LIBS := $(LDLIBS)
endif

# util/outbuf.c is the commands' output (the library's exports write to a
# stream of the caller's), util/spill_dir.c where they spill from the
# environment (the library reads none): linked into the command and the
# tests, not into libdstack.
CLI_UTIL_SRC := util/outbuf.c util/spill_dir.c
LIB_SRC := $(filter-out $(CLI_UTIL_SRC),$(wildcard util/*.c lib/*/*.c))
CLI_SRC := $(wildcard cli/*.c) $(CLI_UTIL_SRC)
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o)
CLI_OBJ := $(CLI_SRC:%.c=$(BUILD)/%.o)
CLI_UTIL_OBJ := $(CLI_UTIL_SRC:%.c=$(BUILD)/%.o)
TEST_SRC := $(wildcard tests/unit/*.c)
TEST_BIN := $(TEST_SRC:tests/unit/%.c=$(BUILD)/tests/%)

all: $(BUILD)/dstack $(BUILD)/libdstack.a

# (made anew: `ar r` would keep the members of sources gone from LIB_SRC)
$(BUILD)/libdstack.a: $(LIB_OBJ)
	@mkdir -p $(@D)
	@rm -f $@
	$(AR) rcs $@ $^

$(BUILD)/dstack: $(CLI_OBJ) $(BUILD)/libdstack.a
	$(CC) $(LDOPT) -o $@ $(CLI_OBJ) $(BUILD)/libdstack.a $(DSTACK_LIBS)

$(BUILD)/cli/%.o: cli/%.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -c -o $@ $<

$(BUILD)/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LIB_CFLAGS) -c -o $@ $<

# (unit tests see the library's private headers: they test its parts)
$(BUILD)/tests/%: tests/unit/%.c $(BUILD)/libdstack.a $(CLI_UTIL_OBJ)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LIB_CFLAGS) $(LDOPT) -o $@ $< $(CLI_UTIL_OBJ) $(BUILD)/libdstack.a $(LDLIBS)

unit: $(TEST_BIN)

# The shared library, for programs that load it (not built by `all`, not
# installed): the library's sources compiled position-independent, linked
# with lib/libdstack.map so that it exports the API and nothing else: the
# functions include/dstack/*.h declares (tests/suites/89-api.sh checks that
# the two agree).  -z defs: every symbol it needs comes from the libraries
# named here (not under the sanitizers, whose runtime the program brings).
PIC_OBJ := $(LIB_SRC:%.c=$(BUILD)/pic/%.o)

$(BUILD)/pic/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LIB_CFLAGS) -fPIC -c -o $@ $<

$(BUILD)/libdstack.so: $(PIC_OBJ) lib/libdstack.map
	$(CC) $(LDOPT) -shared -Wl,--version-script=lib/libdstack.map $(if $(LDOPT),,-Wl,-z,defs) \
		-o $@ $(PIC_OBJ) $(LDLIBS) -lpthread

# The suite runs twice over: the release build, and an ASan+UBSan build.
test: all unit
	$(MAKE) --no-print-directory MODE=asan BUILD=build-asan all unit
	tests/run.sh $(BUILD) build-asan

bench:
	$(MAKE) MODE=release all
	bench/run.sh build

clean:
	rm -rf build build-*

.PHONY: all test unit bench clean
-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(PIC_OBJ:.o=.d)

# The main job of the README: the bundled deferred recording, stitched.
$(BUILD)/example-workload: examples/workload.c
	$(CC) $(WARN) $(CSTD) -O2 -g -fno-omit-frame-pointer -o $@ $<

# The bundled deferred recording (Linux 7.2), then a live profile of this
# machine: deferred callchains where the kernel has them, else classic ones
# (dstack record says which).
example: all $(BUILD)/example-workload
	@tests/unpack-corpus.sh $(BUILD)/testdata
	$(BUILD)/dstack script --symfs $(BUILD)/testdata/symfs-root/symfs --kallsyms $(BUILD)/testdata/kallsyms \
		-i examples/cpu.defer.data > $(BUILD)/example.script
	@sed -n '/main+/,$$p' $(BUILD)/example.script | head -24
	@echo "... (all $$(grep -c cpu-clock: $(BUILD)/example.script) samples in $(BUILD)/example.script)"
	@echo
	$(BUILD)/dstack stat -i examples/cpu.defer.data
	@echo
	@echo "== live profile of this machine =="
	@if $(BUILD)/dstack record --call-graph fp,defer -F 999 -o $(BUILD)/live.data -- $(BUILD)/example-workload 1; then \
		$(BUILD)/dstack report --stdio --no-children -g none -i $(BUILD)/live.data | head -30; \
		echo "... one sample:"; $(BUILD)/dstack script -i $(BUILD)/live.data | awk '/crunch/ { p = 1 } p && /^$$/ { exit } p'; \
	else echo "live profile not recorded: see the message above"; fi
.PHONY: example

# examples/folded.c, a program using libdstack (dstack/profile.h), built the
# way one outside this tree is: against an installed tree, its headers
# (-I$PREFIX/include) and its library only, nothing of lib/ or util/.
EXAMPLE_PREFIX ?= $(abspath $(BUILD))/example-prefix
EXAMPLE_LIBS := -lelf -ldw -lzstd -lz -liberty -lm -lpthread
example-folded: all
	rm -rf $(EXAMPLE_PREFIX)
	$(MAKE) --no-print-directory install PREFIX=$(EXAMPLE_PREFIX) DESTDIR= >/dev/null
	$(CC) -std=c11 $(WARN) $(OPT) $(LDOPT) -I$(EXAMPLE_PREFIX)/include -o $(BUILD)/example-folded \
		examples/folded.c $(EXAMPLE_PREFIX)/lib/libdstack.a $(EXAMPLE_LIBS)
.PHONY: example-folded

# examples/top.c (dstack/report.h), built the same way: `example-top FILE SYMFS KALLSYMS`
example-top: all
	rm -rf $(EXAMPLE_PREFIX)
	$(MAKE) --no-print-directory install PREFIX=$(EXAMPLE_PREFIX) DESTDIR= >/dev/null
	$(CC) -std=c11 $(WARN) $(OPT) $(LDOPT) -I$(EXAMPLE_PREFIX)/include -o $(BUILD)/example-top \
		examples/top.c $(EXAMPLE_PREFIX)/lib/libdstack.a $(EXAMPLE_LIBS)
.PHONY: example-top

# Fuzzing (fuzz/README.md): libFuzzer targets built with clang into build-fuzz/.
FUZZ_DIR     := build-fuzz
FUZZ_CC      ?= clang
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
FUZZ_CFLAGS  := $(WARN) $(CSTD) -O1 -g $(FUZZ_SAN) -Iinclude -I. -Ilib
FUZZ_TARGETS := $(patsubst fuzz/%.c,$(FUZZ_DIR)/%,$(wildcard fuzz/fuzz_*.c))
FUZZ_LIB_OBJ := $(LIB_SRC:%.c=$(FUZZ_DIR)/%.o)
FUZZ_TIME    ?= 20

$(FUZZ_DIR)/%.o: %.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c -o $@ $<

$(FUZZ_DIR)/libdstack.a: $(FUZZ_LIB_OBJ)
	rm -f $@
	$(AR) rcs $@ $^

# the CLI for fuzz_cli (inject, whose engine is still in cli/, and the shells of report and the
# exports, whose engines fuzz_report and fuzz_export fuzz through the library): every command's object, main.c's main renamed, tidy exits
FUZZ_CLI_OBJ := $(patsubst cli/%.c,$(FUZZ_DIR)/cli/%.o,$(wildcard cli/*.c)) $(CLI_UTIL_SRC:%.c=$(FUZZ_DIR)/%.o)

$(FUZZ_DIR)/cli/%.o: cli/%.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -DDSTACK_TIDY_EXIT -Dmain=dstack_cli_main -MMD -MP -c -o $@ $<

$(FUZZ_DIR)/fuzz_cli: fuzz/fuzz_cli.c fuzz/fuzz_common.h $(FUZZ_DIR)/libdstack.a $(FUZZ_CLI_OBJ)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_CLI_OBJ) $(FUZZ_DIR)/libdstack.a $(LDLIBS) -lpthread
	$(FUZZ_CC) $(FUZZ_CFLAGS) -DFUZZ_MAIN -o $@.run $< $(FUZZ_CLI_OBJ) $(FUZZ_DIR)/libdstack.a $(LDLIBS) -lpthread

# each target twice: libFuzzer, and a plain main() that runs files (AFL++, reproducers)
$(FUZZ_DIR)/fuzz_%: fuzz/fuzz_%.c fuzz/fuzz_common.h $(FUZZ_DIR)/libdstack.a
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_DIR)/libdstack.a $(LDLIBS) -lpthread
	$(FUZZ_CC) $(FUZZ_CFLAGS) -DFUZZ_MAIN -o $@.run $< $(FUZZ_DIR)/libdstack.a $(LDLIBS) -lpthread

fuzz: $(FUZZ_TARGETS)

$(FUZZ_DIR)/seeds/.done: fuzz/make-seeds.py tests/reshape.py tests/hostile.py
	@tests/unpack-corpus.sh $(FUZZ_DIR)/testdata
	rm -rf $(FUZZ_DIR)/seeds
	python3 fuzz/make-seeds.py $(FUZZ_DIR)/testdata $(FUZZ_DIR)/seeds
	touch $@

# Every target for FUZZ_TIME seconds on its seeds (new finds kept in
# build-fuzz/corpus/TARGET), then every regression input.
fuzz-smoke: fuzz $(FUZZ_DIR)/seeds/.done
	fuzz/run.sh smoke $(FUZZ_TIME)

# Every target for FUZZ_LONG_TIME seconds (default 30 min each: four and a
# half hours for the nine, one at a time), then the regressions; not in
# `make test`.  Statistics and findings: build-fuzz/crash/TARGET/last.log.
FUZZ_LONG_TIME ?= 1800
fuzz-long: fuzz $(FUZZ_DIR)/seeds/.done
	fuzz/run.sh long $(FUZZ_LONG_TIME)

.PHONY: fuzz fuzz-smoke fuzz-long
-include $(FUZZ_LIB_OBJ:.o=.d) $(FUZZ_CLI_OBJ:.o=.d)

# make install [PREFIX=/usr/local] [DESTDIR=...]: the command, the static
# library and the public headers, the man pages and the bash completion.
PREFIX  ?= /usr/local
BINDIR  ?= $(PREFIX)/bin
LIBDIR  ?= $(PREFIX)/lib
INCDIR  ?= $(PREFIX)/include
MANDIR  ?= $(PREFIX)/share/man
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions

install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCDIR)/dstack \
		$(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(BASHCOMPDIR)
	install -m 755 $(BUILD)/dstack $(DESTDIR)$(BINDIR)/dstack
	install -m 644 $(BUILD)/libdstack.a $(DESTDIR)$(LIBDIR)/libdstack.a
	install -m 644 include/dstack/*.h $(DESTDIR)$(INCDIR)/dstack/
	install -m 644 docs/man/*.1 $(DESTDIR)$(MANDIR)/man1/
	install -m 644 scripts/dstack.bash-completion $(DESTDIR)$(BASHCOMPDIR)/dstack

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/dstack $(DESTDIR)$(LIBDIR)/libdstack.a $(DESTDIR)$(BASHCOMPDIR)/dstack
	rm -rf $(DESTDIR)$(INCDIR)/dstack
	rm -f $(patsubst docs/man/%,$(DESTDIR)$(MANDIR)/man1/%,$(wildcard docs/man/*.1))

.PHONY: install uninstall
