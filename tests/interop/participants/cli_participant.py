"""Interop participant: the C command line, `a2m remember` and `a2m recall`
(the binary in $A2M_BINARY), run as a user would run them."""
import json
import os
import subprocess
from typing import Dict, List

from interop_protocol import main

A2M = os.environ["A2M_BINARY"]


def write(url: str, token: str, text: str) -> None:
    subprocess.run([A2M, "remember", "--http", url, "--tier", "semantic", text], check=True,
                   stdout=subprocess.DEVNULL)


def read(url: str, tokens: List[str]) -> Dict[str, List[str]]:
    out = {}
    for t in tokens:
        done = subprocess.run([A2M, "recall", "--http", url, "--json", "--limit", "5", t], check=True,
                              capture_output=True, text=True)
        out[t] = [r["content"] for r in json.loads(done.stdout)["records"]]
    return out


main(write, read)
