# a2m — build with plain make (see docs/BUILD.md for why not CMake).
#
#   make              library, binary and tests into build/
#   make SAN=1        the same with AddressSanitizer + UBSan into build-san/
#   make TSAN=1       the same with ThreadSanitizer into build-tsan/ (the tests
#                     of concurrent reads run there: scripts/run-tests.sh)
#   make check        build and run every test (scripts/test.sh does the set-up too)
#   make ALLOC=libc   the a2m binary on glibc's malloc instead of mimalloc

PKGS      := jansson sqlite3 libmicrohttpd libcurl libutf8proc
# Compiled against but not linked: loaded with dlopen() when first needed, so
# a process that never speaks HTTP does not pay for mapping them and what
# they link at every start (src/util/curl_api.c, src/transport/mhd_api.c; docs/BUILD.md).
PKGS_LAZY := libcurl libmicrohttpd
PKGS_LINK := $(filter-out $(PKGS_LAZY),$(PKGS))
SAN       ?= 0
TSAN      ?= 0

# The a2m binary's allocator (docs/BUILD.md, "The allocator"): mimalloc by
# default, glibc's with ALLOC=libc. The sanitizers bring their own, so their
# builds always use libc's; the library (liba2m.a/.so) never links one, so an
# embedding program keeps whatever allocator it has.
ALLOC     ?= mimalloc

ifeq ($(TSAN),1)
BUILD     := build-tsan
OPT       := -O1 -g -fsanitize=thread -fno-omit-frame-pointer
override ALLOC := libc
else ifeq ($(SAN),1)
BUILD     := build-san
OPT       := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
override ALLOC := libc
else
BUILD     := build
OPT       := -O2 -g
endif

# No pkg-config file ships with libmimalloc-dev. Linked ahead of libc, its
# malloc and free replace glibc's for the whole process, SQLite and jansson too.
ifeq ($(ALLOC),mimalloc)
ALLOC_LIBS := -lmimalloc
# Said plainly here rather than as a link error at the end of the build.
ifneq ($(MAKECMDGOALS),clean)
ifeq ($(shell $(CC) -print-file-name=libmimalloc.so),libmimalloc.so)
$(error mimalloc not found: install libmimalloc-dev (scripts/deps.sh), or build with ALLOC=libc)
endif
endif
else ifeq ($(ALLOC),libc)
ALLOC_LIBS :=
else
$(error ALLOC must be mimalloc or libc, not '$(ALLOC)')
endif

CC        ?= cc
WARN      := -Wall -Wextra -Werror -Wshadow -Wconversion -Wno-sign-conversion \
             -Wstrict-prototypes -Wmissing-prototypes -Wformat=2 -Wvla
# -fopenmp-simd: honours `#pragma omp simd` (the vector index's float
# reductions, src/store/vector_index.c) without OpenMP's runtime or threads.
CFLAGS    += -std=c11 -D_GNU_SOURCE -fPIC -fopenmp-simd $(OPT) $(WARN) -Iinclude -Isrc \
             $(shell pkg-config --cflags $(PKGS))
LDLIBS    += $(shell pkg-config --libs $(PKGS_LINK)) -lstemmer -lpthread -lm -ldl
# The tests also call libcurl and libmicrohttpd themselves (their clients and
# the embedding server they start).
TEST_LDLIBS := $(LDLIBS) $(shell pkg-config --libs $(PKGS_LAZY))
LDFLAGS   += $(filter -fsanitize=%,$(OPT))

LIB_SRC   := $(wildcard src/*.c src/util/*.c src/store/*.c src/rank/*.c src/rpc/*.c \
                        src/protocol/*.c src/stack/*.c src/transport/*.c src/client/*.c \
                        src/embed/*.c)
CLI_SRC   := $(wildcard src/cli/*.c)
TEST_SRC  := $(wildcard tests/test_*.c)
# The conformance suite may use only the client side and jansson: this set is
# linked on its own (below) so a stray dependency on server code fails the build.
CONF_SRC  := $(wildcard src/cli/conformance*.c) $(wildcard src/client/*.c) src/util/clock.c \
             src/util/curl_api.c src/util/dynlib.c src/util/log.c

LIB_OBJ   := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
CLI_OBJ   := $(CLI_SRC:%.c=$(BUILD)/obj/%.o)
TEST_BIN  := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
# Helpers the tests start (run-tests.sh runs only test_*).
TEST_HELP := $(BUILD)/tests/embed_server
DEPS      := $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d)

.PHONY: all check clean
all: $(BUILD)/liba2m.a $(BUILD)/liba2m.so $(BUILD)/a2m $(BUILD)/a2m.pc $(TEST_BIN) $(TEST_HELP) \
     $(BUILD)/tests/conformance-standalone

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/liba2m.a: $(LIB_OBJ)
	@mkdir -p $(dir $@)
	$(AR) rcs $@ $^

$(BUILD)/liba2m.so: $(LIB_OBJ)
	$(CC) -shared $(LDFLAGS) -o $@ $^ $(LDLIBS)

# A stamp per allocator, so that changing ALLOC relinks the binary.
ALLOC_STAMP := $(BUILD)/alloc-$(ALLOC).stamp
$(ALLOC_STAMP):
	@mkdir -p $(BUILD)
	@rm -f $(BUILD)/alloc-*.stamp
	@touch $@

$(BUILD)/a2m: $(CLI_OBJ) $(BUILD)/liba2m.a $(ALLOC_STAMP)
	$(CC) $(LDFLAGS) -o $@ $(CLI_OBJ) $(BUILD)/liba2m.a $(ALLOC_LIBS) $(LDLIBS)

$(BUILD)/a2m.pc: scripts/a2m.pc.in
	sed -e 's|@PREFIX@|$(or $(PREFIX),/usr/local)|' -e 's|@VERSION@|0.1.0|' $< > $@

$(BUILD)/tests/%: tests/%.c $(BUILD)/liba2m.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(BUILD)/liba2m.a $(TEST_LDLIBS)

$(BUILD)/tests/conformance-standalone: tests/conformance_main.c $(CONF_SRC)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(shell pkg-config --libs jansson) -lpthread -ldl -lm

check: all
	scripts/run-tests.sh $(BUILD)

clean:
	rm -rf build build-san build-tsan

-include $(DEPS)
