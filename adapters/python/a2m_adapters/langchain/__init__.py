"""LangChain: ``A2MChatMessageHistory`` (a conversation, replayed) and
``A2MVectorStore`` (searchable memory, and its retriever).

Imports langchain-core and nothing else of any framework.

LangChain keeps chat history apart from retrieval, which is A2M's own split
between ``memory/timeline`` and ``memory/recall`` (DECISIONS 007, 023), so
each class maps onto one method and neither emulates the other:

* The history is the timeline of one session in the working tier: messages
  are written with ``session`` and ``role``, read back in creation order,
  and never searched. ``close_session()`` ends the conversation
  (``memory/session/close``): its turns leave working memory and become
  searchable, by this vector store and by every other framework.
* The vector store writes documents into the first ``semantic`` tier under
  its namespace (a key prefix: ``langchain/<document id>``, so adding a
  document id again replaces it) and searches every searchable record in
  the store, whoever wrote it, leaving working memory out. With an
  ``embedding`` (the user's embedding model) the vectors are the caller's
  own, stored verbatim and sent beside the query text (spec §3.7).
"""
from __future__ import annotations

import uuid
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from a2m_client import Client
from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    messages_from_dict,
    messages_to_dict,
)
from langchain_core.vectorstores import VectorStore

from .._memory import Layout, Namespace, require, split_where

__all__ = ["A2MChatMessageHistory", "A2MVectorStore"]

#: The metadata key under which a message's own LangChain form is kept.
MARKER = "langchain"

_ROLE_OF_TYPE = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool", "function": "tool"}
_CLASS_OF_ROLE = {"user": HumanMessage, "assistant": AIMessage, "system": SystemMessage}


def _role(message: BaseMessage) -> str:
    if isinstance(message, ChatMessage):
        return message.role
    return _ROLE_OF_TYPE.get(message.type, message.type)


def _text(message: BaseMessage) -> str:
    """The record's content: the message's text, or for a turn that only
    calls tools, the calls (content is what a search ranks, §3.1)."""
    text = message.text if isinstance(message.text, str) else message.text()
    if not text and isinstance(message, AIMessage) and message.tool_calls:
        text = "; ".join(f"{c['name']}({c['args']})" for c in message.tool_calls)
    return text or f"({message.type} message)"


def message_of(record: Mapping[str, Any]) -> BaseMessage:
    """A LangChain message from a record: the message as it was written,
    or for a record some other framework wrote, one by its role."""
    metadata = record.get("metadata")
    if isinstance(metadata, dict) and isinstance(metadata.get(MARKER), dict):
        return messages_from_dict([metadata[MARKER]])[0]
    role = record.get("role") or "memory"
    content = record.get("content", "")
    cls = _CLASS_OF_ROLE.get(role)
    if cls is not None:
        return cls(content=content, id=record.get("id"))
    return ChatMessage(role=role, content=content, id=record.get("id"))


class A2MChatMessageHistory(BaseChatMessageHistory):
    """The messages of session ``session_id`` in the working tier.

    Writes and deletes touch that session only; ``messages`` replays it in
    order. The server must declare ``sessions``. Tool calls and the results
    answering them share a ``group``, so the store never keeps one without
    the other (spec §3.4)."""

    def __init__(self, client: Client, session_id: str, *, tier: Optional[str] = None) -> None:
        require(client, "sessions", adapter="A2MChatMessageHistory")
        self.client = client
        self.session_id = session_id
        self.tier = tier or Layout(client).working
        self._groups: Dict[str, str] = {}  # tool call id -> group

    def _read(self) -> List[Dict[str, Any]]:
        return self.client.timeline(where={"session": self.session_id}, tier=self.tier)["records"]

    @property
    def messages(self) -> List[BaseMessage]:  # type: ignore[override]
        return [message_of(r) for r in self._read()]

    def _group(self, message: BaseMessage) -> Optional[str]:
        if isinstance(message, AIMessage) and message.tool_calls:
            group = f"{self.session_id}/tools/{message.tool_calls[0]['id']}"
            for call in message.tool_calls:
                self._groups[call["id"]] = group
            return group
        if isinstance(message, ToolMessage):
            if message.tool_call_id not in self._groups:
                # Written by another process: find the call in the session.
                for record in self._read():
                    m = message_of(record)
                    if isinstance(m, AIMessage) and record.get("group"):
                        for call in m.tool_calls:
                            self._groups[call["id"]] = record["group"]
            return self._groups.get(message.tool_call_id)
        return None

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        records = []
        for message in messages:
            record: Dict[str, Any] = {
                "content": _text(message),
                "role": _role(message),
                "session": self.session_id,
                "metadata": {MARKER: messages_to_dict([message])[0]},
            }
            group = self._group(message)
            if group:
                record["group"] = group
            if self.tier:
                record["tier"] = self.tier
            records.append(record)
        if records:
            self.client.remember(records)

    def clear(self) -> None:
        """Deletes this session's messages from the working tier (what has
        already moved to searchable memory stays: it is no longer the
        conversation)."""
        self.client.forget(where={"session": self.session_id}, tier=self.tier)

    def close_session(self) -> Dict[str, Any]:
        """Ends the conversation (``memory/session/close``): its turns leave
        working memory for the tiers a search reads. Returns the server's
        answer (``flushed``: how many left)."""
        return self.client.session_close(self.session_id)


