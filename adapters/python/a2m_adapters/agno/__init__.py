"""Agno: ``A2MVectorDb``, a ``VectorDb`` for Agno's ``Knowledge``
(``Knowledge(vector_db=A2MVectorDb(client))``), so what an Agno agent
knows is a memory every framework reads.

Imports Agno and nothing else of any framework.

* A chunk is a record in the first ``semantic`` tier, keyed
  ``<namespace>/<chunk id>`` (default namespace ``agno``). ``upsert`` is
  keys (DECISIONS 017, 023): writing a chunk id again replaces the record
  in place, and chunks of the same content that the new version no longer
  has are deleted, so a corrected document never sits beside its stale
  self.
* The chunk's ``meta_data`` and the knowledge filters are the record's
  metadata, filterable with ``where``; Agno's own bookkeeping (name,
  content hash, content id, owner) sits beside them as ``agno_*`` keys.
* ``search`` reads every searchable record in the store, whoever wrote it
  (the namespace scopes writes and deletes, never reads), leaving working
  memory out (DECISIONS 007). ``user_id`` follows Agno: a scoped search
  sees that owner's chunks and the shared ones (records without an Agno
  owner, which includes everything other frameworks wrote); a scoped
  write or delete touches that owner's only.
* With an ``embedder`` the vectors are the caller's own (spec §3.7); a
  chunk that arrives embedded keeps its vector. Without one, search is
  the server's own ranking.
"""
from __future__ import annotations

import hashlib
from typing import Any, Dict, List, Optional

from a2m_client import Client
from agno.knowledge.document import Document
from agno.vectordb.base import VectorDb

from .._memory import Layout, Namespace, in_thread, require, split_where

__all__ = ["A2MVectorDb"]

_OWN = ("agno_name", "agno_content_hash", "agno_content_id", "agno_user_id")


