#!/usr/bin/env bash
# run.sh [A2M_BINARY] — two frameworks (LangChain, then LangGraph) and the
# Node client sharing facts through one A2M store. Starts
# `a2m serve --http` on a fresh SQLite file, runs the three steps, checks
# what each printed, and closes with "N passed, M failed" (it runs in
# scripts/run-tests.sh, so the example cannot rot).
#
# The Python side runs in adapters/python's "langchain" environment
# (LangGraph and langchain-core, pinned; made once by venv.sh). Outside
# this repository: pip install clients/python "adapters/python[langgraph,langchain]".
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
a2m=$(realpath "${1:-$repo/build/a2m}")
tmp=$(mktemp -d /tmp/a2m-example.XXXXXX)
server=""
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$tmp"' EXIT
passed=0
failed=0
expect() { # expect WHAT PATTERN FILE
	if grep -qE -- "$2" "$3"; then passed=$((passed + 1)); else
		failed=$((failed + 1))
		echo "FAIL $1 (no /$2/ in the output)"
	fi
}

venv=$("$repo/adapters/python/venv.sh" langchain) || { echo "FAIL the Python environment"; echo "0 passed, 1 failed"; exit 1; }
"$a2m" serve --http 127.0.0.1:0 --db "$tmp/team.db" 2>"$tmp/server.log" &
server=$!
for _ in $(seq 200); do
	A2M_URL=$(sed -n 's/^a2m serve: listening on \([^ ]*\) .*/\1/p' "$tmp/server.log")
	[ -n "$A2M_URL" ] && break
	sleep 0.05
done
export A2M_URL PYTHONDONTWRITEBYTECODE=1 LANGCHAIN_TRACING_V2=false

echo "== step 1: a LangChain chat (working memory), then the session closes"
"$venv/bin/python" "$here/conversation.py" | tee "$tmp/1"
expect "the chat replays its history" "assistant: Got it\." "$tmp/1"
expect "nothing is searchable while the chat is open" "searchable while the chat is open: \[\]" "$tmp/1"
expect "closing the session moves both user turns and both answers" "session closed: 4 turns" "$tmp/1"

echo "== step 2: a LangGraph agent recalls it"
"$venv/bin/python" "$here/graph.py" | tee "$tmp/2"
expect "LangGraph finds what the LangChain chat was told" "- Our staging database is db-7.internal" "$tmp/2"

echo "== step 3: the Node client reads both"
node "$here/recall.mjs" | tee "$tmp/3"
expect "Node fetches the fact LangGraph kept" "fetches ops/staging/db: staging db: db-7.internal" "$tmp/3"
expect "Node recalls the closed conversation" "Node recalls: .*deploys freeze on Fridays" "$tmp/3"

kill "$server"
wait "$server" 2>/dev/null
server=""
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
