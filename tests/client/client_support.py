"""Shared harness of the client acceptance tests: the real fake server, the reference client, the checks.

`served(serve, script)` runs the fake server on the test's event loop, guarded by the `serve` fixture, and a
ModelClient pointed at it, with an injectable sleep that records delays and never waits; on exit it asserts
that, for every request, the wire request and the logical request the client logged equal what the server
captured and rebuilt.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from rrkit.client import ClientOptions, Conversation, ModelClient, Prompt, RetryPolicy, Trace
from rrkit.client.check import view_mismatches
from rrkit.client.retry import RecordingSleep
from rrkit.protocol import Item, ResponseEvents
from rrkit.script import Reply, Script
from rrkit.script.models import TimedEvent
from rrkit.server import Exchange, FakeServer

from ..errortrap import Serve

BUDGET = 2
"""Stream retries in these tests: a stream gets BUDGET + 1 attempts per transport."""
REQUEST_BUDGET = 1
"""Request-level retries of an HTTP 5xx in these tests, inside each stream attempt."""
BASE_DELAY = 0.25
IDLE = 60.0
"""Seconds without an event before a stream counts as stalled: far beyond what a loaded machine takes between two
events, so that only a scripted stall ever reaches it (tests of the idle timeout set `STALL_IDLE`)."""
STALL_IDLE = 1.0
"""The idle timeout of the tests that wait it out on a scripted stall: still ten times and more what the server
needs between two events of the retry, on a loaded machine."""

WEATHER_TOOL: dict[str, Any] = {
    "type": "function",
    "name": "get_weather",
    "description": "Current weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
PROMPT = Prompt(model="gpt-test", instructions="Be brief.", tools=(WEATHER_TOOL,))
TRANSPORTS = ("http", "ws")


def backoff(retry: int) -> float:
    """The delay before retry `retry` when the server names none (the tests' RNG makes jitter zero)."""
    return RetryPolicy(max_retries=BUDGET, base_delay=BASE_DELAY).backoff(retry, lambda: 0.5)


def turn_ids() -> Callable[[], str]:
    """Repeatable turn ids: turn-1, turn-2, ..."""
    counter = itertools.count(1)
    return lambda: f"turn-{next(counter)}"


def assert_views_agree(trace: Trace, exchanges: Sequence[Exchange]) -> None:
    """Every request: the wire request sent == the one captured, the logical request logged == the one
    the server rebuilt (so an empty incremental delta is never mistaken for an empty prompt)."""
    problems = view_mismatches(trace, exchanges)
    assert not problems, "\n".join(problems)


@dataclass
class Harness:
    server: FakeServer
    client: ModelClient
    sleep: RecordingSleep

    def conversation(self, prompt: Prompt = PROMPT) -> Conversation:
        return Conversation(self.client, prompt)

    @property
    def exchanges(self) -> list[Exchange]:
        return self.server.exchanges

    @property
    def trace(self) -> Trace:
        return self.client.trace


@asynccontextmanager
async def served(
    serve: Serve,
    script: Script,
    *,
    transport: str = "ws",
    budget: int = BUDGET,
    request_budget: int = REQUEST_BUDGET,
    idle: float = IDLE,
    options: ClientOptions | None = None,
    **client_options: Any,
) -> AsyncIterator[Harness]:
    sleep = RecordingSleep()
    options = options or ClientOptions(
        retry=RetryPolicy(max_retries=budget, request_max_retries=request_budget, base_delay=BASE_DELAY),
        idle_timeout=idle,
        warmup_timeout=5.0,
    )
    options.sleep, options.rng, options.new_id = sleep, lambda: 0.5, turn_ids()
    async with serve.running(script) as server:
        async with ModelClient(
            server.http_url, supports_websockets=transport == "ws", options=options, **client_options
        ) as client:
            yield Harness(server, client, sleep)
        assert_views_agree(client.trace, server.exchanges)


def wire_inputs(exchanges: Sequence[Exchange]) -> list[list[Item]]:
    return [list((exchange.wire_request or {}).get("input") or []) for exchange in exchanges]


def item_types(items: Sequence[Item]) -> list[str]:
    return [str(item.get("type", "message")) for item in items]


def verbatim(*events: dict[str, Any]) -> Reply:
    """A reply of exactly these events, in order."""
    return Reply(events=[TimedEvent(event=event) for event in events])


def text_reply_with(extra: dict[str, Any], *, at: int = 2, text: str = "Done.") -> Reply:
    """A whole text reply (created ... completed) with `extra` sent as event number `at`."""
    builder = ResponseEvents({"model": PROMPT.model})
    builder.start()
    builder.message(text)
    builder.completed()
    return verbatim(*builder.events[:at], extra, *builder.events[at:])
