"""Making cassettes from what was captured: the fake server's (or the proxy's) connections and exchanges, or
the reference client's trace."""

from __future__ import annotations

import json
import warnings
from array import array
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, TypeVar

import orjson

from ..protocol.events import response_id_of
from ..protocol.outcome import OutcomeKind
from ..protocol.routes import CREATE
from ..server.capture import Connection, Exchange, SentEvents
from .format import (
    Cassette,
    CassetteWarning,
    RecordedBody,
    RecordedConnection,
    RecordedEvent,
    RecordedEvents,
    RecordedExchange,
    RecordedHandshake,
    dumps_compact,
    escape_unencodable,
)
from .presets import detect_presets, presets_named
from .redact import Redactor

if TYPE_CHECKING:
    from ..client.trace import Trace, TraceEntry

_V = TypeVar("_V")
TOO_DEEP = "<not recorded: nested too deeply to encode>"


def encodable(value: _V, exchange_id: int, field: str) -> _V:
    """`value` as a cassette can hold it: what no JSON file can hold (a lone surrogate, NaN) escaped, with a
    CassetteWarning naming the exchange and the field; everything else (integers of any size) as it is."""
    try:
        json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8")
        return value
    except ValueError:  # UnicodeEncodeError included
        escaped, places = escape_unencodable(value, field)
    except RecursionError:
        escaped, places = TOO_DEEP, [field]
    shown = ", ".join(places[:5]) + (f" and {len(places) - 5} more" if len(places) > 5 else "")
    warnings.warn(
        f"exchange {exchange_id}: {shown}: a value no JSON file can hold (a lone surrogate, NaN or infinity, or "
        "nesting too deep) was recorded escaped",
        CassetteWarning,
        stacklevel=2,
    )
    result: _V = escaped
    return result


EVENTS_PER_SLICE = 16
"""Events made into a cassette's between two calls of `between` (some microseconds of work: `between` decides
when to give way)."""


def _events(exchange: Exchange, between: Callable[[], None] | None = None) -> RecordedEvents:
    """An exchange's events as a cassette holds them: each one's compact JSON text at its offset (to the
    microsecond), what no JSON file can hold escaped (`encodable`); `between` is called after each slice of
    EVENTS_PER_SLICE events."""
    ats: array[float] = array("d")
    texts: list[bytes] = []
    sent = exchange.events  # a capture's SentEvents, or any sequence of SentEvent given in their place
    timed = sent.timed() if isinstance(sent, SentEvents) else ((one.at, one.event) for one in sent)
    for index, (at, event) in enumerate(timed):
        if between is not None and index and not index % EVENTS_PER_SLICE:
            between()
        try:
            text = orjson.dumps(event)
        except TypeError:  # orjson cannot: a lone surrogate, or an integer beyond 64 bits (kept exact)
            escaped = encodable(event, exchange.id, f"events[{index}]")
            text = dumps_compact(escaped).encode("utf-8", "surrogatepass")
        ats.append(round(at, 6))
        texts.append(text)
    return RecordedEvents(ats, texts)


def _response_id(exchange: Exchange) -> str | None:
    """The response an exchange answered with: the one it noted, or the one a stream on another route than the
    create names (a resumed stream: the server notes none)."""
    if exchange.response_id or exchange.route == CREATE or not exchange.events:
        return exchange.response_id
    return response_id_of(sent.event for sent in exchange.events)


def recorded_exchange(exchange: Exchange, origin: float, between: Callable[[], None] | None = None) -> RecordedExchange:
    """The exchange as a cassette holds it, its start `origin` seconds on; `between` is called between slices of
    its events (a caller on another thread than the server's gives the server its turn)."""
    body = exchange.response_body
    content_type = next((v for k, v in exchange.response_headers.items() if k.lower() == "content-type"), "")
    number = exchange.id
    return RecordedExchange(
        id=exchange.id,
        transport="ws" if exchange.transport == "ws" else "http",
        connection=exchange.connection_id,
        started_at=round(max(0.0, exchange.started_at - origin), 6),
        method=exchange.method,
        path=encodable(exchange.path, number, "path"),
        route=exchange.route,
        query=encodable(exchange.query, number, "query") or None,
        request_headers=encodable(dict(exchange.request_headers), number, "request_headers")
        if exchange.transport == "http"
        else {},
        wire_request=encodable(exchange.wire_request, number, "wire_request"),
        raw_body=encodable(exchange.raw_body, number, "raw_body"),
        logical_request=encodable(exchange.logical_request, number, "logical_request"),
        successor_of=exchange.successor_of,
        response_status=exchange.response_status,
        response_headers=encodable(dict(exchange.response_headers), number, "response_headers"),
        response_id=encodable(_response_id(exchange), number, "response_id") or None,
        response_body=RecordedBody.of(body, content_type) if body is not None else None,
        events=_events(exchange, between),
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
    presets: Sequence[str] | None = None,
) -> Cassette:
    """A redacted cassette of captured traffic (pass `Redactor(headers=())` only to keep secrets on purpose). It
    stores the matching presets its replays apply: `presets`, else those of the clients that sent the requests
    (`presets.detect_presets`)."""
    origin = min((e.started_at for e in exchanges), default=0.0)
    origin = min([origin, *(c.started_at for c in connections)]) if connections else origin
    if presets is None:
        sent = [*(e.request_headers for e in exchanges), *(c.handshake_headers for c in connections)]
        presets = detect_presets(sent)
    cassette = Cassette(
        name=name,
        source=source,
        recorded_at=datetime.now(UTC).isoformat(timespec="seconds"),
        match_presets=[preset.name for preset in presets_named(presets)],
        connections=[recorded_connection(connection) for connection in connections],
        exchanges=[recorded_exchange(exchange, origin) for exchange in exchanges],
    )
    return (redactor or Redactor()).apply(cassette)


def append(base: Cassette, extra: Cassette) -> Cassette:
    """`base` followed by `extra`, with `extra`'s exchanges and connections numbered on after `base`'s."""
    merged = base.model_copy(deep=True)
    first_connection = max((c.id for c in base.connections), default=-1) + 1
    renumbered = {c.id: first_connection + index for index, c in enumerate(extra.connections)}
    merged.connections += [c.model_copy(update={"id": renumbered[c.id]}) for c in extra.connections]
    first_exchange = max((e.id for e in base.exchanges), default=-1) + 1
    merged.exchanges += [
        e.model_copy(
            update={
                "id": first_exchange + index,
                "connection": None if e.connection is None else renumbered.get(e.connection),
            }
        )
        for index, e in enumerate(extra.exchanges)
    ]
    merged.recorded_at = extra.recorded_at
    merged.match_presets = list(dict.fromkeys([*base.match_presets, *extra.match_presets]))
    return merged


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
