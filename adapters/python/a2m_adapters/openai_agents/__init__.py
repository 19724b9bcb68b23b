"""OpenAI Agents SDK: ``A2MSession`` (a conversation, replayed by the
``Runner``) and ``memory_tools`` (recall and remember, for an agent to
call).

Imports the ``agents`` package (openai-agents) and nothing else of any
framework.

* A session's items are records of one A2M session in the working tier,
  in order: each item is kept whole in ``metadata["openai_agents"]`` so
  the Runner gets back exactly what it stored, and its text is the
  record's content so other frameworks read it once the session is
  closed (``close_session()``, spec §4.11). A function call and its output
  share a ``group`` (spec §3.4).
* The SDK has no long-term memory interface besides sessions, so the
  searchable memory is offered as two function tools: ``recall_memory``
  searches every searchable record in the store (working memory left out,
  DECISIONS 007), ``remember_fact`` writes a fact into the semantic tier
  under the adapter's namespace.
"""
from __future__ import annotations

import json
import uuid
from typing import Any, Dict, List, Mapping, Optional

from a2m_client import Client
from agents import FunctionTool, function_tool
from agents.memory import SessionSettings

from .._memory import Layout, Namespace, in_thread, require

__all__ = ["A2MSession", "memory_tools"]

#: The metadata key under which an item is kept as the SDK gave it.
MARKER = "openai_agents"

_ROLES = {"user", "assistant", "system", "developer"}


def _plain(item: Any) -> Dict[str, Any]:
    if isinstance(item, dict):
        return item
    dump = getattr(item, "model_dump", None)
    if dump is not None:
        return dump(exclude_unset=True)
    return dict(item)


def _parts_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    texts = []
    for part in content or ():
        part = _plain(part)
        text = part.get("text") or part.get("refusal")
        if isinstance(text, str):
            texts.append(text)
    return "\n".join(texts)


def item_text(item: Mapping[str, Any]) -> str:
    """What a search ranks an item by: a message's text, a call's name and
    arguments, a call output's output, a reasoning summary."""
    kind = item.get("type", "message")
    if "role" in item and kind == "message":
        return _parts_text(item.get("content"))
    if kind == "function_call":
        return f"{item.get('name')}({item.get('arguments', '')})"
    if kind == "function_call_output":
        output = item.get("output")
        return output if isinstance(output, str) else _parts_text(output)
    if kind == "reasoning":
        return _parts_text(item.get("summary"))
    return json.dumps(item, ensure_ascii=False, sort_keys=True)


def _role(item: Mapping[str, Any]) -> str:
    if "role" in item:
        return str(item["role"])
    if item.get("type") == "function_call_output":
        return "tool"
    return "assistant"


def item_of(record: Mapping[str, Any]) -> Dict[str, Any]:
    """An input item from a record: the item as the SDK stored it, or for a
    record another framework wrote, a message in its role."""
    metadata = record.get("metadata")
    if isinstance(metadata, dict) and isinstance(metadata.get(MARKER), dict):
        return metadata[MARKER]
    role = record.get("role")
    return {"role": role if role in _ROLES else "user", "content": record.get("content", "")}


class A2MSession:
    """A ``Session`` (the SDK's protocol) whose items are the records of
    session ``session_id`` in the working tier of an A2M memory.

    Writes and deletes touch that session only. The server must declare
    ``sessions``. Blocking client calls run in the default executor."""

    def __init__(self, client: Client, session_id: str, *, tier: Optional[str] = None,
                 session_settings: Optional[SessionSettings] = None) -> None:
        require(client, "sessions", adapter="A2MSession")
        self.client = client
        self.session_id = session_id
        self.session_settings = session_settings
        self.tier = tier or Layout(client).working

    def _records(self, limit: Optional[int]) -> List[Dict[str, Any]]:
        return self.client.timeline(where={"session": self.session_id}, tier=self.tier,
                                    limit=limit)["records"]

    async def get_items(self, limit: Optional[int] = None) -> List[Any]:
        """The session's items, oldest first; with ``limit``, the latest
        ``limit`` of them (still oldest first: timeline's own rule, §4.4)."""
        if limit is None and self.session_settings is not None:
            limit = self.session_settings.limit
        if limit is not None and limit <= 0:
            return []
        records = await in_thread(self._records, limit)
        return [item_of(r) for r in records]

    def _add(self, items: List[Any]) -> None:
        records = []
        for item in items:
            item = _plain(item)
            record: Dict[str, Any] = {
                "content": item_text(item) or f"({item.get('type', 'message')})",
                "role": _role(item),
                "session": self.session_id,
                "metadata": {MARKER: item},
            }
            if item.get("call_id"):
                record["group"] = f"{self.session_id}/call/{item['call_id']}"
            if self.tier:
                record["tier"] = self.tier
            records.append(record)
        if records:
            self.client.remember(records)

    async def add_items(self, items: List[Any]) -> None:
        await in_thread(self._add, list(items))

    def _pop(self) -> Optional[Dict[str, Any]]:
        records = self._records(1)
        if not records:
            return None
        self.client.forget(ids=[records[-1]["id"]])
        return item_of(records[-1])

    async def pop_item(self) -> Optional[Any]:
        return await in_thread(self._pop)

    async def clear_session(self) -> None:
        await in_thread(self.client.forget, where={"session": self.session_id}, tier=self.tier)

    async def close_session(self) -> Dict[str, Any]:
        """Ends the conversation (``memory/session/close``): its items leave
        working memory for the tiers a search reads."""
        return await in_thread(self.client.session_close, self.session_id)


def memory_tools(client: Client, *, namespace: str = "openai-agents", tier: Optional[str] = None,
                 limit: int = 5) -> List[FunctionTool]:
    """``recall_memory`` and ``remember_fact``, function tools over the
    store's searchable memory, for ``Agent(tools=...)``.

    ``recall_memory`` reads every searchable record, whoever wrote it;
    ``remember_fact`` writes into ``tier`` (default: the first semantic
    tier) with a key under ``namespace``."""
    layout = Layout(client)
    where = layout.search_where()
    tier = tier or layout.tier_of("semantic")
    ns = Namespace(namespace)
    keyed = client.supports("keys")

    def recall(query: str) -> str:
        records = client.recall(query, limit=limit, where=where)["records"]
        if not records:
            return "Nothing in memory matches."
        return "\n".join(f"- {r['content']}" for r in records)

    def remember(fact: str) -> str:
        record: Dict[str, Any] = {"content": fact}
        if tier:
            record["tier"] = tier
        if keyed:
            record["key"] = ns.key(str(uuid.uuid4()))
        client.remember([record])
        return "Remembered."

    async def recall_memory(query: str) -> str:
        """Search long-term memory, shared with other agents, for facts relevant to the query.

        Args:
            query: What to look for, in a few words.
        """
        return await in_thread(recall, query)

    async def remember_fact(fact: str) -> str:
        """Store a fact in long-term memory, shared with other agents.

        Args:
            fact: One self-contained sentence.
        """
        return await in_thread(remember, fact)

    return [function_tool(recall_memory), function_tool(remember_fact)]
