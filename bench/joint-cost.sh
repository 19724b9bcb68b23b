#!/usr/bin/env bash
# joint-cost.sh [BUILD_DIR] — the library's instructions per durable
# single-record remember, counted by callgrind (deterministic, whatever the
# machine's load): N (800) writes into a fresh SQLite store, one transaction
# each (G 0, a2m_handle_network) and G (1, 4, 16) at a time in one joint
# transaction (server/deferred.c, as the HTTP binding batches them); the
# store's open and close (the same run with no write) subtracted. Printed,
# never asserted. Needs valgrind and the build's liba2m.a (make).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=$(realpath "${1:-$here/../build}")
n=${WRITES:-800}
command -v valgrind >/dev/null || { echo "joint-cost.sh: valgrind not found" >&2; exit 2; }
d=$(mktemp -d /tmp/a2m-bench-joint.XXXXXX)
trap 'rm -rf "$d"' EXIT
cc -O2 -I"$here/../include" -I"$here/../src" "$here/joint_cost.c" "$build/liba2m.a" \
	$(pkg-config --libs jansson sqlite3 libutf8proc) -lstemmer -lpthread -ldl -lm -o "$d/joint_cost"
# ir N G: the instructions callgrind counted for N writes G at a time.
ir() {
	rm -f "$d"/s.db*
	valgrind --tool=callgrind --callgrind-out-file="$d/cg.out" "$d/joint_cost" "$d/s.db" "$1" "$2" \
		>"$d/out" 2>&1 || { cat "$d/out" >&2; exit 1; }
	sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$d/out"
}
echo "a2m bench joint-cost: $n single-record remembers, SQLite FULL with group commit; callgrind"
for g in 0 1 4 16; do
	base=$(ir 0 "$g")
	all=$(ir "$n" "$g")
	awk -v g="$g" -v a="$all" -v b="$base" -v n="$n" 'BEGIN {
		printf "  %-40s %7.1f k instructions a write\n",
			g == 0 ? "each its own transaction" : "joint transactions of " g, (a - b) / n / 1000 }'
done
