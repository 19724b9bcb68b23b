"""a2m_adapters.autogen.A2MMemory against the real server and AutoGen's
real packages: the Memory protocol directly, and an AssistantAgent (from
autogen-agentchat) whose model is autogen-ext's ReplayChatCompletionClient,
which records what it was sent."""
from __future__ import annotations

import asyncio

import pytest
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.messages import MemoryQueryEvent
from autogen_core.memory import Memory, MemoryContent, MemoryMimeType
from autogen_core.model_context import BufferedChatCompletionContext
from autogen_core.models import SystemMessage, UserMessage
from autogen_ext.models.replay import ReplayChatCompletionClient

from a2m_adapters.autogen import A2MMemory
from a2m_client import Client

from conftest import A2M, contents


def test_add_and_query(memory: Client) -> None:
    mem = A2MMemory(memory)
    assert isinstance(mem, Memory)

    async def run() -> None:
        await mem.add(MemoryContent(content="The user prefers metric units.", mime_type=MemoryMimeType.TEXT,
                                    metadata={"source": "onboarding"}))
        await mem.add(MemoryContent(content={"city": "Porto", "zip": "4000"}, mime_type=MemoryMimeType.JSON))
        found = await mem.query("metric units")
        assert [c.content for c in found.results][:1] == ["The user prefers metric units."]
        first = found.results[0]
        assert first.mime_type == "text/plain" and first.metadata["source"] == "onboarding"
        assert isinstance(first.metadata["score"], float) and first.metadata["id"]
        (porto,) = (await mem.query("Porto")).results
        assert porto.content == {"city": "Porto", "zip": "4000"} and porto.mime_type == "application/json"
        assert len((await mem.query(MemoryContent(content="units", mime_type="text/plain"), k=1)).results) == 1

    asyncio.run(run())
    records = memory.timeline()["records"]
    assert [r["tier"] for r in records] == ["semantic", "semantic"]
    assert all(r["key"].startswith("autogen/") for r in records)


def test_binary_content_is_refused(memory: Client) -> None:
    with pytest.raises(ValueError):
        asyncio.run(A2MMemory(memory).add(MemoryContent(content=b"\x00\x01", mime_type=MemoryMimeType.BINARY)))


def test_query_reads_every_framework_but_not_open_conversations(memory: Client) -> None:
    memory.remember([{"content": "invoices are due on the 5th", "tier": "semantic", "key": "crewai/x"},
                     {"content": "chat: when are invoices due?", "session": "open-chat"}])
    found = asyncio.run(A2MMemory(memory).query("invoices due"))
    assert [c.content for c in found.results] == ["invoices are due on the 5th"]


def test_clear_deletes_its_namespace_only(memory: Client) -> None:
    memory.remember([{"content": "kept: someone else's fact", "tier": "semantic"}])
    mine, theirs = A2MMemory(memory), A2MMemory(memory, namespace="team-2")

    async def run() -> None:
        await mine.add(MemoryContent(content="mine: a fact", mime_type="text/plain"))
        await theirs.add(MemoryContent(content="theirs: a fact", mime_type="text/plain"))
        await mine.clear()

    asyncio.run(run())
    assert sorted(contents(memory.timeline()["records"])) == ["kept: someone else's fact", "theirs: a fact"]


def test_update_context_adds_one_system_message(memory: Client) -> None:
    mem = A2MMemory(memory)

    async def run() -> None:
        await mem.add(MemoryContent(content="The on-call engineer this week is Priya.", mime_type="text/plain"))
        context = BufferedChatCompletionContext(buffer_size=10)
        empty = await mem.update_context(context)
        assert empty.memories.results == [] and await context.get_messages() == []
        await context.add_message(UserMessage(content="who is on call?", source="user"))
        result = await mem.update_context(context)
        assert [c.content for c in result.memories.results] == ["The on-call engineer this week is Priya."]
        messages = await context.get_messages()
        assert isinstance(messages[-1], SystemMessage)
        assert "1. The on-call engineer this week is Priya." in messages[-1].content

    asyncio.run(run())


def test_an_assistant_agent_uses_the_memory(memory: Client) -> None:
    memory.remember([{"content": "Project Falcon ships on 3 March.", "tier": "semantic"}])
    model = ReplayChatCompletionClient(["Falcon ships on 3 March."])
    agent = AssistantAgent("planner", model_client=model, memory=[A2MMemory(memory)])
    result = asyncio.run(agent.run(task="When does Project Falcon ship?"))
    events = [m for m in result.messages if isinstance(m, MemoryQueryEvent)]
    assert [c.content for c in events[0].content] == ["Project Falcon ships on 3 March."]
    assert result.messages[-1].content == "Falcon ships on 3 March."
    sent = model.create_calls[0]["messages"]
    assert any(isinstance(m, SystemMessage) and "Project Falcon ships on 3 March." in m.content for m in sent)


def test_over_http(http_url: str) -> None:
    with Client.http(http_url) as c:
        mem = A2MMemory(c)
        asyncio.run(mem.add(MemoryContent(content="persisted in sqlite", mime_type="text/plain")))
        assert [r.content for r in asyncio.run(mem.query("sqlite")).results] == ["persisted in sqlite"]
