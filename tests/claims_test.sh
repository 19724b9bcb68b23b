#!/usr/bin/env bash
# claims_test.sh CONFORMANCE_BINARY — the claims register and its tool
# (conformance/claims.json, conformance/claims.py; docs/CLAIMS.md).
#
# First the suite's --list, which the tool reads; then the tool itself, on a
# small specification, suite and tests this script writes, with registers
# made for them: what counts as a keyword sentence, the documented
# normalisation and hash (recomputed here with sha256sum, not taken from the
# tool), and that a gap, a reworded sentence, a moved one, a check or test
# that does not exist and a malformed entry each fail the run.
#
# Then the real register against the real specification, which is not ours
# to copy into the repository: it is read from $A2M_SPEC, else from
# ../shared/reference/a2m-0.1.md beside the repository (or beside the main
# worktree when this is a git worktree); an $A2M_SPEC that names no file
# fails. When the specification is nowhere, the register's own entries are
# still checked (every check and test it names exists), the run says loudly
# that gaps and stale entries went unchecked, and it fails only when
# A2M_REQUIRE_SPEC=1 asks it to.
# Prints "ok"/"FAIL" per check and "N passed, M failed".
set -u
. "$(dirname "$0")/lib.sh"
here=$(cd "$(dirname "$0")/.." && pwd)
suite=$(realpath "$1")
tool="$here/conformance/claims.py"
d=$(mktemp -d /tmp/a2m-claims.XXXXXX)
trap 'rm -rf "$d"' EXIT

# claims ARGS...: runs the tool with $suite and $root; sets out (stdout and
# stderr) and status.
root=$here
claims() {
	out=$(python3 "$tool" --suite "$suite" --root "$root" "$@" 2>&1)
	status=$?
}
# The suite's list, which the tool reads for the names that exist.
list=$("$suite" --list); status=$?
expect "a2m-conformance --list exits 0" "$status" 0
expect "a2m-conformance --list names each check once" "$(sort <<<"$list" | uniq -d)" ""
expect "a2m-conformance --list prints GROUP: CHECK lines" \
	"$(grep -cvE '^[a-z/-]+: [^ ]' <<<"$list")" 0

# --- the tool, on a tree of our own: a suite, tests and a spec ---
# The made-up suite and tests stand apart from the real ones, so renaming a
# real test cannot break these checks of the tool.
real_suite=$suite
suite="$d/suite.sh"
printf '#!/bin/sh\n[ "$1" = --list ] && printf "%%s\\n" "rpc: a batch is refused" "stdio: EOF ends it"\n' \
	>"$suite"
chmod +x "$suite"
root="$d/root"
mkdir -p "$root/tests"
cat >"$d/root/tests/test_made_up.c" <<'C'
static void test_refuses(void) { }
static void helper_not_registered(void) { }
static const test_case tests[] = { TEST(test_refuses), {NULL, NULL} };
C
cat >"$d/root/tests/made_up.sh" <<'SH'
expect "logs go to stderr" "$a" "$b"
contains "client: READ_ONLY exits 1" "$c" d
SH
# h TEXT: the register's hash of a normalised sentence, by sha256sum.
h() { printf '%s' "$1" | sha256sum | cut -c1-16; }

# A specification of our own, with every kind of place a keyword goes.
cat >"$d/spec.md" <<'SPEC'
# A made-up protocol, version 0.0

The key words **MUST** and **MAY** are to be read as RFC 2119 says.

## 1. Things

A server **MUST** answer every
call, e.g. `ping`. It *MAY* refuse
the rest with `-32000`.
A client must not care; lower case is English.

- **MUST NOT** crash on `MUST` inside code.

| Field | Notes |
|---|---|
| `name` | A string. Servers **SHOULD** keep it short. |

```json
{"note": "A MUST in a code block is not a sentence of the spec"}
```

> A quoted sentence **SHOULD** count too.

### 1.1 More

Closing stdin **MUST** end the server.
SPEC
s_def=$(h "The key words MUST and MAY are to be read as RFC 2119 says.")
s_answer=$(h "A server MUST answer every call, e.g. ping.")
s_refuse=$(h "It MAY refuse the rest with -32000.")
s_crash=$(h "MUST NOT crash on MUST inside code.")
s_row=$(h "name | A string. Servers SHOULD keep it short.")
s_quote=$(h "A quoted sentence SHOULD count too.")
s_stdin=$(h "Closing stdin MUST end the server.")

