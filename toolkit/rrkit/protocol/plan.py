"""What every reply source answers a request with: one response plan, whose events are produced on demand, and
the server plays over any transport."""

from __future__ import annotations

import json
import math
import random
import reprlib
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import orjson

from .errors import rate_limit_answer
from .events import RRKIT_TYPES, SSE_COMMENT, UNPARSABLE, Event
from .exceptions import RRKitError, SettingError
from .made_on_read import MadeOnRead
from .names import unknown_name
from .sse import encode_comment, encode_json, encode_sse
from .steer import SteerQueue
from .vocabulary import CloseKind, LineEnding, Transport


@dataclass(frozen=True, slots=True)
class PlannedEvent:
    """One event, encoded for the transport it goes out on, and the pause before it is sent."""

    event: Event
    wire: str | bytes  # the JSON text of a WebSocket frame, or the bytes of an SSE frame
    delay: float = 0.0

    @property
    def type(self) -> str | None:
        """The event's `type` (None when it states none)."""
        kind = self.event.get("type")
        return kind if isinstance(kind, str) else None


class StreamCut(RRKitError):
    """Raised by a plan's events when their source was cut (an upstream that broke off): the client's
    connection is cut the same way."""

    def __init__(self, close: CloseKind = "tcp", code: int = 1011, reason: str = "") -> None:
        super().__init__(f"upstream stream cut ({close}, {code})")
        self.close, self.code, self.reason = close, code, reason


CHAOS_FIELDS = ("drop", "stall", "rate_limit", "seed", "retry_after")
"""A chaos's settings, as `Chaos.parse` reads them and its JSON (`to_json`, `from_json`) has them."""
MIN_RETRY_AFTER = 0.001
"""The shortest rate-limit delay a chaos names: a millisecond, `retry-after-ms`'s unit."""
MAX_RETRY_AFTER = 3600.0
"""The longest: an hour (the SDKs honour a delay of up to two minutes and back off on their own past it)."""
_PROBABILITIES = ("drop", "stall", "rate_limit")
_RATE_LIMIT_SALT = "rate_limit"
"""Mixed into the seed of a request's rate-limit draw: independent of its stream's cut, drawn from (seed, key)."""


