"""Step 2 — a LangGraph agent, another framework, on the same store. Its
long-term memory is A2MStore; a node searches it for what the question is
about and answers from what it finds — the facts Ana gave the LangChain
chat, now searchable because that session closed."""
import os
from typing import List, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore

from a2m_adapters.langgraph import A2MStore
from a2m_client import Client


class State(TypedDict):
    question: str
    facts: List[str]


def recall(state: State, *, store: BaseStore) -> dict:
    hits = store.search((), query=state["question"], limit=3)
    return {"facts": [h.value.get("content", str(h.value)) for h in hits]}


memory = Client.http(os.environ["A2M_URL"])
graph = StateGraph(State)
graph.add_node("recall", recall)
graph.add_edge(START, "recall")
graph.add_edge("recall", END)
app = graph.compile(store=A2MStore(memory))

out = app.invoke({"question": "staging database host", "facts": []})
print("LangGraph recalls:")
for fact in out["facts"]:
    print(f"  - {fact}")
# It can also keep what it learned, for everyone (the semantic tier, key ops/staging/db).
A2MStore(memory, index={"fields": ["text"]}).put(("ops", "staging"), "db", {"text": "staging db: db-7.internal"})
memory.close()
