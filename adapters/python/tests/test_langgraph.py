"""a2m_adapters.langgraph.A2MStore against the real server and LangGraph's
real package: BaseStore's five operations, namespaces as keys, filters,
vectors of the caller's own, and a compiled graph whose nodes remember and
recall through the store."""
from __future__ import annotations

import asyncio
import operator
from typing import Annotated, List, TypedDict

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore

from a2m_adapters.langgraph import A2MStore
from a2m_client import A2MError, Client, ErrorCode

from conftest import A2M, contents


def test_put_get_round_trip_as_a_keyed_semantic_record(memory: Client) -> None:
    store = A2MStore(memory)
    store.put(("users", "alice"), "city", {"text": "Alice moved to Lisbon", "n": 2, "nested": {"a": [1, None]}})
    # Without index fields the content is the whole value (LangGraph's "$").
    assert memory.fetch("users/alice/city")["record"]["content"] == \
        '{"n": 2, "nested": {"a": [1, null]}, "text": "Alice moved to Lisbon"}'
    item = store.get(("users", "alice"), "city")
    assert item is not None
    assert (item.namespace, item.key) == (("users", "alice"), "city")
    assert item.value == {"text": "Alice moved to Lisbon", "n": 2, "nested": {"a": [1, None]}}
    record = memory.fetch("users/alice/city")["record"]
    assert record["tier"] == "semantic"
    assert record["revision"] == 0
    assert record["metadata"]["text"] == "Alice moved to Lisbon"
    assert store.get(("users", "alice"), "country") is None
    assert store.get(("users",), "alice") is None


def test_put_replaces_the_item_in_place(memory: Client) -> None:
    store = A2MStore(memory)
    store.put(("prefs",), "lang", {"v": "fr"})
    first = memory.fetch("prefs/lang")["record"]
    store.put(("prefs",), "lang", {"v": "pt"})
    second = memory.fetch("prefs/lang")["record"]
    assert second["id"] == first["id"] and second["revision"] == 1
    assert store.get(("prefs",), "lang").value == {"v": "pt"}
    assert len(store.search(("prefs",))) == 1


def test_delete_removes_only_that_item(memory: Client) -> None:
    store = A2MStore(memory)
    store.put(("a",), "k", {"v": 1})
    store.put(("a",), "k2", {"v": 2})  # "a/k" is a byte prefix of "a/k2"
    store.delete(("a",), "k")
    assert store.get(("a",), "k") is None
    assert store.get(("a",), "k2").value == {"v": 2}
    store.delete(("a",), "missing")  # not an error


def test_labels_with_slashes_do_not_split(memory: Client) -> None:
    store = A2MStore(memory)
    store.put(("docs/v1", "x%y"), "a/b", {"v": 1})
    assert memory.fetch("docs%2Fv1/x%25y/a%2Fb")["record"] is not None
    item = store.get(("docs/v1", "x%y"), "a/b")
    assert (item.namespace, item.key, item.value) == (("docs/v1", "x%y"), "a/b", {"v": 1})
    assert store.list_namespaces() == [("docs/v1", "x%y")]


def test_search_by_query_filter_and_namespace(memory: Client) -> None:
    store = A2MStore(memory)
    store.put(("team", "facts"), "1", {"text": "the deploy key rotates every 90 days", "kind": "ops", "score": 5})
    store.put(("team", "facts"), "2", {"text": "lunch is at noon on fridays", "kind": "life", "score": 1})
    store.put(("team", "notes"), "3", {"text": "the deploy window is tuesday", "kind": "ops", "score": 3})
    store.put(("other",), "4", {"text": "deploy scripts live in ops/", "kind": "ops", "score": 9})

    hits = store.search(("team",), query="deploy key")
    assert [h.key for h in hits][:1] == ["1"]
    assert {h.key for h in hits} <= {"1", "2", "3"}
    assert all(h.score is not None for h in hits)
    assert {h.key for h in store.search(("team", "facts"))} == {"1", "2"}
    assert {h.key for h in store.search((), filter={"kind": "ops"})} == {"1", "3", "4"}
    assert {h.key for h in store.search(("team",), filter={"kind": "ops"})} == {"1", "3"}
    # Operators are applied here, after the server's equality filter.
    assert {h.key for h in store.search((), filter={"score": {"$gte": 3}, "kind": "ops"})} == {"1", "3", "4"}
    assert {h.key for h in store.search((), filter={"score": {"$lt": 3}})} == {"2"}
    assert {h.key for h in store.search((), filter={"kind": {"$ne": "ops"}})} == {"2"}
    # Without a query: newest first, with offset and limit.
    assert [h.key for h in store.search(())] == ["4", "3", "2", "1"]
    assert [h.key for h in store.search((), limit=2, offset=1)] == ["3", "2"]


def test_a_filter_on_a_record_field_name_tests_the_value(memory: Client) -> None:
    store = A2MStore(memory)
    store.put(("m",), "1", {"role": "admin", "tier": "gold"})
    store.put(("m",), "2", {"role": "guest", "tier": "gold"})
    assert [h.key for h in store.search(("m",), filter={"role": "admin"})] == ["1"]
    assert {h.key for h in store.search(("m",), filter={"tier": "gold"})} == {"1", "2"}


