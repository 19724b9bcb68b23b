#!/usr/bin/env bash
# run.sh [A2M_BINARY] [SUITE...] — the JavaScript adapters' tests
# (test/SUITE.test.js; default all: langgraph langchain openai-agents
# ai-sdk mastra types), with node --test against the real server and each
# framework's real package from the repository's node_modules (npm ci).
# Prints each test and the closing line "N passed, M failed" that
# scripts/run-tests.sh adds up; a missing package is a failure, not a skip.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
A2M_BINARY=$(realpath "${1:-$repo/build/a2m}")
export A2M_BINARY
[ $# -gt 0 ] && shift
suites=("$@")
[ ${#suites[@]} -eq 0 ] && suites=(langgraph langchain openai-agents ai-sdk mastra types)
# Nothing leaves this machine: the frameworks' telemetry and tracing off.
export OPENAI_AGENTS_DISABLE_TRACING=1 LANGCHAIN_TRACING_V2=false LANGSMITH_TRACING=false \
	MASTRA_TELEMETRY_DISABLED=1 OTEL_SDK_DISABLED=true
if [ ! -x "$A2M_BINARY" ]; then
	echo "FAIL no server binary $A2M_BINARY (make builds it)"
	echo "0 passed, 1 failed"
	exit 1
fi
files=()
for suite in "${suites[@]}"; do files+=("test/$suite.test.js"); done
cd "$here"
# A hang fails the run instead of holding it: timeout ends it, and the
# missing closing line and the exit status count as a failure.
exec timeout --kill-after=10 600 node --test --test-timeout=120000 --test-reporter=spec --test-reporter-destination=stdout \
	--test-reporter="$repo/clients/node/test/summary.js" --test-reporter-destination=stdout "${files[@]}"
