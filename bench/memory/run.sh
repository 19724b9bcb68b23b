#!/usr/bin/env bash
# run.sh [A2M_BINARY] [-- BENCH ARGS...] — `a2m bench memory` with a real
# embedder (docs/BENCHMARKS.md): the lexical runs, then one run per fusion
# weight of the generated vectors against the text, 0 (text alone with the
# embedder configured) to 100 (vectors alone).
#
# Creates its own virtualenv from requirements.txt (pinned, --no-deps) the
# first time, or when requirements.txt changed, under $A2M_BENCH_VENV
# (default: build/bench-memory-venv beside the binary's build directory),
# starts embed_server.py on a free loopback port, runs the benchmark
# against it (`--embed-url http://127.0.0.1:PORT/v1/embeddings`) and stops
# the server. Nothing here is needed by the tests.
#
# Environment: WEIGHTS (default 0,10,20,30,40,50,60,70,80,90,100), SEED (23).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
a2m=$(realpath "${1:-$here/../../build/a2m}")
[ $# -gt 0 ] && shift
[ "${1:-}" = "--" ] && shift
venv=${A2M_BENCH_VENV:-$(dirname "$a2m")/bench-memory-venv}
weights=${WEIGHTS:-0,10,20,30,40,50,60,70,80,90,100}
seed=${SEED:-23}

if ! cmp -s "$here/requirements.txt" "$venv/requirements.txt" 2>/dev/null; then
	echo "run.sh: creating $venv" >&2
	rm -rf "$venv"
	python3 -m venv "$venv"
	"$venv/bin/pip" install -q --no-deps --disable-pip-version-check -r "$here/requirements.txt"
	cp "$here/requirements.txt" "$venv/requirements.txt"
fi

"$venv/bin/python" "$here/embed_server.py" --check >&2

out=$(mktemp)
"$venv/bin/python" "$here/embed_server.py" --port 0 >"$out" &
server=$!
trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null; rm -f "$out"' EXIT
for _ in $(seq 300); do
	grep -q listening "$out" && break
	kill -0 "$server" 2>/dev/null || { echo "run.sh: the embedding server died" >&2; exit 1; }
	sleep 0.1
done
port=$(sed -n 's/^listening on //p' "$out")
[ -n "$port" ] || { echo "run.sh: the embedding server did not start" >&2; exit 1; }

"$a2m" bench memory --embed-url "http://127.0.0.1:$port/v1/embeddings" \
	--weights "$weights" --seed "$seed" "$@"
