#!/usr/bin/env bash
# library_test.sh — liba2m as a user meets it: the shared library exports
# the functions the headers mark A2M_API and nothing else, under the SONAME
# the version gives; `make install` puts every file where PREFIX and DESTDIR
# say and `make uninstall` takes them away; a program built against the
# installed copy with pkg-config alone (shared and static) opens a store,
# talks to it in-process and to a server over stdio. Run from the top of
# the tree after `make`. Prints "ok"/"FAIL" per check and "N passed, M failed".
set -u
. "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/.."
d=$(mktemp -d /tmp/a2m-library.XXXXXX)
trap 'rm -rf "$d"' EXIT

part() { sed -n "s/^#define A2M_VERSION_$1 *\([0-9][0-9]*\)$/\1/p" include/a2m.h; }
major=$(part MAJOR)
minor=$(part MINOR)
patch=$(part PATCH)
version=$major.$minor.$patch
[ "$major" = 0 ] && soname=liba2m.so.$major.$minor || soname=liba2m.so.$major

# --- the shared library's boundary ---
so=build/liba2m.so.$version
[ -f "$so" ] && ok "build/liba2m.so.$version is built" || fail "the shared library is built" "no $so"
expect "the SONAME is $soname" "$(readelf -d "$so" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')" "$soname"
expect "liba2m.so links to the SONAME" "$(readlink build/liba2m.so)" "$soname"
expect "the SONAME links to the file" "$(readlink "build/$soname")" "liba2m.so.$version"
exported=$(nm -D --defined-only "$so" | awk '$2 ~ /^[TDBRV]$/ {print $3}' | sort)
declared=$(sed -n 's/^A2M_API[^(]*[ *]\([a-z_0-9]*\)(.*/\1/p' include/a2m.h include/a2m_client.h | sort)
expect "the headers declare the API" "$([ "$(echo "$declared" | wc -l)" -gt 30 ] && echo yes)" yes
extra=$(comm -23 <(echo "$exported") <(echo "$declared") | tr '\n' ' ')
missing=$(comm -13 <(echo "$exported") <(echo "$declared") | tr '\n' ' ')
expect "the library exports nothing the headers do not declare" "$extra" ""
expect "every function the headers declare is exported" "$missing" ""
hooks=$(nm "$so" build/liba2m.a 2>/dev/null | grep -c -e '_for_tests' -e 'a2m_analyze_slow_path')
expect "the release libraries hold no test hooks" "$hooks" 0
expect "the tests' library holds them" \
	"$(nm build/liba2m-test.a 2>/dev/null | grep -c ' T a2m_segments_merge_factor_for_tests')" 1

