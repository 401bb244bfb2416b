"""The named mutation operators over a stream's events and its delivery: each one changes a `Stream` at a place and
by a value (two small integers a search draws and shrinks), and says what it makes of a valid stream; sans-I/O."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Literal

from ..protocol import event_names as ev
from ..protocol.errors import FAILURE_CODES
from ..protocol.vocabulary import TRANSPORTS, Transport
from .stream import Event, Stream, first_terminal

Claim = Literal["keeps", "no answer", "depends"]
"""What an operator makes of a valid stream: `keeps` its verdict (the client must cope), `no answer` (the client
must report an error, never an answer), or `depends` (the order rules decide)."""

UNKNOWN_EVENT = "response.rrkit_unknown_event"
UNKNOWN_FIELD = "rrkit_unknown_field"
SWITCHED_ID = "resp_rrkit_switched"
STATUSES = (429, 500, 503, 400, 401)
FAILURES = tuple(sorted(FAILURE_CODES))
PAUSE_STEP = 0.05  # seconds: pauses of 0.05 to 0.2 s, far below any client's idle timeout


@dataclass(frozen=True)
class Op:
    """One operator applied: its name, where (`at`, taken modulo the places it may apply) and how (`value`)."""

    name: str
    at: int = 0
    value: int = 0

    def __str__(self) -> str:
        return f"{self.name}(at={self.at}, value={self.value})"


@dataclass(frozen=True)
class Operator:
    name: str
    does: str  # what it does, in a line
    claim: Claim
    change: Callable[[Stream, int, int], Stream | None]  # None: it does not apply to this stream
    transports: tuple[Transport, ...] = TRANSPORTS


def _events(stream: Stream, events: list[Event]) -> Stream:
    return replace(stream, events=tuple(events))


def _end(stream: Stream) -> int:
    """The index of the first terminal event (the last event when there is none): where a client stops."""
    end = first_terminal(stream.events)
    return end if end is not None else len(stream.events) - 1


def _place(at: int, places: int) -> int | None:
    """`at` taken modulo the places an operator may apply at (None: there is none, as in an empty stream)."""
    return at % places if places > 0 else None


def _response(event: Event) -> Event:
    """An event's response object ({} where it has none, or not an object)."""
    response = event.get("response")
    return response if isinstance(response, dict) else {}


def _numbered(events: list[Event]) -> list[Event]:
    return [{**event, "sequence_number": index} for index, event in enumerate(events)]


def _drop(stream: Stream, at: int, value: int) -> Stream | None:
    index = _place(at, _end(stream) + 1)
    if index is None:
        return None
    events = list(stream.events)
    del events[index]
    return _events(stream, events)


def _duplicate(stream: Stream, at: int, value: int) -> Stream | None:
    end = _end(stream)
    if end < 1:
        return None
    events = list(stream.events)
    index = at % end  # an event before the terminal one (a terminal event twice is read once)
    events.insert(index, events[index])
    return _events(stream, events)


def _swap(stream: Stream, at: int, value: int, *, renumber: bool = False) -> Stream | None:
    end = _end(stream)
    if end < 1:
        return None
    events = list(stream.events)
    index = at % end
    events[index], events[index + 1] = events[index + 1], events[index]
    return _events(stream, _numbered(events) if renumber else events)


def _reorder(stream: Stream, at: int, value: int) -> Stream | None:
    return _swap(stream, at, value, renumber=True)


def _renumber(stream: Stream, at: int, value: int) -> Stream | None:
    start, shift = _place(at, _end(stream) + 1), 1 + value % 3
    if start is None:
        return None
    events = [
        {**event, "sequence_number": index + shift} if index >= start else event
        for index, event in enumerate(stream.events)
    ]
    return _events(stream, events)


def _restart(stream: Stream, at: int, value: int) -> Stream | None:
    end = _end(stream)
    if end < 1:
        return None
    start = 1 + at % end
    events = [
        {**event, "sequence_number": index - start} if index >= start else event
        for index, event in enumerate(stream.events)
    ]
    return _events(stream, events)


