"""a2m_adapters.langchain against the real server and langchain-core's real
package: a chat message history driven by RunnableWithMessageHistory and a
fake chat model, and a VectorStore / retriever with LangChain's fake
embeddings as the caller's own."""
from __future__ import annotations

import asyncio
from typing import Any, List

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables import RunnableLambda
from langchain_core.runnables.history import RunnableWithMessageHistory

from a2m_adapters.langchain import A2MChatMessageHistory, A2MVectorStore
from a2m_client import A2MError, Client, ErrorCode

from conftest import A2M, contents


def test_history_is_the_session_timeline_in_working_memory(memory: Client) -> None:
    history = A2MChatMessageHistory(memory, "chat-1")
    history.add_messages([SystemMessage("be brief"), HumanMessage("hi, I'm Ana"), AIMessage("hello Ana")])
    history.add_user_message("what's my name?")
    other = A2MChatMessageHistory(memory, "chat-2")
    other.add_user_message("a different conversation")
    msgs = history.messages
    assert [type(m).__name__ for m in msgs] == ["SystemMessage", "HumanMessage", "AIMessage", "HumanMessage"]
    assert [m.content for m in msgs] == ["be brief", "hi, I'm Ana", "hello Ana", "what's my name?"]
    records = memory.timeline(where={"session": "chat-1"})["records"]
    assert [(r["role"], r["tier"]) for r in records] == [
        ("system", "working"), ("user", "working"), ("assistant", "working"), ("user", "working")]
    assert [m.content for m in other.messages] == ["a different conversation"]


def test_messages_round_trip_with_their_fields(memory: Client) -> None:
    history = A2MChatMessageHistory(memory, "s")
    call = AIMessage("", tool_calls=[{"name": "weather", "args": {"city": "Oslo"}, "id": "call-1"}],
                     additional_kwargs={"x": 1}, id="m1")
    result = ToolMessage("rain, 4C", tool_call_id="call-1")
    history.add_messages([HumanMessage("weather in Oslo?"), call])
    history.add_message(result)
    msgs = history.messages
    assert msgs[1] == call and msgs[2] == result
    records = memory.timeline(where={"session": "s"})["records"]
    assert records[1]["content"] == "weather({'city': 'Oslo'})"
    # A tool call and its result are one unit (spec §3.4).
    assert records[1]["group"] and records[1]["group"] == records[2]["group"]
    assert "group" not in records[0] or records[0]["group"] is None
    # A second history object (another process) finds the call's group.
    A2MChatMessageHistory(memory, "s").add_message(ToolMessage("late answer", tool_call_id="call-1"))
    assert memory.timeline(where={"session": "s"})["records"][3]["group"] == records[1]["group"]


def test_history_reads_turns_other_frameworks_wrote(memory: Client) -> None:
    memory.remember([{"content": "from the CLI", "role": "user", "session": "mixed"},
                     {"content": "an answer", "role": "assistant", "session": "mixed"},
                     {"content": "a note", "role": "memory", "session": "mixed"}])
    msgs = A2MChatMessageHistory(memory, "mixed").messages
    assert [(type(m).__name__, m.content) for m in msgs] == [
        ("HumanMessage", "from the CLI"), ("AIMessage", "an answer"), ("ChatMessage", "a note")]


def test_clear_deletes_this_session_only(memory: Client) -> None:
    a, b = A2MChatMessageHistory(memory, "a"), A2MChatMessageHistory(memory, "b")
    a.add_user_message("one")
    b.add_user_message("two")
    a.clear()
    assert a.messages == [] and [m.content for m in b.messages] == ["two"]


def test_a_closed_conversation_becomes_searchable(memory: Client) -> None:
    history = A2MChatMessageHistory(memory, "trip")
    store = A2MVectorStore(memory)
    history.add_messages([HumanMessage("my passport number ends in 0423"), AIMessage("noted")])
    # Replayed, not searched, while the session is open (DECISIONS 007).
    assert store.similarity_search("passport number") == []
    assert history.close_session()["flushed"] == 2
    assert history.messages == []  # no longer the live conversation
    docs = store.similarity_search("passport number", k=1)
    assert [d.page_content for d in docs] == ["my passport number ends in 0423"]
    assert docs[0].metadata["langchain"]["type"] == "human"


