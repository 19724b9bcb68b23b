"""Step 1 — a LangChain chat. The user tells the assistant two facts in a
conversation; the conversation lives in A2M's working memory (the session
"onboarding-ana"), replayed on every turn and not searchable. Then the
chat ends: closing the session moves the turns into searchable memory.

A2M_URL names the server. The chat model is LangChain's FakeListChatModel,
so this runs without an API key; swap in any chat model."""
import os

from langchain_core.language_models.fake_chat_models import FakeListChatModel

from a2m_adapters.langchain import A2MChatMessageHistory, A2MVectorStore
from a2m_client import Client

memory = Client.http(os.environ["A2M_URL"])
model = FakeListChatModel(responses=["Welcome, Ana!", "Got it."])
history = A2MChatMessageHistory(memory, "onboarding-ana")

for said in ["Hi, I'm Ana and I run the payments team.",
             "Our staging database is db-7.internal and deploys freeze on Fridays."]:
    history.add_user_message(said)
    answer = model.invoke(history.messages)  # the whole conversation, replayed in order
    history.add_message(answer)
    print(f"user: {said}\nassistant: {answer.content}")

search = A2MVectorStore(memory)
before = search.similarity_search("staging database", k=3)
print(f"searchable while the chat is open: {[d.page_content for d in before]}")  # [] — working memory

closed = history.close_session()
print(f"session closed: {closed['flushed']} turns moved out of working memory")
memory.close()
