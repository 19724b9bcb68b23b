"""a2m_adapters.crewai.A2MStorage against the real server and CrewAI's real
package: the StorageBackend methods, CrewAI's unified Memory over it, and
real Crews that save what their tasks found and recall what other
frameworks stored. CrewAI ships no fake LLM: LocalLLM below is a
deterministic local BaseLLM that answers each kind of request CrewAI makes
(a task, memory extraction, memory analysis) from a script."""
from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from typing import Any, Callable, List, Optional

import pytest
from crewai import Agent, Crew, Task
from crewai.llms.base_llm import BaseLLM
from crewai.memory.storage.backend import StorageBackend
from crewai.memory.types import MemoryRecord
from crewai.memory.unified_memory import Memory

from a2m_adapters.crewai import A2MStorage
from a2m_client import Client

from conftest import contents


def _text(messages: Any) -> str:
    if isinstance(messages, str):
        return messages
    return "\n".join(str(m.get("content", "")) for m in messages)


class LocalLLM(BaseLLM):
    """Answers a task with ``answer(prompt)``; extracts as memories the
    result of a task; analyses every memory as scope /facts."""

    def __init__(self, answer: Callable[[str], str], **kwargs: Any) -> None:
        super().__init__(model="local-script", **kwargs)
        self._answer = answer
        self.prompts: List[str] = []

    def call(self, messages: Any, tools: Any = None, callbacks: Any = None, available_functions: Any = None,
             from_task: Any = None, from_agent: Any = None, response_model: Any = None) -> Any:
        text = _text(messages)
        self.prompts.append(text)
        if response_model is not None:
            if response_model.__name__ == "ExtractedMemories":
                result = re.search(r"^Result: (.*)$", text, re.M)
                return response_model(memories=[result.group(1)] if result else [])
            if response_model.__name__ == "MemoryAnalysis":
                return response_model(suggested_scope="/facts", categories=["fact"], importance=0.8)
            return response_model()
        # With function calling on, CrewAI takes a plain answer as final.
        return self._answer(text)

    def supports_function_calling(self) -> bool:
        return True


def record(id: str, content: str, scope: str = "/", **kw: Any) -> MemoryRecord:
    return MemoryRecord(id=id, content=content, scope=scope, **kw)


def test_a2m_storage_is_a_storage_backend(memory: Client) -> None:
    assert isinstance(A2MStorage(memory), StorageBackend)


def test_save_get_update_and_the_record_it_makes(memory: Client) -> None:
    storage = A2MStorage(memory)
    embed = storage.embedder()
    vector = embed(["the build cache lives on the nas"])[0]
    storage.save([record("m1", "the build cache lives on the nas", "/infra/build", categories=["infra"],
                         importance=0.9, embedding=vector, metadata={"by": "ops"})])
    raw = memory.fetch("crewai/infra/build/m1")["record"]
    assert raw["tier"] == "semantic" and raw["content"] == "the build cache lives on the nas"
    assert raw["metadata"]["by"] == "ops" and raw["metadata"]["crewai"]["categories"] == ["infra"]
    assert "embedding" not in memory.fetch("crewai/infra/build/m1", embeddings=True)["record"]  # a stand-in
    got = storage.get_record("m1")
    assert (got.id, got.scope, got.categories, got.importance, got.metadata) == (
        "m1", "/infra/build", ["infra"], 0.9, {"by": "ops"})
    got.content = "the build cache moved to s3"
    storage.update(got)
    raw2 = memory.fetch("crewai/infra/build/m1")["record"]
    assert raw2["id"] == raw["id"] and raw2["revision"] == 1 and raw2["content"] == "the build cache moved to s3"
    assert storage.get_record("nope") is None


def test_search_sends_the_text_behind_the_vector(memory: Client) -> None:
    storage = A2MStorage(memory)
    embed = storage.embedder()
    memory.remember([{"content": "the release train leaves every second Tuesday", "tier": "semantic"},
                     {"content": "chat: when does the release train leave?", "session": "open"}])
    storage.save([record("a", "the coffee machine is on floor 2", "/office", categories=["office"])])
    (hit, score), = storage.search(embed(["release train"])[0], limit=5)
    assert hit.content == "the release train leaves every second Tuesday" and hit.scope == "/"
    assert 0.0 < score <= 1.0
    assert [r.id for r, _ in storage.search(embed(["coffee machine"])[0], scope_prefix="/office")] == ["a"]
    assert storage.search(embed(["release train"])[0], scope_prefix="/office") == []
    assert [r.id for r, _ in storage.search(embed(["coffee"])[0], categories=["office"])] == ["a"]
    assert storage.search(embed(["coffee"])[0], categories=["finance"]) == []
    assert storage.search([0.5, 0.25]) == []  # a vector of unknown text, and the store holds no vectors


