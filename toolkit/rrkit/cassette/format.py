"""The cassette format: connections and exchanges (wire vs logical request, events with offsets, outcome).

An exchange's events are kept in memory as their compact JSON texts, all in one UTF-8 string: that is what
replay sends, and it keeps a loaded cassette close to its file size.
"""

from __future__ import annotations

import json
import math
import re
from array import array
from base64 import b64decode
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, field_serializer, field_validator

from ..protocol.encoding import body_form
from ..protocol.events import SSE_COMMENT
from ..protocol.jsontext import MAX_DEPTH, parse_json
from ..protocol.made_on_read import MadeOnRead
from ..protocol.outcome import Outcome, OutcomeKind
from ..protocol.routes import CREATE
from ..protocol.vocabulary import ClosedBy, Transport
from .presets import PRESETS

FORMAT_VERSION = 1  # the `rrkit_cassette` field; bump it (and its Literal) on incompatible changes

# An integer literal orjson would turn into a float (beyond 64 bits has 19+ digits); a string with such a digit
# run only makes the parse take the exact (slower) path.
_LONG_INTEGER = re.compile(rb"\d{19,}")


CASSETTE_DEPTH = MAX_DEPTH + 8
"""The nesting a cassette may hold: a request as deep as the server accepts, a few levels down in the file."""


def loads_exact(text: str | bytes) -> Any:
    """JSON parsed with integers kept exact: orjson, unless the text has an integer it would turn into a float
    (beyond 64 bits), then the protocol's strict parser, which refuses what orjson refuses (a lone surrogate,
    NaN, nesting beyond `CASSETTE_DEPTH`) with a ValueError saying where."""
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    if _LONG_INTEGER.search(data) is None:
        value = orjson.loads(data)
        try:
            orjson.dumps(value)  # orjson reads 1,024 levels but writes 255: what it cannot write goes on below
        except TypeError:  # orjson.JSONEncodeError
            pass
        else:
            return value
    return parse_json(data, what="cassette", max_depth=CASSETTE_DEPTH)


def dumps_compact(value: Any) -> str:
    """Compact JSON text: orjson, else (integers beyond 64 bits) the standard library, integers kept exact."""
    try:
        return orjson.dumps(value).decode()
    except TypeError:  # orjson.JSONEncodeError
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def escape_unencodable(value: Any, place: str = "") -> tuple[Any, list[str]]:
    """`value` with what no JSON file can hold escaped, and the places escaped: a string with a lone
    surrogate ("\\ud800") gets the escape as text, a float NaN or infinity becomes its name as a string. Integers
    of any size are kept (they are valid JSON, written and read exactly)."""
    places: list[str] = []

    def walk(item: Any, where: str) -> Any:
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                places.append(where or "(value)")
                return item.encode("utf-8", "backslashreplace").decode("utf-8")
            return item
        if isinstance(item, float) and not math.isfinite(item):
            places.append(where or "(value)")
            return repr(item).replace("inf", "Infinity").replace("nan", "NaN")
        if isinstance(item, dict):
            return {
                walk(k, f"{where} (a key)" if where else "(a key)"): walk(v, f"{where}.{k}" if where else str(k))
                for k, v in item.items()
            }
        if isinstance(item, list | tuple):
            return [walk(v, f"{where}[{i}]") for i, v in enumerate(item)]
        return item

    return walk(value, place), places


@dataclass(frozen=True, slots=True)
class RecordedEvent:
    """One event as sent, `at` seconds after its exchange started."""

    at: float
    raw: str  # compact JSON of the event

    @property
    def event(self) -> dict[str, Any]:
        value: dict[str, Any] = loads_exact(self.raw)
        return value

    @property
    def type(self) -> str:
        return str(self.event.get("type"))

    @classmethod
    def of(cls, at: float, event: dict[str, Any]) -> RecordedEvent:
        return cls(at, dumps_compact(event))


COMMENT_MARK = f'"type":"{SSE_COMMENT}"'
"""What the text of a kept SSE comment holds (a comment is sent over SSE only, and not counted as an event)."""


def _decoded(data: bytes) -> str:
    """Text from the UTF-8 RecordedEvents hold (a lone surrogate kept as it was, refused only when written)."""
    return data.decode("utf-8", "surrogatepass")


