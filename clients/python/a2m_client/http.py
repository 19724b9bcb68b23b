"""The HTTP binding (spec §8.3): one JSON-RPC message per POST to one
endpoint, over kept-alive connections (http.client).

Every POST carries ``A2M-Protocol-Version`` (§8.3.2) and, when a token is
given, ``Authorization: Bearer`` (§6.1). No ``Origin`` is ever sent: the
header is how a server recognises a browser page (§8.3.1).

A 200 is a JSON-RPC response, error or not (protocol failures are never an
HTTP status, §8.3); a 400 carrying a JSON-RPC error is the version refusal of
§8.3.2 and is returned as that response too. Every other status — 401, 403,
413, 5xx — is a TransportError with the status and the body.

Connections are pooled: a call takes an idle one (or opens one) and gives it
back, so calls from several threads run side by side. A server closes a
connection idle longer than its timeout; an idle connection found closed is
replaced before use, and a request that fails on a reused connection before
any answer is sent again on a new one, once, but only when the caller marked
it safe to repeat — never a write that has no ids.
"""
from __future__ import annotations

import http.client
import json
import select
import socket
import ssl
import threading
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple
from urllib.parse import urlsplit

from ._listeners import CloseListener, Message, NotificationListener
from .errors import TransportError, TransportTimeout

PROTOCOL = "a2m/0.1"
DEFAULT_TIMEOUT = 30.0
_BODY_LIMIT = 256 * 1024 * 1024
# What a kept-alive connection the server had closed looks like.
_STALE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError, ConnectionAbortedError)


