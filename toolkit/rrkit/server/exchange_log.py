"""One exchange as it ends, for a person (one line) or a machine (one JSON object): `rrkit serve`'s log and journal."""

from __future__ import annotations

import asyncio
import contextlib
import json
import queue
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any, NamedTuple

from ..protocol.outcome import OutcomeKind
from ..protocol.routes import CREATE
from ..protocol.secrets import REDACTED, mask_headers, mask_request
from .capture import Exchange


def exchange_kind(exchange: Exchange) -> str:
    """`warmup` (a `generate: false` request), `incremental` (with `previous_response_id`) or `full`."""
    if exchange.warmup:
        return "warmup"
    return "incremental" if exchange.incremental else "full"


def _model(exchange: Exchange) -> str:
    model = (exchange.wire_request or {}).get("model")
    return model if isinstance(model, str) and model else "-"


def _events(exchange: Exchange) -> int:
    return exchange.outcome.events_sent if exchange.outcome is not None else len(exchange.events)


def _ms(exchange: Exchange, now: float | None = None) -> int:
    return max(0, round(((time.time() if now is None else now) - exchange.started_at) * 1000))


def outcome_text(exchange: Exchange) -> str:
    """The outcome in a few words: `completed`, `failed context_length_exceeded`, `refused 429 rate_limit_exceeded`."""
    outcome = exchange.outcome
    if outcome is None:
        return "running"
    status = outcome.status if outcome.status is not None else exchange.response_status
    return _outcome_words(outcome.kind, status, outcome.code or outcome.reason)


def _outcome_words(kind: str, status: int | None, detail: str | None) -> str:
    words = [kind]
    if status is not None and (kind in (OutcomeKind.REFUSED, OutcomeKind.ANSWERED) or not 200 <= status < 300):
        words.append(str(status))
    if detail:
        words.append(detail)
    return " ".join(words)


class _Line(NamedTuple):
    """What one line shows, read from an exchange or from its journal record."""

    id: int
    transport: str
    route: str
    method: str
    path: str
    query: str
    kind: str
    model: str
    events: int
    streamed: bool  # it sent events (on another route than the create, the line counts them only then)
    outcome: str
    ms: int
    replayed: bool


def exchange_line(exchange: Exchange, now: float | None = None) -> str:
    """One line for a person: `#3  ws    incr    gpt-5          14 ev  completed  38 ms`; on another route than
    the create, its method and path: `#4  http  GET /responses/resp_1  answered 200  2 ms`."""
    return _line(
        _Line(
            exchange.id,
            exchange.transport,
            exchange.route,
            exchange.method,
            exchange.path,
            exchange.query,
            exchange_kind(exchange),
            _model(exchange),
            _events(exchange),
            len(exchange.events) > 0,
            outcome_text(exchange),
            _ms(exchange, now),
            exchange.replayed,
        )
    )


def record_line(record: Mapping[str, Any]) -> str:
    """`exchange_line` for a journal record (`exchange_record`), as `rrkit show` prints a `--journal` file; a
    record of an older rrkit, without `route` and `method`, was a create."""
    ended = record.get("outcome")
    if isinstance(ended, Mapping):
        status = ended.get("status") if ended.get("status") is not None else record.get("status")
        detail = ended.get("code") or ended.get("reason")
        outcome = _outcome_words(str(ended.get("kind")), _int_or_none(status), str(detail) if detail else None)
    else:
        outcome = "running"
    events = _int_or_none(record.get("events")) or 0
    return _line(
        _Line(
            record["id"],
            str(record.get("transport") or "-"),
            str(record.get("route") or CREATE),
            str(record.get("method") or "POST"),
            str(record.get("path") or "/responses"),
            str(record.get("query") or ""),
            str(record.get("kind") or "full"),
            record["model"] if isinstance(record.get("model"), str) and record["model"] else "-",
            events,
            events > 0,
            outcome,
            _int_or_none(record.get("ms")) or 0,
            record.get("replayed") is True,
        )
    )


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _line(line: _Line) -> str:
    replayed = "  (replayed)" if line.replayed else ""
    if line.route != CREATE:
        query = "?" + line.query if line.query else ""
        events = f"{line.events} ev  " if line.streamed else ""
        where = f"{line.method} {line.path}{query}"
        return f"#{line.id:<3} {line.transport:<4} {where}  {events}{line.outcome}  {line.ms} ms{replayed}"
    kind = {"incremental": "incr"}.get(line.kind, line.kind)
    return (
        f"#{line.id:<3} {line.transport:<4} {kind:<6}  {line.model:<14} {line.events:>3} ev  "
        f"{line.outcome}  {line.ms} ms{replayed}"
    )


