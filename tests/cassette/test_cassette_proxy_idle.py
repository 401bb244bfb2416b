"""The recording proxy's idle timeout (`timeout`: seconds the upstream may stay silent) cuts a stream whose
upstream went silent, over SSE and over WebSocket, with one watchdog per stream; and the proxy asks the upstream
for permessage-deflate only when the client's upgrade offered it."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
import pytest
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect as ws_connect

from rrkit.cassette.proxy import RecordingProxy
from rrkit.protocol import OutcomeKind
from rrkit.relay import UpstreamSource
from rrkit.script import Script, reply, text

from ..errortrap import Serve

IDLE = 0.4


@pytest.mark.parametrize("stall_after", [0, 2])
def test_websocket_upstream_silent_past_the_timeout_cuts_the_client_stream(serve: Serve, stall_after: int) -> None:
    script = Script(default=reply(text("never finished", chunks=4)).stall_after(stall_after))
    with serve.running(script) as upstream, RecordingProxy(upstream.http_url, timeout=IDLE) as proxy:
        serve.guard(proxy)
        started = time.monotonic()
        with ws_connect(proxy.responses_ws_url, open_timeout=10) as socket:
            socket.send(json.dumps({"type": "response.create", "model": "gpt-test", "input": "hi"}))
            got = [json.loads(socket.recv(timeout=10)) for _ in range(stall_after)]
            with pytest.raises(ConnectionClosed):
                socket.recv(timeout=10)
        waited = time.monotonic() - started
        cassette = proxy.cassette()
    assert len(got) == stall_after
    assert IDLE * 0.9 <= waited < IDLE + 5, "the stream was not cut after the upstream's silence"
    (recorded,) = cassette.exchanges
    assert recorded.outcome is not None and recorded.outcome.kind is OutcomeKind.DROPPED


def test_sse_upstream_silent_mid_stream_past_the_timeout_cuts_the_client_stream(serve: Serve) -> None:
    script = Script(default=reply(text("never finished", chunks=4)).stall_after(2))
    with serve.running(script) as upstream, RecordingProxy(upstream.http_url, timeout=IDLE) as proxy:
        serve.guard(proxy)
        body = {"model": "gpt-test", "input": "hi", "stream": True}
        with pytest.raises(httpx.RemoteProtocolError):
            httpx.post(proxy.http_url + "/responses", json=body, trust_env=False, timeout=10)
        cassette = proxy.cassette()
    (recorded,) = cassette.exchanges
    assert recorded.outcome is not None and recorded.outcome.kind is OutcomeKind.DROPPED
    assert len(recorded.events) == 2


@pytest.mark.parametrize(
    ("client_offer", "upstream_asked"),
    [(None, False), ("permessage-deflate; client_max_window_bits", True)],
)
async def test_websocket_upstream_is_asked_for_compression_only_when_the_client_offered_it(
    client_offer: str | None, upstream_asked: bool
) -> None:
    offers: list[str | None] = []

    def seen(connection: ServerConnection, request: Any) -> None:
        offers.append(request.headers.get("Sec-WebSocket-Extensions"))

    async with serve(lambda ws: ws.wait_closed(), "127.0.0.1", 0, process_request=seen) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        source = UpstreamSource(f"http://127.0.0.1:{port}/v1")
        headers = {"Sec-WebSocket-Extensions": client_offer} if client_offer else {}
        try:
            handshake = await source.select_handshake(headers, connection_id=1)
            assert handshake is not None and not handshake.refuse
        finally:
            await source.aclose()
    (offer,) = offers
    assert (offer is not None and "permessage-deflate" in offer) is upstream_asked
