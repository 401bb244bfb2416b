"""The proxy's upstream clients: the SSE relay sends the events the upstream sent together as one run; the
WebSocket client (relay/wsclient.py) reassembles fragmented messages, takes the messages that arrived together
together, closes a socket whose keep-alive pong does not come, and sends an upgrade on a connection opened ahead
(a spare) unless the upstream closed it."""

from __future__ import annotations

import asyncio
import shutil
import ssl
import subprocess
from collections.abc import Set
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import connect as ws_client
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed, InvalidMessage
from websockets.utils import accept_key

from rrkit.protocol.plan import ResponsePlan
from rrkit.protocol.sse import encode_event
from rrkit.relay import UpstreamSource, wsclient
from rrkit.relay.wsclient import Dialer, UpstreamWS
from rrkit.script.select import RequestView
from rrkit.server import FakeServer

from .rawupstream import RawUpstream, sse


async def ws_connect(url: str) -> UpstreamWS:
    return await Dialer(url, 5.0).connect(url, {}, None, False)


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
        socket = await ws_connect(f"ws://127.0.0.1:{port}/v1/responses")
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
        socket = await ws_connect(f"ws://127.0.0.1:{port}/v1/responses")
        with pytest.raises(ConnectionClosed):
            async with asyncio.timeout(5):
                await socket.ready()
    finally:
        server.close()


SWITCHING = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"


class Upgrades:
    """A raw upstream that keeps each connection's upgrade request (None: none came) in the order it accepted
    them. It answers every upgrade but those of the connections in `unanswered` (closed once the upgrade is read)
    and `half_answered` (closed in the middle of the answer's first line), and closes the connections in
    `close_at_once` as soon as it accepts them."""

    def __init__(
        self,
        unanswered: Set[int] = (),
        half_answered: Set[int] = (),
        close_at_once: Set[int] = (),
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.tls = tls
        self.upgrades: list[bytes | None] = []
        self.ended: list[bool] = []
        self.unanswered, self.half_answered, self.close_at_once = unanswered, half_answered, close_at_once
        self.server: asyncio.Server | None = None

    async def __aenter__(self) -> str:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=self.tls)
        scheme = "wss" if self.tls else "ws"
        return f"{scheme}://127.0.0.1:{self.server.sockets[0].getsockname()[1]}/v1/responses"

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        n = len(self.upgrades)
        self.upgrades.append(None)
        self.ended.append(False)
        try:
            if n in self.close_at_once:
                return
            head = self.upgrades[n] = await reader.readuntil(b"\r\n\r\n")
            if n in self.unanswered or n in self.half_answered:
                writer.write(b"HTTP/1.1 101 Switching" if n in self.half_answered else b"")
                return
            (key,) = (
                line.split(b":", 1)[1].strip()
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"sec-websocket-key")
            )
            writer.write(f"{SWITCHING}Sec-WebSocket-Accept: {accept_key(key.decode())}\r\n\r\n".encode())
            await reader.read(1)  # the client's close frame (or its EOF)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()
            self.ended[n] = True

    async def accepted(self, count: int) -> None:
        async with asyncio.timeout(10):
            while len(self.upgrades) < count:
                await asyncio.sleep(0.005)

    async def all_ended(self) -> None:
        async with asyncio.timeout(10):
            while not all(self.ended):
                await asyncio.sleep(0.005)

    async def connect_after_spare(self, url: str, settle: float = 0.0, **request: Any) -> None:
        """Open a spare, wait until it is accepted (and `settle` seconds more), then open and close a socket."""
        dialer = Dialer(url, 5.0)
        dialer.keep_spare()
        await self.accepted(1)
        await asyncio.sleep(settle)
        try:
            headers, user_agent = request.get("headers", {}), request.get("user_agent")
            socket = await dialer.connect(url + request.get("query", ""), headers, user_agent, False)
            await socket.close()
        finally:
            await dialer.aclose()
            await self.all_ended()


