#!/usr/bin/env bash
# cli_test.sh A2M_BINARY — the client commands (a2m describe, remember,
# recall, timeline, forget, fetch, promote, consolidate, reinforce, summarize,
# events, session list/close) from the outside: every verb in both output modes
# against `--stdio a2m serve` (an SQLite file, so state lasts across
# commands, a PostgreSQL deployment when $A2M_TEST_POSTGRES names a server,
# and --memory), then again against `a2m serve --http` when the
# build serves HTTP; exit codes 0 / 1 / 2 and their messages; a smoke run
# of `a2m bench memory`, `a2m bench latency --now`, `a2m bench fsync` and
# `a2m bench remember --serve stdio`'s frames a commit.
# Prints "ok"/"FAIL" per check and "N passed, M failed".
set -u
. "$(dirname "$0")/lib.sh"
a2m=$(realpath "$1")
d=$(mktemp -d /tmp/a2m-cli.XXXXXX)
server_pid=
cleanup() {
	[ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null
	rm -rf "$d"
}
trap cleanup EXIT

# a CMD... : runs a2m CMD... with the current target; sets out, err, status.
a() {
	out=$("$a2m" "$@" "${target[@]}" 2>"$d/err" </dev/null)
	status=$?
	err=$(cat "$d/err")
}
# a_in INPUT CMD... : the same with INPUT on stdin.
a_in() {
	local input=$1
	shift
	out=$(printf '%s' "$input" | "$a2m" "$@" "${target[@]}" 2>"$d/err")
	status=$?
	err=$(cat "$d/err")
}
lines() { if [ -z "$1" ]; then echo 0; else printf '%s\n' "$1" | wc -l | tr -d ' '; fi; }

# --- the command line itself ---
out=$("$a2m" --help); expect "a2m --help exits 0" $? 0
for verb in describe remember recall timeline forget fetch promote consolidate reinforce summarize events \
	"session list" "session close" mcp serve; do
	contains "a2m --help lists $verb" "$out" "  $verb "
done
for spec in "remember:--tier --key --session --owner --meta --role --id --lines --json --stdio --http" \
	"recall:--where --limit --tier --key-prefix --json" \
	"timeline:--limit --session --where --json" \
	"forget:--id --where --query --tier --key-prefix" \
	"fetch:--long --json" "events:--follow --cursor --kind --interval" \
	"session close:--owner --json" "describe:--json --http --token"; do
	verb=${spec%%:*}
	out=$("$a2m" $verb --help); status=$?
	expect "a2m $verb --help exits 0" "$status" 0
	for flag in ${spec#*:}; do contains "a2m $verb --help documents $flag" "$out" "$flag"; done
done
out=$("$a2m" mcp --help); expect "a2m mcp --help exits 0" $? 0
contains "a2m mcp --help documents --db" "$out" "--db PATH"
contains "a2m mcp --help documents --stdio" "$out" "--stdio CMD"

# Usage errors: exit 2, one line on stderr, nothing on stdout, no server
# needed (the target points nowhere).
target=(--http http://127.0.0.1:9/)
while IFS='|' read -r name args; do
	eval "set -- $args"
	a "$@"
	expect "usage: $name exits 2" "$status" 2
	expect "usage: $name explains in one line" "$(lines "$err")" 1
	expect "usage: $name prints nothing on stdout" "$out" ""
done <<'EOF'
an unknown option|recall --bogus
a bad limit|recall --limit ten q
a where that is not an object|recall --where '[1]' q
a meta that is not JSON|remember --meta '{oops' text
forget without a selector|forget
fetch without a key|fetch
fetch with two keys|fetch a b
promote without a tier|promote some-id
reinforce without ids|reinforce
summarize without a selector|summarize
session close without a session|session close
session without list or close|session frob
an unknown command|frobnicate
--id with --lines|remember --lines --id x text
--interval without --follow|events --interval 100
--http without a URL|describe --http
EOF
out=$("$a2m" describe --stdio 2>&1 >/dev/null); status=$?
expect "usage: --stdio without a command exits 2" "$status" 2
out=$("$a2m" remember --stdio "$a2m" serve --memory 2>&1 </dev/null); status=$?
expect "usage: remember with nothing on stdin exits 2" "$status" 2
contains "usage: remember with nothing says so" "$out" "nothing to remember"

# Connection failures: exit 1 with the reason.
target=(--stdio "$d/no-such-server")
a describe
expect "a server that cannot start exits 1" "$status" 1
contains "a server that cannot start is named" "$err" "no-such-server"
target=(--http http://127.0.0.1:9/)
a describe
expect "an HTTP server that is not there exits 1" "$status" 1
[ -n "$err" ] && ok "an HTTP server that is not there is reported" || fail "an HTTP server that is not there is reported" "empty stderr"
target=(--stdio "$a2m" serve --memory --capabilities core)
a fetch some/key
expect "a verb of an undeclared capability exits 1" "$status" 1
contains "an undeclared capability is named" "$err" "'keys' capability"
a remember --tier working hello
expect "a field of an undeclared capability is the server's -32003" "$status" 1
contains "the server's error code is on stderr" "$err" "-32003"

# flow LABEL: every verb against "${target[@]}", whose state must last
# across commands (a --db file over stdio, or one HTTP server).
flow() {
	local L=$1
	a describe
	expect "$L: describe exits 0" "$status" 0
	contains "$L: describe summarises the capabilities" "$out" "capabilities: core, tiers"
	matches "$L: describe lists the tiers" "$out" '^  working +working +[0-9]+ +24/session +episodic'
	a describe --json
	contains "$L: describe --json is the raw result" "$out" '"protocol":"a2m/0.1"'

	a remember --role user --meta '{"topic":"ops"}' --key ops/deploy-key \
		the deploy key rotates every 90 days
	expect "$L: remember exits 0" "$status" 0
	matches "$L: remember prints the id" "$out" '^[0-9A-Z]{26}$'
	deploy_id=$out
	a_in $'the office plant needs water on mondays\n' remember --session s1 --tier working
	expect "$L: remember reads stdin" "$status" 0
	plant_id=$out
	a_in $'line one alpha\n\nline two beta\n' remember --lines --json --tier episodic
	contains "$L: remember --lines --json writes a record per line" "$out" '{"ids":["'
	expect "$L: remember --lines makes two records" "$(printf '%s' "$out" | grep -o '"01' | wc -l | tr -d ' ')" 2
	a remember --id cli-retry-1 said once
	a remember --id cli-retry-1 said once
	expect "$L: a retried remember returns the same id" "$out" "cli-retry-1"

	a recall deploy key rotation
	expect "$L: recall exits 0" "$status" 0
	matches "$L: recall prints score and content" "$out" '^0\.[0-9]{3}  the deploy key rotates every 90 days$'
	a recall --json --limit 1 deploy key
	contains "$L: recall --json carries the record" "$out" "\"id\":\"$deploy_id\""
	contains "$L: recall --json keeps metadata" "$out" '"metadata":{"topic":"ops"}'
	a recall said once
	expect "$L: a retried remember stored one record" "$(lines "$out")" 1
	a recall --where '{"role":"user"}'
	expect "$L: recall --where filters" "$(lines "$out")" 1
	a recall --tier episodic --limit 10
	expect "$L: recall --tier restricts" "$(lines "$out")" 2
	a recall -l deploy
	contains "$L: recall -l shows the id" "$out" "$deploy_id"

	a timeline
	expect "$L: timeline exits 0" "$status" 0
	matches "$L: timeline prints time, role, content" "$out" \
		'^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]{12}Z  user  the deploy key rotates every 90 days$'
	expect "$L: timeline is oldest first" "$(printf '%s\n' "$out" | head -1 | sed 's/.*  //')" \
		"the deploy key rotates every 90 days"
	a timeline --limit 1
	expect "$L: timeline --limit takes the newest" "$(printf '%s\n' "$out" | sed 's/.*  //')" "said once"
	a timeline --session s1 --json
	contains "$L: timeline --session replays one conversation" "$out" '"content":"the office plant needs water on mondays"'
	lacks "$L: timeline --session leaves the others out" "$out" "deploy key"

	a fetch ops/deploy-key
	expect "$L: fetch prints the content" "$out" "the deploy key rotates every 90 days"
	a remember --key ops/deploy-key the deploy key rotates every 30 days
	a fetch ops/deploy-key --json
	contains "$L: a remember to a key replaces the fact" "$out" '"revision":1'
	a fetch no/such/key
	expect "$L: fetch of an unused key exits 0" "$status" 0
	expect "$L: fetch of an unused key prints nothing" "$out" ""
	a fetch no/such/key --json
	expect "$L: fetch --json of an unused key" "$out" '{"record":null}'

	a promote "$deploy_id" --tier semantic
	expect "$L: promote prints the count" "$out" "promoted 1"
	a promote "$deploy_id" --tier semantic --json
	expect "$L: promote --json" "$out" '{"promoted":0}'
	a promote "$deploy_id" --tier attic
	expect "$L: an unknown tier exits 1" "$status" 1
	contains "$L: an unknown tier is UNKNOWN_TIER" "$err" "-32002 UNKNOWN_TIER"
	a reinforce "$deploy_id" --amount 2
	expect "$L: reinforce prints the count" "$out" "reinforced 1"
	a reinforce --json --id "$deploy_id"
	expect "$L: reinforce --json" "$out" '{"reinforced":1}'
	a consolidate
	matches "$L: consolidate prints the counts" "$out" '^moved [0-9]+, promoted [0-9]+, dropped [0-9]+'
	a consolidate --json
	contains "$L: consolidate --json" "$out" '"counts":{'

	a summarize --query "deploy key"
	expect "$L: summarize exits 0" "$status" 0
	contains "$L: summarize prints the summary" "$out" "deploy key rotates"
	a summarize --json --query "no such words anywhere"
	contains "$L: summarize --json of nothing writes nothing" "$out" '"written":0'

	a session list
	matches "$L: session list shows the session" "$out" '^s1 +1 '
	a session list --json
	contains "$L: session list --json" "$out" '"session":"s1"'
	a session close s1
	contains "$L: session close flushes working memory" "$out" "flushed 1"
	a session close s1 --json
	contains "$L: session close --json" "$out" '"closed":"s1"'

	a events
	matches "$L: events prints the next cursor" "$out" '^cursor [^ ]+'
	a events --json --limit 5
	contains "$L: events --json" "$out" '"cursor":"'

	a forget --id "$plant_id"
	expect "$L: forget by id" "$out" "forgot 1 record"
	a forget --id "$plant_id" --json
	expect "$L: forget --json" "$out" '{"forgotten":0}'
	a forget --key-prefix ops/
	expect "$L: forget --key-prefix" "$out" "forgot 1 record"
	a forget --tier episodic
	expect "$L: forget --tier" "$out" "forgot 2 records"
	a forget --query "said once"
	expect "$L: forget --query" "$out" "forgot 1 record"
	a forget --where '{"x":{"y":1}}'
	expect "$L: a protocol error exits 1" "$status" 1
	contains "$L: a protocol error names its code" "$err" "-32602 INVALID_PARAMS"
	expect "$L: a protocol error prints nothing on stdout" "$out" ""
}

target=(--stdio "$a2m" serve --db "$d/cli.db")
flow "stdio"

# The same against a PostgreSQL deployment of its own, when the run has a
# server (scripts/run-tests.sh): every command starts a server on it.
if [ -n "${A2M_TEST_POSTGRES:-}" ]; then
	target=(--stdio "$a2m" serve --postgres "$A2M_TEST_POSTGRES options='-csearch_path=cli_$$'")
	flow "stdio postgres"
fi

# --memory: each command starts a fresh, empty server.
target=(--stdio "$a2m" serve --memory)
a recall anything
expect "stdio --memory: recall of an empty store exits 0" "$status" 0
expect "stdio --memory: recall of an empty store prints nothing" "$out" ""
a timeline --json
expect "stdio --memory: timeline --json of an empty store" "$out" '{"records":[]}'
a remember --owner alice --json private note
contains "stdio --memory: remember --owner" "$out" '{"ids":["'

# A lost answer: a server that never answers the first remember. The
# command times out, sends the same records again (each carries its client
# id, DECISIONS 011) and succeeds; a call that is not safe to repeat is not.
cat >"$d/flaky.sh" <<'FLAKY'
#!/usr/bin/env bash
# A fake A2M server on stdio that drops the first answer of each method.
log=$1
declare -A seen
while IFS= read -r line; do
	id=$(printf '%s' "$line" | sed -E 's/^\{"jsonrpc":"2.0","id":([0-9]+).*/\1/')
	method=$(printf '%s' "$line" | sed -E 's/.*"method":"([^"]*)".*/\1/')
	printf '%s\n' "$line" >>"$log"
	n=$(( ${seen[$method]:-0} + 1 ))
	seen[$method]=$n
	case $method in
	memory/describe)
		printf '{"jsonrpc":"2.0","id":%s,"result":{"protocol":"a2m/0.1","name":"flaky","capabilities":["core","tiers"],"methods":["memory/describe","memory/remember","memory/recall","memory/timeline","memory/forget","memory/promote","memory/consolidate"]}}\n' "$id" ;;
	memory/remember)
		rid=$(printf '%s' "$line" | sed -E 's/.*"records":\[\{[^]]*"id":"([^"]*)".*/\1/')
		[ "$n" -ge 2 ] && printf '{"jsonrpc":"2.0","id":%s,"result":{"ids":["%s"]}}\n' "$id" "$rid" ;;
	memory/consolidate)
		[ "$n" -ge 2 ] && printf '{"jsonrpc":"2.0","id":%s,"result":{"moved":0,"promoted":0,"dropped":0,"summarized":0,"counts":{}}}\n' "$id" ;;
	esac
done
FLAKY
chmod +x "$d/flaky.sh"
target=(--timeout 300 --stdio "$d/flaky.sh" "$d/flaky.log")
a remember lost answer
expect "a remember whose answer was lost is sent again and succeeds" "$status" 0
sent=$(grep -c 'memory/remember' "$d/flaky.log")
expect "the lost remember was sent twice" "$sent" 2
ids=$(grep 'memory/remember' "$d/flaky.log" | sed -E 's/.*"records":\[\{[^]]*"id":"([^"]*)".*/\1/' | sort -u)
expect "both sends carried the same client id" "$(lines "$ids")" 1
expect "the command prints that id" "$out" "$ids"
: >"$d/flaky.log"
a consolidate
expect "a consolidate whose answer was lost fails" "$status" 1
expect "a consolidate is not sent again" "$(grep -c 'memory/consolidate' "$d/flaky.log")" 1

# --- a2m bench memory (docs/BENCHMARKS.md): a one-user smoke run, lexical,
# then through the toy embedder (tests/embed_server.c) at two weights ---
out=$("$a2m" bench memory --users 1 2>/dev/null); status=$?
expect "bench memory exits 0" "$status" 0
figures='( +[01]\.[0-9]{3}/[01]\.[0-9]{3}){5} +[01]\.[0-9]{3} +[01]\.[0-9]{3}$'
matches "bench memory prints the lexical row" "$out" "^lexical  +${figures}"
matches "bench memory prints the row without where" "$out" "^lexical, no where +${figures}"
"$a2m" bench memory --users 0 >/dev/null 2>&1
expect "bench memory refuses --users 0 as a usage error" "$?" 2
"$(dirname "$a2m")/tests/embed_server" 0 384 >"$d/embed.port" &
embed_pid=$!
for _ in $(seq 100); do [ -s "$d/embed.port" ] && break; sleep 0.05; done
out=$("$a2m" bench memory --users 1 --weights 50,100 \
	--embed-url "http://127.0.0.1:$(head -1 "$d/embed.port")/v1/embeddings" 2>/dev/null)
expect "bench memory with an embedder exits 0" "$?" 0
matches "bench memory prints the hybrid row" "$out" "^hybrid 50% +${figures}"
matches "bench memory prints the vectors-alone row" "$out" "^vectors alone +${figures}"
kill "$embed_pid" 2>/dev/null
wait "$embed_pid" 2>/dev/null

# --- a2m bench latency --now: the process's clock pinned, T + k ms at the
# run's k-th call (2 batches of the load, then 30 recalls: the last reads
# T + 31 ms), so callgrind counts repeat (docs/BENCHMARKS.md, the floors) ---
out=$("$a2m" bench latency --records 2000 --queries 30 --now 2026-01-01T00:00:00Z 2>/dev/null)
expect "bench latency --now exits 0" "$?" 0
contains "bench latency --now: the clock the last recall read" "$out" \
	"pinned (--now): 2026-01-01T00:00:00.000Z to 2026-01-01T00:00:00.031Z"
"$a2m" bench latency --records 10 --queries 1 --now yesterday >/dev/null 2>&1
expect "bench latency refuses a --now that is no time" "$?" 2

# --- a2m bench fsync (docs/BENCHMARKS.md, the durable lone commit's
# ceiling): a row per size, bare and through the stdio peer, its files
# removed; and bench remember --serve prints the frames its commits appended ---
out=$("$a2m" bench fsync --db "$d/fs" --pages 1-2 --syncs 30 2>&1); status=$?
expect "bench fsync exits 0" "$status" 0
rate='[0-9]+ \([0-9.]+, [0-9.]+ ms\)'
matches "bench fsync prints the row of 1 page: bare, synced while a CPU works, through stdio" "$out" "^ +1 +${rate} +${rate} +${rate}$"
matches "bench fsync prints the row of 2 pages" "$out" "^ +2 +${rate} +${rate} +${rate}$"
expect "bench fsync leaves no file behind" "$(ls "$d" | grep -c '^fs')" 0
"$a2m" bench fsync --pages 0 >/dev/null 2>&1
expect "bench fsync refuses --pages 0 as a usage error" "$?" 2
out=$("$a2m" bench remember --serve stdio --engine sqlite --db "$d/lone.db" --records 20 --warmup 5 2>&1)
expect "bench remember --serve stdio on SQLite exits 0" "$?" 0
matches "bench remember --serve prints the frames a commit appended" "$out" \
	"^  the log: [0-9]+ commits appended [0-9]+ frames \([0-9.]+ a commit\)$"
matches "bench remember --serve prints the disk's pace for commits of that many frames" "$out" \
	"^  the disk for commits of [0-9]+ frames .*: [0-9]+ commits/s \(p50 [0-9.]+ ms\)$"
expect "bench remember --serve removes its probe's file" "$(ls "$d" | grep -c 'probe')" 0
rm -f "$d"/lone.db*

# --- what a client owes a server (spec §2, §2.1, §3.2, §4.1, §4.12, §5.3,
# §7), named by conformance/claims.json. The server is tests/unusual_peer.py
# around a real one: it logs every request and answers as unusually as the
# spec allows (unknown record fields and result members, scores outside
# [0, 1], an event of a server-defined kind, error messages that name no
# code).
peer=(python3 "$(dirname "$0")/unusual_peer.py" "$d/peer.log")
method_of() { sed -E 's/.*"method":"([^"]*)".*/\1/'; }
target=(--stdio "${peer[@]}" "$a2m" serve --db "$d/peer.db")
: >"$d/peer.log"
a remember --id 'an odd/id: ü 1' a record the unusual peer serves
expect "client: a command's first request is memory/describe" "$(head -1 "$d/peer.log" | method_of)" \
	memory/describe
expect "client: a client id is used as given, never parsed" "$out" 'an odd/id: ü 1'
a recall unusual peer
expect "client: recall shows records carrying fields it does not know" "$out" \
	'41.500  a record the unusual peer serves'
a_in $'another record the peer serves\n' remember
a recall the peer serves
expect "client: recall shows every record, whatever its score" "$(lines "$out")" 2
a timeline -l
contains "client: timeline -l shows the odd id as it is" "$out" 'an odd/id: ü 1'
a events --limit 100
expect "client: events with a server-defined kind exits 0" "$status" 0
contains "client: events shows the server-defined kind" "$out" "zz_server_defined"
a promote 'an odd/id: ü 1' --tier attic
contains "client: an error is known by its code, not its message" "$err" "-32002 UNKNOWN_TIER"
: >"$d/peer.log"
a recall deploy
expect "client: the recall was sent once" "$(grep -c '"memory/recall"' "$d/peer.log")" 1
lacks "client: recall sends no min_score unless asked" "$(grep '"memory/recall"' "$d/peer.log")" min_score
lacks "client: recall sends no limit unless asked" "$(grep '"memory/recall"' "$d/peer.log")" '"limit"'
a recall --min-score 0.25 deploy
contains "client: recall --min-score sends it" "$(grep '"memory/recall"' "$d/peer.log")" '"min_score":0.25'
a forget --id 'an odd/id: ü 1'
expect "client: the odd id forgets its record" "$out" "forgot 1 record"
a events --cursor not-a-cursor-we-issued
contains "client: a reset cursor is reported as events possibly missed" "$err" \
	"events may have been missed"
# READ_ONLY is an answer: exit 1 naming it, and the write is not sent again.
target=(--stdio "${peer[@]}" "$a2m" serve --db "$d/peer.db" --read-only)
: >"$d/peer.log"
a remember a write the store refuses
expect "client: READ_ONLY exits 1" "$status" 1
contains "client: READ_ONLY is named" "$err" "-32004 READ_ONLY"
expect "client: a write refused with READ_ONLY is sent once" \
	"$(grep -c '"memory/remember"' "$d/peer.log")" 1
# Batches no larger than the server's max_records_per_call (spec §4.1).
printf '{"limits":{"max_records_per_call":2}}\n' >"$d/small-batches.json"
target=(--stdio "${peer[@]}" "$a2m" serve --memory --config "$d/small-batches.json")
: >"$d/peer.log"
a_in $'one\ntwo\nthree\nfour\nfive\n' remember --lines
expect "client: remember --lines keeps to max_records_per_call" \
	"$(grep -c '"memory/remember"' "$d/peer.log")" 3
expect "client: every line of a split remember gets its id" "$(lines "$out")" 5

# events --follow stops cleanly on SIGINT.
"$a2m" events --follow --interval 50 --stdio "$a2m" serve --memory >"$d/follow.out" 2>"$d/follow.err" &
pid=$!
# Signal only once it catches SIGINT (bit 2 of SigCgt), not while starting.
for _ in $(seq 100); do
	mask=$(awk '/^SigCgt:/ {print $2}' "/proc/$pid/status" 2>/dev/null)
	[ -n "$mask" ] && [ $((0x$mask & 2)) -ne 0 ] && break
	sleep 0.05
done
sleep 0.2
kill -INT "$pid"
for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$pid" 2>/dev/null; then
	fail "events --follow stops on SIGINT" "still running"
	kill -9 "$pid"
fi
wait "$pid"; status=$?
expect "events --follow exits 0 on SIGINT" "$status" 0
expect "events --follow reports no error on SIGINT" "$(cat "$d/follow.err")" ""

# --- HTTP, when this build serves it ---
"$a2m" serve --http 127.0.0.1:0 --memory 2>"$d/http.err" &
server_pid=$!
url=
for _ in $(seq 50); do
	url=$(grep -oE 'http://127\.0\.0\.1:[0-9]+/' "$d/http.err" | head -1)
	[ -n "$url" ] && break
	kill -0 "$server_pid" 2>/dev/null || break
	sleep 0.1
done
if [ -z "$url" ]; then
	echo "skip the HTTP checks: this build does not serve HTTP"
else
	target=(--http "$url")
	flow "http"
	# --follow sees a write made by another command, as it happens. It
	# starts from a cursor taken first, so the write cannot slip in before
	# its first poll.
	a events --json
	cursor=$(printf '%s' "$out" | sed -E 's/.*"cursor":"([^"]*)".*/\1/')
	"$a2m" events --follow --json --interval 50 --cursor "$cursor" --http "$url" \
		>"$d/hfollow.out" 2>"$d/hfollow.err" &
	pid=$!
	for _ in $(seq 100); do
		mask=$(awk '/^SigCgt:/ {print $2}' "/proc/$pid/status" 2>/dev/null)
		[ -n "$mask" ] && [ $((0x$mask & 2)) -ne 0 ] && break
		sleep 0.05
	done
	a remember --tier semantic followed write
	for _ in $(seq 50); do grep -q '"kind":"written"' "$d/hfollow.out" && break; sleep 0.1; done
	kill -INT "$pid"
	wait "$pid"; status=$?
	contains "http: events --follow prints the write as it happens" "$(cat "$d/hfollow.out")" '"kind":"written"'
	expect "http: events --follow --json prints one event per line" \
		"$(grep -vc '^{"kind":' "$d/hfollow.out")" 0
	expect "http: events --follow exits 0 on SIGINT" "$status" 0
	# --token authenticates; the principal is the owner (spec §6).
	printf 'cli-secret alice\n' >"$d/tokens"
	"$a2m" serve --http 127.0.0.1:0 --memory --tokens "$d/tokens" 2>"$d/http2.err" &
	server2_pid=$!
	url2=
	for _ in $(seq 50); do
		url2=$(grep -oE 'http://127\.0\.0\.1:[0-9]+/' "$d/http2.err" | head -1)
		[ -n "$url2" ] && break
		sleep 0.1
	done
	out=$("$a2m" describe --http "$url2" 2>&1); status=$?
	expect "http: no token where one is required exits 1" "$status" 1
	contains "http: the refusal names the HTTP status" "$out" "401"
	out=$("$a2m" describe --http "$url2" --token cli-secret 2>&1); status=$?
	expect "http: --token is sent" "$status" 0
	contains "http: an authenticated server declares scopes" "$out" "scopes"
	out=$(A2M_TOKEN=cli-secret "$a2m" remember --http "$url2" --json token from the environment 2>&1)
	contains "http: \$A2M_TOKEN is the default token" "$out" '{"ids":["'
	kill "$server2_pid" 2>/dev/null
	wait "$server2_pid" 2>/dev/null
	# $A2M_URL is the default server.
	out=$(A2M_URL=$url "$a2m" recall followed write 2>&1); status=$?
	expect "http: \$A2M_URL is the default server" "$status" 0
	contains "http: \$A2M_URL recall finds the record" "$out" "followed write"
fi

finish
