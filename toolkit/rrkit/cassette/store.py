"""Reading and writing cassette files: validated on load, written atomically (temporary file + rename)."""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import math
import os
import re
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import orjson
from pydantic import ValidationError

from ..files.atomic import plain_mode, replacing
from ..files.invalid import json_place
from ..files.kind import kind_of
from ..files.text import file_limit, read_utf8
from ..protocol.exceptions import CassetteError
from ..protocol.jsontext import UnsafeJSON
from ..protocol.outcome import OutcomeKind
from .format import (
    COMMENT_MARK,
    FORMAT_VERSION,
    ROUTE_DEFAULTS,
    Cassette,
    RecordedEvents,
    RecordedExchange,
    compact,
    dumps_compact,
    loads_exact,
)


def parse_cassette(data: Any, path: Path | str = "<cassette>") -> Cassette:
    if not isinstance(data, dict):
        raise CassetteError(f"{path}: a cassette is a JSON object, got {type(data).__name__}")
    if "rrkit_cassette" not in data:
        seemed = kind_of(data)
        raise CassetteError(f"{path}: not an rrkit cassette (no `rrkit_cassette` version field)", seemed=seemed)
    version = data["rrkit_cassette"]
    if isinstance(version, int) and not isinstance(version, bool) and version > FORMAT_VERSION:
        raise CassetteError(
            f"{path}: written by a newer rrkit (format {version}; this rrkit reads up to {FORMAT_VERSION}): "
            "upgrade rrkit"
        )
    if version != FORMAT_VERSION:
        raise CassetteError(
            f"{path}: rrkit_cassette: unknown format version {version!r} (this rrkit reads format "
            f"{FORMAT_VERSION}); is this file an rrkit cassette?"
        )
    try:
        cassette = Cassette.model_validate(data)
    except ValidationError as error:
        lines = [f"{path}: invalid cassette ({error.error_count()} problem(s)):"]
        lines += [f"  - {json_place(problem['loc'])}: {problem['msg']}" for problem in error.errors()[:20]]
        raise CassetteError("\n".join(lines)) from None
    problems = consistency_problems(cassette)
    if problems:
        lines = [f"{path}: inconsistent cassette ({len(problems)} problem(s)); fix or re-record these exchanges:"]
        lines += [f"  - {problem}" for problem in problems[:20]]
        raise CassetteError("\n".join(lines))
    return cassette


_ENDING_TYPE = {
    OutcomeKind.COMPLETED: "response.completed",
    OutcomeKind.FAILED: "response.failed",
    OutcomeKind.INCOMPLETE: "response.incomplete",
    OutcomeKind.ERRORED: "error",
}
"""The last event of an exchange whose outcome the stream states itself."""
_ENDINGS = frozenset(_ENDING_TYPE.values())


def consistency_problems(cassette: Cassette) -> list[str]:
    """What a valid cassette says against itself, each with its place: duplicate exchange or connection ids,
    references to connections it does not have, an outcome that disagrees with the recorded events."""
    problems: list[str] = []
    connection_at: dict[int, int] = {}
    for index, connection in enumerate(cassette.connections):
        if connection.id in connection_at:
            problems.append(
                f"connections[{index}]: id {connection.id} is also connections[{connection_at[connection.id]}]'s "
                "(connection ids must be unique)"
            )
        connection_at.setdefault(connection.id, index)
    exchange_at: dict[int, int] = {}
    for index, exchange in enumerate(cassette.exchanges):
        place = f"exchanges[{index}] (id {exchange.id})"
        if exchange.id in exchange_at:
            problems.append(
                f"{place}: id {exchange.id} is also exchanges[{exchange_at[exchange.id]}]'s (exchange ids must be "
                "unique: one of them could never be replayed)"
            )
        exchange_at.setdefault(exchange.id, index)
        if exchange.connection is not None and exchange.connection not in connection_at:
            problems.append(f"{place}: connection {exchange.connection} is not in `connections`")
        if (problem := _outcome_problem(exchange)) is not None:
            problems.append(f"{place}: {problem}")
    return problems


