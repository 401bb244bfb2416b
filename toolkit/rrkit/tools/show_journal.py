"""`rrkit show` for a `rrkit serve --journal` file: its records read back line by line and filtered, a last line cut
by a crash left out with a warning; nothing printed here."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..files.text import decode_utf8
from ..protocol.jsontext import MAX_DEPTH, UnsafeJSON, parse_json
from ..server.exchange_filter import ExchangeFilter

JOURNAL_SUFFIX = ".jsonl"
JOURNAL_DEPTH = MAX_DEPTH + 8
"""The nesting a journal line may hold: a request as deep as the server accepts, a few levels down in its record."""
FIRST_LINE_LIMIT = 1 << 20
"""The bytes of a file's first line read to tell a journal by its content (a longer one needs the `.jsonl` name)."""

ONE_A_LINE = "a journal holds one exchange's JSON object a line, as `rrkit serve --journal` writes it"


@dataclass(frozen=True, slots=True)
class JournalEntry:
    record: dict[str, Any]
    text: str  # the line as written, without its newline


@dataclass
class JournalView:
    """The entries of a journal a filter keeps, of `total` records in the file, and what was left out and why."""

    path: Path
    shown: list[JournalEntry] = field(default_factory=list)
    total: int = 0
    warnings: list[str] = field(default_factory=list)


def is_journal(path: Path) -> bool:
    """Whether `path` is a `--journal` file: named `*.jsonl`, or its first line an exchange record (an object with
    `id` and `started_at` or `outcome`). A file that cannot be read is none: its reader names the problem."""
    if path.suffix.lower() == JOURNAL_SUFFIX:
        return True
    try:
        with path.open("rb") as handle:
            first = handle.readline(FIRST_LINE_LIMIT)
        record = parse_json(first, what="line", max_depth=JOURNAL_DEPTH)
    except (OSError, ValueError):  # UnsafeJSON is a ValueError
        return False
    return isinstance(record, dict) and "id" in record and ("started_at" in record or "outcome" in record)


def read_journal(path: Path, wanted: ExchangeFilter, error_type: type[Exception]) -> JournalView:
    """The records of the journal at `path` that `wanted` keeps, in file order; `error_type` naming the file and
    the line of one that is not UTF-8, not JSON or not an exchange record. A last line without its newline that
    does not parse is what a crash mid-write leaves: a warning, and the records before it stand."""
    view = JournalView(path)
    for number, raw in _lines(path, error_type):
        read = _record(path, number, raw, error_type)
        if read is None:
            view.warnings.append(
                f"rrkit: {path}: line {number}: the last line is cut (not whole JSON: the server stopped while "
                "writing it); left out"
            )
            continue
        view.total += 1
        if wanted.matches(read[0]):
            view.shown.append(JournalEntry(*read))
    return view


def _lines(path: Path, error_type: type[Exception]) -> Iterator[tuple[int, bytes]]:
    """The file's non-blank lines (bytes, with their newline), numbered from 1."""
    try:
        with path.open("rb") as handle:
            for number, raw in enumerate(handle, 1):
                if raw.strip():
                    yield number, raw
    except OSError as error:
        raise error_type(f"{path}: cannot read the journal: {error.strerror or error}") from None


def _record(path: Path, number: int, raw: bytes, error_type: type[Exception]) -> tuple[dict[str, Any], str] | None:
    """The exchange record of one line, and its text; None for a cut last line (no newline: a write that never
    finished, perhaps inside a character)."""
    cut = not raw.endswith(b"\n")
    place = f"{path}: line {number}"
    if cut:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            return None
    else:
        text = decode_utf8(raw, place, "journal", error_type, remedy="a journal rrkit writes is UTF-8: is this one?")
    try:
        record = parse_json(text, what="line", max_depth=JOURNAL_DEPTH)
    except UnsafeJSON as error:
        if cut:
            return None
        raise error_type(f"{place}: not JSON ({error.message.rstrip('.')}): {ONE_A_LINE}") from None
    if isinstance(record, dict) and "rrkit_journal" in record:
        raise error_type(
            f"{place}: a recording's journal, not `rrkit serve --journal`'s: `rrkit recover CASSETTE` merges it into "
            "its cassette, which `rrkit show CASSETTE` then shows"
        )
    if not isinstance(record, dict) or not isinstance(record.get("id"), int) or isinstance(record["id"], bool):
        raise error_type(f"{place}: not an exchange record (an object with an integer `id`): {ONE_A_LINE}")
    return record, text.rstrip("\r\n")
