#!/usr/bin/env bash
# check_isolation.sh BUILD — checks that servers/minimal shares no code with
# liba2m (issue 20; DECISIONS 025: a server written to show the spec is
# enough on its own proves nothing if it borrows our code).
#
# It reads what the Makefile left in BUILD/servers/: the commands that built
# the object and the binary (*.cmd), the headers the compiler read (the -MD
# file), and the object and binary themselves; and BUILD/liba2m.a, only to
# know which symbols are ours. One line per check, then "N/M checks passed";
# exit status 1 when any check fails. The Makefile runs it after linking, so a
# leak fails the build; scripts/run-tests.sh runs it again as a suite.
set -uo pipefail
build=${1:?usage: check_isolation.sh BUILD}
cd "$(dirname "$0")/../.."
root=$(pwd -P)
src=servers/minimal/a2m_minimal.c
obj=$build/servers/a2m-minimal.o
bin=$build/servers/a2m-minimal
lib=$build/liba2m.a

passed=0
total=0
# check NAME COMMAND...: one check; COMMAND prints what is wrong, if anything,
# and fails.
check() {
	local name=$1 out
	shift
	total=$((total + 1))
	if out=$("$@" 2>&1); then
		passed=$((passed + 1))
		echo "ok   $name"
	else
		echo "FAIL $name"
		[ -n "$out" ] && printf '%s\n' "$out" | sed 's/^/  /'
	fi
}

# ours PATH: is PATH inside this repository (other than the server's own
# source and its build output)?
ours() {
	local p
	p=$(realpath -m -- "$1")
	case "$p" in
	"$root/$src" | "$root/$build"/servers/*) return 1 ;;
	"$root" | "$root"/*) return 0 ;;
	esac
	return 1
}

no_quoted_includes() {
	! grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$src"
}

# Every header named in the -MD file, system ones included, lies outside the
# repository: nothing was read from include/ or src/, by any path.
headers_outside_repo() {
	local d=${obj%.o}.d bad=0 word
	[ -s "$d" ] || { echo "no dependency file $d (was it built with -MD?)"; return 1; }
	for word in $(sed -e 's/\\$//' -e 's/^[^:]*://' "$d"); do
		[[ $word == *: ]] && continue # -MP's phony targets
		if ours "$word"; then
			echo "read $word"
			bad=1
		fi
	done
	return $bad
}

# The recorded commands name no include directory, library, object or source
# of ours. (Their first word is the compiler.)
commands_clean() {
	local f bad=0 word next=""
	for f in "$obj.cmd" "$bin.cmd"; do
		[ -s "$f" ] || { echo "no recorded command $f"; bad=1; continue; }
		for word in $(cut -d' ' -f2- "$f"); do
			local path=""
			if [ -n "$next" ]; then
				path=$word
				next=""
			else
				case "$word" in
				-I | -isystem | -iquote | -idirafter | -include | -L) next=1 ;;
				-I* | -L*) path=${word:2} ;;
				-isystem*) path=${word#-isystem} ;;
				-iquote*) path=${word#-iquote} ;;
				-idirafter*) path=${word#-idirafter} ;;
				-la2m*) echo "$f: links $word"; bad=1 ;;
				-*) ;;
				*) path=$word ;;
				esac
			fi
			if [ -n "$path" ] && ours "$path"; then
				echo "$f: names $word"
				bad=1
			fi
		done
	done
	return $bad
}

# The global symbols liba2m defines (text, data, bss, read-only, weak).
lib_symbols() {
	nm -g --defined-only "$lib" 2>/dev/null | awk 'NF == 3 { print $3 }' | sort -u
}

# FILE's global symbols, defined or needed, that liba2m defines or that carry
# our prefix.
shared_symbols() {
	local file=$1 mine
	mine=$(nm -g "$file" | awk '{ print $NF }' | sed 's/@.*//' | sort -u)
	comm -12 <(printf '%s\n' "$mine") <(lib_symbols)
	printf '%s\n' "$mine" | grep -E '^_?a2m_'
}

no_symbol_of_ours() {
	[ -s "$lib" ] || { echo "no $lib to compare with"; return 1; }
	local hits
	hits=$(shared_symbols "$1" | sort -u)
	[ -z "$hits" ] || { printf '%s\n' "$hits"; return 1; }
}

# The binary asks the dynamic loader for no library of ours.
no_library_of_ours() {
	local needed
	needed=$(readelf -d "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
	if printf '%s\n' "$needed" | grep -i a2m; then
		return 1
	fi
	[ -n "$needed" ] || { echo "readelf found no NEEDED entry in $bin"; return 1; }
}

check "the source includes only <system> headers" no_quoted_includes
check "no header the compiler read is in this repository" headers_outside_repo
check "the commands that built it name nothing of this repository" commands_clean
check "the object defines and needs no symbol of liba2m" no_symbol_of_ours "$obj"
check "the binary holds no symbol of liba2m" no_symbol_of_ours "$bin"
check "the binary loads no library of ours" no_library_of_ours

echo "$passed/$total checks passed"
[ "$passed" -eq "$total" ]
