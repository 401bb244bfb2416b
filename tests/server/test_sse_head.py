"""An SSE answer's head goes out in one write with its first events (one segment, one wake-up of the client), and
alone at once when the stream waits or stalls before its first event, or ends with none."""

from __future__ import annotations

import json
import socket

import httpx

from rrkit.script import Script, reply, text

from .faultclient import BODY, WAIT, Serve, finished, loopback_client


def _raw_post(server_url: str) -> socket.socket:
    host, port = server_url.removeprefix("http://").removesuffix("/v1").rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=WAIT)
    body = json.dumps(BODY).encode()
    head = f"POST /v1/responses HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/json\r\n"
    sock.sendall(head.encode() + f"content-length: {len(body)}\r\n\r\n".encode() + body)
    return sock


def test_the_head_and_the_first_event_arrive_in_one_write(serve: Serve) -> None:
    server = serve(Script(default=reply(text("hi"))))
    with _raw_post(server.http_url) as sock:
        first = sock.recv(1 << 16)  # one write on loopback is one segment: read whole by the first recv
    assert first.startswith(b"HTTP/1.1 200 ")
    assert b"\r\n\r\n" in first and b"event: response.created" in first.split(b"\r\n\r\n", 1)[1]


def test_a_stream_that_stalls_before_its_first_event_sends_its_head_at_once(serve: Serve) -> None:
    server = serve(Script(default=reply(text("hi")).stall_after(0)))
    with (
        loopback_client(httpx.Timeout(WAIT)) as client,
        client.stream("POST", server.http_url + "/responses", json=BODY) as response,
    ):
        assert response.status_code == 200  # the head came: the stream stalls with nothing sent yet
    assert finished(server).events == []


def test_a_stream_whose_first_event_waits_sends_its_head_before_the_wait(serve: Serve) -> None:
    server = serve(Script(default=reply(text("hi")).delayed(first=3600)))
    with (
        loopback_client(httpx.Timeout(WAIT)) as client,
        client.stream("POST", server.http_url + "/responses", json=BODY) as response,
    ):
        assert response.status_code == 200  # an hour before the first event: the head did not wait for it