def _outcome_problem(exchange: RecordedExchange) -> str | None:
    """What the exchange's outcome says against its recorded events: how many were sent, or how the stream
    ended (a stream with no ending is `rrkit show`'s to report)."""
    outcome = exchange.outcome
    if outcome is None:
        return None
    events = compact(exchange.events)
    sent: Sequence[int] = range(len(events))  # the indices of the events counted as sent: SSE comments are not
    if events.holds(COMMENT_MARK):
        sent = [index for index, (_, text) in enumerate(events.timed()) if COMMENT_MARK not in text]
    if outcome.events_sent not in (len(sent), len(events)):
        return (
            f"outcome says {outcome.kind.value} after {outcome.events_sent} event(s), but {len(sent)} event(s) are "
            "recorded in `events`"
        )
    ending, last = _ENDING_TYPE.get(outcome.kind), events[sent[-1]].type if sent else None
    if ending is not None and last in _ENDINGS and last != ending:
        return f"outcome says {outcome.kind.value}, but the last recorded event is {last!r}"
    return None


@contextlib.contextmanager
def _no_gc() -> Iterator[None]:
    """Building many small containers triggers the cyclic GC over and over; none of them form cycles."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def load_cassette(path: Path | str) -> Cassette:
    with _no_gc():
        return _load(Path(path))


def _load(path: Path) -> Cassette:
    limit = file_limit(path, "cassette", CassetteError, "cassette-file")
    data = _by_lines(path, limit)  # the layout `dump_cassette` writes, read by lines, its events kept as their text
    if data is None:  # any other layout, or anything wrong: the whole file read and parsed, its problems named
        text = read_utf8(path, "cassette", CassetteError, "cassette-file")
        try:
            data = loads_exact(text)
        except json.JSONDecodeError as error:  # orjson's JSONDecodeError is one too
            raise CassetteError(
                f"{path}: line {error.lineno}, column {error.colno}: invalid JSON: {error.msg}"
            ) from None
        except UnsafeJSON as error:  # what the exact path refuses (a lone surrogate, NaN, nesting too deep)
            raise CassetteError(f"{path}: {error.message}") from None
        del text
    return parse_cassette(data, path)


_EVENTS_OPEN = b'      "events": [\n'
_EVENTS_CLOSE = b"      ]\n"
_EVENT_LINE = re.compile(
    rb'^        \{"at": ((?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?), "event": (\{.*\})\}(,?)\n', re.MULTILINE
)
"""One line of an exchange's `events` as `dump_cassette` writes it: its offset, its event's JSON text, a comma."""
_BLOCK = "\x00rrkit: events read by lines"
"""What stands for an exchange's events in the rest of the file, parsed as a whole (a value no cassette holds)."""
_MARKER = b'      "events": ' + orjson.dumps(_BLOCK) + b"\n"


def _by_lines(path: Path, limit: int) -> Any | None:
    """The file's JSON value, read line by line (never the whole text at once), each exchange's events made from
    their lines as one RecordedEvents (each event's text checked as JSON and kept, not rebuilt from a parse). None
    unless every events list is in `dump_cassette`'s layout and the file is valid UTF-8 and JSON: the caller
    then reads and parses the whole file, and names what is wrong in it (also when it is more than `limit` bytes)."""
    try:
        with path.open("rb") as handle:
            apart = _events_apart(handle, limit)
        if apart is None:
            return None
        rest, blocks = apart
        data = loads_exact(b"".join(rest))
    except (OSError, ValueError):  # UnicodeDecodeError, JSONDecodeError: the whole file's read and parse say where
        return None
    return _filled(data, blocks)


def _events_apart(lines: Iterable[bytes], limit: int) -> tuple[list[bytes], list[RecordedEvents]] | None:
    """The file's lines with each events list as one marker line, and those lists' events; None when the lines
    are more than `limit` bytes, have no events list, or one not in `dump_cassette`'s layout."""
    rest: list[bytes] = []  # the file but its events lists
    blocks: list[RecordedEvents] = []
    block: list[bytes] | None = None  # the event lines of the events list being read
    size = 0
    for line in lines:
        size += len(line)
        if size > limit:
            return None
        if block is None:
            if line == _EVENTS_OPEN:
                block = []
            else:
                rest.append(line)
        elif line != _EVENTS_CLOSE:
            block.append(line)
        elif (events := _event_lines(b"".join(block))) is not None:
            blocks.append(events)
            rest.append(_MARKER)
            block = None
        else:
            return None
    return (rest, blocks) if block is None and blocks else None


