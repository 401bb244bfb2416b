"""Planned events and their wire form: an event encoded once for its transport (`planned`), kept as its text
(`verbatim`), sent as data that is not JSON, read back off its wire; a relay's run of wires made into events only
when read (`WireRun`)."""

from __future__ import annotations

import json
from typing import Any

import orjson

from .events import RRKIT_TYPES, SSE_COMMENT, UNPARSABLE, Event
from .jsontext import parse_peer_json
from .made_on_read import MadeOnRead
from .plan import PlannedEvent
from .sse import encode_comment, encode_json, encode_sse
from .vocabulary import Transport


def planned(event: Event, transport: Transport, delay: float = 0.0) -> PlannedEvent:
    """An event encoded once for `transport`."""
    return PlannedEvent(event, wire_of(event, transport == "ws"), delay)


def wire_of(event: Event, ws: bool) -> str | bytes:
    """An event's wire form: its compact JSON as a WebSocket text frame, or as an SSE frame named by its type."""
    data = encode_json(event)
    return data.decode() if ws else encode_sse(str(event["type"]), data)


def _parse_exact(raw: str) -> Any:
    """JSON text parsed as `json.loads` reads it, integers beyond 64 bits kept exact: orjson when the value it
    reads writes back to the same text (compact, no integer turned into a float), else the one reader of what a
    peer sent (NaN, a lone surrogate; nesting orjson reads but cannot write back: a ValueError past PEER_DEPTH)."""
    try:
        value = orjson.loads(raw)
        if orjson.dumps(value) == raw.encode():
            return value
    except (orjson.JSONDecodeError, TypeError):  # TypeError: orjson writes back at most 255 levels
        pass
    return parse_peer_json(raw, what="event")


class _ParsedOnRead(PlannedEvent):
    """An event whose type is known and whose `event` is parsed only when read (the wire is made without it)."""

    __slots__ = ("_event", "_type")
    _event: Event
    _type: str

    @property
    def type(self) -> str:
        return self._type

    @property
    def event(self) -> Event:
        try:
            return self._event
        except AttributeError:
            object.__setattr__(self, "_event", self._parsed())
            return self._event

    @event.setter
    def event(self, event: Event) -> None:  # as a PlannedEvent's field: a planned event is not changed once made
        raise AttributeError("a planned event is not changed once made")

    def _parsed(self) -> Event:
        raise NotImplementedError

    def __eq__(self, other: object) -> bool:  # equal to the same event made eagerly
        if not isinstance(other, PlannedEvent):
            return NotImplemented
        return (self.event, self.wire, self.delay) == (other.event, other.wire, other.delay)

    __hash__ = None  # type: ignore[assignment]  # as a PlannedEvent's: its event is a dict


class _LazyVerbatim(_ParsedOnRead):
    """A verbatim event, parsed from its text when read; its `type` is read off the text."""

    __slots__ = ("_raw",)
    _raw: str

    def __init__(self, raw: str, wire: str | bytes, delay: float, kind: str) -> None:
        object.__setattr__(self, "_type", kind)
        object.__setattr__(self, "_raw", raw)
        object.__setattr__(self, "wire", wire)
        object.__setattr__(self, "delay", delay)

    def _parsed(self) -> Event:
        event: Event = _parse_exact(self._raw)  # a JSON object: the text was checked when it was made
        return event


class _WireOnly(_ParsedOnRead):
    """An event known by its wire form and its type alone (a relayed frame, already in rrkit's encoding), parsed
    from the wire when read."""

    __slots__ = ()

    def __init__(self, wire: str | bytes, kind: str) -> None:
        object.__setattr__(self, "_type", kind)
        object.__setattr__(self, "wire", wire)
        object.__setattr__(self, "delay", 0.0)

    def _parsed(self) -> Event:
        return event_of_wire(self.wire)


class WireRun(MadeOnRead[PlannedEvent]):
    """A run of events none of which waits, held as their wires and types: the engine sends and records the wires
    as they are, and an event is made (and parsed, if its `event` is read) only when it is read. What a relay
    passes on as it came, with no object made per event."""

    __slots__ = ("_given", "types", "wires")

    def __init__(self) -> None:
        self.wires: list[str | bytes] = []
        self.types: list[str | None] = []
        self._given: dict[int, PlannedEvent] = {}

    def append(self, wire: str | bytes, kind: str) -> None:
        """An event whose wire is what `planned` or `verbatim` make of an event of type `kind` (over SSE: `event:
        <kind>`, then its compact JSON on one `data:` line), or an SSE comment's (`kind` SSE_COMMENT)."""
        self.wires.append(wire)
        self.types.append(kind)

    def add(self, planned: PlannedEvent) -> None:
        """An event made already (one not sent as it came); it must not wait."""
        self._given[len(self.wires)] = planned
        self.wires.append(planned.wire)
        self.types.append(planned.type)

    def __len__(self) -> int:
        return len(self.wires)

    def _made_at(self, index: int) -> PlannedEvent:
        given = self._given.get(index) if self._given else None
        return given if given is not None else _WireOnly(self.wires[index], str(self.types[index]))


