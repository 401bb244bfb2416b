"""Making cassettes from what was captured: the fake server's (or the proxy's) connections and exchanges, or
the reference client's trace."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from ..protocol.outcome import OutcomeKind
from ..server.capture import Connection, Exchange
from .format import Cassette, RecordedBody, RecordedConnection, RecordedEvent, RecordedExchange, RecordedHandshake
from .redact import Redactor

if TYPE_CHECKING:
    from ..client.trace import Trace, TraceEntry


def recorded_exchange(exchange: Exchange, origin: float) -> RecordedExchange:
    body = exchange.response_body
    content_type = next((v for k, v in exchange.response_headers.items() if k.lower() == "content-type"), "")
    return RecordedExchange(
        id=exchange.id,
        transport="ws" if exchange.transport == "ws" else "http",
        connection=exchange.connection_id,
        started_at=round(max(0.0, exchange.started_at - origin), 6),
        query=exchange.query or None,
        request_headers=dict(exchange.request_headers) if exchange.transport == "http" else {},
        wire_request=exchange.wire_request,
        raw_body=exchange.raw_body,
        logical_request=exchange.logical_request,
        response_status=exchange.response_status,
        response_headers=dict(exchange.response_headers),
        response_id=exchange.response_id,
        response_body=RecordedBody.of(body, content_type) if body is not None else None,
        events=[RecordedEvent.of(round(sent.at, 6), sent.event) for sent in exchange.events],
        outcome=exchange.outcome,
    )


def recorded_connection(connection: Connection) -> RecordedConnection:
    return RecordedConnection(
        id=connection.id,
        handshake=RecordedHandshake(
            query=connection.query or None,
            request_headers=dict(connection.handshake_headers),
            status=connection.status,
            response_headers=dict(connection.response_headers),
        ),
        closed_by=connection.closed_by,
        close_code=connection.close_code,
    )


def cassette_from_capture(
    exchanges: Sequence[Exchange],
    connections: Sequence[Connection],
    *,
    name: str = "",
    source: str = "fake-server",
    redactor: Redactor | None = None,
) -> Cassette:
    """A redacted cassette of captured traffic (pass `Redactor(headers=())` only to keep secrets on purpose)."""
    origin = min((e.started_at for e in exchanges), default=0.0)
    origin = min([origin, *(c.started_at for c in connections)]) if connections else origin
    cassette = Cassette(
        name=name,
        source=source,
        recorded_at=datetime.now(UTC).isoformat(timespec="seconds"),
        connections=[recorded_connection(connection) for connection in connections],
        exchanges=[recorded_exchange(exchange, origin) for exchange in exchanges],
    )
    return (redactor or Redactor()).apply(cassette)


def _entry_exchange(entry: TraceEntry, id: int, origin: float) -> RecordedExchange:
    outcome = entry.outcome
    refused = outcome is not None and outcome.kind is OutcomeKind.REFUSED
    http = entry.transport == "http"
    status = outcome.status if outcome is not None and refused else (200 if http and outcome is not None else None)
    start = entry.sent_at if entry.sent_at is not None else entry.started_at
    return RecordedExchange(
        id=id,
        transport=entry.transport,
        connection=None if http else entry.connection,
        started_at=round(max(0.0, start - origin), 6),
        request_headers=dict(entry.headers) if http else {},
        wire_request=entry.wire,
        logical_request=entry.logical,
        response_status=status,
        response_headers=dict(entry.response_headers) if http else {},
        response_id=entry.response_id,
        events=[RecordedEvent.of(round(received.at, 6), received.event) for received in entry.events],
        outcome=outcome,
    )


def cassette_from_trace(trace: Trace, *, name: str, redactor: Redactor | None = None) -> Cassette:
    """A redacted cassette of what the reference client sent and received (source "client").

    One exchange per request that left the client (an attempt that never sent one has none); one connection
    per WebSocket handshake the client made, numbered with the client's serials, a refused upgrade included
    with its status. Timings are the client's: when each request went out, and each event's arrival after it.
    """
    origin = min((entry.started_at for entry in trace.entries), default=0.0)
    connections: dict[int, RecordedConnection] = {}
    exchanges: list[RecordedExchange] = []
    for entry in trace.entries:
        serial = entry.connection
        if entry.transport == "ws" and serial is not None and entry.handshake_status is not None:
            connections.setdefault(
                serial,
                RecordedConnection(
                    id=serial,
                    handshake=RecordedHandshake(
                        request_headers=dict(entry.headers),
                        status=entry.handshake_status,
                        response_headers=dict(entry.response_headers),
                    ),
                ),
            )
        if entry.sent:
            exchanges.append(_entry_exchange(entry, len(exchanges), origin))
    cassette = Cassette(
        name=name,
        source="client",
        recorded_at=datetime.now(UTC).isoformat(timespec="seconds"),
        connections=list(connections.values()),
        exchanges=exchanges,
    )
    return (redactor or Redactor()).apply(cassette)
