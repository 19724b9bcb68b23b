# a2m — build with plain make (see docs/BUILD.md for why not CMake).
#
#   make              library, binary and tests into build/
#   make SAN=1        the same with AddressSanitizer + UBSan into build-san/
#   make TSAN=1       the tests of threads into build-tsan/ (TSAN_TESTS below)
#   make FUZZ=1       the libFuzzer targets of fuzz/ (clang, ASan+UBSan) into
#                     build-fuzz/; make fuzz SECONDS=N runs each for N seconds
#                     (docs/FUZZING.md)
#   make check        all three builds, then every test (scripts/run-tests.sh);
#                     ./dev.sh test installs what is missing first, then runs this
#   make install      the binary, the libraries, the headers, a2m.pc and the
#                     a2m(1) man page under PREFIX (default /usr/local), staged
#                     under DESTDIR when set; make uninstall removes them
#   make ALLOC=libc   the a2m binary on glibc's malloc instead of mimalloc

PKGS      := jansson sqlite3 libmicrohttpd libcurl libutf8proc libpq
# Compiled against but not linked: loaded with dlopen() when first needed, so
# a process that never speaks HTTP does not pay for mapping them and what
# they link at every start (src/util/curl_api.c, src/transport/mhd_api.c,
# src/store/postgres_api.c; docs/BUILD.md).
PKGS_LAZY := libcurl libmicrohttpd libpq
PKGS_LINK := $(filter-out $(PKGS_LAZY),$(PKGS))
SAN       ?= 0
TSAN      ?= 0
FUZZ      ?= 0

# The a2m binary's allocator (docs/BUILD.md, "The allocator"): mimalloc by
# default, glibc's with ALLOC=libc. The sanitizers bring their own, so their
# builds always use libc's; the library (liba2m.a/.so) never links one, so an
# embedding program keeps whatever allocator it has.
ALLOC     ?= mimalloc

ifeq ($(FUZZ),1)
# libFuzzer is clang's (Debian's clang and libclang-rt-14-dev, scripts/deps.sh).
# The library is instrumented for coverage (fuzzer-no-link) without
# libFuzzer's main, which only the targets link (-fsanitize=fuzzer).
# -Wno-pass-failed: at -O1 clang says it did not vectorise the loops marked
# `#pragma omp simd` (vector_kernels.c), a hint and no fault.
# FUZZ_COV=1: the same targets into build-fuzz-cov/ with clang's source
# coverage instead of the sanitizers, for the report of
# `scripts/fuzz.sh --coverage` (docs/FUZZING.md).
FUZZ_CC   ?= clang
override CC := $(FUZZ_CC)
ifeq ($(FUZZ_COV),1)
BUILD     := build-fuzz-cov
OPT       := -O1 -g -fsanitize=fuzzer-no-link -fprofile-instr-generate -fcoverage-mapping \
             -Wno-pass-failed
LDFLAGS   += -fprofile-instr-generate
else
BUILD     := build-fuzz
OPT       := -O1 -g -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer \
             -fno-sanitize-recover=all -Wno-pass-failed
endif
override ALLOC := libc
else ifeq ($(TSAN),1)
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

# The version, written once in include/a2m.h. While the major version is 0 a
# minor release may change the ABI (as the protocol's minor versions may), so
# the SONAME carries both numbers; from 1.0 on, the major alone.
version_part = $(shell sed -n 's/^\#define A2M_VERSION_$(1) *\([0-9][0-9]*\)$$/\1/p' include/a2m.h)
VERSION_MAJOR := $(call version_part,MAJOR)
VERSION_MINOR := $(call version_part,MINOR)
VERSION_PATCH := $(call version_part,PATCH)
VERSION   := $(VERSION_MAJOR).$(VERSION_MINOR).$(VERSION_PATCH)
ifeq ($(VERSION_MAJOR),0)
SONAME    := liba2m.so.$(VERSION_MAJOR).$(VERSION_MINOR)
else
SONAME    := liba2m.so.$(VERSION_MAJOR)
endif

CC        ?= cc
WARN      := -Wall -Wextra -Werror -Wshadow -Wconversion -Wno-sign-conversion \
             -Wstrict-prototypes -Wmissing-prototypes -Wformat=2 -Wvla
# -fopenmp-simd: honours `#pragma omp simd` (the vector index's float
# reductions, src/store/vector_kernels.c) without OpenMP's runtime or threads.
# -fvisibility=hidden: the shared library exports what include/ marks A2M_API
# and nothing else (tests/library_test.sh checks the list against the headers).
CFLAGS    += -std=c11 -D_GNU_SOURCE -fPIC -fvisibility=hidden -fopenmp-simd $(OPT) $(WARN) \
             -Iinclude -Isrc $(shell pkg-config --cflags $(PKGS))
