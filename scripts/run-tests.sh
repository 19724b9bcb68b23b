#!/usr/bin/env bash
# run-tests.sh — runs every test suite against the three builds `make check`
# makes, and prints one closing line "N passed, M failed" (the sum over all
# suites). A build, a test binary or a tool a suite needs that is missing is
# a failure, never a quieter run.
#
# Suites: the C unit tests (test_faults among them: a sample of every fault
# sweep over its workload and the single-request sweeps whole; `make faults`
# runs every point, docs/FAULTS.md), the conformance suite against both stores, the
# stdio transport and CLI tests, the conformance suite over HTTP (plain, with
# tokens, over TLS) and the HTTP transport tests; each again under
# ASan+UBSan (build-san/); the tests of threads under ThreadSanitizer
# (build-tsan/: the Makefile's TSAN_TESTS); one conformance pass with the
# server under valgrind; `a2m corpus` (the read-only profile over stdio and
# HTTP, and tests/corpus_test.sh); the minimal server of servers/minimal (isolation,
# conformance, its own checks, valgrind); `a2m check` and damaged files
# (tests/check_test.sh); kill -9 at random points and a soak (`a2m bench
# crash`, `a2m bench soak`, docs/CHECK.md), each on both builds; and the
# library as installed (tests/library_test.sh); the claims register
# (conformance/claims.json) against the specification, with its tool's own
# tests (tests/claims_test.sh; docs/CLAIMS.md says where the specification is
# looked for); the Node and Python clients' own suites (clients/); the fuzz
# targets over their committed corpora (build-fuzz/, scripts/fuzz.sh
# --regress); the Python and JavaScript adapters against each framework's
# real package (adapters/python/, adapters/js/); and the interop grid,
# every writer against every reader (tests/interop/, docs/FRAMEWORKS.md).
# The PostgreSQL store's suites (conformance on a third engine, several
# servers on one deployment, faults, a standby) run against a cluster
# started here ($A2M_TEST_POSTGRES), which the unit tests that open stores
# also use (tests/pg_helper.h).
#
# The suites run in six streams at once, each a list run in order: the
# release build's unit tests, its servers' suites (conformance, transports,
# CLI, HTTP, MCP, ...), the same two for the sanitizer build, the checkers'
# (valgrind, the engines' ranking, layers, claims, the installed library,
# ThreadSanitizer, the fuzz regression) and the long runs' (the kill -9 and
# soak benches, the clients, the adapters and the grid). Most suites wait
# (on servers starting, fsync, PostgreSQL, timeouts, downloads) more than
# they compute, so on two cores the streams take well under half the time
# of one list. With --build (make check makes build/, then calls this with
# it) the sanitizer, ThreadSanitizer and fuzz builds are made here in the
# background while the release streams run, and each stream waits for the
# build it needs; a failed build is a failure. Each stream writes its lines
# to a file of its own; they are printed stream by stream, in a fixed
# order, when all are done, then the slowest suites (wall and CPU seconds:
# the CPU of the suite's own processes, not of the PostgreSQL server) and
# the closing line. Nothing the streams share collides: every server
# listens on a port the kernel picks, every suite makes its own temporary
# directory and PostgreSQL schemas named after its process, and each
# build's stores and copy of docs/ here are named after the build.
set -uo pipefail
cd "$(dirname "$0")/.."

passed=0
failed=0
tmp=$(mktemp -d /tmp/a2m-tests.XXXXXX)
# Every HTTP server started here, one pid a line (the streams are
# subshells: a file, not an array), killed on the way out with the streams.
server_pids=$tmp/server-pids
: >"$server_pids"
stream_pids=()
# PostgreSQL: a cluster of the run's own, in a directory its server user can
# reach (scripts/pg.sh: initdb, a free port, the socket in that directory).
pgdir=$(mktemp -d /tmp/a2m-pg.XXXXXX)
trap 'for p in "${stream_pids[@]}"; do kill "$p" 2>/dev/null; done
	while read -r p; do kill -9 "$p" 2>/dev/null; done <"$server_pids"
	scripts/pg.sh stop "$pgdir" all >/dev/null 2>&1; rm -rf "$tmp" "$pgdir"' EXIT
