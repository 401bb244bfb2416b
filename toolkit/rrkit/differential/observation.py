"""What the fake server saw of one client turn, as attempts that two clients' runs can be compared by."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..protocol.errors import ending_error, named_delays
from ..protocol.headers import TURN_STATE_HEADER
from ..protocol.outcome import OutcomeKind
from ..protocol.request import is_compaction_request
from ..protocol.response_object import conversation_id
from ..protocol.routes import CREATE, RETRIEVE, resumed_after, route_of
from ..server.capture import Connection, Exchange

TURN_METADATA_HEADER = "x-codex-turn-metadata"
WATCHED_HEADERS = (
    "session-id",
    "thread-id",
    "x-client-request-id",
    "x-codex-window-id",
    TURN_METADATA_HEADER,
    "openai-beta",
    TURN_STATE_HEADER,
)
"""The request headers whose presence is compared (values vary per run, except the turn state)."""


@dataclass(frozen=True, slots=True)
class WaitRanges:
    """How a gap between two attempts is named: `none` (an immediate retry), `backoff` (at least the first
    backoff step, 200 ms less its 10 % jitter, and at most twice the longest step `max_retries` reaches), `named`
    (at least a delay the previous answer named: Retry-After, "try again in 1s"), `idle` (the client gave up on a
    quiet connection after its idle timeout), else `other`. Waits are judged by their lower bounds: a client on a
    busy machine may keep any of them late, only a retry sooner than its wait is not that wait. Scripts name
    delays longer than the backoff step a client would take instead."""

    idle_timeout: float = 1.0
    backoff_base: float = 0.2
    slack: float = 0.06  # the clients' own latency: reconnecting, rebuilding the request, a busy machine
    # An immediate retry still costs the client a reconnect, and more on a loaded machine: anything shorter than
    # the first backoff step can be (180 ms, 200 ms less its jitter) is no wait at all.
    none_below: float = 0.17
    # After a completed response the next request is no retry (a tool output, the request after a warmup): its gap
    # is the client's own work, which a loaded machine stretches to several times the 50 ms it takes idle (seen:
    # over 170 ms for Codex 0.171.0 with both workers busy). Under half a second of it is no wait.
    answered_none_below: float = 0.5
    max_retries: int = 5  # the larger of the budgets' retry counts: its step is the longest backoff

    connect_timeout: float | None = None  # after an unanswered upgrade: "connect timeout" (+ the wait after it)

    def classify(
        self, gap: float, *, quiet: float | None = None, named: tuple[float, ...] = (), answered: bool = False
    ) -> str:
        """`gap`: seconds from the end of the previous attempt; `quiet`: how long the client then waited on
        a connection the server kept open, before it gave up (a stall, an ignored error frame); `named`: the
        delays the previous attempt's answer named; `answered`: the previous attempt completed."""
        if answered and gap < self.answered_none_below:
            return "none"
        timeout = self.connect_timeout
        if timeout is not None and gap >= timeout - self.none_below:
            rest = self.classify(max(0.0, gap - timeout))
            if rest == "none":
                return "connect timeout"
            return f"connect timeout + {rest}" if not rest.startswith("other") else f"other({gap:.2f}s)"
        if quiet is not None and quiet >= 0.9 * self.idle_timeout:
            return "idle"
        if gap < self.none_below:
            return "none"
        if any(gap >= 0.95 * delay - self.slack for delay in named):
            return "named"
        if gap <= 2 * self.backoff_base * 2 ** (self.max_retries - 1):
            return "backoff"
        return f"other({gap:.2f}s)"


@dataclass(frozen=True, slots=True)
class Attempt:
    """One request, or one refused WebSocket upgrade, as the server saw it."""

    transport: str  # "http" or "ws"
    kind: str  # "full", "incremental", "warmup", or "upgrade" (a refused handshake)
    wait: str  # before this attempt: "first", "none", "backoff", "named", "idle", "other(...)"; "turn": a new turn
    outcome: str  # the server's outcome kind: completed, failed, refused, dropped, stalled, ...
    status: int | None = None
    headers: frozenset[str] = frozenset()
    turn_state: str | None = None
    client_metadata: frozenset[str] = frozenset()
    request_kind: str | None = None  # x-codex-turn-metadata's: "prewarm" or "turn"
    turn_id: str | None = None
    response_id: str | None = None  # the server's id for this attempt's response
    previous_response_id: str | None = None  # the response an incremental request continues from
    connection: int | None = None  # the WebSocket connection's id (None: HTTP)
    gap: float | None = field(default=None, compare=False)  # seconds since the previous attempt ended
    starting_after: int | None = None  # a resume (`kind` "resume"): the sequence number it resumed after
    last_sent: int | None = field(default=None, compare=False)  # the last sequence number the server sent on it
    target: str | None = None  # the response its path names (retrieve, cancel, delete, input items)
    conversation: str | None = None  # the conversation a create names

    def __str__(self) -> str:
        wait = "" if self.wait == "first" else f"<{self.wait}> "
        status = f" {self.status}" if self.status is not None else ""
        kind = f"{self.kind}@{self.starting_after}" if self.starting_after is not None else self.kind
        return f"{wait}{self.transport} {kind} -> {self.outcome}{status}"


