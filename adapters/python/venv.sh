#!/usr/bin/env bash
# venv.sh GROUP — makes (or reuses) the virtual environment of one group of
# adapters and prints its path: build/venv-adapters-GROUP, from the pinned
# requirements/GROUP.txt, made once and again only when that file changes
# (as clients/python/tests/run.sh does), then clients/python and
# adapters/python installed into it with pip exactly as a user would.
#
# Groups: langchain (LangGraph and LangChain share langchain-core), crewai,
# agno, autogen, openai-agents. Used by run.sh and by the interop grid
# (tests/interop/). Any failure exits 1 with the reason on stderr: a
# framework that does not install is a failure, never a skip.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
group=${1:?usage: venv.sh GROUP}
req="$here/requirements/$group.txt"
venv="${A2M_ADAPTERS_VENVS:-$repo/build}/venv-adapters-$group"
pip_quiet=(--quiet --disable-pip-version-check --no-input)

die() {
	echo "venv.sh $group: $*" >&2
	exit 1
}
[ -f "$req" ] || die "no requirements file $req"
command -v python3 >/dev/null || die "python3 is not installed (scripts/deps.sh test installs it)"
python3 -c 'import sys; sys.exit(sys.version_info < (3, 10))' || die "python3 is older than 3.10"
mkdir -p "$(dirname "$venv")"
# One maker at a time per environment: run.sh and the grid may overlap.
exec 9>"$venv.lock"
flock 9
stamp="$venv/.requirements"
if [ ! -x "$venv/bin/python" ] || ! cmp -s "$req" "$stamp"; then
	rm -rf "$venv"
	python3 -m venv "$venv" >&2 || die "python3 -m venv failed: install python3-venv (scripts/deps.sh test)"
	"$venv/bin/pip" install "${pip_quiet[@]}" -r "$req" >&2 || die "pip could not install $req"
	cp "$req" "$stamp"
fi
# The current source, as a user installs it: again whenever a file of
# either package changed (uninstalled first: the version number does not
# change between two edits).
source_stamp=$(cd "$repo" && find clients/python adapters/python -path '*/tests' -prune -o \
	-type f \( -name '*.py' -o -name 'pyproject.toml' -o -name 'py.typed' \) -print0 |
	sort -z | xargs -0 sha1sum | sha1sum)
if ! [ "$(cat "$venv/.source" 2>/dev/null)" = "$source_stamp" ]; then
	"$venv/bin/pip" uninstall "${pip_quiet[@]}" --yes a2m-client a2m-adapters >/dev/null 2>&1
	"$venv/bin/pip" install "${pip_quiet[@]}" "$repo/clients/python" "$here" >&2 ||
		die "pip install clients/python adapters/python failed"
	echo "$source_stamp" >"$venv/.source"
fi
echo "$venv"
