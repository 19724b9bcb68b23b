#!/usr/bin/env bash
# fuzz.sh — runs the libFuzzer targets of fuzz/ (docs/FUZZING.md), built
# by `make FUZZ=1` into build-fuzz/fuzz/.
#
#   scripts/fuzz.sh SECONDS [TARGET...]   explore: each target (default all)
#                                         for SECONDS, one after the other,
#                                         from its committed corpus; what it
#                                         learns goes to build-fuzz/corpus/,
#                                         crashes to build-fuzz/crashes/,
#                                         its output to build-fuzz/logs/
#   scripts/fuzz.sh --regress [TARGET...] each target once over every input
#                                         of its committed corpus and
#                                         nothing more (make check runs
#                                         this); "N passed, M failed", one
#                                         per target
#   scripts/fuzz.sh --coverage [TARGET...] the coverage build's targets
#                                         (make FUZZ=1 FUZZ_COV=1, into
#                                         build-fuzz-cov/) over both corpora,
#                                         then llvm-cov's report of src/ into
#                                         build-fuzz-cov/coverage.txt
#
# A crash, a leak, an oracle's abort or an input slower than the timeout
# fails the target. Extra libFuzzer flags: FUZZ_FLAGS="-jobs=2 ...".
set -uo pipefail
cd "$(dirname "$0")/.."

mode=explore
if [ "${1:-}" = "--regress" ] || [ "${1:-}" = "--coverage" ]; then
	mode=${1#--}
	shift
else
	seconds=${1:?usage: scripts/fuzz.sh SECONDS [TARGET...] | --regress [TARGET...]}
	shift
	case $seconds in *[!0-9]* | "") echo "fuzz.sh: SECONDS must be a number" >&2; exit 2 ;; esac
fi
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
	for f in fuzz/fuzz_*.c; do
		targets+=("$(basename "$f" .c)")
	done
fi

# The targets' scratch files (in memory when /dev/shm is there: the SQLite
# targets write a store per input), removed even after a crash.
base=/tmp
[ -d /dev/shm ] && [ -w /dev/shm ] && base=/dev/shm
scratch=$(mktemp -d "$base/a2m-fuzz-run.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
export A2M_FUZZ_DIR=$scratch
# A leak fails the input; UBSan already aborts (-fno-sanitize-recover).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}

if [ "$mode" = coverage ]; then
	profdata=$(command -v llvm-profdata || command -v llvm-profdata-14)
	cov=$(command -v llvm-cov || command -v llvm-cov-14)
	if [ -z "$profdata" ] || [ -z "$cov" ]; then
		echo "fuzz.sh: llvm-profdata and llvm-cov are missing (apt-get install llvm-14)" >&2
		exit 1
	fi
	objects=()
	for t in "${targets[@]}"; do
		bin=build-fuzz-cov/fuzz/$t
		[ -x "$bin" ] || { echo "fuzz.sh: $bin is missing (make FUZZ=1 FUZZ_COV=1)" >&2; exit 1; }
		dirs=("fuzz/corpus/$t")
		[ -d "build-fuzz/corpus/$t" ] && dirs=("build-fuzz/corpus/$t" "${dirs[@]}")
		# -runs=0: the corpora are run once, at start, and nothing more.
		LLVM_PROFILE_FILE=$scratch/$t.profraw "$bin" -runs=0 "${dirs[@]}" \
			>"$scratch/$t.log" 2>&1 || { tail -n 20 "$scratch/$t.log"; exit 1; }
		echo "$t: $(grep -o 'INITED cov: [0-9]* ft: [0-9]* corp: [0-9]*' "$scratch/$t.log")"
		objects+=(-object "$bin")
	done
	"$profdata" merge -sparse -o "$scratch/all.profdata" "$scratch"/*.profraw
	"$cov" report -instr-profile="$scratch/all.profdata" "${objects[@]:1}" src/ \
		>build-fuzz-cov/coverage.txt
	echo "per file: build-fuzz-cov/coverage.txt"
	tail -n 1 build-fuzz-cov/coverage.txt
	exit 0
fi

passed=0
failed=0
for t in "${targets[@]}"; do
	bin=build-fuzz/fuzz/$t
	if [ ! -x "$bin" ]; then
		echo "FAIL $t: $bin is missing (make FUZZ=1)"
		failed=$((failed + 1))
		continue
	fi
	dict=()
	[ -f "fuzz/$t.dict" ] && dict=("-dict=fuzz/$t.dict")
	log=$scratch/$t.log
	if [ "$mode" = explore ]; then
		mkdir -p build-fuzz/logs
		log=build-fuzz/logs/$t.log
	fi
	if [ "$mode" = regress ]; then
		# Files, not a directory: each runs once, and nothing is mutated.
		"$bin" -timeout=60 -rss_limit_mb=4096 ${FUZZ_FLAGS:-} fuzz/corpus/"$t"/* >"$log" 2>&1
	else
		mkdir -p "build-fuzz/corpus/$t" build-fuzz/crashes
		echo "== $t for ${seconds}s"
		"$bin" -max_total_time="$seconds" -timeout=25 -rss_limit_mb=4096 -print_final_stats=1 \
			-artifact_prefix="build-fuzz/crashes/$t-" "${dict[@]}" ${FUZZ_FLAGS:-} \
			"build-fuzz/corpus/$t" "fuzz/corpus/$t" >"$log" 2>&1
	fi
	status=$?
	if [ "$status" -eq 0 ]; then
		passed=$((passed + 1))
		if [ "$mode" = regress ]; then
			echo "ok $t: $(grep -c '^Executed ' "$log") inputs"
		else
			grep -E '^#[0-9]+.*(DONE|pulse)|^stat::' "$log" | tail -n 9
		fi
	else
		failed=$((failed + 1))
		echo "FAIL $t (exit $status):"
		grep -E 'fuzz oracle|ERROR:|SUMMARY:|Test unit written|^  text:|Running: ' "$log" | tail -n 12
	fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