pg_started=0
if A2M_TEST_POSTGRES=$(scripts/pg.sh start "$pgdir" 2>"$tmp/pg.log" | tail -n 1) &&
	[ -n "$A2M_TEST_POSTGRES" ]; then
	export A2M_TEST_POSTGRES
	pg_started=1
else
	unset A2M_TEST_POSTGRES
fi
# pg_conninfo SCHEMA: the run's server, with SCHEMA as the deployment.
pg_conninfo() {
	echo "$A2M_TEST_POSTGRES options='-csearch_path=$1'"
}

# elapsed START: whole seconds since START (an $EPOCHREALTIME), rounded.
elapsed() {
	local now=$EPOCHREALTIME
	local us=$(((${now%.*} - ${1%.*}) * 1000000 + 10#${now#*.} - 10#${1#*.}))
	echo $(((us + 500000) / 1000000))
}
run_start=$EPOCHREALTIME
echo "run-tests.sh: started $(date -u +%H:%M:%S) UTC, load $(cut -d' ' -f1-3 /proc/loadavg)"

# Work the streams wait for, started now in the background: each leaves
# $tmp/NAME.done when it ends, however it ends, and `await NAME` waits for it.
await() {
	while [ ! -e "$tmp/$1.done" ]; do sleep 1; done
}
# The Python adapters' virtual environments (adapters/python/venv.sh: pinned
# frameworks from PyPI, made once and reused until a requirements file
# changes): on a fresh machine that is minutes of downloads. Their suites
# wait for it.
venv_log="$tmp/adapter-venvs.log"
(
	trap 'touch "$tmp/venvs.done"' EXIT
	for group in langchain crewai agno autogen openai-agents; do
		adapters/python/venv.sh "$group" || echo "FAIL venv $group"
	done
) >"$venv_log" 2>&1 &
# tests/mcp_test.mjs drives `a2m mcp` with the official MCP SDK client, which
# npm ci installs from package-lock.json (so do the Node client's type
# check, the inspector's browser test, the JavaScript adapters and the
# grid): once, quietly, and only when node_modules is missing or older than
# the lock file.
(
	trap 'touch "$tmp/npm.done"' EXIT
	if [ ! -f node_modules/.package-lock.json ] ||
		[ package-lock.json -nt node_modules/.package-lock.json ]; then
		if ! npm ci --no-audit --no-fund --loglevel=error >"$tmp/npm.log" 2>&1; then
			echo "npm ci failed; the suites that need node_modules will fail:"
			tail -n 20 "$tmp/npm.log"
		fi
	fi
) >"$tmp/npm.out" 2>&1 &

# The builds besides build/. With --build (make check, which makes build/
# first) they are made here, in the background, one after the other
# (ASan+UBSan first: two streams need it), while the release build's suites
# run: those wait on servers, fsync and timeouts more than they compute, and
# the compiler takes the slack. Without it they must be there already.
# Either way $tmp/built.SAN, .TSAN and .FUZZ hold make's status.
if [ "${1:-}" = --build ]; then
	(
		for b in SAN TSAN FUZZ; do
			start=$EPOCHREALTIME
			env -u MAKEFLAGS -u MFLAGS make -s -j"$(nproc)" "$b=1" all >"$tmp/make-$b.log" 2>&1
			status=$?
			echo "make $b=1 all: status $status in $(elapsed "$start") s, load $(cut -d' ' -f1-3 /proc/loadavg)" \
				>>"$tmp/make-$b.log"
			echo "$status" >"$tmp/built.$b"
		done
	) &
	stream_pids+=($!)
else
	for b in SAN TSAN FUZZ; do echo 0 >"$tmp/built.$b"; done
fi

# cpu_now: the CPU milliseconds (user and system) of this shell's waited-for
# children so far, into $cpu_ms (bash's times; it must run in this shell,
# not in a $(...): a subshell's own count starts at zero).
cpu_now() {
	times >"$tmp/times.$stream"
	cpu_ms=$(awk 'END { split($1, u, /[ms]/); split($2, s, /[ms]/)
		printf "%d\n", (u[1] * 60 + u[2] + s[1] * 60 + s[2]) * 1000 }' "$tmp/times.$stream")
}

# run NAME COMMAND...: runs one suite, adds its counts, shows failures; its
# wall and CPU seconds on its line and in $tmp/times for the summary.
stream=main
run() {
	local name=$1
	shift
	local log="$tmp/log.$stream" p=0 f=0 status start secs cpu
	start=$EPOCHREALTIME
	cpu_now
	cpu=$cpu_ms
	"$@" >"$log" 2>&1
	status=$?
	secs=$(elapsed "$start")
	cpu_now
	cpu=$(((cpu_ms - cpu + 500) / 1000))
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
	echo "$passed $failed" >"$tmp/counts.$stream"
	printf '%-40s %5d passed, %3d failed (%s s, cpu %s s)\n' "$name" "$p" "$f" "$secs" "$cpu"
	printf '%s\t%s\t%s\n' "$secs" "$cpu" "$name" >>"$tmp/times"
	if [ "$f" -ne 0 ]; then
		grep -E '^(FAIL|  )' "$log" | head -40
		echo "---- last lines of $name (exit $status) ----"
		tail -n 15 "$log"
	fi
}

# missing WHAT: a suite that could not run, counted as a failure.
missing() {
	run "missing: $1" sh -c "echo 'FAIL $1 is missing: run make check (or ./dev.sh test)'; exit 1"
}

# start_stream NAME FUNCTION [ARGS...]: runs FUNCTION in a subshell in the
# background, its lines into $tmp/out.NAME, its counts so far into
# $tmp/counts.NAME (run keeps them), and at its end its seconds into
# $tmp/done.NAME: a stream that dies before its end is one more failure.
streams=()
start_stream() {
	local name=$1
	shift
	streams+=("$name")
	(
		stream=$name passed=0 failed=0
		begun=$EPOCHREALTIME
		"$@"
		elapsed "$begun" >"$tmp/done.$name"
	) >"$tmp/out.$name" 2>&1 &
	stream_pids+=($!)
}

# built B: waits for build B (SAN, TSAN or FUZZ, above); a build that
# failed is a failure, with make's last lines, and returns 1.
built() {
	local status
	while [ ! -s "$tmp/built.$1" ]; do sleep 1; done
	read -r status <"$tmp/built.$1"
	[ "$status" = 0 ] && return 0
	run "build: make $1=1 all" sh -c 'tail -n 30 "$0"; echo "FAIL make $1=1 all"; exit 1' \
		"$tmp/make-$1.log" "$1"
	return 1
}

[ -x build/a2m ] || missing "build/a2m"
command -v valgrind >/dev/null || missing "valgrind"
# Every PostgreSQL suite below needs the server: one that did not start is a failure.
run "postgresql test server" sh -c 'cat "$0"; [ "$1" = 1 ] && echo "1 passed, 0 failed"' \
	"$tmp/pg.log" "$pg_started"

# --- the HTTP binding ---
# Each server listens on 127.0.0.1 port 0 and is found by its start-up line,
# so no two runs (or two checkouts, or two streams) can collide on a port.

# http_conformance BUILD SCHEME CONFORMANCE-ARGS -- SERVE-ARGS: starts
# `a2m serve --http 127.0.0.1:0 SERVE-ARGS`, runs the conformance suite
# against it over http or https, then stops it with SIGTERM. A server that
# does not exit 0 (a sanitizer report, say) fails the run.
http_conformance() {
	local build=$1 scheme=$2
	shift 2
	local conf=()
	while [ $# -gt 0 ] && [ "$1" != "--" ]; do
		conf+=("$1")
		shift
	done
	shift
	# SERVE-ARGS starting with "corpus": `a2m corpus` rather than `a2m serve`.
	local cmd=serve
	if [ "${1:-}" = corpus ]; then
		cmd=corpus
		shift
	fi
	# A log of its own: reading a previous server's start-up line would send
	# the suite to a port nobody listens on.
	local log url="" pid status
	log=$(mktemp "$tmp/http-server.XXXXXX")
	"$build/a2m" "$cmd" --http 127.0.0.1:0 "$@" 2>"$log" &
	pid=$!
	echo "$pid" >>"$server_pids"
	for _ in $(seq 600); do
		url=$(sed -n "s/^a2m $cmd: listening on \\([^ ]*\\) .*/\\1/p" "$log")
		[ -n "$url" ] && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	if [ -z "$url" ]; then
		echo "FAIL the server did not start:"
		cat "$log"
		kill -9 "$pid" 2>/dev/null
		return 1
	fi
	# A certificate names localhost, not the address.
	[ "$scheme" = https ] && url="https://localhost:${url##*:}"
	"$build/a2m" conformance --http "$url" "${conf[@]}"
	local rc=$?
	kill -TERM "$pid"
	# A server that does not stop must not hang the whole run.
	for _ in $(seq 1200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
	kill -9 "$pid" 2>/dev/null
	wait "$pid"
	status=$?
	if [ "$status" -ne 0 ]; then
		echo "FAIL the server exited with status $status after SIGTERM:"
		tail -n 40 "$log"
		return 1
	fi
	return "$rc"
}

printf 'conformance-token-1 cfalice\nconformance-token-2 cfbob\n' >"$tmp/tokens"
have_cert=0
if openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=localhost -days 1 \
	-keyout "$tmp/key.pem" -out "$tmp/cert.pem" >/dev/null 2>&1; then
	have_cert=1
fi

# unit_tests BUILD: the unit tests of one build (build/ or build-san/).
unit_tests() {
	local build=$1 tag="" t
	if [ "$build" = build-san ]; then
		tag=" [asan+ubsan]"
		built SAN || return 0
		[ -x "$build/a2m" ] || missing "$build/a2m"
	fi
	[ -x "$build/a2m" ] || return 0
	# test_faults: the test command's sample of the fault sweeps (docs/FAULTS.md).
	for t in "$build"/tests/test_*; do
		run "unit $(basename "$t")$tag" "$t"
	done
}

# server_suites BUILD: the suites of one build's servers (build/ or
# build-san/), in order: conformance, transports, the CLI, corpus, check,
# federate, the minimal server, HTTP, the client commands and MCP. Its
# stores and its copy of docs/ are named after the build: the two builds'
# streams run at once.
server_suites() {
	local build=$1 tag="" s db=$tmp/$1
	if [ "$build" = build-san ]; then
		tag=" [asan+ubsan]"
		built SAN || return 0
	fi
	[ -x "$build/a2m" ] || return 0
	run "conformance memory$tag" "$build/a2m" conformance --stdio "$build/a2m" serve --memory
	run "conformance core-only$tag" "$build/a2m" conformance --stdio "$build/a2m" serve --memory \
		--capabilities core
	rm -f "$db-conf.db"*
	run "conformance sqlite$tag" "$build/a2m" conformance --stdio "$build/a2m" serve --db "$db-conf.db"
	# The read-only profile (spec §2.1) over a store that already has records.
	rm -f "$db-ro.db"*
	printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"memory/remember","params":{"records":[{"content":"a fact loaded before the server turned read-only"},{"content":"another pre-existing record","tier":"semantic"}]}}' |
		"$build/a2m" serve --db "$db-ro.db" >/dev/null
	run "conformance read-only$tag" "$build/a2m" conformance --stdio "$build/a2m" serve --db "$db-ro.db" --read-only
	# Every tier private: what scopes and events must keep apart when
	# nothing is pooled (the default layout shares episodic and semantic).
	run "conformance private tiers$tag" "$build/a2m" conformance --stdio "$build/a2m" serve \
		--memory --config tests/private_tiers.json
	rm -f "$db-private.db"*
	run "conformance private tiers sqlite$tag" "$build/a2m" conformance --stdio "$build/a2m" \
		serve --db "$db-private.db" --config tests/private_tiers.json
	# PostgreSQL: each run in a schema of its own, made by the server it starts.
	s=conf_${build//-/_}
	run "conformance postgres$tag" "$build/a2m" conformance --stdio "$build/a2m" serve \
		--postgres "$(pg_conninfo "$s")"
	run "conformance private tiers postgres$tag" "$build/a2m" conformance --stdio "$build/a2m" \
		serve --postgres "$(pg_conninfo "${s}_private")" --config tests/private_tiers.json
	printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"memory/remember","params":{"records":[{"content":"a fact loaded before the server turned read-only"},{"content":"another pre-existing record","tier":"semantic"}]}}' |
		"$build/a2m" serve --postgres "$(pg_conninfo "${s}_ro")" >/dev/null
	run "conformance read-only postgres$tag" "$build/a2m" conformance --stdio "$build/a2m" \
		serve --postgres "$(pg_conninfo "${s}_ro")" --read-only
	# Our extensions with what they need configured: tiers that dedup and
	# one with a ttl (docs/PROTOCOL.md, Extensions), a short history.
	run "conformance extensions$tag" "$build/a2m" conformance --stdio "$build/a2m" serve \
		--memory --config tests/extensions.json
	rm -f "$db-ext.db"*
	run "conformance extensions sqlite$tag" "$build/a2m" conformance --stdio "$build/a2m" \
		serve --db "$db-ext.db" --config tests/extensions.json
	run "conformance extensions postgres$tag" "$build/a2m" conformance --stdio "$build/a2m" \
		serve --postgres "$(pg_conninfo "${s}_ext")" --config tests/extensions.json
	run "stdio transport and cli$tag" tests/stdio_test.sh "$build/a2m"
	run "export and import$tag" tests/transfer_test.sh "$build/a2m"
	# a2m corpus (issue 20): a folder of documents as a read-only server,
	# judged by the read-only profile on a copy of docs/ with its watcher
	# running; then its own tests through the protocol.
	rm -rf "$db-corpus"
	cp -r docs "$db-corpus"
	run "conformance corpus$tag" "$build/a2m" conformance --stdio "$build/a2m" corpus --watch \
		"$db-corpus"
	run "corpus: index, restart, watch$tag" tests/corpus_test.sh "$build/a2m"
	run "a2m check, damaged files$tag" tests/check_test.sh "$build/a2m"
	# a2m federate (issue 19): the suite through four kinds of backend, a
	# skewed backend, kill -9 at each step of a move, a backend stopped.
	run "federate: four backends, skew, kills, a backend down$tag" python3 \
		tests/federate_test.py "$build/a2m"

	# --- servers/minimal: a server written from the spec alone (issue 20) ---
	# That it includes and links nothing of ours, the conformance suite
	# against it, and its own checks (under valgrind: the checkers' stream).
	run "minimal server: no code of ours$tag" servers/minimal/check_isolation.sh "$build"
	run "conformance minimal server$tag" "$build/a2m" conformance --stdio "$build/servers/a2m-minimal"
	run "minimal server$tag" servers/minimal/test.sh "$build/servers/a2m-minimal"

	# --- the HTTP binding (http_conformance above) ---
	run "conformance http memory$tag" http_conformance "$build" http -- --memory
	run "conformance http postgres$tag" http_conformance "$build" http -- \
		--postgres "$(pg_conninfo "http_${build//-/_}")"
	rm -f "$db-http.db"*
	run "conformance http sqlite, tokens$tag" http_conformance "$build" http \
		--token conformance-token-2 -- --db "$db-http.db" --tokens "$tmp/tokens"
	if [ "$have_cert" = 1 ]; then
		run "conformance https, tokens$tag" http_conformance "$build" https \
			--token conformance-token-1 --cacert "$tmp/cert.pem" -- --memory \
			--tokens "$tmp/tokens" --tls-cert "$tmp/cert.pem" --tls-key "$tmp/key.pem"
	else
		run "conformance https$tag" sh -c 'echo "openssl cannot make a certificate"; exit 1'
	fi
	run "conformance http corpus$tag" http_conformance "$build" http -- corpus --watch \
		"$db-corpus"
	run "http transport, hostile clients, load$tag" tests/http_test.sh "$build/a2m"

	# --- the client commands and the MCP bridge (npm ci above) ---
	await npm
	run "client commands$tag" tests/cli_test.sh "$build/a2m"
	run "mcp bridge, MCP SDK client$tag" node tests/mcp_test.mjs "$build/a2m"
	# a2m import of the file the official MCP memory server writes itself.
	run "import of the MCP memory server's file$tag" node tests/mcp_memory_test.mjs "$build/a2m"
	# The inspector in headless chromium (puppeteer-core); screenshots in $build/ui-test/.
	run "inspector in a browser$tag" node tests/ui_test.mjs "$build/a2m"
}

# checkers: the engines' ranking, the tree's shape, the claims register,
# the installed library, and the suites of the tools that watch a run
# (valgrind, ThreadSanitizer, the fuzzers), those of build/ first while the
# other builds are made.
checkers() {
	local t
	# --- the three engines rank alike: bench quality's table on each (issue 18) ---
	run "bench quality: memory, sqlite and postgres rank alike" tests/quality_engines_test.sh \
		build/a2m

	# --- the arrows between the tree's folders (docs/ARCHITECTURE.md) ---
	run "layers: what each folder includes" python3 tests/layers_test.py

	# --- the claims register: every keyword sentence of the spec dispositioned ---
	# It reads the specification from $A2M_SPEC or ../shared/reference/; without
	# it only the register's own names are checked, and the run says so.
	[ -x build/a2m-conformance ] || missing "build/a2m-conformance"
	command -v python3 >/dev/null || missing "python3"
	if [ -x build/a2m-conformance ] && command -v python3 >/dev/null; then
		run "claims register" tests/claims_test.sh build/a2m-conformance
		grep '^skip ' "$tmp/log.$stream" # the specification was not found: say so
	fi

	# --- the library as a user installs it: exported symbols, SONAME, install ---
	run "library boundary, install, pkg-config" tests/library_test.sh

	# --- one conformance pass with each server under valgrind ---
	# A server under valgrind is tens of times slower, and slower still
	# while the other streams and builds start: each answer may take up to
	# a minute (the suite's default is 5 s; an answer that comes is judged
	# the same however long it took).
	if command -v valgrind >/dev/null && [ -x build/a2m ]; then
		run "conformance under valgrind" build/a2m conformance --timeout 60 --stdio \
			tests/valgrind_server.sh "$tmp/valgrind.log" build/a2m serve --memory
		run "conformance minimal server under valgrind" build/a2m conformance --timeout 60 --stdio \
			tests/valgrind_server.sh "$tmp/valgrind-minimal.log" build/servers/a2m-minimal
	fi

	# --- threads under ThreadSanitizer: any data race fails the run ---
	if built TSAN; then
		for t in $(env -u MAKEFLAGS -u MFLAGS make -s tsan-tests); do
			# test_prune_segments: only its test with a writer thread (the
			# rest is single-threaded, and takes many minutes under TSan).
			local only=""
			[ "$t" = test_prune_segments ] && only=another_connection
			if [ -x "build-tsan/tests/$t" ]; then
				run "unit $t [tsan]" env TSAN_OPTIONS="halt_on_error=1 exitcode=66" \
					A2M_TEST_ONLY="$only" "build-tsan/tests/$t"
			else
				missing "build-tsan/tests/$t"
			fi
		done
	fi

	# --- the fuzz targets, each once over its committed corpus (a regression
	# run: nothing new is explored; make fuzz SECONDS=N explores). docs/FUZZING.md ---
	built FUZZ && run "fuzz targets over their corpora" scripts/fuzz.sh --regress
}

# long_runs: the benches of fixed length, the clients, the adapters and the
# grid (which wait for the environments and node_modules made above).
long_runs() {
	local group suite
	# --- crashes and long runs (docs/CHECK.md) ---
	# kill -9 at seeded random points, every acknowledged write verified after
	# each restart and `a2m check` after each kill; then a soak whose servers'
	# memory, descriptors and threads may not grow. Short here; long runs:
	# make endurance. Under the sanitizers the servers' clean stops also run
	# LeakSanitizer (what catches a leak too small for a short run's memory to
	# show); a small quarantine and short stack records keep ASan's own memory
	# small, and its allocator's caches get a wider margin. Thirty seconds on a
	# shared machine still see caches fill (a reader connection's page cache
	# is 2 MiB; one once came at the 23rd second, +16%), so the short release
	# run allows 20% and catches a gross leak; a small one is LeakSanitizer's,
	# and make endurance keeps the 5% of half an hour. The release run warms
	# up for 30 s: on mimalloc the resident part of memory the allocator
	# already holds keeps rising for about 40 s after the live heap is steady
	# (docs/CHECK.md), and a 10 s warm-up once put the second quarter on that
	# slope (+20.8% in a CI run, no leak).
	# --first-opens: a store's very first open killed 20 times over (it must
	# leave no store or a whole one; docs/CHECK.md).
	run "crash: kill -9 at random points" build/a2m bench crash --seconds 60 --first-opens 20
	run "soak: no growth under a mixed load" build/a2m bench soak --seconds 30 --warmup 30 \
		--memory-margin 20
	if built SAN; then
		run "crash: kill -9 at random points [asan+ubsan]" build-san/a2m bench crash --seconds 30
		run "soak: no growth under a mixed load [asan+ubsan]" \
			env ASAN_OPTIONS=quarantine_size_mb=2:malloc_context_size=5 \
			build-san/a2m bench soak --seconds 30 --warmup 10 --memory-margin 15
	fi

	# --- the Node and Python clients (clients/), against build/a2m ---
	# Each suite starts the servers it needs. The Python one makes its virtual
	# environment under build/ from a pinned requirements file and pip-installs
	# clients/python into it; a missing python3 or venv fails it, never skips it.
	[ -x build/a2m ] || return 0
	await npm
	run "node client, node --test" clients/node/test/run.sh build/a2m
	run "python client, pytest" clients/python/tests/run.sh build/a2m

	# --- the adapters (adapters/python/, adapters/js/) and the interop grid ---
	# One suite per Python framework group, each in its own virtual
	# environment; one per JavaScript framework, from node_modules; then
	# every writer against every reader (tests/interop/manifest.json), over
	# HTTP and over one SQLite file shared by two servers.
	await venvs
	grep '^FAIL' "$venv_log"
	for group in langchain crewai agno autogen openai-agents; do
		run "python adapters: $group" adapters/python/run.sh build/a2m "$group"
	done
	for suite in langgraph langchain openai-agents ai-sdk mastra types; do
		run "js adapters: $suite" adapters/js/run.sh build/a2m "$suite"
	done
	run "interop grid" tests/interop/run.sh build/a2m
	run "example: two frameworks, one memory" examples/shared_memory/run.sh build/a2m
}

start_stream release-units unit_tests build
start_stream release-servers server_suites build
start_stream sanitizer-units unit_tests build-san
start_stream sanitizer-servers server_suites build-san
start_stream checkers checkers
start_stream long-runs long_runs
for p in "${stream_pids[@]}"; do
	wait "$p"
done
stream_pids=()

# The streams' lines, stream by stream in the order they were started.
await npm
await venvs
for b in SAN TSAN FUZZ; do
	while [ ! -s "$tmp/built.$b" ]; do sleep 1; done
	[ -f "$tmp/make-$b.log" ] && tail -n 1 "$tmp/make-$b.log"
done
cat "$tmp/npm.out"
for name in "${streams[@]}"; do
	p=0 f=0 secs=?
	read -r p f 2>/dev/null <"$tmp/counts.$name"
	read -r secs 2>/dev/null <"$tmp/done.$name"
	echo "== stream $name ($secs s)"
	cat "$tmp/out.$name"
	if [ ! -e "$tmp/done.$name" ]; then
		echo "FAIL stream $name died before its end"
		f=$((f + 1))
	fi
	passed=$((passed + p))
	failed=$((failed + f))
done

# Where the time went: the slowest suites, and the load they ran under
# (the machine may be shared: compare shares of the total, not seconds).
echo "slowest suites (wall and CPU seconds; $(elapsed "$run_start") s in all, load $(cut -d' ' -f1-3 /proc/loadavg)):"
sort -t "$(printf '\t')" -k1,1nr "$tmp/times" | head -n 15 |
	awk -F '\t' '{ printf "  %5d s  cpu %4d s  %s\n", $1, $2, $3 }'
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
