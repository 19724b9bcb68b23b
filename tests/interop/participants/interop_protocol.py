"""The participant side of the interop grid's protocol (tests/interop/
README.md), for participants written in Python. Standard library only.

A participant is one command run twice per grid, with the server's URL in
$A2M_URL:

    CMD write   stdin {"token": T, "text": X}   stdout {"session": S?}
    CMD read    stdin {"tokens": [T, ...]}      stdout {"read": {T: [text, ...]}}

``write`` stores X (which contains T) through the participant's framework;
it names the session it wrote into when the fact went into a conversation
(working memory), so the grid can close it before anyone searches.
``read`` searches for each token through the framework and returns every
text it got back; the grid decides what counts as found.
"""
from __future__ import annotations

import json
import os
import sys
from typing import Any, Callable, Dict, List, Optional


def main(write: Callable[[str, str, str], Optional[Dict[str, Any]]],
         read: Callable[[str, List[str]], Dict[str, List[str]]]) -> None:
    """Runs the subcommand in argv[1] with the JSON on stdin. Standard
    output carries the answer alone: whatever else is written to it from
    here on (a framework's console panels, printed by its own threads,
    sometimes after the answer) goes to standard error instead."""
    sys.stdout.flush()
    answer = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    url = os.environ["A2M_URL"]
    request = json.load(sys.stdin)
    if sys.argv[1:] == ["write"]:
        out: Dict[str, Any] = write(url, request["token"], request["text"]) or {}
    elif sys.argv[1:] == ["read"]:
        out = {"read": read(url, list(request["tokens"]))}
    else:
        sys.exit("usage: PARTICIPANT write|read  (JSON on stdin)")
    json.dump(out, answer)
    answer.write("\n")
    answer.flush()
