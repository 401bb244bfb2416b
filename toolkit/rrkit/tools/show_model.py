"""The timeline model `rrkit show` draws: rows, connection and exchange views and the timeline, each with the text
it reads as (the renderers only lay it out), coloured by its `Tone`."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from ..protocol.errors import Classification
from ..protocol.outcome import Outcome
from ..protocol.routes import CREATE


class Tone(StrEnum):
    """How an outcome or a connection reads at a glance: the renderers colour by it."""

    OK = "ok"  # completed
    WARN = "warn"  # stated by the stream but not a success (failed, incomplete, error event), or the client left
    BAD = "bad"  # cut or refused: dropped, stalled, refused
    UNKNOWN = "unknown"  # no outcome recorded


CLOSE_CODE_NAMES = {
    1000: "normal",
    1001: "going away",
    1002: "protocol error",
    1003: "unsupported data",
    1005: "no status",
    1006: "abnormal",
    1007: "invalid data",
    1008: "policy violation",
    1009: "message too big",
    1011: "internal error",
    1012: "service restart",
    1013: "try again later",
}
EVENT_PREFIX = "response."


@dataclass(frozen=True, slots=True)
class Row:
    """One labelled line of a card: both renderers show exactly these. `pieces`, when given, join to `text` and
    are each kept on one line when it wraps (`12 x output_text.delta` is never split)."""

    label: str
    text: str
    tone: Tone | None = None
    pieces: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class RequestSize:
    items: int | None  # input items; a string input is one item; None when there is no JSON request
    bytes: int | None  # compact JSON

    def describe(self) -> str:
        if self.bytes is None:
            return "none"
        items = "?" if self.items is None else str(self.items)
        return f"{items} item{'' if self.items == 1 else 's'}, {format_bytes(self.bytes)}"


@dataclass(frozen=True, slots=True)
class EventRun:
    """Consecutive events of one type."""

    type: str
    count: int

    def describe(self) -> str:
        name = self.type.removeprefix(EVENT_PREFIX)
        return name if self.count == 1 else f"{self.count} x {name}"


@dataclass(frozen=True, slots=True)
class OutcomeView:
    """An exchange's recorded outcome as a card shows it: its tone at a glance, and how a client retries it."""

    recorded: Outcome | None  # None: the exchange has no outcome recorded
    tone: Tone
    retry: Classification | None = None
    """How the error code or status is classified and retried (rrkit.protocol.errors), for failures."""

    @property
    def kind(self) -> str:
        """An OutcomeKind value, or "unknown"."""
        return self.recorded.kind.value if self.recorded is not None else "unknown"

    @property
    def message(self) -> str | None:
        return (self.recorded.message or None) if self.recorded is not None else None

    def describe(self) -> str:
        parts = [self.kind]
        outcome = self.recorded
        if outcome is not None:
            if outcome.status is not None:
                parts.append(f"status {outcome.status}")
            if outcome.code:
                parts.append(f"code {outcome.code}")
            if outcome.reason:
                parts.append(f"reason {outcome.reason}")
            parts.append(f"{outcome.events_sent} event{'' if outcome.events_sent == 1 else 's'} sent")
        if self.retry is not None:
            delay = f" after {format_seconds(self.retry.delay)}" if self.retry.delay is not None else ""
            parts.append(f"retryable{delay}" if self.retry.retryable else "not retryable")
        return ", ".join(parts)


@dataclass(frozen=True, slots=True)
class ConnectionView:
    id: int
    status: int | None
    turn_state: str | None
    closed_by: str | None
    close_code: int | None
    exchanges: tuple[int, ...]
    tone: Tone

    @property
    def handshake(self) -> str:
        if self.status is None:
            return "not recorded"
        return "101 accepted" if self.status == 101 else f"{self.status} refused"

    @property
    def closed(self) -> str:
        if self.status is not None and self.status != 101:
            return "never opened"
        if self.closed_by is None:
            return "not recorded"
        if self.close_code is None:
            return f"by {self.closed_by}, no close frame" if self.closed_by == "tcp" else f"by {self.closed_by}"
        name = CLOSE_CODE_NAMES.get(self.close_code)
        return f"by {self.closed_by}, code {self.close_code}" + (f" ({name})" if name else "")

    @property
    def exchange_list(self) -> str:
        return ", ".join(f"#{number}" for number in self.exchanges) or "none"