class A2MVectorDb(VectorDb):
    """Agno's ``VectorDb`` over an A2M store (the server must declare
    ``keys``; with an ``embedder``, ``embeddings`` too)."""

    def __init__(self, client: Client, *, namespace: str = "agno", tier: Optional[str] = None,
                 embedder: Any = None, name: Optional[str] = None, **kwargs: Any) -> None:
        super().__init__(name=name or "a2m", **kwargs)
        require(client, "keys", adapter="A2MVectorDb")
        if embedder is not None:
            require(client, "embeddings", adapter="A2MVectorDb with an embedder")
        self.client = client
        self.embedder = embedder
        self.namespace = Namespace(namespace)
        self.layout = Layout(client)
        self.tier = tier or self.layout.tier_of("semantic")
        self._max = self.layout.max_recall

    # ------------------------------------------------------------ records

    def _chunk_id(self, content_hash: str, document: Document) -> str:
        if document.id:
            return str(document.id)
        return hashlib.sha1(f"{content_hash}\0{document.content}".encode("utf-8")).hexdigest()

    def _record(self, content_hash: str, document: Document, filters: Optional[Dict[str, Any]],
                user_id: Optional[str]) -> Dict[str, Any]:
        if document.embedding is None and self.embedder is not None:
            document.embed(embedder=self.embedder)
        metadata: Dict[str, Any] = dict(document.meta_data or {})
        metadata.update(filters or {})
        metadata.update({"agno_name": document.name, "agno_content_hash": content_hash,
                         "agno_content_id": document.content_id, "agno_user_id": user_id})
        record: Dict[str, Any] = {"content": document.content, "metadata": metadata,
                                  "key": self.namespace.key(self._chunk_id(content_hash, document))}
        if self.tier:
            record["tier"] = self.tier
        if document.embedding:
            record["embedding"] = [float(x) for x in document.embedding]
        return record

    def _document(self, record: Dict[str, Any]) -> Document:
        metadata = dict(record.get("metadata") or {})
        own = {k: metadata.pop(k, None) for k in _OWN}
        doc_id = self.namespace.local(record.get("key")) or record.get("key") or record.get("id")
        return Document(content=record.get("content", ""), id=doc_id, name=own["agno_name"], meta_data=metadata,
                        content_id=own["agno_content_id"], reranking_score=record.get("score"))

    def _mine(self, where: Dict[str, Any], user_id: Optional[str]) -> List[Dict[str, Any]]:
        """This namespace's records matching ``where``, of owner
        ``user_id`` (None: every owner)."""
        records = self.client.timeline(key_prefix=self.namespace.prefix, where=where or None,
                                       limit=self._max)["records"]
        if user_id is not None:
            records = [r for r in records if (r.get("metadata") or {}).get("agno_user_id") == user_id]
        return records

    def _forget(self, records: List[Dict[str, Any]]) -> bool:
        if not records:
            return False
        self.client.forget(ids=[r["id"] for r in records])
        return True

    # ------------------------------------------------------------ VectorDb

    def create(self) -> None:
        """Nothing to create: the store exists."""

    async def async_create(self) -> None:
        """Nothing to create: the store exists."""

    def exists(self) -> bool:
        return True

    async def async_exists(self) -> bool:
        return True

    def name_exists(self, name: str) -> bool:
        return bool(self._mine({"agno_name": name}, None))

    async def async_name_exists(self, name: str) -> bool:  # type: ignore[override]
        return await in_thread(self.name_exists, name)

    def id_exists(self, id: str) -> bool:
        return self.client.fetch(self.namespace.key(id))["record"] is not None

    def content_hash_exists(self, content_hash: str, user_id: Optional[str] = None) -> bool:
        return any((r.get("metadata") or {}).get("agno_user_id") == user_id
                   for r in self._mine({"agno_content_hash": content_hash}, None))

    def insert(self, content_hash: str, documents: List[Document], filters: Optional[Dict[str, Any]] = None,
               user_id: Optional[str] = None) -> None:
        records = [self._record(content_hash, d, filters, user_id) for d in documents]
        if records:
            self.client.remember(records)

    async def async_insert(self, content_hash: str, documents: List[Document],
                           filters: Optional[Dict[str, Any]] = None, user_id: Optional[str] = None) -> None:
        await in_thread(self.insert, content_hash, documents, filters, user_id)

    def upsert_available(self) -> bool:
        return True

    def upsert(self, content_hash: str, documents: List[Document], filters: Optional[Dict[str, Any]] = None,
               user_id: Optional[str] = None) -> None:
        """Writes the chunks (a chunk id already stored is replaced in
        place), then deletes this owner's chunks of the same content that
        the new version does not have."""
        records = [self._record(content_hash, d, filters, user_id) for d in documents]
        if records:
            self.client.remember(records)
        keys = {r["key"] for r in records}
        stale = [r for r in self._mine({"agno_content_hash": content_hash}, None)
                 if r.get("key") not in keys and (r.get("metadata") or {}).get("agno_user_id") == user_id]
        self._forget(stale)

    async def async_upsert(self, content_hash: str, documents: List[Document],
                           filters: Optional[Dict[str, Any]] = None, user_id: Optional[str] = None) -> None:
        await in_thread(self.upsert, content_hash, documents, filters, user_id)

    def search(self, query: str, limit: int = 5, filters: Optional[Any] = None,
               user_id: Optional[str] = None) -> List[Document]:
        if filters is not None and not isinstance(filters, dict):
            raise ValueError("A2MVectorDb filters are a dict of metadata equalities")
        server, rest = split_where(filters)
        vector = None
        if self.embedder is not None:
            vector = [float(x) for x in self.embedder.get_embedding(query)]
        narrowed = rest or user_id is not None
        records = self.client.recall(query or None, limit=self._max if narrowed else limit,
                                     where=self.layout.search_where(server), embedding=vector)["records"]
        out = []
        for record in records:
            metadata = record.get("metadata") or {}
            if user_id is not None and metadata.get("agno_user_id") not in (None, user_id):
                continue
            if rest and not all(metadata.get(k) == v for k, v in (filters or {}).items()):
                continue
            out.append(self._document(record))
        return out[:limit]

    async def async_search(self, query: str, limit: int = 5, filters: Optional[Any] = None,
                           user_id: Optional[str] = None) -> List[Document]:
        return await in_thread(self.search, query, limit, filters, user_id)

    def drop(self) -> None:
        """Deletes every chunk of this namespace."""
        self.delete()

    async def async_drop(self) -> None:
        await in_thread(self.delete)

    def delete(self) -> bool:
        """Deletes every chunk of this namespace (and nothing else)."""
        if not self.namespace.prefix:
            raise ValueError("delete() deletes a namespace; this vector db has none")
        return bool(self.client.forget(key_prefix=self.namespace.prefix)["forgotten"])

    def delete_by_id(self, id: str) -> bool:
        record = self.client.fetch(self.namespace.key(id))["record"]
        return self._forget([record] if record else [])

    def delete_by_name(self, name: str) -> bool:
        return self._forget(self._mine({"agno_name": name}, None))

    def delete_by_metadata(self, metadata: Dict[str, Any]) -> bool:
        server, rest = split_where(metadata)
        records = self._mine(server, None)
        if rest:
            records = [r for r in records
                       if all((r.get("metadata") or {}).get(k) == v for k, v in metadata.items())]
        return self._forget(records)

    def delete_by_content_id(self, content_id: str, user_id: Optional[str] = None) -> bool:
        return self._forget(self._mine({"agno_content_id": content_id}, user_id))

    def update_metadata(self, content_id: str, metadata: Dict[str, Any]) -> None:
        """Merges ``metadata`` into every chunk of ``content_id`` (each
        rewritten at its key, vector and all)."""
        rewritten = []
        for record in self._mine({"agno_content_id": content_id}, None):
            full = self.client.fetch(record["key"], embeddings=True)["record"] or record
            new: Dict[str, Any] = {"content": full["content"], "key": full["key"],
                                   "metadata": {**(full.get("metadata") or {}), **metadata}}
            if full.get("embedding"):
                new["embedding"] = full["embedding"]
            rewritten.append(new)
        if rewritten:
            self.client.remember(rewritten)

    def get_supported_search_types(self) -> List[str]:
        # One ranking: the server's, over text and (given an embedder) vectors.
        return ["hybrid"]