class EventRun(WireRun):
    """A run of made events none of which waits, held as their events, wires and types: sent and recorded as a
    WireRun is, with no object made per event; a PlannedEvent is made only when one is read. An event not kept
    (None: one of a series of deltas, encoded whole) is read off its wire."""

    __slots__ = ("events",)

    def __init__(self) -> None:
        super().__init__()
        self.events: list[Event | None] = []

    def _made_at(self, index: int) -> PlannedEvent:
        event = self.events[index]
        if event is None:
            return _WireOnly(self.wires[index], str(self.types[index]))
        return PlannedEvent(event, self.wires[index])


def not_json(planned_event: PlannedEvent, transport: Transport) -> PlannedEvent:
    """`planned_event` as data no parser can read: its JSON cut short after its type and sequence number (the
    same text on every run: no id in it). The stream goes on after it."""
    kind, number = planned_event.type or "", planned_event.event.get("sequence_number")
    text = f'{{"type":{json.dumps(kind)},' + (f'"sequence_number":{number},' if isinstance(number, int) else "")
    return unparsable(text, kind, transport, planned_event.delay)


def unparsable(data: str, event_name: str, transport: Transport, delay: float = 0.0) -> PlannedEvent:
    """Data that is not JSON, sent as it is: a WebSocket text frame, or an SSE frame named `event_name`."""
    event = {"type": UNPARSABLE, "data": data, **({"event": event_name} if event_name else {})}
    wire: str | bytes = data if transport == "ws" else encode_sse(event_name or "message", data.encode())
    return PlannedEvent(event, wire, delay)


def verbatim(raw: str, transport: Transport, delay: float = 0.0, *, lazy: bool = False) -> PlannedEvent:
    """An event kept as its compact JSON text, sent as that text; a kept SSE comment goes out as one. The text
    is parsed now (a ValueError if it is not JSON), or with `lazy` (text known to be a JSON object with a string
    `type`, such as a loaded cassette's event) only if `event` is read: its type is read off the text."""
    kind = _type_prefix(raw) if lazy else None
    if kind is not None and kind not in RRKIT_TYPES:
        return _LazyVerbatim(raw, raw if transport == "ws" else encode_sse(kind, raw.encode()), delay, kind)
    event = _parse_exact(raw)
    kind = event.get("type")
    if kind == SSE_COMMENT and transport != "ws":
        return PlannedEvent(event, encode_comment(str(event.get("comment", ""))), delay)
    if kind == UNPARSABLE:
        return unparsable(str(event.get("data", "")), str(event.get("event", "")), transport, delay)
    wire: str | bytes = raw if transport == "ws" else encode_sse(str(kind), raw.encode())
    return PlannedEvent(event, wire, delay)


def verbatim_of_type(raw: str, kind: str, transport: Transport) -> PlannedEvent:
    """`verbatim(raw, transport)` for text already checked to be a JSON object whose `type` is `kind` (the last
    one it states): parsed again only if `event` is read."""
    if kind in RRKIT_TYPES:
        return verbatim(raw, transport)
    return _LazyVerbatim(raw, raw if transport == "ws" else encode_sse(kind, raw.encode()), 0.0, kind)


def _type_prefix(raw: str) -> str | None:
    """The `type` of compact JSON text that states it first (`{"type":"response.created",...`), else None."""
    if not raw.startswith('{"type":"'):
        return None
    end = raw.find('"', 9)
    kind = raw[9:end]
    return kind if end > 9 and "\\" not in kind else None


def type_of_wire(wire: str | bytes) -> str | None:
    """The `type` of an event in its wire form (made by `planned`, `verbatim` or `sse_comment`), read off it
    without parsing; None when the text does not state it first."""
    if isinstance(wire, str):
        return _type_prefix(wire)
    if wire.startswith(b":"):
        return SSE_COMMENT
    end = wire.find(b"\n")
    named = wire[7:end] if wire.startswith(b"event: ") and end > 7 else b"\\"
    return None if b"\\" in named else named.decode()  # escaped: only the data states it


def event_of_wire(wire: str | bytes) -> Event:
    """The event an SSE frame or WebSocket text (made by `planned`, `verbatim` or `sse_comment`) carries,
    parsed as exactly as it was written (integers beyond 64 bits included)."""
    if isinstance(wire, str):
        return event_of_data(wire)
    if wire.startswith(b":"):
        return {"type": SSE_COMMENT, "comment": wire[1:-2].decode()}
    data = wire.index(b"\ndata: ") + 7
    return event_of_data(wire[data:-2].decode(), wire[7 : data - 7].decode())


def event_of_data(text: str, event_name: str = "") -> Event:
    """The event an SSE data line (or a WebSocket frame's text) carries, parsed exactly; data that is not JSON
    (a fault) is kept as an `UNPARSABLE` entry holding it, and `event_name` (the SSE frame's)."""
    try:
        parsed: Event = _parse_exact(text)
    except ValueError:
        return {"type": UNPARSABLE, "data": text, **({"event": event_name} if event_name else {})}
    return parsed


def sse_comment(text: str) -> PlannedEvent:
    """An SSE comment line (a keep-alive) relayed as it came."""
    return PlannedEvent({"type": SSE_COMMENT, "comment": text}, encode_comment(text), 0.0)