def _filled(data: Any, blocks: list[RecordedEvents]) -> Any | None:
    """`data` with each marker of an exchange's events replaced by its events, in order; None unless each marker
    is an exchange's `events` (else an events list was somewhere else: not this layout)."""
    exchanges = data.get("exchanges") if isinstance(data, dict) else None
    filled = 0
    for exchange in exchanges if isinstance(exchanges, list) else ():
        if isinstance(exchange, dict) and exchange.get("events") == _BLOCK and filled < len(blocks):
            exchange["events"] = blocks[filled]
            filled += 1
    return data if filled == len(blocks) else None


def _event_lines(lines: bytes) -> RecordedEvents | None:
    """The events of the event lines in `lines`, or None if a line is not an event line or its event is not a
    UTF-8 JSON object with a string `type`. An event's text that is not the compact form is made compact (exact)."""
    found = _EVENT_LINE.findall(lines)
    if not found or len(found) != lines.count(b"\n"):
        return None
    ats, raws, commas = zip(*found, strict=True)
    if commas[-1] or b"" in commas[:-1]:
        return None
    values = list(map(orjson.loads, raws))
    if not all(type(value) is dict and type(value.get("type")) is str for value in values):
        return None
    # Each text is one whole JSON value, so the texts joined are the values written joined only if each is its own.
    if orjson.dumps(values) != b"[" + b",".join(raws) + b"]":
        # Spaces, other escapes, or an integer beyond 64 bits: kept as the parse of the whole file would keep it.
        try:
            raws = tuple(dumps_compact(loads_exact(raw)).encode("utf-8") for raw in raws)
        except ValueError:  # refused on the exact path: the whole file's parse names the place
            return None
    offsets = array("d", map(float, ats))
    if math.inf in offsets:  # beyond a float (1e400): what the whole file's parse refuses
        return None
    return RecordedEvents(offsets, raws)


def _dumps(value: Any, indent: int) -> str:
    text = json.dumps(value, ensure_ascii=False, indent=2)
    return text.replace("\n", "\n" + " " * indent)


def _exchange_text(exchange: RecordedExchange) -> str:
    """An exchange as indented JSON, with one event per line: readable and diff-friendly at any size. A create
    leaves its method, path and route out (as every cassette written before other routes were recorded did), and
    any exchange but a steered response's successor its `successor_of`."""
    create = all(getattr(exchange, name) == value for name, value in ROUTE_DEFAULTS.items())
    left_out = {"events", *(ROUTE_DEFAULTS if create else ()), *(() if exchange.successor_of else ("successor_of",))}
    head = exchange.model_dump(mode="json", exclude=left_out)
    body = "    " + _dumps(head, 4)[:-1].rstrip() + ',\n      "events": ['
    if not exchange.events:
        return body + "]\n    }"
    lines = ",\n        ".join([f'{{"at": {at!r}, "event": {raw}}}' for at, raw in compact(exchange.events).timed()])
    return f"{body}\n        {lines}\n      ]\n    }}"


def dump_cassette(cassette: Cassette) -> Iterator[str]:
    """The cassette's file text: its head, then one piece per exchange (written with one write each)."""
    left_out = {"exchanges"} if cassette.match_presets else {"exchanges", "match_presets"}
    head = cassette.model_dump(mode="json", exclude=left_out)
    body = _dumps(head, 0)
    yield body[:-1].rstrip() + ',\n  "exchanges": ['
    last = len(cassette.exchanges) - 1
    for index, exchange in enumerate(cassette.exchanges):
        yield "\n" + _exchange_text(exchange) + ("," if index < last else "")
    yield ("\n  ]" if cassette.exchanges else "]") + "\n}\n"


def save_cassette(cassette: Cassette, path: Path | str, *, before_replace: Callable[[str], None] | None = None) -> Path:
    """Write atomically: a crash mid-write leaves the previous file (if any) untouched. `before_replace` is
    given the new file's SHA-256 (hex) once it is on disk, just before it replaces `path`. A symlink is written
    through, as a plain write would (its target replaced, its folder made if need be), and stays a symlink."""
    given = Path(path)
    path = Path(os.path.realpath(given))
    path.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    told = None if before_replace is None else lambda: before_replace(digest.hexdigest())
    with replacing(path, plain_mode(path), told) as handle:
        for piece in dump_cassette(cassette):
            data = piece.encode("utf-8")
            handle.write(data)
            digest.update(data)
        handle.flush()
        os.fsync(handle.fileno())
    return given
