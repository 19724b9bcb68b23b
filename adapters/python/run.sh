#!/usr/bin/env bash
# run.sh [A2M_BINARY] [GROUP...] — the Python adapters' tests, against the
# real server and each framework's real package.
#
# For each group (default: all) venv.sh makes or reuses its virtual
# environment from the pinned requirements/GROUP.txt and installs
# clients/python and adapters/python into it; pytest then runs that group's
# tests from tests/, which import the installed packages. Each pytest run
# closes with "N passed, M failed" (tests/conftest.py), the line
# scripts/run-tests.sh adds up. A group whose environment cannot be made is
# "0 passed, 1 failed": nothing here is skipped.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
A2M_BINARY=$(realpath "${1:-$repo/build/a2m}")
export A2M_BINARY
[ $# -gt 0 ] && shift
groups=("$@")
[ ${#groups[@]} -eq 0 ] && groups=(langchain crewai agno autogen openai-agents)
export PYTHONDONTWRITEBYTECODE=1
# Nothing leaves this machine: the frameworks' telemetry and tracing off.
export CREWAI_DISABLE_TELEMETRY=true CREWAI_DISABLE_TRACKING=true OTEL_SDK_DISABLED=true \
	AGNO_TELEMETRY=false OPENAI_AGENTS_DISABLE_TRACING=1 LANGCHAIN_TRACING_V2=false \
	LANGSMITH_TRACING=false HF_HUB_OFFLINE=1

tests_of() {
	case "$1" in
	langchain) echo test_common.py test_langgraph.py test_langchain.py ;;
	openai-agents) echo test_openai_agents.py ;;
	*) echo "test_$1.py" ;;
	esac
}

status=0
for group in "${groups[@]}"; do
	echo "== $group"
	if ! venv=$("$here/venv.sh" "$group"); then
		echo "FAIL the $group environment could not be made (above)"
		echo "0 passed, 1 failed"
		status=1
		continue
	fi
	# shellcheck disable=SC2046 # the file names are words
	(cd "$here/tests" && timeout --kill-after=10 900 "$venv/bin/python" -m pytest -p no:cacheprovider -v \
		$(tests_of "$group") 2>&1) || status=1
done
exit "$status"
