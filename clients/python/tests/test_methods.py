"""Every method of the spec through the client, against a fresh
`a2m serve --memory` each: results as the spec shapes them, errors typed
with their code and data, timestamps kept as RFC 3339 strings, and fields
the client does not know kept as they came."""
from __future__ import annotations

import threading

import pytest

from a2m_client import A2MError, Client, ErrorCode
from conftest import A2M, RFC3339


def test_describe_the_result_as_sent_unknown_fields_included(client: Client) -> None:
    d = client.description
    assert d["protocol"] == "a2m/0.1"
    assert "core" in d["capabilities"]
    assert "memory/summarize" in d["methods"]
    assert d["events"]["push"] is True and client.can_push
    assert isinstance(d["scorer"], dict)  # not in the spec: kept
    assert [t["kind"] for t in d["tiers"]] == ["working", "episodic", "semantic", "procedural"]
    assert client.supports("keys") and not client.supports("no-such-capability")


def test_remember_ids_in_order_and_a_client_id_is_idempotent(client: Client) -> None:
    r = client.remember([{"content": "first"}, {"content": "second", "id": "my-id-1"}])
    assert len(r["ids"]) == 2 and isinstance(r["ids"][0], str) and r["ids"][1] == "my-id-1"
    assert client.remember([{"content": "second, again", "id": "my-id-1"}])["ids"] == ["my-id-1"]
    assert len(client.timeline()["records"]) == 2


def test_metadata_round_trips_and_timestamps_stay_strings(client: Client) -> None:
    metadata = {"source": "chat", "nested": {"n": 1.5, "list": [1, "two", None, True]}}
    client.remember([{"content": "the deploy key rotates every 90 days", "role": "user", "metadata": metadata}])
    rec = client.recall("deploy key rotation")["records"][0]
    assert rec["metadata"] == metadata
    assert rec["role"] == "user"
    assert isinstance(rec["created_at"], str) and RFC3339.match(rec["created_at"])
    assert RFC3339.match(rec["accessed_at"])
    assert isinstance(rec["score"], float)


def test_recall_score_order_limit_where_and_prompt(client: Client) -> None:
    client.remember([
        {"content": "cats purr when content", "metadata": {"animal": "cat"}},
        {"content": "cats and dogs and cats again", "metadata": {"animal": "both"}},
        {"content": "dogs bark at the mail carrier", "metadata": {"animal": "dog"}},
    ])
    recs = client.recall("cats", limit=10)["records"]
    assert len(recs) >= 2
    assert all(a["score"] >= b["score"] for a, b in zip(recs, recs[1:]))
    assert len(client.recall("cats", limit=1)["records"]) == 1
    assert [r["metadata"]["animal"] for r in client.recall("dogs", where={"animal": ["dog"]})["records"]] == ["dog"]
    with_prompt = client.recall("dogs", prompt={"style": "facts"})
    assert "dogs bark" in with_prompt["prompt"]
    assert set(with_prompt["prompt_ids"]) <= {r["id"] for r in with_prompt["records"]}
    assert "prompt" not in client.recall("dogs")


def test_timeline_ascending_newest_n_one_session_and_prompt(client: Client) -> None:
    for content in ["t1", "t2", "t3", "t4"]:
        client.remember([{"content": content, "session": "other" if content == "t3" else "main"}])
    assert [r["content"] for r in client.timeline(limit=2)["records"]] == ["t3", "t4"]
    assert [r["content"] for r in client.timeline(where={"session": "main"})["records"]] == ["t1", "t2", "t4"]
    t = client.timeline(where={"session": "main"}, prompt={"style": "transcript"})
    assert isinstance(t["prompt"], str) and len(t["prompt_ids"]) == 3


def test_forget_counts_and_no_selector_is_invalid_params(client: Client) -> None:
    ids = client.remember([{"content": "a"}, {"content": "b"}])["ids"]
    assert client.forget(ids=[ids[0]]) == {"forgotten": 1}
    with pytest.raises(A2MError) as info:
        client.forget()
    e = info.value
    assert e.code == ErrorCode.INVALID_PARAMS == -32602
    assert e.code_name == "INVALID_PARAMS"
    assert e.method == "memory/forget"


def test_promote_consolidate_reinforce(client: Client) -> None:
    ids = client.remember([{"content": "worth keeping"}])["ids"]
    assert client.promote(ids, "semantic") == {"promoted": 1}
    with pytest.raises(A2MError) as info:
        client.promote(ids, "no-such-tier")
    assert info.value.code == ErrorCode.UNKNOWN_TIER
    cons = client.consolidate()
    assert all(isinstance(cons[k], int) for k in ("moved", "promoted", "dropped", "summarized"))
    assert cons["counts"]["semantic"] == 1
    assert client.reinforce(ids, amount=2) == {"reinforced": 1}
    rec = client.timeline()["records"][0]
    assert rec["tier"] == "semantic" and rec["salience"] > 1


def test_fetch_replacement_keeps_the_id_and_an_unused_key_is_none(client: Client) -> None:
    first = client.remember([{"content": "Paris", "key": "user/city"}])
    assert client.remember([{"content": "Lyon", "key": "user/city"}])["ids"] == first["ids"]
    rec = client.fetch("user/city")["record"]
    assert rec is not None and rec["content"] == "Lyon" and rec["revision"] == 1
    assert client.fetch("user/unknown") == {"record": None}
    with pytest.raises(A2MError) as info:
        client.fetch("")
    assert info.value.code == ErrorCode.INVALID_PARAMS