@dataclass(frozen=True, slots=True)
class ExchangeView:
    id: int
    transport: str
    connection: int | None
    method: str
    route: str  # protocol.routes: `responses.create`, `responses.retrieve`, ..., `other`
    request_line: str  # `GET /responses/resp_1?stream=true`
    incremental: bool
    warmup: bool
    model: str | None
    previous_response_id: str | None
    response_id: str | None
    wire: RequestSize
    logical: RequestSize
    raw_body_bytes: int | None  # a body that was not a JSON object, as received
    steer: bool  # the answer to a WebSocket steer frame, not a request
    runs: tuple[EventRun, ...]
    event_count: int  # Responses events, keep-alive comments left out
    keepalives: int  # SSE comments
    log: tuple[tuple[float, str], ...]  # (offset, type) of every recorded entry, comments included
    started_at: float
    duration: float | None  # offset of the last recorded entry
    first_event: float | None  # offset of the first Responses event
    outcome: OutcomeView
    response_status: int | None
    body_content_type: str | None
    body_bytes: int | None
    turn_state_issued: str | None
    turn_state_sent: str | None
    problems: tuple[str, ...]  # order-checker violations

    @property
    def tone(self) -> Tone:
        return self.outcome.tone

    @property
    def create(self) -> bool:
        return self.route == CREATE

    @property
    def title(self) -> str:
        where = f"{self.transport} conn {self.connection}" if self.connection is not None else self.transport
        if not self.create:
            return " · ".join([f"#{self.id}", where, f"{self.method} {self.route}"])
        kind = "steer" if self.steer else "incremental" if self.incremental else "full"
        parts = [f"#{self.id}", where, kind]
        if self.warmup:
            parts.append("warmup")
        return " · ".join(parts)

    def rows(self, *, max_runs: int | None = None, max_problems: int | None = None) -> tuple[Row, ...]:
        """The card's lines; `max_runs` and `max_problems` shorten a long event sequence and a long list of
        protocol problems (None keeps them whole)."""
        return (*self._request_rows(), *self._answer_rows(max_runs), *self._problem_rows(max_problems))

    def _request_rows(self) -> list[Row]:
        if not self.create:
            return [Row("request", f"{self.request_line} · {self._body_shown()}")]
        if self.steer:
            return [Row("request", f"response.steer frame ({format_bytes(self.raw_body_bytes or 0)})")]
        request = f"wire {self.wire.describe()} · logical {self.logical.describe()}"
        if self.model:
            request += f" · model {self.model}"
        if self.raw_body_bytes is not None:
            request += f" · body not a JSON object ({format_bytes(self.raw_body_bytes)})"
        rows = [Row("request", request)]
        if self.previous_response_id:
            rows.append(Row("previous", self.previous_response_id))
        turn = [f"sent {self.turn_state_sent}"] if self.turn_state_sent else []
        turn += [f"issued {self.turn_state_issued}"] if self.turn_state_issued else []
        if turn:
            rows.append(Row("turn state", ", ".join(turn)))
        return rows

    def _body_shown(self) -> str:
        """The body of a request on another route than the create: a JSON object, another body, or none."""
        if self.wire.bytes is not None:
            shown = f"JSON body {format_bytes(self.wire.bytes)}"
            return shown + (f" · model {self.model}" if self.model else "")
        if self.raw_body_bytes:
            return f"body not a JSON object ({format_bytes(self.raw_body_bytes)})"
        return "no body"

    def _answer_rows(self, max_runs: int | None) -> list[Row]:
        pieces = self.event_pieces(max_runs)
        rows = [Row("events", "".join(pieces), pieces=pieces)]
        if self.keepalives:
            rows.append(Row("keep-alive", f"{self.keepalives} SSE comment{'' if self.keepalives == 1 else 's'}"))
        if self.body_bytes is not None:
            status = f", status {self.response_status}" if self.response_status is not None else ""
            rows.append(Row("body", f"{self.body_content_type}, {format_bytes(self.body_bytes)}{status}"))
        rows.append(Row("timing", self.describe_timing()))
        rows.append(Row("outcome", self.outcome.describe(), self.outcome.tone))
        if self.outcome.message:
            rows.append(Row("message", self.outcome.message))
        if self.response_id:
            rows.append(Row("response", self.response_id))
        return rows

    def _problem_rows(self, max_problems: int | None) -> list[Row]:
        problems = self.problems if max_problems is None else self.problems[:max_problems]
        rows = [Row("problem", problem, Tone.BAD) for problem in problems]
        if len(problems) < len(self.problems):
            rows.append(Row("problem", f"... and {len(self.problems) - len(problems)} more", Tone.BAD))
        return rows

    def event_pieces(self, max_runs: int | None = None) -> tuple[str, ...]:
        """`12: `, `created, `, `in_progress, `, `8 x output_text.delta, `, ..., `completed`."""
        if not self.runs:
            return ("none",)
        shown = self.runs if max_runs is None else self.runs[:max_runs]
        names = [run.describe() for run in shown]
        if len(shown) < len(self.runs):
            names.append(f"... ({len(self.runs) - len(shown)} more runs)")
        return (f"{self.event_count}: ", *(f"{name}, " for name in names[:-1]), names[-1])

    def describe_timing(self) -> str:
        parts = [f"started +{format_seconds(self.started_at)}"]
        if self.first_event is not None:
            parts.append(f"first event {format_seconds(self.first_event)}")
        if self.duration is not None:
            parts.append(f"duration {format_seconds(self.duration)}")
        return " · ".join(parts)


