"""Identity headers and turn metadata (Codex 0.169): on every HTTP request and upgrade, and in `client_metadata`."""

from __future__ import annotations

import json
from typing import Any

import pytest

from rrkit.protocol import OPENAI_BETA_HEADER, RESPONSES_WEBSOCKETS_BETA
from rrkit.protocol.headers import TURN_METADATA_HEADER, TURN_STATE_HEADER
from rrkit.script import Script, function_call, reject, reply, side_frame
from rrkit.server import Exchange, FakeServer

from ..errortrap import Serve
from .client_support import TRANSPORTS, served

THREAD = "thread-0001"


def sent_headers(server: FakeServer) -> list[dict[str, str]]:
    """The headers of every HTTP request and every WebSocket upgrade, in order."""
    http = [exchange.request_headers for exchange in server.exchanges if exchange.transport == "http"]
    return http + [connection.handshake_headers for connection in server.connections]


def body_metadata(exchange: Exchange) -> dict[str, Any]:
    metadata = (exchange.wire_request or {}).get("client_metadata") or {}
    return dict(json.loads(metadata[TURN_METADATA_HEADER]))


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_every_request_and_upgrade_carries_session_thread_client_request_and_window_ids(
    serve: Serve, transport: str
) -> None:
    script = Script().queue(reply(function_call("get_weather", {"city": "Paris"})), reply("Sunny.").drop_after(2))
    script.add(reply("Sunny."), repeat=True)
    async with served(serve, script, transport=transport, session_id="session-1", thread_id=THREAD) as h:
        await h.conversation().run_turn("Weather?", lambda call: "sunny")
        headers = sent_headers(h.server)
        assert len(headers) >= 2
        for sent in headers:
            assert sent["session-id"] == "session-1"
            assert sent["thread-id"] == THREAD
            assert sent["x-client-request-id"] == THREAD
            assert sent["x-codex-window-id"] == f"{THREAD}:0"
            assert TURN_METADATA_HEADER in sent


async def test_the_upgrade_carries_openai_beta_responses_websockets(serve: Serve) -> None:
    async with served(serve, Script().queue(reply("Hi."))) as h:
        await h.conversation().run_turn("Hello.")
        assert h.server.connections[0].handshake_headers[OPENAI_BETA_HEADER] == RESPONSES_WEBSOCKETS_BETA


async def test_turn_metadata_is_prewarm_with_an_empty_turn_id_on_the_prewarm_then_turn(serve: Serve) -> None:
    async with served(serve, Script().queue(reply("Hi."))) as h:
        conversation = h.conversation()
        await conversation.warmup()
        await conversation.run_turn("Hello.")
        upgrade = json.loads(h.server.connections[0].handshake_headers[TURN_METADATA_HEADER])
        assert upgrade == {"turn_id": "", "request_kind": "prewarm"}
        warmup, real = h.exchanges
        assert body_metadata(warmup) == upgrade
        assert body_metadata(real) == {"turn_id": "turn-1", "request_kind": "turn"}


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_the_turn_id_stays_the_same_across_the_retries_of_one_turn_and_changes_with_the_turn(
    serve: Serve,
    transport: str,
) -> None:
    script = Script().queue(reject(500), reply(function_call("get_weather", {"city": "Paris"})))
    script.queue(reply("Sunny.").drop_after(2), reply("Sunny."), reply("Bye."))
    async with served(serve, script, transport=transport) as h:
        conversation = h.conversation()
        await conversation.run_turn("Weather?", lambda call: "sunny")
        await conversation.run_turn("Thanks.")
        turn_ids = [body_metadata(exchange)["turn_id"] for exchange in h.exchanges]
        assert turn_ids == ["turn-1"] * 4 + ["turn-2"]
        if transport == "http":
            header_ids = [json.loads(sent[TURN_METADATA_HEADER])["turn_id"] for sent in sent_headers(h.server)]
            assert header_ids == turn_ids


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_turn_metadata_is_copied_into_the_bodys_client_metadata(serve: Serve, transport: str) -> None:
    async with served(serve, Script().queue(reply("Hi.")), transport=transport) as h:
        await h.conversation().run_turn("Hello.")
        header = sent_headers(h.server)[0][TURN_METADATA_HEADER]
        metadata = (h.exchanges[0].wire_request or {})["client_metadata"]
        assert metadata == {TURN_METADATA_HEADER: header}


@pytest.mark.parametrize(
    ("transport", "frame_type", "echoed"),
    [("ws", "response.metadata", True), ("ws", "codex.response.metadata", False), ("http", "response.metadata", False)],
)
async def test_a_response_metadata_turn_state_over_websocket_is_echoed_in_the_turn_s_next_client_metadata(
    serve: Serve, transport: str, frame_type: str, echoed: bool
) -> None:
    frame = side_frame(frame_type, before=1, headers={TURN_STATE_HEADER: "ts-frame"})
    script = Script().queue(reply(function_call("get_weather", {"city": "Paris"}), frames=[frame]), reply("Sunny."))
    async with served(serve, script, transport=transport) as h:
        await h.conversation().run_turn("Weather?", lambda call: "sunny")
        first, second = [e for e in h.server.exchanges if (e.wire_request or {}).get("generate") is not False]
    assert TURN_STATE_HEADER not in first.client_metadata
    assert second.client_metadata.get(TURN_STATE_HEADER) == ("ts-frame" if echoed else None)
    assert TURN_STATE_HEADER not in second.request_headers  # a frame's token never becomes a header
