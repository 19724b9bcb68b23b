#!/usr/bin/env bash
# durable-commit.sh [A2M_BINARY] — what one durable lone remember costs the
# disk: `a2m serve --db F` (synchronous=FULL, group commit: the default)
# fed CALLS (6000) single-record remembers into the default tiers, one
# request after another on stdin.
#
#   1. System calls per call, by thread and file (strace -f -y): the
#      request thread's pwrite/fdatasync/fcntl of the log, the
#      checkpointer's syncs of the log and of the database file.
#   2. Only as root (LOOP=1, the default when root): the same run on a
#      private ext4 on a loop device, so that no one else's I/O is counted:
#      device writes, KiB written, cache flushes and ext4 journal commits
#      per call (/sys/block/loopN/stat, /proc/fs/jbd2), for the first half
#      of the calls (the log's first pass through its file, which grows it)
#      and the second half (the log restarted into blocks it has).
#
# SERVE_ARGS adds to the server's flags (--no-group-commit: SQLite's own
# synchronous=FULL commits). Deterministic counts, not wall clock: the flushes a sync of the
# checkpointer adds merge with the writer's when they meet, so the flush
# figures move a little with the machine's load. Printed, never asserted.
# Needs strace; the loop part needs root, losetup and mkfs.ext4.
set -u
here=$(cd "$(dirname "$0")" && pwd)
a2m=$(realpath "${1:-$here/../build/a2m}")
calls=${CALLS:-6000}
read -r -a extra <<<"${SERVE_ARGS:-}"
loop=${LOOP:-$([ "$(id -u)" = 0 ] && echo 1 || echo 0)}
command -v strace >/dev/null || { echo "durable-commit.sh: strace not found" >&2; exit 2; }
d=$(mktemp -d /tmp/a2m-bench-durable.XXXXXX)
dev= mnt=
cleanup() {
	[ -n "$mnt" ] && umount "$mnt" 2>/dev/null
	[ -n "$dev" ] && losetup -d "$dev" 2>/dev/null
	rm -rf "$d"
}
trap cleanup EXIT

python3 - "$calls" >"$d/in.jsonl" <<'EOF'
import json, sys
for i in range(int(sys.argv[1])):
    print(json.dumps({"jsonrpc": "2.0", "id": i, "method": "memory/remember", "params": {"records": [
        {"content": f"note {i}: the deploy key of service {i % 37} rotates every {1 + i % 90} days"}]}}))
EOF

echo "durable-commit.sh: $a2m${SERVE_ARGS:+ $SERVE_ARGS}, $calls lone remembers (FULL), load $(cut -d' ' -f1-3 /proc/loadavg)"
strace -f -y -o "$d/trace" -e trace=pwrite64,pread64,fdatasync,fsync,fcntl \
	"$a2m" serve --db "$d/s.db" "${extra[@]}" <"$d/in.jsonl" >"$d/out" 2>"$d/err" || { cat "$d/err"; exit 1; }
answered=$(grep -c '"result"' "$d/out")
python3 - "$d/trace" "$answered" <<'EOF'
import collections, re, sys
calls = int(sys.argv[2])
main = None
count = collections.Counter()
for line in open(sys.argv[1]):
    m = re.match(r'(\d+)\s+(\w+)\((\d+)<([^>]*)>', line)
    if not m:
        continue
    pid, call, path = m.group(1), m.group(2), m.group(4)
    main = main or pid      # the first thread to touch a file is the request thread
    who = 'request thread' if pid == main else 'other threads'
    kind = path.rsplit('.', 1)[-1] if '.db' in path else 'directory'
    count[(who, call, {'db': 'database', 'db-wal': 'log', 'db-shm': 'wal-index'}.get(kind, kind))] += 1
print(f"  system calls per call ({calls} answered):")
for (who, call, what), n in sorted(count.items()):
    if n / calls >= 0.0005:
        print(f"    {who:15} {call:10} {what:10} {n / calls:7.3f}")
EOF

[ "$loop" = 1 ] || exit 0
truncate -s 1G "$d/img" && mkfs.ext4 -q -F "$d/img" && dev=$(losetup -f --show "$d/img") || exit 1
mnt="$d/mnt"
mkdir "$mnt" && mount "$dev" "$mnt" || exit 1
name=$(basename "$dev")
snap() {
	read -r -a s <"/sys/block/$name/stat"
	echo "${s[4]} ${s[6]} ${s[15]} $(awk 'NR==1 {print $1}' "/proc/fs/jbd2/$name-8/info")"
}
mkfifo "$d/fifo"
"$a2m" serve --db "$mnt/s.db" "${extra[@]}" <"$d/fifo" >"$d/out2" 2>"$d/err2" &
pid=$!
exec 7>"$d/fifo"
upto() { while [ "$(grep -c . "$d/out2")" -lt "$1" ]; do sleep 0.05; done; }
half=$((calls / 2))
a=$(snap); head -n "$half" "$d/in.jsonl" >&7; upto "$half"; b=$(snap)
tail -n +"$((half + 1))" "$d/in.jsonl" >&7; upto "$calls"; c=$(snap)
exec 7>&-
wait "$pid"
python3 - "$a" "$b" "$c" "$half" "$((calls - half))" <<'EOF'
import sys
a, b, c = [list(map(int, x.split())) for x in sys.argv[1:4]]
print("  on a private ext4 (loop device), per call:")
for name, x, y, n in (("first half", a, b, int(sys.argv[4])), ("second half", b, c, int(sys.argv[5]))):
    w, s, f, j = [(y[i] - x[i]) / n for i in range(4)]
    print(f"    {name:12} device writes {w:.3f}  KiB {s / 2:.1f}  cache flushes {f:.3f}  journal commits {j:.3f}")
EOF
# The disk's floor beside it: one 45 KiB pwrite and fdatasync, 1 000 times.
python3 - "$mnt/probe" "$name" <<'EOF'
import os, sys
def snap():
    s = open(f"/sys/block/{sys.argv[2]}/stat").read().split()
    return int(s[4]), int(s[6]), int(s[15])
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
n, size = 1000, 45 * 1024
os.pwrite(fd, bytes(n * size), 0); os.fsync(fd)
buf = os.urandom(size); a = snap()
for i in range(n):
    os.pwrite(fd, buf, i * size); os.fdatasync(fd)
b = snap(); os.close(fd)
w, s, f = [(b[i] - a[i]) / n for i in range(3)]
print(f"    {'45 KiB pwrite + fdatasync (the floor)':12} device writes {w:.3f}  KiB {s / 2:.1f}  cache flushes {f:.3f}")
EOF
