"""The in-process transport: liba2m.so through ctypes (spec §8.1).

Collected only when A2M_LIBRARY names the library (conftest.py): the
transport is written for liba2m's configuration API (a2m_config_new /
a2m_config_set, a2m_handle with a length and a reply out-parameter), and
runs in the default suite once that API is on main."""
from __future__ import annotations

import os

import pytest

from a2m_client import A2MError, Client, ErrorCode, TransportError
from a2m_client.inprocess import InProcessTransport

LIBRARY = os.environ.get("A2M_LIBRARY", "")


def test_memory_engine_describe_remember_recall() -> None:
    with Client.inprocess(library=LIBRARY, engine="memory") as c:
        assert c.description["protocol"] == "a2m/0.1"
        # A handle with a notification callback can push (§4.13).
        assert c.can_push
        ids = c.remember([{"content": "kept in this process", "metadata": {"n": 1}}])["ids"]
        rec = c.recall("kept")["records"][0]
        assert rec["id"] == ids[0] and rec["metadata"] == {"n": 1}
        assert isinstance(rec["created_at"], str)


def test_push_arrives_during_the_call_that_caused_it() -> None:
    with Client.inprocess(library=LIBRARY) as c:
        with c.subscribe(kinds=["written"]) as sub:
            ids = c.remember([{"content": "a"}, {"content": "b"}])["ids"]
            # liba2m calls back from inside a2m_handle, before it returns.
            assert sub.buffered == 2
            assert [next(sub)["id"] for _ in range(2)] == ids


def test_sqlite_engine_keeps_records_across_opens(tmp_path: object) -> None:
    path = os.path.join(str(tmp_path), "inproc.db")
    with Client.inprocess(library=LIBRARY, engine="sqlite", path=path) as c:
        c.remember([{"content": "durable", "key": "k/1"}])
    with Client.inprocess(library=LIBRARY, engine="sqlite", path=path) as c:
        assert c.fetch("k/1")["record"]["content"] == "durable"


def test_capabilities_and_read_only_from_the_configuration(tmp_path: object) -> None:
    with Client.inprocess(library=LIBRARY, capabilities="core") as c:
        assert c.capabilities == ["core"]
        with pytest.raises(A2MError) as info:
            c.fetch("k")
        assert info.value.code == ErrorCode.CAPABILITY_NOT_SUPPORTED
    path = os.path.join(str(tmp_path), "ro.db")
    with Client.inprocess(library=LIBRARY, engine="sqlite", path=path) as c:
        c.remember([{"content": "before"}])
    with Client.inprocess(library=LIBRARY, engine="sqlite", path=path, config={"read_only": "1"}) as c:
        with pytest.raises(A2MError) as info:
            c.remember([{"content": "after"}])
        assert info.value.code == ErrorCode.READ_ONLY
        assert len(c.timeline()["records"]) == 1


def test_a_bad_option_is_a_transport_error_that_says_why() -> None:
    with pytest.raises(TransportError, match="engine"):
        InProcessTransport(library=LIBRARY, engine="no-such-engine")
    with pytest.raises(TransportError, match="no_such_option"):
        InProcessTransport(library=LIBRARY, config={"no_such_option": "1"})


def test_close_twice_and_calls_after_close() -> None:
    c = Client.inprocess(library=LIBRARY)
    assert c.close() == 0
    assert c.close() == 0
    with pytest.raises(TransportError, match="closed"):
        c.recall("x")