# register FILE ENTRY...: writes a register of the entries (JSON objects).
register() {
	local f=$1
	shift
	{
		printf '{"claims": ['
		local sep=
		for e in "$@"; do
			printf '%s\n%s' "$sep" "$e"
			sep=,
		done
		printf ']}\n'
	} >"$f"
}
full=(
	"{\"hash\": \"$s_def\", \"section\": \"0\", \"prose\": \"defines the keywords\"}"
	"{\"hash\": \"$s_answer\", \"section\": \"1\", \"conformance\": [\"rpc: a batch is refused\"]}"
	"{\"hash\": \"$s_refuse\", \"section\": \"1\", \"offline\": [\"tests/test_made_up.c: test_refuses\"]}"
	"{\"hash\": \"$s_crash\", \"section\": \"1\", \"offline\": [\"tests/made_up.sh: logs go to stderr\"]}"
	"{\"hash\": \"$s_row\", \"section\": \"1\", \"client\": {\"cli\": [\"tests/made_up.sh: client: READ_ONLY exits 1\"], \"c\": [\"tests/test_made_up.c: test_refuses\"]}}"
	"{\"hash\": \"$s_quote\", \"section\": \"1\", \"unverifiable\": \"nothing here to test it with\"}"
	"{\"hash\": \"$s_stdin\", \"section\": \"1.1\", \"conformance\": [\"stdio: EOF ends it\"]}"
)

register "$d/full.json" "${full[@]}"
claims "$d/spec.md" --register "$d/full.json" --show
expect "claims: a made-up spec has seven keyword sentences" "$(grep -c '^§' <<<"$out")" 7
lacks "claims: a keyword in a code block is no sentence" "$out" "code block"
lacks "claims: lower-case must is no keyword" "$out" "lower case"
contains "claims: a sentence spanning lines is one, e.g. does not end it" "$out" \
	"§1 line 7 [$s_answer] A server MUST answer every call, e.g. ping."
contains "claims: emphasis and code markup are stripped" "$out" "[$s_refuse] It MAY refuse the rest with -32000."
contains "claims: a list item is read, MUST inside code is no keyword of its own" "$out" "[$s_crash]"
contains "claims: a table row is one unit, its cells joined by ' | '" "$out" \
	"[$s_row] name | A string. Servers SHOULD keep it short."
contains "claims: a block quote is read" "$out" "[$s_quote]"
contains "claims: a subsection's number is its section" "$out" "§1.1 line 26 [$s_stdin]"

claims "$d/spec.md" --register "$d/full.json"
expect "claims: a complete register passes" "$status" 0
contains "claims: it counts each disposition" "$out" \
	"conformance 2, offline 2, client 1, prose 1, unverifiable 1"

# A gap: one sentence without an entry.
register "$d/gap.json" "${full[@]:0:6}"
claims "$d/spec.md" --register "$d/gap.json"
expect "claims: a missing disposition fails" "$status" 1
contains "claims: the gap names section, line and hash" "$out" "GAP §1.1 line 26 [$s_stdin]"
claims "$d/spec.md" --register "$d/gap.json" --stubs
contains "claims: --stubs offers an entry for the gap" "$out" "\"hash\": \"$s_stdin\", \"section\": \"1.1\""

# A reworded sentence: its entry is stale, and the new wording is a gap.
sed 's/Closing stdin \*\*MUST\*\* end the server\./Closing stdin **MUST** stop the server./' \
	"$d/spec.md" >"$d/reworded.md"
claims "$d/reworded.md" --register "$d/full.json"
expect "claims: a reworded sentence fails" "$status" 1
contains "claims: the old wording's entry is stale" "$out" "STALE entry $s_stdin (§1.1, conformance)"
contains "claims: the stale entry names the unmatched sentence" "$out" \
	"unmatched in that section: line 26 [$(h "Closing stdin MUST stop the server.")]"
# Markup and line breaks are not wording: the same sentence re-wrapped and
# bolded differently keeps its hash.
sed 's/Closing stdin \*\*MUST\*\* end the server\./Closing   stdin MUST\nend the `server`./' \
	"$d/spec.md" >"$d/rewrapped.md"
