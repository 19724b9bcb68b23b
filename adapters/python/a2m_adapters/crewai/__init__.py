"""CrewAI: ``A2MStorage``, the ``StorageBackend`` of CrewAI's unified
``Memory``, so a crew (``Crew(memory=Memory(storage=A2MStorage(client),
...))``) remembers in A2M.

Imports CrewAI and nothing else of any framework.

* A memory record is an A2M record in the first ``semantic`` tier, keyed
  ``<namespace>/<scope>/<id>`` (default namespace ``crewai``): CrewAI's
  scope path is the key hierarchy, so ``scope_prefix`` is ``key_prefix``.
  Categories, importance, source, privacy and CrewAI's own times are kept
  in the record's metadata under ``"crewai"``, beside the record's own
  metadata.
* CrewAI's storage protocol hands ``search`` a vector and never the text
  it came from. ``A2MStorage.embedder(fn)`` wraps the embedding function
  the ``Memory`` uses so the storage learns which text each vector was
  made from, and a search then sends the server both: records other
  frameworks wrote without vectors are found by their text. Without an
  embedding model, ``A2MStorage.embedder()`` makes stand-in vectors that
  only carry the text: nothing is embedded and the server's own ranking
  decides.
* ``search`` reads every searchable record in the store unless CrewAI
  names a scope (working memory is left out, DECISIONS 007); a record
  another framework wrote is a memory of scope ``/``. Deletes, updates and
  ``reset`` touch this namespace only (DECISIONS 023).
"""
from __future__ import annotations

import itertools
import threading
from collections import OrderedDict
from datetime import datetime, timezone
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from a2m_client import Client
from crewai.memory.types import MemoryRecord, ScopeInfo

from .._memory import Layout, Namespace, in_thread, require, split_where

__all__ = ["A2MStorage"]

#: The metadata key under which CrewAI's own fields are kept.
MARKER = "crewai"


def _scope(scope: Optional[str]) -> str:
    """A scope as a path without its leading and trailing slashes."""
    return (scope or "").strip("/")


def _time(stamp: Any) -> datetime:
    """A time as CrewAI keeps them: naive, in UTC."""
    if not isinstance(stamp, datetime):
        if not stamp:
            return datetime.now(timezone.utc).replace(tzinfo=None)
        stamp = datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
    if stamp.tzinfo is not None:
        stamp = stamp.astimezone(timezone.utc).replace(tzinfo=None)
    return stamp


def _stamp(moment: datetime) -> str:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class _Texts:
    """Which text each recent vector was made from (bounded), and which
    vectors are stand-ins that carry a text and nothing else."""

    def __init__(self, size: int = 4096) -> None:
        self._texts: "OrderedDict[Tuple[float, ...], Tuple[str, bool]]" = OrderedDict()
        self._size = size
        self._lock = threading.Lock()

    def note(self, vector: Sequence[float], text: str, standin: bool) -> None:
        with self._lock:
            self._texts[tuple(vector)] = (text, standin)
            self._texts.move_to_end(tuple(vector))
            while len(self._texts) > self._size:
                self._texts.popitem(last=False)

    def text(self, vector: Optional[Sequence[float]]) -> Tuple[Optional[str], bool]:
        with self._lock:
            return self._texts.get(tuple(vector or ()), (None, False))


