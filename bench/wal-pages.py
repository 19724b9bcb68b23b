#!/usr/bin/env python3
# wal-pages.py [A2M_BINARY] [N] [TIER] — which b-trees a lone SQLite commit writes.
# Serves a fresh file with `a2m serve --db --synchronous-normal`, remembers
# 2 000 records in two batches, then N (300) single-record remembers into
# TIER (semantic; "default": no tier, so into the default tiers, after 300
# more that fill working and episodic and make every write spill); copies
# the log (-wal) while the server still runs (a clean close would checkpoint
# it away), kills the server, and names the page of each frame of the last
# N commits with SQLite's dbstat. Prints frames per commit and per b-tree.
# Printed, never asserted (docs/BENCHMARKS.md, issue 24).
import collections
import json
import os
import shutil
import signal
import sqlite3
import struct
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
binary = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "../build/a2m"))
n = int(sys.argv[2]) if len(sys.argv) > 2 else 300
tier = sys.argv[3] if len(sys.argv) > 3 else "semantic"
fill = 300 if tier == "default" else 0
d = tempfile.mkdtemp(prefix="a2m-wal-pages.")
db = os.path.join(d, "a.db")
p = subprocess.Popen([binary, "serve", "--db", db, "--synchronous-normal"],
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
try:
    def call(i, records):
        msg = {"jsonrpc": "2.0", "id": i, "method": "memory/remember",
               "params": {"records": records}}
        p.stdin.write((json.dumps(msg) + "\n").encode())
        p.stdin.flush()
        reply = json.loads(p.stdout.readline())
        if "result" not in reply:
            sys.exit("wal-pages.py: %s" % reply)

    for b in range(2):
        call(b, [{"content": "record %d of batch %d about cats and dogs" % (k, b),
                  "tier": "semantic"} for k in range(1000)])
    for i in range(fill + n):
        rec = {"content": "lone record %d on the quiet river bank" % i}
        if tier != "default":
            rec["tier"] = tier
        call(10 + i, [rec])
    shutil.copy(db + "-wal", os.path.join(d, "copy.db-wal"))
    shutil.copy(db, os.path.join(d, "copy.db"))
finally:
    p.send_signal(signal.SIGKILL)
    p.wait()
wal = open(os.path.join(d, "copy.db-wal"), "rb").read()
page = struct.unpack(">I", wal[8:12])[0]
frames, off = [], 32
while off + 24 + page <= len(wal):
    frames.append(struct.unpack(">II", wal[off:off + 8]))  # page number, commit size
    off += 24 + page
names = dict(sqlite3.connect(os.path.join(d, "copy.db")).execute("SELECT pageno, name FROM dbstat"))
commits, cur = [], []
for pgno, commit in frames:
    cur.append(names.get(pgno, "page %d" % pgno))
    if commit:
        commits.append(cur)
        cur = []
last = commits[-n:]
shutil.rmtree(d)
if not last:
    sys.exit("wal-pages.py: no commit in the log (checkpointed?)")
total = collections.Counter()
for c in last:
    total.update(c)
print("page size %d, %d commits, %.2f frames per commit" %
      (page, len(last), sum(len(c) for c in last) / len(last)))
for name, k in total.most_common():
    print("  %-40s %.2f" % (name, k / len(last)))
