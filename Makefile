# backoff: build, test, demo, benchmarks.  See README.md and DESIGN.md.
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
SHIM_SRC   := $(filter-out shim/wrapper.c,$(wildcard shim/*.c))
SHIM_OBJ   := $(SHIM_SRC:%.c=$(BUILD)/obj/%.o)
SIM_SRC    := $(wildcard demo/sim/*.c)
SERVER_SRC := $(wildcard demo/server/*.c)
LOADGEN_SRC := $(wildcard demo/loadgen/*.c)
UNIT_SRC   := $(wildcard tests/unit/test_*.c)
UNIT_BIN   := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/unit/%)
HELPER_SRC := $(wildcard tests/helpers/*.c)
HELPER_BIN := $(HELPER_SRC:tests/helpers/%.c=$(BUILD)/tests/helpers/%)

PRODUCTS := $(BUILD)/libbackoff.so $(BUILD)/backoff $(BUILD)/backoff-sim \
            $(BUILD)/ratelimit-server $(BUILD)/loadgen

.PHONY: all deps deps-demo test unit integration sim demo bench install clean \
        check-asan check-tsan check-valgrind test-programs fuzz stress

all: $(PRODUCTS)

deps:
	@sh demo/ensure-deps.sh test

deps-demo:
	@sh demo/ensure-deps.sh demo

$(BUILD)/obj/%.o: %.c $(wildcard policies/*.h shim/*.h demo/*/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(CURL_CFLAGS) $(MHD_CFLAGS) -c $< -o $@

# Shim objects hide everything but the hooks (STYLE.md: export only the hooked symbols).
$(BUILD)/obj/shim/%.o: shim/%.c $(wildcard policies/*.h shim/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -fvisibility=hidden $(CURL_CFLAGS) -c $< -o $@

$(BUILD)/libpolicies.a: $(POLICY_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

# The preload library does not link libcurl: it binds the program's own copy at run time.
$(BUILD)/libbackoff.so: $(SHIM_OBJ) $(BUILD)/libpolicies.a shim/exports.map
	$(CC) -shared -o $@ $(SHIM_OBJ) $(BUILD)/libpolicies.a $(ALL_LDFLAGS) \
	    -Wl,--version-script=shim/exports.map -Wl,-z,now -ldl -lm

$(BUILD)/backoff: shim/wrapper.c $(BUILD)/libpolicies.a $(wildcard policies/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ shim/wrapper.c $(BUILD)/libpolicies.a $(ALL_LDFLAGS) -lm

$(BUILD)/backoff-sim: $(SIM_SRC) $(BUILD)/libpolicies.a $(wildcard policies/*.h demo/sim/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $(SIM_SRC) $(BUILD)/libpolicies.a $(ALL_LDFLAGS) -lm

$(BUILD)/ratelimit-server: $(SERVER_SRC) $(wildcard demo/server/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(MHD_CFLAGS) -o $@ $(SERVER_SRC) $(ALL_LDFLAGS) $(MHD_LIBS) -lm

$(BUILD)/loadgen: $(LOADGEN_SRC) $(wildcard demo/loadgen/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(CURL_CFLAGS) -o $@ $(LOADGEN_SRC) $(ALL_LDFLAGS) $(CURL_LIBS) -lm

$(BUILD)/tests/unit/%: tests/unit/%.c $(BUILD)/libpolicies.a $(wildcard policies/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(CHECK_CFLAGS) -o $@ $< $(BUILD)/libpolicies.a $(ALL_LDFLAGS) $(CHECK_LIBS) -lm

$(BUILD)/tests/helpers/%: tests/helpers/%.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(CURL_CFLAGS) -o $@ $< $(ALL_LDFLAGS) $(CURL_LIBS) -lm

test-programs: $(PRODUCTS) $(UNIT_BIN) $(HELPER_BIN)

# The README's second command: install what is missing, build, run every suite.
test: deps
	@$(MAKE) --no-print-directory test-programs
	@BUILD=$(BUILD) sh tests/run-tests.sh all

unit: $(UNIT_BIN)
	@BUILD=$(BUILD) sh tests/run-tests.sh unit

integration: test-programs
	@BUILD=$(BUILD) sh tests/run-tests.sh integration

# The articles' comparisons, in virtual time (a benchmark, not a test).
sim: $(BUILD)/backoff-sim
	@BUILD=$(BUILD) sh demo/sim-report.sh

demo: deps-demo
	@$(MAKE) --no-print-directory all
	@BUILD=$(BUILD) sh demo/demo.sh

bench: deps-demo
	@$(MAKE) --no-print-directory all
	@BUILD=$(BUILD) sh demo/bench.sh

# Sanitizer builds live in their own build directories.
check-asan: deps
	@$(MAKE) --no-print-directory BUILD=build-asan CC=$(CC) \
	    SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" unit

check-tsan: deps
	@$(MAKE) --no-print-directory BUILD=build-tsan CC=$(CC) SAN="-fsanitize=thread" unit

check-valgrind: deps
	@$(MAKE) --no-print-directory $(UNIT_BIN)
	@BUILD=$(BUILD) VALGRIND=1 sh tests/run-tests.sh unit

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
	    demo/server/options.c -lm

fuzz: $(FUZZ_BIN)
	@FUZZ_BUILD=$(CURDIR)/$(FUZZ_BUILD) FUZZ_SECONDS=$(FUZZ_SECONDS) sh tests/fuzz/run-fuzz.sh

install: $(PRODUCTS)
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/backoff
	install -m 0755 $(BUILD)/backoff $(BUILD)/backoff-sim $(BUILD)/ratelimit-server \
	    $(BUILD)/loadgen $(DESTDIR)$(PREFIX)/bin/
	install -m 0644 $(BUILD)/libbackoff.so $(DESTDIR)$(PREFIX)/lib/backoff/

clean:
	rm -rf build build-asan build-tsan build-clang build-fuzz build-valgrind demo/out
