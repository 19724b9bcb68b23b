"""Interop participant: LangChain. Writes as a conversation turn through
A2MChatMessageHistory (working memory: the grid closes the session before
anyone searches); reads through A2MVectorStore's retriever."""
from typing import Dict, List

from a2m_adapters.langchain import A2MChatMessageHistory, A2MVectorStore
from a2m_client import Client

from interop_protocol import main


def write(url: str, token: str, text: str) -> Dict[str, str]:
    session = f"interop-langchain-{token}"
    with Client.http(url) as c:
        A2MChatMessageHistory(c, session).add_user_message(text)
    return {"session": session}


def read(url: str, tokens: List[str]) -> Dict[str, List[str]]:
    with Client.http(url) as c:
        retriever = A2MVectorStore(c).as_retriever(search_kwargs={"k": 5})
        return {t: [d.page_content for d in retriever.invoke(t)] for t in tokens}


main(write, read)
