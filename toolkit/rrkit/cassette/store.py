"""Reading and writing cassette files: validated on load, written atomically (temporary file + rename)."""

from __future__ import annotations

import contextlib
import gc
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
from pydantic import ValidationError

from ..protocol.errors import RRKitError
from ..script.loader import json_place
from .format import Cassette, RecordedExchange


class CassetteError(RRKitError, ValueError):
    """A cassette that cannot be used; the message names the file, the place in it and the problem."""


def parse_cassette(data: Any, path: Path | str = "<cassette>") -> Cassette:
    if not isinstance(data, dict):
        raise CassetteError(f"{path}: a cassette is a JSON object, got {type(data).__name__}")
    if "rrkit_cassette" not in data:
        raise CassetteError(f"{path}: not an rrkit cassette (no `rrkit_cassette` version field)")
    try:
        return Cassette.model_validate(data)
    except ValidationError as error:
        lines = [f"{path}: invalid cassette ({error.error_count()} problem(s)):"]
        lines += [f"  - {json_place(problem['loc'])}: {problem['msg']}" for problem in error.errors()[:20]]
        raise CassetteError("\n".join(lines)) from None


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
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise CassetteError(f"{path}: cannot read cassette: {error.strerror or error}") from None
    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError as error:
        raise CassetteError(f"{path}: line {error.lineno}, column {error.colno}: invalid JSON: {error.msg}") from None
    return parse_cassette(data, path)


def _dumps(value: Any, indent: int) -> str:
    text = json.dumps(value, ensure_ascii=False, indent=2)
    return text.replace("\n", "\n" + " " * indent)


def _exchange_lines(exchange: RecordedExchange) -> Iterator[str]:
    """An exchange as indented JSON, with one event per line: readable and diff-friendly at any size."""
    head = exchange.model_dump(mode="json", exclude={"events"})
    body = _dumps(head, 4)
    yield "    " + body[:-1].rstrip() + ',\n      "events": ['
    for index, recorded in enumerate(exchange.events):
        separator = "," if index < len(exchange.events) - 1 else ""
        yield f'\n        {{"at": {recorded.at!r}, "event": {recorded.raw}}}{separator}'
    yield ("\n      ]" if exchange.events else "]") + "\n    }"


def dump_cassette(cassette: Cassette) -> Iterator[str]:
    head = cassette.model_dump(mode="json", exclude={"exchanges"})
    body = _dumps(head, 0)
    yield body[:-1].rstrip() + ',\n  "exchanges": ['
    for index, exchange in enumerate(cassette.exchanges):
        yield "\n"
        yield from _exchange_lines(exchange)
        if index < len(cassette.exchanges) - 1:
            yield ","
    yield ("\n  ]" if cassette.exchanges else "]") + "\n}\n"


def save_cassette(cassette: Cassette, path: Path | str) -> Path:
    """Write atomically: a crash mid-write leaves the previous file (if any) untouched."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            for piece in dump_cassette(cassette):
                handle.write(piece)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path
