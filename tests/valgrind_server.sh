#!/usr/bin/env bash
# valgrind_server.sh LOG COMMAND... — runs the server under valgrind (memcheck,
# full leak check) and exits non-zero if valgrind saw any error or leak, so the
# conformance suite's "exits with status 0" check reports it. The log is
# LOG.<pid>, one per server: the suite may start a second one.
log=$1
shift
valgrind --quiet --leak-check=full --show-leak-kinds=definite,indirect,possible \
	--errors-for-leak-kinds=definite,indirect,possible --error-exitcode=99 \
	--log-file="$log.%p" "$@"
status=$?
if [ "$status" -ne 0 ]; then
	cat "$log".* >&2
fi
exit "$status"
