"""The HTTP transport against `a2m serve --http`: plain, with bearer tokens,
read-only, core-only; kept-alive connections; the headers sent; push refused
and polling instead; statuses as TransportError."""
from __future__ import annotations

import http.server
import json
import os
import socket
import struct
import subprocess
import threading
import time
from typing import Any, Dict, Iterator, List

import pytest

from a2m_client import A2MError, Client, ErrorCode, HttpTransport, TransportError, TransportTimeout
from conftest import A2M, RFC3339, resume, suspend
from test_stdio import Recording


def test_the_methods_over_http(serve_http: Any) -> None:
    s = serve_http("--memory")
    with Client.http(s.url) as c:
        ids = c.remember([{"content": "over http we go", "key": "h/1", "metadata": {"via": "http"}}])["ids"]
        rec = c.recall("over http")["records"][0]
        assert rec["id"] == ids[0] and rec["metadata"] == {"via": "http"}
        assert RFC3339.match(rec["created_at"])
        assert c.fetch("h/1")["record"]["content"] == "over http we go"
        assert c.timeline(limit=1)["records"][0]["id"] == ids[0]
        assert c.forget(ids=ids) == {"forgotten": 1}


def test_push_is_false_over_http_and_subscribe_is_refused_unsent(serve_http: Any) -> None:
    s = serve_http("--memory")
    t = Recording(HttpTransport(s.url))
    c = Client(t)
    assert c.description["events"]["push"] is False and not c.can_push
    sent_before = len(t.sent)
    for call in (c.subscribe, c.events_subscribe):
        with pytest.raises(A2MError) as info:
            call()
        assert info.value.code == ErrorCode.CAPABILITY_NOT_SUPPORTED
        assert info.value.data == {"capability": "events", "push": False}
    assert len(t.sent) == sent_before
    # The server says the same when asked anyway (§8.3).
    raw = t.inner.request({"jsonrpc": "2.0", "id": "sub", "method": "memory/events/subscribe", "params": {}})
    assert raw["id"] == "sub" and raw["error"]["code"] == ErrorCode.CAPABILITY_NOT_SUPPORTED
    c.close()


def test_watch_polls_over_http(serve_http: Any) -> None:
    s = serve_http("--memory")
    with Client.http(s.url) as c:
        watch = c.watch(interval=0.02, kinds=["written"])
        it = iter(watch)
        written: List[str] = []
        writer = threading.Timer(0.1, lambda: written.extend(c.remember([{"content": "watched"}])["ids"]))
        writer.start()
        event = next(it)
        writer.join()
        assert event["kind"] == "written" and event["id"] == written[0]
        watch.close()


def test_one_kept_alive_connection_carries_every_call(serve_http: Any) -> None:
    s = serve_http("--memory")
    with Client.http(s.url) as c:
        for i in range(20):
            c.recall(f"query {i}")
        assert c.transport.connections == 1


def test_calls_from_many_threads_share_a_pool_of_kept_alive_connections(serve_http: Any) -> None:
    s = serve_http("--memory")
    with Client.http(s.url) as c:
        c.remember([{"content": f"pooled value {i}", "key": f"pool/{i}"} for i in range(32)])
        got: Dict[int, Any] = {}
        errors: List[BaseException] = []

        def work(t: int) -> None:
            try:
                for i in range(t, 32, 8):
                    got[i] = c.fetch(f"pool/{i}")["record"]["content"]
            except BaseException as e:  # noqa: B902 — recorded for the assertion
                errors.append(e)
        threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert errors == []
        assert got == {i: f"pooled value {i}" for i in range(32)}
        assert 1 <= c.transport.connections <= 8


def test_a_connection_the_server_closed_while_idle_is_replaced(serve_http: Any) -> None:
    s = serve_http("--memory", "--timeout", "1")
    with Client.http(s.url) as c:
        c.recall("before")
        time.sleep(1.5)  # past the server's --timeout 1: it closes the idle connection
        assert c.recall("after")["records"] == []
        # A write goes out on a new connection too: the dead one was seen first.
        assert len(c.remember([{"content": "after idle"}])["ids"]) == 1
        assert c.transport.connections == 2


def test_the_id_of_a_response_is_the_id_of_its_request(serve_http: Any) -> None:
    s = serve_http("--memory")
    t = HttpTransport(s.url)
    for rid in ["abc", 42, "x" * 100]:
        assert t.request({"jsonrpc": "2.0", "id": rid, "method": "memory/describe", "params": {}})["id"] == rid
    t.close()


