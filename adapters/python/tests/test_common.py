"""a2m_adapters itself (no framework): the tiers an adapter writes into and
searches, and namespaces as key prefixes."""
from __future__ import annotations

from a2m_adapters import Layout, Namespace
from a2m_adapters._memory import split_where
from a2m_client import Client

from conftest import A2M


def test_layout_of_the_default_stack(memory: Client) -> None:
    layout = Layout(memory)
    assert layout.working == "working"
    assert layout.searchable == ["episodic", "semantic", "procedural"]
    assert layout.tier_of("semantic") == "semantic"
    assert layout.tier_of("episodic") == "episodic"
    assert layout.search_where() == {"tier": ["episodic", "semantic", "procedural"]}
    assert layout.search_where({"a": 1}) == {"a": 1, "tier": ["episodic", "semantic", "procedural"]}
    # A tier the caller names is narrowed, never widened to working.
    assert layout.search_where({"tier": "working"}) == {"tier": []}
    assert layout.search_where({"tier": ["semantic", "working"]}) == {"tier": ["semantic"]}


def test_layout_without_tiers_adds_nothing() -> None:
    with Client.stdio([A2M, "serve", "--memory", "--capabilities", "core,keys"]) as c:
        layout = Layout(c)
        assert (layout.working, layout.searchable, layout.tier_of("semantic")) == (None, None, None)
        assert layout.search_where() is None
        assert layout.search_where({"a": 1}) == {"a": 1}


def test_the_search_filter_keeps_conversations_out(memory: Client) -> None:
    memory.remember([{"content": "a turn about kites", "session": "s"},
                     {"content": "a fact about kites", "tier": "semantic"}])
    where = Layout(memory).search_where()
    assert [r["content"] for r in memory.recall("kites", where=where)["records"]] == ["a fact about kites"]


def test_namespace() -> None:
    ns = Namespace("crewai")
    assert ns.prefix == "crewai/" and ns.key("x") == "crewai/x"
    assert ns.local("crewai/x") == "x"
    assert ns.local("crewai/") is None and ns.local("agno/x") is None and ns.local(None) is None
    assert Namespace("").key("x") == "x" and Namespace(None).local("x") == "x"


def test_split_where() -> None:
    assert split_where(None) == ({}, False)
    assert split_where({"a": 1, "b": "x", "c": True}) == ({"a": 1, "b": "x", "c": True}, False)
    # Record field names, lists (which mean "any of" in where), operators
    # and nulls are the adapter's to test.
    assert split_where({"role": "x"}) == ({}, True)
    assert split_where({"a": [1, 2]}) == ({}, True)
    assert split_where({"a": {"$gt": 1}, "b": 2}) == ({"b": 2}, True)
    assert split_where({"a": None}) == ({}, True)
