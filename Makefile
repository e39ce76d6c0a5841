# backoff: build, test, demo, benchmarks.  See README.md and docs/DESIGN.md.
#
# Everything is built under $(BUILD) (default build/).  `make test` and
# `make demo` first make sure the Debian packages they need are installed
# (demo/ensure-deps.sh).

BUILD    ?= build
CC       ?= cc
PREFIX   ?= /usr/local
DESTDIR  ?=
SAN      ?=

CURL_CFLAGS := $(shell pkg-config --cflags libcurl 2>/dev/null)
CURL_LIBS   := $(shell pkg-config --libs libcurl 2>/dev/null || echo -lcurl)
MHD_CFLAGS  := $(shell pkg-config --cflags libmicrohttpd 2>/dev/null)
MHD_LIBS    := $(shell pkg-config --libs libmicrohttpd 2>/dev/null || echo -lmicrohttpd)
CHECK_CFLAGS := $(shell pkg-config --cflags check 2>/dev/null)
CHECK_LIBS  := $(shell pkg-config --libs check 2>/dev/null || echo -lcheck -lsubunit -lrt -lm -lpthread)

VERSION  := 0.1.0
WARN     := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes
CFLAGS   ?= -O2 -g
ALL_CFLAGS = -std=gnu11 $(WARN) $(CFLAGS) $(SAN) -fPIC -pthread -D_GNU_SOURCE \
             -DBO_VERSION=\"$(VERSION)\" -Ipolicies
LDFLAGS  ?=
ALL_LDFLAGS = $(LDFLAGS) $(SAN) -pthread

POLICY_SRC := $(wildcard policies/*.c)
POLICY_OBJ := $(POLICY_SRC:%.c=$(BUILD)/obj/%.o)
# shim/: one folder a room (docs/DESIGN.md); the wrapper is a program of its own.
SHIM_SRC   := $(filter-out shim/wrapper/%,$(wildcard shim/*/*.c))
SHIM_OBJ   := $(SHIM_SRC:%.c=$(BUILD)/obj/%.o)
# The host-wide backend's files (dest/share*.c), which the wrapper and two test helpers link.
SHARE_SRC  := $(wildcard shim/dest/share*.c)
WRAPPER_SRC := $(wildcard shim/wrapper/*.c) $(SHARE_SRC) shim/dest/metrics.c shim/core/core.c
SIM_SRC    := $(wildcard demo/sim/*.c)
SERVER_SRC := $(wildcard demo/server/*.c)
LOADGEN_SRC := $(wildcard demo/loadgen/*.c)
UNIT_SRC   := $(wildcard tests/unit/test_*.c)
UNIT_BIN   := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/unit/%)
HELPER_SRC := $(wildcard tests/helpers/*.c)
HELPER_BIN := $(HELPER_SRC:tests/helpers/%.c=$(BUILD)/tests/helpers/%)

PRODUCTS := $(BUILD)/libbackoff.so $(BUILD)/backoff $(BUILD)/backoff-sim \
            $(BUILD)/ratelimit-server $(BUILD)/loadgen

.PHONY: all deps deps-demo test unit integration sim demo bench bench-matrix install install-tools help lint clean \
        check-asan check-tsan check-valgrind test-programs fuzz stress test-soak

all: $(PRODUCTS)

deps:
	@sh demo/ensure-deps.sh test

deps-demo:
	@sh demo/ensure-deps.sh demo

# Objects list the headers they include in a .d file beside them (-MMD -MP),
# so a change to one header rebuilds only what includes it.
$(BUILD)/obj/%.o: %.c $(BUILD)/obj/%.d
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -MMD -MP $(CURL_CFLAGS) $(MHD_CFLAGS) -c $< -o $@

# Shim objects hide everything but the hooks (docs/STYLE.md: export only the hooked symbols).
$(BUILD)/obj/shim/%.o: shim/%.c $(BUILD)/obj/shim/%.d
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Ishim -MMD -MP -fvisibility=hidden $(CURL_CFLAGS) -c $< -o $@

# The fleet backend (BACKOFF_SHARE=redis, dest/redis.c) needs hiredis: say so plainly.
# Its script, shim/dest/fleet.lua, is built in as a C string.  The library does not
# link hiredis: it loads it on the fleet's first connection, by the soname of the one
# the build found (its headers describe that one), and names its Debian package
# (libhiredis.so.0.14: libhiredis0.14) if it is missing then.
HIREDIS_SONAME := $(shell objdump -p "$$($(CC) -print-file-name=libhiredis.so)" 2>/dev/null | \
                    awk '$$1 == "SONAME" { print $$2 }')
$(BUILD)/obj/shim/dest/redis.o: $(BUILD)/gen/fleet_script.h | hiredis-check
HIREDIS_DEFS := -DBO_HIREDIS_SONAME=\"$(HIREDIS_SONAME)\" \
                -DBO_HIREDIS_PKG=\"$(subst .so.,,$(HIREDIS_SONAME))\"
$(BUILD)/obj/shim/dest/redis.o: ALL_CFLAGS += -I$(BUILD)/gen $(HIREDIS_DEFS)
$(BUILD)/gen/fleet_script.h: shim/dest/fleet.lua
	@mkdir -p $(dir $@)
	{ echo '/* Made from shim/dest/fleet.lua by the Makefile: edit that file. */'; \
	  echo 'static const char k_fleet_script[] ='; \
	  sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/    "/' -e 's/$$/\\n"/' $<; \
	  echo '    ;'; } >$@.tmp && mv $@.tmp $@
