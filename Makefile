# SPDX-License-Identifier: GPL-2.0
# Builds build/taskprobe (BPF objects linked into one skeleton) and the test suite.
#   make                 the binary          make check   deps, build, every test
#   make demo            a sample task       make install PREFIX=/usr/local
#   make SANITIZE=address,undefined          sanitized build under build/san/
#   V=1                  show commands

.DELETE_ON_ERROR:
.SUFFIXES:

PREFIX    ?= /usr/local
CC        ?= cc
CLANG     ?= clang
BPFTOOL   ?= bpftool
VERSION   := 0.1.0
PQINC     := $(shell pg_config --includedir 2>/dev/null || echo /usr/include/postgresql)
ARCH      := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')

ifeq ($(SANITIZE),)
OUT       := build
SANFLAGS  :=
else
OUT       := build/san
SANFLAGS  := -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
endif
BPFOUT    := build/bpf

ifeq ($(V),1)
Q :=
msg :=
else
Q := @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

CFLAGS    ?= -O2 -g
CFLAGS    += -std=gnu11 -Wall -Wextra -Werror -Wno-unused-parameter -Wno-format-truncation \
	     -D_GNU_SOURCE -DTP_VERSION='"$(VERSION)"' \
	     -Iinclude -Iuser -I$(BPFOUT) -I$(PQINC) -MMD -MP $(SANFLAGS)
LDFLAGS   += $(SANFLAGS)
LDLIBS    := -lbpf -lelf -lz -lm -lsqlite3 -lpcre2-8 -lmicrohttpd -lpq -lcurl -lpthread
# BPF_EXTRA: benchmark variants only (scripts/bench/pieces.sh, with OUT and BPFOUT of their own)
BPFCFLAGS := -g -O2 -target bpf -mcpu=v3 -D__TARGET_ARCH_$(ARCH) -Werror -Wall \
	     -Iinclude -I$(BPFOUT) $(BPF_EXTRA)