async def test_upgrade_goes_out_on_the_connection_opened_ahead_for_it() -> None:
    upstream = Upgrades()
    async with upstream as url:
        await upstream.connect_after_spare(url, query="?n=1", headers={"authorization": "Bearer k"}, user_agent="ua/1")
    (upgrade,) = upstream.upgrades
    assert upgrade is not None
    assert upgrade.startswith(b"GET /v1/responses?n=1 HTTP/1.1\r\n")
    assert b"\r\nauthorization: Bearer k\r\nUser-Agent: ua/1\r\n" in upgrade


async def test_upgrade_that_comes_while_the_spare_is_being_opened_waits_for_it() -> None:
    upstream = Upgrades()
    async with upstream as url:
        dialer = Dialer(url, 5.0)
        dialer.keep_spare()  # not yet connected when the upgrade comes
        socket = await dialer.connect(url, {}, None, False)
        await socket.close()
        await dialer.aclose()
        await upstream.all_ended()
    assert [upgrade is not None for upgrade in upstream.upgrades] == [True]


async def test_spare_made_ahead_over_tls_carries_the_upgrade(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("openssl not found: it makes the test certificate")
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    made_up = ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1"]
    names = ["-addext", "subjectAltName=IP:127.0.0.1"]
    subprocess.run([openssl, *made_up, *names, "-keyout", key, "-out", cert], check=True, capture_output=True)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # the dialer's default context trusts it
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.load_cert_chain(cert, key)
    upstream = Upgrades(tls=tls)
    async with upstream as url:
        await upstream.connect_after_spare(url)
    assert [upgrade is not None for upgrade in upstream.upgrades] == [True]


async def test_spare_the_upstream_closed_while_idle_is_not_used() -> None:
    upstream = Upgrades(close_at_once={0})
    async with upstream as url:
        await upstream.connect_after_spare(url, settle=0.05)  # its close has reached the dialer (or is on its way)
    assert [upgrade is not None for upgrade in upstream.upgrades] == [False, True]


async def test_spare_the_upstream_closes_as_the_upgrade_goes_out_is_replaced_by_a_new_connection() -> None:
    upstream = Upgrades(unanswered={0})
    async with upstream as url:
        await upstream.connect_after_spare(url)
    assert [upgrade is not None for upgrade in upstream.upgrades] == [True, True]


async def test_upgrade_the_upstream_began_to_answer_on_a_spare_is_not_sent_again() -> None:
    upstream = Upgrades(half_answered={0})
    async with upstream as url:
        with pytest.raises(InvalidMessage):
            await upstream.connect_after_spare(url)
    assert [upgrade is not None for upgrade in upstream.upgrades] == [True]


async def test_spare_unused_past_its_limit_is_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wsclient, "SPARE_SECONDS", 0.01)
    upstream = Upgrades()
    async with upstream as url:
        dialer = Dialer(url, 5.0)
        dialer.keep_spare()
        await upstream.accepted(1)
        await upstream.all_ended()  # closed by the dialer, which still holds it
        socket = await dialer.connect(url, {}, None, False)
        await socket.close()
        await dialer.aclose()
    assert [upgrade is not None for upgrade in upstream.upgrades] == [False, True]


async def test_closing_the_dialer_closes_its_spare_and_opens_none_after() -> None:
    upstream = Upgrades()
    async with upstream as url:
        dialer = Dialer(url, 5.0)
        dialer.keep_spare()
        await upstream.accepted(1)
        await dialer.aclose()
        await upstream.all_ended()
        dialer.keep_spare()
        await asyncio.sleep(0.05)
    assert upstream.upgrades == [None]


async def test_proxy_sends_the_next_upgrade_on_a_connection_it_opened_when_the_last_socket_closed() -> None:
    upstream = Upgrades()
    async with upstream as url:
        source = UpstreamSource(url.removesuffix("/responses"))
        async with FakeServer(source=source) as proxy:
            async with ws_client(proxy.responses_ws_url):
                pass
            await upstream.accepted(2)  # the first socket's, and one opened ahead as it closed
            assert upstream.upgrades[1] is None
            async with ws_client(proxy.responses_ws_url):
                assert len(upstream.upgrades) == 2
                assert upstream.upgrades[1] is not None