def test_tokens_the_token_is_the_caller_and_a_missing_or_wrong_one_is_401(serve_http: Any, tmp_path: Any) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text("token-alice alice\ntoken-bob bob\n")
    s = serve_http("--memory", "--tokens", str(tokens))
    with Client.http(s.url, token="token-alice") as c:
        assert c.supports("scopes")
        ids = c.remember([{"content": "alice writes this"}])["ids"]
        rec = c.recall("alice writes")["records"][0]
        assert rec["id"] == ids[0] and rec["owner"] == "alice"
        with pytest.raises(A2MError) as info:
            c.recall("x", owner="bob")
        assert info.value.code == ErrorCode.SCOPE_DENIED
    with Client.http(s.url, token="token-bob") as bob:
        assert [r for r in bob.recall("alice writes")["records"] if r["owner"] == "alice"] == []
    for options in ({}, {"token": "not-a-token"}):
        with pytest.raises(TransportError) as err:
            Client.http(s.url, **options)
        assert not isinstance(err.value, A2MError)
        assert err.value.status == 401


def test_read_only_remember_and_forget_are_read_only_sent_once(serve_http: Any, tmp_path: Any) -> None:
    db = str(tmp_path / "ro.db")
    with Client.stdio([A2M, "serve", "--db", db]) as writer:
        writer.remember([{"content": "a fact loaded before the store turned read-only", "key": "ro/fact"}])
    s = serve_http("--db", db, "--read-only")
    t = Recording(HttpTransport(s.url))
    c = Client(t)
    t.sent.clear()
    # Ids on every record make the write safe to repeat: it is still sent once.
    for call in (lambda: c.remember([{"content": "refused", "id": "r-1"}]), lambda: c.forget(ids=["x"])):
        with pytest.raises(A2MError) as info:
            call()
        assert info.value.code == ErrorCode.READ_ONLY == -32004
        assert info.value.code_name == "READ_ONLY"
    assert [m["method"] for m in t.sent] == ["memory/remember", "memory/forget"]
    # Reads work as usual (§2.1), and so does the connection.
    assert c.recall("fact loaded")["records"][0]["key"] == "ro/fact"
    assert len(c.timeline()["records"]) == 1
    c.close()


@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_core_only_every_undeclared_method_is_refused_unsent(serve_http: Any, transport: str) -> None:
    if transport == "http":
        t = Recording(HttpTransport(serve_http("--memory", "--capabilities", "core").url))
    else:
        from a2m_client import StdioTransport
        t = Recording(StdioTransport([A2M, "serve", "--memory", "--capabilities", "core"]))
    c = Client(t)
    assert c.capabilities == ["core"]
    t.sent.clear()
    calls: Dict[str, List[Any]] = {
        "tiers": [lambda: c.promote(["x"], "semantic"), c.consolidate],
        "salience": [lambda: c.reinforce(["x"])],
        "keys": [lambda: c.fetch("k")],
        "sessions": [c.session_list, lambda: c.session_close("s")],
        "events": [c.events, c.events_subscribe, c.events_unsubscribe, c.subscribe, c.watch],
        "summarize": [lambda: c.summarize(query="x")],
    }
    for capability, fns in calls.items():
        for fn in fns:
            with pytest.raises(A2MError) as info:
                fn()
            assert info.value.code == ErrorCode.CAPABILITY_NOT_SUPPORTED
            assert info.value.data == {"capability": capability}
    assert t.sent == []
    ids = c.remember([{"content": "core only"}])["ids"]
    assert c.recall("core")["records"][0]["id"] == ids[0]
    assert c.forget(ids=ids) == {"forgotten": 1}
    assert [m["method"] for m in t.sent] == ["memory/remember", "memory/recall", "memory/forget"]
    c.close()


def test_a_version_the_server_does_not_speak_is_protocol_not_supported(serve_http: Any) -> None:
    s = serve_http("--memory")
    with pytest.raises(A2MError) as info:
        Client.http(s.url, protocol="a2m/0.9")
    assert info.value.code == ErrorCode.PROTOCOL_NOT_SUPPORTED
    assert info.value.data == {"supported": ["a2m/0.1"]}


