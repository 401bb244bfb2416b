"""What every reply source answers a request with: one response plan, whose events are produced on demand, and
the server plays over any transport."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

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


def _parse_exact(raw: str) -> Any:
    """JSON text parsed as `json.loads` reads it, integers beyond 64 bits kept exact: orjson when the value it
    reads writes back to the same text (compact, no integer turned into a float), else the standard library."""
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:  # NaN, a lone surrogate: what the standard library still reads
        return json.loads(raw)
    return value if orjson.dumps(value) == raw.encode() else json.loads(raw)


class _LazyVerbatim(PlannedEvent):
    """A verbatim event whose `event` is parsed from its text only when read (the wire is made without it);
    its `type` is read off the text."""

    __slots__ = ("_event", "_raw", "type")
    _event: Event
    _raw: str
    type: str

    def __init__(self, raw: str, wire: str | bytes, delay: float, kind: str) -> None:
        object.__setattr__(self, "type", kind)
        object.__setattr__(self, "_raw", raw)
        object.__setattr__(self, "wire", wire)
        object.__setattr__(self, "delay", delay)

    @property
    def event(self) -> Event:
        try:
            return self._event
        except AttributeError:
            object.__setattr__(self, "_event", _parse_exact(self._raw))
            return self._event

    def __eq__(self, other: object) -> bool:  # equal to the same event made eagerly
        if not isinstance(other, PlannedEvent):
            return NotImplemented
        return (self.event, self.wire, self.delay) == (other.event, other.wire, other.delay)

    __hash__ = None  # type: ignore[assignment]  # as a PlannedEvent's: its event is a dict


def verbatim(raw: str, transport: Transport, delay: float = 0.0, *, lazy: bool = False) -> PlannedEvent:
    """An event kept as its compact JSON text, sent as that text; a kept SSE comment goes out as one. The text
    is parsed now (a ValueError if it is not JSON), or with `lazy` (text known to be a JSON object with a string
    `type`, such as a loaded cassette's event) only if `event` is read: its type is read off the text."""
    kind = _type_prefix(raw) if lazy else None
    if kind is not None and kind != SSE_COMMENT:
        return _LazyVerbatim(raw, raw if transport == "ws" else encode_sse(kind, raw.encode()), delay, kind)
    event = _parse_exact(raw)
    kind = event.get("type")
    if kind == SSE_COMMENT and transport != "ws":
        return PlannedEvent(event, encode_comment(str(event.get("comment", ""))), delay)
    wire: str | bytes = raw if transport == "ws" else encode_sse(str(kind), raw.encode())
    return PlannedEvent(event, wire, delay)


def _type_prefix(raw: str) -> str | None:
    """The `type` of compact JSON text that states it first (`{"type":"response.created",...`), else None."""
    if not raw.startswith('{"type":"'):
        return None
    end = raw.find('"', 9)
    kind = raw[9:end]
    return kind if end > 9 and "\\" not in kind else None


def sse_comment(text: str) -> PlannedEvent:
    """An SSE comment line (a keep-alive) relayed as it came."""
    return PlannedEvent({"type": SSE_COMMENT, "comment": text}, encode_comment(text), 0.0)


async def events_of(planned_events: Iterable[PlannedEvent]) -> AsyncGenerator[PlannedEvent, None]:
    """The events of a plan from a (lazy) iterable: each is built when the engine asks for it."""
    for one in planned_events:
        yield one
