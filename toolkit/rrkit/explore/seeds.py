"""The streams exploration starts from: rrkit's own (short first, so that a search shrinks towards it) and the first
replies of the conformance catalogue, or the first reply of a user's script or the first create of a cassette
(`--from FILE`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..protocol.events import ResponseEvents
from ..protocol.exceptions import SettingError
from ..protocol.ids import IdGenerator
from .stream import Event, first_terminal

REQUEST = {"model": "gpt-test", "input": "say hi"}
"""The request the seeds answer (the client's own may differ: a reply's events do not depend on it)."""
CREATED_AT = 1_765_000_000
"""The seeds' `created_at`: fixed, so that the same seed writes the same scripts on every run."""


@dataclass(frozen=True)
class Seed:
    name: str
    events: tuple[Event, ...]


def _message(text: str, chunks: int) -> tuple[Event, ...]:
    builder = ResponseEvents(REQUEST, ids=IdGenerator.counting(), created_at=CREATED_AT, keep_events=False)
    return (*builder.start(), *builder.iter_message(text, chunks), *builder.completed())


def shipped_seeds() -> tuple[Seed, ...]:
    """A one-delta answer with a two-byte character, and a longer one whose deltas hold characters of two, three
    and four bytes (the cases a byte-level cut or re-chunking breaks)."""
    return (
        Seed("short", _message("é", 1)),
        Seed("text", _message("Hello! Grüße, 世界 👋 done.", 4)),
    )


def catalogue_seeds() -> tuple[Seed, ...]:
    """The first reply of each conformance scenario that is a whole answer a client takes without answering a call
    (a text, hosted tools' work), each shape once: streams someone wrote down, to mutate."""
    from ..conform.scenario import catalogue
    from ..script.reply_plan import reply_events
    from .stream import Stream, Verdict, expected

    seeds, shapes = [], set()
    for scenario in catalogue():
        script = scenario.script
        reply = script.responses[0] if script.responses else script.default
        if reply is None or reply.reject is not None:
            continue
        events = tuple(reply_events(reply, REQUEST, created_at=CREATED_AT))
        shape = tuple(event.get("type") for event in events)
        if shape in shapes or expected(Stream(events)).verdict is not Verdict.ANSWER or _asks_client(events):
            continue
        shapes.add(shape)
        seeds.append(Seed(f"catalogue:{scenario.name}", events))
    return tuple(seeds)


def default_seeds() -> tuple[Seed, ...]:
    return (*shipped_seeds(), *catalogue_seeds())


def _asks_client(events: tuple[Event, ...]) -> bool:
    from ..protocol.calls import client_call

    end = first_terminal(events)
    output = events[end].get("response", {}).get("output", []) if end is not None else []
    return any(client_call(item) is not None for item in output)


def seeds_from(path: Path) -> tuple[Seed, ...]:
    """The first scripted reply of a script file (its first step, else its default), or the first create of a
    cassette, as a seed named after the file; a SettingError says why a file gives none."""
    from ..files.kind import file_kind

    kind = file_kind(path)
    if kind == "cassette":
        events = _cassette_events(path)
    elif kind == "script":
        events = _script_events(path)
    else:
        raise SettingError(f"--from {path}: neither a script nor a cassette (or it cannot be read): give one")
    if first_terminal(events) is None:
        raise SettingError(f"--from {path}: its first reply has no terminal event to explore from")
    return (Seed(path.stem, events),)


def _cassette_events(path: Path) -> tuple[Event, ...]:
    from ..cassette.store import load_cassette

    cassette = load_cassette(path)
    first = next((exchange for exchange in cassette.exchanges if exchange.is_create and exchange.events), None)
    if first is None:
        raise SettingError(f"--from {path}: the cassette holds no create with events")
    return tuple(recorded.event for recorded in first.events)


def _script_events(path: Path) -> tuple[Event, ...]:
    from ..script.loader import load_script
    from ..script.reply_plan import reply_events

    script = load_script(path)
    reply = script.responses[0] if script.responses else script.default
    if reply is None:
        raise SettingError(f"--from {path}: the script has no reply")
    return tuple(reply_events(reply, REQUEST))
