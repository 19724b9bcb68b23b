"""Interop participant: CrewAI's unified Memory over
a2m_adapters.crewai.A2MStorage. The LLM Memory asks for analysis is a
local stand-in that returns CrewAI's defaults (no network, no model);
scope, categories and importance are given, as a crew's own saves give
them."""
from typing import Any, Dict, List

from crewai.llms.base_llm import BaseLLM
from crewai.memory.unified_memory import Memory

from a2m_adapters.crewai import A2MStorage
from a2m_client import Client

from interop_protocol import main


class DefaultsLLM(BaseLLM):
    def call(self, messages: Any, tools: Any = None, callbacks: Any = None, available_functions: Any = None,
             from_task: Any = None, from_agent: Any = None, response_model: Any = None) -> Any:
        return response_model() if response_model is not None else ""

    def supports_function_calling(self) -> bool:
        return True


def memory(client: Client) -> Memory:
    storage = A2MStorage(client)
    return Memory(llm=DefaultsLLM(model="local-defaults"), storage=storage, embedder=storage.embedder())


def write(url: str, token: str, text: str) -> None:
    with Client.http(url) as c:
        m = memory(c)
        m.remember(text, scope="/interop", categories=["interop"], importance=0.5)
        m.close()


def read(url: str, tokens: List[str]) -> Dict[str, List[str]]:
    with Client.http(url) as c:
        m = memory(c)
        out = {t: [match.record.content for match in m.recall(t, limit=5, depth="shallow")] for t in tokens}
        m.close()
        return out


main(write, read)