def test_runnable_with_message_history_replays_the_conversation(memory: Client) -> None:
    seen: List[List[BaseMessage]] = []

    def capture(prompt: Any) -> Any:
        seen.append(prompt.to_messages())
        return prompt

    prompt = ChatPromptTemplate.from_messages([MessagesPlaceholder("history"), ("human", "{input}")])
    chain = prompt | RunnableLambda(capture) | FakeListChatModel(responses=["hello Bo", "your name is Bo"])
    app = RunnableWithMessageHistory(chain, lambda sid: A2MChatMessageHistory(memory, sid),
                                     input_messages_key="input", history_messages_key="history")
    config = {"configurable": {"session_id": "user-bo"}}
    assert app.invoke({"input": "I am Bo"}, config=config).content == "hello Bo"
    assert app.invoke({"input": "who am I?"}, config=config).content == "your name is Bo"
    assert [m.content for m in seen[1]] == ["I am Bo", "hello Bo", "who am I?"]
    assert [(r["role"], r["content"]) for r in memory.timeline(where={"session": "user-bo"})["records"]] == [
        ("user", "I am Bo"), ("assistant", "hello Bo"), ("user", "who am I?"), ("assistant", "your name is Bo")]


def test_history_needs_sessions() -> None:
    with Client.stdio([A2M, "serve", "--memory", "--capabilities", "core,tiers,keys"]) as c:
        with pytest.raises(A2MError) as e:
            A2MChatMessageHistory(c, "s")
        assert e.value.code == ErrorCode.CAPABILITY_NOT_SUPPORTED


def test_vector_store_with_caller_owned_embeddings(memory: Client) -> None:
    embed = DeterministicFakeEmbedding(size=16)
    store = A2MVectorStore(memory, embed)
    ids = store.add_texts(["cats purr when content", "dogs bark at strangers", "the moon orbits the earth"],
                          metadatas=[{"topic": "pets"}, {"topic": "pets"}, {"topic": "space"}], ids=["c", "d", "m"])
    assert ids == ["c", "d", "m"]
    record = memory.fetch("langchain/c", embeddings=True)["record"]
    assert record["tier"] == "semantic" and record["metadata"] == {"topic": "pets"}
    assert record["embedding"] == pytest.approx(embed.embed_documents(["cats purr when content"])[0])
    # The exact text: same vector, same words: first.
    docs = store.similarity_search("dogs bark at strangers", k=2)
    assert docs[0].id == "d" and docs[0].page_content == "dogs bark at strangers"
    assert store.similarity_search_by_vector(embed.embed_query("the moon orbits the earth"), k=1)[0].id == "m"
    assert {d.id for d in store.similarity_search("strangers moon cats", k=5, filter={"topic": "pets"})} == {"c", "d"}
    scored = store.similarity_search_with_relevance_scores("cats purr when content", k=3)
    assert scored[0][0].id == "c" and 0.0 <= scored[-1][1] <= scored[0][1] <= 1.0
    retriever = store.as_retriever(search_kwargs={"k": 1})
    assert [d.id for d in retriever.invoke("the moon orbits the earth")] == ["m"]
    assert [d.id for d in asyncio.run(retriever.ainvoke("cats purr when content"))] == ["c"]


def test_vector_store_upserts_by_id_and_deletes_its_namespace_only(memory: Client) -> None:
    store = A2MVectorStore(memory)
    store.add_texts(["v1 of the fact"], ids=["f"])
    store.add_texts(["v2 of the fact"], ids=["f"])
    assert [d.page_content for d in store.get_by_ids(["f", "nope"])] == ["v2 of the fact"]
    assert memory.fetch("langchain/f")["record"]["revision"] == 1
    other = A2MVectorStore(memory, namespace="team-b")
    other.add_documents([Document(
        page_content="team b's fact", metadata={"k": 1}, id="f")])
    plain = memory.remember([{"content": "a fact from the CLI", "tier": "semantic"}])["ids"][0]
    # Reads are not scoped: both namespaces and the CLI's record.
    found = {d.page_content for d in store.similarity_search("fact", k=10)}
    assert found == {"v2 of the fact", "team b's fact", "a fact from the CLI"}
    # Deletes are: ids outside the namespace are not this store's to delete.
    store.delete([plain, "team-b/f"])
    assert len(memory.recall("fact")["records"]) == 3
    store.delete()
    assert sorted(contents(memory.recall("fact")["records"])) == ["a fact from the CLI", "team b's fact"]
    assert [d.id for d in other.get_by_ids(["f"])] == ["f"]


def test_vector_store_from_texts_over_http(http_url: str) -> None:
    with Client.http(http_url) as c:
        store = A2MVectorStore.from_texts(["sqlite keeps this across restarts"], client=c, ids=["p"])
        assert store.similarity_search("restarts")[0].id == "p"
