#!/usr/bin/env bash
# dev.sh — the two commands of the README.
#
#   ./dev.sh serve [a2m serve options]   install what is missing, build, and
#                                        serve the SQLite store ($A2M_DB or ./a2m.db)
#                                        over HTTP on 127.0.0.1:8778
#   ./dev.sh test                        install what is missing, build, and run
#                                        every test (normal and sanitizer builds)
set -euo pipefail
cd "$(dirname "$0")"

jobs=$(nproc 2>/dev/null || echo 2)
case "${1:-}" in
serve)
	shift
	scripts/deps.sh
	make -s -j"$jobs" >&2
	exec build/a2m serve --http 127.0.0.1:8778 --db "${A2M_DB:-./a2m.db}" "$@"
	;;
test)
	shift
	scripts/deps.sh test
	make -s -j"$jobs"
	make -s -j"$jobs" SAN=1
	# Only the tests of threads sharing a handle, store or scorer, the
	# embedders' test (its server answers on threads of its own) and those of
	# a write's helper threads (test_analyze, test_recall, test_index) run under
	# ThreadSanitizer: it is slow, and the rest are single-threaded.
	make -s -j"$jobs" TSAN=1 build-tsan/tests/test_threads build-tsan/tests/test_rank_threads \
		build-tsan/tests/test_sqlite_readers build-tsan/tests/test_embed \
		build-tsan/tests/embed_server build-tsan/tests/test_analyze build-tsan/tests/test_recall \
		build-tsan/tests/test_index
	exec scripts/run-tests.sh "$@"
	;;
*)
	echo "usage: ./dev.sh serve [options] | ./dev.sh test" >&2
	exit 2
	;;
esac
