"""LangGraph: ``A2MStore``, a ``BaseStore`` whose items are A2M records, so
a graph's long-term memory (``graph.compile(store=...)``, ``store`` in a
node) is a memory every other framework can read.

Imports LangGraph and nothing else of any framework.

The mapping (docs/FRAMEWORKS.md):

* ``namespace`` + ``key`` is the record's A2M ``key``: the labels and the
  key joined by ``/`` (a ``/`` or ``%`` inside a label is written ``%2F`` /
  ``%25``), so ``("users", "alice")`` + ``"city"`` is ``users/alice/city``
  and ``put`` on an existing item replaces it (spec §3.6: keys, revision).
* ``value`` is the record's ``metadata`` (its keys stay filterable), with
  the namespace, key and update time under ``"a2m_langgraph"``; the
  record's ``content`` is the text LangGraph would index (the store's
  ``index["fields"]``, else the whole value as JSON). ``index`` may carry
  ``fields`` alone: the content is then those fields' text, and search is
  the server's own ranking of it.
* Items go into the first ``semantic`` tier: long-term memory is searched,
  and working memory is not (DECISIONS 007). ``search`` leaves working
  memory out the same way, and reads every record in the store (a
  namespace prefix narrows it only when the caller passes one): a record
  another framework wrote without a key is an item of namespace ``()``
  whose key is its id, and whose value is ``{"content": ...}``.
* With ``index={"dims": N, "embed": ...}`` the vectors are the caller's own
  (spec §3.7): ``put`` embeds the indexed text and stores the vector with
  the record, ``search(query=...)`` sends the query's vector beside the
  text. Without it, search is the server's own text ranking.
"""
from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from a2m_client import Client
from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    ensure_embeddings,
    get_text_at_path,
    tokenize_path,
)

from .._memory import Layout, in_thread, require, split_where

__all__ = ["A2MStore"]

#: The metadata key under which an item's own address is kept.
MARKER = "a2m_langgraph"


def _escape(label: str) -> str:
    return label.replace("%", "%25").replace("/", "%2F")


def _unescape(label: str) -> str:
    return label.replace("%2F", "/").replace("%25", "%")


def _path(namespace: Sequence[str]) -> str:
    return "/".join(_escape(label) for label in namespace)


def key_of(namespace: Sequence[str], key: str) -> str:
    """The A2M key of item ``key`` in ``namespace``."""
    return "/".join([_escape(label) for label in namespace] + [_escape(key)])


def _address(record: Mapping[str, Any]) -> Tuple[Tuple[str, ...], str]:
    """An item's (namespace, key) from its record: from the A2M key, or
    ``()`` and the id for a record written without one."""
    key = record.get("key")
    if not key:
        return (), str(record["id"])
    parts = [_unescape(p) for p in key.split("/")]
    return tuple(parts[:-1]), parts[-1]


