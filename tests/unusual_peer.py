#!/usr/bin/env python3
"""unusual_peer.py LOG SERVER-COMMAND... -- a legal but unusual A2M server,
for testing what a client owes a server (tests/cli_test.sh).

It starts SERVER-COMMAND, a real A2M server on stdio, and relays every line
both ways, appending each line the client sends to LOG (so a test can see
exactly what was asked, and in which order). Its answers are the server's,
made as unusual as the spec allows a server to be:

  - every record in a result carries fields no client knows, and every
    result a member no client knows (spec section 2: a client tolerates them);
  - every score is 41.5, outside the [0, 1] a server SHOULD keep to (section
    5.3: scores are the server's own, compared by no client);
  - every memory/events result carries one more event, of a kind the spec
    does not define (section 4.12: a server-defined kind a client tolerates);
  - every error's message is replaced by words that name no code
    (section 7: the message is for humans, never parsed by a client).

Python 3 standard library only.
"""

import json
import subprocess
import sys
import threading
import time

log_path = sys.argv[1]
server = subprocess.Popen(sys.argv[2:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
methods = {}  # request id (as JSON text) -> method, for the answers
lock = threading.Lock()


def now():
    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + ".%03dZ" % (int(t * 1000) % 1000)


def unusual(msg):
    """The server's message, as unusual as the spec allows."""
    with lock:
        method = methods.pop(json.dumps(msg.get("id")), None)
    error = msg.get("error")
    if isinstance(error, dict):
        error["message"] = "something happened"
    result = msg.get("result")
    if isinstance(result, dict):
        result["zz_unknown_member"] = {"added": "by a later version"}
        for rec in result.get("records") or []:
            if isinstance(rec, dict):
                if "score" in rec:
                    rec["score"] = 41.5
                rec["zz_unknown_field"] = [1, {"two": 3}]
                rec["zz_flag"] = True
        if method == "memory/events" and isinstance(result.get("events"), list):
            result["events"].append({"kind": "zz_server_defined", "at": now(), "detail": 1})
    return msg


def relay_answers():
    for line in server.stdout:
        try:
            msg = json.loads(line)
        except ValueError:
            msg = None
        if isinstance(msg, dict) and ("result" in msg or "error" in msg):
            line = (json.dumps(unusual(msg), ensure_ascii=False) + "\n").encode()
        sys.stdout.buffer.write(line)
        sys.stdout.buffer.flush()
    sys.stdout.close()


relay = threading.Thread(target=relay_answers)
relay.start()
with open(log_path, "ab") as log:
    for line in sys.stdin.buffer:
        log.write(line)
        log.flush()
        try:
            msg = json.loads(line)
        except ValueError:
            msg = None
        if isinstance(msg, dict) and "id" in msg and isinstance(msg.get("method"), str):
            with lock:
                methods[json.dumps(msg["id"])] = msg["method"]
        server.stdin.write(line)
        server.stdin.flush()
server.stdin.close()
relay.join()
sys.exit(server.wait())