class A2MStorage:
    """CrewAI's ``StorageBackend`` over an A2M store (the server must
    declare ``keys``; real vectors need ``embeddings`` too)."""

    def __init__(self, client: Client, *, namespace: str = "crewai", tier: Optional[str] = None) -> None:
        require(client, "keys", adapter="A2MStorage")
        self.client = client
        self.namespace = Namespace(namespace)
        self.layout = Layout(client)
        self.tier = tier or self.layout.tier_of("semantic")
        self._texts = _Texts()
        self._serial = itertools.count(1)
        self._max = self.layout.max_recall

    # ------------------------------------------------------------ embedder

    def embedder(self, fn: Optional[Callable[[List[str]], Any]] = None) -> Callable[[List[str]], List[List[float]]]:
        """The embedding function to give ``Memory(embedder=...)``: ``fn``
        (a callable from a list of texts to their vectors), noted so that a
        search knows its query's text. Without ``fn``, stand-in vectors."""
        if fn is not None:
            require(self.client, "embeddings", adapter="A2MStorage.embedder(fn)")

        def embed(texts: List[str]) -> List[List[float]]:
            if fn is None:
                vectors = [[float(next(self._serial))] for _ in texts]
            else:
                vectors = [list(v.tolist()) if hasattr(v, "tolist") else [float(x) for x in v] for v in fn(texts)]
            for text, vector in zip(texts, vectors):
                self._texts.note(vector, text, fn is None)
            return vectors

        return embed

    # ------------------------------------------------------------ records

    def _key(self, record: MemoryRecord) -> str:
        scope = _scope(record.scope)
        return self.namespace.key(f"{scope}/{record.id}" if scope else record.id)

    def _to_a2m(self, record: MemoryRecord) -> Dict[str, Any]:
        metadata = dict(record.metadata or {})
        metadata[MARKER] = {"id": record.id, "scope": record.scope, "categories": list(record.categories),
                            "importance": record.importance, "source": record.source,
                            "private": record.private, "created_at": _stamp(record.created_at),
                            "last_accessed": _stamp(record.last_accessed)}
        out: Dict[str, Any] = {"content": record.content, "key": self._key(record), "metadata": metadata}
        if self.tier:
            out["tier"] = self.tier
        _, standin = self._texts.text(record.embedding)
        if record.embedding and not standin:
            out["embedding"] = [float(x) for x in record.embedding]
        return out

    def _from_a2m(self, record: Dict[str, Any]) -> MemoryRecord:
        metadata = dict(record.get("metadata") or {})
        mark = metadata.pop(MARKER, None)
        if not isinstance(mark, dict):
            # Written by another framework: a memory of scope "/".
            mark = {"id": record.get("key") or record["id"], "scope": "/"}
        return MemoryRecord(
            id=str(mark.get("id")), content=record.get("content", ""), scope=mark.get("scope") or "/",
            categories=list(mark.get("categories") or []), metadata=metadata,
            importance=float(mark.get("importance", 0.5)),
            created_at=_time(mark.get("created_at") or record.get("created_at")),
            last_accessed=_time(mark.get("last_accessed") or record.get("created_at")),
            embedding=record.get("embedding"), source=mark.get("source"), private=bool(mark.get("private", False)))

    def _prefix(self, scope_prefix: Optional[str]) -> Optional[str]:
        scope = _scope(scope_prefix)
        return self.namespace.key(scope + "/") if scope else None

    def _mine(self, scope_prefix: Optional[str]) -> List[Dict[str, Any]]:
        """The records this namespace wrote under ``scope_prefix``, oldest
        first (timeline: a listing counts no access)."""
        prefix = self._prefix(scope_prefix) or self.namespace.prefix
        return self.client.timeline(key_prefix=prefix, limit=self._max)["records"]

    def _read(self, scope_prefix: Optional[str]) -> List[Dict[str, Any]]:
        """The searchable records under ``scope_prefix``: with none, the
        whole store, whoever wrote it."""
        return self.client.timeline(key_prefix=self._prefix(scope_prefix), limit=self._max,
                                    where=self.layout.search_where())["records"]

    @staticmethod
    def _wanted(record: MemoryRecord, categories: Optional[List[str]],
                metadata_filter: Optional[Dict[str, Any]]) -> bool:
        if categories and not set(categories) & set(record.categories):
            return False
        return all(record.metadata.get(k) == v for k, v in (metadata_filter or {}).items())

    # ------------------------------------------------------------ StorageBackend

    def save(self, records: List[MemoryRecord]) -> None:
        if records:
            self.client.remember([self._to_a2m(r) for r in records])

    def update(self, record: MemoryRecord) -> None:
        """Rewrites the record at its key (same A2M id, revision + 1)."""
        self.save([record])

    def search(self, query_embedding: List[float], scope_prefix: Optional[str] = None,
               categories: Optional[List[str]] = None, metadata_filter: Optional[Dict[str, Any]] = None,
               limit: int = 10, min_score: float = 0.0) -> List[Tuple[MemoryRecord, float]]:
        text, standin = self._texts.text(query_embedding)
        vector = None if standin or not query_embedding else [float(x) for x in query_embedding]
        if text is None and vector is None:
            return []
        server, rest = split_where(metadata_filter)
        narrowed = rest or bool(categories)
        records = self.client.recall(text, limit=self._max if narrowed else limit,
                                     where=self.layout.search_where(server), key_prefix=self._prefix(scope_prefix),
                                     embedding=vector)["records"]
        out = []
        for raw in records:
            record = self._from_a2m(raw)
            score = float(raw.get("score", 0.0))
            if score >= min_score and self._wanted(record, categories, metadata_filter):
                out.append((record, score))
        return out[:limit]

    def delete(self, scope_prefix: Optional[str] = None, categories: Optional[List[str]] = None,
               record_ids: Optional[List[str]] = None, older_than: Optional[datetime] = None,
               metadata_filter: Optional[Dict[str, Any]] = None) -> int:
        doomed = []
        for raw in self._mine(scope_prefix):
            record = self._from_a2m(raw)
            if record_ids is not None and record.id not in record_ids:
                continue
            if older_than is not None and record.created_at >= _time(older_than):
                continue
            if self._wanted(record, categories, metadata_filter):
                doomed.append(raw["id"])
        if not doomed:
            return 0
        return int(self.client.forget(ids=doomed)["forgotten"])

    def get_record(self, record_id: str) -> Optional[MemoryRecord]:
        for raw in self._mine(None):
            if (raw.get("metadata") or {}).get(MARKER, {}).get("id") == record_id:
                return self._from_a2m(raw)
        return None

    def touch_records(self, record_ids: List[str]) -> None:
        """Nothing to do: the server counts an access on every recall."""

    def list_records(self, scope_prefix: Optional[str] = None, limit: int = 200,
                     offset: int = 0) -> List[MemoryRecord]:
        records = [self._from_a2m(r) for r in reversed(self._read(scope_prefix))]
        return records[offset:offset + limit]

    def get_scope_info(self, scope: str) -> ScopeInfo:
        records = [self._from_a2m(r) for r in self._read(scope)]
        base = _scope(scope)
        children = set()
        for record in records:
            path = _scope(record.scope)
            rest = path[len(base):].strip("/") if path.startswith(base) else ""
            if rest:
                children.add("/" + "/".join(p for p in [base, rest.split("/")[0]] if p))
        times = [r.created_at for r in records]
        return ScopeInfo(path=scope or "/", record_count=len(records),
                         categories=sorted({c for r in records for c in r.categories}),
                         oldest_record=min(times) if times else None, newest_record=max(times) if times else None,
                         child_scopes=sorted(children))

    def list_scopes(self, parent: str = "/") -> List[str]:
        return self.get_scope_info(parent).child_scopes

    def list_categories(self, scope_prefix: Optional[str] = None) -> Dict[str, int]:
        counts: Dict[str, int] = {}
        for raw in self._read(scope_prefix):
            for category in self._from_a2m(raw).categories:
                counts[category] = counts.get(category, 0) + 1
        return counts

    def count(self, scope_prefix: Optional[str] = None) -> int:
        return len(self._read(scope_prefix))

    def reset(self, scope_prefix: Optional[str] = None) -> None:
        """Deletes this namespace's records under ``scope_prefix`` (all of
        them without one), and nothing another framework wrote."""
        prefix = self._prefix(scope_prefix) or self.namespace.prefix
        if not prefix:
            raise ValueError("reset() deletes a namespace; this storage has none")
        self.client.forget(key_prefix=prefix)

    async def asave(self, records: List[MemoryRecord]) -> None:
        await in_thread(self.save, records)

    async def asearch(self, query_embedding: List[float], scope_prefix: Optional[str] = None,
                      categories: Optional[List[str]] = None, metadata_filter: Optional[Dict[str, Any]] = None,
                      limit: int = 10, min_score: float = 0.0) -> List[Tuple[MemoryRecord, float]]:
        return await in_thread(self.search, query_embedding, scope_prefix, categories, metadata_filter,
                               limit, min_score)

    async def adelete(self, scope_prefix: Optional[str] = None, categories: Optional[List[str]] = None,
                      record_ids: Optional[List[str]] = None, older_than: Optional[datetime] = None,
                      metadata_filter: Optional[Dict[str, Any]] = None) -> int:
        return await in_thread(self.delete, scope_prefix, categories, record_ids, older_than, metadata_filter)

