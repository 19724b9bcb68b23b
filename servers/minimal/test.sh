#!/usr/bin/env bash
# test.sh SERVER — checks of servers/minimal that the conformance suite does
# not make: the answers this server chose where the spec leaves a choice
# (servers/minimal/README.md), and ids, numbers and selectors at their edges.
# Each check starts a fresh server, sends it lines on stdin and compares its
# whole stdout with the answer expected, timestamps replaced by "T".
# Prints one line per check and "N passed, M failed".
set -uo pipefail
server=${1:?usage: test.sh SERVER}
passed=0
failed=0

# expect NAME EXPECTED [LINE...]: sends the LINEs to a fresh server and
# compares its stdout, every created_at replaced by "T", with EXPECTED (one
# response a line). Also fails if the server does not exit 0 at end of input.
expect() {
	local name=$1 want=$2 got status
	shift 2
	got=$(printf '%s\n' "$@" | "$server" 2>/dev/null)
	status=$?
	got=$(printf '%s' "$got" | sed -E 's/"created_at":"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z"/"created_at":"T"/g')
	[ "$got" = "$want" ] && [ "$status" -eq 0 ]
	verdict $? "$name" "  expected: $want
  got:      $got (exit $status)"
}

# verdict STATUS NAME WHY: counts and prints one check; WHY is shown when
# STATUS is not 0.
verdict() {
	if [ "$1" -eq 0 ]; then
		passed=$((passed + 1))
		echo "ok   $2"
	else
		failed=$((failed + 1))
		echo "FAIL $2"
		echo "$3"
	fi
}

r() { # r ID METHOD PARAMS: one request line
	printf '{"jsonrpc":"2.0","id":%s,"method":"%s","params":%s}' "$1" "$2" "$3"
}
ok() { printf '{"jsonrpc":"2.0","id":%s,"result":%s}' "$1" "$2"; }
err() { printf '{"jsonrpc":"2.0","id":%s,"error":%s}' "$1" "$2"; }
remember() { r "$1" memory/remember "{\"records\":$2}"; }

# --- ids come back as the client wrote them (DECISIONS 022) ---
for id in 18446744073709551617 -9223372036854775809 1.10 -0 1e2 1E+2 '"\u00e9t\u00e9"' '""' null; do
	want=$(err "$id" '{"code":-32601,"message":"x/y is not an A2M method"}')
	[ "${id:0:2}" = 18 ] || [ "${id:0:2}" = -9 ] &&
		want=$(err "$id" '{"code":-32602,"message":"an integer in this request is wider than 64 bits"}')
	expect "id $id comes back as written" "$want" "{\"jsonrpc\":\"2.0\",\"id\":$id,\"method\":\"x/y\"}"
done
expect "an id key spelt with escapes is the id" \
	"$(err '"e"' '{"code":-32601,"message":"x/y is not an A2M method"}')" \
	'{"jsonrpc":"2.0","\u0069d":"e","method":"x/y"}'
expect "of two id keys the last is the id; an id inside params is not" \
	"$(err 2 '{"code":-32601,"message":"x/y is not an A2M method"}')" \
	'{"id":1,"jsonrpc":"2.0","params":{"id":3},"id":2,"method":"x/y"}'
expect "a number beyond a double is a parse error (jansson cannot hold it; README)" \
	"$(err null '{"code":-32700,"message":"parse error: not one JSON value"}')" \
	'{"jsonrpc":"2.0","id":1e400,"method":"x/y"}'

# --- strings are compared whole, U+0000 included ---
expect "jsonrpc, method and protocol holding U+0000 are not the names they start with" \
	"$(err 1 '{"code":-32600,"message":"jsonrpc must be \"2.0\""}')
$(err 2 '{"code":-32601,"message":"memory/describe is not an A2M method"}')
$(err 3 '{"code":-32007,"message":"this server speaks a2m/0.1 only","data":{"supported":["a2m/0.1"]}}')" \
	'{"jsonrpc":"2.0\u0000","id":1,"method":"memory/describe"}' \
	'{"jsonrpc":"2.0","id":2,"method":"memory/describe\u0000x"}' \
	"$(r 3 memory/describe '{"protocol":"a2m/0.1\u0000"}')"

# --- numbers in metadata ---
expect "reals in metadata come back in their shortest form" \
	"$(ok 1 '{"ids":["a"]}')