BPF_SRCS  := $(wildcard bpf/*.bpf.c)
BPF_OBJS  := $(patsubst bpf/%.bpf.c,$(BPFOUT)/%.bpf.o,$(BPF_SRCS))
SKEL      := $(BPFOUT)/taskprobe.skel.h

# The collector core and every module but main.c: linked into the binary and the tests.
CORE_SRCS := $(filter-out user/cli/main.c,$(wildcard user/*/*.c))
CORE_OBJS := $(patsubst user/%.c,$(OUT)/user/%.o,$(CORE_SRCS))
TEST_SRCS := $(wildcard tests/*.c tests/unit/*.c tests/bpf/*.c tests/e2e/*.c)
TEST_OBJS := $(patsubst %.c,$(OUT)/%.o,$(TEST_SRCS))
HELPERS   := $(patsubst tests/helpers/%.c,$(OUT)/tests/helpers/%,$(wildcard tests/helpers/*.c))

BIN       := $(OUT)/taskprobe
TESTBIN   := $(OUT)/tests/taskprobe-test
SYNTH     := $(OUT)/bench/synth-task
FLOOR     := $(OUT)/bench/floor $(BPFOUT)/floor.bpf.o $(BPFOUT)/touch.bpf.o $(BPFOUT)/touchmem.bpf.o \
	     $(BPFOUT)/lookup.bpf.o
EXECLOOP  := $(OUT)/bench/execloop
HOSTCTX   := $(OUT)/bench/hostctx

.PHONY: all deps check test fuzz demo install uninstall clean format format-check bench \
	compile_commands.json
all: $(BIN)

deps:
	$(Q)bash scripts/deps.sh

$(BPFOUT)/vmlinux.h: | $(BPFOUT)
	$(call msg,GEN,$@)
	$(Q)$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@

$(BPFOUT)/%.bpf.o: bpf/%.bpf.c $(BPFOUT)/vmlinux.h $(wildcard bpf/*.bpf.h) include/taskprobe.h
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPFCFLAGS) -c $< -o $@

$(BPFOUT)/taskprobe.bpf.o: $(BPF_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(BPFTOOL) gen object $@ $^

$(SKEL): $(BPFOUT)/taskprobe.bpf.o
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name taskprobe_bpf > $@

$(OUT)/user/%.o: user/%.c | $(SKEL)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -c $< -o $@

$(OUT)/tests/%.o: tests/%.c | $(SKEL)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -Itests -c $< -o $@

$(BIN): $(OUT)/user/cli/main.o $(CORE_OBJS)
	$(call msg,LD,$@)
	$(Q)$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

$(TESTBIN): $(TEST_OBJS) $(CORE_OBJS)
	$(call msg,LD,$@)
	$(Q)$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

# A synthetic long task written into a store (the report's benchmark and test).
$(SYNTH): scripts/bench/synth_task.c $(CORE_OBJS)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) $< $(CORE_OBJS) $(LDLIBS) -o $@

# The host context's reading cost (docs/PERFORMANCE.md).
$(HOSTCTX): scripts/bench/hostctx.c $(CORE_OBJS)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) $< $(CORE_OBJS) $(LDLIBS) -o $@

# The benchmarks' dispatch floor (empty programs on the hot hooks) and exec storm.
$(BPFOUT)/floor.bpf.o: scripts/bench/floor.bpf.c $(BPFOUT)/vmlinux.h
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPFCFLAGS) -c $< -o $@

$(BPFOUT)/touch.bpf.o: scripts/bench/touch.bpf.c $(BPFOUT)/vmlinux.h
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPFCFLAGS) -c $< -o $@

$(BPFOUT)/touchmem.bpf.o: scripts/bench/touchmem.bpf.c $(BPFOUT)/vmlinux.h
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPFCFLAGS) -c $< -o $@

$(BPFOUT)/lookup.bpf.o: scripts/bench/lookup.bpf.c $(BPFOUT)/vmlinux.h include/taskprobe.h
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPFCFLAGS) -c $< -o $@

$(OUT)/bench/floor: scripts/bench/floor.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) $< -lbpf -lelf -lz -o $@

$(EXECLOOP): scripts/bench/execloop.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -O2 -std=gnu11 -Wall -Wextra -Werror -D_GNU_SOURCE -static \
		$(if $(filter x86,$(ARCH)),-DEXECLOOP_NOLIBC -nostdlib -fno-stack-protector -fno-pie \
		-no-pie,) $< -o $@

# Workload helpers run inside tasks: plain builds, so they measure the same either way.
$(OUT)/tests/helpers/%: tests/helpers/%.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -O2 -g -std=gnu11 -Wall -Wextra -Werror -D_GNU_SOURCE $< -o $@

$(BPFOUT):
	$(Q)mkdir -p $@

test: $(BIN) $(TESTBIN) $(HELPERS) $(SYNTH) $(EXECLOOP) $(HOSTCTX)
	$(Q)TASKPROBE_BIN=$(abspath $(BIN)) TASKPROBE_HELPERS=$(abspath $(OUT)/tests/helpers) \
		TASKPROBE_SYNTH=$(abspath $(SYNTH)) TASKPROBE_EXECLOOP=$(abspath $(EXECLOOP)) \
		$(TESTBIN) $(TESTS)

# Parsers under libFuzzer with ASan and UBSan, FUZZ_SECONDS each; crashes fail the build.
# Seeds, where a target has them: tests/fuzz/corpus/TARGET (read, never written).
FUZZ_SECONDS ?= 10
FUZZ_TARGETS := $(patsubst tests/fuzz/%.c,build/fuzz/%,$(wildcard tests/fuzz/*.c))
FUZZ_FLAGS   := -g -O1 -std=gnu11 -D_GNU_SOURCE -DTP_VERSION='"$(VERSION)"' -Iinclude -Iuser \
		-I$(BPFOUT) -I$(PQINC) -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all

build/fuzz/%: tests/fuzz/%.c $(CORE_SRCS) | $(SKEL)
	$(call msg,FUZZ,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(FUZZ_FLAGS) $< $(CORE_SRCS) $(LDLIBS) -o $@

fuzz: $(FUZZ_TARGETS)
	$(Q)for t in $(FUZZ_TARGETS); do \
		mkdir -p build/fuzz/corpus-$$(basename $$t); \
		$$t -max_total_time=$(FUZZ_SECONDS) -max_len=4096 -print_final_stats=0 \
			build/fuzz/corpus-$$(basename $$t) \
			$$(test -d tests/fuzz/corpus/$$(basename $$t) && \
			   echo tests/fuzz/corpus/$$(basename $$t)) \
			2>build/fuzz/$$(basename $$t).log \
			|| { tail -40 build/fuzz/$$(basename $$t).log; exit 1; }; \
		printf '  %-8s %s: %s\n' FUZZ $$(basename $$t) \
			"$$(grep -o 'Done [0-9]* runs' build/fuzz/$$(basename $$t).log)"; \
	done

# check: dependencies, the layer rule of docs/ARCHITECTURE.md, the plain build, the
# fuzzers, then every tier against the sanitized build (its last line is the
# "N passed, N failed" count).
check: deps
	$(Q)$(MAKE) --no-print-directory format-check
	$(Q)python3 scripts/check-layers.py
	$(Q)$(MAKE) --no-print-directory all
	$(Q)$(MAKE) --no-print-directory fuzz
	$(Q)$(MAKE) --no-print-directory SANITIZE=address,undefined test

demo: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)bash scripts/demo.sh $(abspath $(BIN))

bench: all $(SYNTH) $(FLOOR) $(EXECLOOP) $(HOSTCTX) $(HELPERS)
	$(Q)SYNTH=$(abspath $(SYNTH)) BENCH_BIN=$(abspath $(OUT)/bench) BENCH_BPF=$(abspath $(BPFOUT)) \
		bash scripts/bench/run-all.sh $(abspath $(BIN))

install: $(BIN)
	install -D -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/bin/taskprobe

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/taskprobe

FORMAT_SRCS = $(wildcard bpf/*.c bpf/*.h include/*.h user/*/*.c user/*/*.h scripts/bench/*.c tests/*.c tests/*.h \
		tests/*/*.c)

format:
	$(Q)clang-format -i $(FORMAT_SRCS)

format-check:
	$(Q)clang-format --dry-run --Werror $(FORMAT_SRCS)

# For editors (clangd): every C file with the flags this Makefile compiles it with.
compile_commands.json:
	$(call msg,GEN,$@)
	$(Q)CFLAGS_='$(subst ','\'',$(CFLAGS))' BPFCFLAGS_='$(BPFCFLAGS)' CC_='$(CC)' CLANG_='$(CLANG)' \
	python3 -c 'import json, os, sys; \
		e = lambda f, cc, fl: {"directory": os.getcwd(), "file": f, "command": cc + " " + fl + " -c " + f}; \
		json.dump([e(f, os.environ["CC_"], os.environ["CFLAGS_"] + " -Itests") for f in sys.argv[1].split()] + \
			  [e(f, os.environ["CLANG_"], os.environ["BPFCFLAGS_"]) for f in sys.argv[2].split()], \
			  open("$@", "w"), indent=1)' '$(CORE_SRCS) user/cli/main.c $(TEST_SRCS)' '$(BPF_SRCS)'

clean:
	$(Q)rm -rf build compile_commands.json

-include $(wildcard $(OUT)/user/*/*.d $(OUT)/tests/*.d $(OUT)/tests/*/*.d)
