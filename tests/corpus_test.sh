#!/usr/bin/env bash
# corpus_test.sh A2M_BINARY — `a2m corpus` from the outside, through the
# protocol: a folder the test makes (Markdown with nested headings, text, C
# and Python, a binary file, a file that is not UTF-8, excluded files and
# directories, a symbolic link), what recall finds in it (path, heading
# path, lines, uri), every write refused, a restart reading only what
# changed, a restart after a kill -9 in the middle of indexing, and edits
# while serving with --watch over HTTP (append, modify, delete, rename, new
# directories). Prints "ok"/"FAIL" per check and "N passed, M failed".
#
# Nothing asserts on elapsed time: a wait for a change to show only bounds
# how long a broken watcher may hang the test.
set -u
. "$(dirname "$0")/lib.sh"
a2m=$(realpath "$1")
d=$(mktemp -d /tmp/a2m-corpus.XXXXXX)
d=$(realpath "$d")
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
	rm -rf "$d"
}
trap cleanup EXIT

c=$d/docs  # the corpus
mkdir -p "$c/src" "$c/build" "$c/.git" "$c/notes"
cat >"$c/guide.md" <<'MD'
# Guide

An introduction to the guide.

## Install

Build it with make.

### Debian

Install the xylophone package first,
then run the tests.

## Use

Start the server.
MD
printf 'First paragraph of notes about walruses.\n\nSecond paragraph, about okapis.\n' >"$c/notes/plain.txt"
cat >"$c/src/tool.c" <<'C'
#include <stdio.h>

/* Frobnicates its argument. */
static int frobnicate(int x)
{
	int y = x * 2;

	return y + 1;
}
C
cat >"$c/src/tool.py" <<'PY'
def quokka_count(herd):
    total = 0

    for q in herd:
        total += q
    return total
PY
printf 'binaryword\0\1\2\3 more binaryword\n' >"$c/image.bin"
printf 'latinword caf\xe9\n' >"$c/latin1.txt"
printf 'excludedword in a build output\n' >"$c/build/out.md"
printf 'logword\n' >"$c/debug.log"
printf '[core] gitword\n' >"$c/.git/config"
printf 'outsideword\n' >"$d/outside.txt"
ln -s "$d/outside.txt" "$c/link.txt"

idx=$d/index.db
excl=(--exclude build/ --exclude '*.log')

# rpc ID METHOD PARAMS: one request line.
rpc() { printf '{"jsonrpc":"2.0","id":%s,"method":"%s","params":%s}\n' "$1" "$2" "$3"; }

# ask "REQUEST LINES" ARGS...: runs `a2m corpus ARGS` on the requests; the
# replies in $out, stderr in $err, the exit status in $status.
ask() {
	local input=$1
	shift
	out=$(printf '%s' "$input" | "$a2m" corpus "$@" 2>"$d/err")
	status=$?
	err=$(cat "$d/err")
}

# py JSON EXPR: EXPR of the JSON text in r, printed (the system's python3
# when there is one: a version manager's shim costs a fraction of a second
# per call).
python=python3
[ -x /usr/bin/python3 ] && python=/usr/bin/python3
py() { printf '%s' "$1" | "$python" -c 'import json, sys; r = json.load(sys.stdin); print(eval(sys.argv[1]))' "$2"; }

# line N: the Nth reply of $out.
line() { printf '%s\n' "$out" | sed -n "$1p"; }

# --- the command line ---
out=$("$a2m" corpus --help); expect "corpus --help exits 0" $? 0
for flag in "--index PATH" "--exclude PATTERN" "--exclude-from FILE" "--watch" "--chunk-size" \
	"--rebuild" "--http [ADDR:]PORT" "--tokens FILE" "--max-line"; do
	contains "corpus --help documents $flag" "$out" "$flag"
done
contains "a2m --help lists corpus" "$("$a2m" --help)" "  corpus "
for bad in "" "--chunk-size 10 $c" "--chunk-size 1x $c" "--bogus $c" "$c $c" \
	"--index-only --watch $c" "--tokens $d/t $c" "--http 0 --max-line 100 $c" "--exclude"; do
	err=$("$a2m" corpus $bad 2>&1 >/dev/null </dev/null); status=$?
	expect "corpus $bad exits 2" "$status" 2
	expect "corpus $bad explains in one line" "$(printf '%s\n' "$err" | grep -c .)" 1
