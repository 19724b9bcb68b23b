"""What every adapter needs to know about a store, and nothing about any
framework: which tier to write facts into, which tier holds conversations,
how a search leaves the conversations out, and how a namespace becomes a
key prefix.

Two rules shape it (DECISIONS 007, 023):

* A conversation in working memory is replayed, not searched, until its
  session closes. ``a2m serve`` ranks every tier on a recall unless told
  otherwise, so an adapter that searches asks for the non-working tiers
  (``where: {"tier": [...]}``, spec §5.2) and an adapter that stores facts
  writes them where a search finds them (the first tier of kind
  ``semantic``), not into the default working tier.
* A namespace scopes what an adapter writes and deletes, never what it
  reads. ``Namespace`` only ever builds keys to write and prefixes to
  delete under; searches pass no namespace at all unless the framework's
  own call names one.
"""
from __future__ import annotations

import asyncio
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, TypeVar

from a2m_client import A2MError, Client, ErrorCode

T = TypeVar("T")

#: The record fields of spec §3.1. A ``where`` key that names one of them
#: tests the field, not metadata (§5.2), so a framework's metadata filter on
#: such a key cannot be sent to the server as it is.
RECORD_FIELDS = frozenset({
    "id", "content", "created_at", "role", "metadata", "group", "tier", "salience",
    "accessed_at", "access_count", "owner", "session", "key", "revision", "embedding",
    "uri", "media_type", "score",
})


def require(client: Client, *capabilities: str, adapter: str) -> None:
    """Raises the A2MError a server gives for an undeclared capability
    (-32003, ``data: {"capability": ...}``) when ``client``'s server lacks
    one that ``adapter`` cannot work without."""
    for capability in capabilities:
        if not client.supports(capability):
            raise A2MError(
                ErrorCode.CAPABILITY_NOT_SUPPORTED,
                f"{adapter} needs the '{capability}' capability, which this server does not declare",
                {"capability": capability}, None)


class Layout:
    """The tiers of one store, read from the describe answer the client
    already holds (spec §4.7: ``kind`` says what a tier is for, whatever it
    is named). Without ``tiers`` every name is None and no filter is added:
    such a store has nothing to keep apart."""

    def __init__(self, client: Client) -> None:
        tiers: Sequence[Mapping[str, Any]] = ()
        if client.supports("tiers"):
            tiers = client.description.get("tiers") or ()
        self.names: List[str] = [t["name"] for t in tiers if isinstance(t.get("name"), str)]
        kinds = {t["name"]: t.get("kind") for t in tiers if isinstance(t.get("name"), str)}
        working = [n for n in self.names if kinds.get(n) == "working"]
        self.working: Optional[str] = working[0] if working else None
        #: Every tier a search may look in: all but the working ones.
        self.searchable: Optional[List[str]] = [n for n in self.names if n not in working] if working else None
        self._kinds = kinds
        limits = client.description.get("limits") or {}
        #: The most records one recall or timeline may return (§4.1 limits).
        self.max_recall = int(limits.get("max_recall_limit") or 1000)

    def tier_of(self, kind: str) -> Optional[str]:
        """The first tier of ``kind`` (``semantic``, ``episodic``, ...), else
        the first searchable tier, else None (no tiers: the server's default)."""
        for name in self.names:
            if self._kinds.get(name) == kind:
                return name
        if self.searchable:
            return self.searchable[0]
        return None

    def search_where(self, where: Optional[Mapping[str, Any]] = None) -> Optional[Dict[str, Any]]:
        """``where`` plus the filter that keeps working memory out of a
        search. A ``tier`` the caller already named is narrowed, never
        widened."""
        out = dict(where or {})
        if self.searchable is None:
            return out or None
        if "tier" in out:
            asked = out["tier"] if isinstance(out["tier"], list) else [out["tier"]]
            out["tier"] = [t for t in asked if t in self.searchable]
        else:
            out["tier"] = list(self.searchable)
        return out


class Namespace:
    """A key prefix under which an adapter writes and deletes.

    ``Namespace("crewai")`` writes ``crewai/<id>``; ``Namespace("")`` writes
    keys as the framework gives them. It is never applied to a read."""

    def __init__(self, prefix: Optional[str]) -> None:
        prefix = prefix or ""
        if prefix and not prefix.endswith("/"):
            prefix += "/"
        self.prefix = prefix

    def key(self, local: str) -> str:
        """The store key of ``local`` in this namespace."""
        return self.prefix + local

    def local(self, key: Optional[str]) -> Optional[str]:
        """The part of ``key`` after this namespace, or None when ``key`` is
        not in it (a record someone else wrote)."""
        if not key or not key.startswith(self.prefix) or len(key) == len(self.prefix):
            return None
        return key[len(self.prefix):]


def split_where(filters: Optional[Mapping[str, Any]]) -> "tuple[Dict[str, Any], bool]":
    """Splits a framework's metadata filter into what the server can test
    (plain equality on a metadata key that is not a record field, spec
    §5.2) and whether anything is left for the adapter to test itself.
    Lists are left to the adapter: in ``where`` a list means "any of"."""
    server: Dict[str, Any] = {}
    rest = False
    for k, v in (filters or {}).items():
        if k not in RECORD_FIELDS and isinstance(v, (str, int, float, bool)):
            server[k] = v
        else:
            rest = True
    return server, rest


async def in_thread(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Runs a blocking client call off the event loop (the client is
    synchronous and thread-safe)."""
    return await asyncio.get_running_loop().run_in_executor(None, lambda: fn(*args, **kwargs))