class HttpTransport:
    """POSTs to ``url`` (http: or https:).

    token: sent as ``Authorization: Bearer``. headers: extra headers (never
    Origin). timeout: default seconds per call (None: forever). ca_file: a
    PEM file to trust (a self-signed server); ssl_context: a context of your
    own instead. protocol: the version header's value. max_idle: idle
    connections kept.
    """

    push = False

    def __init__(
        self,
        url: str,
        *,
        token: Optional[str] = None,
        headers: Optional[Mapping[str, str]] = None,
        timeout: Optional[float] = DEFAULT_TIMEOUT,
        ca_file: Optional[str] = None,
        ssl_context: Optional[ssl.SSLContext] = None,
        protocol: str = PROTOCOL,
        max_idle: int = 4,
    ) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http or https URL: {url}")
        self._secure = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port or (443 if self._secure else 80)
        self._path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        if self._secure:
            self._ssl = ssl_context or ssl.create_default_context(cafile=ca_file)
        self._timeout = timeout
        hdrs: Dict[str, str] = {}
        for k, v in (headers or {}).items():
            if k.lower() == "origin":
                raise ValueError("an A2M client sends no Origin header (spec §8.3.1)")
            hdrs[k] = v
        hdrs["Content-Type"] = "application/json"
        hdrs["Accept"] = "application/json"
        hdrs["A2M-Protocol-Version"] = protocol
        if token:
            hdrs["Authorization"] = f"Bearer {token}"
        self._headers = hdrs
        self._lock = threading.Lock()
        self._idle: List[http.client.HTTPConnection] = []
        self._max_idle = max_idle
        self._closed = False
        self.connections = 0
        """How many connections this transport has opened (kept alive, usually 1)."""

    def request(self, message: Message, timeout: Any = ..., repeatable: bool = False) -> Message:
        """POSTs one request and returns the response dict. ``repeatable``
        allows the one resend described in the module's comment."""
        if message.get("id") is None:
            raise ValueError("a request needs an id")
        if timeout is ...:
            timeout = self._timeout
        body = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        method = message.get("method")
        try:
            status, ctype, data = self._post(body, method, timeout)
        except _StaleConnection as e:
            if not repeatable:
                raise TransportError(f"{method}: {e.cause}") from e.cause
            status, ctype, data = self._post(body, method, timeout, fresh=True)
        if status in (200, 400):
            response = _parse_response(status, ctype, data)
            if response is not None:
                return response
        raise _status_error(status, data)

    def notify(self, message: Message) -> None:
        """POSTs a notification; the server answers 202 with no body."""
        body = json.dumps(message, separators=(",", ":")).encode("utf-8")
        try:
            status, _, data = self._post(body, message.get("method"), self._timeout)
        except _StaleConnection as e:
            raise TransportError(str(e.cause)) from e.cause
        if status != 202:
            raise _status_error(status, data)

    def on_notification(self, fn: NotificationListener) -> Callable[[], None]:
        """There are never notifications over HTTP."""
        return lambda: None

    def on_close(self, fn: CloseListener) -> Callable[[], None]:
        return lambda: None

    def close(self) -> Optional[int]:
        """Closes the kept-alive connections; later calls fail."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()
        return 0

    def _connect(self, timeout: Optional[float]) -> http.client.HTTPConnection:
        if self._secure:
            conn: http.client.HTTPConnection = http.client.HTTPSConnection(
                self._host, self._port, timeout=timeout, context=self._ssl)
        else:
            conn = http.client.HTTPConnection(self._host, self._port, timeout=timeout)
        with self._lock:
            self.connections += 1
        return conn

    def _take(self, timeout: Optional[float], fresh: bool) -> Tuple[http.client.HTTPConnection, bool]:
        while not fresh:
            with self._lock:
                if self._closed:
                    raise TransportError("the transport is closed")
                if not self._idle:
                    break
                conn = self._idle.pop()
            if _usable(conn):
                return conn, True
            conn.close()
        with self._lock:
            if self._closed:
                raise TransportError("the transport is closed")
        return self._connect(timeout), False

    def _give_back(self, conn: http.client.HTTPConnection) -> None:
        with self._lock:
            if not self._closed and len(self._idle) < self._max_idle:
                self._idle.append(conn)
                return
        conn.close()

    def _post(self, body: bytes, method: Any, timeout: Optional[float], fresh: bool = False) -> Tuple[int, str, bytes]:
        conn, reused = self._take(timeout, fresh)
        try:
            if conn.sock is not None:
                conn.sock.settimeout(timeout)
            else:
                conn.timeout = timeout
            conn.request("POST", self._path, body=body, headers=self._headers)
            resp = conn.getresponse()
            data = resp.read(_BODY_LIMIT + 1)
            if len(data) > _BODY_LIMIT:
                raise TransportError(f"{method}: response larger than {_BODY_LIMIT} bytes")
            status, ctype = resp.status, resp.getheader("Content-Type", "")
        except socket.timeout as e:
            conn.close()
            raise TransportTimeout(method, timeout if timeout is not None else 0.0) from e
        except _STALE as e:
            conn.close()
            if reused:
                raise _StaleConnection(e) from e
            raise TransportError(f"{method}: {e}") from e
        except (OSError, http.client.HTTPException) as e:
            conn.close()
            raise TransportError(f"{method}: {e}") from e
        except BaseException:
            conn.close()
            raise
        if resp.will_close:
            conn.close()
        else:
            self._give_back(conn)
        return status, ctype, data


class _StaleConnection(Exception):
    def __init__(self, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.cause = cause


def _usable(conn: http.client.HTTPConnection) -> bool:
    """An idle kept-alive connection is usable while nothing can be read
    from it: readable means the server closed it (or broke the protocol)."""
    sock = conn.sock
    if sock is None:
        return False
    try:
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return False
    return not readable


def _parse_response(status: int, ctype: str, data: bytes) -> Optional[Message]:
    if not ctype.lower().startswith("application/json"):
        return None
    try:
        message = json.loads(data)
    except ValueError:
        return None
    if not isinstance(message, dict):
        return None
    if status == 200 and ("result" in message or "error" in message):
        return message
    if status == 400 and isinstance(message.get("error"), dict):
        return message
    return None


def _status_error(status: int, data: bytes) -> TransportError:
    text = data.decode("utf-8", "replace")
    shown = text[:500] + ("..." if len(text) > 500 else "")
    return TransportError(f"HTTP {status}" + (f": {shown.strip()}" if shown.strip() else ""), status=status, body=text)
