"""The client's trace: every request in both views (logical and wire), with transport, attempt and outcome."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from ..protocol.outcome import Outcome, OutcomeKind
from ..protocol.vocabulary import Transport


@dataclass(frozen=True, slots=True)
class ReceivedEvent:
    """One event as the client decoded it (the dict it mapped), `at` seconds after its request went out."""

    at: float
    event: dict[str, Any]


@dataclass
class TraceEntry:
    """One attempt to send one request.

    `logical` is what the model is meant to see; `wire` is what was sent (a WebSocket delta may carry
    only `previous_response_id` and an input suffix, possibly empty). `wire` is None when the request
    never left the client (e.g. the WebSocket upgrade was refused).
    """

    index: int
    turn: int
    sample: int
    attempt: int
    transport: Transport
    warmup: bool
    logical: dict[str, Any]
    wire: dict[str, Any] | None = None
    incremental: bool = False
    decision: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    """Request headers (HTTP), or the headers of the handshake this attempt opened (WebSocket)."""
    connection: int | None = None
    """The client's serial number of the WebSocket connection that carried it (or whose upgrade was refused)."""
    handshake_status: int | None = None
    """WebSocket: the status of the handshake this attempt made (101, or the refusal's); None if it made none."""
    response_headers: dict[str, str] = field(default_factory=dict)
    """HTTP response headers of a stream, or the 101 response headers of the handshake this attempt made."""
    events_received: int = 0
    events: list[ReceivedEvent] = field(default_factory=list)
    """Every event received, in order, with its offset from `sent_at`."""
    outcome: Outcome | None = None
    error: str | None = None
    error_type: str | None = None
    response_id: str | None = None
    resumed_after: list[int] = field(default_factory=list)
    """A background response's stream resumed after these sequence numbers (one per break), without a new POST."""
    retry_delay: float | None = None
    """Seconds waited after this attempt before the next one (None: no retry followed)."""
    retry_level: str | None = None
    """Which budget that retry spent: "request" (an HTTP 5xx's inner budget) or "stream"."""
    started_at: float = 0.0
    sent_at: float | None = None
    """When the request went out (the client's clock); None if it never did."""
    ended_at: float | None = None

    def receive(self, event: dict[str, Any], now: float) -> None:
        """Count and keep one received event (the decoded dict itself: no copy)."""
        self.events_received += 1
        start = self.sent_at if self.sent_at is not None else self.started_at
        self.events.append(ReceivedEvent(max(0.0, now - start), event))

    @property
    def sent(self) -> bool:
        return self.wire is not None

    @property
    def full(self) -> bool:
        return self.sent and not self.incremental and not self.warmup

    def describe(self) -> str:
        kind = "warmup" if self.warmup else "incremental" if self.incremental else "full"
        outcome = self.outcome.kind.value if self.outcome else "running"
        return (
            f"turn {self.turn} sample {self.sample} attempt {self.attempt} {self.transport} {kind}: "
            f"{len(self.logical.get('input') or [])} logical input items, "
            f"{len((self.wire or {}).get('input') or [])} on the wire -> {outcome}"
        )


@dataclass(frozen=True, slots=True)
class Fallback:
    """The session gave up WebSockets and replays over HTTP from now on."""

    turn: int
    reason: str


@dataclass
class Trace:
    entries: list[TraceEntry] = field(default_factory=list)
    fallbacks: list[Fallback] = field(default_factory=list)

    def add(self, entry: TraceEntry) -> TraceEntry:
        self.entries.append(entry)
        return entry

    def next_index(self) -> int:
        return len(self.entries)

    @property
    def sent(self) -> list[TraceEntry]:
        """The requests that reached the server, in order (one server exchange each)."""
        return [entry for entry in self.entries if entry.sent]

    @property
    def retries(self) -> int:
        return sum(1 for entry in self.entries if entry.retry_delay is not None)

    def count(self, kind: Literal["full", "incremental", "warmup"]) -> int:
        if kind == "warmup":
            return sum(1 for entry in self.sent if entry.warmup)
        if kind == "incremental":
            return sum(1 for entry in self.sent if entry.incremental and not entry.warmup)
        return sum(1 for entry in self.sent if entry.full)

    def outcomes(self) -> list[OutcomeKind | None]:
        return [entry.outcome.kind if entry.outcome else None for entry in self.entries]
