"""Interop participant: the OpenAI Agents SDK. Writes by a Runner turn
whose conversation is kept in an A2MSession (working memory: the grid
closes the session before anyone searches); reads by a Runner whose agent
calls the recall_memory tool and answers with what it returned. The model
is the SDK's own deterministic ScriptedModel."""
import asyncio
from typing import Any, Dict, List

from agents import Agent, Runner, set_tracing_disabled
from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call

from a2m_adapters.openai_agents import A2MSession, memory_tools
from a2m_client import Client

from interop_protocol import main

set_tracing_disabled(True)


def write(url: str, token: str, text: str) -> Dict[str, str]:
    session = f"interop-openai-agents-{token}"
    with Client.http(url) as c:
        agent = Agent(name="scribe", model=ScriptedModel([[assistant_message("Noted.")]]))
        asyncio.run(Runner.run(agent, text, session=A2MSession(c, session)))
    return {"session": session}


def tool_output(call: ModelCall) -> Any:
    outputs = [i["output"] for i in call.input if isinstance(i, dict) and i.get("type") == "function_call_output"]
    return [assistant_message(outputs[-1])]


def read(url: str, tokens: List[str]) -> Dict[str, List[str]]:
    out = {}
    with Client.http(url) as c:
        for t in tokens:
            model = ScriptedModel([[function_call("recall_memory", {"query": t}, call_id="r")],
                                   ModelStep.respond(tool_output)])
            agent = Agent(name="reader", model=model, tools=memory_tools(c))
            result = asyncio.run(Runner.run(agent, f"What do you remember about {t}?"))
            out[t] = [line[2:] for line in str(result.final_output).splitlines() if line.startswith("- ")]
    return out


main(write, read)
