"""The stdio binding (spec §8.2): the server is a child process, one JSON-RPC
message per line each way.

A reader thread takes every line the server writes. Responses are matched to
the calls waiting for them by id, whatever order they come in; every other
line — a ``memory/event`` notification after a subscribe — goes to the
notification listeners as it arrives, so notifications may interleave with
responses anywhere (§8.2 requires a client to tolerate it). Closing stdin is
the shutdown signal the spec names; close() sends SIGTERM, then SIGKILL, to a
server that does not take the hint.
"""
from __future__ import annotations

import json
import subprocess
import threading
from collections import deque
from typing import Any, Callable, Dict, Mapping, Optional, Sequence

from ._listeners import CloseListener, Listeners, Message, NotificationListener, classify, id_key
from .errors import TransportError, TransportTimeout

DEFAULT_TIMEOUT = 30.0
DEFAULT_CLOSE_TIMEOUT = 5.0
DEFAULT_MAX_LINE = 64 * 1024 * 1024
_STDERR_TAIL = 4096


class _Waiter:
    __slots__ = ("done", "response", "error")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.response: Optional[Message] = None
        self.error: Optional[Exception] = None


class StdioTransport:
    """Starts ``argv`` (e.g. ``["a2m", "serve", "--memory"]``) and speaks to it.

    stderr: "inherit" (the server's logs go where ours do, the default),
    "pipe" (its last few KB are kept and quoted when it exits), or "devnull".
    timeout: the default seconds a call waits (None: forever). close_timeout:
    how long close() waits for the exit before SIGTERM. Raises TransportError
    when the command cannot be started.
    """

    push = True

    def __init__(
        self,
        argv: Sequence[str],
        *,
        cwd: Optional[str] = None,
        env: Optional[Mapping[str, str]] = None,
        stderr: str = "inherit",
        timeout: Optional[float] = DEFAULT_TIMEOUT,
        close_timeout: float = DEFAULT_CLOSE_TIMEOUT,
        max_line: int = DEFAULT_MAX_LINE,
    ) -> None:
        if stderr not in ("inherit", "pipe", "devnull"):
            raise ValueError("stderr must be 'inherit', 'pipe' or 'devnull'")
        self._timeout = timeout
        self._close_timeout = close_timeout
        self._max_line = max_line
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._pending: Dict[Any, _Waiter] = {}
        self._listeners = Listeners()
        self._failure: Optional[TransportError] = None
        self._closing = False
        self._stderr_tail: deque = deque()
        self._stderr_size = 0
        err_target = {"inherit": None, "pipe": subprocess.PIPE, "devnull": subprocess.DEVNULL}[stderr]
        try:
            self._proc = subprocess.Popen(
                list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err_target,
                cwd=cwd, env=dict(env) if env is not None else None,
            )
        except OSError as e:
            raise TransportError(f"cannot start {argv[0] if argv else '(nothing)'}: {e}") from e
        self._stderr_thread: Optional[threading.Thread] = None
        if stderr == "pipe":
            self._stderr_thread = threading.Thread(target=self._drain_stderr, name="a2m-stdio-stderr", daemon=True)
            self._stderr_thread.start()
        self._reader = threading.Thread(target=self._read, name="a2m-stdio-reader", daemon=True)
        self._reader.start()

    @property
    def pid(self) -> int:
        """The server's process id."""
        return self._proc.pid

    @property
    def stderr(self) -> str:
        """The last few KB the server wrote on stderr (with stderr="pipe")."""
        with self._lock:
            return b"".join(self._stderr_tail).decode("utf-8", "replace")

    def request(self, message: Message, timeout: Any = ..., repeatable: bool = False) -> Message:
        """Sends one request (a dict with an ``id``) and returns the response
        dict as received, ``result`` or ``error``. Raises TransportTimeout
        after ``timeout`` seconds, TransportError when the connection fails.
        ``repeatable`` is accepted for the transports that use it.
        """
        if timeout is ...:
            timeout = self._timeout
        rid = message.get("id")
        if rid is None:
            raise ValueError("a request needs an id")
        key = id_key(rid)
        waiter = _Waiter()
        with self._lock:
            if self._failure is not None:
                raise self._failure
            if key in self._pending:
                raise ValueError(f"id {rid!r} is already in flight")
            self._pending[key] = waiter
        try:
            self._write(message)
            if not waiter.done.wait(timeout):
                raise TransportTimeout(message.get("method"), timeout)
        finally:
            with self._lock:
                if self._pending.get(key) is waiter:
                    del self._pending[key]
        if waiter.error is not None:
            raise waiter.error
        assert waiter.response is not None
        return waiter.response

    def notify(self, message: Message) -> None:
        """Sends a notification (no ``id``, no answer)."""
        with self._lock:
            if self._failure is not None:
                raise self._failure
        self._write(message)

    def on_notification(self, fn: NotificationListener) -> Callable[[], None]:
        """Calls fn(message) on the reader thread for every notification;
        returns the function that stops it."""
        return self._listeners.on_notification(fn)

    def on_close(self, fn: CloseListener) -> Callable[[], None]:
        """Calls fn(error, by_close) once the connection is over for good:
        by_close is True when close() ended it, False when it failed."""
        return self._listeners.on_close(fn)

    def close(self) -> Optional[int]:
        """Closes the server's stdin and waits for it to exit (§8.2), then
        SIGTERM, then SIGKILL. Calls still waiting fail. Returns the exit
        status (negative: the signal that ended it). Safe to call twice."""
        with self._lock:
            first = not self._closing
            self._closing = True
        if first:
            self._fail(TransportError("the transport is closed"), by_close=True)
            try:
                self._proc.stdin.close()  # type: ignore[union-attr]
            except OSError:
                pass
            try:
                self._proc.wait(self._close_timeout)
            except subprocess.TimeoutExpired:
                self._proc.terminate()
                try:
                    self._proc.wait(2.0)
                except subprocess.TimeoutExpired:
                    self._proc.kill()
        code = self._proc.wait()
        self._reader.join(5.0)
        return code

    def _write(self, message: Message) -> None:
        # json.dumps escapes every newline inside strings: one message, one line.
        data = (json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
        try:
            with self._write_lock:
                self._proc.stdin.write(data)  # type: ignore[union-attr]
                self._proc.stdin.flush()  # type: ignore[union-attr]
        except (OSError, ValueError) as e:
            # The server is gone; its exit, noticed by the reader with the
            # status and the stderr that says why, is the better message.
            self._reader.join(1.0)
            with self._lock:
                failure = self._failure
            if failure is not None:
                raise failure from e
            err = TransportError(f"writing to the server failed: {e}")
            self._fail(err)
            raise err from e

    def _read(self) -> None:
        out = self._proc.stdout
        assert out is not None
        while True:
            try:
                line = out.readline(self._max_line + 1)
            except (OSError, ValueError):
                line = b""
            if not line:
                break
            if len(line) > self._max_line and not line.endswith(b"\n"):
                self._fail(TransportError(f"the server sent a line longer than {self._max_line} bytes"))
                self._proc.terminate()
                return
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except ValueError:
                # stdout carries only JSON-RPC (§8.2): anything else means
                # the stream can no longer be trusted to frame responses.
                text = line[:200].decode("utf-8", "replace").rstrip()
                self._fail(TransportError(f"the server wrote a line that is not JSON: {text}"))
                self._proc.terminate()
                return
            self._dispatch(message)
        code = self._proc.wait()
        if self._stderr_thread is not None:
            self._stderr_thread.join(1.0)
        with self._lock:
            closing = self._closing
        if not closing:
            how = f"signal {-code}" if code < 0 else f"exit status {code}"
            tail = self.stderr.strip()
            self._fail(TransportError(f"the server exited ({how})" + (f": {tail}" if tail else "")))

    def _dispatch(self, message: Any) -> None:
        kind = classify(message)
        if kind == "response":
            rid = message.get("id")
            with self._lock:
                if rid is not None:
                    waiter = self._pending.get(id_key(rid))
                else:
                    # An error with id null: the server could not read a
                    # request's id (too long, unparsable). It answers lines
                    # in order, so it is the oldest request still waiting.
                    waiter = next(iter(self._pending.values()), None)
            # A response to nothing we wait for (a call that timed out) is dropped.
            if waiter is not None and not waiter.done.is_set():
                waiter.response = message
                waiter.done.set()
        elif kind == "notification":
            self._listeners.notify(message)

    def _drain_stderr(self) -> None:
        err = self._proc.stderr
        assert err is not None
        for chunk in iter(lambda: err.read1(4096), b""):  # type: ignore[attr-defined]
            with self._lock:
                self._stderr_tail.append(chunk)
                self._stderr_size += len(chunk)
                while self._stderr_size - len(self._stderr_tail[0]) >= _STDERR_TAIL:
                    self._stderr_size -= len(self._stderr_tail.popleft())

    def _fail(self, error: TransportError, by_close: bool = False) -> None:
        with self._lock:
            if self._failure is not None:
                return
            self._failure = error
            waiters = list(self._pending.values())
        for w in waiters:
            if not w.done.is_set():
                w.error = error
                w.done.set()
        self._listeners.closed(error, by_close)