@dataclass(frozen=True, slots=True)
class Chaos:
    """Seeded probabilistic faults for soak tests: before each event, a drop with probability `drop`, else a stall
    with probability `stall`. Each stream draws from its own generator, seeded with (seed, the exchange's number),
    so the same seed cuts the same exchanges at the same events on every run. Apart from the cuts, a request is
    refused as over the rate limit (429, `retry_after` seconds) with probability `rate_limit`, drawn from a
    generator of its own (`rate_limited`): the same seed refuses the same requests on every run."""

    drop: float = 0.0
    stall: float = 0.0
    seed: int = 0
    rate_limit: float = 0.0
    retry_after: float = 1.0

    def __post_init__(self) -> None:
        for name in _PROBABILITIES:
            if not 0.0 <= getattr(self, name) <= 1.0:  # NaN is none either
                raise ValueError(f"chaos {name} is a probability from 0 to 1, got {getattr(self, name)!r}")
        if self.drop + self.stall > 1.0:
            raise ValueError(f"chaos drop + stall is a probability, at most 1: got {self.drop} + {self.stall}")
        if not MIN_RETRY_AFTER <= self.retry_after <= MAX_RETRY_AFTER:
            raise ValueError(f"chaos retry_after is {_KINDS['retry_after']}, got {self.retry_after!r}")

    @classmethod
    def parse(cls, text: str) -> Chaos:
        """From `drop=0.02,stall=0.01,rate_limit=0.05,retry_after=1.5,seed=7` (each part optional); a SettingError
        says what is wrong."""
        given: dict[str, float | int] = {}
        for part in filter(None, (piece.strip() for piece in text.split(","))):
            name, equals, value = part.partition("=")
            name = name.strip()
            if not equals or name not in CHAOS_FIELDS:
                raise SettingError(
                    f"chaos {part!r}: expected drop=P, stall=P, rate_limit=P, retry_after=S or seed=N, "
                    "e.g. drop=0.02,rate_limit=0.05,seed=7"
                )
            try:
                given[name] = int(value) if name == "seed" else float(value)
            except ValueError:
                raise SettingError(f"chaos {name}={value!r}: {name} is {_KINDS[name]}") from None
        try:
            return cls(**given)  # type: ignore[arg-type]  # each a float, but the seed an int
        except ValueError as error:
            raise SettingError(str(error)) from None

    @classmethod
    def from_json(cls, obj: object) -> Chaos:
        """From a JSON object with any of `CHAOS_FIELDS` (the others keep their defaults); a SettingError names the
        field that is unknown, of the wrong type (a boolean is no number; NaN and infinities are refused) or out of
        range."""
        if not isinstance(obj, Mapping):
            fields = ", ".join(CHAOS_FIELDS)
            raise SettingError(f"chaos must be a JSON object with the fields {fields}, got {reprlib.repr(obj)}")
        given: dict[str, Any] = {}
        for name, value in obj.items():
            if name not in CHAOS_FIELDS:
                raise SettingError(unknown_name("chaos field", str(name), CHAOS_FIELDS, list_valid=True))
            given[name] = _json_setting(name, value)
        try:
            return cls(**given)
        except ValueError as error:
            raise SettingError(str(error)) from None

    def to_json(self) -> dict[str, Any]:
        """Its settings as a JSON object (what `from_json` reads back)."""
        return {name: getattr(self, name) for name in CHAOS_FIELDS}

    def first_cut(self, key: int) -> tuple[str, int] | None:
        """Where this chaos cuts stream `key` first: ("drop" or "stall", before event N), or None. Each event is
        hit with probability drop + stall, so the first hit is drawn at once (geometrically) from the stream's
        own generator, seeded with (seed, key)."""
        hit = self.drop + self.stall
        if hit <= 0.0:
            return None
        draw = random.Random(f"{self.seed}:{key}")
        index = 0 if hit >= 1.0 else int(math.log1p(-draw.random()) / math.log1p(-hit))
        return ("drop" if draw.random() * hit < self.drop else "stall"), index

    def rate_limited(self, key: int) -> bool:
        """Whether request `key` (its exchange's number) is refused as over the rate limit: drawn with probability
        `rate_limit` from a generator of its own, seeded with (seed, key) and a salt, so the draw is the same on
        every run and independent of the stream's cut."""
        if self.rate_limit <= 0.0:
            return False
        if self.rate_limit >= 1.0:
            return True
        return random.Random(f"{self.seed}:{key}:{_RATE_LIMIT_SALT}").random() < self.rate_limit

    def refusal(self) -> Rejection:
        """The answer to a request it rate-limits: the service's 429 (`errors.rate_limit_answer`), naming
        `retry_after`."""
        return Rejection(*rate_limit_answer(self.retry_after))


def _json_setting(name: str, value: object) -> float | int:
    """A chaos setting's JSON value, of its type: an integer seed, else a finite number (never a boolean)."""
    if isinstance(value, int) and not isinstance(value, bool) and name == "seed":
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool) and name != "seed":
        try:
            number = float(value)
        except OverflowError:  # an integer past any float: out of range, as infinity is
            number = math.inf
        if math.isfinite(number):
            return number
    raise SettingError(f"chaos field {name!r} must be {_KINDS[name]}, got {reprlib.repr(value)}")


_KINDS = {
    "drop": "a probability from 0 to 1",
    "stall": "a probability from 0 to 1",
    "rate_limit": "a probability from 0 to 1",
    "seed": "an integer",
    "retry_after": f"seconds from {MIN_RETRY_AFTER:g} to {MAX_RETRY_AFTER:g}",
}
"""What each chaos setting takes, as an error says it."""


@dataclass(frozen=True, slots=True)
class StreamFault:
    """How a stream ends early (cut after `drop_after` events, inside the next one with `cut_inside`, or silent
    after `stall_after`; or where `chaos` draws it), an event sent as data that is not JSON (`not_json_at`), and
    how an SSE body's bytes go out (in pieces of `chunk_bytes`, its lines ending as `line_ending` says)."""

    drop_after: int | None = None
    stall_after: int | None = None
    close: CloseKind = "tcp"
    close_code: int = 1011
    close_reason: str = ""
    chunk_bytes: int | None = None  # HTTP SSE: the body in pieces of this many bytes
    chunk_delay: float = 0.0  # seconds between two pieces
    line_ending: LineEnding = "lf"  # HTTP SSE: how the body's lines end
    cut_inside: bool = False  # the cut at drop_after falls inside that event (`server.stream._cut`)
    not_json_at: int | None = None  # this event goes out as data that is not JSON (`not_json`); the rest follow
    chaos: Chaos | None = None
    past_end: bool = True  # a cut at or past the stream's end still applies (a scripted one; not chaos's)
    cut_bytes: int | None = None  # with cut_inside: how much of that event goes out (None: half, `_cut` says)

    def resolved(self, key: int) -> StreamFault:
        """This fault for stream `key`, its chaos turned into the cut it draws (one not scripted already wins);
        a chaos cut past the stream's last event does not happen."""
        if self.chaos is None or self.drop_after is not None or self.stall_after is not None:
            return self
        cut = self.chaos.first_cut(key)
        if cut is None:
            return self
        kind, index = cut
        if kind == "drop":
            return replace(self, drop_after=index, past_end=False)
        return replace(self, stall_after=index, past_end=False)


