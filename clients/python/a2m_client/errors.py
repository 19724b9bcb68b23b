"""What can go wrong in a call, as exceptions a caller can tell apart.

A2MError is the protocol speaking: a JSON-RPC error object the server sent
(or one this client raised in the server's place, such as -32003 for a method
whose capability the server did not declare), with its code, message and
data exactly as the error object had them.

TransportError is the connection failing: a process that would not start or
exited, an HTTP status other than 200, a response that was not JSON.
TransportTimeout, a TransportError, is a call the server did not answer in
time. Keeping the two families apart is what lets a caller treat READ_ONLY
(spec §2.1) as an answer, never as a broken connection to retry.
"""
from __future__ import annotations

import builtins
import enum
from typing import Any, Optional


class ErrorCode(enum.IntEnum):
    """The error codes of spec §7, by name."""

    PARSE_ERROR = -32700
    INVALID_REQUEST = -32600
    METHOD_NOT_FOUND = -32601
    INVALID_PARAMS = -32602
    INTERNAL_ERROR = -32603
    UNKNOWN_RECORD = -32001
    UNKNOWN_TIER = -32002
    CAPABILITY_NOT_SUPPORTED = -32003
    READ_ONLY = -32004
    SCOPE_DENIED = -32005
    QUOTA_EXCEEDED = -32006
    PROTOCOL_NOT_SUPPORTED = -32007
    EMBEDDING_MISMATCH = -32008


_MISSING = object()


class A2MError(Exception):
    """A JSON-RPC error object, from the server or raised in its place.

    ``code`` is the integer code; ``code_name`` the spec's name for it (None
    for a code outside §7); ``data`` the error object's ``data`` (None when it
    had none: ``has_data`` tells the two apart); ``method`` the method whose
    call failed. ``message`` is for humans and must not be parsed (§7).
    """

    def __init__(self, code: int, message: str, data: Any = _MISSING, method: Optional[str] = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.has_data = data is not _MISSING
        self.data = None if data is _MISSING else data
        self.method = method

    @property
    def code_name(self) -> Optional[str]:
        try:
            return ErrorCode(self.code).name
        except ValueError:
            return None

    @classmethod
    def from_object(cls, error: Any, method: Optional[str] = None) -> "A2MError":
        """Builds the error from a JSON-RPC error object as received."""
        if not isinstance(error, dict):
            return cls(ErrorCode.INTERNAL_ERROR, "error that is not an object", method=method)
        code = error.get("code")
        if not isinstance(code, int) or isinstance(code, bool):
            code = int(ErrorCode.INTERNAL_ERROR)
        message = error.get("message")
        if not isinstance(message, str):
            message = "error without a message"
        return cls(code, message, error["data"] if "data" in error else _MISSING, method)

    def __str__(self) -> str:
        name = self.code_name
        return f"{self.message} ({self.code}{' ' + name if name else ''})"

    def __repr__(self) -> str:
        return f"A2MError(code={self.code}, message={self.message!r}, data={self.data!r}, method={self.method!r})"


class TransportError(Exception):
    """The connection failed; the request may or may not have reached the server.

    Over HTTP, ``status`` and ``body`` are those of a response that was not
    200 (401, 403, 413, 5xx); otherwise both are None.
    """

    def __init__(self, message: str, *, status: Optional[int] = None, body: Optional[str] = None) -> None:
        super().__init__(message)
        self.status = status
        self.body = body


class TransportTimeout(TransportError, builtins.TimeoutError):
    """The server did not answer within the call's timeout (seconds)."""

    def __init__(self, method: Optional[str], timeout: float) -> None:
        super().__init__(f"{method}: no answer within {timeout:g} s")
        self.timeout = timeout