hiredis-check:
	@printf '#include <hiredis/hiredis.h>\n' | $(CC) -E -x c - >/dev/null 2>&1 && \
	    [ -n "$(HIREDIS_SONAME)" ] || { \
	    echo "backoff: hiredis/hiredis.h or libhiredis.so not found: the Redis fleet backend" \
	         "needs libhiredis-dev (Debian: apt-get install libhiredis-dev, or make deps)" >&2; \
	    exit 1; }
.PHONY: hiredis-check

# An object whose .d is missing (built before, or by an older Makefile) is rebuilt.
$(BUILD)/obj/%.d: ;
.PRECIOUS: $(BUILD)/obj/%.d
-include $(POLICY_OBJ:.o=.d) $(SHIM_OBJ:.o=.d)

# The loader's dl hooks run inside the sanitizer runtimes' own start (they
# look up their interceptors with dlsym before their shadow memory exists):
# no ASan/TSan instrumentation in shim/loader/ (UBSan stays).
$(BUILD)/obj/shim/loader/%.o: ALL_CFLAGS += $(if $(SAN),-fno-sanitize=address -fno-sanitize=thread)

# bo_math's sqrt is the processor's instruction, never a call into libm (bo_math.h).
$(BUILD)/obj/policies/bo_math.o: ALL_CFLAGS += -fno-math-errno