class RecordedEvents(MadeOnRead[RecordedEvent]):
    """An exchange's events, held as one string of their JSON texts (ASCII text, else UTF-8 bytes), where each
    ends, and an array of their offsets; each RecordedEvent is made when it is read. Equal to any sequence of equal
    events."""

    __slots__ = ("_ats", "_ends", "_text")

    def __init__(self, ats: array[float], texts: Sequence[bytes]) -> None:
        text = b"".join(texts)
        self._ats = ats
        self._text: str | bytes = text.decode("ascii") if text.isascii() else text  # ASCII: sliced, not decoded
        self._ends = array("I" if len(text) < 1 << 32 else "Q", accumulate(map(len, texts)))

    @classmethod
    def of(cls, events: Iterable[RecordedEvent]) -> RecordedEvents:
        listed = list(events)
        return cls(array("d", [e.at for e in listed]), [e.raw.encode("utf-8", "surrogatepass") for e in listed])

    def timed(self) -> Iterator[tuple[float, str]]:
        """Each event's offset and JSON text, in order, made without a RecordedEvent."""
        return zip(self._ats, self._texts(), strict=True)

    def holds(self, part: str) -> bool:
        """Whether an event's text holds `part`, text without braces (which no event's text can begin or end in)."""
        text = self._text
        return part in text if isinstance(text, str) else part.encode() in text

    def _texts(self) -> Iterator[str]:
        text, start = self._text, 0
        if isinstance(text, str):
            for end in self._ends:
                yield text[start:end]
                start = end
        else:
            for end in self._ends:
                yield _decoded(text[start:end])
                start = end

    def __len__(self) -> int:
        return len(self._ats)

    def _made_at(self, index: int) -> RecordedEvent:
        start, end = self._ends[index - 1] if index else 0, self._ends[index]
        text = self._text
        return RecordedEvent(self._ats[index], text[start:end] if isinstance(text, str) else _decoded(text[start:end]))

    def __iter__(self) -> Iterator[RecordedEvent]:
        return map(RecordedEvent, self._ats, self._texts())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, RecordedEvents):
            return (self._ats, self._ends, self._text) == (other._ats, other._ends, other._text)
        return super().__eq__(other)

    def __repr__(self) -> str:
        return repr(list(self))


def compact(events: Sequence[RecordedEvent]) -> RecordedEvents:
    """`events` held compactly (as they are if they already are)."""
    return events if isinstance(events, RecordedEvents) else RecordedEvents.of(events)


