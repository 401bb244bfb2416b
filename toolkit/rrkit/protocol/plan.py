"""What every reply source answers a request with: one response plan, whose events are produced on demand, and
the server plays over any transport."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .events import SSE_COMMENT, Event
from .sse import encode_comment, encode_json, encode_sse
from .vocabulary import CloseKind, Transport


@dataclass(frozen=True, slots=True)
class PlannedEvent:
    """One event, encoded for the transport it goes out on, and the pause before it is sent."""

    event: Event
    wire: str | bytes  # the JSON text of a WebSocket frame, or the bytes of an SSE frame
    delay: float = 0.0


class StreamCut(Exception):
    """Raised by a plan's events when their source was cut (an upstream that broke off): the client's
    connection is cut the same way."""

    def __init__(self, close: CloseKind = "tcp", code: int = 1011, reason: str = "") -> None:
        super().__init__(f"upstream stream cut ({close}, {code})")
        self.close, self.code, self.reason = close, code, reason


@dataclass(frozen=True, slots=True)
class StreamFault:
    """How a stream ends early: cut after `drop_after` events, or silent after `stall_after`."""

    drop_after: int | None = None
    stall_after: int | None = None
    close: CloseKind = "tcp"
    close_code: int = 1011
    close_reason: str = ""


NO_FAULT = StreamFault()


@dataclass(frozen=True, slots=True)
class Rejection:
    """A request answered with an error before any stream event: an HTTP status with its JSON body, or (over
    WebSocket) an `error` frame saying the same."""

    status: int
    body: dict[str, Any]
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class VerbatimBody:
    """A whole HTTP answer, relayed or replayed exactly as it came: not a stream (a JSON response object, an
    error body, an HTML page)."""

    status: int
    content: bytes
    content_type: str = "application/json"


async def _no_events() -> AsyncGenerator[PlannedEvent, None]:
    return
    yield  # an async generator that yields nothing


@dataclass(frozen=True, slots=True)
class ResponsePlan:
    """One answer to one request. Either a rejection, a whole body, or a stream of events produced lazily
    (iterating builds each event as it is sent), with the faults the engine applies to it."""

    events: AsyncGenerator[PlannedEvent, None] = field(default_factory=_no_events)
    response_id: str = ""  # "" when only the stream will tell (a live relay)
    fault: StreamFault = NO_FAULT
    headers: Mapping[str, str] = field(default_factory=dict)
    turn_state: str | None = None
    model: str | None = None
    rejection: Rejection | None = None
    body: VerbatimBody | None = None
    replayed: bool = False  # played back from a recording
    release: Callable[[], Awaitable[None]] | None = None  # frees what the events hold (an upstream response)


def planned(event: Event, transport: Transport, delay: float = 0.0) -> PlannedEvent:
    """An event encoded once for `transport`."""
    data = encode_json(event)
    if transport == "ws":
        return PlannedEvent(event, data.decode(), delay)
    return PlannedEvent(event, encode_sse(str(event["type"]), data), delay)


def verbatim(raw: str, transport: Transport, delay: float = 0.0) -> PlannedEvent:
    """An event kept as its compact JSON text, sent as that text; a kept SSE comment goes out as one."""
    event = json.loads(raw)
    kind = event.get("type")
    if kind == SSE_COMMENT and transport != "ws":
        return PlannedEvent(event, encode_comment(str(event.get("comment", ""))), delay)
    wire: str | bytes = raw if transport == "ws" else encode_sse(str(kind), raw.encode())
    return PlannedEvent(event, wire, delay)


def sse_comment(text: str) -> PlannedEvent:
    """An SSE comment line (a keep-alive) relayed as it came."""
    return PlannedEvent({"type": SSE_COMMENT, "comment": text}, encode_comment(text), 0.0)


async def events_of(planned_events: Iterable[PlannedEvent]) -> AsyncGenerator[PlannedEvent, None]:
    """The events of a plan from a (lazy) iterable: each is built when the engine asks for it."""
    for one in planned_events:
        yield one
