#!/usr/bin/env bash
# run-tests.sh — runs every test suite against the builds that exist and
# prints one closing line "N passed, M failed" (the sum over all suites).
#
# Suites: the C unit tests, the conformance suite against both stores, the
# stdio transport and CLI tests; each again under ASan+UBSan (build-san/);
# and one conformance pass with the server under valgrind.
set -uo pipefail
cd "$(dirname "$0")/.."

passed=0
failed=0
tmp=$(mktemp -d /tmp/a2m-tests.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# run NAME COMMAND...: runs one suite, adds its counts, shows failures.
run() {
	local name=$1
	shift
	local log="$tmp/log" p=0 f=0 status
	"$@" >"$log" 2>&1
	status=$?
	while read -r a b; do
		p=$((p + a))
		f=$((f + b))
	done < <(sed -nE 's/^([0-9]+) passed, ([0-9]+) failed$/\1 \2/p' "$log")
	while read -r a b; do
		p=$((p + a))
		f=$((f + b - a))
	done < <(sed -nE 's/^([0-9]+)\/([0-9]+) checks passed$/\1 \2/p' "$log")
	# A suite that died or failed without saying so counts as one failure.
	if [ "$status" -ne 0 ] && [ "$f" -eq 0 ]; then
		f=1
	fi
	if [ "$p" -eq 0 ] && [ "$f" -eq 0 ]; then
		f=1
		echo "suite $name ran no test" >>"$log"
	fi
	passed=$((passed + p))
	failed=$((failed + f))
	printf '%-40s %5d passed, %3d failed\n' "$name" "$p" "$f"
	if [ "$f" -ne 0 ]; then
		grep -E '^(FAIL|  )' "$log" | head -40
		echo "---- last lines of $name (exit $status) ----"
		tail -n 15 "$log"
	fi
}

for build in build build-san; do
	[ -x "$build/a2m" ] || continue
	tag=""
	[ "$build" = build-san ] && tag=" [asan+ubsan]"
	for t in "$build"/tests/test_*; do
		run "unit $(basename "$t")$tag" "$t"
	done
	run "conformance memory$tag" "$build/a2m" conformance --stdio "$build/a2m" serve --memory
	run "conformance core-only$tag" "$build/a2m" conformance --stdio "$build/a2m" serve --memory \
		--capabilities core
	rm -f "$tmp/conf.db"*
	run "conformance sqlite$tag" "$build/a2m" conformance --stdio "$build/a2m" serve --db "$tmp/conf.db"
	# The read-only profile (spec §2.1) over a store that already has records.
	rm -f "$tmp/ro.db"*
	printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"memory/remember","params":{"records":[{"content":"a fact loaded before the server turned read-only"},{"content":"another pre-existing record","tier":"semantic"}]}}' |
		"$build/a2m" serve --db "$tmp/ro.db" >/dev/null
	run "conformance read-only$tag" "$build/a2m" conformance --stdio "$build/a2m" serve --db "$tmp/ro.db" --read-only
	run "conformance standalone build$tag" "$build/tests/conformance-standalone" conformance \
		--stdio "$build/a2m" serve --memory
	run "stdio transport and cli$tag" tests/stdio_test.sh "$build/a2m"
done

if command -v valgrind >/dev/null && [ -x build/a2m ]; then
	run "conformance under valgrind" build/a2m conformance --stdio \
		tests/valgrind_server.sh "$tmp/valgrind.log" build/a2m serve --memory
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