claims "$d/rewrapped.md" --register "$d/full.json"
expect "claims: re-wrapping and markup change no hash" "$status" 0

# A sentence moved to another section.
sed 's/^### 1.1 More/### 1.2 More/' "$d/spec.md" >"$d/moved.md"
claims "$d/moved.md" --register "$d/full.json"
expect "claims: a moved sentence fails" "$status" 1
contains "claims: the move is named" "$out" "MOVED entry $s_stdin: the register says §1.1, the sentence is in §1.2"

# Names that do not exist.
bad=("${full[@]}")
bad[1]="{\"hash\": \"$s_answer\", \"section\": \"1\", \"conformance\": [\"rpc: a check nobody wrote\"]}"
register "$d/bad-check.json" "${bad[@]}"
claims "$d/spec.md" --register "$d/bad-check.json"
expect "claims: a conformance check that does not exist fails" "$status" 1
contains "claims: the missing check is named" "$out" 'no conformance check "rpc: a check nobody wrote"'
bad=("${full[@]}")
bad[2]="{\"hash\": \"$s_refuse\", \"section\": \"1\", \"offline\": [\"tests/test_made_up.c: helper_not_registered\"]}"
bad[3]="{\"hash\": \"$s_crash\", \"section\": \"1\", \"offline\": [\"tests/made_up.sh: a label nobody wrote\", \"tests/gone.sh: x\"]}"
register "$d/bad-test.json" "${bad[@]}"
claims "$d/spec.md" --register "$d/bad-test.json"
expect "claims: an offline test that does not exist fails" "$status" 1
contains "claims: a C test must be registered" "$out" \
	"tests/test_made_up.c does not register helper_not_registered with its harness"
contains "claims: a shell check must be labelled" "$out" \
	'tests/made_up.sh has no check labelled "a label nobody wrote"'
contains "claims: a test file must exist" "$out" "tests/gone.sh does not exist"
bad=("${full[@]}")
bad[4]="{\"hash\": \"$s_row\", \"section\": \"1\", \"client\": {\"python\": [\"tests/made_up.sh: client: READ_ONLY exits 1\"]}}"
bad[5]="{\"hash\": \"$s_quote\", \"section\": \"1\", \"prose\": \"a definition\", \"unverifiable\": \"and untestable\"}"
register "$d/bad-shape.json" "${bad[@]}"
claims "$d/spec.md" --register "$d/bad-shape.json"
expect "claims: malformed entries fail" "$status" 1
contains "claims: only our clients may be named" "$out" 'unknown client "python"'
contains "claims: one disposition per entry" "$out" "needs exactly one disposition"
# Without a spec, the entries alone are still checked.
claims --entries-only --register "$d/bad-check.json"
expect "claims: --entries-only still fails on a missing check" "$status" 1
claims --entries-only --register "$d/full.json"
expect "claims: --entries-only passes good entries" "$status" 0

# --- the real register against the real specification ---
suite=$real_suite
root=$here
spec=${A2M_SPEC:-}
if [ -n "$spec" ] && [ ! -f "$spec" ]; then
	fail "\$A2M_SPEC names the specification" "no file $spec"
elif [ -z "$spec" ]; then
	for base in "$here" "$(dirname "$(git -C "$here" rev-parse --path-format=absolute \
		--git-common-dir 2>/dev/null || echo "$here/.git")")"; do
		if [ -f "$base/../shared/reference/a2m-0.1.md" ]; then
			spec="$base/../shared/reference/a2m-0.1.md"
			break
		fi
	done
fi
if [ -n "$spec" ] && [ -f "$spec" ]; then
	claims "$spec"
	printf '%s\n' "$out" | sed 's/^/    /'
	expect "the register dispositions every keyword sentence of $(basename "$spec")" "$status" 0
else
	claims --entries-only
	printf '%s\n' "$out" | sed 's/^/    /'
	expect "every check and test the register names exists" "$status" 0
	echo "skip the register against the specification: a2m-0.1.md is not at \$A2M_SPEC" \
		"or ../shared/reference/, so gaps and stale entries were NOT checked"
	if [ "${A2M_REQUIRE_SPEC:-0}" = 1 ]; then
		fail "the specification is present (A2M_REQUIRE_SPEC=1)" "not found"
	fi
fi

finish
