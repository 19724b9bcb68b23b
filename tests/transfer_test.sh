#!/usr/bin/env bash
# transfer_test.sh A2M_BINARY — `a2m export` and `a2m import` from the
# outside: a database written by a server, exported, imported into another
# and exported again (the same records, byte for byte), imported twice,
# from standard input, as a dry run; the summaries and exit codes; the
# progress line on a terminal (a pseudo-terminal made by script(1)) and
# none without one. Prints "ok"/"FAIL" per check and "N passed, M failed".
set -u
. "$(dirname "$0")/lib.sh"
a2m=$(realpath "$1")
d=$(mktemp -d /tmp/a2m-transfer.XXXXXX)
trap 'rm -rf "$d"' EXIT
cd "$d" || exit 1

# run CMD...: runs a2m CMD...; sets out, err, status.
run() {
	out=$("$a2m" "$@" 2>"$d/err" </dev/null)
	status=$?
	err=$(cat "$d/err")
}

out=$("$a2m" export --help); expect "export --help exits 0" $? 0
contains "export --help names every field" "$out" "access_count, accessed_at, owner, session, key, revision, embedding"
out=$("$a2m" import --help); expect "import --help exits 0" $? 0
contains "import --help names the MCP memory server" "$out" "@modelcontextprotocol/server-memory"
out=$("$a2m" --help); contains "a2m --help lists export" "$out" "  export "
contains "a2m --help lists import" "$out" "  import "

# A database as a server leaves it.
{
	echo '{"jsonrpc":"2.0","id":1,"method":"memory/remember","params":{"records":[{"content":"one","session":"s","key":"k/1","metadata":{"b":[1,2.5,"x"],"a":null}},{"content":"two","tier":"semantic","embedding":[0.25,0.5],"owner":"ann","salience":4},{"content":"<b>three</b>","tier":"episodic","uri":"file:///t","media_type":"text/html"}]}}'
	echo '{"jsonrpc":"2.0","id":2,"method":"memory/remember","params":{"records":[{"content":"one, again","session":"s","key":"k/1"}]}}'
	echo '{"jsonrpc":"2.0","id":3,"method":"memory/recall","params":{"query":"two"}}'
} | "$a2m" serve --db a.db >/dev/null

run export --db a.db -o a.jsonl
expect "export exits 0" "$status" 0
expect "export says what it wrote" "$err" "a2m export: 3 records to a.jsonl"
expect "export writes a header, one line a record and one a revision" "$(wc -l <a.jsonl | tr -d ' ')" 5
contains "the key's earlier revision has a line of its own (x-history)" "$(cat a.jsonl)" '{"kind":"revision","id":'
contains "... with what the key held before" "$(grep '"kind":"revision"' a.jsonl)" '"revision":0,"content":"one",'
head=$(head -n 1 a.jsonl)
contains "the header names the format and its version" "$head" '{"format":"a2m-export","version":2,'
contains "the header names the source file" "$head" "\"path\":\"$d/a.db\""
contains "the header carries describe's result" "$head" '"describe":{"protocol":"a2m/0.1"'
contains "the header counts the records" "$head" '"records":3,'
recs=$(tail -n +2 a.jsonl)
contains "a record keeps its revision" "$recs" '"key":"k/1","revision":1'
contains "a record keeps its vector" "$recs" '"embedding":[0.25,0.5]'
contains "a record keeps its access count" "$recs" '"access_count":1,"accessed_at":"'
lacks "no progress line when stderr is not a terminal" "$err" $'\r'

run export --db a.db
contains "export to standard output: the header" "$(printf '%s\n' "$out" | head -n 1)" '{"format":"a2m-export","version":2,'
expect "... the same records" "$(printf '%s\n' "$out" | tail -n +2)" "$recs"
expect "... and nothing on stderr" "$err" ""

