"""a2m_client — a client for A2M 0.1 (Agent-to-Memory) servers, standard
library only: stdio (a server as a child process), HTTP (http.client, kept
alive), and in-process over liba2m (ctypes).

    from a2m_client import Client
    with Client.stdio(["a2m", "serve", "--memory"]) as memory:
        memory.remember([{"content": "the deploy key rotates every 90 days"}])
        print(memory.recall("how often does the deploy key change?")["records"])
"""
from .client import METHOD_CAPABILITY, Client
from .errors import A2MError, ErrorCode, TransportError, TransportTimeout
from .events import EventWatch, Subscription
from .http import PROTOCOL, HttpTransport
from .stdio import StdioTransport

__version__ = "0.1.0"

__all__ = [
    "A2MError", "Client", "ErrorCode", "EventWatch", "HttpTransport", "METHOD_CAPABILITY", "PROTOCOL",
    "StdioTransport", "Subscription", "TransportError", "TransportTimeout", "__version__",
]