@dataclass(frozen=True, slots=True)
class Observation:
    """A client's turn as the server saw it, and how the client said the turn ended."""

    attempts: tuple[Attempt, ...]
    outcome: str  # "completed" or "failed", from the client
    notes: tuple[str, ...] = field(default=(), compare=False)

    @property
    def flow(self) -> tuple[str, ...]:
        return tuple(str(attempt) for attempt in self.attempts)

    @property
    def fallback(self) -> int | None:
        """The index of the first HTTP attempt after a WebSocket one (None: no fallback)."""
        transports = [attempt.transport for attempt in self.attempts]
        return next((i for i in range(1, len(transports)) if transports[i - 1 : i + 1] == ["ws", "http"]), None)


@dataclass(frozen=True, slots=True)
class _Seen:
    start: float
    end: float
    stalled: bool
    attempt: Attempt
    connection: Connection | None = None
    named: tuple[float, ...] = ()  # the delays the server's answer to this attempt named

    def quiet_before(self, now: _Seen) -> float | None:
        """How long the client waited on this attempt's open connection after its last event, if it did."""
        if self.stalled:
            return now.start - self.start
        connection = self.connection
        if connection is None or connection is now.connection or connection.ended_at is None:
            return None
        return connection.ended_at - self.end


def _kind(exchange: Exchange) -> tuple[str, int | None]:
    """What a request was (`full`, `incremental`, `warmup`, `compaction`: a create whose input ends with a
    compaction trigger; on another route: `resume` after a sequence number, `poll`, or the route's name), and the
    sequence number a resume resumed after."""
    if exchange.route == CREATE:
        if exchange.wire_request is not None and is_compaction_request(exchange.wire_request):
            return "compaction", None
        return ("warmup" if exchange.warmup else "incremental" if exchange.incremental else "full"), None
    if exchange.route != RETRIEVE:
        return exchange.route, None
    after = resumed_after(exchange.query)
    return ("poll", None) if after is None else ("resume", after)


def _last_sent(exchange: Exchange) -> int | None:
    for sent in reversed(list(exchange.events)):
        number = sent.event.get("sequence_number")
        if isinstance(number, int) and not isinstance(number, bool):
            return number
    return None


def _exchange(exchange: Exchange, start: float, connection: Connection | None) -> _Seen:
    wire = exchange.wire_request or {}
    kind, starting_after = _kind(exchange)
    outcome = exchange.outcome.kind.value if exchange.outcome else "running"
    status = exchange.response_status if exchange.response_status not in (None, 200) else None
    headers = exchange.request_headers
    metadata = wire.get("client_metadata")
    metadata = metadata if isinstance(metadata, dict) else {}
    # over WebSocket the headers are the upgrade's: the frame's client_metadata says which request this is
    turn = _turn_metadata(metadata.get(TURN_METADATA_HEADER) or headers.get(TURN_METADATA_HEADER))
    attempt = Attempt(
        exchange.transport,
        kind,
        "first",
        outcome,
        status,
        frozenset(name for name in WATCHED_HEADERS if name in headers),
        headers.get(TURN_STATE_HEADER),
        frozenset(metadata),
        turn.get("request_kind"),
        turn.get("turn_id"),
        exchange.response_id,
        str(wire["previous_response_id"]) if wire.get("previous_response_id") else None,
        exchange.connection_id,
        starting_after=starting_after,
        last_sent=_last_sent(exchange),
        target=route_of(exchange.method, exchange.path).params.get("response_id"),
        conversation=conversation_id(wire.get("conversation")) if exchange.route == CREATE else None,
    )
    end = exchange.started_at + (exchange.events[-1].at if exchange.events else 0.0)
    stalled = exchange.outcome is not None and exchange.outcome.kind is OutcomeKind.STALLED
    return _Seen(start, end, stalled, attempt, connection, _named(exchange))


