"""The stdio transport against `a2m serve --memory`: describe first, ids
echoed and matched, notifications interleaved with responses, push as an
iterator, timeouts, a dead or hung server, shutdown; and that what is tested
is the package pip installed."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import sysconfig
import threading
from typing import Any, Dict, List

import pytest

import a2m_client
from a2m_client import A2MError, Client, ErrorCode, StdioTransport, TransportError, TransportTimeout
from conftest import A2M, resume, suspend


class Recording:
    """A transport wrapper that records every request sent through it."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.sent: List[Dict[str, Any]] = []
        self.push = inner.push

    def request(self, message: Dict[str, Any], **kw: Any) -> Dict[str, Any]:
        self.sent.append(message)
        return self.inner.request(message, **kw)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_the_package_under_test_is_the_one_pip_installed() -> None:
    site = sysconfig.get_paths()["purelib"]
    assert os.path.dirname(os.path.dirname(a2m_client.__file__)) == site
    assert a2m_client.__version__ == "0.1.0"


def test_the_package_stays_within_python_3_9() -> None:
    # vermin reads the source and names the oldest Python each construct needs.
    vermin = os.path.join(os.path.dirname(sys.executable), "vermin")
    out = subprocess.run([vermin, "--no-tips", "--violations", "-t=3.9-",
                          "--eval-annotations", os.path.dirname(a2m_client.__file__)],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_describe_is_sent_first_with_the_protocol() -> None:
    t = Recording(StdioTransport([A2M, "serve", "--memory"]))
    c = Client(t)
    c.recall("anything")
    assert [m["method"] for m in t.sent] == ["memory/describe", "memory/recall"]
    assert t.sent[0]["params"] == {"protocol": "a2m/0.1"}
    assert c.close() == 0


def test_the_response_id_is_the_request_id_string_or_number(client: Client) -> None:
    t = client.transport
    got: Dict[Any, Any] = {}
    requests = [
        {"jsonrpc": "2.0", "id": "req-7", "method": "memory/timeline", "params": {"limit": 1}},
        {"jsonrpc": "2.0", "id": 7, "method": "memory/describe", "params": {}},
        {"jsonrpc": "2.0", "id": "7", "method": "memory/forget", "params": {}},
    ]
    threads = [threading.Thread(target=lambda m=m: got.__setitem__(json.dumps(m["id"]), t.request(m)))
               for m in requests]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert got['"req-7"']["id"] == "req-7" and "records" in got['"req-7"']["result"]
    # 7 and "7" are two requests, each answered on its own.
    assert got["7"]["id"] == 7 and got["7"]["result"]["protocol"] == "a2m/0.1"
    assert got['"7"']["id"] == "7" and got['"7"']["error"]["code"] == ErrorCode.INVALID_PARAMS


def test_calls_from_many_threads_each_get_their_own_answer(client: Client) -> None:
    n = 40
    client.remember([{"content": f"value number {i}", "key": f"conc/{i}"} for i in range(n)])
    results: Dict[int, Any] = {}
    threads = [threading.Thread(target=lambda i=i: results.__setitem__(i, client.fetch(f"conc/{i}")))
               for i in range(n)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert [results[i]["record"]["content"] for i in range(n)] == [f"value number {i}" for i in range(n)]


def test_notifications_interleaved_with_a_response_are_kept(client: Client) -> None:
    sub = client.subscribe(kinds=["written"])
    ids = client.remember([{"content": "one"}, {"content": "two"}, {"content": "three"}])["ids"]
    # Each event came before the response that caused it, on the same pipe.
    assert sub.buffered == 3
    seen = [next(sub) for _ in range(3)]
    assert [e["kind"] for e in seen] == ["written"] * 3
    assert [e["id"] for e in seen] == ids
    assert all(isinstance(e["at"], str) for e in seen)
    sub.close()
    assert list(sub) == []
    pushed: List[Any] = []
    stop = client.transport.on_notification(pushed.append)
    client.remember([{"content": "after unsubscribe"}])
    client.recall("x")
    stop()
    assert pushed == []


def test_a_subscription_with_kinds_receives_only_those(client: Client) -> None:
    with client.subscribe(kinds=["forgotten"]) as sub:
        ids = client.remember([{"content": "soon gone"}])["ids"]
        client.forget(ids=ids)
        event = sub.get(timeout=5)
        assert event is not None and event["kind"] == "forgotten" and event["count"] == 1
        assert sub.get(timeout=0.05) is None


def test_one_push_subscription_at_a_time(client: Client) -> None:
    sub = client.subscribe()
    with pytest.raises(RuntimeError, match="already subscribed"):
        client.subscribe()
    sub.close()
    client.subscribe().close()


def test_a_call_not_answered_in_time_is_a_timeout_and_the_client_goes_on() -> None:
    with Client.stdio([A2M, "serve", "--memory"]) as c:
        suspend(c.transport.pid)
        try:
            with pytest.raises(TransportTimeout) as info:
                c.recall("late", timeout=0.2)
            assert isinstance(info.value, TransportError)
            assert isinstance(info.value, TimeoutError)
            assert info.value.timeout == 0.2
        finally:
            resume(c.transport.pid)
        # The late answer is dropped; the next call gets its own.
        assert len(c.remember([{"content": "still here"}])["ids"]) == 1


def test_close_ends_the_server_cleanly_and_later_calls_fail() -> None:
    c = Client.stdio([A2M, "serve", "--memory"])
    c.remember([{"content": "x"}])
    assert c.close() == 0
    assert c.close() == 0
    with pytest.raises(TransportError, match="closed"):
        c.recall("x")


def test_close_kills_a_server_that_does_not_exit_and_fails_the_waiting_call() -> None:
    c = Client.stdio([A2M, "serve", "--memory"], close_timeout=0.1)
    suspend(c.transport.pid)
    errors: List[BaseException] = []

    def wait() -> None:
        try:
            c.recall("x", timeout=None)
        except BaseException as e:  # noqa: B902 — recorded for the assertion
            errors.append(e)

    th = threading.Thread(target=wait)
    th.start()
    status = c.close()
    th.join(10)
    assert status is not None and status < 0  # ended by a signal
    assert len(errors) == 1 and isinstance(errors[0], TransportError)


def test_a_server_that_dies_fails_the_waiting_call() -> None:
    c = Client.stdio([A2M, "serve", "--memory"])
    suspend(c.transport.pid)
    errors: List[BaseException] = []
    th = threading.Thread(target=lambda: errors.append(pytest.raises(TransportError, c.recall, "x", timeout=None).value))
    th.start()
    os.kill(c.transport.pid, signal.SIGKILL)
    th.join(10)
    assert "exited (signal 9)" in str(errors[0])
    with pytest.raises(TransportError):
        c.describe()
    c.close()


def test_a_server_that_cannot_start_is_a_transport_error_with_its_stderr() -> None:
    with pytest.raises(TransportError, match="cannot start"):
        Client.stdio(["/nonexistent/a2m", "serve"])
    with pytest.raises(TransportError, match="no-such-flag"):
        Client.stdio([A2M, "serve", "--no-such-flag"], stderr="pipe")


def test_an_error_with_id_null_goes_to_the_oldest_call_waiting() -> None:
    with Client.stdio([A2M, "serve", "--memory", "--max-line", "4096"], stderr="devnull") as c:
        with pytest.raises(A2MError) as info:
            c.remember([{"content": "x" * 10000}])
        assert info.value.code == ErrorCode.INVALID_REQUEST
        assert info.value.data == {"max_bytes": 4096}
        assert len(c.remember([{"content": "short"}])["ids"]) == 1


def test_a_line_on_stdout_that_is_not_json_fails_the_transport() -> None:
    t = StdioTransport(["sh", "-c", "echo this is not json; cat >/dev/null"])
    with pytest.raises(TransportError, match="not JSON"):
        t.request({"jsonrpc": "2.0", "id": 1, "method": "memory/describe"}, timeout=10)
    t.close()


def test_a_program_that_never_closes_its_client_still_exits_and_so_does_the_server() -> None:
    script = ("from a2m_client import Client\n"
              f"c = Client.stdio([{A2M!r}, 'serve', '--memory'])\n"
              "c.remember([{'content': 'x'}])\n"
              "print(c.transport.pid)\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    pid = int(out.stdout.strip())
    # The server saw EOF on stdin when our process went, and exited.
    from conftest import wait_until

    def gone() -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        with open(f"/proc/{pid}/stat") as f:  # a zombie of init's is gone too
            return f.read().split()[2] == "Z"
    wait_until(gone, 10)
