"""Interop participant: AutoGen, through a2m_adapters.autogen.A2MMemory
(autogen-core's Memory protocol)."""
import asyncio
from typing import Dict, List

from autogen_core.memory import MemoryContent, MemoryMimeType

from a2m_adapters.autogen import A2MMemory
from a2m_client import Client

from interop_protocol import main


def write(url: str, token: str, text: str) -> None:
    with Client.http(url) as c:
        asyncio.run(A2MMemory(c).add(MemoryContent(content=text, mime_type=MemoryMimeType.TEXT)))


def read(url: str, tokens: List[str]) -> Dict[str, List[str]]:
    with Client.http(url) as c:
        memory = A2MMemory(c, k=5)

        async def all_tokens() -> Dict[str, List[str]]:
            return {t: [str(m.content) for m in (await memory.query(t)).results] for t in tokens}

        return asyncio.run(all_tokens())


main(write, read)
