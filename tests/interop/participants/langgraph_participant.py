"""Interop participant: LangGraph, through a2m_adapters.langgraph.A2MStore
(put into a namespace; search the whole store)."""
import json
from typing import Dict, List

from a2m_adapters.langgraph import A2MStore
from a2m_client import Client

from interop_protocol import main


def write(url: str, token: str, text: str) -> None:
    with Client.http(url) as c:
        A2MStore(c, index={"fields": ["text"]}).put(("interop", "langgraph"), token, {"text": text})


def read(url: str, tokens: List[str]) -> Dict[str, List[str]]:
    with Client.http(url) as c:
        store = A2MStore(c)
        return {t: [json.dumps(i.value, ensure_ascii=False) for i in store.search((), query=t, limit=5)]
                for t in tokens}


main(write, read)