run import --db b.db a.jsonl
expect "import exits 0" "$status" 0
expect "import says what it did" "$out" "a2m import: a.jsonl (a2m): 3 read, 3 imported, 0 skipped (id exists), 0 not written (key held), 1 earlier revision read"
run export --db b.db
expect "imported and exported again: the same records, byte for byte" "$(printf '%s\n' "$out" | tail -n +2)" "$recs"
run import --db b.db a.jsonl
expect "importing twice changes nothing" "$out" "a2m import: a.jsonl (a2m): 3 read, 0 imported, 3 skipped (id exists), 0 not written (key held), 1 earlier revision read"

out=$("$a2m" import --db c.db - <a.jsonl 2>/dev/null)
expect "import from standard input" "$out" "a2m import: (standard input) (a2m): 3 read, 3 imported, 0 skipped (id exists), 0 not written (key held), 1 earlier revision read"

# A key held by another record of the same owner is not written, and named.
printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"memory/remember","params":{"records":[{"id":"local","content":"ours","key":"k/1","session":"s"}]}}' |
	"$a2m" serve --db d.db >/dev/null
run import --db d.db a.jsonl
expect "a key held: still exit 0" "$status" 0
contains "a key held: counted" "$out" "3 read, 2 imported, 0 skipped (id exists), 1 not written (key held)"
matches "a key held: the record named" "$err" "^a2m import: not written: [0-9A-Z]{26} \\(its key is held by another record\\)$"

run import --db e.db --dry-run a.jsonl
expect "--dry-run exits 0" "$status" 0
contains "--dry-run says so" "$out" "3 records read and checked; nothing written (--dry-run)"
run export --db e.db
expect "--dry-run wrote nothing" "$(printf '%s\n' "$out" | wc -l | tr -d ' ')" 1
run import --memory a.jsonl
expect "import into a store in memory: a check" "$status" 0

# Usage and failures.
run export --memory; expect "export --memory is a usage error" "$status" 2
run export --db missing.db; expect "export of a missing file fails" "$status" 1
[ ! -e missing.db ] && ok "... and makes no file" || fail "... and makes no file" "missing.db exists"
run import --db f.db; expect "import without a file is a usage error" "$status" 2
run import --db f.db --batch 0 a.jsonl; expect "--batch 0 is a usage error" "$status" 2
run import --db f.db --format a2m --tier semantic a.jsonl; expect "--tier with an a2m export is a usage error" "$status" 2
run import --db f.db --format csv a.jsonl; expect "an unknown --format is a usage error" "$status" 2
run import --db f.db nowhere.jsonl; expect "a file that is not there" "$status" 1
{ head -n 2 a.jsonl; echo '{"id":"x","content":"no time"}'; } >bad.jsonl
run import --db f.db --batch 1 bad.jsonl
expect "a bad line fails the import" "$status" 1
contains "... naming its line" "$err" "bad.jsonl:3: created_at is required"
contains "... and saying what was written" "$err" "importing the file again skips them"
sed 's/"name":"semantic","count":1/"name":"archive","count":1/' a.jsonl >tiers.jsonl
run import --db g.db tiers.jsonl
expect "a tier the store lacks fails the import" "$status" 1
contains "... before anything is written" "$err" "'archive' (open the store with a --config that has them; nothing was written)"

# The progress line: on a terminal only, after a second of work.
cp a.jsonl slow.fifo.txt
script -qec "( head -n 2 '$d/a.jsonl'; sleep 1.5; tail -n +3 '$d/a.jsonl' ) | '$a2m' import --db '$d/p.db' -" /dev/null >tty.out 2>&1
tty=$(tr -d '\000' <tty.out)
contains "on a terminal, a progress line with a count" "$tty" "a2m import: 3 of 3 records (100%)"
contains "... a rate" "$tty" "/s"
contains "... redrawn in place" "$tty" $'\r'
run import --db q.db slow.fifo.txt
lacks "without a terminal, no progress line" "$err" "/s"
finish