@dataclass(frozen=True, slots=True)
class Timeline:
    name: str
    path: str | None
    source: str
    recorded_at: str
    connections: tuple[ConnectionView, ...]
    exchanges: tuple[ExchangeView, ...]

    @property
    def title(self) -> str:
        return self.name or self.path or "cassette"

    def summary(self) -> tuple[Row, ...]:
        outcomes = Counter(exchange.outcome.kind for exchange in self.exchanges)
        counts = ", ".join(f"{count} {kind}" for kind, count in outcomes.items()) or "none"
        events = sum(exchange.event_count for exchange in self.exchanges)
        problems = sum(len(exchange.problems) for exchange in self.exchanges)
        rows = [Row("file", self.path)] if self.path else []
        rows += [
            Row("recorded", " · ".join(part for part in (self.source, self.recorded_at) if part) or "unknown"),
            Row("exchanges", self._exchange_counts()),
            Row("outcomes", counts, _worst(exchange.tone for exchange in self.exchanges)),
            Row("events", str(events)),
            Row("problems", str(problems) if problems else "none", Tone.BAD if problems else None),
        ]
        return tuple(rows)

    def _exchange_counts(self) -> str:
        websocket = sum(1 for exchange in self.exchanges if exchange.transport == "ws")
        connections = len(self.connections)
        routes = Counter(exchange.route for exchange in self.exchanges if not exchange.create)
        counts = (
            f"{len(self.exchanges)} ({websocket} ws, {len(self.exchanges) - websocket} http) "
            f"on {connections} WebSocket connection{'' if connections == 1 else 's'}"
        )
        if routes:
            counts += "; on other routes: " + ", ".join(f"{count} {route}" for route, count in sorted(routes.items()))
        return counts


def _worst(tones: Iterable[Tone]) -> Tone | None:
    order = (Tone.BAD, Tone.WARN, Tone.UNKNOWN, Tone.OK)
    seen = set(tones)
    return next((tone for tone in order if tone in seen), None)


def format_seconds(seconds: float) -> str:
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    return f"{seconds:.2f}".rstrip("0").rstrip(".") + " s"


def format_bytes(size: int) -> str:
    if size < 1000:
        return f"{size} B"
    if size < 1_000_000:
        return f"{size / 1000:.1f} kB"
    return f"{size / 1_000_000:.1f} MB"