$(ok 2 '{"records":[{"id":"a","created_at":"T","content":"c","metadata":{"r":[0.1,0.30000000000000004,100.0,-0.0,1.5e-07,1e+300],"i":[9223372036854775807,-1],"s":"0.1"}}]}')" \
	"$(remember 1 '[{"id":"a","content":"c","metadata":{"r":[0.1,0.30000000000000004,1e2,-0.0,1.5e-7,1e300],"i":[9223372036854775807,-1],"s":"0.1"}}]')" \
	"$(r 2 memory/timeline '{}')"
expect "an integer wider than 64 bits in metadata is refused and writes nothing" \
	"$(err 1 '{"code":-32602,"message":"an integer in this request is wider than 64 bits"}')
$(ok 2 '{"records":[]}')" \
	"$(remember 1 '[{"content":"c","metadata":{"n":18446744073709551616}}]')" \
	"$(r 2 memory/timeline '{}')"
expect "metadata null is refused" \
	"$(err 1 '{"code":-32602,"message":"records[0].metadata must be an object"}')" \
	"$(remember 1 '[{"content":"c","metadata":null}]')"
expect "an empty client id is refused" \
	"$(err 1 '{"code":-32602,"message":"records[0].id must be a non-empty string"}')" \
	"$(remember 1 '[{"content":"c","id":""}]')"
expect "role and group must be strings" \
	"$(err 1 '{"code":-32602,"message":"records[1].role must be a string"}')
$(err 2 '{"code":-32602,"message":"records[0].group must be a string"}')" \
	"$(remember 1 '[{"content":"c"},{"content":"c","role":1}]')" \
	"$(remember 2 '[{"content":"c","group":["g"]}]')"
expect "ids holding U+0000 are distinct ids" \
	"$(ok 1 '{"ids":["a\u0000b","a","a\u0000b"]}')
$(ok 2 '{"forgotten":1}')
$(ok 3 '{"records":[{"id":"a","created_at":"T","content":"2"}]}')" \
	"$(remember 1 '[{"content":"1","id":"a\u0000b"},{"content":"2","id":"a"},{"content":"3","id":"a\u0000b"}]')" \
	"$(r 2 memory/forget '{"ids":["a\u0000b"]}')" \
	"$(r 3 memory/timeline '{}')"

# --- selectors of undeclared capabilities ---
for m in memory/recall memory/timeline memory/forget; do
	expect "$m with tier is -32003" \
		"$(err 1 "{\"code\":-32003,\"message\":\"$m with tier needs the 'tiers' capability, which this server does not implement\",\"data\":{\"capability\":\"tiers\"}}")" \
		"$(r 1 "$m" '{"tier":"semantic","ids":[]}')"
	expect "$m with key_prefix is -32003" \
		"$(err 1 "{\"code\":-32003,\"message\":\"$m with key_prefix needs the 'keys' capability, which this server does not implement\",\"data\":{\"capability\":\"keys\"}}")" \
		"$(r 1 "$m" '{"key_prefix":"a/","ids":[]}')"
done
expect "owner, session, embedding and prompt are ignored" \
	"$(ok 1 '{"ids":["a"]}')
$(ok 2 '{"records":[{"id":"a","created_at":"T","content":"c"}]}')" \
	"$(remember 1 '[{"id":"a","content":"c","owner":"x","session":"s","key":"k","embedding":[1],"salience":2,"uri":"u"}]')" \
	"$(r 2 memory/timeline '{"owner":"y","session":"t","embeddings":true,"prompt":true}')"

# --- forget needs a deliberate selector ---
none='{"code":-32602,"message":"memory/forget needs a selector: ids, a query with words in it, or a non-empty where"}'
expect "forget with an empty where, an empty query or a query of no words is -32602" \
	"$(ok 0 '{"ids":["a"]}')
$(err 1 "$none")
$(err 2 "$none")
$(err 3 "$none")
$(ok 4 '{"records":[{"id":"a","created_at":"T","content":"c"}]}')" \
	"$(remember 0 '[{"id":"a","content":"c"}]')" \
	"$(r 1 memory/forget '{"where":{}}')" "$(r 2 memory/forget '{"query":""}')" \
	"$(r 3 memory/forget '{"query":"?! ..."}')" "$(r 4 memory/timeline '{}')"
expect "forget with ids [] forgets nothing" "$(ok 1 '{"forgotten":0}')" "$(r 1 memory/forget '{"ids":[]}')"
expect "forget's selectors all hold: ids and where" \
	"$(ok 1 '{"ids":["a","b"]}')