def _time(stamp: Optional[str]) -> datetime:
    if not stamp:
        return datetime.now(timezone.utc)
    # RFC 3339 with Z (spec §3.3); fromisoformat reads "Z" only from 3.11.
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def _now() -> str:
    """Now as spec §3.3 writes a timestamp: UTC, milliseconds, Z."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _compare(value: Any, wanted: Any) -> bool:
    """LangGraph's filter semantics: equality, nested dicts, and the
    comparison operators $eq $ne $gt $gte $lt $lte."""
    if isinstance(wanted, dict):
        if any(k.startswith("$") for k in wanted):
            return all(_operator(value, op, arg) for op, arg in wanted.items())
        return isinstance(value, dict) and all(_compare(value.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, (list, tuple)):
        return (isinstance(value, (list, tuple)) and len(value) == len(wanted)
                and all(_compare(a, b) for a, b in zip(value, wanted)))
    return bool(value == wanted)


def _operator(value: Any, op: str, arg: Any) -> bool:
    if op == "$eq":
        return bool(value == arg)
    if op == "$ne":
        return bool(value != arg)
    if value is None:
        return False
    if op == "$gt":
        return float(value) > float(arg)
    if op == "$gte":
        return float(value) >= float(arg)
    if op == "$lt":
        return float(value) < float(arg)
    if op == "$lte":
        return float(value) <= float(arg)
    raise ValueError(f"Unsupported operator: {op}")


def _matches(condition: MatchCondition, namespace: Tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    pairs = zip(namespace, path) if condition.match_type == "prefix" else zip(reversed(namespace), reversed(path))
    return all(p == "*" or n == p for n, p in pairs)


class A2MStore(BaseStore):
    """A LangGraph ``BaseStore`` over an A2M memory.

    ``client`` is an ``a2m_client.Client`` (``Client.http(url)``,
    ``Client.stdio([...])``, ``Client.inprocess(...)``) whose server
    declares ``keys``. ``index`` is LangGraph's ``IndexConfig``: with an
    ``embed``, vectors are computed here and stored verbatim (the server
    must declare ``embeddings``). ``tier`` overrides where items are
    written (default: the first ``semantic`` tier).

    Blocking calls; ``abatch`` runs them in the default executor.
    """

    supports_ttl = False

    def __init__(self, client: Client, *, index: Optional[IndexConfig] = None, tier: Optional[str] = None) -> None:
        require(client, "keys", adapter="A2MStore")
        self.client = client
        self.layout = Layout(client)
        self.tier = tier or self.layout.tier_of("semantic")
        self.index_config: Optional[Dict[str, Any]] = dict(index) if index else None
        self.embeddings = None
        self._fields: List[Tuple[str, Any]] = [("$", "$")]
        if self.index_config:
            fields = self.index_config.get("fields") or ["$"]
            self._fields = [(f, tokenize_path(f) if f != "$" else "$") for f in fields]
            if self.index_config.get("embed") is not None:
                require(client, "embeddings", adapter="A2MStore with index['embed']")
                self.embeddings = ensure_embeddings(self.index_config["embed"])
        self._max = self.layout.max_recall

    # ------------------------------------------------------------ batching

    def batch(self, ops: Iterable[Op]) -> List[Result]:
        """Runs each operation in order (LangGraph's batch contract: one
        result per op; a put's result is None)."""
        results: List[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                results.append(self._get(op))
            elif isinstance(op, SearchOp):
                results.append(self._search(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op))
            elif isinstance(op, PutOp):
                self._put(op)
                results.append(None)
            else:
                raise ValueError(f"Unknown operation type: {type(op)}")
        return results

    async def abatch(self, ops: Iterable[Op]) -> List[Result]:
        ops = list(ops)
        return await in_thread(self.batch, ops)

    # ------------------------------------------------------------ records

    def _text(self, value: Mapping[str, Any], index: Any) -> str:
        """What the record's content is: the indexed fields' text, else
        the value as JSON (content is what the server ranks, §3.1)."""
        fields = self._fields if index is None or index is False else [
            (f, tokenize_path(f) if f != "$" else "$") for f in index]
        texts: List[str] = []
        for path, tokens in fields:
            if path == "$":
                texts.append(json.dumps(value, ensure_ascii=False, sort_keys=True))
            else:
                texts.extend(get_text_at_path(value, tokens))
        text = "\n".join(t for t in texts if t)
        return text or json.dumps(value, ensure_ascii=False, sort_keys=True)

    def _item(self, record: Mapping[str, Any], cls: Any = Item) -> Any:
        metadata = record.get("metadata")
        if isinstance(metadata, dict) and isinstance(metadata.get(MARKER), dict):
            mark = metadata[MARKER]
            value = {k: v for k, v in metadata.items() if k != MARKER}
            namespace = tuple(mark.get("namespace") or ())
            key = str(mark.get("key"))
            updated = mark.get("updated_at")
        else:
            # Written by someone else: its text, and its metadata if any.
            namespace, key = _address(record)
            value = {"content": record.get("content", "")}
            if record.get("role"):
                value["role"] = record["role"]
            if metadata:
                value["metadata"] = metadata
            updated = None
        created = _time(record.get("created_at"))
        fields: Dict[str, Any] = dict(namespace=namespace, key=key, value=value, created_at=created,
                                      updated_at=_time(updated) if updated else created)
        if cls is SearchItem:
            fields["score"] = record.get("score")
        return cls(**fields)

    def _record(self, namespace: Tuple[str, ...], key: str) -> Optional[Dict[str, Any]]:
        record = self.client.fetch(key_of(namespace, key))["record"]
        if record is None and not namespace:
            # namespace () holds the records written without a key: the
            # item's key is the record's id.
            found = self.client.timeline(where={"id": key}, limit=1)["records"]
            record = found[0] if found and not found[0].get("key") else None
        return record

    def _get(self, op: GetOp) -> Optional[Item]:
        record = self._record(tuple(op.namespace), op.key)
        return self._item(record) if record else None

    def _put(self, op: PutOp) -> None:
        key = key_of(op.namespace, op.key)
        if op.value is None:
            old = self._record(tuple(op.namespace), op.key)
            if old is not None:
                self.client.forget(ids=[old["id"]])
            return
        value = dict(op.value)
        text = self._text(value, op.index)
        metadata = dict(value)
        metadata[MARKER] = {"namespace": list(op.namespace), "key": op.key,
                            "updated_at": _now()}
        record: Dict[str, Any] = {"content": text, "key": key, "metadata": metadata}
        if self.tier:
            record["tier"] = self.tier
        if self.embeddings is not None and op.index is not False:
            record["embedding"] = [float(x) for x in self.embeddings.embed_documents([text])[0]]
        self.client.remember([record])

    def _search(self, op: SearchOp) -> List[SearchItem]:
        server_where, rest = split_where(op.filter)
        where = self.layout.search_where(server_where)
        want = op.offset + op.limit
        n = self._max if rest else min(max(want, 1), self._max)
        key_prefix = _path(op.namespace_prefix) + "/" if op.namespace_prefix else None
        if op.query:
            embedding = None
            if self.embeddings is not None:
                embedding = [float(x) for x in self.embeddings.embed_query(op.query)]
            records = self.client.recall(op.query, limit=n, where=where, key_prefix=key_prefix,
                                         embedding=embedding)["records"]
        else:
            # Without a query: newest first, and no recall, which would
            # count an access on every record listed.
            records = list(reversed(self.client.timeline(limit=n, where=where, key_prefix=key_prefix)["records"]))
        items = [self._item(r, SearchItem) for r in records]
        if op.filter:
            items = [i for i in items if all(_compare(i.value.get(k), v) for k, v in op.filter.items())]
        return items[op.offset:op.offset + op.limit]

    def _list_namespaces(self, op: ListNamespacesOp) -> List[Tuple[str, ...]]:
        key_prefix = None
        for condition in op.match_conditions or ():
            if condition.match_type == "prefix" and condition.path:
                fixed: List[str] = []
                for label in condition.path:
                    if label == "*":
                        break
                    fixed.append(label)
                if fixed:
                    key_prefix = _path(fixed) + "/"
                break
        records = self.client.timeline(limit=self._max, where=self.layout.search_where(),
                                       key_prefix=key_prefix)["records"]
        found = set()
        for record in records:
            namespace = self._item(record).namespace
            if not namespace:
                continue
            if all(_matches(c, namespace) for c in op.match_conditions or ()):
                found.add(namespace[:op.max_depth] if op.max_depth is not None else namespace)
        return sorted(found)[op.offset:op.offset + op.limit]
