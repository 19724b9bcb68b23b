#!/usr/bin/env bash
# stdio_test.sh A2M_BINARY — the stdio transport and the command line, from
# the outside: exit codes, framing, shutdown, durability across kill -9.
# Prints "ok"/"FAIL" per check and "N passed, M failed".
set -u
. "$(dirname "$0")/lib.sh"
a2m=$(realpath "$1")
d=$(mktemp -d /tmp/a2m-stdio.XXXXXX)
trap 'rm -rf "$d"; kill $(jobs -p) 2>/dev/null' EXIT

req() { printf '{"jsonrpc":"2.0","id":%s,"method":"%s","params":%s}\n' "$1" "$2" "$3"; }

# --- the command line ---
out=$("$a2m" --help); expect "a2m --help exits 0" $? 0
contains "a2m --help lists serve" "$out" "serve"
out=$("$a2m" serve --help); expect "a2m serve --help exits 0" $? 0
contains "a2m serve --help documents --db" "$out" "--db PATH"
out=$("$a2m" --version); expect "a2m --version exits 0" $? 0
contains "a2m --version names the protocol" "$out" "a2m/0.1"
for bad in "serve --bogus" "serve --db" "serve --log-level loud" "serve --max-line 12x" "frobnicate" ""; do
	err=$("$a2m" $bad 2>&1 >/dev/null </dev/null); status=$?
	expect "a2m $bad exits 2" "$status" 2
	lines=$(printf '%s\n' "$err" | grep -c .)
	[ -n "$bad" ] && expect "a2m $bad explains in one line" "$lines" 1
done

# --- framing ---
out=$( { req 1 memory/describe '{}'; echo; echo "   "; req 2 memory/describe '{}'; } | "$a2m" serve --memory)
expect "blank lines get no answer" "$(printf '%s\n' "$out" | wc -l)" 2
out=$( { printf '{"jsonrpc":"2.0","id":1,"method":"memory/describe","params":{"x":"\xff\xfe"}}\n'; req 2 memory/describe '{}'; } | "$a2m" serve --memory)
contains "invalid UTF-8 is a parse error" "$(echo "$out" | head -1)" '"code":-32700'
contains "serving goes on after invalid UTF-8" "$(echo "$out" | sed -n 2p)" '"id":2,"result"'
out=$( { echo '{"jsonrpc":'; req 2 memory/describe '{}'; } | "$a2m" serve --memory)
contains "malformed JSON is a parse error with id null" "$(echo "$out" | head -1)" '"id":null,"error":{"code":-32700'
big=$(head -c 5000 /dev/zero | tr '\0' 'x')
out=$( { printf '{"jsonrpc":"2.0","id":1,"method":"memory/remember","params":{"records":[{"content":"%s"}]}}\n' "$big"; req 2 memory/timeline '{}'; } | "$a2m" serve --memory --max-line 1024)
contains "an over-long line is refused" "$(echo "$out" | head -1)" '"code":-32600'
contains "the stream recovers after an over-long line" "$(echo "$out" | sed -n 2p)" '"id":2,"result":{"records":[]}'
expect "an over-long line is answered once" "$(printf '%s\n' "$out" | wc -l)" 2
out=$(printf '{"jsonrpc":"2.0","id":9,"method":"memory/describe"}' | "$a2m" serve --memory)
contains "a last line without newline is served" "$out" '"id":9,"result"'

# --- stdout carries only JSON-RPC; logs go to stderr ---
out=$( { req 1 memory/describe '{}'; } | "$a2m" serve --memory --log-level debug 2>"$d/err")
expect "stdout holds only the response" "$(printf '%s\n' "$out" | grep -vc '^{"jsonrpc":"2.0"')" 0
contains "logs go to stderr" "$(cat "$d/err")" "a2m: info:"

# --- shutdown ---
req 1 memory/remember '{"records":[{"content":"written before eof","id":"eof-1"}]}' | "$a2m" serve --db "$d/eof.db" >/dev/null
expect "end of input exits 0" $? 0
out=$(req 1 memory/timeline '{}' | "$a2m" serve --db "$d/eof.db")
contains "a record written before end of input is there after restart" "$out" "written before eof"

for sig in TERM INT; do
	mkfifo "$d/in-$sig"
	"$a2m" serve --db "$d/sig.db" <"$d/in-$sig" >"$d/out-$sig" 2>/dev/null &
	pid=$!
	exec 3>"$d/in-$sig"
	req 1 memory/remember "{\"records\":[{\"content\":\"before SIG$sig\"}]}" >&3
	for _ in $(seq 100); do [ -s "$d/out-$sig" ] && break; sleep 0.05; done
	kill -s "$sig" "$pid"
	status=0
	for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
	if kill -0 "$pid" 2>/dev/null; then
		fail "SIG$sig stops the server" "still running"
		kill -9 "$pid"
	fi
	wait "$pid"; status=$?
	exec 3>&-
	expect "SIG$sig exits 0" "$status" 0
	out=$(req 1 memory/timeline '{}' | "$a2m" serve --db "$d/sig.db")
	contains "a record written before SIG$sig survives" "$out" "before SIG$sig"
