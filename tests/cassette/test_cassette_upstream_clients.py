"""The proxy's upstream clients: the SSE relay sends the events the upstream sent together as one run; the
WebSocket client (relay/wsclient.py) reassembles fragmented messages, takes the messages that arrived together
together, and closes a socket whose keep-alive pong does not come."""

from __future__ import annotations

import asyncio

import pytest
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.utils import accept_key

from rrkit.protocol.plan import ResponsePlan
from rrkit.protocol.sse import encode_event
from rrkit.relay import UpstreamSource, wsclient
from rrkit.relay.wsclient import ws_connect
from rrkit.script.select import RequestView

from .rawupstream import RawUpstream, sse


async def test_sse_relay_sends_the_events_the_upstream_sent_together_as_one_run() -> None:
    events = [{"type": "response.created", "response": {"id": "resp_r"}}]
    events += [{"type": "response.output_text.delta", "delta": str(n)} for n in range(5)]
    events += [{"type": "response.completed", "response": {"id": "resp_r"}}]
    with RawUpstream(sse(b"".join(encode_event(event) for event in events))) as upstream:
        source = UpstreamSource(upstream.http_url)
        try:
            wire = {"model": "gpt-test", "input": "hi", "stream": True}
            plan = await source.select(RequestView("http", {}, wire, wire))
            assert isinstance(plan, ResponsePlan)
            runs = [run async for run in plan.events]
        finally:
            await source.aclose()
    assert [len(run) for run in runs] == [len(events)]
    (run,) = runs
    assert [planned.event for planned in run] == events


async def test_upstream_websocket_reassembles_fragmented_messages_and_gives_what_arrived_together() -> None:
    async def handler(ws: ServerConnection) -> None:
        await ws.recv()
        await ws.send(["hel", "lo"])  # one message in two fragments
        await ws.send("a")
        await ws.send(b"b")  # a binary frame: its bytes as text
        await ws.wait_closed()

    async with serve(handler, "127.0.0.1", 0, compression=None) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        socket = await ws_connect(f"ws://127.0.0.1:{port}/v1/responses", {}, None, False, 5.0)
        try:
            await socket.send("go")
            received: list[str] = []
            while len(received) < 3:
                ready = await socket.ready()
                received += ready
                ready.clear()
        finally:
            await socket.close()
    assert received == ["hello", "a", "b"]


async def test_upstream_websocket_whose_pong_does_not_come_is_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wsclient, "_PING_SECONDS", 0.05)
    monkeypatch.setattr(wsclient, "_CLOSE_SECONDS", 0.2)

    async def accept_then_ignore(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = (await reader.readuntil(b"\r\n\r\n")).decode()
        lines = head.split("\r\n")
        (key,) = (line.split(":", 1)[1].strip() for line in lines if line.lower().startswith("sec-websocket-key"))
        upgrade = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        writer.write(f"{upgrade}Sec-WebSocket-Accept: {accept_key(key)}\r\n\r\n".encode())
        await reader.read()  # reads the pings, answers none

    server = await asyncio.start_server(accept_then_ignore, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        socket = await ws_connect(f"ws://127.0.0.1:{port}/v1/responses", {}, None, False, 5.0)
        with pytest.raises(ConnectionClosed):
            async with asyncio.timeout(5):
                await socket.ready()
    finally:
        server.close()