# --- the conformance suite links nothing of the server (DECISIONS 025) ---
bad=$(grep -h '^#include "' conformance/*.c conformance/*.h |
	grep -v -e '"suite.h"' -e '"a2m_client.h"' -e '"client/client_json.h"' \
		-e '"util/buf.h"' -e '"util/clock.h"' -e '"util/curl_api.h"' | sort -u | tr '\n' ' ')
expect "the conformance suite includes only the client's headers" "$bad" ""
server=$(nm --defined-only build/a2m-conformance | awk '{print $3}' |
	grep -E '^a2m_(open|handle|stack_|store_|rpc_|method_|scorer|mem_|sqlite|protocol|http_start|stdio_serve)' |
	head -5 | tr '\n' ' ')
expect "a2m-conformance holds no server code" "$server" ""
lacks "a2m-conformance does not link SQLite" "$(ldd build/a2m-conformance)" "libsqlite3"
contains "a2m conformance runs a2m-conformance" "$(build/a2m conformance --help)" "conformance"

# --- make install and uninstall ---
prefix=$d/prefix
if make -s install PREFIX="$prefix" >"$d/install.log" 2>&1; then
	ok "make install PREFIX=... succeeds"
else
	fail "make install PREFIX=... succeeds" "$(tail -5 "$d/install.log")"
fi
for f in bin/a2m bin/a2m-conformance lib/liba2m.a "lib/liba2m.so.$version" include/a2m.h include/a2m_client.h \
	lib/pkgconfig/a2m.pc share/man/man1/a2m.1; do
	[ -f "$prefix/$f" ] && ok "installed $f" || fail "installed $f" "missing"
done
expect "installed $soname links to the file" "$(readlink "$prefix/lib/$soname")" "liba2m.so.$version"
expect "installed liba2m.so links to the SONAME" "$(readlink "$prefix/lib/liba2m.so")" "$soname"
expect "the installed binary runs" "$("$prefix/bin/a2m" --version | cut -d' ' -f2)" "$version"
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
expect "pkg-config knows the version" "$(pkg-config --modversion a2m)" "$version"
case "$(pkg-config --cflags a2m)" in
*"$prefix/include"*) ok "pkg-config's cflags name the installed headers" ;;
*) fail "pkg-config's cflags name the installed headers" "$(pkg-config --cflags a2m)" ;;
esac
man_text=$(MANWIDTH=100 man -l "$prefix/share/man/man1/a2m.1" 2>&1)
case "$man_text" in
*"a2m serve"*"--db PATH"*"a2m mcp"*) ok "the man page renders every command's help" ;;
*) fail "the man page renders every command's help" "${man_text:0:200}" ;;
esac
warnings=$(groff -man -Tutf8 -ww -z "$prefix/share/man/man1/a2m.1" 2>&1 | head -3)
expect "the man page has no roff warnings" "$warnings" ""
help=$("$prefix/bin/a2m" serve --help | sed -n 's/^  \(--[a-z-]*\).*/\1/p' | sort -u)
page=$(printf '%s\n' "$man_text" | sed -n 's/^ *\(--[a-z-]*\).*/\1/p' | sort -u)
expect "every flag of a2m serve --help is in the man page" "$(comm -23 <(echo "$help") <(echo "$page"))" ""

# --- a program built against the installed copy with pkg-config alone ---
cat >"$d/app.c" <<'C'
#include <stdio.h>
#include <string.h>
#include <a2m.h>
#include <a2m_client.h>

int main(int argc, char **argv)
{
	if (a2m_libversion_number() != A2M_VERSION_NUMBER ||
	    strcmp(a2m_libversion(), A2M_VERSION) != 0)
		return printf("version: library %s, header %s\n", a2m_libversion(), A2M_VERSION), 1;
	a2m_config *cfg;
	a2m *db;
	char *err = NULL, *reply = NULL;
	if (a2m_config_new(&cfg) != A2M_OK || a2m_config_set(cfg, "engine", "memory") != A2M_OK)
		return puts("config"), 1;
	if (a2m_config_set(cfg, "no_such_option", "1") != A2M_MISUSE)
		return puts("an unknown option was taken"), 1;
	if (a2m_config_set_int(cfg, "max_recall_limit", 0) != A2M_RANGE)
		return puts("a limit of 0 was taken"), 1;
	int rc = a2m_open(cfg, &db, &err);
	a2m_config_free(cfg);
	if (rc != A2M_OK)
		return printf("open: %s: %s\n", a2m_strerror(rc), err), 1;
	const char *msg = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"memory/remember\","
			  "\"params\":{\"records\":[{\"content\":\"installed\"}]}}";
	if (a2m_handle(db, msg, A2M_NUL_TERMINATED, &reply) != A2M_OK || !strstr(reply, "\"ids\""))
		return printf("remember: %s\n", reply ? reply : "no reply"), 1;
	a2m_free(reply);
	msg = "{\"jsonrpc\":\"2.0\",\"method\":\"memory/describe\"}";
	if (a2m_handle(db, msg, strlen(msg), &reply) != A2M_OK || reply)
		return puts("a notification was answered"), 1;
	a2m_close(db);
	/* The client side: the installed server, over stdio. */
	char *server[] = {argv[1], "serve", "--memory", NULL};
	a2m_client *c;
	if (argc < 2 || a2m_client_spawn_stdio(server, &c) != A2M_CLIENT_OK)
		return printf("spawn: %s\n", a2m_client_spawn_errmsg()), 1;
	rc = a2m_client_request(c, "memory/describe", "{\"protocol\":\"a2m/0.1\"}", &reply);
	if (rc != A2M_CLIENT_OK || !strstr(reply, "\"protocol\":\"a2m/0.1\""))
		return printf("describe: %s\n", rc ? a2m_client_errmsg(c) : reply), 1;
	a2m_free(reply);
	a2m_client_free(c);
	puts("app ok");
	return 0;
}
C
if cc -std=c11 -Wall -Werror $(pkg-config --cflags a2m) "$d/app.c" -o "$d/app" \
	$(pkg-config --libs a2m) 2>"$d/cc.log"; then
	ok "a program builds against the installed shared library with pkg-config"
	expect "it links the SONAME" "$(readelf -d "$d/app" | sed -n 's/.*NEEDED.*\[\(liba2m[^]]*\)\]/\1/p')" "$soname"
	expect "it runs against the installed copy" \
		"$(LD_LIBRARY_PATH=$prefix/lib "$d/app" "$prefix/bin/a2m" 2>&1)" "app ok"
else
	fail "a program builds against the installed shared library with pkg-config" "$(head -5 "$d/cc.log")"
fi
if cc -std=c11 -Wall -Werror $(pkg-config --cflags a2m) "$d/app.c" -o "$d/app-static" \
	"$prefix/lib/liba2m.a" $(pkg-config --static --libs a2m | sed 's/-la2m//') 2>"$d/cc.log"; then
	ok "a program links the installed static library with pkg-config --static"
	expect "the static program runs" "$("$d/app-static" "$prefix/bin/a2m" 2>&1)" "app ok"
else
	fail "a program links the installed static library with pkg-config --static" "$(head -5 "$d/cc.log")"
fi

if make -s uninstall PREFIX="$prefix" >"$d/uninstall.log" 2>&1; then
	expect "make uninstall leaves no file behind" "$(find "$prefix" -type f -o -type l | wc -l)" 0
else
	fail "make uninstall succeeds" "$(tail -5 "$d/uninstall.log")"
fi
# A packager's staging: DESTDIR prefixes every path, the files name PREFIX.
make -s install DESTDIR="$d/stage" PREFIX=/usr >"$d/stage.log" 2>&1
[ -x "$d/stage/usr/bin/a2m" ] && ok "make install DESTDIR=... stages under DESTDIR" ||
	fail "make install DESTDIR=... stages under DESTDIR" "$(tail -3 "$d/stage.log")"
expect "the staged a2m.pc names PREFIX, not DESTDIR" \
	"$(sed -n 's/^prefix=//p' "$d/stage/usr/lib/pkgconfig/a2m.pc")" /usr
make -s uninstall DESTDIR="$d/stage" PREFIX=/usr >/dev/null 2>&1
expect "make uninstall DESTDIR=... removes what was staged" \
	"$(find "$d/stage" -type f -o -type l | wc -l)" 0

finish
