"""What every reply source answers a request with: one response plan, whose events are produced on demand, and
the server plays over any transport (its events' wire forms: `wire_events`)."""

from __future__ import annotations

import math
import random
import reprlib
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from .errors import rate_limit_answer
from .events import Event
from .exceptions import BadRequest, RRKitError, SettingError
from .names import unknown_name
from .numbers import LARGEST, decimal, integer, shown_value
from .steer import SteerQueue
from .vocabulary import CloseKind, LineEnding


@dataclass(slots=True)
class PlannedEvent:
    """One event, encoded for the transport it goes out on, and the pause before it is sent. Not changed once
    made (not frozen: a frozen dataclass's `__init__` costs twice as much, and one is made per event sent)."""

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
            try:  # ASCII digits only (no `٣`, no `1_0`, no `nan`), not too many
                number = value.strip()
                given[name] = integer(number, name, low=-LARGEST) if name == "seed" else decimal(number, name)
            except BadRequest:
                raise SettingError(f"chaos {name}={shown_value(value)}: {name} is {_KINDS[name]}") from None
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


async def events_of(planned_events: Iterable[PlannedEvent]) -> EventRuns:
    """The events of a plan from a (lazy) iterable, in runs, each event made when its run is asked for: the first
    run is one event (it goes out at once), each next one at most RUN_EVENTS events or RUN_BYTES of wire (each
    run is a send: the fewer, the less a stream costs), and an event that waits begins a new run."""
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
            limit = RUN_EVENTS
    if run:
        yield run