NO_FAULT = StreamFault()


@dataclass(frozen=True, slots=True)
class Lifecycle:
    """How a background response's status moves: `queued` until it has been polled `queued_polls` times and
    `queued_seconds` have passed, then its events are made (paced as the plan says); a poll sees `in_progress`
    for at least `in_progress_polls` polls."""

    queued_polls: int = 0
    queued_seconds: float = 0.0
    in_progress_polls: int = 0


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


EventRuns = AsyncGenerator["Sequence[PlannedEvent]", None]
"""A plan's events in runs: each run holds what its source has ready at once (a relay: what one chunk of the
upstream's body, or one read of its socket, brought), which the engine sends in one write where no pause or
fault comes between."""

RUN_EVENTS = 256
RUN_BYTES = 1 << 16


async def _no_events() -> EventRuns:
    return
    yield  # an async generator that yields nothing


@dataclass(frozen=True, slots=True)
class ResponsePlan:
    """One answer to one request. Either a rejection, a whole body, or a stream of events produced lazily
    (iterating builds each event as it is sent), with the faults the engine applies to it: a plan that would be
    two of them at once, or a rejection or a body with what only a stream has, is refused (ValueError)."""

    events: EventRuns = field(default_factory=_no_events)
    response_id: str = ""  # "" when only the stream will tell (a live relay)
    fault: StreamFault = NO_FAULT
    headers: Mapping[str, str] = field(default_factory=dict)
    turn_state: str | None = None
    model: str | None = None
    rejection: Rejection | None = None
    body: VerbatimBody | None = None
    replayed: bool = False  # played back from a recording
    release: Callable[[], Awaitable[None]] | None = None  # frees what the events hold (an upstream response)
    lifecycle: Lifecycle = field(default_factory=Lifecycle)  # a background response's statuses
    steer: SteerQueue | None = None  # steering input for it, which its events stop for (a scripted WebSocket one)

    @property
    def has_events(self) -> bool:
        """Whether the plan has a stream of events of its own (not the default empty one)."""
        return getattr(self.events, "ag_code", None) is not _NO_EVENTS

    def __post_init__(self) -> None:
        if self.rejection is None and self.body is None:
            return  # a stream: the common case, checked no further
        stream_only = {
            "events": self.has_events,
            "fault": self.fault != NO_FAULT,
            "release": self.release is not None,
        }
        given = [name for name, set_ in (("rejection", self.rejection), ("body", self.body)) if set_ is not None]
        given += [name for name, set_ in stream_only.items() if set_]
        if len(given) > 1:
            raise ValueError(
                f"a ResponsePlan is one of a rejection, a whole body or a stream of events, but this one has "
                f"{' and '.join(given)} (a fault and a release belong to a stream)"
            )


_NO_EVENTS = _no_events.__code__
"""What the default `events` runs (no stream was given): an async generator's `ag_code`."""


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


async def events_of(planned_events: Iterable[PlannedEvent]) -> EventRuns:
    """The events of a plan from a (lazy) iterable, in runs, each event made when its run is asked for: the first
    run is one event (it goes out at once), each next one up to twice as long (at most RUN_EVENTS events or
    RUN_BYTES of wire), and an event that waits begins a new run."""
    run: list[PlannedEvent] = []
    wire = 0
    limit = 1
    for one in planned_events:
        if one.delay and run:
            yield run
            run, wire = [], 0
        run.append(one)
        wire += len(one.wire)
        if len(run) >= limit or wire >= RUN_BYTES:
            yield run
            run, wire = [], 0
            limit = min(limit * 2, RUN_EVENTS)
    if run:
        yield run