done

# --- durability: acknowledged means committed, even across kill -9 ---
mkfifo "$d/in-kill"
"$a2m" serve --db "$d/kill.db" <"$d/in-kill" >"$d/out-kill" 2>/dev/null &
pid=$!
exec 3>"$d/in-kill"
req 1 memory/remember '{"records":[{"content":"acknowledged then killed","id":"k-1"},{"content":"second of the batch","id":"k-2"}]}' >&3
for _ in $(seq 200); do [ -s "$d/out-kill" ] && break; sleep 0.05; done
contains "the write was acknowledged" "$(cat "$d/out-kill")" '"ids":["k-1","k-2"]'
kill -9 "$pid"
wait "$pid" 2>/dev/null
exec 3>&-
out=$(req 1 memory/timeline '{}' | "$a2m" serve --db "$d/kill.db")
contains "an acknowledged record survives kill -9" "$out" "acknowledged then killed"
contains "the whole acknowledged batch survives kill -9" "$out" "second of the batch"

# --- the store file opens again with every record, and read-back is exact ---
out=$( { req 1 memory/remember '{"records":[{"content":"meta","id":"m-1","metadata":{"b":9007199254740993,"a":[0.1,"città"]}}]}'; } | "$a2m" serve --db "$d/meta.db")
out=$(req 1 memory/timeline '{"where":{"id":"m-1"}}' | "$a2m" serve --db "$d/meta.db")
contains "metadata survives reopening byte for byte" "$out" '"metadata":{"b":9007199254740993,"a":[0.1,"città"]}'

# --- issue 16's reproducer: no request makes a number non-finite ---
# whole_replies NAME IDS...: every line of stdin is one JSON-RPC response
# (valid JSON, no NUL), with the ids in that order and no -32603.
whole_replies() {
	local name=$1 got
	shift
	got=$(python3 -c '
import json, sys
ids = []
for line in sys.stdin.buffer.read().split(b"\n"):
    if not line:
        continue
    m = json.loads(line.decode("utf-8"))
    if m.get("error", {}).get("code") == -32603:
        ids.append("internal-error")
    else:
        ids.append(str(m["id"]))
print(" ".join(ids))' 2>&1)
	expect "$name" "$got" "$*"
}
salience_reproducer() {
	req 1 memory/remember '{"records":[{"id":"a","content":"x","salience":1e308}]}'
	req 2 memory/reinforce '{"ids":["a"],"amount":1e308}'
	req 3 memory/recall '{}'
	req 4 memory/timeline '{}'
}
salience_reproducer | "$a2m" serve --memory | whole_replies "a salience of 1e308 leaves every reply whole (memory)" 1 2 3 4
salience_reproducer | "$a2m" serve --db "$d/sal.db" | whole_replies "a salience of 1e308 leaves every reply whole (sqlite)" 1 2 3 4
out=$(salience_reproducer | "$a2m" serve --memory | head -1)
contains "a salience of 1e308 is invalid params" "$out" '"id":1,"error":{"code":-32602'
# A file written before the bound may hold an infinite salience: it reads
# clamped, and a reinforce brings it back within the bound.
req 1 memory/remember '{"records":[{"id":"inf","content":"x"}]}' | "$a2m" serve --db "$d/inf.db" >/dev/null
python3 -c 'import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute("update records set salience = 9e999"); c.commit()' "$d/inf.db"
out=$( { req 3 memory/recall '{}'; req 4 memory/timeline '{}'; } | "$a2m" serve --db "$d/inf.db")
printf '%s\n' "$out" | whole_replies "an infinite salience on file leaves replies whole" 3 4
contains "an infinite salience on file reads as the bound" "$out" '"salience":1000000.0'

out=$(req 1 memory/describe '{}' | A2M_DB="$d/env.db" "$a2m" serve)
contains "serve uses \$A2M_DB" "$out" '"result"'
[ -f "$d/env.db" ] && ok "\$A2M_DB names the file" || fail "\$A2M_DB names the file" "no $d/env.db"
out=$(cd "$d" && req 1 memory/describe '{}' | "$a2m" serve)
[ -f "$d/a2m.db" ] && ok "./a2m.db is the default store" || fail "./a2m.db is the default store" "no $d/a2m.db"

finish
