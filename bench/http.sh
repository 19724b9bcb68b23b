#!/usr/bin/env bash
# http.sh [A2M_BINARY] — the HTTP figures of DESIGN §7, printed, not asserted.
#
# Runs wrk (one thread, 16 keep-alive connections, 10 s each) against a real
# `a2m serve --http` — memory engine, then a SQLite file with the durable
# default (synchronous=FULL) — and, beside it, against nginx answering the
# same POST with a fixed 200 (bench/nginx.conf): the ceiling of this machine
# and this client. Four loads, each posted by bench/wrk-post.lua:
#
#   describe   memory/describe (a store holding the 10k records below)
#   recall     memory/recall, 2-3 words, limit 10, over 10 000 records (the
#              corpus of `a2m bench latency`; 1000 queries, cycled)
#   remember   memory/remember of one record (1000 different ones, cycled)
#   nginx      the describe body, answered by nginx with a fixed 200
#
# Needs wrk and nginx (bench-only, never a test dependency):
#   apt-get install -y wrk nginx-light
# Environment: DURATION (10s), CONNECTIONS (16), THREADS (1), RECORDS (10000),
# NGINX_PORT (18780), KEEP=1 to keep the work directory in /tmp.
set -u
here=$(cd "$(dirname "$0")" && pwd)
a2m=$(realpath "${1:-$here/../build/a2m}")
duration=${DURATION:-10s}
conns=${CONNECTIONS:-16}
threads=${THREADS:-1}
records=${RECORDS:-10000}
nginx_port=${NGINX_PORT:-18780}

for tool in wrk nginx curl; do
	if ! command -v "$tool" >/dev/null; then
		echo "http.sh: $tool not found (apt-get install -y wrk nginx-light curl)" >&2
		exit 2
	fi
done

d=$(mktemp -d /tmp/a2m-bench-http.XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	if [ "${KEEP:-0}" = 1 ]; then echo "kept $d"; else rm -rf "$d"; fi
}
trap cleanup EXIT

"$a2m" bench corpus --out "$d/corpus" --records "$records" --queries 1000 >/dev/null || exit 1

# ---- nginx, the ceiling ------------------------------------------------------
mkdir -p "$d/nginx"
sed -e "s|@PORT@|$nginx_port|g" -e "s|@DIR@|$d/nginx|g" "$here/nginx.conf" >"$d/nginx/nginx.conf"
nginx -p "$d/nginx/" -e "$d/nginx/error.log" -c "$d/nginx/nginx.conf" &
nginx_pid=$!
pids+=($!)
nginx_url="http://127.0.0.1:$nginx_port/"

# wait_url URL: until a POST gets an answer (at most 10 s).
wait_url() {
	for _ in $(seq 200); do
		curl -s -o /dev/null -X POST -H 'Content-Type: application/json' -d '{}' "$1" && return 0
		sleep 0.05
	done
	return 1
}
if ! wait_url "$nginx_url"; then
	echo "http.sh: nginx did not start on port $nginx_port (NGINX_PORT=...):" >&2
	cat "$d/nginx/error.log" >&2
	exit 1
fi

# ---- a2m serve ---------------------------------------------------------------

# start NAME ARGS...: `a2m serve --http 127.0.0.1:0 ARGS`; sets $url, $pid.
start() {
	local name=$1
	shift
	"$a2m" serve --http 127.0.0.1:0 "$@" 2>"$d/$name.err" &
	pid=$!
	pids+=("$pid")
	url=""
	for _ in $(seq 200); do
		url=$(sed -n 's/^a2m serve: listening on \([^ ]*\) .*/\1/p' "$d/$name.err")
		[ -n "$url" ] && return 0
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	echo "http.sh: a2m serve ($name) did not start:" >&2
	cat "$d/$name.err" >&2
	exit 1
}

# post URL BODY: one request; its response on stdout.
post() {
	curl -s -X POST -H 'Content-Type: application/json' --data-binary @- "$1" <<<"$2"
}

# check URL FILE: the first request of FILE must get a result, not an error.
check() {
	local out
	out=$(post "$1" "$(head -n 1 "$2")")
	case "$out" in
	*'"result"'*) ;;
	*) echo "http.sh: $(basename "$2") to $1 answered: ${out:0:300}" >&2; exit 1 ;;
	esac
}