$(BUILD)/libpolicies.a: $(POLICY_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

# The preload library does not link libcurl: it binds the program's own copy at run time.
# Nor libm (policies/bo_math.c) nor hiredis (loaded by the fleet's first connection): every
# process of a command's tree maps what it links.  -z defs keeps it so: a libm function
# used anew fails this link instead of every program's start (not with the sanitizers,
# whose runtimes the library leaves to the program).  Its calls into libc bind on first
# use (lazily, as libc's own do), not all ~130 at every program's start: 25 us a process
# (docs/RESULTS.md, "What it changes in a program that never meets a throttle").
$(BUILD)/libbackoff.so: $(SHIM_OBJ) $(BUILD)/libpolicies.a shim/exports.map
	$(CC) -shared -o $@ $(SHIM_OBJ) $(BUILD)/libpolicies.a $(ALL_LDFLAGS) \
	    -Wl,--version-script=shim/exports.map $(if $(SAN),,-Wl,-z,defs) -ldl

# The wrapper reads and resets the host-wide state itself (--status, --reset).
$(BUILD)/backoff: $(WRAPPER_SRC) $(BUILD)/libpolicies.a $(wildcard policies/*.h shim/*/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Ishim -o $@ $(WRAPPER_SRC) $(BUILD)/libpolicies.a $(ALL_LDFLAGS) -lm

$(BUILD)/backoff-sim: $(SIM_SRC) $(BUILD)/libpolicies.a $(wildcard policies/*.h demo/sim/*.h demo/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $(SIM_SRC) $(BUILD)/libpolicies.a $(ALL_LDFLAGS) -lm

$(BUILD)/ratelimit-server: $(SERVER_SRC) $(wildcard demo/server/*.h demo/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(MHD_CFLAGS) -o $@ $(SERVER_SRC) $(ALL_LDFLAGS) $(MHD_LIBS) -lm

$(BUILD)/loadgen: $(LOADGEN_SRC) $(wildcard demo/loadgen/*.h demo/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(CURL_CFLAGS) -o $@ $(LOADGEN_SRC) $(ALL_LDFLAGS) $(CURL_LIBS) -lm

$(BUILD)/tests/unit/%: tests/unit/%.c $(BUILD)/libpolicies.a $(wildcard policies/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(CHECK_CFLAGS) -o $@ $< $(BUILD)/libpolicies.a $(ALL_LDFLAGS) $(CHECK_LIBS) -lm

# The shim's rooms as an archive, for the unit suites of its modules
# (tests/unit/test_shim_*.c): a suite links only the objects it reaches.
$(BUILD)/libshim.a: $(SHIM_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/tests/unit/test_shim_%: tests/unit/test_shim_%.c $(BUILD)/libshim.a $(BUILD)/libpolicies.a \
                                 $(wildcard policies/*.h shim/*/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Ishim $(CURL_CFLAGS) $(CHECK_CFLAGS) -o $@ $< $(BUILD)/libshim.a \
	    $(BUILD)/libpolicies.a $(ALL_LDFLAGS) $(CHECK_LIBS) -ldl -lm

$(BUILD)/tests/helpers/%: tests/helpers/%.c $(wildcard shim/dest/share_layout.h policies/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(CURL_CFLAGS) -o $@ $< $(ALL_LDFLAGS) $(CURL_LIBS) -lm

# http_bench drives OpenSSL itself (the http room's TLS hooks, make bench).
$(BUILD)/tests/helpers/http_bench: tests/helpers/http_bench.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(ALL_LDFLAGS) -lssl -lcrypto -lm

# share_evict drives the host-wide file's own code (dest/share*.c) in two processes.
$(BUILD)/tests/helpers/share_evict: tests/helpers/share_evict.c $(SHARE_SRC) shim/core/core.c \
                                    $(BUILD)/libpolicies.a $(wildcard shim/*/*.h policies/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Ishim -o $@ tests/helpers/share_evict.c $(SHARE_SRC) \
	    shim/core/core.c $(BUILD)/libpolicies.a $(ALL_LDFLAGS) -lm

# share_pool drives its pool of entries (dest/share_entry.c) in 150 processes.
$(BUILD)/tests/helpers/share_pool: tests/helpers/share_pool.c tests/helpers/share_file.h \
                                   $(SHARE_SRC) shim/core/core.c \
                                   $(BUILD)/libpolicies.a $(wildcard shim/*/*.h policies/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Ishim -o $@ tests/helpers/share_pool.c $(SHARE_SRC) \
	    shim/core/core.c $(BUILD)/libpolicies.a $(ALL_LDFLAGS) -lm

# fleet_equal drives the fleet's script (as the library builds it in) and its
# C model (policies/bo_fleet.c) through the same events against a real Redis.
$(BUILD)/tests/helpers/fleet_equal: tests/helpers/fleet_equal.c $(BUILD)/gen/fleet_script.h \
                                    $(BUILD)/libpolicies.a $(wildcard policies/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -I$(BUILD)/gen -o $@ tests/helpers/fleet_equal.c $(BUILD)/libpolicies.a \
	    $(ALL_LDFLAGS) -lhiredis -lm

test-programs: $(PRODUCTS) $(UNIT_BIN) $(HELPER_BIN) $(BUILD)/backoff.1

# The README's second command: install what is missing, build, run every suite.
test: deps
	@$(MAKE) --no-print-directory test-programs
	@sh tests/lint.sh
	@BUILD=$(BUILD) sh tests/run-tests.sh all

unit: $(UNIT_BIN)
	@BUILD=$(BUILD) sh tests/run-tests.sh unit

integration: test-programs
	@BUILD=$(BUILD) sh tests/run-tests.sh integration

# The whole `make test` SOAK_RUNS times (5), with SOAK_LOAD=1 beside a CPU hog
# on every core (stress-ng): one line per run, then "N passed, N failed".
# Logs of failing runs stay in $(BUILD)/soak/DATE-TIME/.  Not part of `make test`.
SOAK_RUNS ?= 5
SOAK_LOAD ?= 0
test-soak:
	@SOAK_RUNS=$(SOAK_RUNS) SOAK_LOAD=$(SOAK_LOAD) BUILD=$(BUILD) MAKE="$(MAKE)" sh tests/soak.sh

# The articles' comparisons, in virtual time (a benchmark, not a test).
sim: $(BUILD)/backoff-sim
	@BUILD=$(BUILD) sh demo/sim-report.sh

demo: deps-demo
	@$(MAKE) --no-print-directory all
	@BUILD=$(BUILD) sh demo/demo.sh

bench: deps-demo
	@$(MAKE) --no-print-directory all >&2
	@BUILD=$(BUILD) sh demo/bench.sh

# The robustness matrix in real time (about 10 minutes; see the script).
bench-matrix: deps-demo
	@$(MAKE) --no-print-directory all >&2
	@BUILD=$(BUILD) sh demo/bench-matrix.sh

# Sanitizer builds live in their own build directories.  Each check builds
# every program sanitized (shim, wrapper, server, loadgen, helpers), runs the
# unit suites, then integration tests with those builds, and fails when any
# process wrote a sanitizer report (log_path catches reports of processes
# whose exit status a test does not look at, like a server being stopped).
# (BO_TABLE_IDLE_PER_SHARD=2: the destination table evicts all the time, so
# a block freed while still in use shows up under both sanitizers.)
ASAN_SAN := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all \
            -DBO_TABLE_IDLE_PER_SHARD=2
TSAN_SAN := -fsanitize=thread -fno-omit-frame-pointer -DBO_TABLE_IDLE_PER_SHARD=2
# Foreign programs (/usr/bin/curl, python3) load the sanitized shim after
# libc: ASan cannot be preloaded first into curl (its startup then hangs in
# setlocale), so for them the runtime comes in as the shim's dependency
# (verify_asan_link_order=0): the shim's own stack and global accesses and
# UBSan are checked, heap checks need our own sanitized programs (loadgen,
# helpers, server), whose runtime is first.  Leaks are not ours to judge in
# foreign programs: detect_leaks=0 there (the unit suites keep LeakSanitizer).
ASAN_ENV = ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=0:log_path=$(CURDIR)/build-asan/san/asan \
           UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:log_path=$(CURDIR)/build-asan/san/ubsan
TSAN_ENV = TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1 log_path=$(CURDIR)/build-tsan/san/tsan"
# The threaded tests: the shared window under 256 loadgen threads, signals
# while threads back off, forks in forked children (3 levels) and spawns
# while 16 threads retry, threads looking destinations up while others are
# evicted, threads each driving a multi handle against one throttled
# destination, processes sharing one host-wide window killed while they
# hold its locks and slots.
TSAN_TESTS ?= test_shim_loadgen test_stress_threads test_stress_signals \
              test_fork_tree test_stress_dests test_multi_threads test_share_crash
TSAN_STRESS_CALLS ?= 200
TSAN_PROGRAMS = build-tsan/libbackoff.so build-tsan/backoff build-tsan/loadgen \
                build-tsan/ratelimit-server $(HELPER_SRC:tests/helpers/%.c=build-tsan/tests/helpers/%)
# test_stress_fork (forks while 16 threads churn a one-slot window) and the
# part of test_fork_tree that forks from a thread while 16 threads retry are
# left to make test and make stress: a TSan runtime does not hold its
# allocator's locks across fork(), so a child forked while another thread
# refills its allocator cache waits forever in
# SizeClassAllocator64::GetFromAllocator under curl's calloc, no shim code on
# the stack (gcc 12's libtsan: 3 children in about 2,100 forks here, each
# among the first 3 forks, made within 15 ms of the threads' start; clang
# 14's runtime likewise, 2 in 70; stacks from BO_HUNG_GDB=1 in
# docs/TESTING.md).  No TSAN_OPTIONS avoids it.

# run_san_tests DIR TESTS ENV [JOBS]: runs integration scripts through
# run-tests.sh (300 s each, JOBS at a time: default the number of cores),
# then fails if DIR/san holds any report.
define run_san_tests
	@rm -rf $(1)/san && mkdir -p $(1)/san
	@failed=0; $(3) BUILD=$(CURDIR)/$(1) TEST_JOBS=$(4) INTEGRATION_TESTS="$(strip $(2))" \
	    sh tests/run-tests.sh integration || failed=1; \
	if ls $(1)/san/* >/dev/null 2>&1; then head -n 60 $(1)/san/*; \
	    echo "sanitizer reports in $(1)/san/"; failed=1; fi; \
	exit $$failed
endef

# Every integration test but the valgrind one (valgrind cannot run ASan code)
# and the fork stress: gcc's ASan runtime does not hold its allocator's locks
# across fork(), so a child forked while another thread is in malloc hangs
# inside ASan (seen: 1 child in 50, stuck in SizeClassAllocator64's mutex
# under curl's malloc, no shim lock involved).  The same holds for the
# fork trees of test_fork_tree (threads fork while others are in malloc) and
# test_real_programs (multiprocessing, daemons).  Forks are checked by
# check-tsan, make stress and make test.
# test_share_many runs hundreds of curl processes whose sanitized start takes
# so long that 65 of them never run at once on 2 cores: its code is checked
# sanitized by test_share_pool, which drives the same paths without timing.
ASAN_TESTS ?= $(filter-out test_fault_valgrind test_stress_fork test_shim_fork \
                test_fork_tree test_real_programs test_share_many,\
                $(patsubst tests/integration/%.sh,%,$(wildcard tests/integration/test_*.sh)))

check-asan: deps
	@$(MAKE) --no-print-directory BUILD=build-asan CC=$(CC) SAN="$(ASAN_SAN)" unit
	@$(MAKE) --no-print-directory BUILD=build-asan CC=$(CC) SAN="$(ASAN_SAN)" test-programs
	$(call run_san_tests,build-asan,$(ASAN_TESTS),$(ASAN_ENV))

check-tsan: deps
	@$(MAKE) --no-print-directory BUILD=build-tsan CC=$(CC) SAN="$(TSAN_SAN)" unit
	@$(MAKE) --no-print-directory BUILD=build-tsan CC=$(CC) SAN="$(TSAN_SAN)" $(TSAN_PROGRAMS)
	$(call run_san_tests,build-tsan,$(TSAN_TESTS),$(TSAN_ENV) STRESS_CALLS=$(TSAN_STRESS_CALLS) STRESS_SERVICE_MS=20 FORK_TREE_PARTS="deep spawn bash",1)

# memcheck over the unit suites, then over one integration test that runs
# the shim inside curl and inside threaded loadgen under valgrind.
check-valgrind: deps
	@$(MAKE) --no-print-directory $(UNIT_BIN) $(PRODUCTS)
	@BUILD=$(BUILD) VALGRIND=1 sh tests/run-tests.sh unit
	$(call run_san_tests,$(BUILD),test_fault_valgrind,)

# The issue's full stress counts (make test runs them reduced): 256 threads
# x STRESS_CALLS calls through one window, forks while threads hold the
# shim's locks, the signal storm.
# 2,560,000 requests take about 265 s on two quiet cores (CPU-bound: loadgen,
# the server and the shim share them), so each suite here is bounded by
# STRESS_TIMEOUT, not the 300 s of make test.
STRESS_CALLS ?= 10000
STRESS_TIMEOUT ?= 900
STRESS_TESTS ?= test_stress_threads test_stress_fork test_stress_signals
stress: $(PRODUCTS) $(HELPER_BIN)
	$(call run_san_tests,$(BUILD),$(STRESS_TESTS),SUITE_TIMEOUT=$(STRESS_TIMEOUT) STRESS_CALLS=$(STRESS_CALLS) STRESS_FORKS=200 STRESS_SIGNAL_CALLS=200,1)

# libFuzzer targets (tests/fuzz/fuzz_*.c), clang only, each run FUZZ_SECONDS
# from its seed corpus in tests/fuzz/corpus/ (CI: 60 s each).
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 20
FUZZ_BUILD   := build-fuzz
FUZZ_SRC     := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BIN     := $(FUZZ_SRC:tests/fuzz/%.c=$(FUZZ_BUILD)/%)

$(FUZZ_BUILD)/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz_input.h $(POLICY_SRC) demo/server/options.c \
                      $(wildcard policies/*.h demo/server/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -std=gnu11 $(WARN) -O1 -g -fsanitize=fuzzer,address,undefined \
	    -fno-sanitize-recover=all -D_GNU_SOURCE -Ipolicies -o $@ $< $(POLICY_SRC) \
	    demo/server/options.c $(FUZZ_EXTRA) -lm

# The libcurl room's parsers, through its headers: the target links the
# shim's rooms (no libcurl: its functions are bound at run time; no dl hooks).
$(FUZZ_BUILD)/fuzz_shim_parse: FUZZ_EXTRA = $(CURL_CFLAGS) -Ishim -I$(BUILD)/gen $(SHIM_SRC) \
                                       -DBO_DL_NO_HOOKS $(HIREDIS_DEFS) -ldl
$(FUZZ_BUILD)/fuzz_shim_parse: $(wildcard shim/*/*.c shim/*/*.h) $(BUILD)/gen/fleet_script.h

# The plain URL reader is checked against libcurl's own parser: it links libcurl.
$(FUZZ_BUILD)/fuzz_url_origin: FUZZ_EXTRA = $(CURL_CFLAGS) $(CURL_LIBS)

fuzz: $(FUZZ_BIN)
	@FUZZ_BUILD=$(CURDIR)/$(FUZZ_BUILD) FUZZ_SECONDS=$(FUZZ_SECONDS) sh tests/fuzz/run-fuzz.sh

# The man page: docs/backoff.1.in with the variables and policies of the
# built wrapper's own tables (docs/man.sh).
$(BUILD)/backoff.1: docs/backoff.1.in docs/man.sh $(BUILD)/backoff
	sh docs/man.sh $(BUILD)/backoff $(VERSION) $(PREFIX)/lib >$@.tmp && mv $@.tmp $@

# What a user of the tool needs: the wrapper, the library and the man page.
install: $(BUILD)/backoff $(BUILD)/libbackoff.so $(BUILD)/backoff.1
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/backoff \
	    $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 0755 $(BUILD)/backoff $(DESTDIR)$(PREFIX)/bin/
	install -m 0644 $(BUILD)/libbackoff.so $(DESTDIR)$(PREFIX)/lib/backoff/
	install -m 0644 $(BUILD)/backoff.1 $(DESTDIR)$(PREFIX)/share/man/man1/

# The test and demo tools, for whoever wants them outside the tree.
install-tools: $(BUILD)/backoff-sim $(BUILD)/ratelimit-server $(BUILD)/loadgen
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 $(BUILD)/backoff-sim $(BUILD)/ratelimit-server $(BUILD)/loadgen \
	    $(DESTDIR)$(PREFIX)/bin/

# The style rules a machine can check (tests/lint.sh; docs/STYLE.md).
lint:
	@sh tests/lint.sh

help:
	@echo "make demo           every policy against a real throttling server, with plots (demo/out/)"
	@echo "make test           install missing Debian packages, build, run every test suite"
	@echo "make                build the library, the wrapper and the tools into $(BUILD)/"
	@echo "make install        the wrapper, the library and the man page into PREFIX ($(PREFIX))"
	@echo "make install-tools  backoff-sim, ratelimit-server and loadgen into PREFIX/bin"
	@echo "make sim            the articles' comparisons in virtual time"
	@echo "make bench          the benchmarks against a real server (figures, not tests)"
	@echo "                    (BENCH_SCENARIOS=peers make bench: the real retry tools side by side)"
	@echo "make unit | integration    one half of make test"
	@echo "make check-asan | check-tsan | check-valgrind | fuzz | stress | test-soak"
	@echo "                    hardening: sanitizers, memcheck, fuzzing, stress, make test N times"
	@echo "make lint           the style rules a machine can check (tests/lint.sh)"
	@echo "make clean          remove every build directory and demo/out"

clean:
	rm -rf build build-asan build-tsan build-clang build-fuzz build-valgrind demo/out
