#!/usr/bin/env bash
# run.sh [A2M_BINARY] — the Python client's tests, against the real server.
#
# Makes a virtual environment under build/ (once, and again when
# requirements.txt changes), installs the pinned test requirements into it,
# then installs clients/python with pip exactly as a user would, and runs
# pytest from outside the source tree, so the tests import the installed
# package. The closing line "N passed, M failed" is what scripts/run-tests.sh
# adds up. No Python 3.9+, no venv module, or a failed install fails the run:
# nothing here is skipped.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
A2M_BINARY=$(realpath "${1:-$repo/build/a2m}")
export A2M_BINARY
[ $# -gt 0 ] && shift # the rest goes to pytest
# The in-process transport runs over the library the server was built with.
A2M_LIBRARY=${A2M_LIBRARY:-$(dirname "$A2M_BINARY")/liba2m.so}
export A2M_LIBRARY
venv=${A2M_CLIENT_VENV:-$repo/build/venv-python-client}
pip_quiet=(--quiet --disable-pip-version-check --no-input)
export PYTHONDONTWRITEBYTECODE=1 # no __pycache__ left in the source tree

fail() {
	echo "FAIL $*"
	echo "0 passed, 1 failed"
	exit 1
}

command -v python3 >/dev/null || fail "python3 is not installed (scripts/deps.sh test installs it)"
[ -e "$A2M_LIBRARY" ] || fail "no $A2M_LIBRARY for the in-process transport's tests (make builds it)"
python3 -c 'import sys; sys.exit(sys.version_info < (3, 9))' || fail "python3 is older than 3.9"
stamp="$venv/.requirements"
if [ ! -x "$venv/bin/python" ] || ! cmp -s "$here/requirements.txt" "$stamp"; then
	rm -rf "$venv"
	python3 -m venv "$venv" || fail "python3 -m venv failed: install python3-venv (scripts/deps.sh test)"
	"$venv/bin/pip" install "${pip_quiet[@]}" -r "$here/requirements.txt" || fail "pip could not install tests/requirements.txt"
	cp "$here/requirements.txt" "$stamp"
fi
# As a user would: pip install clients/python (the build backend, flit_core,
# comes from pyproject.toml). Uninstalled first so the same version number
# is installed again from the current source.
"$venv/bin/pip" uninstall "${pip_quiet[@]}" --yes a2m-client >/dev/null 2>&1
"$venv/bin/pip" install "${pip_quiet[@]}" "$here/.." || fail "pip install clients/python failed"

cd "$here"
# A hang fails the run instead of holding it (see the Node suite).
exec timeout --kill-after=10 900 "$venv/bin/python" -m pytest -p no:cacheprovider -v "$@" 2>&1