def test_a_server_that_does_not_answer_in_time_is_a_timeout(serve_http: Any) -> None:
    s = serve_http("--memory")
    with Client.http(s.url) as c:
        suspend(s.proc.pid)
        try:
            with pytest.raises(TransportTimeout):
                c.recall("x", timeout=0.2)
        finally:
            resume(s.proc.pid)
        assert c.recall("x")["records"] == []


class _Fake(http.server.BaseHTTPRequestHandler):
    """Answers describe; what the tests below need of a server they control."""

    protocol_version = "HTTP/1.1"
    seen: List[Dict[str, Any]] = []
    mode = "echo"

    def do_POST(self) -> None:  # noqa: N802 — http.server's name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).seen.append({"headers": dict(self.headers), "body": body, "conn": id(self.connection)})
        # One handler per connection, so this counts the connection's requests.
        self.served = getattr(self, "served", 0) + 1
        if self.mode == "reset-second" and self.served > 1:
            # Linger 0: closing sends a reset, not an orderly end.
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            return
        method = body["method"]
        if method == "memory/describe":
            result: Any = {"protocol": "a2m/0.1", "name": "fake", "capabilities": ["core"], "methods": []}
        elif method == "memory/remember":
            result = {"ids": ["a"]}
        else:
            result = {"records": []}
        rid = "not-the-id" if self.mode == "wrong-id" and method != "memory/describe" else body["id"]
        data = json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def fake() -> Iterator[Any]:
    _Fake.seen = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Fake)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def test_what_is_sent_post_json_version_token_and_never_origin(fake: Any) -> None:
    _Fake.mode = "wrong-id"
    c = Client.http(f"http://127.0.0.1:{fake.server_address[1]}/", token="tok-1")
    h = {k.lower(): v for k, v in _Fake.seen[0]["headers"].items()}
    assert h["content-type"] == "application/json"
    assert h["a2m-protocol-version"] == "a2m/0.1"
    assert h["authorization"] == "Bearer tok-1"
    assert "origin" not in h
    assert _Fake.seen[0]["body"]["jsonrpc"] == "2.0"
    assert _Fake.seen[0]["body"]["params"] == {"protocol": "a2m/0.1"}
    # A response bound to another id is not this call's answer.
    with pytest.raises(TransportError, match="id"):
        c.recall("x")
    c.close()
    with pytest.raises(ValueError):
        HttpTransport("http://127.0.0.1:1/", headers={"Origin": "http://evil"})


def test_a_request_reset_on_a_reused_connection_is_sent_again_only_when_safe(fake: Any) -> None:
    # The fake answers the first request of each connection and resets the
    # connection on the second: a kept-alive connection closing under a request.
    _Fake.mode = "reset-second"
    c = Client.http(f"http://127.0.0.1:{fake.server_address[1]}/")
    assert c.recall("x") == {"records": []}  # reset, then sent again on a new connection
    with pytest.raises(TransportError):
        c.remember([{"content": "no id"}])  # reset, and not sent again
    c.recall("on a new connection")
    assert c.remember([{"content": "with id", "id": "a"}]) == {"ids": ["a"]}  # idempotent: sent again
    assert [s["body"]["method"] for s in _Fake.seen] == [
        "memory/describe", "memory/recall", "memory/recall", "memory/remember",
        "memory/recall", "memory/remember", "memory/remember"]
    c.close()


def test_https_with_a_certificate_the_client_is_told_to_trust(serve_http: Any, tmp_path: Any) -> None:
    key, cert = str(tmp_path / "key.pem"), str(tmp_path / "cert.pem")
    made = subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost",
                           "-days", "1", "-keyout", key, "-out", cert], capture_output=True)
    assert made.returncode == 0, made.stderr
    tokens = tmp_path / "tokens"
    tokens.write_text("tls-token carol\n")
    s = serve_http("--memory", "--tokens", str(tokens), "--tls-cert", cert, "--tls-key", key)
    # The certificate names localhost, not the address.
    url = "https://localhost:" + s.url.rsplit(":", 1)[1]
    with Client.http(url, token="tls-token", ca_file=cert) as c:
        ids = c.remember([{"content": "over TLS"}])["ids"]
        rec = c.recall("TLS")["records"][0]
        assert rec["id"] == ids[0] and rec["owner"] == "carol"
    # Without the certificate the connection is refused, as a TransportError.
    with pytest.raises(TransportError) as info:
        Client.http(url, token="tls-token")
    assert not isinstance(info.value, A2MError)
