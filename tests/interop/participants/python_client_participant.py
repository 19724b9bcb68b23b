"""Interop participant: the Python client (clients/python) itself."""
from typing import Dict, List

from a2m_client import Client

from interop_protocol import main


def semantic(client: Client) -> str:
    """The first tier of kind semantic (spec §4.7), where facts are searched."""
    return next(t["name"] for t in client.description["tiers"] if t.get("kind") == "semantic")


def write(url: str, token: str, text: str) -> None:
    with Client.http(url) as c:
        c.remember([{"content": text, "tier": semantic(c)}])


def read(url: str, tokens: List[str]) -> Dict[str, List[str]]:
    with Client.http(url) as c:
        return {t: [r["content"] for r in c.recall(t, limit=5)["records"]] for t in tokens}


main(write, read)
