#!/usr/bin/env python3
"""A stdio A2M backend whose scores are deliberately skewed: it runs the
command given after the factor, passes every line through, and multiplies
each recalled record's score by the factor (order kept), so a merge that
read backend scores would let this backend win (tests/federate_test.py)."""
import json
import subprocess
import sys

factor = float(sys.argv[1])
child = subprocess.Popen(sys.argv[2:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
for line in sys.stdin.buffer:
    child.stdin.write(line)
    child.stdin.flush()
    msg = json.loads(line)
    if 'id' not in msg:
        continue
    out = child.stdout.readline()
    resp = json.loads(out)
    recs = resp.get('result', {}).get('records') if isinstance(resp.get('result'), dict) else None
    if msg.get('method') == 'memory/recall' and recs:
        for r in recs:
            r['score'] = r.get('score', 0) * factor + factor
        out = (json.dumps(resp) + '\n').encode()
    sys.stdout.buffer.write(out)
    sys.stdout.buffer.flush()
child.stdin.close()
sys.exit(child.wait())
