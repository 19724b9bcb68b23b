#!/usr/bin/env bash
# quality_engines_test.sh — the three engines rank alike (issue 18): `a2m
# bench quality` (bench/quality: 284 facts, 556 queries, nine languages,
# BM25 and the old lexical scorer) prints the same table, P@1 and MRR of
# every language and split, on memory, on SQLite and on PostgreSQL. The
# index each keeps is its own (memory's, SQLite's segments, PostgreSQL's
# postings table), the analyser and the scorer are the same, so any
# difference is a seam bug. Only the header line (the engine's name) and
# the timing line are left out of the comparison.
#
#   tests/quality_engines_test.sh BUILD/a2m     ($A2M_TEST_POSTGRES: the server)
. "$(dirname "$0")/lib.sh"
a2m=${1:?usage: quality_engines_test.sh path/to/a2m}
cd "$(dirname "$0")/.."
tmp=$(mktemp -d /tmp/a2m-quality.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

if [ -z "${A2M_TEST_POSTGRES:-}" ]; then
	fail "a PostgreSQL server to test on" "A2M_TEST_POSTGRES is not set"
	finish
fi
for e in memory sqlite postgres; do
	if "$a2m" bench quality --engine "$e" --postgres "$A2M_TEST_POSTGRES" >"$tmp/$e.out" \
		2>"$tmp/$e.err"; then
		ok "bench quality runs on $e"
	else
		fail "bench quality runs on $e" "$(tail -n 3 "$tmp/$e.err")"
	fi
	grep -v -e '^a2m bench quality:' -e '^time:' "$tmp/$e.out" >"$tmp/$e.table"
done
matches "the table has P@1 figures" "$(cat "$tmp/memory.table")" '^  all +[0-9]+ +[0-9.]+%'
for e in sqlite postgres; do
	if cmp -s "$tmp/memory.table" "$tmp/$e.table"; then
		ok "$e ranks as memory does (every P@1 and MRR)"
	else
		fail "$e ranks as memory does (every P@1 and MRR)" \
			"$(diff "$tmp/memory.table" "$tmp/$e.table" | head -n 12)"
	fi
done
finish
