#!/usr/bin/env bash
# transfer.sh [N] [A2M] — export and import at scale: writes an a2m export
# of N records (default 1000000: text, metadata, sessions, keys, a vector on
# one in ten), imports it into a fresh SQLite file, exports that file, and
# imports the export into a store in memory; prints each step's time, rate
# and peak resident memory (GNU time's maximum RSS). Memory that does not
# grow with N is what streaming means: run it with N of 100000 and 1000000
# and compare (docs/EXPORT.md, docs/BENCHMARKS.md).
set -euo pipefail
n=${1:-1000000}
a2m=$(realpath "${2:-build/a2m}")
d=$(mktemp -d /tmp/a2m-transfer-bench.XXXXXX)
trap 'rm -rf "$d"' EXIT

python3 - "$n" >"$d/in.jsonl" <<'EOF'
import json, random, sys
n = int(sys.argv[1])
rnd = random.Random(7)
words = ("harbour lighthouse keeper weather dawn dusk ship signal gull fog horn lens "
         "tide chart anchor rope sail storm calm north south east west log note").split()
out = sys.stdout
out.write(json.dumps({"format": "a2m-export", "version": 1, "records": n,
                      "describe": {"embeddings": {"dimensions": 8, "metric": "cosine"}}}) + "\n")
base = 1767225600000  # 2026-01-01
for i in range(n):
    ms = base + i * 10
    ts = "%sT%s.%03dZ" % (
        __import__("time").strftime("%Y-%m-%d", __import__("time").gmtime(ms // 1000)),
        __import__("time").strftime("%H:%M:%S", __import__("time").gmtime(ms // 1000)), ms % 1000)
    r = {"id": "r%07d" % i, "content": " ".join(rnd.choice(words) for _ in range(12)),
         "created_at": ts, "tier": "semantic", "salience": 1.0, "access_count": i % 5,
         "session": "s%d" % (i % 100), "metadata": {"n": i, "tag": words[i % len(words)]}}
    if i % 3 == 0:
        r["key"] = "facts/%d" % i
        r["revision"] = i % 4
    if i % 10 == 0:
        r["embedding"] = [rnd.uniform(-1, 1) for _ in range(8)]
    out.write(json.dumps(r, separators=(",", ":")) + "\n")
EOF

# step NAME CMD...: runs CMD under GNU time; prints seconds, rate, peak RSS.
step() {
	local name=$1
	shift
	/usr/bin/time -f '%e %M' -o "$d/time" "$@" >"$d/out" 2>"$d/err" || { cat "$d/err"; exit 1; }
	read -r secs kb <"$d/time"
	printf '%-28s %8.1f s  %9.0f records/s  peak RSS %6.1f MiB\n' "$name" "$secs" \
		"$(echo "$n / $secs" | bc -l)" "$(echo "$kb / 1024" | bc -l)"
}

echo "a2m export/import of $n records ($(du -h "$d/in.jsonl" | cut -f1) of JSON Lines)"
step "import into SQLite" "$a2m" import --db "$d/a.db" "$d/in.jsonl"
step "export from SQLite" "$a2m" export --db "$d/a.db" -o "$d/out.jsonl"
step "import into memory" "$a2m" import --memory "$d/out.jsonl"
step "import again (all skipped)" "$a2m" import --db "$d/a.db" "$d/out.jsonl"