def _named(exchange: Exchange) -> tuple[float, ...]:
    """The delays the answer named: in a refusal's headers and body, or in the error event or frame (with its
    own `headers`) or `response.failed` that ended the stream."""
    headers = dict(exchange.response_headers)
    error: Any = {}
    if exchange.response_body:
        with contextlib.suppress(ValueError):
            body = json.loads(exchange.response_body)
            error = body.get("error") if isinstance(body, dict) else {}
    ending = exchange.events.last_ending()
    if ending is not None:
        error = ending_error(ending.event)
        frame_headers = ending.event.get("headers")
        if isinstance(frame_headers, dict):
            headers.update({str(key): str(value) for key, value in frame_headers.items()})
    message = error.get("message") if isinstance(error, dict) else None
    return named_delays(headers, message if isinstance(message, str) else None)


def _turn_metadata(value: object) -> dict[str, str]:
    try:
        parsed = json.loads(value) if isinstance(value, str) else value
    except ValueError:
        return {}
    if not isinstance(parsed, dict):
        return {}
    return {key: str(parsed[key]) for key in ("request_kind", "turn_id") if parsed.get(key) is not None}


def _refused(connection: Connection) -> _Seen:
    headers = connection.handshake_headers
    turn = _turn_metadata(headers.get(TURN_METADATA_HEADER))
    attempt = Attempt(
        "ws",
        "upgrade",
        "first",
        "refused",
        connection.status,
        frozenset(name for name in WATCHED_HEADERS if name in headers),
        headers.get(TURN_STATE_HEADER),
        request_kind=turn.get("request_kind"),
        turn_id=turn.get("turn_id"),
        connection=connection.id,
    )
    named = named_delays(connection.response_headers, None)
    return _Seen(connection.started_at, connection.started_at, False, attempt, named=named)


def _unanswered(connection: Connection) -> _Seen:
    turn = _turn_metadata(connection.handshake_headers.get(TURN_METADATA_HEADER))
    attempt = Attempt(
        "ws",
        "upgrade",
        "first",
        "unanswered",
        headers=frozenset(name for name in WATCHED_HEADERS if name in connection.handshake_headers),
        request_kind=turn.get("request_kind"),
        turn_id=turn.get("turn_id"),
        connection=connection.id,
    )
    return _Seen(connection.started_at, connection.started_at, False, attempt)


def _seen(exchanges: Sequence[Exchange], connections: Sequence[Connection], *, unanswered: bool) -> list[_Seen]:
    """Every attempt the server saw (requests, refused upgrades, unanswered ones if asked), by when it began."""
    by_id = {connection.id: connection for connection in connections}
    seen: list[_Seen] = []
    for exchange in exchanges:
        connection = by_id.get(exchange.connection_id) if exchange.connection_id is not None else None
        first_on_socket = connection is not None and connection.exchanges[:1] == [exchange]
        start = connection.started_at if first_on_socket and connection is not None else exchange.started_at
        seen.append(_exchange(exchange, start, connection))
    seen += [_refused(c) for c in connections if c.status is not None and c.status != 101]
    if unanswered:
        seen += [_unanswered(c) for c in connections if c.status is None and not c.exchanges]
    seen.sort(key=lambda item: item.start)
    return seen


def observe(
    exchanges: Sequence[Exchange],
    connections: Sequence[Connection],
    outcome: str,
    ranges: WaitRanges,
    *,
    unanswered: bool = False,
) -> Observation:
    """The attempts in arrival order, each with the kind of wait before it; a request that opened its socket
    is timed from the upgrade. `unanswered`: also the upgrades the server had not answered (a scripted delay
    the client gave up on), timed from their start."""
    seen = _seen(exchanges, connections, unanswered=unanswered)
    attempts: list[Attempt] = []
    for before, now in zip([None, *seen], seen, strict=False):
        wait, gap = "first", None
        if before is not None:
            gap = max(0.0, now.start - before.end)
            answered = before.attempt.outcome == "completed"
            wait = ranges.classify(gap, quiet=before.quiet_before(now), named=before.named, answered=answered)
        attempts.append(replace(now.attempt, wait=wait, gap=gap))
    return Observation(tuple(attempts), outcome)