def test_session_list_and_close(client: Client) -> None:
    client.remember([{"content": "hello", "session": "chat-1"}, {"content": "hi back", "session": "chat-1"}])
    sessions = client.session_list()["sessions"]
    assert [(s["session"], s["records"]) for s in sessions] == [("chat-1", 2)]
    closed = client.session_close("chat-1")
    assert closed["closed"] == "chat-1" and closed["flushed"] == 2 and isinstance(closed["counts"], dict)
    assert client.session_close("never-opened")["flushed"] == 0


def test_events_poll_from_now_then_every_event_once_in_order(client: Client) -> None:
    head = client.events()
    assert head["events"] == [] and isinstance(head["cursor"], str)
    ids = client.remember([{"content": "e1"}, {"content": "e2"}])["ids"]
    client.forget(ids=[ids[0]])
    page = client.events(cursor=head["cursor"])
    assert [e["kind"] for e in page["events"]] == ["written", "written", "forgotten"]
    assert [e["id"] for e in page["events"][:2]] == ids
    assert all(RFC3339.match(e["at"]) for e in page["events"])
    assert client.events(cursor=page["cursor"])["events"] == []


def test_watch_polls_as_an_iterator_and_resumes_from_its_cursor(client: Client) -> None:
    watch = client.watch(interval=0.02)
    it = iter(watch)
    written: list = []
    writer = threading.Timer(0.1, lambda: written.extend(
        client.remember([{"content": "w1"}, {"content": "w2"}])["ids"]))
    writer.start()
    got = [next(it)["id"], next(it)["id"]]  # each waits for a poll that finds it
    writer.join()
    assert got == written
    cursor = watch.cursor
    watch.close()
    assert list(it) == []
    more = client.remember([{"content": "w3"}])["ids"]
    resumed = iter(client.watch(cursor=cursor, interval=0.02))
    assert next(resumed)["id"] == more[0]


def test_watch_a_foreign_cursor_is_reset_and_on_reset_is_told(client: Client) -> None:
    with Client.stdio([A2M, "serve", "--memory"]) as other:
        foreign = other.events()["cursor"]
    client.remember([{"content": "r1"}])
    resets = []
    event = next(iter(client.watch(cursor=foreign, interval=0.02, on_reset=resets.append)))
    assert event["kind"] == "written"
    assert len(resets) == 1 and resets[0]["reset"] is True


def test_summarize_and_the_sources_stay(client: Client) -> None:
    client.remember([
        {"content": "The deploy key rotates every 90 days.", "metadata": {"topic": "ops"}},
        {"content": "Rotation of the deploy key is automated by the vault.", "metadata": {"topic": "ops"}},
    ])
    r = client.summarize(where={"topic": "ops"}, into="semantic")
    assert isinstance(r["read"], int) and r["written"] == len(r["records"])
    assert len(client.timeline(where={"topic": "ops"})["records"]) == 2
    with pytest.raises(A2MError) as info:
        client.summarize()
    assert info.value.code == ErrorCode.INVALID_PARAMS


def test_errors_carry_the_server_data(client: Client) -> None:
    client.remember([{"content": "v", "embedding": [1, 0, 0]}])
    with pytest.raises(A2MError) as info:
        client.remember([{"content": "w", "embedding": [1, 0]}])
    e = info.value
    assert e.code == ErrorCode.EMBEDDING_MISMATCH and e.code_name == "EMBEDDING_MISMATCH"
    assert e.has_data and e.data == {"expected": 3, "got": 2}
    assert isinstance(e.message, str) and e.message in str(e)


def test_a_field_of_an_undeclared_capability_is_refused_by_the_server() -> None:
    with Client.stdio([A2M, "serve", "--memory", "--capabilities", "core"]) as c:
        with pytest.raises(A2MError) as info:
            c.remember([{"content": "x", "tier": "semantic"}])
        assert info.value.code == ErrorCode.CAPABILITY_NOT_SUPPORTED
        assert info.value.data == {"capability": "tiers"}


def test_unknown_params_are_passed_on_and_ignored(client: Client) -> None:
    # A parameter of a later version goes out as given; the server ignores it (§2).
    client.remember([{"content": "ignored param"}], x_future_param={"a": 1})
    assert client.recall("ignored", x_rerank=True)["records"][0]["content"] == "ignored param"


def test_record_and_result_fields_the_client_does_not_know_are_kept() -> None:
    # The real server, with every record given a field a later version might
    # add (and one result field), as a 0.2 server would send them.
    script = ('"$0" serve --memory | sed -u -e \'s/"content":/"x_future":{"n":1,"tags":["a"]},"content":/g\' '
              '-e \'s/"result":{"records":/"result":{"x_page":2,"records":/\'')
    with Client.stdio(["sh", "-c", script, A2M]) as c:
        c.remember([{"content": "tolerant"}])
        r = c.recall("tolerant")
        assert r["x_page"] == 2
        assert r["records"][0]["content"] == "tolerant"
        assert r["records"][0]["x_future"] == {"n": 1, "tags": ["a"]}
        assert c.timeline()["records"][0]["x_future"] == {"n": 1, "tags": ["a"]}