done
"$a2m" corpus --index-only --index "$d/order.db" --http "$c" </dev/null >/dev/null 2>"$d/err"
expect "the folder may follow --http, whose address is optional" $? 0
"$a2m" corpus "$d/no-such-folder" </dev/null >/dev/null 2>"$d/err"
expect "a missing folder exits 1" $? 1
contains "a missing folder is named" "$(cat "$d/err")" "no-such-folder"

# --- the first index ---
ask "" --index-only --log-level info --index "$idx" "${excl[@]}" "$c"
expect "--index-only exits 0" "$status" 0
expect "nothing on stdout with --index-only" "$out" ""
contains "the first index reads the four text files, skips the binary and the non-UTF-8 one" \
	"$err" "4 files (4 read, 0 unchanged), 0 removed, 2 skipped"
chunks=$(printf '%s\n' "$err" | sed -n 's/.*skipped; \([0-9]*\) chunks added.*/\1/p')
lacks "the index stays outside the folder with --index" "$(ls -A "$c")" ".a2m-corpus"

# --- what a client sees ---
reqs=$(rpc 1 memory/describe '{}'
	rpc 2 memory/recall '{"query":"xylophone"}'
	rpc 3 memory/recall '{"query":"frobnicate"}'
	rpc 4 memory/recall '{"query":"quokka_count"}'
	rpc 5 memory/recall '{"query":"okapis"}'
	rpc 6 memory/timeline '{"limit":1000}'
	rpc 7 memory/recall '{"query":"binaryword excludedword logword gitword outsideword latinword"}'
	rpc 8 memory/recall '{"query":"install","where":{"path":"guide.md"}}')
ask "$reqs" --index "$idx" "${excl[@]}" "$c"
expect "serving exits 0 at end of input" "$status" 0
r=$(line 1)
expect "describe declares core, external and prompt" "$(py "$r" 'r["result"]["capabilities"]')" \
	"['core', 'external', 'prompt']"
expect "describe says read_only" "$(py "$r" 'r["result"]["read_only"]')" "True"
expect "describe names the server a2m-corpus" "$(py "$r" 'r["result"]["name"]')" "a2m-corpus"
r=$(line 2)
expect "recall finds the Markdown chunk, one" "$(py "$r" 'len(r["result"]["records"])')" 1
rec='r["result"]["records"][0]'
expect "its content is the lines of its section" "$(py "$r" "$rec[\"content\"]")" \
	"$(printf '### Debian\n\nInstall the xylophone package first,\nthen run the tests.')"
