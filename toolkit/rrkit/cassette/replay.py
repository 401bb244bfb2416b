"""Replaying a cassette: the fake server answers each request with the recorded events of the matching exchange."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..protocol.headers import TURN_STATE_HEADER
from ..protocol.ids import IdGenerator
from ..protocol.outcome import OutcomeKind
from ..script.models import Fault, Handshake, Reject
from ..script.plan import RecordedReply
from ..script.select import NoMatch, RequestView
from .format import Cassette, RecordedExchange
from .match import MatchConfig, MatchResult, compare

_REPLAYED_HEADERS = (TURN_STATE_HEADER, "openai-model", "retry-after", "retry-after-ms", "x-request-id")


def recorded_reply(
    exchange: RecordedExchange, close: str = "tcp", close_code: int = 1011, time_scale: float = 0.0
) -> RecordedReply:
    """The reply that plays an exchange back, recorded faults (drops, stalls, refusals) included."""
    outcome = exchange.outcome
    headers = {k: v for k, v in exchange.response_headers.items() if k.lower() in _REPLAYED_HEADERS}
    reject = None
    fault = Fault()
    if outcome is not None and outcome.kind is OutcomeKind.REFUSED:
        reject = Reject(
            status=outcome.status or exchange.response_status or 500,
            code=outcome.code,
            message=outcome.message,
            headers=headers,
        )
    elif outcome is not None and outcome.kind in (OutcomeKind.DROPPED, OutcomeKind.DISCONNECTED):
        fault = Fault(
            drop_after=len(exchange.events), close="frame" if close == "frame" else "tcp", close_code=close_code
        )
    elif outcome is not None and outcome.kind is OutcomeKind.STALLED:
        fault = Fault(stall_after=len(exchange.events))
    return RecordedReply(
        events=[(recorded.at, recorded.raw) for recorded in exchange.events],
        fault=fault,
        reject=reject,
        turn_state=headers.get(TURN_STATE_HEADER),
        headers={k: v for k, v in headers.items() if k != TURN_STATE_HEADER},
        time_scale=time_scale,
    )


@dataclass
class CassetteSource:
    """A reply source over a cassette: each recorded exchange answers one matching request, in order."""

    cassette: Cassette
    match: MatchConfig = field(default_factory=MatchConfig)
    time_scale: float = 0.0
    allow_repeats: bool = False
    ids: IdGenerator = field(default_factory=IdGenerator)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._used: set[int] = set()
        self._handshakes = itertools.count()
        self._renames: dict[tuple[int | None, str], str] = {}

    def reset(self) -> None:
        with self._lock:
            self._used.clear()
            self._handshakes = itertools.count()
            self._renames.clear()

    def _candidates(self) -> list[RecordedExchange]:
        return [e for e in self.cassette.exchanges if e.wire_request is not None]

    def _request_of(self, exchange: RecordedExchange) -> Mapping[str, object] | None:
        return exchange.logical_request if self.match.on == "logical" else exchange.wire_request

    async def select(self, request: RequestView) -> RecordedReply | NoMatch:
        incoming = request.logical if self.match.on == "logical" else request.wire
        with self._lock:
            results: list[tuple[RecordedExchange, MatchResult, bool]] = []
            for exchange in self._candidates():
                result = compare(self._request_of(exchange), incoming, self.match)
                available = self.allow_repeats or exchange.id not in self._used
                if result.ok and available:
                    self._used.add(exchange.id)
                    return self._reply(exchange, request.connection_id)
                results.append((exchange, result, available))
        return self._no_match(request, results)

    def _reply(self, exchange: RecordedExchange, connection_id: int | None) -> RecordedReply:
        connection = self.cassette.connection(exchange.connection)
        by_frame = connection is not None and connection.closed_by == "server" and connection.close_code
        close, code = ("frame", connection.close_code or 1011) if connection and by_frame else ("tcp", 1011)
        reply = recorded_reply(exchange, close, code, self.time_scale)

        def rename(recorded_id: str) -> str:
            key = (connection_id, recorded_id)
            if key not in self._renames:
                self._renames[key] = self.ids.new("response")
            return self._renames[key]

        return RecordedReply(**{**reply.__dict__, "rename": rename})

    def _no_match(self, request: RequestView, results: list[tuple[RecordedExchange, MatchResult, bool]]) -> NoMatch:
        ranked = sorted(results, key=lambda r: (r[2], len(r[1].passed) - len(r[1].failed)), reverse=True)
        lines = []
        for exchange, result, available in ranked[:1]:
            state = "" if available else " (already replayed)"
            lines.append(
                f"recorded exchange {exchange.id}{state}: matchers passed: {', '.join(result.passed) or 'none'}; "
                f"failed: {', '.join(result.failed) or 'none'}"
            )
            for name in result.failed:
                lines += [f"  {line}" for line in result.diffs.get(name, [])[:8]]
        for exchange, result, _available in ranked[1:3]:
            lines.append(f"recorded exchange {exchange.id}: failed: {', '.join(result.failed) or 'none (used up)'}")
        hint = "To record it, run with record mode `new_episodes` (or `all`) and an upstream."
        return NoMatch(request.describe(), lines, what="recorded exchange", hint=hint)

    async def select_handshake(
        self, headers: Mapping[str, str], *, connection_id: int | None = None
    ) -> Handshake | None:
        with self._lock:
            index = next(self._handshakes)
        if index >= len(self.cassette.connections):
            return None
        recorded = self.cassette.connections[index].handshake
        if recorded.status is not None and recorded.status != 101:
            return Handshake(refuse=recorded.status, refuse_headers=recorded.response_headers)
        return Handshake(turn_state=recorded.response_headers.get(TURN_STATE_HEADER))

    async def connection_closed(self, connection_id: int) -> None:
        """Nothing is held per connection."""

    def unused(self) -> list[str]:
        with self._lock:
            return [f"recorded exchange {e.id}" for e in self._candidates() if e.id not in self._used]
