"""A2M adapters for Python agent frameworks.

Each framework has a subpackage of its own that imports that framework and
no other (``a2m_adapters.langgraph``, ``.langchain``, ``.crewai``, ``.agno``,
``.autogen``, ``.openai_agents``); this package itself imports none, so
installing it pulls in no framework (DECISIONS 023: isolation, not
absence). Every adapter talks to the memory through ``a2m_client.Client``
(stdio, HTTP or in-process) and speaks nothing but the protocol.
"""
from ._memory import Layout, Namespace

__all__ = ["Layout", "Namespace"]
__version__ = "0.1.0"
