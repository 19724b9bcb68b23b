#!/usr/bin/env bash
# run.sh [A2M_BINARY] — the interop grid (grid.py) against that server
# binary. The Python adapters' environments come from
# adapters/python/venv.sh (made once, reused), the MCP SDK from the
# repository's node_modules (npm ci, as scripts/run-tests.sh runs it). A
# missing tool is a failure: the closing line is then "0 passed, 1 failed".
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
a2m=$(realpath "${1:-$repo/build/a2m}")
fail() {
	echo "FAIL $*"
	echo "0 passed, 1 failed"
	exit 1
}
[ -x "$a2m" ] || fail "no server binary $a2m (make builds it)"
command -v python3 >/dev/null || fail "python3 is not installed (scripts/deps.sh test)"
command -v node >/dev/null || fail "node is not installed (scripts/deps.sh test)"
[ -d "$repo/node_modules/@modelcontextprotocol/sdk" ] || fail "no node_modules/@modelcontextprotocol/sdk: run npm ci"
cd "$repo"
exec timeout --kill-after=10 1800 python3 tests/interop/grid.py --a2m "$a2m"
