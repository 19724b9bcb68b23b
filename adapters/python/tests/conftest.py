"""What the adapters' tests share: the a2m binary, a fresh memory per test
(``a2m serve --memory`` over stdio, or ``--http``), and the closing line
scripts/run-tests.sh adds up. Imports no framework."""
from __future__ import annotations

import os
import re
import subprocess
import threading
from typing import Any, Dict, Iterator, List

import pytest

from a2m_client import Client

A2M = os.path.abspath(os.environ.get("A2M_BINARY", os.path.join(os.path.dirname(__file__), "../../../build/a2m")))


@pytest.fixture
def memory() -> Iterator[Client]:
    """A client of a fresh `a2m serve --memory` over stdio."""
    with Client.stdio([A2M, "serve", "--memory"], stderr="pipe") as c:
        yield c


class HttpServer:
    """`a2m serve --http 127.0.0.1:0 ARGS`, found by its start-up line."""

    def __init__(self, args: List[str]) -> None:
        self.proc = subprocess.Popen([A2M, "serve", "--http", "127.0.0.1:0", *args],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.log = ""
        found = threading.Event()
        pattern = re.compile(r"^a2m serve: listening on (\S+) ", re.M)

        def read() -> None:
            assert self.proc.stderr is not None
            for line in iter(self.proc.stderr.readline, b""):
                self.log += line.decode("utf-8", "replace")
                if pattern.search(self.log):
                    found.set()
            found.set()

        threading.Thread(target=read, daemon=True).start()
        found.wait(30)
        m = pattern.search(self.log)
        if not m:
            self.proc.kill()
            raise RuntimeError(f"a2m serve --http did not start: {self.log}")
        self.url = m.group(1)

    def stop(self) -> int:
        self.proc.terminate()
        return self.proc.wait(30)


@pytest.fixture
def http_url(tmp_path: Any) -> Iterator[str]:
    """The URL of a fresh `a2m serve --http` over a SQLite file; the server
    must exit 0 after the test."""
    server = HttpServer(["--db", str(tmp_path / "a2m.db")])
    yield server.url
    assert server.stop() == 0, server.log


def contents(records: List[Dict[str, Any]]) -> List[str]:
    return [r["content"] for r in records]


def pytest_terminal_summary(terminalreporter: Any) -> None:
    stats: Dict[str, list] = terminalreporter.stats
    passed = len([r for r in stats.get("passed", []) if getattr(r, "when", "call") == "call"])
    failed = len(stats.get("failed", [])) + len(stats.get("error", []))
    terminalreporter.write_line(f"{passed} passed, {failed} failed")
