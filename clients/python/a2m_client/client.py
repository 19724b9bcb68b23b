"""Client: the A2M 0.1 methods over any transport.

A Client calls ``memory/describe`` when it is made, before anything else
(spec §2: a client MUST), and keeps the answer. From then on every method
checks the capability it belongs to against that answer and refuses, without
sending anything, a method the server did not declare: the caller gets the
same A2MError with -32003 the server would have sent (§2: a client MUST NOT
call it). Results are the server's dicts as received: fields this client does
not know are kept, timestamps stay RFC 3339 strings (§3.3), ids stay opaque
strings (§3.2).

Nothing is retried, with one exception invisible to the protocol: over HTTP
a request the server never read (a kept-alive connection it had closed) is
sent again on a new connection if the method is safe to repeat. READ_ONLY,
like every A2M error, is an answer and is raised as such.
"""
from __future__ import annotations

import itertools
import threading
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union

from .errors import A2MError, ErrorCode, TransportError
from .events import EventWatch, Subscription
from .http import PROTOCOL, HttpTransport
from .stdio import StdioTransport
from .types import (
    ConsolidateResult, DescribeResult, EventsResult, FetchResult, ForgetResult, NewRecord,
    PromoteResult, PromptOption, RecordsResult, ReinforceResult, RememberResult,
    SessionCloseResult, SessionListResult, SubscribeResult, SummarizeResult, Where,
)

#: Which capability each method of the spec belongs to (§2).
METHOD_CAPABILITY: Mapping[str, str] = {
    "memory/describe": "core",
    "memory/remember": "core",
    "memory/recall": "core",
    "memory/timeline": "core",
    "memory/forget": "core",
    "memory/promote": "tiers",
    "memory/consolidate": "tiers",
    "memory/reinforce": "salience",
    "memory/fetch": "keys",
    "memory/session/list": "sessions",
    "memory/session/close": "sessions",
    "memory/events": "events",
    "memory/events/subscribe": "events",
    "memory/events/unsubscribe": "events",
    "memory/summarize": "summarize",
}

# Methods that change nothing when sent twice, so a request the server never
# read may be sent again. remember joins them when every record has an id
# (§3.2: a client-supplied id makes the write idempotent).
_REPEATABLE = frozenset({
    "memory/describe", "memory/recall", "memory/timeline", "memory/fetch",
    "memory/session/list", "memory/events",
})

_DEFAULT = ...  # "the client's timeout", distinct from None ("wait forever")


def _compatible(version: Any) -> bool:
    """Whether a server's protocol version is one this client speaks (§4.1, §9)."""
    return isinstance(version, str) and (version == PROTOCOL or version.startswith(PROTOCOL + "."))


def _params(extra: Mapping[str, Any], **named: Any) -> Dict[str, Any]:
    """The params object: the named ones that were given, then any others
    the caller passed (a server ignores what it does not know, §2)."""
    out = {k: v for k, v in named.items() if v is not None}
    out.update({k: v for k, v in extra.items() if v is not None})
    return out


def _repeatable(method: str, params: Any) -> bool:
    if method in _REPEATABLE:
        return True
    if method != "memory/remember" or not isinstance(params, dict):
        return False
    records = params.get("records")
    return (isinstance(records, list) and len(records) > 0
            and all(isinstance(r, dict) and isinstance(r.get("id"), str) and r["id"] for r in records))


