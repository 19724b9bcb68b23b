#!/usr/bin/env bash
# check_test.sh — `a2m check` as a user runs it, and damaged files handed to
# `a2m check` and `a2m serve`.
#
#   tests/check_test.sh PATH/TO/a2m
#
# The command's surface (help, usage errors and their exit status 2, a
# missing file, which it must not create), a clean store (exit 0), a mirror
# damaged by hand (found, exit 1; repaired, exit 0; no record changed), a
# group whose records a client put in two tiers (found, and not "repaired":
# that is policy), a check beside a running server, the progress line (on a
# terminal only, never under a finding), a PostgreSQL deployment damaged by
# SQL (when A2M_TEST_POSTGRES names a cluster); then a database file
# with bytes overwritten at seeded random places, truncated, emptied or
# replaced by text: check and serve must each exit 0 or 1 with a message,
# never die of a signal or a sanitizer report, and every line serve writes
# must be a JSON-RPC response.
set -u
. "$(dirname "$0")/lib.sh"

a2m=${1:?usage: tests/check_test.sh PATH/TO/a2m}
tmp=$(mktemp -d /tmp/a2m-check-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# rpc ID METHOD PARAMS: one request line.
rpc() { printf '{"jsonrpc":"2.0","id":%s,"method":"%s","params":%s}\n' "$1" "$2" "$3"; }

# --- the command's surface ---
out=$("$a2m" check --help)
expect "check --help exits 0" "$?" 0
contains "check --help names --repair" "$out" "--repair"
contains "check --help names the exit status" "$out" "exit status"
contains "a2m --help lists check" "$("$a2m" --help)" "  check "
"$a2m" check --no-such-flag >/dev/null 2>"$tmp/err"
expect "an unknown option exits 2" "$?" 2
contains "an unknown option is named" "$(cat "$tmp/err")" "--no-such-flag"
"$a2m" check --memory >/dev/null 2>&1
expect "a memory store has nothing to check: exit 2" "$?" 2
"$a2m" check --db "$tmp/none.db" >"$tmp/out" 2>"$tmp/err"
expect "a missing file exits 1" "$?" 1
contains "a missing file is named" "$(cat "$tmp/err")" "none.db"
if [ -e "$tmp/none.db" ]; then fail "a missing file is not created" "it was"; else ok "a missing file is not created"; fi

# --- a store as a server left it ---
{
	rpc 1 memory/remember '{"records":[{"content":"the kettle is in the left cupboard","group":"kitchen"},{"content":"mugs are on the shelf","group":"kitchen"},{"content":"a fact worth keeping","tier":"semantic"}]}'
	rpc 2 memory/remember '{"records":[{"content":"how to brew: boil, wait, pour","tier":"procedural","key":"skills/brew"},{"content":"how to clean the filter","tier":"procedural","key":"skills/filter"}]}'
	rpc 3 memory/recall '{"query":"kettle"}'
} | "$a2m" serve --db "$tmp/a.db" >/dev/null
out=$("$a2m" check --db "$tmp/a.db")
expect "a clean store exits 0" "$?" 0
contains "a clean store: no problems" "$out" "no problems"
for area in file counts index seqs vectors mirror groups; do
	matches "a clean store: $area checked" "$out" "^ok +$area: "
done
out=$("$a2m" check --db "$tmp/a.db" -q)
expect "--quiet prints the summary alone" "$(printf '%s\n' "$out" | wc -l | tr -d ' ')" 1

# A file a version-11 build left (records_tier by tier name, schema step
# 12 not yet taken): checked read-only as it is, and left at version 11.
cp "$tmp/a.db" "$tmp/v11.db"
cp -r "$tmp/a.procedural" "$tmp/v11.procedural"
sqlite3 "$tmp/v11.db" "DROP INDEX records_tier; CREATE INDEX records_tier ON records(tier, created_at, seq);
	UPDATE a2m_schema SET version = 11;"
out=$("$a2m" check --db "$tmp/v11.db" 2>&1)
expect "a version-11 file: check exits 0" "$?" 0
contains "a version-11 file: no problems" "$out" "no problems"
expect "a version-11 file: check leaves it at version 11" \
	"$(sqlite3 "$tmp/v11.db" "SELECT group_concat(version) FROM a2m_schema")" 11
sqlite3 "$tmp/v11.db" "UPDATE a2m_schema SET version = 10"
out=$("$a2m" check --db "$tmp/v11.db" 2>&1)
expect "a version-10 file: check exits 1" "$?" 1
contains "a version-10 file: check says to open it read-write" "$out" "read-write to migrate"

# A file a version-12 build left (no a2m_bound, schema step 13 not yet
# taken): checked and served read-only as it is (recall without the bound),
# and left at version 12.
cp "$tmp/a.db" "$tmp/v12.db"
cp -r "$tmp/a.procedural" "$tmp/v12.procedural"
sqlite3 "$tmp/v12.db" "DROP TABLE a2m_bound; UPDATE a2m_schema SET version = 12;"
out=$("$a2m" check --db "$tmp/v12.db" 2>&1)
expect "a version-12 file: check exits 0" "$?" 0
contains "a version-12 file: no problems" "$out" "no problems"
matches "a version-12 file: no bound, said so" "$out" "^ok +counts: .*; no bound on salience"
out=$(rpc 1 memory/recall '{"query":"kettle"}' | "$a2m" serve --db "$tmp/v12.db" --read-only)
contains "a version-12 file: a read-only server recalls" "$out" "left cupboard"
expect "a version-12 file: left at version 12" \
	"$(sqlite3 "$tmp/v12.db" "SELECT group_concat(version) FROM a2m_schema")" 12

# --- the bound on salience below a record's: found, then raised ---
matches "the bound is checked" "$("$a2m" check --db "$tmp/a.db")" "^ok +counts: .*; the bound on salience "
cp "$tmp/a.db" "$tmp/bound.db"
cp -r "$tmp/a.procedural" "$tmp/bound.procedural"
sqlite3 "$tmp/bound.db" "UPDATE records SET salience = 7.25 WHERE seq = (SELECT min(seq) FROM records)"
out=$("$a2m" check --db "$tmp/bound.db")
expect "a bound below a salience exits 1" "$?" 1
matches "the low bound is found" "$out" "^PROBLEM counts: the bound on salience .* is below a record's salience 7.25"
out=$("$a2m" check --db "$tmp/bound.db" --repair)
expect "--repair of the bound exits 0" "$?" 0
expect "--repair raised the bound to the highest salience" \
	"$(sqlite3 "$tmp/bound.db" "SELECT salience FROM a2m_bound")" 7.25

timeline() { rpc 9 memory/timeline '{"limit":1000}' | "$a2m" serve --db "$tmp/a.db" --read-only; }
before=$(timeline)

# --- the mirror damaged by hand: found, then repaired ---
first=$(ls "$tmp/a.procedural" | head -n 1)
rm "$tmp/a.procedural/$first"
echo "written by hand" >"$tmp/a.procedural/stray-note--nobody.md"
out=$("$a2m" check --db "$tmp/a.db")
expect "a damaged mirror exits 1" "$?" 1
matches "the missing file is found" "$out" "^PROBLEM mirror: file \"$first\" is missing"
matches "the stray file is found" "$out" "^PROBLEM mirror: file \"stray-note--nobody.md\" has no record"
contains "the summary names the mirror" "$(printf '%s\n' "$out" | tail -n 1)" "problems in mirror"
out=$("$a2m" check --db "$tmp/a.db" --repair)
expect "--repair of the mirror exits 0" "$?" 0
matches "--repair says what it did" "$out" "^repair +mirror: "
contains "--repair: none remain" "$out" "repaired; none remain"
if [ -f "$tmp/a.procedural/$first" ] && [ ! -e "$tmp/a.procedural/stray-note--nobody.md" ]; then
	ok "--repair rewrote the missing file and removed the stray one"
else
	fail "--repair rewrote the missing file and removed the stray one" "$(ls "$tmp/a.procedural")"
fi
expect "--repair changed no record" "$(timeline)" "$before"
"$a2m" check --db "$tmp/a.db" -q >/dev/null
expect "after --repair the check exits 0" "$?" 0

# --- a group a client put in two tiers: reported, never moved ---
{
	rpc 1 memory/remember '{"records":[{"content":"first half of a document","group":"doc-7"}]}'
	rpc 2 memory/remember '{"records":[{"content":"second half of a document","group":"doc-7","tier":"semantic"}]}'
} | "$a2m" serve --db "$tmp/a.db" >/dev/null
out=$("$a2m" check --db "$tmp/a.db")
expect "a group across tiers exits 1" "$?" 1
matches "the group is named, with its tiers" "$out" '^PROBLEM groups: group "doc-7": 2 records in 2 tiers'
out=$("$a2m" check --db "$tmp/a.db" --repair)
expect "--repair does not move records: still exit 1" "$?" 1
contains "--repair: the groups remain" "$(printf '%s\n' "$out" | tail -n 1)" "problems remain in groups"
rpc 3 memory/forget '{"where":{"group":"doc-7"}}' | "$a2m" serve --db "$tmp/a.db" >/dev/null

# --- beside a running server: the check reads one snapshot and writes nothing ---
"$a2m" serve --http 127.0.0.1:0 --db "$tmp/a.db" 2>"$tmp/server.log" &
server=$!
for _ in $(seq 400); do grep -q "listening on" "$tmp/server.log" && break; sleep 0.05; done
"$a2m" check --db "$tmp/a.db" -q >"$tmp/out"
expect "a check beside a running server exits 0" "$?" 0
kill -TERM "$server"
wait "$server"
expect "the server beside it stops cleanly" "$?" 0

# --- the extensions' data (x-history, x-expiry, x-dedup), damaged by SQL ---
ext=(--db "$tmp/x.db" --config "$(dirname "$0")/extensions.json")
# ext_writes: a duplicate, six writes of one key (bound 4), a record that expires.
ext_writes() {
	rpc 1 memory/remember '{"records":[{"content":"The kettle is in the cupboard.","tier":"facts"}]}'
	rpc 2 memory/remember '{"records":[{"content":"the kettle is in the cupboard","tier":"facts"}]}'
	for i in 1 2 3 4 5 6; do
		rpc $((i + 2)) memory/remember "{\"records\":[{\"content\":\"the city is number $i\",\"tier\":\"semantic\",\"key\":\"user/city\"}]}"
	done
	rpc 9 memory/remember '{"records":[{"content":"a note for an hour","tier":"semantic","ttl_seconds":3600}]}'
}
ext_writes | "$a2m" serve "${ext[@]}" >"$tmp/x.out"
contains "extensions: the second kettle was a duplicate" "$(cat "$tmp/x.out")" '"deduplicated":1'
out=$("$a2m" check "${ext[@]}")
expect "extensions: a clean store exits 0" "$?" 0
matches "extensions: history checked, within the bound" "$out" '^ok +history: 4 earlier revisions of 1 keyed record, each below its live revision, in order, within the bound$'
matches "extensions: expiry checked" "$out" '^ok +expiry: 1 record expires, the soonest at [0-9T:.-]+Z, each listed by records_expiry$'
matches "extensions: fingerprints checked" "$out" "^ok +dedup: 3 fingerprinted records, each listed by records_fp, each its content's$"
python3 - "$tmp/x.db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.executescript('''
  UPDATE records SET fp = 12345 WHERE tier = 'facts';
  INSERT INTO a2m_history VALUES('nobody', 0, 'x', NULL, NULL, NULL, 1, 2);
  UPDATE records SET expires_at = -5 WHERE content = 'a note for an hour';
''')
db.close()
PY
out=$("$a2m" check "${ext[@]}")
expect "extensions: the damaged store exits 1" "$?" 1
matches "extensions: a wrong fingerprint is named" "$out" '^PROBLEM dedup: record "[^"]+": fingerprint 0000000000003039 kept, its content makes [0-9a-f]{16}'
matches "extensions: revisions of no record are named" "$out" '^PROBLEM history: record "nobody": revisions kept of a record that is gone'
matches "extensions: a bad expiry is named" "$out" '^PROBLEM expiry: record "[^"]+": expires at -5, not a time after the clock.s start'
out=$("$a2m" check "${ext[@]}" --repair)
expect "extensions: --repair leaves the expiry (the record's data): exit 1" "$?" 1
contains "extensions: --repair: only expiry remains" "$(printf '%s\n' "$out" | tail -n 1)" "problems in history, expiry, dedup; after the repair, problems remain in expiry"
rpc 1 memory/remember '{"records":[{"content":"THE kettle is in the cupboard","tier":"facts"}]}' | "$a2m" serve "${ext[@]}" >"$tmp/x.out"
contains "extensions: after the repair, a duplicate is found again" "$(cat "$tmp/x.out")" '"deduplicated":1'

# --- a PostgreSQL deployment (when the run has a cluster: scripts/run-tests.sh) ---
# Damaged by SQL as a bug or a hand would: each damage named in its area,
# --repair fixing what is derived, the records untouched, a live server
# beside the check and the repair.
if [ -n "${A2M_TEST_POSTGRES:-}" ]; then
	schema="check_$$_$RANDOM"
	pg="$A2M_TEST_POSTGRES options='-csearch_path=$schema'"
	sql() { psql "$pg" -qAtX -v ON_ERROR_STOP=1 -c "$1"; }
	"$a2m" check --postgres "$pg" >"$tmp/out" 2>&1
	expect "postgres: a deployment not made yet exits 1" "$?" 1
	contains "postgres: ... and says why" "$(cat "$tmp/out")" "cannot open the deployment"
	lacks "postgres: ... never showing the connection string's options" "$(cat "$tmp/out")" "search_path"
	{
		rpc 1 memory/remember '{"records":[{"content":"the kettle is in the left cupboard","group":"kitchen"},{"content":"mugs are on the shelf","group":"kitchen"},{"content":"a fact worth keeping","tier":"semantic"}]}'
		rpc 2 memory/remember '{"records":[{"content":"how to brew: boil, wait, pour","tier":"procedural","key":"skills/brew"}]}'
		rpc 3 memory/forget '{"query":"mugs"}'
		rpc 4 memory/remember '{"records":[{"content":"tea leaves in the tin","session":"s1"}]}'
	} | "$a2m" serve --postgres "$pg" >/dev/null
	out=$("$a2m" check --postgres "$pg")
	expect "postgres: a clean deployment exits 0" "$?" 0
	contains "postgres: a clean deployment: no problems" "$out" "no problems"
	for area in file counts index seqs vectors events groups; do
		matches "postgres: a clean deployment: $area checked" "$out" "^ok +$area: "
	done
	lacks "postgres: no mirror on a deployment" "$out" "mirror"
	pgtimeline() { rpc 9 memory/timeline '{"limit":1000}' | "$a2m" serve --postgres "$pg" --read-only; }
	before=$(pgtimeline)
	# Those few writes left their postings in batch rows, not yet folded: a
	# batch row that is no block of terms is named, and the index rebuilt at
	# the next open puts every posting in the terms' own rows.
	sql "UPDATE a2m_batches SET data = '\\x05ff'::bytea WHERE id = (SELECT max(id) FROM a2m_batches)"
	out=$("$a2m" check --postgres "$pg")
	expect "postgres: a corrupt batch row exits 1" "$?" 1
	matches "postgres: a corrupt batch row is named" "$out" '^PROBLEM index: cannot read the batch rows: index: a batch row of the term index is corrupt'
	sql "UPDATE a2m_state SET index_version = NULL"
	rpc 9 memory/describe '{}' | "$a2m" serve --postgres "$pg" >/dev/null
	expect "postgres: a rebuilt index holds no batch row" "$(sql "SELECT count(*) FROM a2m_batches")" 0
	sql "DELETE FROM a2m_postings_seg WHERE term = 'cupboard'::bytea;
	     UPDATE a2m_postings_seg SET data = '\\xffff'::bytea WHERE term = 'kettle'::bytea;
	     UPDATE a2m_counts SET n = n + 5 WHERE tier = 'semantic';
	     UPDATE a2m_state SET seq = seq - 2, event_head = event_head - 1, docs = docs + 1,
	       event_tail = (SELECT max(seq) FROM a2m_events), salience_max = -1;
	     UPDATE a2m_records SET gen_embedding = '\x010203'::bytea WHERE content LIKE 'a fact%';"
	out=$("$a2m" check --postgres "$pg")
	expect "postgres: a damaged deployment exits 1" "$?" 1
	matches "postgres: a postings row deleted is named" "$out" '^PROBLEM index: term "cupboard": 1 posting expected from the records, 0 in the index'
	matches "postgres: a term's row that is no list is named" "$out" '^PROBLEM index: term "kettle": its rows are not lists of postings'
	matches "postgres: the index's figures skewed" "$out" '^PROBLEM index: kept figures \(a2m_state\): 5 documents'
	matches "postgres: a count skewed" "$out" '^PROBLEM counts: tier "semantic", session \(none\): kept 6, the records make 1'
	matches "postgres: the bound on salience below a record's" "$out" "^PROBLEM counts: the bound on salience -1 is below a record's salience"
	matches "postgres: the seq mark below a record" "$out" '^PROBLEM seqs: seq 5 is above the mark 3'
	matches "postgres: the event head below an event" "$out" '^PROBLEM events: event [0-9]+ is above the head [0-9]+'
	matches "postgres: the event tail above an event" "$out" '^PROBLEM events: event [0-9]+ is below the tail [0-9]+ \(a2m_state.event_tail\)'
	matches "postgres: a malformed generated vector" "$out" '^PROBLEM vectors: 1 generated vector is malformed'
	matches "postgres: the groups are whole" "$out" '^ok +groups: 1 group of 1 record'
	contains "postgres: the summary names the areas" "$(printf '%s\n' "$out" | tail -n 1)" "problems in counts, index, seqs, vectors, events"
	# The repair beside a live server: its rebuilds wait for the write lock, and it for them.
	"$a2m" serve --http 127.0.0.1:0 --postgres "$pg" 2>"$tmp/pgserver.log" &
	server=$!
	for _ in $(seq 400); do grep -q "listening on" "$tmp/pgserver.log" && break; sleep 0.05; done
	out=$("$a2m" check --postgres "$pg" --repair)
	expect "postgres: --repair exits 0" "$?" 0
	for area in counts index seqs vectors events; do
		matches "postgres: --repair rebuilt $area" "$out" "^repair +$area: "
	done
	contains "postgres: --repair: none remain" "$out" "repaired; none remain"
	kill -TERM "$server"
	wait "$server"
	expect "postgres: the server beside the repair stops cleanly" "$?" 0
	expect "postgres: --repair changed no record" "$(pgtimeline)" "$before"
	out=$("$a2m" check --postgres "$pg" -q)
	expect "postgres: after --repair the check exits 0" "$?" 0
	expect "postgres: --repair raised the bound on salience" "$(sql "SELECT salience_max >= 0 FROM a2m_state")" t
	out=$(rpc 1 memory/recall '{"query":"cupboard"}' | "$a2m" serve --postgres "$pg" --read-only)
	contains "postgres: recall finds the record whose posting was deleted" "$out" "left cupboard"
	# Records a client put in two tiers of one group: reported, never moved.
	rpc 1 memory/remember '{"records":[{"content":"second half","group":"kitchen","tier":"semantic"}]}' |
		"$a2m" serve --postgres "$pg" >/dev/null
	out=$("$a2m" check --postgres "$pg")
	expect "postgres: a group across tiers exits 1" "$?" 1
	matches "postgres: the group is named" "$out" '^PROBLEM groups: group "kitchen": 2 records in 2 tiers'
	# Events lost from the middle of the log: a cursor would skip them; reported, not repairable.
	sql "DELETE FROM a2m_events WHERE seq = (SELECT min(seq) + 1 FROM a2m_events)"
	out=$("$a2m" check --postgres "$pg")
	matches "postgres: a gap in the event log is named" "$out" '^PROBLEM events: [0-9]+ events between [0-9]+ and [0-9]+, which make [0-9]+: a reader.s cursor would skip the missing ones'
	sql "SET client_min_messages = warning; DROP SCHEMA $schema CASCADE"

	# The extensions' data on a deployment, damaged by SQL as on a file above,
	# and every vector element finite (a NaN in a caller's and in a generated one).
	schema="checkx_$$_$RANDOM"
	pg="$A2M_TEST_POSTGRES options='-csearch_path=$schema'"
	pgx=(--postgres "$pg" --config "$(dirname "$0")/extensions.json")
	{
		ext_writes
		rpc 10 memory/remember '{"records":[{"id":"vec-own","content":"a pointed note","tier":"semantic","embedding":[0.5,0.25]},{"id":"vec-gen","content":"a generated note","tier":"semantic"}]}'
	} | "$a2m" serve "${pgx[@]}" >"$tmp/x.out"
	contains "postgres extensions: the second kettle was a duplicate" "$(cat "$tmp/x.out")" '"deduplicated":1'
	sql "UPDATE a2m_records SET gen_embedding = '\x0000803f0000003f'::bytea WHERE id = 'vec-gen'"
	out=$("$a2m" check "${pgx[@]}")
	expect "postgres extensions: a clean deployment exits 0" "$?" 0
	matches "postgres extensions: history checked, within the bound" "$out" '^ok +history: 4 earlier revisions of 1 keyed record, each below its live revision, in order, within the bound$'
	matches "postgres extensions: expiry checked" "$out" '^ok +expiry: 1 record expires, the soonest at [0-9T:.-]+Z$'
	matches "postgres extensions: fingerprints checked" "$out" "^ok +dedup: 5 fingerprinted records, each its content's$"
	matches "postgres extensions: vectors checked finite" "$out" '^ok +vectors: 1 records. own vectors \(width 2\), 1 generated \(width 2\), each space of one width, all finite$'
	sql "UPDATE a2m_records SET fp = 12345 WHERE tier = 'facts';
	     INSERT INTO a2m_history VALUES ('nobody', 0, 'x', NULL, NULL, NULL, 1, 2);
	     INSERT INTO a2m_history SELECT id, revision + 10, content, role, metadata, owner, created_at, superseded_at
	       FROM a2m_history WHERE revision = (SELECT max(revision) FROM a2m_history);
	     UPDATE a2m_records SET expires_at = -5 WHERE content = 'a note for an hour';
	     UPDATE a2m_records SET embedding = '\x000000000000f87f000000000000d03f'::bytea WHERE id = 'vec-own';
	     UPDATE a2m_records SET gen_embedding = '\x0000803f000080ff'::bytea WHERE id = 'vec-gen'"
	out=$("$a2m" check "${pgx[@]}")
	expect "postgres extensions: the damaged deployment exits 1" "$?" 1
	matches "postgres extensions: a wrong fingerprint is named" "$out" '^PROBLEM dedup: record "[^"]+": fingerprint 0000000000003039 kept, its content makes [0-9a-f]{16}'
	matches "postgres extensions: revisions of no record are named" "$out" '^PROBLEM history: record "nobody": revisions kept of a record that is gone'
	matches "postgres extensions: a revision above the live one is named" "$out" '^PROBLEM history: record "[^"]+": revision 1[0-9] kept as an earlier one; the live revision is 5$'
	matches "postgres extensions: too many revisions are named" "$out" '^PROBLEM history: record "[^"]+": 5 earlier revisions kept, beyond the bound of 4$'
	matches "postgres extensions: a bad expiry is named" "$out" '^PROBLEM expiry: record "[^"]+": expires at -5, not a time after the clock.s start'
	matches "postgres extensions: a NaN in a caller's vector is named" "$out" '^PROBLEM vectors: record "vec-own": its own vector holds a value that is not finite \(NaN or infinite\) \(the caller.s data: not repairable\)$'
	matches "postgres extensions: an infinity in a generated vector is named" "$out" '^PROBLEM vectors: record "vec-gen": its generated vector holds a value that is not finite'
	out=$("$a2m" check "${pgx[@]}" --repair)
	expect "postgres extensions: --repair leaves the expiry and the caller's vector: exit 1" "$?" 1
	contains "postgres extensions: --repair: only expiry and vectors remain" "$(printf '%s\n' "$out" | tail -n 1)" "problems in vectors, history, expiry, dedup; after the repair, problems remain in vectors, expiry"
	expect "postgres extensions: the revisions past the bound and the strays deleted" "$(sql "SELECT count(*) FROM a2m_history")" 4
	expect "postgres extensions: the generated vector not finite dropped" "$(sql "SELECT count(*) FROM a2m_records WHERE gen_embedding IS NOT NULL")" 0
	expect "postgres extensions: the caller's vector kept" "$(sql "SELECT count(*) FROM a2m_records WHERE embedding IS NOT NULL")" 1
	out=$("$a2m" check "${pgx[@]}")
	lacks "postgres extensions: after the repair, history is clean" "$out" "PROBLEM history"
	lacks "postgres extensions: after the repair, fingerprints are clean" "$out" "PROBLEM dedup"
	rpc 1 memory/remember '{"records":[{"content":"THE kettle is in the cupboard","tier":"facts"}]}' | "$a2m" serve "${pgx[@]}" >"$tmp/x.out"
	contains "postgres extensions: after the repair, a duplicate is found again" "$(cat "$tmp/x.out")" '"deduplicated":1'
	sql "SET client_min_messages = warning; DROP SCHEMA $schema CASCADE"
fi

# --- damaged files: clean failures, never a crash ---
{
	for b in $(seq 1 12); do
		printf '{"jsonrpc":"2.0","id":%d,"method":"memory/remember","params":{"records":[' "$b"
		for i in $(seq 1 40); do
			[ "$i" -gt 1 ] && printf ','
			printf '{"content":"record %d of batch %d: lanterns, ledgers and harbour stones %d","group":"g%d"}' "$i" "$b" "$((i * b))" "$((i % 9))"
		done
		printf ']}}\n'
	done
	rpc 99 memory/remember '{"records":[{"content":"a skill","tier":"procedural","key":"skills/one"}]}'
} | "$a2m" serve --db "$tmp/big.db" >/dev/null
requests() {
	rpc 1 memory/describe '{}'
	rpc 2 memory/recall '{"query":"lanterns harbour"}'
	rpc 3 memory/timeline '{"limit":1000}'
	rpc 4 memory/remember '{"records":[{"content":"written to a damaged file"}]}'
	rpc 5 memory/forget '{"query":"ledgers"}'
	rpc 6 memory/consolidate '{}'
	rpc 7 memory/session/list '{}'
}
# survives NAME FILE: check and serve on FILE end well, whatever they find.
survives() {
	local name=$1 db=$2 status bad=""
	"$a2m" check --db "$db" -q >"$tmp/check.out" 2>"$tmp/check.err"
	status=$?
	[ "$status" -le 1 ] || bad="check exit $status"
	[ "$status" -eq 1 ] && ! [ -s "$tmp/check.out" ] && ! [ -s "$tmp/check.err" ] && bad="check said nothing"
	grep -q "Sanitizer\|runtime error" "$tmp/check.err" && bad="check: $(head -c 300 "$tmp/check.err")"
	requests | "$a2m" serve --db "$db" >"$tmp/serve.out" 2>"$tmp/serve.err"
	status=$?
	[ "$status" -le 1 ] || bad="$bad serve exit $status"
	[ "$status" -eq 1 ] && ! grep -q "a2m serve:" "$tmp/serve.err" && bad="$bad serve said nothing"
	grep -q "Sanitizer\|runtime error" "$tmp/serve.err" && bad="$bad serve: $(head -c 300 "$tmp/serve.err")"
	grep -qv '^{"jsonrpc":"2.0","id":[0-9]*,"\(result\|error\)":' "$tmp/serve.out" &&
		bad="$bad serve wrote: $(grep -v '^{"jsonrpc"' "$tmp/serve.out" | head -c 200)"
	if [ -z "$bad" ]; then ok "$name"; else fail "$name" "$bad"; fi
}
# --- progress: a line on a terminal only, and never under a finding ---
# A2M_PROGRESS_FIRST_MS=0 draws at once what a long check draws after a
# second, so a small store shows it. The mirror lacks its file: a PROBLEM
# finding comes after the index's walks have drawn their lines.
cp "$tmp/big.db" "$tmp/p.db"
mkdir "$tmp/p.procedural"
script -qec "A2M_PROGRESS_FIRST_MS=0 '$a2m' check --db '$tmp/p.db'" /dev/null >"$tmp/tty.out" 2>&1
expect "on a terminal: the missing mirror file exits 1" "$?" 1
tty=$(tr -d '\000' <"$tmp/tty.out")
contains "on a terminal, the index walk's line with its total" "$tty" $'\ra2m check: index: 0 of 481 records analysed (0%), 0/s\033[K'
contains "... and the postings' walk" "$tty" "postings read"
contains "... and the groups' walk" "$tty" "a2m check: groups: "
# Each finding starts a line, or follows the erasing of the progress line:
# never where a drawn line ends ("...left\033[Kok      index").
clean=$(python3 - "$tmp/tty.out" <<'PY'
import re, sys
out = open(sys.argv[1], 'rb').read().decode()
bad = [out[max(0, m.start() - 60):m.end()] for m in re.finditer(r'(ok     |PROBLEM|a2m check: p\.db)', out)
       if m.start() and not (out[:m.start()].endswith('\n') or out[:m.start()].endswith('\r\x1b[K'))]
print(repr(bad[0]) if bad else 'clean')
PY
)
expect "on a terminal, every finding on a clean line" "$clean" clean
# Without the progress lines, the terminal shows exactly what stdout gets elsewhere.
A2M_PROGRESS_FIRST_MS=0 "$a2m" check --db "$tmp/p.db" >"$tmp/plain.out" 2>"$tmp/plain.err"
expect "stderr not a terminal: exit 1 as well" "$?" 1
expect "stderr not a terminal: no progress output at all" "$(od -An -c "$tmp/plain.err")" ""
matches "... and the finding" "$(cat "$tmp/plain.out")" '^PROBLEM mirror: file "skills-one--[^"]*" is missing'
stripped=$(python3 - "$tmp/tty.out" <<'PY'
import re, sys
out = open(sys.argv[1], 'rb').read().decode().replace('\0', '')
out = re.sub(r'\r[^\r\n]*\x1b\[K', '', out).replace('\r\n', '\n')
sys.stdout.write(out)
PY
)
expect "the terminal's findings, the lines erased, are stdout's" "$stripped" "$(cat "$tmp/plain.out")"
rm -rf "$tmp/p.db" "$tmp/p.procedural"

size=$(stat -c %s "$tmp/big.db")
RANDOM=16  # the offsets are the same on every run
for n in $(seq 1 24); do
	off=$(((RANDOM * 32768 + RANDOM) % size))
	cp "$tmp/big.db" "$tmp/bad.db"
	rm -f "$tmp/bad.db-wal" "$tmp/bad.db-shm"
	printf '\336\255\276\357%.0s' $(seq 1 16) | dd of="$tmp/bad.db" bs=1 seek="$off" conv=notrunc 2>/dev/null
	survives "64 bytes overwritten at offset $off" "$tmp/bad.db"
done
for off in 0 16 28 40 96 100 4096 8192; do
	cp "$tmp/big.db" "$tmp/bad.db"
	rm -f "$tmp/bad.db-wal" "$tmp/bad.db-shm"
	printf '\377\377\377\377' | dd of="$tmp/bad.db" bs=1 seek="$off" conv=notrunc 2>/dev/null
	survives "the header's bytes at $off overwritten" "$tmp/bad.db"
done
cp "$tmp/big.db" "$tmp/bad.db"
rm -f "$tmp/bad.db-wal" "$tmp/bad.db-shm"
truncate -s $((size / 2)) "$tmp/bad.db"
survives "a file cut in half" "$tmp/bad.db"
echo "this is not a database at all" >"$tmp/text.db"
survives "a text file" "$tmp/text.db"
"$a2m" check --db "$tmp/text.db" >"$tmp/out" 2>&1
expect "a text file: check exits 1" "$?" 1
contains "a text file: check says so" "$(cat "$tmp/out")" "not a database"
: >"$tmp/empty.db"
"$a2m" check --db "$tmp/empty.db" >"$tmp/out" 2>&1
expect "an empty file: check exits 1" "$?" 1
contains "an empty file: check says it is no a2m store" "$(cat "$tmp/out")" "no a2m schema"

finish
