#!/usr/bin/env bash
# run.sh [A2M_BINARY] — the Node client's tests (node --test, no framework),
# against the real server: prints each test and the closing line
# "N passed, M failed" that scripts/run-tests.sh adds up.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
A2M_BINARY=$(realpath "${1:-$here/../../../build/a2m}")
export A2M_BINARY
cd "$here/.."
# A hang fails the run instead of holding it: timeout ends it, and the
# missing closing line and the exit status count as a failure.
exec timeout --kill-after=10 900 node --test --test-timeout=120000 --test-reporter=spec --test-reporter-destination=stdout \
	--test-reporter=./test/summary.js --test-reporter-destination=stdout test/*.test.js
