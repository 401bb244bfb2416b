"""A streaming client on Pydantic AI's `OpenAIResponsesModel`, judged by `rrkit conform`.

Written against pydantic-ai-slim[openai] 2.78.0 (openai 3.63.0). One turn: an `Agent` on
`OpenAIResponsesModel("gpt-test", provider=OpenAIProvider())` with one tool, `get_weather(city)`, asked "What
is the weather in Paris?" with `agent.run_stream(...)`, the answer streamed with `stream_text(delta=True)`; the
agent runs the tool loop itself (a tool call is run and its result sent back before the final text streams).
`OpenAIProvider()` reads OPENAI_BASE_URL and OPENAI_API_KEY.

Defaults relied on (nothing set): the provider's own `httpx2.AsyncClient` (Pydantic AI's
`create_async_httpx2_client`: 600 s timeout, 5 s connect), the `openai` SDK's `max_retries` 2 on the
`AsyncOpenAI` the provider builds, the agent's default retry budgets (tool and output retries), no run
`timeout`.

Exit 0 when the run returned its output without raising (the turn completed), 1 with the error on stderr when
it raised. HTTP only (the model's default `openai_transport`).
"""

import asyncio
import sys

from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIResponsesModel
from pydantic_ai.providers.openai import OpenAIProvider

model = OpenAIResponsesModel("gpt-test", provider=OpenAIProvider())
agent = Agent(model)


@agent.tool_plain
def get_weather(city: str) -> str:
    """Get the current weather in a city."""
    return "24 C"


async def main() -> None:
    async with agent.run_stream("What is the weather in Paris?") as result:
        async for delta in result.stream_text(delta=True):
            print(delta, end="", flush=True)
        print()
        await result.get_output()


try:
    asyncio.run(main())
except Exception as error:  # Pydantic AI's errors and the openai SDK's under it
    print(f"{type(error).__name__}: {error}", file=sys.stderr)
    sys.exit(1)
