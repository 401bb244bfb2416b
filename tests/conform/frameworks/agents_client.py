"""A streaming client on the OpenAI Agents SDK (`openai-agents`), judged by `rrkit conform`.

Written against openai-agents 0.24.0 (openai 3.63.0). One turn: an `Agent` on
`OpenAIResponsesModel(model="gpt-test", openai_client=AsyncOpenAI())` with one `@function_tool`,
`get_weather(city)`, asked "What is the weather in Paris?" with `Runner.run_streamed`, its text deltas printed
from `stream_events()` (`raw_response_event` with `response.output_text.delta`); the Runner runs the tool loop
itself. `AsyncOpenAI()` reads OPENAI_BASE_URL and OPENAI_API_KEY. Tracing is disabled
(`set_tracing_disabled(True)`), so nothing is sent to the tracing endpoint.

Defaults relied on (nothing set): the `openai` SDK's `AsyncOpenAI()` defaults (`max_retries` 2, a 600 s
timeout with 5 s to connect), the Runner's default `max_turns` (10) and `RunConfig` (no `ModelSettings.retry`,
so no runner-managed retries), the Responses model's default HTTP transport.

Exit 0 when the run finished with a `final_output` and raised nothing (the turn completed), 1 with the error on
stderr when it raised. HTTP only.
"""

import asyncio
import sys

from agents import Agent, Runner, function_tool, set_tracing_disabled
from agents.models.openai_responses import OpenAIResponsesModel
from openai import AsyncOpenAI

set_tracing_disabled(True)


@function_tool
def get_weather(city: str) -> str:
    """Get the current weather in a city."""
    return "24 C"


async def main() -> None:
    agent = Agent(
        name="Weather",
        instructions="Answer the user's question.",
        model=OpenAIResponsesModel(model="gpt-test", openai_client=AsyncOpenAI()),
        tools=[get_weather],
    )
    result = Runner.run_streamed(agent, input="What is the weather in Paris?")
    async for event in result.stream_events():
        if event.type == "raw_response_event" and event.data.type == "response.output_text.delta":
            print(event.data.delta, end="", flush=True)
    print()
    if result.final_output is None:
        raise RuntimeError("the run ended without a final output")


try:
    asyncio.run(main())
except Exception as error:  # the Agents SDK's errors and the openai SDK's under it
    print(f"{type(error).__name__}: {error}", file=sys.stderr)
    sys.exit(1)
