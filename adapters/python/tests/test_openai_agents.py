"""a2m_adapters.openai_agents against the real server and the OpenAI Agents
SDK's real package: a Runner with the SDK's own deterministic ScriptedModel
keeps its conversation in an A2MSession and calls the memory tools."""
from __future__ import annotations

import asyncio
import json
from typing import Any, List

import pytest
from agents import Agent, Runner, set_tracing_disabled
from agents.memory import Session, SessionSettings
from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call

from a2m_adapters.openai_agents import A2MSession, memory_tools
from a2m_client import A2MError, Client, ErrorCode

from conftest import A2M, contents

set_tracing_disabled(True)


def texts(items: List[Any]) -> List[str]:
    """The text of each input item, whatever its shape."""
    out = []
    for item in items:
        content = item.get("content") if isinstance(item, dict) else None
        if isinstance(content, str):
            out.append(content)
        elif isinstance(content, list):
            out.append("".join(p.get("text", "") for p in content))
        elif isinstance(item, dict) and item.get("type") == "function_call_output":
            out.append(str(item["output"]))
        else:
            out.append(json.dumps(item))
    return out


def test_a2m_session_is_a_session(memory: Client) -> None:
    assert isinstance(A2MSession(memory, "s"), Session)


def test_runner_keeps_its_conversation_in_the_session(memory: Client) -> None:
    model = ScriptedModel([[assistant_message("Hello Ana.")], [assistant_message("Your name is Ana.")]])
    agent = Agent(name="assistant", instructions="Be brief.", model=model)
    session = A2MSession(memory, "conv-1")

    async def run() -> Any:
        await Runner.run(agent, "My name is Ana.", session=session)
        return await Runner.run(agent, "What is my name?", session=session)

    result = asyncio.run(run())
    assert result.final_output == "Your name is Ana."
    # The second call saw the first turn, replayed from the store.
    assert texts(model.last_call.input) == ["My name is Ana.", "Hello Ana.", "What is my name?"]
    records = memory.timeline(where={"session": "conv-1"})["records"]
    assert [(r["role"], r["content"], r["tier"]) for r in records] == [
        ("user", "My name is Ana.", "working"), ("assistant", "Hello Ana.", "working"),
        ("user", "What is my name?", "working"), ("assistant", "Your name is Ana.", "working")]
    model.assert_complete()


def test_items_round_trip_exactly(memory: Client) -> None:
    session = A2MSession(memory, "exact")
    items = [
        {"role": "user", "content": "hi"},
        {"type": "function_call", "call_id": "c1", "name": "lookup", "arguments": "{\"q\": 1}", "id": "fc1"},
        {"type": "function_call_output", "call_id": "c1", "output": "found"},
        {"type": "message", "role": "assistant", "id": "m1", "status": "completed",
         "content": [{"type": "output_text", "text": "done", "annotations": []}]},
    ]
    asyncio.run(session.add_items(items))
    assert asyncio.run(session.get_items()) == items
    assert asyncio.run(session.get_items(limit=2)) == items[2:]
    records = memory.timeline(where={"session": "exact"})["records"]
    assert contents(records) == ["hi", "lookup({\"q\": 1})", "found", "done"]
    assert [r["role"] for r in records] == ["user", "assistant", "tool", "assistant"]
    assert records[1]["group"] == records[2]["group"] == "exact/call/c1"


def test_pop_clear_and_settings(memory: Client) -> None:
    session = A2MSession(memory, "p", session_settings=SessionSettings(limit=1))
    other = A2MSession(memory, "q")

    async def run() -> None:
        await session.add_items([{"role": "user", "content": "one"}, {"role": "user", "content": "two"}])
        await other.add_items([{"role": "user", "content": "elsewhere"}])
        assert texts(await session.get_items()) == ["two"]  # the settings' limit
        assert texts(await session.get_items(limit=5)) == ["one", "two"]
        assert (await session.pop_item())["content"] == "two"
        assert texts(await session.get_items(limit=5)) == ["one"]
        await session.clear_session()
        assert await session.get_items() == [] and await session.pop_item() is None
        assert texts(await other.get_items()) == ["elsewhere"]

    asyncio.run(run())


def test_session_replays_turns_other_frameworks_wrote(memory: Client) -> None:
    memory.remember([{"content": "from langchain", "role": "user", "session": "shared"},
                     {"content": "a note", "role": "memory", "session": "shared"}])
    items = asyncio.run(A2MSession(memory, "shared").get_items())
    assert items == [{"role": "user", "content": "from langchain"}, {"role": "user", "content": "a note"}]


def test_an_agent_recalls_what_another_framework_stored(memory: Client) -> None:
    memory.remember([{"content": "The staging database lives on host db-7.", "tier": "semantic"}])
    memory.remember([{"content": "an open chat turn about the staging database", "session": "other"}])

    def answer(call: ModelCall) -> Any:
        outputs = [i["output"] for i in call.input if isinstance(i, dict) and i.get("type") == "function_call_output"]
        return [assistant_message(outputs[-1])]

    model = ScriptedModel([
        [function_call("recall_memory", {"query": "staging database host"}, call_id="r1")],
        ModelStep.respond(answer),
    ])
    agent = Agent(name="ops", model=model, tools=memory_tools(memory))
    session = A2MSession(memory, "ops-1")
    result = asyncio.run(Runner.run(agent, "Where is the staging database?", session=session))
    # Working memory (the open chat) is not searched; the fact is.
    assert result.final_output == "- The staging database lives on host db-7."
    call, output = memory.timeline(where={"session": "ops-1"})["records"][1:3]
    assert call["group"] == output["group"] and output["role"] == "tool"


def test_an_agent_remembers_and_the_fact_outlives_the_session(memory: Client) -> None:
    model = ScriptedModel([
        [function_call("remember_fact", {"fact": "Deploys are frozen on Fridays."}, call_id="w1")],
        [assistant_message("Noted.")],
    ])
    agent = Agent(name="ops", model=model, tools=memory_tools(memory))
    session = A2MSession(memory, "ops-2")
    asyncio.run(Runner.run(agent, "Remember: no deploys on Fridays.", session=session))
    record = memory.recall("frozen Fridays", where={"tier": "semantic"})["records"][0]
    assert record["content"] == "Deploys are frozen on Fridays." and record["key"].startswith("openai-agents/")
    # Closing the session moves the conversation to searchable memory.
    assert "Remember: no deploys on Fridays." not in contents(
        memory.recall("no deploys", where={"tier": ["episodic", "semantic"]})["records"])
    assert asyncio.run(session.close_session())["flushed"] == 4
    assert asyncio.run(session.get_items()) == []
    assert "Remember: no deploys on Fridays." in contents(
        memory.recall("no deploys", where={"tier": ["episodic", "semantic"]})["records"])


def test_runner_over_http(http_url: str) -> None:
    with Client.http(http_url) as c:
        model = ScriptedModel([[assistant_message("ok")]])
        asyncio.run(Runner.run(Agent(name="a", model=model), "persist me", session=A2MSession(c, "h")))
        assert texts(asyncio.run(A2MSession(c, "h").get_items())) == ["persist me", "ok"]


def test_session_needs_sessions() -> None:
    with Client.stdio([A2M, "serve", "--memory", "--capabilities", "core,tiers"]) as c:
        with pytest.raises(A2MError) as e:
            A2MSession(c, "s")
        assert e.value.code == ErrorCode.CAPABILITY_NOT_SUPPORTED
