"""AutoGen: ``A2MMemory``, autogen-core's ``Memory`` for agents
(``AssistantAgent(memory=[A2MMemory(client)])``).

Imports autogen-core and nothing else of any framework.

* ``add`` writes a fact into the first ``semantic`` tier with a key under
  the memory's namespace (default ``autogen/``); JSON content is written
  as its JSON text and comes back as a dict; the MIME type and the
  caller's metadata are kept in the record's metadata.
* ``query`` searches every searchable record in the store, whoever wrote
  it, leaving working memory out (DECISIONS 007, 023); each result
  carries the server's ``score`` in its metadata.
* ``update_context`` queries with the text of the last message in the
  model context and adds what it found as one ``SystemMessage``, as
  autogen's own vector memories do.
* ``clear`` deletes what this namespace wrote, and nothing else.
"""
from __future__ import annotations

import json
import uuid
from typing import Any, Dict, Optional

from a2m_client import Client
from autogen_core import CancellationToken
from autogen_core.memory import Memory, MemoryContent, MemoryMimeType, MemoryQueryResult, UpdateContextResult
from autogen_core.model_context import ChatCompletionContext
from autogen_core.models import SystemMessage

from .._memory import Layout, Namespace, in_thread

__all__ = ["A2MMemory"]

#: The metadata key under which what AutoGen needs back is kept.
MARKER = "a2m_autogen"


def _mime(content: MemoryContent) -> str:
    mime = content.mime_type
    return mime.value if isinstance(mime, MemoryMimeType) else str(mime)


class A2MMemory(Memory):
    """autogen-core's ``Memory`` over an A2M store.

    ``k`` is how many records a query returns; ``namespace`` is the key
    prefix writes and ``clear`` are confined to (keys need the server's
    ``keys`` capability; without it records are written unkeyed and
    ``clear`` deletes nothing)."""

    def __init__(self, client: Client, *, name: str = "a2m", namespace: str = "autogen",
                 tier: Optional[str] = None, k: int = 5) -> None:
        self.client = client
        self._name = name
        self.k = k
        self.namespace = Namespace(namespace)
        self.layout = Layout(client)
        self.tier = tier or self.layout.tier_of("semantic")
        self._keys = client.supports("keys")

    @property
    def name(self) -> str:
        return self._name

    def _record(self, content: MemoryContent) -> Dict[str, Any]:
        value = content.content
        if isinstance(value, dict):
            text = json.dumps(value, ensure_ascii=False, sort_keys=True)
        elif isinstance(value, str):
            text = value
        else:
            raise ValueError("A2MMemory keeps text and JSON content; "
                             f"{type(value).__name__} has no text to search")
        metadata = dict(content.metadata or {})
        metadata[MARKER] = {"mime_type": _mime(content)}
        record: Dict[str, Any] = {"content": text, "metadata": metadata}
        if self._keys:
            record["key"] = self.namespace.key(str(uuid.uuid4()))
        if self.tier:
            record["tier"] = self.tier
        return record

    @staticmethod
    def _content(record: Dict[str, Any]) -> MemoryContent:
        metadata = dict(record.get("metadata") or {})
        mark = metadata.pop(MARKER, None)
        mime = mark.get("mime_type") if isinstance(mark, dict) else MemoryMimeType.TEXT.value
        value: Any = record.get("content", "")
        if mime == MemoryMimeType.JSON.value:
            try:
                value = json.loads(value)
            except ValueError:
                mime = MemoryMimeType.TEXT.value
        metadata["score"] = record.get("score")
        metadata["id"] = record.get("id")
        return MemoryContent(content=value, mime_type=mime, metadata=metadata)

    async def add(self, content: MemoryContent, cancellation_token: Optional[CancellationToken] = None) -> None:
        record = self._record(content)
        await in_thread(self.client.remember, [record])

    async def query(self, query: str | MemoryContent = "", cancellation_token: Optional[CancellationToken] = None,
                    **kwargs: Any) -> MemoryQueryResult:
        """The ``k`` (or ``kwargs["k"]``) most relevant searchable records
        for ``query``; an empty query gives the most recent ones."""
        text = query.content if isinstance(query, MemoryContent) else query
        if not isinstance(text, str):
            text = json.dumps(text, ensure_ascii=False, sort_keys=True)
        records = (await in_thread(self.client.recall, text or None, limit=int(kwargs.get("k", self.k)),
                                   where=self.layout.search_where()))["records"]
        return MemoryQueryResult(results=[self._content(r) for r in records])

    async def update_context(self, model_context: ChatCompletionContext) -> UpdateContextResult:
        messages = await model_context.get_messages()
        last = next((m.content for m in reversed(messages) if isinstance(getattr(m, "content", None), str)), None)
        if not last:
            return UpdateContextResult(memories=MemoryQueryResult(results=[]))
        found = await self.query(last)
        if found.results:
            lines = [f"{n}. {c.content if isinstance(c.content, str) else json.dumps(c.content)}"
                     for n, c in enumerate(found.results, 1)]
            await model_context.add_message(SystemMessage(content="\nRelevant memory content:\n" + "\n".join(lines)))
        return UpdateContextResult(memories=found)

    async def clear(self) -> None:
        """Deletes every record this memory's namespace holds."""
        if self._keys and self.namespace.prefix:
            await in_thread(self.client.forget, key_prefix=self.namespace.prefix)

    async def close(self) -> None:
        """Nothing to release: the client belongs to the caller."""