# load URL: remembers the corpus, one batch of 1000 per POST.
load() {
	while IFS= read -r line; do
		case "$(post "$1" "$line")" in
		*'"result"'*) ;;
		*) echo "http.sh: loading the corpus failed" >&2; exit 1 ;;
		esac
	done <"$d/corpus/load.jsonl"
}

# cpu_ticks PID: CPU time (user + system, in clock ticks) of PID and its
# children (nginx's workers) so far.
cpu_ticks() {
	local t=0 p
	for p in "$1" $(pgrep -P "$1"); do
		t=$((t + $(awk '{ print $14 + $15 }' "/proc/$p/stat" 2>/dev/null || echo 0)))
	done
	echo "$t"
}

# run LABEL URL FILE PID: wrk with FILE's bodies against the server PID;
# appends a row to $d/table. The server's CPU time per request is beside
# req/s because it hardly depends on what else the machine is doing.
run() {
	local label=$1 target=$2 bodies=$3 server=$4 out rps p50 p99 errs load t0 t1 n cpu
	load=$(cut -d' ' -f1 /proc/loadavg)
	t0=$(cpu_ticks "$server")
	out=$(A2M_BODIES=$bodies wrk -t"$threads" -c"$conns" -d"$duration" --latency \
		-s "$here/wrk-post.lua" "$target" 2>&1)
	t1=$(cpu_ticks "$server")
	n=$(sed -n 's/^ *\([0-9]*\) requests in .*/\1/p' <<<"$out")
	cpu=$(awk -v a="$t0" -v b="$t1" -v n="${n:-0}" -v hz="$(getconf CLK_TCK)" \
		'BEGIN { if (n > 0) printf "%.1f", (b - a) / hz * 1e6 / n; else print "?" }')
	echo "$out" >"$d/wrk-$(echo "$label" | tr ' /,' '___').txt"
	rps=$(sed -n 's/^Requests\/sec: *\([0-9.]*\).*/\1/p' <<<"$out")
	p50=$(awk '$1 == "50%" { print $2 }' <<<"$out")
	p99=$(awk '$1 == "99%" { print $2 }' <<<"$out")
	errs=$(grep -E 'Non-2xx|Socket errors' <<<"$out" | tr -s ' ' | tr '\n' ';')
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$label" "${rps:-?}" "$cpu" "${p50:-?}" "${p99:-?}" \
		"$load" "$errs" >>"$d/table"
	echo "  $label: ${rps:-?} req/s" >&2
}

echo "a2m bench http: wrk -t$threads -c$conns -d$duration, $(nproc) cores," \
	"load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
check "$nginx_url" "$d/corpus/describe.jsonl"
run "nginx fixed 200 (ceiling)" "$nginx_url" "$d/corpus/describe.jsonl" "$nginx_pid"

for engine in memory sqlite; do
	if [ "$engine" = memory ]; then
		start memory --memory
	else
		start sqlite --db "$d/store.db"
	fi
	load "$url"
	for kind in describe recall remember; do
		check "$url" "$d/corpus/$kind.jsonl"
	done
	run "describe, $engine" "$url" "$d/corpus/describe.jsonl" "$pid"
	run "recall 10k, $engine" "$url" "$d/corpus/recall.jsonl" "$pid"
	run "remember 1, $engine" "$url" "$d/corpus/remember.jsonl" "$pid"
	kill "$pid"
	wait "$pid" 2>/dev/null
done

ceiling=$(awk -F'\t' 'NR == 1 { print $2 }' "$d/table")
echo
echo "a2m bench http: wrk -t$threads -c$conns -d$duration, keep-alive; $records records;" \
	"load average $(cut -d' ' -f1-3 /proc/loadavg)"
# "cpu/req": the server's CPU time per request, in microseconds (all its
# threads; nginx: master and workers). "load before": the load average as
# the row began (others' work makes req/s noisy).
printf '%-28s %12s %8s %9s %10s %10s %12s  %s\n' "load" "req/s" "nginx" "cpu/req" "p50" "p99" \
	"load before" "errors"
while IFS=$'\t' read -r label rps cpu p50 p99 lavg errs; do
	pct=$(awk -v r="$rps" -v c="$ceiling" 'BEGIN { if (c > 0) printf "%.1f%%", 100 * r / c; else print "?" }')
	printf '%-28s %12s %8s %9s %10s %10s %12s  %s\n' "$label" "$rps" "$pct" "${cpu}us" "$p50" \
		"$p99" "$lavg" "$errs"
done <"$d/table"
