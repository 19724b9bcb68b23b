"""What the Python client's tests share: the a2m binary, real servers over
stdio and HTTP, and the closing line scripts/run-tests.sh adds up."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
import time
from typing import Any, Dict, Iterator, List

import pytest

from a2m_client import Client

# The in-process transport's tests run only when A2M_LIBRARY names a
# liba2m.so with the configuration API (test_inprocess.py says why).
collect_ignore = [] if os.environ.get("A2M_LIBRARY") else ["test_inprocess.py"]

A2M = os.path.abspath(os.environ.get("A2M_BINARY", os.path.join(os.path.dirname(__file__), "../../../build/a2m")))
#: An RFC 3339 UTC timestamp with milliseconds and Z (§3.3).
RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")


class HttpServer:
    """`a2m serve --http 127.0.0.1:0 ARGS`, found by its start-up line."""

    def __init__(self, args: List[str]) -> None:
        self.proc = subprocess.Popen([A2M, "serve", "--http", "127.0.0.1:0", *args],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.log = ""
        found = threading.Event()

        def read() -> None:
            assert self.proc.stderr is not None
            for line in iter(self.proc.stderr.readline, b""):
                self.log += line.decode("utf-8", "replace")
                if not found.is_set() and re.search(r"^a2m serve: listening on (\S+) ", self.log, re.M):
                    found.set()
            found.set()

        threading.Thread(target=read, daemon=True).start()
        found.wait(30)
        m = re.search(r"^a2m serve: listening on (\S+) ", self.log, re.M)
        if not m:
            self.proc.kill()
            raise RuntimeError(f"a2m serve --http did not start: {self.log}")
        self.url = m.group(1)

    def stop(self) -> int:
        self.proc.terminate()
        return self.proc.wait(30)


@pytest.fixture
def client() -> Iterator[Client]:
    """A client of a fresh `a2m serve --memory` over stdio."""
    with Client.stdio([A2M, "serve", "--memory"]) as c:
        yield c


@pytest.fixture
def serve_http() -> Iterator[Any]:
    """Starts HTTP servers; each is stopped (and must exit 0) after the test."""
    started: List[HttpServer] = []

    def start(*args: str) -> HttpServer:
        s = HttpServer(list(args))
        started.append(s)
        return s

    yield start
    for s in started:
        assert s.stop() == 0, s.log


def pytest_terminal_summary(terminalreporter: Any) -> None:
    stats: Dict[str, list] = terminalreporter.stats
    passed = len([r for r in stats.get("passed", []) if getattr(r, "when", "call") == "call"])
    failed = len(stats.get("failed", [])) + len(stats.get("error", []))
    terminalreporter.write_line(f"{passed} passed, {failed} failed")


def wait_until(fn: Any, seconds: float = 5.0) -> None:
    end = time.monotonic() + seconds
    while not fn():
        if time.monotonic() > end:
            raise AssertionError("condition not met in time")
        time.sleep(0.01)


def suspend(pid: int) -> None:
    """Stops process pid with SIGSTOP and waits until the kernel shows it
    stopped: kill() returns before every thread of a busy process is."""
    os.kill(pid, signal.SIGSTOP)

    def stopped() -> bool:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "T"
    wait_until(stopped)


def resume(pid: int) -> None:
    """Lets a process stopped by suspend() go on."""
    os.kill(pid, signal.SIGCONT)
