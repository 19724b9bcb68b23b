# lib.sh — what the shell test scripts share: the check helpers and the
# closing line. Source it, then call the helpers; end with `finish`.
#
#   ok NAME                      a check that passed
#   fail NAME WHY                a check that failed, and why
#   expect NAME ACTUAL WANTED    equal strings
#   contains NAME TEXT NEEDLE    NEEDLE appears in TEXT
#   lacks NAME TEXT NEEDLE       NEEDLE does not appear in TEXT
#   matches NAME TEXT REGEX      some line of TEXT matches the extended REGEX
#   finish                       prints "N passed, M failed"; exits 1 on a failure
#
# Each check prints one line, "ok   NAME" or "FAIL NAME: WHY", which is what
# scripts/run-tests.sh shows of a failed suite.
passed=0
failed=0

ok() { passed=$((passed + 1)); echo "ok   $1"; }
fail() { failed=$((failed + 1)); echo "FAIL $1: $2"; }
expect() { if [ "$2" = "$3" ]; then ok "$1"; else fail "$1" "got '$2', want '$3'"; fi; }
contains() { case "$2" in *"$3"*) ok "$1" ;; *) fail "$1" "'$3' not in: ${2:0:400}" ;; esac; }
lacks() { case "$2" in *"$3"*) fail "$1" "'$3' in: ${2:0:400}" ;; *) ok "$1" ;; esac; }
matches() {
	if printf '%s\n' "$2" | grep -Eq "$3"; then ok "$1"; else fail "$1" "no line matches /$3/ in: ${2:0:400}"; fi
}
finish() {
	echo "$passed passed, $failed failed"
	[ "$failed" -eq 0 ] || exit 1
	exit 0
}