def _no_sequence(stream: Stream, at: int, value: int) -> Stream | None:
    return _events(stream, [{k: v for k, v in event.items() if k != "sequence_number"} for event in stream.events])


def _switch_id(stream: Stream, at: int, value: int) -> Stream | None:
    end = _end(stream)
    if end < 1:
        return None
    start = 1 + at % end  # after response.created: from 0 on, the stream would be one response still
    events = [
        {**event, "response": {**_response(event), "id": SWITCHED_ID}}
        if index >= start and isinstance(event.get("response"), dict)
        else event
        for index, event in enumerate(stream.events)
    ]
    return _events(stream, events)


def _unknown_event(stream: Stream, at: int, value: int) -> Stream | None:
    events = list(stream.events)
    place = 1 + at % max(1, _end(stream))  # after response.created: what a stream of this response begins with
    events.insert(place, {"type": UNKNOWN_EVENT, "rrkit": {"value": value, "note": "ignore me"}})
    return _events(stream, _numbered(events))


def _unknown_field(stream: Stream, at: int, value: int) -> Stream | None:
    index = _place(at, len(stream.events))
    if index is None:
        return None
    events = list(stream.events)
    events[index] = {**events[index], UNKNOWN_FIELD: {"value": value, "nested": [1, "two", None]}}
    return _events(stream, events)


def _early_terminal(stream: Stream, at: int, value: int) -> Stream | None:
    end = first_terminal(stream.events)
    if end is None or end < 2:
        return None
    events = list(stream.events)
    events.insert(1 + at % (end - 1), events[end])  # a terminal event before the output is whole
    return _events(stream, _numbered(events))


def _truncate(stream: Stream, at: int, value: int) -> Stream | None:
    end = _end(stream)
    if end < 1:
        return None
    return _events(stream, list(stream.events[: 1 + at % end]))  # a clean end before the terminal event


def _disagree(stream: Stream, at: int, value: int) -> Stream | None:
    end = first_terminal(stream.events)
    if end is None:
        return None
    terminal = stream.events[end]
    response = _response(terminal)
    told = response.get("output")
    output = [_retold(item) for item in told] if isinstance(told, list) else told
    if output == told:
        return None  # no text to tell otherwise
    events = list(stream.events)
    events[end] = {**terminal, "response": {**response, "output": output}}
    return _events(stream, events)


def _retold(item: object) -> object:
    """An output message whose text says something else than was streamed."""
    if not isinstance(item, dict) or item.get("type") != "message" or not isinstance(item.get("content"), list):
        return item
    content = item["content"]
    content = [
        {**part, "text": str(part.get("text", "")) + " (not what was streamed)"}
        if isinstance(part, dict) and part.get("type") == "output_text"
        else part
        for part in content
    ]
    return {**item, "content": content}


def _fail(stream: Stream, at: int, value: int) -> Stream | None:
    end = first_terminal(stream.events)
    if end is None:
        return None
    code = FAILURES[value % len(FAILURES)]
    terminal = stream.events[end]
    response = {**_response(terminal), "status": "failed"}
    response["error"] = {"code": code, "message": FAILURE_CODES[code].message}
    events = list(stream.events)
    events[end] = {"type": ev.FAILED, "sequence_number": terminal.get("sequence_number"), "response": response}
    return _events(stream, events)


def _delivered(stream: Stream, **changes: object) -> Stream:
    return replace(stream, delivery=replace(stream.delivery, **changes))  # type: ignore[arg-type]


def _chunks(stream: Stream, at: int, value: int) -> Stream | None:
    return _delivered(stream, chunk_bytes=1 + value % 7)


def _line_ending(stream: Stream, at: int, value: int) -> Stream | None:
    return _delivered(stream, line_ending="crlf" if value % 2 == 0 else "cr")


