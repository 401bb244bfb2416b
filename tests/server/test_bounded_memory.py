"""What a server keeps is what someone can read back: a bounded window of exchanges when asked (`rrkit serve`
without recording), bounded response stores for `previous_response_id` (an evicted id is not found, as the real
service answers), and connections that come and go leave no file descriptor or task behind."""

from __future__ import annotations

import asyncio
import gc
import json
import os
import socket
import threading
import time
from typing import Any
from urllib.parse import urlsplit

import httpx
from websockets.client import ClientProtocol
from websockets.uri import parse_uri

from rrkit.protocol.errors import PREVIOUS_RESPONSE_NOT_FOUND
from rrkit.script import Script, reply, text
from rrkit.server import FakeServer
from rrkit.server.capture import Exchange

from .faultclient import BODY, Serve, post_sse, wait_until, ws_connect, ws_request


def post(client: httpx.Client, server: FakeServer, **changes: Any) -> httpx.Response:
    return client.post(server.http_url + "/responses", json={**BODY, "stream": False, **changes})


def test_a_server_that_keeps_10_holds_the_10_most_recent_of_50_exchanges(serve: Serve) -> None:
    server = serve(keep=10)
    with httpx.Client(trust_env=False) as client:
        for _ in range(50):
            assert post(client, server).status_code == 200
    server.settle(2.0)
    assert [exchange.id for exchange in server.exchanges] == list(range(40, 50))


def test_a_socket_that_keeps_10_still_counts_every_request_for_close_after(serve: Serve) -> None:
    server = serve(keep=3)
    with ws_connect(server) as websocket:
        for _ in range(8):
            assert ws_request(websocket).types[-1] == "response.completed"
    server.settle(2.0)
    (connection,) = server.connections
    assert connection.requests == 8
    assert [exchange.id for exchange in connection.exchanges] == [5, 6, 7]


def _of(exchange: Exchange, capture: object) -> bool:
    return getattr(exchange.on_outcome, "__self__", None) is capture  # its capture's `_ended`, bound


def test_one_socket_carrying_many_requests_holds_no_more_exchanges_than_the_window(serve: Serve) -> None:
    """A Codex session keeps one socket for its whole life: what the connection's handler holds of its ended
    exchanges (their events) must be released, not kept until the socket closes."""
    server = serve(keep=3)
    with ws_connect(server) as websocket:
        for _ in range(40):
            assert ws_request(websocket).types[-1] == "response.completed"
        server.settle(2.0)
        gc.collect()
        capture = server.state.capture  # its exchanges, not those other tests of this process still hold
        alive = [item for item in gc.get_objects() if isinstance(item, Exchange) and _of(item, capture)]
        assert len(alive) <= 3 + 1, f"{len(alive)} exchanges alive on one socket that keeps 3"


def test_fake_server_keeps_every_exchange_unless_told(serve: Serve) -> None:
    server = serve()
    with httpx.Client(trust_env=False) as client:
        for _ in range(150):
            post(client, server)
    assert len(server.settle(2.0).exchanges) == 150


def test_an_evicted_response_id_is_not_found_over_http(serve: Serve) -> None:
    server = serve()
    server.state.http_store.size = 2
    with httpx.Client(trust_env=False) as client:
        ids = [post(client, server).json()["id"] for _ in range(3)]
        assert post(client, server, previous_response_id=ids[2]).status_code == 200  # kept
        evicted = post(client, server, previous_response_id=ids[0])
    assert evicted.status_code == 400
    assert evicted.json()["error"]["code"] == PREVIOUS_RESPONSE_NOT_FOUND
    assert len(server.state.http_store) == 2


def test_an_evicted_response_id_is_not_found_over_websocket(serve: Serve) -> None:
    server = serve()
    server.state.ws_store_size = 2
    with ws_connect(server) as websocket:
        ids = [ws_request(websocket).last["response"]["id"] for _ in range(3)]
        kept = ws_request(websocket, {**BODY, "previous_response_id": ids[1]})
        evicted = ws_request(websocket, {**BODY, "previous_response_id": ids[0]})
    assert kept.types[-1] == "response.completed"
    assert evicted.last["type"] == "error"
    assert evicted.last["error"]["code"] == PREVIOUS_RESPONSE_NOT_FOUND


def test_the_least_recently_used_response_goes_first(serve: Serve) -> None:
    server = serve()
    server.state.http_store.size = 2
    with httpx.Client(trust_env=False) as client:
        first, second = (post(client, server).json()["id"] for _ in range(2))
        assert post(client, server, previous_response_id=first).status_code == 200  # first used again: second goes
        assert post(client, server, previous_response_id=first).status_code == 200
        assert post(client, server, previous_response_id=second).status_code == 400


# -- load and churn, small -----------------------------------------------------------------------------


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def server_tasks(server: FakeServer) -> int:
    async def count() -> int:
        return len(asyncio.all_tasks()) - 1

    assert server._loop is not None
    return asyncio.run_coroutine_threadsafe(count(), server._loop).result(5)


async def sse_stream(client: httpx.AsyncClient, url: str) -> list[str]:
    types: list[str] = []
    async with client.stream("POST", url, json=BODY) as response:
        async for line in response.aiter_lines():
            if line.startswith("data: "):
                types.append(json.loads(line[6:])["type"])
    return types


async def ws_stream(url: str) -> list[str]:
    import websockets

    types: list[str] = []
    async with websockets.connect(url, proxy=None) as websocket:
        await websocket.send(json.dumps({"type": "response.create", **BODY}))
        while not types or types[-1] != "response.completed":
            types.append(json.loads(await websocket.recv())["type"])
    return types


