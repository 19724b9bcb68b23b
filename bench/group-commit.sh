#!/usr/bin/env bash
# group-commit.sh [A2M_BINARY] — durable single-record remembers over HTTP
# from CONNECTIONS (16) wrk connections at once, against `a2m serve --http`
# on a SQLite file with synchronous=FULL: with group commit (the default)
# and with --no-group-commit, alternating ROUNDS (2) times. Prints acks/s,
# latency, the syncs the server ran and the joint transactions the writes
# were gathered into (its log at close: server/deferred.c) and, beside them,
# the disk's own fsync rate (`a2m bench remember` prints it too), and the
# server's CPU time and voluntary context switches an ack. Printed,
# never asserted. Needs wrk (apt-get install -y wrk).
set -u
here=$(cd "$(dirname "$0")" && pwd)
a2m=$(realpath "${1:-$here/../build/a2m}")
duration=${DURATION:-5s}
conns=${CONNECTIONS:-16}
rounds=${ROUNDS:-2}
command -v wrk >/dev/null || { echo "group-commit.sh: wrk not found (apt-get install -y wrk)" >&2; exit 2; }
d=$(mktemp -d /tmp/a2m-bench-group.XXXXXX)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$d"; }
trap cleanup EXIT
"$a2m" bench corpus --out "$d/corpus" --records 1000 --queries 10 >/dev/null || exit 1

# one LABEL FLAGS...: a fresh store, wrk against it, the server's own count.
one() {
	local label=$1
	shift
	rm -f "$d"/s.db*
	# Emptied here, not only by the server's redirection: that one runs in
	# the forked child, and the loop below could read the last server's
	# line first and send wrk to its closed port ("connection refused").
	: >"$d/err"
	"$a2m" serve --http 127.0.0.1:0 --db "$d/s.db" --log-level info "$@" 2>"$d/err" &
	pid=$!
	local url=
	for _ in $(seq 200); do
		url=$(sed -n 's/^a2m serve: listening on \([^ ]*\) .*/\1/p' "$d/err")
		[ -n "$url" ] && break
		sleep 0.05
	done
	local out cpu0 cpu1 sw0 sw1
	cpu0=$(cpu_of "$pid")
	sw0=$(switches_of "$pid")
	out=$(A2M_BODIES=$d/corpus/remember.jsonl wrk -t1 -c"$conns" -d"$duration" --latency \
		-s "$here/wrk-post.lua" "$url")
	cpu1=$(cpu_of "$pid")
	sw1=$(switches_of "$pid")
	kill "$pid"
	wait "$pid" 2>/dev/null
	pid=
	local acks
	acks=$(echo "$out" | awk '/requests in/ {print $1}')
	printf '%-22s %8s acks/s  p50 %-8s p99 %-8s %s %s\n' "$label" \
		"$(echo "$out" | awk '/Requests\/sec/ {printf "%.0f", $2}')" \
		"$(echo "$out" | awk '$1 == "50%" {print $2}')" \
		"$(echo "$out" | awk '$1 == "99%" {print $2}')" \
		"$(sed -n 's/.*group commit: \([0-9]*\) durable calls in \([0-9]*\) syncs.*/\2 syncs/p' "$d/err" 2>/dev/null)" \
		"$(sed -n 's/.*http: \([0-9]*\) calls waited for durability in \([0-9]*\) batches (\(.*\) a batch)/\1 calls in \2 transactions, \3 each/p' "$d/err" 2>/dev/null)"
	# The server's CPU time (user + system) and its threads' voluntary
	# context switches, each over the acknowledged writes: on a shared
	# machine these move less than acks/s do.
	awk -v a="${acks:-0}" -v c=$((cpu1 - cpu0)) -v t="$(getconf CLK_TCK)" -v s=$((sw1 - sw0)) \
		'BEGIN { if (a > 0) printf "%-22s %8.1f us of the server'"'"'s CPU an ack, %.2f voluntary switches an ack\n", "", c / t * 1e6 / a, s / a }'
}

# cpu_of PID: its CPU time so far, in clock ticks (user + system).
cpu_of() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
# switches_of PID: its threads' voluntary context switches so far.
switches_of() { cat /proc/"$1"/task/*/status 2>/dev/null | awk '/^voluntary_ctxt/ {n += $2} END {print n + 0}'; }

echo "a2m bench group-commit: wrk -t1 -c$conns -d$duration, remember 1 record, SQLite FULL; $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
for _ in $(seq "$rounds"); do
	"$a2m" bench remember --engine sqlite --db "$d/probe.db" --single 1 --records 0 2>/dev/null |
		sed -n 's/^  the disk: \([0-9]*\) fsyncs.*/the disk               \1 fsyncs\/s (4 KiB pwrite + fdatasync)/p'
	one "group commit" 
	one "--no-group-commit" --no-group-commit
done