LDLIBS    += $(shell pkg-config --libs $(PKGS_LINK)) -lstemmer -lpthread -lm -ldl
# The tests also call libcurl and libmicrohttpd themselves (their clients and
# the embedding server they start).
TEST_LDLIBS := $(LDLIBS) $(shell pkg-config --libs $(PKGS_LAZY))
LDFLAGS   += $(filter -fsanitize=%,$(OPT))

LIB_SRC   := $(wildcard src/server/*.c src/util/*.c src/store/*.c src/rank/*.c src/rpc/*.c \
                        src/protocol/*.c src/stack/*.c src/transport/*.c src/client/*.c \
                        src/embed/*.c src/events/*.c src/compose/*.c)
# src/corpus/ (the indexer of `a2m corpus`) is the binary's, not the library's:
# it is a client of the library, writing through a2m_handle like any other.
CLI_SRC   := $(wildcard src/cli/*.c src/corpus/*.c src/federate/*.c)
TEST_SRC  := $(wildcard tests/test_*.c)
# The conformance suite (conformance/) is a program of its own: it is linked
# from its own files, the client side and six neutral files of util/ alone,
# so a dependency on server code fails the build (DECISIONS 025).
CONF_SRC  := $(wildcard conformance/*.c)
CONF_LINK := $(wildcard src/client/*.c) src/util/buf.c src/util/clock.c src/util/curl_api.c \
             src/util/dynlib.c src/util/log.c src/util/spin.c
LIB_OBJ   := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
# The library again with its test hooks (A2M_TEST_HOOKS: switches the unit
# tests turn, such as a smaller merge factor), for the tests only: the
# release library, liba2m.a and .so, has none.
LIB_TOBJ  := $(LIB_SRC:%.c=$(BUILD)/obj-test/%.o)
CLI_OBJ   := $(CLI_SRC:%.c=$(BUILD)/obj/%.o)
# The binary again with its test hooks, for the tests that need a switch of
# the binary's own (A2M_TEST_FEDERATE_CRASH_AT): the release a2m has none.
CLI_TOBJ  := $(CLI_SRC:%.c=$(BUILD)/obj-test/%.o)
CONF_OBJ  := $(CONF_SRC:%.c=$(BUILD)/obj/%.o) $(CONF_LINK:%.c=$(BUILD)/obj/%.o)
TEST_BIN  := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
# Helpers the tests start (run-tests.sh runs only test_*).
TEST_HELP := $(BUILD)/tests/embed_server $(BUILD)/tests/a2m-hooks
DEPS      := $(LIB_OBJ:.o=.d) $(LIB_TOBJ:.o=.d) $(CLI_OBJ:.o=.d) $(CLI_TOBJ:.o=.d) $(CONF_SRC:%.c=$(BUILD)/obj/%.d)
SHARED    := $(BUILD)/liba2m.so.$(VERSION) $(BUILD)/$(SONAME) $(BUILD)/liba2m.so

# The tests run under ThreadSanitizer (make TSAN=1, run by scripts/run-tests.sh):
# those of threads sharing a handle, store or scorer, the embedders' (its
# server answers on threads of its own) and those of a write's helper threads.
# The rest are single-threaded, and TSan is slow: of test_prune_segments, the
# test command runs only its test with a writer thread (scripts/run-tests.sh).
TSAN_TESTS := test_threads test_rank_threads test_sqlite_readers test_embed test_analyze test_analyze_ahead \
              test_extensions \
               test_recall test_index test_index_merges test_index_segments test_index_tail \
               test_durable test_http_stop test_joint test_prune_segments test_checkpoint \
               test_sqlite_mmap
TSAN_BIN  := $(TSAN_TESTS:%=build-tsan/tests/%) build-tsan/tests/embed_server

# The fuzz targets (fuzz/, docs/FUZZING.md): one program per fuzz/fuzz_*.c,
# each linking the test library of build-fuzz/.
FUZZ_SRC  := $(wildcard fuzz/fuzz_*.c)
FUZZ_BIN  := $(FUZZ_SRC:fuzz/%.c=$(BUILD)/fuzz/%)

.PHONY: all check clean install uninstall tsan-tests endurance fuzz fuzz-coverage faults
ifeq ($(FUZZ),1)
all: $(FUZZ_BIN)
else ifeq ($(TSAN),1)
all: $(TSAN_BIN)
else
all: $(BUILD)/liba2m.a $(SHARED) $(BUILD)/a2m $(BUILD)/a2m.pc $(BUILD)/a2m.1 $(TEST_BIN) \
     $(TEST_HELP) $(BUILD)/a2m-conformance $(BUILD)/servers/a2m-minimal
endif

# The list above, for scripts/run-tests.sh: a listed test that was not built
# fails the run instead of silently running less.
tsan-tests:
	@echo $(TSAN_TESTS)

# The compiler's command line, kept in a file rewritten only when it changes,
# so that changing a flag (here or on make's command line) rebuilds everything.
FLAGS_STAMP := $(BUILD)/flags
$(shell mkdir -p $(BUILD) && echo '$(CC) $(CFLAGS) $(LDFLAGS)' | cmp -s - $(FLAGS_STAMP) || \
        echo '$(CC) $(CFLAGS) $(LDFLAGS)' > $(FLAGS_STAMP))

# The inspector's files are assembled into http_ui.o (.incbin), which the
# compiler's dependency lists do not see.
UI_FILES  := $(wildcard ui/*)
$(BUILD)/obj/src/transport/http_ui.o $(BUILD)/obj-test/src/transport/http_ui.o: $(UI_FILES)

$(BUILD)/obj/%.o: %.c $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/obj-test/%.o: %.c $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -DA2M_TEST_HOOKS -MMD -MP -c $< -o $@

# Made anew each time: ar would keep the member of a source file that no
# longer exists (renamed or removed) beside the new ones.
$(BUILD)/liba2m.a: $(LIB_OBJ)
	@mkdir -p $(dir $@)
	@rm -f $@
	$(AR) rcs $@ $^

$(BUILD)/liba2m-test.a: $(LIB_TOBJ)
	@mkdir -p $(dir $@)
	@rm -f $@
	$(AR) rcs $@ $^

# -z defs: a symbol the library uses and links nothing for is a build error,
# not a surprise in the program that loads it (the sanitizers' runtimes are
# the executable's to bring, so not for them).
ifeq ($(SAN)$(TSAN),00)
SO_DEFS   := -Wl,-z,defs
endif
$(BUILD)/liba2m.so.$(VERSION): $(LIB_OBJ)
	$(CC) -shared -Wl,-soname,$(SONAME) $(SO_DEFS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/$(SONAME): $(BUILD)/liba2m.so.$(VERSION)
	ln -sf liba2m.so.$(VERSION) $@

$(BUILD)/liba2m.so: $(BUILD)/$(SONAME)
	ln -sf $(SONAME) $@

# A stamp per allocator, so that changing ALLOC relinks the binary.
ALLOC_STAMP := $(BUILD)/alloc-$(ALLOC).stamp
$(ALLOC_STAMP):
	@mkdir -p $(BUILD)
	@rm -f $(BUILD)/alloc-*.stamp
	@touch $@

$(BUILD)/a2m: $(CLI_OBJ) $(BUILD)/liba2m.a $(ALLOC_STAMP)
	$(CC) $(LDFLAGS) -o $@ $(CLI_OBJ) $(BUILD)/liba2m.a $(ALLOC_LIBS) $(LDLIBS)

$(BUILD)/tests/a2m-hooks: $(CLI_TOBJ) $(BUILD)/liba2m-test.a $(ALLOC_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $(CLI_TOBJ) $(BUILD)/liba2m-test.a $(ALLOC_LIBS) $(LDLIBS)

PREFIX    ?= /usr/local
BINDIR    ?= $(PREFIX)/bin
LIBDIR    ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
MANDIR    ?= $(PREFIX)/share/man

# For the tree: a2m.pc naming PREFIX. make install writes the installed one.
$(BUILD)/a2m.pc: scripts/a2m.pc.in include/a2m.h
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' \
	    -e 's|@VERSION@|$(VERSION)|' $< > $@

# a2m(1), made from the same text as `a2m --help` and each `a2m CMD --help`.
$(BUILD)/a2m.1: $(BUILD)/a2m $(BUILD)/a2m-conformance scripts/manpage.sh
	scripts/manpage.sh $(BUILD)/a2m $(VERSION) > $@

$(BUILD)/tests/%: tests/%.c $(BUILD)/liba2m-test.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -DA2M_TEST_HOOKS $(LDFLAGS) -o $@ $< $(BUILD)/liba2m-test.a $(TEST_LDLIBS)

# The corpus indexer is the binary's (CLI_SRC), so its unit tests link its
# objects beside the library.
CORPUS_OBJ := $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard src/corpus/*.c))
$(BUILD)/tests/test_corpus $(BUILD)/tests/test_corpus_values: \
$(BUILD)/tests/%: tests/%.c $(CORPUS_OBJ) $(BUILD)/liba2m-test.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -DA2M_TEST_HOOKS $(LDFLAGS) -o $@ $< $(CORPUS_OBJ) $(BUILD)/liba2m-test.a \
		$(TEST_LDLIBS)

$(BUILD)/fuzz/%: fuzz/%.c fuzz/fuzz.h $(BUILD)/liba2m-test.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -DA2M_TEST_HOOKS -Ifuzz $(LDFLAGS) -fsanitize=fuzzer -o $@ $< \
	    $(BUILD)/liba2m-test.a $(TEST_LDLIBS)

# make fuzz SECONDS=N [TARGETS="fuzz_message ..."]: each target for N seconds,
# one after the other, from its committed corpus (scripts/fuzz.sh).
SECONDS   ?= 60
fuzz:
	$(MAKE) FUZZ=1 all
	scripts/fuzz.sh $(SECONDS) $(TARGETS)

# make fuzz-coverage [TARGETS=...]: line and region coverage of src/ by
# what the corpora (committed and learnt) reach, with llvm-cov (llvm-14).
fuzz-coverage:
	$(MAKE) FUZZ=1 FUZZ_COV=1 all
	scripts/fuzz.sh --coverage $(TARGETS)

# tests/test_faults.c fails liba2m's own allocations and file calls on
# purpose: in that binary, which links liba2m-test.a statically, every call
# of the malloc family, and of the file calls the procedural mirror makes,
# lands in the test's wrappers (tests/fault_alloc.h, tests/fault_files.h,
# docs/FAULTS.md).
FAULT_WRAP := -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=aligned_alloc \
              -Wl,--wrap=strdup,--wrap=strndup,--wrap=free \
              -Wl,--wrap=open,--wrap=openat,--wrap=read,--wrap=write,--wrap=fsync,--wrap=fdatasync \
              -Wl,--wrap=fchmod,--wrap=mkdir,--wrap=renameat,--wrap=unlinkat
$(BUILD)/tests/test_faults: LDFLAGS += $(FAULT_WRAP)
$(BUILD)/tests/test_faults: tests/fault_alloc.h tests/fault_vfs.h tests/fault_files.h tests/fault_workload.h tests/fault_run.h tests/fault_sweep.h tests/fault_reopen.h tests/fault_threads.h \
                            tests/check.h

$(BUILD)/tests/test_prune $(BUILD)/tests/test_prune_segments: tests/prune_stack.h tests/prune_bounds.h \
	tests/scorer_switch.h tests/check.h tests/check_a2m.h tests/pg_helper.h
$(BUILD)/tests/test_salience_bound: tests/scorer_switch.h tests/check.h tests/check_stack.h
$(BUILD)/tests/test_blend_least: tests/check_stack.h tests/check.h
# Programs whose helpers sit in a header of their own, included once.
$(BUILD)/tests/test_check: tests/check_stores.h tests/check.h
$(BUILD)/tests/test_embed: tests/embed_harness.h tests/check.h
$(BUILD)/tests/test_recall: tests/recall_harness.h tests/check.h tests/check_a2m.h tests/pg_helper.h
$(BUILD)/tests/test_vectors: tests/vectors_model.h tests/vector_filter.h tests/check.h tests/pg_helper.h
# The term index's rules, a program per concern, share their harness and model.
$(BUILD)/tests/test_index $(BUILD)/tests/test_index_merges $(BUILD)/tests/test_index_segments \
$(BUILD)/tests/test_index_tail: tests/index_harness.h tests/index_model.h tests/pg_helper.h
# The storage seam's rules, a program per concern, share their harness.
$(patsubst tests/%.c,$(BUILD)/tests/%,$(wildcard tests/test_store_*.c)): \
	tests/store_harness.h tests/store_records.h tests/pg_helper.h

$(BUILD)/a2m-conformance: $(CONF_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(shell pkg-config --libs jansson) -lpthread -ldl -lm

# --- servers/minimal: an A2M server that shares no code with liba2m ---------
# Written from the spec alone (servers/minimal/README.md, issue 20), so it is
# compiled with jansson's flags and none of ours (no -Iinclude -Isrc) and
# linked with jansson and libm alone. Each command is recorded beside its
# output, and servers/minimal/check_isolation.sh then checks those commands,
# the headers the compiler read (-MD) and the symbols and libraries of the
# object and binary: anything of ours fails the build. liba2m.a is order-only:
# it is not linked, only read, to know which symbols are ours.
MINIMAL_CC   = $(CC) -std=c11 $(OPT) $(WARN) $(shell pkg-config --cflags jansson) -MD -c $< -o $@
MINIMAL_LINK = $(CC) $(LDFLAGS) -o $@ $< $(shell pkg-config --libs jansson) -lm

$(BUILD)/servers/a2m-minimal.o: servers/minimal/a2m_minimal.c
	@mkdir -p $(dir $@)
	$(MINIMAL_CC)
	@echo '$(MINIMAL_CC)' >$@.cmd

$(BUILD)/servers/a2m-minimal: $(BUILD)/servers/a2m-minimal.o servers/minimal/check_isolation.sh \
                              | $(BUILD)/liba2m.a
	$(MINIMAL_LINK)
	@echo '$(MINIMAL_LINK)' >$@.cmd
	@servers/minimal/check_isolation.sh $(BUILD) >$@.isolation || \
		{ cat $@.isolation; rm -f $@; exit 1; }


# Every build the test run needs, then the run: the same suites ./dev.sh test
# runs (it installs what is missing, then calls this). build/ first: every
# stream of the run uses it. scripts/run-tests.sh --build then makes the
# other three (SAN=1, TSAN=1, FUZZ=1 all) in the background while the
# release build's suites run, each stream waiting for the build it needs; a
# build that fails is a failure of the run (docs/BUILD.md, "The test
# command"). Each step says how long it took and under what load (the
# machine may be shared).
timed = s=$$(date +%s); $(2) || exit $$?; \
	echo "make check: $(1) in $$(($$(date +%s) - s)) s (load $$(cut -d' ' -f1-3 /proc/loadavg))"
check:
	@$(call timed,build/,$(MAKE) all)
	@$(call timed,the other builds and the suites,scripts/run-tests.sh --build)

# The long versions of what `make check` runs briefly (docs/CHECK.md): kill -9
# at random points for ENDURANCE_SECONDS, then a soak as long. A failure
# prints the seed that repeats it.
ENDURANCE_SECONDS ?= 1800
endurance: all
	$(BUILD)/a2m bench crash --seconds $(ENDURANCE_SECONDS)
	$(BUILD)/a2m bench soak --seconds $(ENDURANCE_SECONDS) --warmup 30

# The complete fault sweep (docs/FAULTS.md): every point of every kind of
# fault over the workload of tests/test_faults.c, where the test command
# runs a sample. Long (docs/FAULTS.md gives its figures); add SAN=1 to run
# it under ASan+UBSan.
faults: $(BUILD)/tests/test_faults
	A2M_FAULTS=full $(BUILD)/tests/test_faults

# Installs the release build (build/): never a sanitizer one.
install: all
ifneq ($(SAN)$(TSAN),00)
	$(error make install installs the release build: run it without SAN or TSAN)
endif
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCLUDEDIR) \
	    $(DESTDIR)$(MANDIR)/man1
	install -m 755 $(BUILD)/a2m $(BUILD)/a2m-conformance $(DESTDIR)$(BINDIR)/
	install -m 644 $(BUILD)/liba2m.a $(DESTDIR)$(LIBDIR)/liba2m.a
	install -m 755 $(BUILD)/liba2m.so.$(VERSION) $(DESTDIR)$(LIBDIR)/liba2m.so.$(VERSION)
	ln -sf liba2m.so.$(VERSION) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/liba2m.so
	install -m 644 include/a2m.h include/a2m_client.h $(DESTDIR)$(INCLUDEDIR)/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' \
	    -e 's|@VERSION@|$(VERSION)|' scripts/a2m.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/a2m.pc
	install -m 644 $(BUILD)/a2m.1 $(DESTDIR)$(MANDIR)/man1/a2m.1

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/a2m $(DESTDIR)$(BINDIR)/a2m-conformance $(DESTDIR)$(LIBDIR)/liba2m.a \
	    $(DESTDIR)$(LIBDIR)/liba2m.so.$(VERSION) $(DESTDIR)$(LIBDIR)/$(SONAME) \
	    $(DESTDIR)$(LIBDIR)/liba2m.so $(DESTDIR)$(LIBDIR)/pkgconfig/a2m.pc \
	    $(DESTDIR)$(INCLUDEDIR)/a2m.h $(DESTDIR)$(INCLUDEDIR)/a2m_client.h \
	    $(DESTDIR)$(MANDIR)/man1/a2m.1

clean:
	rm -rf build build-san build-tsan build-fuzz build-fuzz-cov

-include $(DEPS)