def test_50_sse_and_50_websocket_streams_at_once_all_complete_in_order(serve: Serve) -> None:
    server = serve(Script(default=reply(text("abcdefghij", chunks=5)).delayed(each=0.005)), keep=100)

    async def run() -> list[list[str]]:
        limits = httpx.Limits(max_connections=100)
        async with httpx.AsyncClient(trust_env=False, limits=limits, timeout=20) as client:
            sse = [sse_stream(client, server.http_url + "/responses") for _ in range(50)]
            ws = [ws_stream(server.responses_ws_url) for _ in range(50)]
            return await asyncio.gather(*sse, *ws)

    results = asyncio.run(run())
    expected = results[0]
    assert expected[0] == "response.created" and expected[-1] == "response.completed"
    assert all(result == expected for result in results)


def test_200_connects_and_disconnects_of_every_kind_leave_no_fd_or_task_behind(serve: Serve) -> None:
    server = serve(Script(default=reply(text("abcdefghij", chunks=5)).delayed(each=0.01)), keep=20)
    host, port = server._socket.getsockname()[:2] if server._socket else ("", 0)
    with httpx.Client(trust_env=False) as client:  # warm up: the first connection allocates lazily
        post(client, server)
    server.settle(2.0)
    baseline_fds, baseline_tasks = open_fds(), server_tasks(server)

    def clean() -> None:
        assert post_sse(server).types[-1] == "response.completed"

    def abort_mid_stream() -> None:
        with (
            httpx.Client(trust_env=False, timeout=5) as client,
            client.stream("POST", server.http_url + "/responses", json=BODY) as response,
        ):
            next(response.iter_bytes())

    def client_gone() -> None:
        sock = socket.create_connection((host, port))
        payload = json.dumps(BODY).encode()
        sock.sendall(
            b"POST /v1/responses HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
            b"content-length: %d\r\n\r\n%s" % (len(payload), payload)
        )
        sock.recv(10)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        sock.close()  # a reset mid-stream

    def bare_tcp() -> None:
        socket.create_connection((host, port)).close()

    def ws_abort() -> None:
        with ws_connect(server) as websocket:
            websocket.send(json.dumps({"type": "response.create", **BODY}))
            websocket.recv(timeout=5)

    kinds = [clean, abort_mid_stream, client_gone, bare_tcp, ws_abort]
    threads = []
    for round_ in range(200 // len(kinds)):
        for kind in kinds:
            thread = threading.Thread(target=kind)
            thread.start()
            threads.append(thread)
        if round_ % 4 == 3:
            for thread in threads:
                thread.join(10)
            threads.clear()
    for thread in threads:
        thread.join(10)
    server.settle(5.0)

    def back_to_baseline() -> bool:
        return open_fds() <= baseline_fds and server_tasks(server) <= baseline_tasks

    for _ in range(200):
        if back_to_baseline():
            break
        threading.Event().wait(0.02)
    assert open_fds() <= baseline_fds, (open_fds(), baseline_fds)
    assert server_tasks(server) <= baseline_tasks, (server_tasks(server), baseline_tasks)
    assert len(server.exchanges) == 20


def _write_buffers(server: FakeServer) -> list[int]:
    """The bytes each of the server's connections holds in its transport's write buffer."""

    async def sizes() -> list[int]:
        assert server._server is not None
        return [
            connection.transport.get_write_buffer_size()  # type: ignore[attr-defined]
            for connection in server._server.server_state.connections
        ]

    assert server._loop is not None
    return asyncio.run_coroutine_threadsafe(sizes(), server._loop).result(5)


def _silent_websocket(server: FakeServer, frame: str) -> socket.socket:
    """A WebSocket that sends `frame` after its upgrade and then reads nothing (no reader thread, as a sync client
    has, takes the server's frames off the socket)."""
    protocol = ClientProtocol(parse_uri(server.responses_ws_url))
    protocol.send_request(protocol.connect())
    client = socket.create_connection(("127.0.0.1", urlsplit(server.http_url).port or 0))
    client.sendall(b"".join(protocol.data_to_send()))
    head = b""
    while b"\r\n\r\n" not in head:
        head += client.recv(1)
    protocol.receive_data(head)
    assert protocol.events_received() and protocol.handshake_exc is None, head
    protocol.send_text(frame.encode())
    client.sendall(b"".join(protocol.data_to_send()))
    return client


def test_a_client_that_stops_reading_holds_the_server_to_a_bounded_write_buffer(serve: Serve) -> None:
    """Runs go out in one write each, but only when the transport takes more: a client that reads nothing of a
    40 MB stream leaves the server holding about one run (64 KiB) beyond the transport's high-water mark."""
    server = serve(Script(default=reply(text("x" * 40_000_000, chunks=40_000))))
    request = json.dumps({"type": "response.create", "model": "m", "input": "hi"})
    with socket.create_connection(("127.0.0.1", urlsplit(server.http_url).port or 0)) as http_client:
        body = json.dumps({**BODY, "stream": True}).encode()
        http_client.sendall(
            b"POST /v1/responses HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
            b"content-length: %d\r\n\r\n%s" % (len(body), body)
        )
        with _silent_websocket(server, request):
            wait_until(lambda: len(server.exchanges) == 2 and all(exchange.events for exchange in server.exchanges))
            time.sleep(1.0)  # the kernel's buffers fill; what is not sent waits in the server
            buffered = _write_buffers(server)
            sent = [len(exchange.events) for exchange in server.exchanges]
    assert len(buffered) == 2 and max(buffered) < 1 << 20, buffered
    assert len(sent) == 2 and max(sent) < 40_000, sent  # neither stream ran ahead of its client (40,008 events)
