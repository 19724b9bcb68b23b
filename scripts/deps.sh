#!/usr/bin/env bash
# deps.sh — make sure the Debian packages a2m needs are installed.
#
# As root, installs what is missing with apt-get. Otherwise prints the exact
# apt-get line to run and fails. Each package and why: docs/BUILD.md.
#
#   scripts/deps.sh          what building and serving need
#   scripts/deps.sh test     also what the test suite needs (valgrind, openssl,
#                            curl for the HTTP tests, man and groff to read the
#                            installed man page, python3 for the checks of the
#                            tree written in Python: the claims register, the
#                            layers, the peers of the stdio and client tests;
#                            with python3-venv, the Python client's; chromium
#                            and a font for the inspector's browser test; clang
#                            and its runtimes for the fuzz targets; postgresql,
#                            the server the PostgreSQL store's tests start)
set -euo pipefail

packages=(build-essential pkg-config libjansson-dev libsqlite3-dev libmicrohttpd-dev
	libcurl4-openssl-dev libutf8proc-dev libstemmer-dev libmimalloc-dev libpq-dev)
if [ "${1:-}" = "test" ]; then
	packages+=(valgrind openssl curl man-db groff-base python3 chromium fonts-dejavu-core)
	# The Python client's tests make a virtual environment (python3 -m venv,
	# which Debian ships apart from python3) and pip-install into it.
	packages+=(python3-venv)
	# The fuzz targets (docs/FUZZING.md) need clang's libFuzzer runtime.
	packages+=(clang libclang-rt-14-dev)
	# The PostgreSQL store's tests start a server of their own (scripts/pg.sh).
	packages+=(postgresql)
fi

missing=()
for p in "${packages[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
		missing+=("$p")
	fi
done
# The MCP bridge is tested with the official MCP SDK, which needs Node.js and
# npm; any Node.js >= 18 on PATH will do (nodesource's package ships npm).
if [ "${1:-}" = "test" ] && ! command -v npm >/dev/null; then
	command -v node >/dev/null || missing+=(nodejs)
	missing+=(npm)
fi
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ]; then
	echo "deps: installing ${missing[*]}" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >&2
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
else
	echo "deps: missing packages; run:" >&2
	echo "  sudo apt-get install -y ${missing[*]}" >&2
	exit 1
fi