expect "its metadata: path, heading path, lines" "$(py "$r" "json.dumps($rec[\"metadata\"], sort_keys=True)")" \
	'{"chunk": 2, "first_line": 9, "headings": ["Guide", "Install", "Debian"], "last_line": 12, "path": "guide.md"}'
expect "its uri points at the file and the lines" "$(py "$r" "$rec[\"uri\"]")" "file://$c/guide.md#L9-L12"
expect "its group is its file" "$(py "$r" "$rec[\"group\"]")" "guide.md"
expect "its media type is Markdown's" "$(py "$r" "$rec[\"media_type\"]")" "text/markdown"
r=$(line 3)
expect "recall finds the C function" "$(py "$r" "$rec[\"metadata\"][\"path\"], $rec[\"metadata\"][\"first_line\"], $rec[\"metadata\"][\"last_line\"], $rec[\"media_type\"]")" \
	"('src/tool.c', 1, 9, 'text/x-c')"
r=$(line 4)
expect "recall finds the Python function, whole across its blank lines" \
	"$(py "$r" "$rec[\"metadata\"][\"path\"], $rec[\"metadata\"][\"first_line\"], $rec[\"metadata\"][\"last_line\"], $rec[\"media_type\"]")" \
	"('src/tool.py', 1, 6, 'text/x-python')"
r=$(line 5)
expect "recall finds the text file's paragraph" "$(py "$r" "$rec[\"metadata\"][\"path\"], $rec[\"uri\"]")" \
	"('notes/plain.txt', 'file://$c/notes/plain.txt#L1-L3')"
r=$(line 6)
expect "timeline holds every chunk" "$(py "$r" 'len(r["result"]["records"])')" "$chunks"
expect "records carry no tier: tiers is not declared" \
	"$(py "$r" 'sum("tier" in x for x in r["result"]["records"])')" 0
r=$(line 7)
expect "binary, non-UTF-8, excluded, .git and linked files are not indexed" \
	"$(py "$r" 'len(r["result"]["records"])')" 0
r=$(line 8)
expect "where on the path keeps to one file" "$(py "$r" 'sorted(set(x["metadata"]["path"] for x in r["result"]["records"]))')" \
	"['guide.md']"

# The command-line client shows where a chunk is.
shown=$("$a2m" recall --limit 1 xylophone --stdio "$a2m" corpus --index "$idx" "${excl[@]}" "$c" 2>&1)
matches "a2m recall shows a chunk's file and lines" "$shown" "^[0-9.]+  file://$c/guide.md#L9-L12  ### Debian"

# --- every write refused ---
id=$(py "$(line 2)" "$rec[\"id\"]")
reqs=$(rpc 1 memory/remember '{"records":[{"content":"new"}]}'
	rpc 2 memory/remember "{\"records\":[{\"content\":\"new\",\"id\":\"$id\"}]}"
	rpc 3 memory/forget "{\"ids\":[\"$id\"]}"
	rpc 4 memory/forget '{"where":{"path":"guide.md"}}'
	rpc 5 memory/forget '{"query":"xylophone"}'
	rpc 6 memory/forget '{}'
	rpc 7 memory/remember '{"records":[{"content":"again"}]}'
	rpc 8 memory/recall '{"query":"xylophone"}')
ask "$reqs" --index "$idx" "${excl[@]}" "$c"
for i in 1 2 3 4 5 6 7; do
	expect "write $i is refused with READ_ONLY" "$(py "$(line $i)" 'r["error"]["code"]')" -32004
done
expect "the store is as it was" "$(py "$(line 8)" "$rec[\"id\"]")" "$id"
reqs=$(rpc 1 memory/promote "{\"ids\":[\"$id\"],\"tier\":\"semantic\"}"
	rpc 2 memory/consolidate '{}'
	rpc 3 memory/reinforce "{\"ids\":[\"$id\"]}"
	rpc 4 memory/session/close '{"session":"s"}'
	rpc 5 memory/summarize "{\"ids\":[\"$id\"]}")
ask "$reqs" --index "$idx" "${excl[@]}" "$c"
for i in 1 2 3 4 5; do
	expect "write method $i of an undeclared capability is -32003" \
		"$(py "$(line $i)" 'r["error"]["code"]')" -32003
done

# --- a restart reads only what changed ---
ask "" --index-only --log-level info --index "$idx" "${excl[@]}" "$c"
contains "a restart with nothing changed reads nothing" "$err" \
	"4 files (0 read, 4 unchanged), 0 removed, 2 skipped; 0 chunks added, 0 removed"
printf 'First paragraph of notes about walruses.\n\nSecond paragraph, about pangolins.\n' >"$c/notes/plain.txt"
ask "$(rpc 1 memory/recall '{"query":"pangolins"}'; rpc 2 memory/recall '{"query":"okapis"}')" \
	--log-level info --index "$idx" "${excl[@]}" "$c"
contains "a changed file is the only one read" "$err" "4 files (1 read, 3 unchanged), 0 removed"
expect "its new text is found" "$(py "$(line 1)" "$rec[\"metadata\"][\"path\"]")" "notes/plain.txt"
expect "its old text is gone" "$(py "$(line 2)" 'len(r["result"]["records"])')" 0
touch -d '2001-01-01' "$c/src/tool.c"
ask "" --index-only --log-level info --index "$idx" "${excl[@]}" "$c"
contains "a touched file is read, and nothing is written" "$err" \
	"4 files (1 read, 3 unchanged), 0 removed, 2 skipped; 0 chunks added, 0 removed"
rm "$c/src/tool.py"
ask "$(rpc 1 memory/recall '{"query":"quokka_count"}')" --log-level info --index "$idx" "${excl[@]}" "$c"
contains "a deleted file is removed" "$err" "3 files (0 read, 3 unchanged), 1 removed"
expect "its chunks are forgotten" "$(py "$(line 1)" 'len(r["result"]["records"])')" 0
ask "$(rpc 1 memory/recall '{"query":"excludedword"}')" --log-level info --index "$idx" \
	--exclude '*.log' "$c"
contains "a pattern dropped brings its files in" "$err" "4 files (1 read, 3 unchanged)"
expect "and they are found" "$(py "$(line 1)" "$rec[\"metadata\"][\"path\"]")" "build/out.md"
ask "" --index-only --log-level info --index "$idx" "${excl[@]}" "$c"
contains "a pattern added takes its files out" "$err" "3 files (0 read, 3 unchanged), 1 removed"
ask "" --index-only --log-level info --index "$idx" --chunk-size 100 "${excl[@]}" "$c"
contains "another chunk size cuts every file again" "$err" "3 files (3 read, 0 unchanged)"
ask "" --index-only --log-level info --index "$idx" --chunk-size 100 --rebuild "${excl[@]}" "$c"
contains "--rebuild starts from nothing" "$err" "3 files (3 read, 0 unchanged), 0 removed"
ask "$(rpc 1 memory/recall '{"query":"xylophone"}')" --index "$idx" --chunk-size 100 "${excl[@]}" "$c"
expect "a chunk is at most --chunk-size bytes" \
	"$(py "$(line 1)" "len($rec[\"content\"].encode()) <= 100 and $rec[\"metadata\"][\"headings\"]")" \
	"['Guide', 'Install', 'Debian']"

# The default index lives in the folder, and is never indexed itself.
ask "" --index-only --log-level info "${excl[@]}" "$c"
contains "the default index is DIR/.a2m-corpus.db" "$(ls -A "$c")" ".a2m-corpus.db"
ask "" --index-only --log-level info "${excl[@]}" "$c"
contains "the index is not among the files" "$err" "3 files (0 read, 3 unchanged), 0 removed, 2 skipped"
rm -f "$c"/.a2m-corpus.db*

# A file of more chunks than one call may name ids (max_ids_per_call,
# 10 000): removing it takes several memory/forget calls.
big=$d/big
mkdir -p "$big"
"$python" -c 'import sys
with open(sys.argv[1], "w") as f:
    for i in range(25000):
        f.write("para%05d of filler words.\n\n" % i)' "$big/long.txt"
ask "" --index-only --log-level info --index "$d/big.db" --chunk-size 64 "$big"
contains "a file of 12 500 chunks is indexed" "$err" "1 files (1 read, 0 unchanged), 0 removed, 0 skipped; 12500 chunks added"
rm "$big/long.txt"
ask "$(rpc 1 memory/timeline '{"limit":10}')" --log-level info --index "$d/big.db" --chunk-size 64 "$big"
contains "and its 12 500 chunks are forgotten when it goes" "$err" "1 removed, 0 skipped; 0 chunks added, 12500 removed"
expect "none is left" "$(py "$(line 1)" 'len(r["result"]["records"])')" 0

# --- a kill -9 in the middle of indexing, then a restart ---
# 300 files of one chunk each; the server is killed at three moments of its
# first index, restarted each time, and must end exactly where an index
# made in one go ends: the same ids, and each file's word found once.
k=$d/many
mkdir -p "$k"
"$python" -c 'import sys
for i in range(1, 301):
    with open("%s/f%d.txt" % (sys.argv[1], i), "w") as f:
        f.write(("Line of filler text for file %d. " % i) * 40 + "uniq%dword\n" % i)' "$k"
ask "$(rpc 1 memory/timeline '{"limit":1000}')" --index "$d/fresh.db" "$k"
# The ids, as a count and a digest (the list itself is long to print).
ids_of='(len(r["result"]["records"]), __import__("hashlib").sha1(" ".join(sorted(x["id"] for x in r["result"]["records"])).encode()).hexdigest()[:16])'
want_ids=$(py "$(line 1)" "$ids_of")
expect "the reference index holds one chunk per file" "$(py "$(line 1)" 'len(r["result"]["records"])')" 300
for delay in 0.02 0.06 0.15; do
	rm -f "$d"/killed.db*
	"$a2m" corpus --index-only --index "$d/killed.db" "$k" 2>/dev/null &
	p=$!
	sleep "$delay"
	kill -9 "$p" 2>/dev/null
	wait "$p" 2>/dev/null
	# and once more while it resumes
	"$a2m" corpus --index-only --index "$d/killed.db" "$k" 2>/dev/null &
	p=$!
	sleep "$delay"
	kill -9 "$p" 2>/dev/null
	wait "$p" 2>/dev/null
	ask "$(rpc 1 memory/timeline '{"limit":1000}'; rpc 2 memory/recall '{"query":"uniq150word"}')" \
		--index "$d/killed.db" "$k"
	expect "killed after ${delay}s twice, the restart ends with the same chunks" \
		"$(py "$(line 1)" "$ids_of")" "$want_ids"
	expect "killed after ${delay}s twice, a file's word is found once" \
		"$(py "$(line 2)" 'len(r["result"]["records"])')" 1
done

# --- many batches: each written on the writer thread while the next fills ---
# 9 000 files of one chunk each: two full batches of 4 096 files (batch.h,
# A2M_CORPUS_BATCH_FILES) go to the writer thread, the rest is written at
# the end of the sync. Every batch must arrive: a word of a file in each is
# found, once.
mb=$d/batches
mkdir -p "$mb"
"$python" -c 'import sys
for i in range(1, 9001):
    with open("%s/f%05d.txt" % (sys.argv[1], i), "w") as f:
        f.write("Some words of filler for file %d, then batchword%d.\n" % (i, i))' "$mb"
ask "" --index-only --log-level info --index "$d/batches.db" "$mb"
contains "9 000 files, each a chunk, in several batches" "$err" \
	"9000 files (9000 read, 0 unchanged), 0 removed, 0 skipped; 9000 chunks added, 0 removed"
reqs=""
n=0
for i in 1 4095 4096 4097 8192 8193 9000; do
	n=$((n + 1))
	reqs+=$(rpc $n memory/recall "{\"query\":\"batchword$i\"}")$'\n'
done
ask "$reqs" --index "$d/batches.db" "$mb"
n=0
for i in 1 4095 4096 4097 8192 8193 9000; do
	n=$((n + 1))
	expect "batchword$i is found once" "$(py "$(line $n)" 'len(r["result"]["records"])')" 1
done
ask "" --index-only --log-level info --index "$d/batches.db" "$mb"
contains "a restart reads none of them again" "$err" "9000 files (0 read, 9000 unchanged)"

# --- a file whose name is not UTF-8 ---
# Its path cannot be a JSON string: it is skipped, and the rest indexed
# (it used to fail the whole batch with a parse error).
bn=$d/badname
mkdir -p "$bn"
printf 'hidden words\n' >"$bn/$(printf 'bad\377name.txt')"
printf 'a fine file of badnamefine\n' >"$bn/ok.txt"
ask "$(rpc 1 memory/recall '{"query":"badnamefine"}')" --log-level info --index "$d/badname.db" "$bn"
expect "a folder with a name that is not UTF-8 is served" "$status" 0
contains "that file is skipped, the other indexed" "$err" "1 files (1 read, 0 unchanged), 0 removed, 1 skipped"
expect "the other file is found" "$(py "$(line 1)" 'len(r["result"]["records"])')" 1

# --- --watch, over HTTP ---
w=$d/watched
mkdir -p "$w/sub"
printf '# Watched\n\nThe first words.\n' >"$w/a.md"
printf 'a text about lemurs\n' >"$w/sub/b.txt"
printf 'excludedword\n' >"$w/skip.log"
: >"$d/watch.err"
"$a2m" corpus --watch --http 127.0.0.1:0 --log-level info --exclude '*.log' "$w" 2>"$d/watch.err" &
pid=$!
pids+=("$pid")
url=""
for _ in $(seq 600); do
	url=$(sed -n 's/^a2m corpus: listening on \([^ ]*\) .*/\1/p' "$d/watch.err")
	[ -n "$url" ] && break
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.05
done
if [ -z "$url" ]; then
	fail "the watching server starts" "$(cat "$d/watch.err")"
	finish
fi
ok "the watching server starts"

# post METHOD PARAMS: one request to the HTTP server; the reply.
post() {
	curl -sS --noproxy '*' --max-time 30 -H 'Content-Type: application/json' \
		-d "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"$1\",\"params\":$2}" "$url"
}
# recall QUERY: the records' paths (sorted), from the HTTP server.
recall() {
	py "$(post memory/recall "{\"query\":\"$1\"}")" \
		'sorted(x["metadata"]["path"] for x in r["result"]["records"])'
}
# shows NAME QUERY WANT: waits (at most 20 s) until recall QUERY gives WANT.
shows() {
	local got
	for _ in $(seq 200); do
		got=$(recall "$2")
		[ "$got" = "$3" ] && break
		sleep 0.1
	done
	expect "$1" "$got" "$3"
}

shows "the watched folder is served" lemurs "['sub/b.txt']"
post memory/describe '{}' >/dev/null  # a describe before the changes
printf 'Appended: aardvarks.\n' >>"$w/a.md"
shows "an appended line is found" aardvarks "['a.md']"
printf '# Watched\n\nThe second words about capybaras.\n' >"$w/a.md"
shows "a modified file's new text is found" capybaras "['a.md']"
shows "and its old text is gone" aardvarks "[]"
rm "$w/sub/b.txt"
shows "a deleted file is forgotten" lemurs "[]"
mv "$w/a.md" "$w/renamed.md"
shows "a renamed file is found under its new name" capybaras "['renamed.md']"
mkdir -p "$w/new/deeper"
printf 'def narwhal():\n    return 1\n' >"$w/new/deeper/c.py"
shows "a file in a new directory is found" narwhal "['new/deeper/c.py']"
printf 'more about tuataras\n' >"$w/new/deeper/later.txt"
shows "the new directory is watched" tuataras "['new/deeper/later.txt']"
mv "$w/new" "$w/moved"
shows "a renamed directory's files move with it" narwhal "['moved/deeper/c.py']"
printf 'okapi notes\n' >"$w/moved/deeper/after.txt"
shows "the renamed directory is still watched" okapi "['moved/deeper/after.txt']"
mkdir "$d/elsewhere"
mv "$w/moved" "$d/elsewhere/moved"
shows "a directory moved out of the folder is forgotten" narwhal "[]"
printf 'ghost text about wombats\n' >"$d/elsewhere/moved/deeper/ghost.txt"
printf 'a marker about tapirs\n' >"$w/marker.txt"
shows "a later change is still followed" tapirs "['marker.txt']"
expect "what changes outside the folder is not followed" "$(recall wombats)" "[]"
cp -r "$k" "$w/bulk"
shows "300 files copied in at once are found" uniq150word "['bulk/f150.txt']"
shows "the last of them too" uniq300word "['bulk/f300.txt']"
rm -rf "$w/bulk"
shows "and forgotten when the directory goes" uniq150word "[]"
printf 'excludedword again\n' >"$w/late.log"
mkdir "$w/fresh"
printf 'lemurs are back\n' >"$w/fresh/x.txt"
shows "a file created after an excluded one is found" lemurs "['fresh/x.txt']"
expect "an excluded file created while watching is not" "$(recall excludedword)" "[]"
# describe follows the watcher's commits too (its figures are not cached
# on a read-only handle): the index counts what timeline returns, three
# chunks now against two at the first describe.
expect "timeline returns the three files' chunks" \
	"$(py "$(post memory/timeline '{"limit":1000}')" 'sorted(x["metadata"]["path"] for x in r["result"]["records"])')" \
	"['fresh/x.txt', 'marker.txt', 'renamed.md']"
expect "describe counts the chunks the watcher wrote" \
	"$(py "$(post memory/describe '{}')" 'r["result"]["scorer"]["indexed"]')" 3

kill -TERM "$pid"
for _ in $(seq 600); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
wait "$pid"
expect "the watching server exits 0 on SIGTERM" $? 0
lacks "the watcher reported no error" "$(cat "$d/watch.err")" "warn"

finish
