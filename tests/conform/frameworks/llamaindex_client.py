"""A streaming client on LlamaIndex's `OpenAIResponses` LLM, judged by `rrkit conform`.

Written against llama-index-llms-openai 0.8.3 and llama-index-core 0.14.25 (openai 2.54.0: this release of
llama-index-llms-openai requires `openai<3`, so it runs in its own virtualenv, apart from the frameworks on
openai 3). One turn: a `FunctionAgent` (llama_index.core.agent.workflow) on
`OpenAIResponses(model="gpt-test", api_base=OPENAI_BASE_URL, api_key=OPENAI_API_KEY)` with one tool,
`get_weather(city)`, asked "What is the weather in Paris?"; the answer's deltas printed from the handler's
`AgentStream` events (the agent streams by default) and the agent running the tool loop itself. The base URL
is passed as `api_base` because `OpenAIResponses` reads OPENAI_API_BASE, not OPENAI_BASE_URL, and
`context_window` is given, as LlamaIndex asks for a model name it does not know (without it the agent stops
before any request with "ValueError: Unknown model 'gpt-test'").

Defaults relied on (nothing else set): `OpenAIResponses`'s `max_retries=3` and `timeout=60.0` (passed to the
`openai` SDK client), its `store=False` and no `previous_response_id` (each request carries the whole
history), the agent's `streaming=True` and `timeout=None` (no workflow timeout).

Exit 0 when the agent's run returned a response without raising (the turn completed), 1 with the error on
stderr when it raised. HTTP only.
"""

import asyncio
import os
import sys

from llama_index.core.agent.workflow import AgentStream, FunctionAgent
from llama_index.llms.openai import OpenAIResponses


def get_weather(city: str) -> str:
    """Get the current weather in a city."""
    return "24 C"


async def main() -> None:
    llm = OpenAIResponses(
        model="gpt-test",
        api_base=os.environ["OPENAI_BASE_URL"],
        api_key=os.environ["OPENAI_API_KEY"],
        context_window=128000,  # "gpt-test" is in no table of LlamaIndex's: its metadata raises without this
    )
    agent = FunctionAgent(tools=[get_weather], llm=llm)
    handler = agent.run("What is the weather in Paris?")
    async for event in handler.stream_events():
        if isinstance(event, AgentStream):
            print(event.delta, end="", flush=True)
    print()
    await handler


try:
    asyncio.run(main())
except Exception as error:  # LlamaIndex's errors and the openai SDK's under it
    print(f"{type(error).__name__}: {error}", file=sys.stderr)
    sys.exit(1)
