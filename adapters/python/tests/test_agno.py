"""a2m_adapters.agno.A2MVectorDb against the real server and Agno's real
package: the VectorDb methods, Agno's Knowledge inserting and searching
through it, and an Agent that adds what Knowledge finds to its context
(Agno ships no fake model: EchoModel below is a deterministic local one
that answers with the message it was sent)."""
from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, AsyncIterator, Iterator

import pytest
from agno.agent import Agent
from agno.knowledge.document import Document
from agno.knowledge.knowledge import Knowledge
from agno.models.base import Model
from agno.models.response import ModelResponse

from a2m_adapters.agno import A2MVectorDb
from a2m_client import Client

from conftest import contents


def doc(text: str, id: str, **meta: Any) -> Document:
    return Document(content=text, id=id, name="handbook", meta_data=meta, content_id="c-1")


def test_insert_search_and_the_record_it_makes(memory: Client) -> None:
    db = A2MVectorDb(memory)
    db.insert("h1", [doc("expenses are filed by the 3rd", "e1", section="money"),
                     doc("holidays need two weeks notice", "e2", section="time")], filters={"team": "ops"})
    record = memory.fetch("agno/e1")["record"]
    assert record["tier"] == "semantic" and record["content"] == "expenses are filed by the 3rd"
    assert record["metadata"] == {"section": "money", "team": "ops", "agno_name": "handbook",
                                  "agno_content_hash": "h1", "agno_content_id": "c-1", "agno_user_id": None}
    (found,) = db.search("expenses filed", limit=1)
    assert (found.id, found.name, found.content_id, found.meta_data) == (
        "e1", "handbook", "c-1", {"section": "money", "team": "ops"})
    assert found.reranking_score is not None
    assert [d.id for d in db.search("notice expenses", filters={"section": "time"})] == ["e2"]
    assert db.id_exists("e1") and not db.id_exists("zz")
    assert db.name_exists("handbook") and not db.name_exists("other")
    assert db.content_hash_exists("h1") and not db.content_hash_exists("h1", user_id="u1")


def test_upsert_is_keys(memory: Client) -> None:
    db = A2MVectorDb(memory)
    db.upsert("h", [doc("v1 part one", "p1"), doc("v1 part two", "p2")])
    first = memory.fetch("agno/p1")["record"]
    db.upsert("h", [doc("v2 part one", "p1")])
    second = memory.fetch("agno/p1")["record"]
    # Replaced in place, and the chunk v2 no longer has is gone.
    assert second["id"] == first["id"] and second["revision"] == 1 and second["content"] == "v2 part one"
    assert memory.fetch("agno/p2")["record"] is None
    assert db.upsert_available()


def test_user_scoping(memory: Client) -> None:
    db = A2MVectorDb(memory)
    db.insert("s", [doc("shared rule about badges", "s1")])
    db.insert("a", [doc("alice's rule about badges", "a1")], user_id="alice")
    db.insert("b", [doc("bob's rule about badges", "b1")], user_id="bob")
    assert {d.id for d in db.search("rule badges", limit=10)} == {"s1", "a1", "b1"}
    assert {d.id for d in db.search("rule badges", limit=10, user_id="alice")} == {"s1", "a1"}
    assert db.delete_by_content_id("c-1", user_id="alice")
    assert {d.id for d in db.search("rule badges", limit=10)} == {"s1", "b1"}


def test_search_reads_every_framework_and_deletes_stay_home(memory: Client) -> None:
    memory.remember([{"content": "the VPN certificate renews in May", "tier": "semantic", "key": "langchain/v"},
                     {"content": "open chat: VPN certificate question", "session": "chat"}])
    db = A2MVectorDb(memory)
    db.insert("x", [doc("VPN access needs a ticket", "v")])
    found = db.search("VPN certificate", limit=5)
    assert {d.content for d in found} == {"the VPN certificate renews in May", "VPN access needs a ticket"}
    assert {d.id for d in found} == {"langchain/v", "v"}
    assert not db.delete_by_id("langchain/v")  # not in this namespace
    assert db.delete_by_metadata({"agno_content_hash": "x"})
    db.insert("y", [doc("another", "w")])
    assert db.delete_by_name("handbook")
    db.insert("z", [doc("last", "l")])
    db.drop()
    assert contents(memory.timeline()["records"]) == ["the VPN certificate renews in May",
                                                      "open chat: VPN certificate question"]


def test_update_metadata(memory: Client) -> None:
    db = A2MVectorDb(memory)
    db.insert("h", [doc("a chunk", "k1", a=1)])
    db.update_metadata("c-1", {"reviewed": True})
    assert memory.fetch("agno/k1")["record"]["metadata"]["reviewed"] is True
    assert db.search("chunk")[0].meta_data == {"a": 1, "reviewed": True}


def test_knowledge_inserts_and_searches_through_it(memory: Client) -> None:
    knowledge = Knowledge(vector_db=A2MVectorDb(memory))
    knowledge.insert(name="policy", text_content="Laptops are replaced every four years.", metadata={"kind": "it"})
    docs = knowledge.search("laptops replaced")
    assert [d.content for d in docs] == ["Laptops are replaced every four years."]
    (record,) = memory.timeline()["records"]
    assert record["key"].startswith("agno/") and record["metadata"]["kind"] == "it"
    # Inserting the same content again (upsert) leaves one record.
    knowledge.insert(name="policy", text_content="Laptops are replaced every four years.", metadata={"kind": "it"})
    assert len(memory.timeline()["records"]) == 1
    assert [d.content for d in asyncio.run(knowledge.asearch("laptops"))] == ["Laptops are replaced every four years."]


@dataclass
class EchoModel(Model):
    """Answers every request with the text of the last user message."""

    id: str = "echo"
    name: str = "EchoModel"
    provider: str = "local"

    def _answer(self, kwargs: Any) -> str:
        messages = kwargs.get("messages") or []
        users = [m for m in messages if getattr(m, "role", None) == "user"]
        return str(users[-1].content) if users else ""

    def invoke(self, *args: Any, **kwargs: Any) -> ModelResponse:
        return self._parse_provider_response(self._answer(kwargs))

    async def ainvoke(self, *args: Any, **kwargs: Any) -> ModelResponse:
        return self.invoke(*args, **kwargs)

    def invoke_stream(self, *args: Any, **kwargs: Any) -> Iterator[ModelResponse]:
        yield self.invoke(*args, **kwargs)

    async def ainvoke_stream(self, *args: Any, **kwargs: Any) -> AsyncIterator[ModelResponse]:
        yield self.invoke(*args, **kwargs)

    def _parse_provider_response(self, response: Any, **kwargs: Any) -> ModelResponse:
        return ModelResponse(role="assistant", content=response)

    def _parse_provider_response_delta(self, response: Any) -> ModelResponse:
        return self._parse_provider_response(response)


def test_an_agent_gets_what_another_framework_knows(memory: Client) -> None:
    memory.remember([{"content": "The Lisbon office closes at 18:00 on Fridays.", "tier": "semantic"}])
    agent = Agent(model=EchoModel(), knowledge=Knowledge(vector_db=A2MVectorDb(memory)),
                  add_knowledge_to_context=True, search_knowledge=False, telemetry=False)
    answer = agent.run("When does the Lisbon office close on Fridays?").content
    assert "The Lisbon office closes at 18:00 on Fridays." in answer


def test_over_http(http_url: str) -> None:
    with Client.http(http_url) as c:
        db = A2MVectorDb(c)
        db.insert("h", [doc("kept in sqlite", "k")])
        assert [d.id for d in db.search("sqlite")] == ["k"]
