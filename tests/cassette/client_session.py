"""A reference-client session for the cassette tests: warmup, incremental requests, a tool loop, a drop and a retry.

`session_script()` is what the fake server plays; `run_session(base_url, transport)` runs the same three turns
against any server (the fake server, or a replay of its cassette) and returns the client's trace.
"""

from __future__ import annotations

from typing import Any

from rrkit.cassette.normalize import Normalizer
from rrkit.client import ClientOptions, Conversation, ModelClient, Prompt, RetryPolicy, Trace
from rrkit.client.retry import RecordingSleep
from rrkit.protocol import Item
from rrkit.script import Match, Script, function_call, reasoning, reply, text

WEATHER_TOOL: dict[str, Any] = {
    "type": "function",
    "name": "get_weather",
    "description": "Current weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
PROMPT = Prompt(model="gpt-test", instructions="Be brief.", tools=(WEATHER_TOOL,))
SESSION_ID = "cassette-session"
"""Fixed, so that the session id header and the prompt cache key are the same in every run."""


def session_script() -> Script:
    """Turn 1: a tool call, then the answer. Turn 2: cut after 3 events, then answered. Turn 3: a short reply."""
    tomorrow = Match(input_text="tomorrow")
    return (
        Script()
        .add(
            reply(reasoning("Need the weather."), function_call("get_weather", {"city": "Paris"}, chunks=3)),
            when=Match(input_text="Paris"),
        )
        .add(reply(text("Sunny in Paris.", chunks=3)), when=Match(last_input_type="function_call_output"))
        .add(reply(text("Rain tomorrow.", chunks=4)).drop_after(3), when=tomorrow)
        .add(reply(text("Rain tomorrow.", chunks=4)), when=tomorrow)
        .add(reply(text("You are welcome.")), when=Match(input_text="Thanks"))
    )


def options() -> ClientOptions:
    return ClientOptions(
        retry=RetryPolicy(max_retries=2, base_delay=0.01),
        idle_timeout=5.0,
        warmup_timeout=5.0,
        sleep=RecordingSleep(),
        rng=lambda: 0.5,
    )


def weather(call: Item) -> str:
    return "sunny"


async def run_session(base_url: str, transport: str) -> Trace:
    """Warmup (WebSocket only), then three turns; the second one's first attempt is dropped and retried."""
    async with ModelClient(
        base_url, supports_websockets=transport == "ws", session_id=SESSION_ID, options=options()
    ) as client:
        conversation = Conversation(client, PROMPT)
        await conversation.warmup()
        await conversation.run_turn("Weather in Paris?", weather)
        await conversation.run_turn("And tomorrow?")
        await conversation.run_turn("Thanks!")
    return client.trace


def request_kinds(trace: Trace) -> list[str]:
    """Per request that went out: its transport and whether it was a warmup, incremental or full."""
    kinds = []
    for entry in trace.sent:
        kind = "warmup" if entry.warmup else "incremental" if entry.incremental else "full"
        kinds.append(f"{entry.transport} {kind}")
    return kinds


def seen(trace: Trace) -> list[dict[str, Any]]:
    """Per attempt, what the client saw: its events (normalized, ids aliased in order), outcome and wire request."""
    n = Normalizer()
    return [
        {
            "events": n.events(received.event for received in entry.events),
            "outcome": entry.outcome.to_dict() if entry.outcome else None,
            "wire": n.json(entry.wire),
        }
        for entry in trace.entries
    ]
