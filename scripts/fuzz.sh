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
#
# A crash, a leak, an oracle's abort or an input slower than the timeout
# fails the target. Extra libFuzzer flags: FUZZ_FLAGS="-jobs=2 ...".
set -uo pipefail
cd "$(dirname "$0")/.."

mode=explore
if [ "${1:-}" = "--regress" ]; then
	mode=regress
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
