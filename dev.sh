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
	# The three builds (release, ASan+UBSan, ThreadSanitizer), then every
	# suite: exactly what `make check` does.
	exec make -s -j"$jobs" check
	;;
*)
	echo "usage: ./dev.sh serve [options] | ./dev.sh test" >&2
	exit 2
	;;
esac
