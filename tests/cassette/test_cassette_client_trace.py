"""Recording from the reference client's trace: the client's cassette agrees with the server's capture."""

from __future__ import annotations

from typing import Any

import pytest

from rrkit.cassette import Cassette, cassette_from_capture, cassette_from_trace, dump_cassette, parse_cassette
from rrkit.cassette.normalize import normalize_cassette
from rrkit.cassette.redact import MARKER
from rrkit.client import ClientOptions, Conversation, ModelClient, RetryPolicy
from rrkit.client.retry import RecordingSleep
from rrkit.protocol import OutcomeKind
from rrkit.script import Script, refuse_upgrade, reply, text

from ..errortrap import Serve
from .client_session import PROMPT, SESSION_ID, request_kinds, run_session, session_script


def views(cassette: Cassette) -> list[dict[str, Any]]:
    """What both recorders must agree on, per exchange."""
    return [
        {
            "transport": exchange.transport,
            "wire": exchange.wire_request,
            "logical": exchange.logical_request,
            "events": exchange.event_types,
            "outcome": exchange.outcome.kind if exchange.outcome else None,
        }
        for exchange in normalize_cassette(cassette).exchanges
    ]


@pytest.mark.parametrize("transport", ["ws", "http"])
async def test_client_trace_cassette_agrees_with_server_capture_on_every_exchange(serve: Serve, transport: str) -> None:
    async with serve.running(session_script()) as server:
        trace = await run_session(server.http_url, transport)
        await server.settle_async()
        from_server = cassette_from_capture(server.exchanges, server.connections, name="session")
    from_client = cassette_from_trace(trace, name="session")
    assert from_client.source == "client"
    kinds = [exchange.outcome.kind if exchange.outcome else None for exchange in from_client.exchanges]
    dropped = kinds.index(OutcomeKind.DROPPED)
    assert kinds[dropped + 1] == OutcomeKind.COMPLETED and kinds.count(OutcomeKind.COMPLETED) == len(kinds) - 1
    if transport == "ws":
        assert request_kinds(trace)[:3] == ["ws warmup", "ws incremental", "ws incremental"]
        assert "ws full" in request_kinds(trace)[dropped + 1 :]  # the retry, on a new socket
    assert views(from_client) == views(from_server)


async def test_client_trace_cassette_keeps_events_with_offsets_connections_and_redacted_headers(serve: Serve) -> None:
    async with serve.running(session_script()) as server:
        trace = await run_session(server.http_url, "ws")
    cassette = cassette_from_trace(trace, name="session")
    assert [c.id for c in cassette.connections] == [1, 2]  # the client's serials
    assert {c.handshake.status for c in cassette.connections} == {101}
    headers = cassette.connections[0].handshake.request_headers
    assert headers["authorization"] == MARKER and headers["session-id"] == SESSION_ID
    assert [exchange.connection for exchange in cassette.exchanges] == [entry.connection for entry in trace.sent]
    for exchange, entry in zip(cassette.exchanges, trace.sent, strict=True):
        assert [recorded.event for recorded in exchange.events] == [received.event for received in entry.events]
        offsets = [recorded.at for recorded in exchange.events]
        assert offsets == sorted(offsets) and all(at >= 0 for at in offsets)
        assert exchange.request_headers == {}  # WebSocket requests carry no headers of their own
    assert "sk-rrkit" not in "".join(dump_cassette(cassette))
    assert parse_cassette(cassette.model_dump(mode="json")).exchanges == cassette.exchanges


async def test_client_trace_cassette_shows_a_refused_upgrade_as_a_connection_with_its_status(serve: Serve) -> None:
    script = Script().add(reply(text("Over HTTP.")), repeat=True).add_handshake(refuse_upgrade(426))
    options = ClientOptions(retry=RetryPolicy(max_retries=1, base_delay=0.01), sleep=RecordingSleep())
    async with (
        serve.running(script) as server,
        ModelClient(server.http_url, options=options, session_id=SESSION_ID) as client,
    ):
        await Conversation(client, PROMPT).run_turn("Hello?")
    cassette = cassette_from_trace(client.trace, name="refused")
    assert [(c.id, c.handshake.status) for c in cassette.connections] == [(1, 426)]
    assert cassette.connections[0].handshake.request_headers["authorization"] == MARKER
    assert [(e.transport, e.outcome.kind if e.outcome else None) for e in cassette.exchanges] == [
        ("http", OutcomeKind.COMPLETED)
    ]
    assert len(client.trace.entries) == 2  # the refused attempt never sent a request: it has no exchange
