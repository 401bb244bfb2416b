"""Bounded request heads (issue 65), over plain HTTP and on a WebSocket upgrade alike: a header line over
`MAX_HEADER_LINE` (a 100 KB `Authorization`), more than `MAX_HEADER_FIELDS` lines, or a head that grows past
`MAX_REQUEST_HEAD` before it ends is answered at once with 431 in the API's JSON shape and the connection closed
(an upgrade with such a line was never answered, its socket held open for over a minute); a line at the bound is
taken; an upgrade websockets cannot read is answered too (414 for an overlong request line). Real clients (httpx,
websockets) and raw sockets on a real server."""

from __future__ import annotations

import json
import socket
import time
from urllib.parse import urlsplit

import httpx
import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from rrkit.protocol.headers import MAX_HEADER_FIELDS, MAX_HEADER_LINE, MAX_REQUEST_HEAD
from rrkit.server import FakeServer

from . import shared_server

pytestmark = pytest.mark.hostile
server = shared_server.server  # the module's fixtures

UPGRADE = (
    b"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
    b"Sec-WebSocket-Version: 13\r\n"
)
WAIT = 30.0
"""Seconds a raw socket waits for the answer and the close (an idle machine needs milliseconds)."""


def exchange(server: FakeServer, head: bytes, *, upgrade: bool, pieces: int = 1) -> tuple[int, dict[str, str], bytes]:
    """A request head (after its request line) sent raw, in `pieces`, then whatever the server answers until it
    closes the connection: the status, headers and body (status 0: it closed without answering). A server that
    keeps the socket open past WAIT fails the test."""
    where = urlsplit(server.http_url)
    line = b"GET /v1/responses HTTP/1.1\r\nHost: x\r\n" if upgrade else b"POST /v1/responses HTTP/1.1\r\nHost: x\r\n"
    data = line + (UPGRADE if upgrade else b"content-length: 2\r\n") + head
    size = -(-len(data) // pieces)
    received = b""
    with socket.create_connection((where.hostname, where.port), timeout=WAIT) as sock:
        try:
            for start in range(0, len(data), size):
                sock.sendall(data[start : start + size])
        except (BrokenPipeError, ConnectionResetError):
            pass  # answered and closed before the head was all sent: what a bound read as it arrives does
        try:
            while not received.startswith(b"HTTP/1.1 101 ") and (chunk := sock.recv(65536)):
                received += chunk  # until the server closes (a 101's socket stays open: its head is enough)
        except ConnectionResetError:
            pass
    if not received:
        return 0, {}, b""
    head_text, _, body = received.partition(b"\r\n\r\n")
    lines = head_text.decode("latin-1").split("\r\n")
    return int(lines[0].split()[1]), dict(one.lower().split(": ", 1) for one in lines[1:]), body


def too_large(answer: tuple[int, dict[str, str], bytes], status: int = 431) -> str:
    code, headers, body = answer
    assert code == status, answer
    assert headers["content-type"] == "application/json" and headers["connection"] == "close"
    message: str = json.loads(body)["error"]["message"]
    return message


@pytest.mark.parametrize("upgrade", [False, True], ids=["http", "websocket"])
def test_a_100_kb_header_line_is_answered_431_and_closed(server: FakeServer, upgrade: bool) -> None:
    started = time.monotonic()
    answer = exchange(server, b"Authorization: Bearer " + b"a" * 100_000 + b"\r\n\r\n{}", upgrade=upgrade)
    message = too_large(answer)
    assert "authorization" in message.lower() and str(MAX_HEADER_LINE) in message
    assert time.monotonic() - started < WAIT


@pytest.mark.parametrize("upgrade", [False, True], ids=["http", "websocket"])
def test_a_header_line_at_the_bound_is_taken_one_byte_more_is_not(server: FakeServer, upgrade: bool) -> None:
    value = b"v" * (MAX_HEADER_LINE - len(b"x-long: \r\n"))
    end = b"\r\n" if upgrade else b"\r\nconnection: close\r\n"
    taken = exchange(server, b"x-long: " + value + end + b"\r\n{}", upgrade=upgrade, pieces=3)
    assert taken[0] == (101 if upgrade else 400), taken  # a create without a model: the app answered it
    too_large(exchange(server, b"x-long: " + value + b"v\r\n\r\n{}", upgrade=upgrade, pieces=3))


@pytest.mark.parametrize("upgrade", [False, True], ids=["http", "websocket"])
def test_too_many_header_lines_are_answered_431(server: FakeServer, upgrade: bool) -> None:
    many = b"".join(b"x-%d: 1\r\n" % n for n in range(MAX_HEADER_FIELDS + 1))
    assert str(MAX_HEADER_FIELDS) in too_large(exchange(server, many + b"\r\n{}", upgrade=upgrade))


@pytest.mark.parametrize(
    ("head", "pieces"),
    [(b"x-a: " + b"b" * 8000 + b"\r\n", 400), (b"x-a: " + b"b" * 1000 + b"\r\n", 1)],
    ids=["growing-in-pieces", "whole-at-once"],
)
@pytest.mark.parametrize("upgrade", [False, True], ids=["http", "websocket"])
def test_a_head_past_its_bound_is_refused(server: FakeServer, upgrade: bool, head: bytes, pieces: int) -> None:
    """100 lines, each within the bound and fewer than the most lines: 800 KB in small pieces that never end the
    head (refused as it grows, not read whole), or 100 KB sent at once with its end."""
    end = b"" if pieces > 1 else b"\r\n{}"
    answer = exchange(server, head * 100 + end, upgrade=upgrade, pieces=pieces)
    assert str(MAX_REQUEST_HEAD) in too_large(answer)


def test_an_upgrade_websockets_cannot_read_is_answered_not_held(server: FakeServer) -> None:
    where = urlsplit(server.http_url)
    request = b"GET /v1/responses?" + b"q" * MAX_HEADER_LINE + b" HTTP/1.1\r\nHost: x\r\n" + UPGRADE + b"\r\n"
    with socket.create_connection((where.hostname, where.port), timeout=WAIT) as sock:
        sock.sendall(request)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    assert received.startswith(b"HTTP/1.1 414 "), received[:200]
    assert json.loads(received.partition(b"\r\n\r\n")[2])["error"]["type"] == "invalid_request_error"


def test_real_clients_see_the_431_and_the_server_serves_on(server: FakeServer) -> None:
    huge = {"Authorization": "Bearer " + "a" * 100_000}
    with pytest.raises(InvalidStatus) as refused:
        connect(server.responses_ws_url, additional_headers=huge, open_timeout=WAIT)
    assert refused.value.response.status_code == 431
    answer = httpx.post(server.http_url + "/responses", json={"model": "m", "input": "hi"}, headers=huge, timeout=WAIT)
    assert answer.status_code == 431 and answer.json()["error"]["code"] == "request_too_large"
    assert httpx.post(server.http_url + "/responses", json={"model": "m", "input": "hi"}, timeout=WAIT).is_success
    with connect(server.responses_ws_url, open_timeout=WAIT) as websocket:
        websocket.send(json.dumps({"type": "response.create", "model": "m", "input": "hi"}))
        while json.loads(websocket.recv(timeout=WAIT))["type"] != "response.completed":
            pass
