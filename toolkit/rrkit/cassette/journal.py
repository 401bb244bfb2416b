"""A recording's journal: each exchange appended to a sidecar of the cassette as it ends, so that a crash (kill -9)
loses at most the exchanges in flight; a leftover journal is recovered into the cassette when it is next opened.

The journal of a recording session is `<cassette>.<pid>.journal.jsonl` next to the cassette, one JSON object a
line: first the header (`{"rrkit_journal": 1, ...}`: the cassette's name, source and redaction, and whether the
session replaces the cassette or adds to it), then `{"connection": ...}` (a WebSocket connection, before its
first exchange) and `{"exchange": ...}` records, redacted as the cassette is, with absolute start times;
`{"saved": <sha256>}` once the final cassette is written, just before it replaces the old one. Each record is
written whole with one `write` as its exchange ends (in the kernel at once: a killed process loses nothing
written) and fsync'd at least every `FSYNC_EVERY` records or `FSYNC_SECONDS`, and at the end (what a power loss
can take). A session holds a lock on its journal (`filelock`, in the temporary directory): a journal nobody holds
is a crash's leftover.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import threading
import time
import warnings
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from filelock import FileLock, Timeout

from ..protocol.exceptions import CassetteError
from .format import Cassette, CassetteWarning, RecordedConnection, RecordedExchange, Redaction, compact, loads_exact
from .journal_files import SUFFIX, journal_paths
from .lock import LOCK_TIMEOUT, directory_lock, lock_of
from .record import EVENTS_PER_SLICE, append
from .store import load_cassette, save_cassette

JOURNAL_VERSION = 1
FSYNC_EVERY = 64  # records written between two fsyncs, at most
FSYNC_SECONDS = 0.25  # seconds of recording between two fsyncs, at most (checked as records are written)


class Verbatim(str):
    """JSON text a record holds as it is (`exchange_line`)."""


def exchange_line(exchange: RecordedExchange, between: Callable[[], None] | None = None) -> Verbatim:
    """An exchange as compact JSON on one line (its journal record's value), its events' texts put in as they are
    held: none is parsed again; `between` is called after each slice of EVENTS_PER_SLICE events."""
    left_out = {"events", *(() if exchange.successor_of else ("successor_of",))}
    head = json.dumps(exchange.model_dump(mode="json", exclude=left_out), ensure_ascii=False, separators=(",", ":"))
    timed, parts = compact(exchange.events).timed(), []
    while slice_ := list(itertools.islice(timed, EVENTS_PER_SLICE)):
        parts.append(",".join([f'{{"at":{at!r},"event":{raw}}}' for at, raw in slice_]))
        if between is not None:
            between()
    events = ",".join(parts)
    return Verbatim(f'{head[:-1]}{"," if head != "{}" else ""}"events":[{events}]}}')


def _line(record: dict[str, Any]) -> bytes:
    fields = ",".join(f"{json.dumps(key)}:{_json(value)}" for key, value in record.items())
    return ("{" + fields + "}\n").encode("utf-8")


def _json(value: Any) -> str:
    return value if isinstance(value, Verbatim) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class Journal:
    """The open journal of one recording session (thread-safe): `start`, `append` records, `mark_saved`, `remove`."""

    def __init__(self, path: Path, fd: int, live: FileLock) -> None:
        self.path, self._fd, self._live = path, fd, live
        self._lock = threading.Lock()
        self._unsynced, self._synced_at = 0, time.monotonic()
        self.records = 0

    @classmethod
    def start(cls, cassette: Path, *, replaces: bool, name: str, source: str, redaction: Redaction | None) -> Journal:
        """A new journal for `cassette`, locked and with its header, put in place (renamed) only once complete."""
        cassette.parent.mkdir(parents=True, exist_ok=True)
        header = {
            "rrkit_journal": JOURNAL_VERSION,
            "cassette": cassette.name,
            "replaces": replaces,
            "name": name,
            "source": source,
            "redaction": redaction.model_dump(mode="json") if redaction is not None else None,
            "started": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        temporary = cassette.parent / f".{cassette.name}.{os.getpid()}.{time.monotonic_ns()}.journal-tmp"
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o644)
        live: FileLock | None = None
        try:
            _write_all(fd, _line(header))
            os.fsync(fd)
            path = cassette.parent / f"{cassette.name}.{os.getpid()}{SUFFIX}"
            serial = 0
            while path.exists():
                serial += 1
                path = cassette.parent / f"{cassette.name}.{os.getpid()}-{serial}{SUFFIX}"
            live = lock_of(path)
            live.acquire()  # held until the journal goes: it is this session's, not a leftover
            os.rename(temporary, path)
        except BaseException:
            os.close(fd)
            temporary.unlink(missing_ok=True)
            if live is not None:
                live.release()
            raise
        return cls(path, fd, live)

    def append(self, *records: dict[str, Any]) -> None:
        """Write records (one line each, in one `write`), fsync'd within the documented bound."""
        data = b"".join(_line(record) for record in records)
        with self._lock:
            if self._fd < 0:
                return
            _write_all(self._fd, data)
            self.records += len(records)
            self._unsynced += len(records)
            if self._unsynced >= FSYNC_EVERY or time.monotonic() - self._synced_at >= FSYNC_SECONDS:
                self._sync()

    def _sync(self) -> None:
        os.fsync(self._fd)
        self._unsynced, self._synced_at = 0, time.monotonic()

    def mark_saved(self, digest: str) -> None:
        """The final cassette (with this SHA-256) is on disk and about to replace the old one."""
        self.append({"saved": digest})
        with self._lock:
            self._sync()

    def remove(self) -> None:
        """The final cassette is written: the journal goes (and its lock with it)."""
        with self._lock:
            if self._fd < 0:
                return
            self.path.unlink(missing_ok=True)
            os.close(self._fd)
            self._fd = -1
            self._live.release()


# -- recovery --------------------------------------------------------------------------------------------------


def recover_journals(cassette: Path, lock_timeout: float = LOCK_TIMEOUT) -> int:
    """Merge the journals crashed sessions left next to `cassette` into it (or build it from them), each once,
    under the folder's lock (LockHeld past `lock_timeout`); a CassetteWarning names each journal and how many
    exchanges it gave. Journals of live sessions are left alone. Returns the number of exchanges recovered."""
    total = 0
    for journal in journal_paths(cassette):
        with directory_lock(cassette.parent, lock_timeout):
            live = lock_of(journal)
            try:
                live.acquire(timeout=0)
            except Timeout:  # a session is recording into it right now
                continue
            try:
                fd = os.open(journal, os.O_RDWR | os.O_APPEND)
            except FileNotFoundError:  # its session finished (or another process recovered it) meanwhile
                live.release()
                continue
            try:
                total += _recover(cassette, journal, fd)
            finally:
                os.close(fd)
                live.release()
    return total


def _records(journal: Path, content: bytes) -> list[tuple[int, dict[str, Any]]]:
    """Each record with its line number; a line that is not a JSON object is a CassetteError naming it (but the
    last line, which a crash may have cut short)."""
    records = []
    lines = content.split(b"\n")
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = loads_exact(line)
        except ValueError:
            if number == len(lines):  # the last line, cut short by the crash: an exchange in flight
                continue
            raise CassetteError(
                f"{journal}: line {number}: not a journal record (invalid JSON); the journal of {journal.name} "
                "cannot be recovered as it is: fix or remove that line"
            ) from None
        if not isinstance(record, dict):
            raise CassetteError(f"{journal}: line {number}: a journal record is a JSON object")
        records.append((number, record))
    return records


M = TypeVar("M", RecordedExchange, RecordedConnection)


def _whole(journal: Path, number: int, model: type[M], value: Any) -> M:
    """A record's exchange or connection as the cassette holds it; anything else names its line."""
    try:
        return model.model_validate(value)
    except ValueError as error:
        first = str(error).splitlines()[1:3]
        raise CassetteError(
            f"{journal}: line {number}: not a whole {model.__name__.removeprefix('Recorded').lower()} "
            f"({'; '.join(line.strip() for line in first)}): fix or remove that line, then recover again"
        ) from None


def _started(journal: Path, number: int, value: Any) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    raise CassetteError(f"{journal}: line {number}: started_at is {value!r}, not a number of seconds: fix that line")


def _recover(cassette: Path, journal: Path, fd: int) -> int:
    records = _records(journal, journal.read_bytes())
    header = records[0][1] if records else {}
    if header.get("rrkit_journal") != JOURNAL_VERSION:
        raise CassetteError(
            f"{journal}: not an rrkit journal this rrkit reads (its first line should be the header with "
            f'"rrkit_journal": {JOURNAL_VERSION}); move it away to open {cassette.name}'
        )
    saved = {str(record["saved"]) for _, record in records if "saved" in record}
    if saved and cassette.exists() and hashlib.sha256(cassette.read_bytes()).hexdigest() in saved:
        journal.unlink()  # the session wrote its cassette and stopped just before removing its journal
        return 0
    # by the session's exchange (connection) id: the last record of each counts
    exchanges: dict[int, tuple[RecordedExchange, Any]] = {}
    connections: dict[int, tuple[RecordedConnection, float]] = {}
    for number, record in records[1:]:
        if isinstance(record.get("exchange"), dict):
            exchange = _whole(journal, number, RecordedExchange, record["exchange"])
            exchanges[exchange.id] = exchange, record.get("onto")
        elif isinstance(record.get("connection"), dict):
            connection = _whole(journal, number, RecordedConnection, record["connection"])
            connections[connection.id] = connection, _started(journal, number, record.get("started_at", 0.0))
    if not exchanges:
        journal.unlink()
        return 0
    fresh = _fresh(header, [exchange for exchange, _ in exchanges.values()], list(connections.values()), journal)
    base = None if header.get("replaces") or not cassette.exists() else load_cassette(cassette)
    merged = _onto(base, fresh, [onto for _, onto in exchanges.values()])

    def mark(digest: str) -> None:
        _write_all(fd, _line({"saved": digest}))
        os.fsync(fd)

    save_cassette(merged, cassette, before_replace=mark)
    journal.unlink()
    warnings.warn(
        f"{cassette}: recovered {len(exchanges)} exchange(s) from {journal.name}, the journal of a recording "
        f"that did not stop cleanly (started {header.get('started')}); they are now in the cassette",
        CassetteWarning,
        stacklevel=4,
    )
    return len(exchanges)


def _fresh(
    header: dict[str, Any],
    exchanges: list[RecordedExchange],
    connections: list[tuple[RecordedConnection, float]],
    journal: Path,
) -> Cassette:
    origin = min([exchange.started_at for exchange in exchanges] + [started for _, started in connections])
    try:
        cassette = Cassette(
            name=str(header.get("name") or ""),
            source=str(header.get("source") or ""),
            recorded_at=str(header.get("started") or ""),
            redaction=Redaction.model_validate(header["redaction"]) if header.get("redaction") else None,
            connections=[connection for connection, _ in connections],
            exchanges=exchanges,
        )
    except ValueError as error:
        raise CassetteError(f"{journal}: line 1: the header is not a valid journal header: {error}") from None
    for exchange in cassette.exchanges:
        exchange.started_at = round(max(0.0, exchange.started_at - origin), 6)
    return cassette


def _onto(base: Cassette | None, fresh: Cassette, onto: list[Any]) -> Cassette:
    """`fresh` after `base` (numbered on), its exchanges made on a replayed connection put on that connection."""
    if base is None:
        return fresh
    merged = append(base, fresh)
    for recorded, connection in zip(merged.exchanges[len(base.exchanges) :], onto, strict=True):
        if isinstance(connection, int):
            recorded.connection = connection
    return merged