class CassetteWarning(UserWarning):
    """Something recorded as well as it could be (a value escaped), or recovered: the message says what and where."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)


class RecordedBody(_Model):
    """A whole answer that was not a stream (a response object, an error, an HTML page), as it was sent: its
    JSON value when it is JSON (readable in the file), else its text when it is UTF-8, else its bytes in base64."""

    content_type: str = "application/json"
    json_value: Any = Field(None, alias="json")
    text: str | None = None
    base64: str | None = None

    model_config = ConfigDict(extra="forbid", populate_by_name=True, serialize_by_alias=True)

    @classmethod
    def of(cls, content: bytes, content_type: str) -> RecordedBody:
        return cls.model_validate(body_form(content, content_type, _kept_json))

    @property
    def content(self) -> bytes:
        if self.text is not None:
            return self.text.encode("utf-8")
        if self.base64 is not None:
            return b64decode(self.base64)
        return dumps_compact(self.json_value).encode("utf-8")


def _kept_json(content: bytes) -> Any:
    """A JSON body's value as a cassette keeps it (replayed compact; integers beyond 64 bits exact); None for JSON
    that cannot be parsed or written back (lone surrogates, NaN), which stays text."""
    try:
        value = loads_exact(content)
    except ValueError:
        return None
    return None if escape_unencodable(value)[1] else value


class RecordedHandshake(_Model):
    query: str | None = Field(None, description="the upgrade request's query string, secrets redacted")
    request_headers: dict[str, str] = {}
    status: int | None = None
    response_headers: dict[str, str] = {}


class RecordedConnection(_Model):
    id: int
    transport: Literal["ws"] = "ws"
    handshake: RecordedHandshake = RecordedHandshake()
    closed_by: ClosedBy | None = None
    close_code: int | None = None


ROUTE_DEFAULTS: dict[str, str] = {"method": "POST", "path": "/responses", "route": CREATE}
"""Where an exchange went unless its file says otherwise: every exchange of a cassette written before rrkit knew
other routes (and every WebSocket request: a `response.create` frame) is a create. A file leaves them out."""


class RecordedExchange(_Model):
    id: int
    transport: Transport
    connection: int | None = None
    started_at: float = Field(0.0, description="seconds since the cassette's first exchange")
    method: str = Field(ROUTE_DEFAULTS["method"], description="the HTTP method")
    path: str = Field(ROUTE_DEFAULTS["path"], description="the path under the API base: /responses/resp_1/cancel")
    route: str = Field(ROUTE_DEFAULTS["route"], description="the route's name (rrkit.protocol.routes), or `other`")
    query: str | None = Field(None, description="the HTTP request's query string, secrets redacted")
    request_headers: dict[str, str] = {}
    wire_request: dict[str, Any] | None = Field(None, description="the request body, when it is a JSON object")
    raw_body: str | None = Field(None, description="the request body as text, when it is another one (none: empty)")
    logical_request: dict[str, Any] | None = None
    successor_of: str | None = Field(
        None, description="a steered response's automatic successor: the steered one's id (the server made its request)"
    )
    response_status: int | None = None
    response_headers: dict[str, str] = {}
    response_id: str | None = None
    response_body: RecordedBody | None = Field(None, description="the whole body of an answer that was not a stream")
    events: Sequence[RecordedEvent] = []
    outcome: Outcome | None = None

    @field_validator("events", mode="plain")
    @classmethod
    def _events(cls, value: Any) -> Sequence[RecordedEvent]:
        if isinstance(value, RecordedEvents):  # a loaded file's lines
            return value
        if not isinstance(value, list):
            raise ValueError("must be a list of {at, event} objects")
        events: list[RecordedEvent] = []
        for index, entry in enumerate(value):
            if isinstance(entry, RecordedEvent):
                events.append(entry)
                continue
            if not isinstance(entry, dict) or not isinstance(entry.get("event"), dict):
                raise ValueError(f"[{index}] must be an object with an `event` object")
            event = entry["event"]
            if not isinstance(event.get("type"), str):
                raise ValueError(f"[{index}].event has no string `type`")
            at = entry.get("at", 0.0)
            if not isinstance(at, int | float) or at < 0:
                raise ValueError(f"[{index}].at must be a number of seconds >= 0")
            events.append(RecordedEvent.of(float(at), event))
        return RecordedEvents.of(events)

    @field_serializer("outcome")
    def _dump_outcome(self, outcome: Outcome | None) -> dict[str, Any] | None:
        return outcome.to_dict() if outcome is not None else None

    @field_serializer("events")
    def _dump_events(self, events: Sequence[RecordedEvent]) -> list[dict[str, Any]]:
        return [{"at": recorded.at, "event": recorded.event} for recorded in events]

    @property
    def event_types(self) -> list[str]:
        return [recorded.type for recorded in self.events]

    @property
    def is_create(self) -> bool:
        """Whether the exchange is a `POST /responses` (or a WebSocket request): every other route is not."""
        return self.route == CREATE

    @property
    def request_line(self) -> str:
        """`GET /responses/resp_1?stream=true` (the query string as recorded, secrets redacted)."""
        return f"{self.method} {self.path}" + (f"?{self.query}" if self.query else "")

    @property
    def incremental(self) -> bool:
        return self.is_create and bool(self.wire_request and self.wire_request.get("previous_response_id"))

    @property
    def answers_frame(self) -> bool:
        """The answer to a WebSocket frame that is no request (a steer frame; a frame relayed as it came)."""
        answered = self.outcome is not None and self.outcome.kind is OutcomeKind.ANSWERED
        return self.transport == "ws" and self.wire_request is None and answered


class Redaction(_Model):
    marker: str
    headers: list[str] = []
    paths: list[str] = []


class Cassette(_Model):
    rrkit_cassette: Literal[1] = 1
    name: str = ""
    source: str = Field("", description="what recorded it: fake-server, proxy, client")
    recorded_at: str = ""
    redaction: Redaction | None = None
    match_presets: list[str] = Field(
        [], description="the matching presets a replay applies unless told others: detected from the client, or given"
    )
    connections: list[RecordedConnection] = []
    exchanges: list[RecordedExchange] = []

    @field_validator("match_presets")
    @classmethod
    def _known_presets(cls, names: list[str]) -> list[str]:
        for name in names:
            if name not in PRESETS:
                known = ", ".join(PRESETS)
                raise ValueError(f"no matching preset named {name!r} (known: {known}); remove it or name one of those")
        return names

    def connection(self, connection_id: int | None) -> RecordedConnection | None:
        return next((c for c in self.connections if c.id == connection_id), None)

    @property
    def event_count(self) -> int:
        return sum(len(exchange.events) for exchange in self.exchanges)
