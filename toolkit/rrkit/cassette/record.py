"""Making cassettes from what was captured: the fake server's (or the proxy's) connections and exchanges."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from ..server.capture import Connection, Exchange
from .format import Cassette, Handshake, RecordedConnection, RecordedEvent, RecordedExchange, RecordedOutcome
from .redact import Redactor


def recorded_exchange(exchange: Exchange, origin: float) -> RecordedExchange:
    return RecordedExchange(
        id=exchange.id,
        transport="ws" if exchange.transport == "ws" else "http",
        connection=exchange.connection_id,
        started_at=round(max(0.0, exchange.started_at - origin), 6),
        request_headers=dict(exchange.request_headers) if exchange.transport == "http" else {},
        wire_request=exchange.wire_request,
        raw_body=exchange.raw_body,
        logical_request=exchange.logical_request,
        response_status=exchange.response_status,
        response_headers=dict(exchange.response_headers),
        response_id=exchange.response_id,
        events=[RecordedEvent.of(round(sent.at, 6), sent.event) for sent in exchange.events],
        outcome=RecordedOutcome.of(exchange.outcome) if exchange.outcome is not None else None,
    )


def recorded_connection(connection: Connection) -> RecordedConnection:
    return RecordedConnection(
        id=connection.id,
        handshake=Handshake(
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