def test_real_vectors_are_stored_and_searched(memory: Client) -> None:
    def embedding_model(texts: List[str]) -> List[List[float]]:
        return [[float(len(t)), float(t.count("a")), 1.0] for t in texts]

    storage = A2MStorage(memory)
    embed = storage.embedder(embedding_model)
    storage.save([record("v", "a vector of my own", embedding=embed(["a vector of my own"])[0])])
    assert memory.fetch("crewai/v", embeddings=True)["record"]["embedding"] == [18.0, 1.0, 1.0]
    assert storage.search(embed(["a vector of my own"])[0])[0][0].id == "v"


def test_listing_scopes_counts_delete_and_reset(memory: Client) -> None:
    storage = A2MStorage(memory)
    old = datetime.now(timezone.utc) - timedelta(days=3)
    storage.save([record("1", "one", "/a/x", categories=["c1"]), record("2", "two", "/a/y", categories=["c1", "c2"]),
                  record("3", "three", "/b", created_at=old)])
    memory.remember([{"content": "someone else's", "tier": "semantic"}])
    assert storage.count() == 4 and storage.count("/a") == 2
    assert storage.list_scopes("/") == ["/a", "/b"] and storage.list_scopes("/a") == ["/a/x", "/a/y"]
    assert storage.list_categories() == {"c1": 2, "c2": 1}
    info = storage.get_scope_info("/a")
    assert (info.record_count, info.categories, info.child_scopes) == (2, ["c1", "c2"], ["/a/x", "/a/y"])
    assert [r.id for r in storage.list_records(limit=2)] == [memory.timeline()["records"][-1]["id"], "3"]
    assert storage.delete(older_than=datetime.now(timezone.utc) - timedelta(days=1)) == 1
    assert storage.delete(categories=["c2"]) == 1
    assert storage.delete(record_ids=["1"]) == 1
    storage.save([record("4", "four", "/a")])
    storage.reset("/a")
    assert storage.count() == 1
    storage.save([record("5", "five", "/z")])
    storage.reset()
    assert contents(memory.timeline()["records"]) == ["someone else's"]


def make_memory(client: Client, llm: BaseLLM) -> Memory:
    storage = A2MStorage(client)
    return Memory(llm=llm, storage=storage, embedder=storage.embedder())


def test_unified_memory_remembers_and_recalls(memory: Client) -> None:
    llm = LocalLLM(lambda prompt: "")
    mem = make_memory(memory, llm)
    mem.remember("Our VPN gateway is vpn.example.org.", scope="/it", categories=["network"], importance=0.6)
    matches = mem.recall("VPN gateway", depth="shallow")
    assert [m.record.content for m in matches] == ["Our VPN gateway is vpn.example.org."]
    mem.remember("Payroll runs on the 25th.")  # scope and categories from the (local) LLM's analysis
    raw = memory.recall("payroll", where={"tier": "semantic"})["records"][0]
    assert raw["key"].startswith("crewai/facts/") and raw["metadata"]["crewai"]["categories"] == ["fact"]
    mem.forget(scope="/it")
    assert [r["content"] for r in memory.timeline()["records"]] == ["Payroll runs on the 25th."]


def crew(client: Client, llm: LocalLLM, description: str) -> Crew:
    agent = Agent(role="analyst", goal="answer questions", backstory="a careful analyst", llm=llm,
                  allow_delegation=False)
    task = Task(description=description, expected_output="one sentence", agent=agent)
    return Crew(agents=[agent], tasks=[task], memory=make_memory(client, llm))


def test_a_crew_remembers_what_its_task_found(memory: Client) -> None:
    llm = LocalLLM(lambda prompt: "The staging API listens on port 8443.")
    team = crew(memory, llm, "Find out which port the staging API listens on.")
    assert team.kickoff().raw == "The staging API listens on port 8443."
    team.memory.drain_writes()  # the crew saves in the background
    hits = memory.recall("staging API port", where={"tier": "semantic"})["records"]
    assert contents(hits) == ["The staging API listens on port 8443."]
    assert hits[0]["key"].startswith("crewai/")


def test_a_crew_recalls_what_another_framework_stored(memory: Client) -> None:
    memory.remember([{"content": "Invoices over 5000 EUR are approved by Dana.", "tier": "semantic",
                      "key": "langgraph/finance/approvals"}])

    def answer(prompt: str) -> str:
        found = re.findall(r"Invoices over 5000 EUR are approved by \w+\.", prompt)
        return found[0] if found else "I do not know."

    llm = LocalLLM(answer)
    team = crew(memory, llm, "Who approves invoices over 5000 EUR?")
    assert team.kickoff().raw == "Invoices over 5000 EUR are approved by Dana."
    assert any("Relevant memories" in p for p in llm.prompts)
