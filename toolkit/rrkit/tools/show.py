"""`rrkit show`: a cassette built into its timeline (rrkit.tools.show_model: connections, then exchanges in
order), without any I/O.

The renderers (`show_terminal` for rich, `show_html` for one self-contained page) only lay out the model's text.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import orjson

from ..cassette.format import Cassette, RecordedConnection, RecordedExchange
from ..protocol import events as ev
from ..protocol.errors import Classification, classify_failure, classify_http_error
from ..protocol.headers import TURN_STATE_HEADER
from ..protocol.outcome import Outcome, OutcomeKind
from ..protocol.request import is_warmup
from ..protocol.steer import answer_problems, is_steer
from .show_model import ConnectionView, EventRun, ExchangeView, OutcomeView, RequestSize, Timeline, Tone
from .stream_rules import check_stream

TONE_OF_KIND: dict[OutcomeKind, Tone] = {
    OutcomeKind.COMPLETED: Tone.OK,
    OutcomeKind.FAILED: Tone.WARN,
    OutcomeKind.INCOMPLETE: Tone.WARN,
    OutcomeKind.ERRORED: Tone.WARN,
    OutcomeKind.DISCONNECTED: Tone.WARN,
    OutcomeKind.ANSWERED: Tone.WARN,
    OutcomeKind.DROPPED: Tone.BAD,
    OutcomeKind.STALLED: Tone.BAD,
    OutcomeKind.REFUSED: Tone.BAD,
}
CUT_KINDS = frozenset({OutcomeKind.DROPPED, OutcomeKind.STALLED, OutcomeKind.DISCONNECTED})
"""Outcomes of a stream that was cut: its events are checked as a prefix (no terminal event required)."""


def build_timeline(cassette: Cassette, *, path: str | None = None) -> Timeline:
    """The timeline of a cassette: its connections, then its exchanges in cassette order."""
    return Timeline(
        name=cassette.name,
        path=path,
        source=cassette.source,
        recorded_at=cassette.recorded_at,
        connections=tuple(_connection(connection, cassette) for connection in cassette.connections),
        exchanges=tuple(_exchange(exchange) for exchange in cassette.exchanges),
    )


def _connection(connection: RecordedConnection, cassette: Cassette) -> ConnectionView:
    handshake = connection.handshake
    status = handshake.status
    if (status is not None and status != 101) or connection.closed_by == "tcp":
        tone = Tone.BAD
    elif connection.close_code not in (None, 1000, 1005):
        tone = Tone.WARN
    else:
        tone = Tone.OK
    return ConnectionView(
        id=connection.id,
        status=status,
        turn_state=_header(handshake.response_headers, TURN_STATE_HEADER),
        closed_by=connection.closed_by,
        close_code=connection.close_code,
        exchanges=tuple(exchange.id for exchange in cassette.exchanges if exchange.connection == connection.id),
        tone=tone,
    )


def _exchange(exchange: RecordedExchange) -> ExchangeView:
    entries = [recorded.event for recorded in exchange.events]  # parsed once, for both the runs and the checker
    stream = [event for event in entries if event.get("type") not in ev.SIDE_CHANNELS]
    log = tuple((recorded.at, str(event.get("type"))) for recorded, event in zip(exchange.events, entries, strict=True))
    first = next((at for at, kind in log if kind not in ev.SIDE_CHANNELS), None)
    wire = exchange.wire_request or {}
    body = exchange.response_body
    return ExchangeView(
        id=exchange.id,
        transport=exchange.transport,
        connection=exchange.connection,
        method=exchange.method,
        route=exchange.route,
        request_line=exchange.request_line,
        incremental=exchange.incremental,
        warmup=is_warmup(wire),
        model=_text((exchange.logical_request or wire).get("model")),
        previous_response_id=_text(wire.get("previous_response_id")),
        response_id=exchange.response_id,
        wire=_size(exchange.wire_request),
        logical=_size(exchange.logical_request),
        raw_body_bytes=_bytes(exchange.raw_body),
        steer=is_steer(exchange.raw_body),
        runs=tuple(compress(str(event.get("type")) for event in stream)),
        event_count=len(stream),
        keepalives=len(entries) - len(stream),
        log=log,
        started_at=exchange.started_at,
        duration=log[-1][0] if log else None,
        first_event=first,
        outcome=_outcome(exchange),
        response_status=exchange.response_status,
        body_content_type=body.content_type if body is not None else None,
        body_bytes=_bytes(body.content if body is not None else None),
        turn_state_issued=_header(exchange.response_headers, TURN_STATE_HEADER),
        turn_state_sent=_header(exchange.request_headers, TURN_STATE_HEADER),
        problems=tuple(_problems(exchange, stream)),
    )


def _bytes(content: str | bytes | None) -> int | None:
    return len(content.encode() if isinstance(content, str) else content) if content is not None else None


def compress(types: Iterable[str]) -> list[EventRun]:
    """Consecutive events of one type as one run: created, in_progress, 12 x output_text.delta, ..."""
    runs: list[EventRun] = []
    for kind in types:
        if runs and runs[-1].type == kind:
            runs[-1] = EventRun(kind, runs[-1].count + 1)
        else:
            runs.append(EventRun(kind, 1))
    return runs


def _problems(exchange: RecordedExchange, stream: Sequence[dict[str, Any]]) -> list[str]:
    if exchange.answers_frame:
        return [
            f"event {at}: {why}" if at is not None else why for at, why in answer_problems(exchange.raw_body, stream)
        ]
    if not stream:
        return []  # a refusal or a whole body: no stream to check
    outcome = exchange.outcome
    complete = outcome is None or outcome.kind not in CUT_KINDS
    return [str(violation) for violation in check_stream(exchange, stream, complete=complete)]


def _outcome(exchange: RecordedExchange) -> OutcomeView:
    outcome = exchange.outcome
    if outcome is None:
        return OutcomeView(None, Tone.UNKNOWN)
    tone = TONE_OF_KIND.get(outcome.kind, Tone.UNKNOWN)
    if _answered_as_asked(exchange, outcome):
        tone = Tone.OK
    return OutcomeView(outcome, tone, _retry(exchange, outcome))


def _answered_as_asked(exchange: RecordedExchange, outcome: Outcome) -> bool:
    """A success that states no ending: a 2xx answer on another route than the create (a page of items, a deleted
    object, a model), or a background response answered while still queued or in progress."""
    success = outcome.kind is OutcomeKind.ANSWERED and outcome.status is not None and 200 <= outcome.status < 300
    background = (exchange.wire_request or {}).get("background") is True
    return success and (not exchange.is_create or background)


def _retry(exchange: RecordedExchange, outcome: Outcome) -> Classification | None:
    """What a client should do about a failure or a refusal, by the error catalogue (of the create: how a client
    treats an error on another route is its own)."""
    if not exchange.is_create:
        return None
    if outcome.kind is OutcomeKind.FAILED:
        return classify_failure(outcome.code, outcome.message)
    if outcome.kind is OutcomeKind.REFUSED and outcome.status is not None:
        error = {"code": outcome.code, "message": outcome.message}
        return classify_http_error(outcome.status, {"error": error}, exchange.response_headers)
    return None


def _size(request: Mapping[str, Any] | None) -> RequestSize:
    if request is None:
        return RequestSize(None, None)
    value = request.get("input")
    items = len(value) if isinstance(value, list) else 1 if isinstance(value, str) else None
    return RequestSize(items, len(orjson.dumps(request)))


def _header(headers: Mapping[str, str], name: str) -> str | None:
    return next((value for key, value in headers.items() if key.lower() == name), None)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None
