#!/usr/bin/env bash
# manpage.sh A2M_BINARY VERSION — writes the a2m(1) man page on stdout, made
# from the same text as `a2m --help` and each `a2m CMD --help`, so the page
# and the help never disagree (make builds it as build/a2m.1).
set -euo pipefail
a2m=$1
version=$2

# The help text as roff that keeps every line as written: backslashes
# escaped, and a line that starts with '.' or "'" made plain text.
verbatim() {
	printf '.nf\n'
	sed -e 's/\\/\\e/g' -e "s/^\\([.']\\)/\\\\\\&\\1/"
	printf '.fi\n'
}

# The commands `a2m --help` lists, in its order ("session list" and
# "session close" are one command, session).
commands=$("$a2m" --help | sed -n 's/^  \([a-z][a-z]*\)  .*/\1/p' | uniq)
[ -n "$commands" ] || { echo "manpage.sh: '$a2m --help' lists no commands" >&2; exit 1; }

cat <<ROFF
.TH A2M 1 "" "a2m $version" "User Commands"
.SH NAME
a2m \\- an Agent-to-Memory (A2M 0.1) memory server, its client, and its tools
.SH SYNOPSIS
.B a2m
.I command
.RI [ options ]
.SH DESCRIPTION
A2M puts an agent's memory behind a JSON-RPC 2.0 boundary, so agents from any
framework share one store over in-process calls, stdio or HTTP.
.B a2m serve
runs the server on an SQLite file or in memory;
.B a2m mcp
makes it an MCP server; the client commands talk to a running server.
The text below is what
.B a2m \\-\\-help
and each
.BI "a2m " command " \\-\\-help"
print.
.PP
ROFF
"$a2m" --help | verbatim
printf '.SH COMMANDS\n'
for c in $commands; do
	printf '.SS "a2m %s"\n' "$c"
	"$a2m" "$c" --help | verbatim
done
cat <<ROFF
.SH EXIT STATUS
0 on success, 1 on a protocol or runtime error (the message is on standard
error), 2 on a usage error.
.SH ENVIRONMENT
.TP
.B A2M_DB
the SQLite file of
.B a2m serve
and of an embedded store, when
.B \\-\\-db
is not given (default ./a2m.db).
.TP
.B A2M_URL
the server of the client commands (default http://127.0.0.1:8778/).
.TP
.B A2M_TOKEN
the bearer token the client commands send over HTTP.
.SH SEE ALSO
The A2M 0.1 specification; docs/ in the a2m source tree.
ROFF