class Client:
    """An A2M client on ``transport``; calls memory/describe at once.

    Make one with Client.stdio(), Client.http() or Client.inprocess(), or
    pass a transport of your own. ``timeout`` is the default seconds a call
    waits (None: forever). ``owner`` scopes describe's counts. Raises the
    A2MError or TransportError of a failed describe (the transport is then
    closed), and A2MError PROTOCOL_NOT_SUPPORTED for a server of another
    protocol version. Usable as a context manager; safe to share between
    threads.
    """

    def __init__(self, transport: Any, *, timeout: Any = _DEFAULT, owner: Optional[str] = None) -> None:
        self._transport = transport
        self._timeout = timeout
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._description: Optional[DescribeResult] = None
        self._capabilities: frozenset = frozenset()
        self._subscription: Optional[Subscription] = None
        try:
            self.describe(owner=owner)
        except BaseException:
            transport.close()
            raise

    @classmethod
    def stdio(cls, argv: Sequence[str], *, timeout: Any = _DEFAULT, owner: Optional[str] = None,
              **options: Any) -> "Client":
        """Starts ``argv`` (e.g. ``["a2m", "serve", "--memory"]``) and connects
        over stdio; ``options`` go to StdioTransport (cwd, env, stderr,
        close_timeout)."""
        transport = StdioTransport(argv, **options)
        return cls(transport, timeout=timeout, owner=owner)

    @classmethod
    def http(cls, url: str, *, timeout: Any = _DEFAULT, owner: Optional[str] = None, **options: Any) -> "Client":
        """Connects to an HTTP endpoint; ``options`` go to HttpTransport
        (token, headers, ca_file, ssl_context, protocol)."""
        return cls(HttpTransport(url, **options), timeout=timeout, owner=owner)

    @classmethod
    def inprocess(cls, *, owner: Optional[str] = None, **options: Any) -> "Client":
        """Opens a store in this process through liba2m (ctypes); ``options``
        go to InProcessTransport (library, engine, path, capabilities, config)."""
        from .inprocess import InProcessTransport
        return cls(InProcessTransport(**options), owner=owner)

    # ------------------------------------------------------------------ state

    @property
    def transport(self) -> Any:
        return self._transport

    @property
    def description(self) -> DescribeResult:
        """The last memory/describe result, unchanged."""
        assert self._description is not None
        return self._description

    @property
    def capabilities(self) -> List[str]:
        """The capabilities the server declared, in its order."""
        return list(self.description["capabilities"])

    def supports(self, capability: str) -> bool:
        """Whether the server declared ``capability``."""
        return capability in self._capabilities

    @property
    def can_push(self) -> bool:
        """Whether memory/events/subscribe can work on this connection: the
        server declared ``events`` with ``push: true``, which it does only
        when the transport can carry notifications (§4.13)."""
        events = self.description.get("events")
        return (self.supports("events") and isinstance(events, dict) and events.get("push") is True
                and bool(getattr(self._transport, "push", False)))

    # ------------------------------------------------------------------ calls

    def call(self, method: str, params: Optional[Mapping[str, Any]] = None, *, timeout: Any = _DEFAULT) -> Any:
        """Sends ``method`` and returns its result; raises the A2MError of an
        error response. Refuses a method of an undeclared capability without
        sending it. Methods not in the spec are sent as they are."""
        if method != "memory/describe":
            capability = METHOD_CAPABILITY.get(method)
            if capability is not None and capability not in self._capabilities:
                raise A2MError(
                    ErrorCode.CAPABILITY_NOT_SUPPORTED,
                    f"{method} needs the '{capability}' capability, which this server does not declare",
                    {"capability": capability}, method)
        rid = next(self._ids)
        message: Dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            message["params"] = dict(params)
        if timeout is _DEFAULT:
            timeout = self._timeout
        kwargs: Dict[str, Any] = {"repeatable": _repeatable(method, message.get("params"))}
        if timeout is not _DEFAULT:
            kwargs["timeout"] = timeout
        response = self._transport.request(message, **kwargs)
        # A response is bound to its request by the id, echoed unchanged
        # (JSON-RPC 2.0); only an error may carry null, when the server could
        # not read the request's id.
        rid_back = response.get("id")
        if not (type(rid_back) is int and rid_back == rid) and not (rid_back is None and "error" in response):
            raise TransportError(f"{method}: the response carries id {rid_back!r}, not {rid}")
        if "error" in response:
            raise A2MError.from_object(response["error"], method)
        if "result" not in response:
            raise TransportError(f"{method}: a response with neither result nor error")
        return response["result"]

    def describe(self, *, owner: Optional[str] = None, timeout: Any = _DEFAULT, **extra: Any) -> DescribeResult:
        """memory/describe (§4.1): sends the protocol this client speaks and
        keeps the answer for the checks of later calls."""
        result = self.call("memory/describe", _params(extra, protocol=PROTOCOL, owner=owner), timeout=timeout)
        if not isinstance(result, dict) or not isinstance(result.get("capabilities"), list):
            raise TransportError("memory/describe: the result has no capabilities list")
        if not _compatible(result.get("protocol")):
            raise A2MError(
                ErrorCode.PROTOCOL_NOT_SUPPORTED,
                f"the server speaks {result.get('protocol')}; this client speaks {PROTOCOL}",
                {"supported": [PROTOCOL], "server": result.get("protocol")}, "memory/describe")
        with self._lock:
            self._description = result  # type: ignore[assignment]
            self._capabilities = frozenset(c for c in result["capabilities"] if isinstance(c, str))
        return result  # type: ignore[return-value]

    def remember(self, records: Iterable[Union[NewRecord, Mapping[str, Any]]], *, owner: Optional[str] = None,
                 timeout: Any = _DEFAULT, **extra: Any) -> RememberResult:
        """memory/remember (§4.2): ids, one per record, in order."""
        return self.call("memory/remember", _params(extra, records=[dict(r) for r in records], owner=owner),
                         timeout=timeout)

    def recall(self, query: Optional[str] = None, *, tier: Optional[str] = None, limit: Optional[int] = None,
               where: Optional[Where] = None, min_score: Optional[float] = None, owner: Optional[str] = None,
               embedding: Optional[Sequence[float]] = None, key_prefix: Optional[str] = None,
               embeddings: Optional[bool] = None, prompt: Optional[PromptOption] = None,
               timeout: Any = _DEFAULT, **extra: Any) -> RecordsResult:
        """memory/recall (§4.3): records by descending score; ``prompt``
        (§4.16) adds the rendered text when the server declares ``prompt``."""
        params = _params(extra, query=query, tier=tier, limit=limit, where=where, min_score=min_score,
                         owner=owner, embedding=list(embedding) if embedding is not None else None,
                         key_prefix=key_prefix, embeddings=embeddings, prompt=prompt)
        return self.call("memory/recall", params, timeout=timeout)

    def timeline(self, *, tier: Optional[str] = None, limit: Optional[int] = None, owner: Optional[str] = None,
                 where: Optional[Where] = None, key_prefix: Optional[str] = None,
                 embeddings: Optional[bool] = None, prompt: Optional[PromptOption] = None,
                 timeout: Any = _DEFAULT, **extra: Any) -> RecordsResult:
        """memory/timeline (§4.4): oldest first; ``limit`` takes the newest."""
        params = _params(extra, tier=tier, limit=limit, owner=owner, where=where, key_prefix=key_prefix,
                         embeddings=embeddings, prompt=prompt)
        return self.call("memory/timeline", params, timeout=timeout)

    def forget(self, *, ids: Optional[Sequence[str]] = None, query: Optional[str] = None,
               tier: Optional[str] = None, where: Optional[Where] = None, owner: Optional[str] = None,
               key_prefix: Optional[str] = None, timeout: Any = _DEFAULT, **extra: Any) -> ForgetResult:
        """memory/forget (§4.5): at least one selector, or INVALID_PARAMS."""
        params = _params(extra, ids=list(ids) if ids is not None else None, query=query, tier=tier,
                         where=where, owner=owner, key_prefix=key_prefix)
        return self.call("memory/forget", params, timeout=timeout)

    def promote(self, ids: Sequence[str], tier: str, *, salience: Optional[float] = None,
                timeout: Any = _DEFAULT, **extra: Any) -> PromoteResult:
        """memory/promote (§4.6, tiers)."""
        return self.call("memory/promote", _params(extra, ids=list(ids), tier=tier, salience=salience),
                         timeout=timeout)

    def consolidate(self, *, timeout: Any = _DEFAULT, **extra: Any) -> ConsolidateResult:
        """memory/consolidate (§4.7, tiers)."""
        return self.call("memory/consolidate", _params(extra), timeout=timeout)

    def reinforce(self, ids: Sequence[str], *, amount: Optional[float] = None, timeout: Any = _DEFAULT,
                  **extra: Any) -> ReinforceResult:
        """memory/reinforce (§4.8, salience)."""
        return self.call("memory/reinforce", _params(extra, ids=list(ids), amount=amount), timeout=timeout)

    def fetch(self, key: str, *, owner: Optional[str] = None, embeddings: Optional[bool] = None,
              timeout: Any = _DEFAULT, **extra: Any) -> FetchResult:
        """memory/fetch (§4.9, keys): ``{"record": None}`` for an unused key."""
        return self.call("memory/fetch", _params(extra, key=key, owner=owner, embeddings=embeddings),
                         timeout=timeout)

    def session_list(self, *, owner: Optional[str] = None, timeout: Any = _DEFAULT,
                     **extra: Any) -> SessionListResult:
        """memory/session/list (§4.10, sessions)."""
        return self.call("memory/session/list", _params(extra, owner=owner), timeout=timeout)

    def session_close(self, session: str, *, owner: Optional[str] = None, timeout: Any = _DEFAULT,
                      **extra: Any) -> SessionCloseResult:
        """memory/session/close (§4.11, sessions)."""
        return self.call("memory/session/close", _params(extra, session=session, owner=owner), timeout=timeout)

    def events(self, *, cursor: Optional[str] = None, limit: Optional[int] = None,
               kinds: Optional[Sequence[str]] = None, owner: Optional[str] = None, timeout: Any = _DEFAULT,
               **extra: Any) -> EventsResult:
        """memory/events (§4.12, events): one poll; no cursor means now."""
        params = _params(extra, cursor=cursor, limit=limit, kinds=list(kinds) if kinds is not None else None,
                         owner=owner)
        return self.call("memory/events", params, timeout=timeout)

    def events_subscribe(self, *, kinds: Optional[Sequence[str]] = None, owner: Optional[str] = None,
                         timeout: Any = _DEFAULT, **extra: Any) -> SubscribeResult:
        """memory/events/subscribe (§4.13) as sent; subscribe() is the
        iterator. Refused here with -32003 when the connection cannot push."""
        if self.supports("events") and not self.can_push:
            raise A2MError(
                ErrorCode.CAPABILITY_NOT_SUPPORTED,
                "push is not available on this connection (describe reports events.push false); "
                "poll memory/events", {"capability": "events", "push": False}, "memory/events/subscribe")
        params = _params(extra, kinds=list(kinds) if kinds is not None else None, owner=owner)
        return self.call("memory/events/subscribe", params, timeout=timeout)

    def events_unsubscribe(self, *, timeout: Any = _DEFAULT, **extra: Any) -> SubscribeResult:
        """memory/events/unsubscribe (§4.14)."""
        return self.call("memory/events/unsubscribe", _params(extra), timeout=timeout)

    def summarize(self, *, ids: Optional[Sequence[str]] = None, query: Optional[str] = None,
                  tier: Optional[str] = None, where: Optional[Where] = None, key_prefix: Optional[str] = None,
                  limit: Optional[int] = None, owner: Optional[str] = None, into: Optional[str] = None,
                  key: Optional[str] = None, timeout: Any = _DEFAULT, **extra: Any) -> SummarizeResult:
        """memory/summarize (§4.15, summarize): at least one selector."""
        params = _params(extra, ids=list(ids) if ids is not None else None, query=query, tier=tier, where=where,
                         key_prefix=key_prefix, limit=limit, owner=owner, into=into, key=key)
        return self.call("memory/summarize", params, timeout=timeout)

    # ------------------------------------------------------------------ events

    def watch(self, *, cursor: Optional[str] = None, kinds: Optional[List[str]] = None,
              limit: Optional[int] = None, owner: Optional[str] = None, interval: float = 1.0,
              on_reset: Any = None) -> EventWatch:
        """Polls memory/events as an iterator of events (every transport),
        from ``cursor`` or from now, sleeping ``interval`` seconds between
        polls that found nothing new."""
        if not self.supports("events"):
            raise A2MError(
                ErrorCode.CAPABILITY_NOT_SUPPORTED,
                "memory/events needs the 'events' capability, which this server does not declare",
                {"capability": "events"}, "memory/events")
        return EventWatch(self, cursor=cursor, kinds=kinds, limit=limit, owner=owner, interval=interval,
                          on_reset=on_reset)

    def subscribe(self, *, kinds: Optional[Sequence[str]] = None, owner: Optional[str] = None,
                  max_buffered: int = 10_000, timeout: Any = _DEFAULT) -> Subscription:
        """Subscribes to push (stdio, in-process) and returns an iterator of
        the pushed events; close() unsubscribes. One at a time per client."""
        with self._lock:
            if self._subscription is not None:
                raise RuntimeError("this client is already subscribed; close that subscription first")
            sub = Subscription(self, self._transport, max_buffered=max_buffered)
            self._subscription = sub
        try:
            self.events_subscribe(kinds=kinds, owner=owner, timeout=timeout)
        except BaseException:
            sub.detach()
            raise
        return sub

    def _subscription_ended(self, sub: Subscription) -> None:
        with self._lock:
            if self._subscription is sub:
                self._subscription = None

    # ------------------------------------------------------------------ end

    def close(self) -> Optional[int]:
        """Closes the transport (stdio: the server exits). Pending calls fail."""
        return self._transport.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