$(ok 2 '{"forgotten":1}')
$(ok 3 '{"records":[{"id":"a","created_at":"T","content":"x","role":"user"}]}')" \
	"$(remember 1 '[{"id":"a","content":"x","role":"user"},{"id":"b","content":"y","role":"tool"}]')" \
	"$(r 2 memory/forget '{"ids":["a","b"],"where":{"role":"tool"}}')" "$(r 3 memory/timeline '{}')"

# --- where ---
expect "where compares numbers by value and tests fields before metadata" \
	"$(ok 1 '{"ids":["a","b"]}')
$(ok 2 '{"records":[{"id":"a","created_at":"T","content":"x","metadata":{"n":1,"role":"tool"}}]}')
$(ok 3 '{"records":[]}')
$(ok 4 '{"records":[{"id":"b","created_at":"T","content":"y","role":"tool"}]}')" \
	"$(remember 1 '[{"id":"a","content":"x","metadata":{"n":1,"role":"tool"}},{"id":"b","content":"y","role":"tool"}]')" \
	"$(r 2 memory/timeline '{"where":{"n":1.0}}')" "$(r 3 memory/timeline '{"where":{"n":[2,"1"]}}')" \
	"$(r 4 memory/timeline '{"where":{"role":"tool"}}')"

# --- ranking ---
expect "the words a record holds rank it; rarer words weigh more (spec appendix A)" \
	"$(ok 1 '{"ids":["a","b","c"]}')
$(ok 2 '{"records":[{"id":"a","created_at":"T","content":"the deploy key rotates every 90 days","role":"user","score":0.26754323245799644},{"id":"c","created_at":"T","content":"the key to the shed","score":0.15926246947926126}]}')" \
	"$(remember 1 '[{"id":"a","content":"the deploy key rotates every 90 days","role":"user"},{"id":"b","content":"lunch is at noon"},{"id":"c","content":"the key to the shed"}]')" \
	"$(r 2 memory/recall '{"query":"how often does the DEPLOY key change?"}')"
expect "a plural s is folded; min_score drops what scores below it" \
	"$(ok 1 '{"ids":["a","b"]}')
$(ok 2 '{"records":[{"id":"b","created_at":"T","content":"Keys, rotated","score":1.0},{"id":"a","created_at":"T","content":"one key","score":1.0}]}')
$(ok 3 '{"records":[]}')" \
	"$(remember 1 '[{"id":"a","content":"one key"},{"id":"b","content":"Keys, rotated"}]')" \
	"$(r 2 memory/recall '{"query":"keys"}')" "$(r 3 memory/recall '{"query":"keys","min_score":1.5}')"
expect "limit 0 asks for up to max_recall_limit; 1001 is -32006" \
	"$(ok 1 '{"records":[]}')
$(err 2 '{"code":-32006,"message":"limit is over max_recall_limit (1000)","data":{"max_recall_limit":1000}}')" \
	"$(r 1 memory/recall '{"limit":0}')" "$(r 2 memory/recall '{"limit":1001}')"

# --- timeline ---
expect "timeline limit takes the newest, oldest first; limit 2.0 is 2" \
	"$(ok 1 '{"ids":["a","b","c"]}')
$(ok 2 '{"records":[{"id":"b","created_at":"T","content":"2"},{"id":"c","created_at":"T","content":"3"}]}')" \
	"$(remember 1 '[{"id":"a","content":"1"},{"id":"b","content":"2"},{"id":"c","content":"3"}]')" \
	"$(r 2 memory/timeline '{"limit":2.0}')"

# --- notifications are carried out, never answered ---
expect "a notification writes, and is not answered" \
	"$(ok 2 '{"records":[{"id":"n","created_at":"T","content":"quiet"}]}')" \
	'{"jsonrpc":"2.0","method":"memory/remember","params":{"records":[{"id":"n","content":"quiet"}]}}' \
	"$(r 2 memory/timeline '{}')"
expect "an invalid request without an id is still answered, id null" \
	"$(err null '{"code":-32600,"message":"jsonrpc must be \"2.0\""}')" \
	'{"jsonrpc":"1.0","method":"memory/describe"}'

# --- the command line ---
"$server" --help >/dev/null 2>&1
help=$?
"$server" --bogus >/dev/null 2>&1
bogus=$?
[ "$help" -eq 0 ] && [ "$bogus" -eq 2 ]
verdict $? "--help exits 0 and an unknown argument 2" "  --help: $help, --bogus: $bogus"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
