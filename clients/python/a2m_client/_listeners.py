"""What every transport shares: its notification and close listeners, and
the key a JSON-RPC id is matched by.
"""
from __future__ import annotations

import threading
from typing import Any, Callable, Dict, List, Optional, Tuple

from .errors import TransportError

Message = Dict[str, Any]
NotificationListener = Callable[[Message], None]
CloseListener = Callable[[TransportError, bool], None]


def id_key(value: Any) -> Tuple[str, Any]:
    """The key a response is matched to its request by.

    The id is compared as it is, type included: the number 1 and the string
    "1" are two ids (DECISIONS 022: an id normalised on the way is a
    response nobody waits for). Python's own 1 == 1.0 == True is no help
    here, so the type's name is part of the key.
    """
    return (type(value).__name__, value)


class Listeners:
    """Notification and close listeners, safe to add and remove from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._notification: List[NotificationListener] = []
        self._close: List[CloseListener] = []

    def on_notification(self, fn: NotificationListener) -> Callable[[], None]:
        with self._lock:
            self._notification.append(fn)
        return lambda: self._remove(self._notification, fn)

    def on_close(self, fn: CloseListener) -> Callable[[], None]:
        with self._lock:
            self._close.append(fn)
        return lambda: self._remove(self._close, fn)

    def notify(self, message: Message) -> None:
        with self._lock:
            fns = list(self._notification)
        for fn in fns:
            fn(message)

    def closed(self, error: TransportError, by_close: bool) -> None:
        with self._lock:
            fns = list(self._close)
        for fn in fns:
            fn(error, by_close)

    def _remove(self, items: List[Any], fn: Any) -> None:
        with self._lock:
            if fn in items:
                items.remove(fn)


def classify(message: Any) -> Optional[str]:
    """'response', 'notification', or None for anything a client ignores
    (not an object, or a request from the server, which §8 forbids)."""
    if not isinstance(message, dict):
        return None
    if "result" in message or "error" in message:
        return "response"
    if isinstance(message.get("method"), str) and "id" not in message:
        return "notification"
    return None
