"""Watching a store (spec §4.12–§4.14) as iterators.

EventWatch polls ``memory/events`` with the cursor of its previous poll:
every transport can carry it, and successive polls see every retained event
exactly once, in order. Subscription is push: ``memory/event`` notifications
on a transport that can carry them (stdio, in-process), after
``memory/events/subscribe``. Both read one log (§4.13), so a push consumer
that falls behind can always catch up by polling.
"""
from __future__ import annotations

import collections
import threading
from typing import TYPE_CHECKING, Any, Callable, Deque, Dict, Iterator, List, Optional

from .errors import TransportError
from .types import EventsResult, MemoryEvent

if TYPE_CHECKING:
    from .client import Client

DEFAULT_INTERVAL = 1.0
DEFAULT_MAX_BUFFERED = 10_000


class EventWatch:
    """Polls memory/events; iterate it (``for event in client.watch(): ...``).

    ``cursor`` is the position after the last batch handed out whole (its
    last event received): a consumer that stops in the middle of a batch
    resumes from before it, so it may see an event twice but never misses
    one. ``on_reset(reply)`` is called when the server could not honour the
    cursor and events may have been missed (§4.12).
    """

    def __init__(
        self,
        client: "Client",
        *,
        cursor: Optional[str] = None,
        kinds: Optional[List[str]] = None,
        limit: Optional[int] = None,
        owner: Optional[str] = None,
        interval: float = DEFAULT_INTERVAL,
        on_reset: Optional[Callable[[EventsResult], Any]] = None,
    ) -> None:
        self._client = client
        self.cursor = cursor
        self._params: Dict[str, Any] = {}
        if kinds is not None:
            self._params["kinds"] = kinds
        if limit is not None:
            self._params["limit"] = limit
        if owner is not None:
            self._params["owner"] = owner
        self._interval = interval
        self._on_reset = on_reset
        self._stop = threading.Event()

    def __iter__(self) -> Iterator[MemoryEvent]:
        if self.cursor is None:
            # No cursor means "now": the reply is the head, with no events.
            self.cursor = self._client.events(**self._params)["cursor"]
        while not self._stop.is_set():
            reply = self._client.events(cursor=self.cursor, **self._params)
            if reply.get("reset") and self._on_reset is not None:
                self._on_reset(reply)
            events = reply["events"]
            if not events:
                self.cursor = reply["cursor"]
            for i, event in enumerate(events):
                if self._stop.is_set():
                    return
                if i == len(events) - 1:
                    self.cursor = reply["cursor"]
                yield event
            if not reply.get("more"):
                self._stop.wait(self._interval)

    def close(self) -> None:
        """Ends the iteration at its next step (a waiting poll ends at once)."""
        self._stop.set()


_END = object()


class Subscription:
    """The ``memory/event`` notifications of one connection, as an iterator
    of event dicts. Made by Client.subscribe(); close() (or leaving its
    ``with`` block) unsubscribes. ``get(timeout)`` waits at most that long
    and returns None when nothing came.
    """

    def __init__(self, client: "Client", transport: Any, *, max_buffered: int = DEFAULT_MAX_BUFFERED) -> None:
        self._client = client
        self._max_buffered = max_buffered
        self._queue: Deque[Any] = collections.deque()
        self._cond = threading.Condition()
        self._error: Optional[BaseException] = None
        self._done = False
        # Listening starts before the subscribe request is sent: a
        # notification may follow its response on the same read.
        self._stop_listening = transport.on_notification(self._on_message)
        self._stop_close = transport.on_close(lambda err, by_close: self._end(None if by_close else err))

    @property
    def buffered(self) -> int:
        """How many events have arrived and not been read yet."""
        with self._cond:
            return len(self._queue)

    def __iter__(self) -> "Subscription":
        return self

    def __next__(self) -> MemoryEvent:
        event = self._next(None)
        if event is _END:
            raise StopIteration
        return event  # type: ignore[return-value]

    def get(self, timeout: Optional[float] = None) -> Optional[MemoryEvent]:
        """The next event, waiting at most ``timeout`` seconds; None if none
        came or the subscription has ended."""
        event = self._next(timeout)
        return None if event is _END or event is None else event  # type: ignore[return-value]

    def close(self) -> None:
        """Unsubscribes (memory/events/unsubscribe) and ends the iteration."""
        with self._cond:
            if self._done:
                return
        self._end(None)
        try:
            self._client.events_unsubscribe()
        except TransportError:
            pass  # the connection is gone, and the subscription with it (§4.13)

    def detach(self) -> None:
        """Ends this object without telling the server (the subscribe failed)."""
        self._end(None)

    def __enter__(self) -> "Subscription":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _next(self, timeout: Optional[float]) -> Any:
        with self._cond:
            if not self._cond.wait_for(lambda: self._queue or self._done, timeout):
                return None
            if self._queue:
                return self._queue.popleft()
            if self._error is not None:
                raise self._error
            return _END

    def _on_message(self, message: Dict[str, Any]) -> None:
        params = message.get("params")
        if message.get("method") != "memory/event" or not isinstance(params, dict):
            return
        with self._cond:
            if self._done:
                return
            if len(self._queue) >= self._max_buffered:
                overflow = TransportError(
                    f"more than {self._max_buffered} pushed events unread; catch up with memory/events")
            else:
                self._queue.append(params)
                self._cond.notify_all()
                return
        self._end(overflow)

    def _end(self, error: Optional[BaseException]) -> None:
        with self._cond:
            if self._done:
                return
            self._done = True
            self._error = error
            self._cond.notify_all()
        self._stop_listening()
        self._stop_close()
        self._client._subscription_ended(self)