def exchange_record(exchange: Exchange, now: float | None = None) -> dict[str, Any]:
    """One JSON object for a machine (a `--journal` line); its fields are listed in docs/guide/serve.md."""
    wire = exchange.wire_request or {}
    previous = wire.get("previous_response_id")
    return {
        "id": exchange.id,
        "session": exchange.session,
        "started_at": round(exchange.started_at, 6),
        "ms": _ms(exchange, now),
        "transport": exchange.transport,
        "connection_id": exchange.connection_id,
        "method": exchange.method,
        "path": exchange.path,
        "route": exchange.route,
        "kind": exchange_kind(exchange),
        "model": wire.get("model") if isinstance(wire.get("model"), str) else None,
        "previous_response_id": previous if isinstance(previous, str) else None,
        "response_id": exchange.response_id,
        "status": exchange.response_status,
        "events": _events(exchange),
        "outcome": exchange.outcome.to_dict() if exchange.outcome is not None else None,
        "replayed": exchange.replayed,
        "query": exchange.query,
        "headers": mask_headers(exchange.request_headers, REDACTED),
        "request": mask_request(exchange.wire_request, REDACTED),
        "raw_body": exchange.raw_body,
    }


def when_settled(listener: Callable[[Exchange], None]) -> Callable[[Exchange], None]:
    """A `Capture.listeners` entry that calls `listener` on the server loop's next turn: the outcome is set a
    moment before an exchange's last fields (a collected body, its status)."""

    def deferred(exchange: Exchange) -> None:
        try:
            asyncio.get_running_loop().call_soon(listener, exchange)
        except RuntimeError:  # no loop: called from a thread of a test
            listener(exchange)

    return deferred


class LinePrinter:
    """Prints each exchange's line from a thread of its own, so that a stdout nobody reads (a harness's full pipe)
    never stalls the server; beyond `limit` lines waiting, new ones are dropped and counted. The line is made in
    that thread too, off the server's loop, `after` adding to it (the rules its stream breaks: `tools.self_check`)."""

    def __init__(
        self, write: Callable[[str], None], limit: int = 10_000, after: Callable[[Exchange], str] | None = None
    ) -> None:
        self._write = write
        self._after = after
        self._lines: queue.Queue[tuple[Exchange, float] | None] = queue.Queue(maxsize=limit)
        self.dropped = 0
        self._thread = threading.Thread(target=self._run, name="rrkit-exchange-log", daemon=True)
        self._thread.start()

    def __call__(self, exchange: Exchange) -> None:
        try:
            self._lines.put_nowait((exchange, time.time()))
        except queue.Full:
            self.dropped += 1

    def _run(self) -> None:
        while (ended := self._lines.get()) is not None:
            exchange, now = ended
            try:
                self._write(exchange_line(exchange, now) + (self._after(exchange) if self._after else ""))
            except (OSError, ValueError):  # stdout closed: nobody is reading any more
                return

    def close(self, timeout: float = 1.0) -> None:
        """Print what is waiting (at most `timeout` seconds), then stop."""
        try:
            self._lines.put(None, timeout=timeout)
        except queue.Full:
            return
        self._thread.join(timeout)


class JournalFile:
    """`--journal FILE.jsonl`: each exchange appended as one JSON line as it ends, flushed at once. A write that
    fails (disk full) is reported once through `warn`, and the journal stops."""

    def __init__(self, path: Path, warn: Callable[[str], None]) -> None:
        self.path = path
        self._warn = warn
        self._file: IO[str] | None = path.open("a", encoding="utf-8")

    def __call__(self, exchange: Exchange) -> None:
        if self._file is None:
            return
        try:
            self._file.write(json.dumps(exchange_record(exchange), default=str) + "\n")
            self._file.flush()
        except (OSError, ValueError) as error:
            self._warn(
                f"rrkit: cannot write the journal {self.path}: {getattr(error, 'strerror', None) or error}; "
                "journaling stopped (free some space, or give another --journal)"
            )
            self.close()

    def close(self) -> None:
        if self._file is not None:
            file, self._file = self._file, None
            with contextlib.suppress(OSError):
                file.close()