def test_search_reads_what_other_frameworks_wrote(memory: Client) -> None:
    store = A2MStore(memory)
    ids = memory.remember([
        {"content": "the office moved to the harbour building", "tier": "semantic", "metadata": {"src": "cli"}},
        {"content": "keyed note about the harbour", "key": "crewai/n1", "tier": "semantic"},
    ])["ids"]
    hits = store.search((), query="harbour")
    by_key = {(h.namespace, h.key): h for h in hits}
    plain = by_key[((), ids[0])]
    assert plain.value == {"content": "the office moved to the harbour building", "metadata": {"src": "cli"}}
    assert by_key[(("crewai",), "n1")].value == {"content": "keyed note about the harbour"}
    assert store.get((), ids[0]).value["content"] == "the office moved to the harbour building"
    assert store.list_namespaces() == [("crewai",)]


def test_working_memory_is_not_searched_until_its_session_closes(memory: Client) -> None:
    store = A2MStore(memory)
    memory.remember([{"content": "user said the harbour code is 4711", "role": "user", "session": "chat-1"}])
    assert store.search((), query="harbour code") == []
    memory.session_close("chat-1")
    hits = store.search((), query="harbour code")
    assert [h.value["content"] for h in hits] == ["user said the harbour code is 4711"]
    assert hits[0].value["role"] == "user"


def test_list_namespaces_prefix_suffix_depth(memory: Client) -> None:
    store = A2MStore(memory)
    for ns in [("a", "b", "c"), ("a", "b", "d"), ("a", "e"), ("x", "b", "c")]:
        store.put(ns, "k", {"v": 1})
    assert store.list_namespaces() == [("a", "b", "c"), ("a", "b", "d"), ("a", "e"), ("x", "b", "c")]
    assert store.list_namespaces(prefix=("a",)) == [("a", "b", "c"), ("a", "b", "d"), ("a", "e")]
    assert store.list_namespaces(suffix=("c",)) == [("a", "b", "c"), ("x", "b", "c")]
    assert store.list_namespaces(prefix=("*", "b")) == [("a", "b", "c"), ("a", "b", "d"), ("x", "b", "c")]
    assert store.list_namespaces(max_depth=1) == [("a",), ("x",)]
    assert store.list_namespaces(prefix=("a",), max_depth=2, limit=1, offset=1) == [("a", "e")]


def test_caller_owned_vectors_are_stored_verbatim(memory: Client) -> None:
    embed = DeterministicFakeEmbedding(size=12)
    store = A2MStore(memory, index={"dims": 12, "embed": embed, "fields": ["text"]})
    store.put(("kb",), "1", {"text": "photosynthesis turns light into sugar"})
    store.put(("kb",), "2", {"text": "the mitochondria is the powerhouse"})
    record = memory.fetch("kb/1", embeddings=True)["record"]
    assert record["content"] == "photosynthesis turns light into sugar"
    assert record["embedding"] == pytest.approx(embed.embed_documents(["photosynthesis turns light into sugar"])[0])
    hits = store.search(("kb",), query="photosynthesis turns light into sugar")
    assert hits[0].key == "1"
    assert memory.describe()["embeddings"]["dimensions"] == 12


def test_index_false_stores_no_vector(memory: Client) -> None:
    store = A2MStore(memory, index={"dims": 4, "embed": DeterministicFakeEmbedding(size=4), "fields": ["text"]})
    store.put(("kb",), "raw", {"text": "not embedded"}, index=False)
    assert "embedding" not in memory.fetch("kb/raw", embeddings=True)["record"]


def test_a_server_without_keys_is_refused(tmp_path) -> None:
    with Client.stdio([A2M, "serve", "--memory", "--capabilities", "core,tiers"]) as c:
        with pytest.raises(A2MError) as e:
            A2MStore(c)
        assert e.value.code == ErrorCode.CAPABILITY_NOT_SUPPORTED and e.value.data == {"capability": "keys"}


class State(TypedDict):
    user: str
    said: str
    recalled: Annotated[List[str], operator.add]


def remember_node(state: State, *, store: BaseStore) -> dict:
    if state["said"].startswith("remember "):
        fact = state["said"][len("remember "):]
        store.put(("memories", state["user"]), str(abs(hash(fact))), {"text": fact})
    return {}


def recall_node(state: State, *, store: BaseStore) -> dict:
    hits = store.search(("memories", state["user"]), query=state["said"], limit=3)
    return {"recalled": [h.value["text"] for h in hits]}


def build_graph(store: BaseStore):
    graph = StateGraph(State)
    graph.add_node("remember", remember_node)
    graph.add_node("recall", recall_node)
    graph.add_edge(START, "remember")
    graph.add_edge("remember", "recall")
    graph.add_edge("recall", END)
    return graph.compile(store=store)


def test_a_compiled_graph_remembers_across_runs(memory: Client) -> None:
    # fields: the record's content is the text, not the value as JSON.
    app = build_graph(A2MStore(memory, index={"fields": ["text"]}))
    app.invoke({"user": "alice", "said": "remember my favourite colour is teal", "recalled": []})
    app.invoke({"user": "bob", "said": "remember my favourite colour is amber", "recalled": []})
    out = app.invoke({"user": "alice", "said": "what is my favourite colour", "recalled": []})
    assert out["recalled"] == ["my favourite colour is teal"]
    # The graph's memory is an A2M record any client can read.
    assert contents(memory.recall("amber")["records"]) == ["my favourite colour is amber"]


def test_a_compiled_graph_runs_async_over_http(http_url: str) -> None:
    with Client.http(http_url) as c:
        app = build_graph(A2MStore(c))

        async def run() -> dict:
            await app.ainvoke({"user": "carol", "said": "remember the wifi password is hunter2", "recalled": []})
            return await app.ainvoke({"user": "carol", "said": "wifi password", "recalled": []})

        assert asyncio.run(run())["recalled"] == ["the wifi password is hunter2"]
        store = A2MStore(c)
        assert asyncio.run(store.asearch(("memories",), query="wifi"))[0].namespace == ("memories", "carol")