def _pause(stream: Stream, at: int, value: int) -> Stream | None:
    index = _place(at, len(stream.events))
    if index is None:
        return None
    pauses = dict(stream.delivery.pauses)
    pauses[index] = PAUSE_STEP * (1 + value % 4)
    return _delivered(stream, pauses=tuple(sorted(pauses.items())))


def _break(name: str) -> Callable[[Stream, int, int], Stream | None]:
    def change(stream: Stream, at: int, value: int) -> Stream | None:
        if stream.delivery.breaks:
            return None  # one break per stream: the first given stands
        index = _place(at, _end(stream) + 1) or 0  # an empty stream: cut or stalled before it begins
        inside = value % 2 == 1  # inside the event, after 1, 2, 3, ... of its bytes (any byte: shrinks to the first)
        extra = {"cut_inside": inside, "cut_bytes": 1 + value // 2 if inside else None} if name == "cut_after" else {}
        return _delivered(stream, **{name: index}, **extra)

    return change


def _status(stream: Stream, at: int, value: int) -> Stream | None:
    if stream.delivery.breaks:
        return None
    return _delivered(stream, status=STATUSES[value % len(STATUSES)])


OPERATORS: tuple[Operator, ...] = (
    # in the order a search shrinks towards: the simplest first, the costliest (a stall waits) last
    Operator(
        "unknown_event", "an event of a type no client knows, inserted (it must be ignored)", "keeps", _unknown_event
    ),
    Operator(
        "unknown_field", "a field no client knows, added to an event (it must be ignored)", "keeps", _unknown_field
    ),
    Operator(
        "chunks",
        "the body in pieces of 1 to 7 bytes (inside a UTF-8 character, inside CRLF)",
        "keeps",
        _chunks,
        ("http",),
    ),
    Operator("line_ending", "every line ending CRLF or CR", "keeps", _line_ending, ("http",)),
    Operator("pause", "a pause of 0.05 to 0.2 s before an event", "keeps", _pause),
    Operator("truncate", "a clean end before the terminal event", "no answer", _truncate),
    Operator("drop", "an event left out", "no answer", _drop),
    Operator("duplicate", "an event sent twice", "no answer", _duplicate),
    Operator("swap", "two events swapped, their sequence numbers with them", "no answer", _swap),
    Operator("reorder", "two events swapped and the stream numbered again", "depends", _reorder),
    Operator("renumber", "sequence_number jumps ahead from an event on", "no answer", _renumber),
    Operator("restart", "sequence_number starts again at 0 from an event on", "no answer", _restart),
    Operator("no_sequence", "no event has a sequence_number", "no answer", _no_sequence),
    Operator("switch_id", "the response id changes from an event on", "no answer", _switch_id),
    Operator("early_terminal", "the terminal event also sent before the output is whole", "no answer", _early_terminal),
    Operator("disagree", "the terminal event's response tells another text than was streamed", "no answer", _disagree),
    Operator("fail", "the terminal event a response.failed with a code of the catalogue", "no answer", _fail),
    Operator("status", "an HTTP error status (429, 500, 503, 400, 401) instead of the stream", "no answer", _status),
    Operator("cut", "the connection cut before an event, or inside it at any byte", "no answer", _break("cut_after")),
    Operator(
        "not_json", "an event sent as data that is not JSON (a client may skip it)", "depends", _break("not_json_at")
    ),
    Operator("stall", "silence before an event, the connection left open", "no answer", _break("stall_after")),
)
OPERATOR_NAMES = tuple(operator.name for operator in OPERATORS)
_BY_NAME = {operator.name: operator for operator in OPERATORS}


def apply(stream: Stream, ops: tuple[Op, ...] | list[Op], transport: Transport) -> Stream:
    """The stream with each operator applied in turn (one that does not apply, or not over `transport`, is left
    out)."""
    for op in ops:
        chosen = _BY_NAME[op.name]
        if transport in chosen.transports:
            stream = chosen.change(stream, op.at, op.value) or stream
    return stream


__all__ = ["OPERATORS", "OPERATOR_NAMES", "Op", "Operator", "apply"]
