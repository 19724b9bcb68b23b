"""Interop participant: Agno's Knowledge over a2m_adapters.agno.A2MVectorDb."""
from typing import Dict, List

from agno.knowledge.knowledge import Knowledge

from a2m_adapters.agno import A2MVectorDb
from a2m_client import Client

from interop_protocol import main


def write(url: str, token: str, text: str) -> None:
    with Client.http(url) as c:
        Knowledge(vector_db=A2MVectorDb(c)).insert(name=f"interop-{token}", text_content=text)


def read(url: str, tokens: List[str]) -> Dict[str, List[str]]:
    with Client.http(url) as c:
        knowledge = Knowledge(vector_db=A2MVectorDb(c))
        return {t: [d.content for d in knowledge.search(t, max_results=5)] for t in tokens}


main(write, read)