class A2MVectorStore(VectorStore):
    """A LangChain ``VectorStore`` over A2M's searchable memory.

    ``embedding`` is optional: with it, vectors are computed here and stored
    verbatim (the server must declare ``embeddings``); without it, search is
    the server's own ranking. ``namespace`` is the key prefix documents are
    written and deleted under (default ``langchain``); searches read the
    whole store. The server must declare ``keys``."""

    def __init__(self, client: Client, embedding: Optional[Embeddings] = None, *,
                 namespace: str = "langchain", tier: Optional[str] = None) -> None:
        require(client, "keys", adapter="A2MVectorStore")
        if embedding is not None:
            require(client, "embeddings", adapter="A2MVectorStore with an embedding")
        self.client = client
        self.embedding = embedding
        self.namespace = Namespace(namespace)
        self.layout = Layout(client)
        self.tier = tier or self.layout.tier_of("semantic")
        self._max = self.layout.max_recall

    @property
    def embeddings(self) -> Optional[Embeddings]:
        return self.embedding

    # ------------------------------------------------------------ writing

    def add_texts(self, texts: Iterable[str], metadatas: Optional[List[dict]] = None, *,
                  ids: Optional[List[str]] = None, **kwargs: Any) -> List[str]:
        texts = list(texts)
        if metadatas is not None and len(metadatas) != len(texts):
            raise ValueError("metadatas must have one entry per text")
        if ids is not None and len(ids) != len(texts):
            raise ValueError("ids must have one entry per text")
        ids = [i or str(uuid.uuid4()) for i in (ids or [None] * len(texts))]  # type: ignore[misc]
        vectors = self.embedding.embed_documents(texts) if self.embedding is not None and texts else None
        records = []
        for n, text in enumerate(texts):
            record: Dict[str, Any] = {"content": text, "key": self.namespace.key(ids[n])}
            if metadatas is not None and metadatas[n]:
                record["metadata"] = metadatas[n]
            if self.tier:
                record["tier"] = self.tier
            if vectors is not None:
                record["embedding"] = [float(x) for x in vectors[n]]
            records.append(record)
        if records:
            self.client.remember(records)
        return ids

    def add_documents(self, documents: List[Document], **kwargs: Any) -> List[str]:
        ids = kwargs.pop("ids", None) or [d.id for d in documents]
        return self.add_texts([d.page_content for d in documents], [d.metadata for d in documents],
                              ids=list(ids), **kwargs)

    def delete(self, ids: Optional[List[str]] = None, **kwargs: Any) -> Optional[bool]:
        """Deletes documents of this namespace by id; without ids, every
        document this namespace holds (and nothing outside it)."""
        if ids is None:
            if not self.namespace.prefix:
                raise ValueError("delete() without ids deletes a namespace; this store has none")
            self.client.forget(key_prefix=self.namespace.prefix)
            return True
        found = [r["id"] for r in self._fetch(ids) if r is not None]
        if found:
            self.client.forget(ids=found)
        return True

    # ------------------------------------------------------------ reading

    def _fetch(self, ids: Sequence[str]) -> List[Optional[Dict[str, Any]]]:
        return [self.client.fetch(self.namespace.key(i))["record"] for i in ids]

    def _document(self, record: Mapping[str, Any]) -> Document:
        """A Document: the record's content and metadata; its id is the
        document id in this namespace, else the record's key or id."""
        doc_id = self.namespace.local(record.get("key")) or record.get("key") or record.get("id")
        return Document(page_content=record.get("content", ""), metadata=dict(record.get("metadata") or {}),
                        id=doc_id)

    def get_by_ids(self, ids: Sequence[str], /) -> List[Document]:
        return [self._document(r) for r in self._fetch(ids) if r is not None]

    def _recall(self, query: Optional[str], vector: Optional[List[float]], k: int,
                filter: Optional[Mapping[str, Any]]) -> List[Tuple[Document, float]]:
        server, rest = split_where(filter)
        records = self.client.recall(query, limit=self._max if rest else k, where=self.layout.search_where(server),
                                     embedding=vector)["records"]
        out = []
        for record in records:
            doc = self._document(record)
            if rest and not all(doc.metadata.get(key) == v for key, v in (filter or {}).items()):
                continue
            out.append((doc, float(record.get("score", 0.0))))
        return out[:k]

    def similarity_search_with_score(self, query: str, k: int = 4, filter: Optional[Mapping[str, Any]] = None,
                                     **kwargs: Any) -> List[Tuple[Document, float]]:
        """The k best records for ``query`` with the server's score (higher
        is better; meaningful only within this one answer, spec §5.3)."""
        vector = None
        if self.embedding is not None:
            vector = [float(x) for x in self.embedding.embed_query(query)]
        return self._recall(query, vector, k, filter)

    def similarity_search(self, query: str, k: int = 4, filter: Optional[Mapping[str, Any]] = None,
                          **kwargs: Any) -> List[Document]:
        return [doc for doc, _ in self.similarity_search_with_score(query, k, filter)]

    def similarity_search_by_vector(self, embedding: List[float], k: int = 4,
                                    filter: Optional[Mapping[str, Any]] = None, **kwargs: Any) -> List[Document]:
        return [doc for doc, _ in self._recall(None, [float(x) for x in embedding], k, filter)]

    def _select_relevance_score_fn(self) -> Callable[[float], float]:
        # The server's scores are already relevances in [0, 1].
        return lambda score: score

    @classmethod
    def from_texts(cls, texts: List[str], embedding: Optional[Embeddings] = None,
                   metadatas: Optional[List[dict]] = None, *, client: Client,
                   ids: Optional[List[str]] = None, **kwargs: Any) -> "A2MVectorStore":
        store = cls(client, embedding, **kwargs)
        store.add_texts(texts, metadatas, ids=ids)
        return store
