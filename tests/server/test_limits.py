"""Limits on what the server reads, each a setting with a default: a request body over `body` is a 413 (refused
before it is read when its Content-Length says so), one that decodes past `decoded-body` a 413, a WebSocket message
over `ws-message` closes its socket with 1009; none is a 500 or a traceback, each is an exchange refused 413, and
the server answers the next request."""

from __future__ import annotations

import contextlib
import gzip
import json
import socket
from pathlib import Path

import httpx
import pytest
from websockets.exceptions import ConnectionClosedError
from websockets.sync.client import connect

from rrkit.protocol import OutcomeKind
from rrkit.protocol.errors import REQUEST_TOO_LARGE
from rrkit.protocol.exceptions import LimitError
from rrkit.protocol.limits import Limits, MiB, parse_size, shown_size
from rrkit.script import Script, ScriptError, load_script, reply
from rrkit.server import FakeServer

from ..errortrap import Serve
from .faultclient import post_sse, wait_until

SMALL = Limits(body=64 * 1024, decoded_body=128 * 1024, ws_message=64 * 1024)


def body_of(size: int) -> bytes:
    request = {"model": "m", "input": "x", "stream": True}
    padding = size - len(json.dumps(request)) - len(', "metadata": {"pad": ""}')
    return json.dumps({**request, "metadata": {"pad": "a" * padding}}).encode()


def refused_413(response: httpx.Response, setting: str) -> None:
    assert response.status_code == 413, response.text
    error = response.json()["error"]
    assert error["code"] == REQUEST_TOO_LARGE and error["type"] == "invalid_request_error"
    assert f"--limit {setting}=SIZE" in error["message"]


def test_sizes_read_with_their_units_and_shown_back() -> None:
    assert [parse_size(text) for text in ("123", "64KiB", "32MiB", "1GB", " 2 kb ")] == [
        123,
        65536,
        32 * MiB,
        10**9,
        2000,
    ]
    for wrong in ("", "0", "-1", "3x", "1.5MiB", "MiB"):
        with pytest.raises(LimitError, match="is not a size"):
            parse_size(wrong)
    assert (shown_size(32 * MiB), shown_size(1500)) == ("32 MiB", "1500 bytes")
    assert Limits().with_settings(["ws-message=1MiB", "BODY=2MiB"]) == Limits(body=2 * MiB, ws_message=MiB)
    with pytest.raises(LimitError, match="did you mean 'decoded-body'"):
        Limits().with_settings(["decoded-bdy=1"])


def test_a_body_over_the_limit_is_a_413_and_the_next_request_is_answered(serve: Serve) -> None:
    server = serve(Script(default=reply("ok")), limits=SMALL)
    with httpx.Client(timeout=30, trust_env=False) as client:
        url = server.http_url + "/responses"
        assert client.post(url, content=body_of(SMALL.body), headers={"content-type": "application/json"}).is_success
        refused_413(client.post(url, content=body_of(SMALL.body + 1)), "body")

        def chunked() -> object:  # no Content-Length: counted as it arrives
            body = body_of(3 * SMALL.body)
            for start in range(0, len(body), 8192):
                yield body[start : start + 8192]

        # the server closes with the rest unread: the client may see the reset before the 413
        with contextlib.suppress(httpx.TransportError):
            refused_413(client.post(url, content=chunked()), "body")
        assert client.post(url, content=body_of(1000)).is_success
    server.settle()
    outcomes = [(exchange.outcome.kind, exchange.response_status) for exchange in server.exchanges if exchange.outcome]
    assert outcomes == [
        (OutcomeKind.COMPLETED, 200),
        (OutcomeKind.REFUSED, 413),
        (OutcomeKind.REFUSED, 413),
        (OutcomeKind.COMPLETED, 200),
    ]


def test_a_content_length_over_the_limit_is_refused_before_the_body_is_sent(serve: Serve) -> None:
    server = serve(Script(default=reply("ok")), limits=SMALL)
    host, port = server.http_url.split("//")[1].split("/")[0].split(":")
    with socket.create_connection((host, int(port)), timeout=30) as raw:
        raw.sendall(
            b"POST /v1/responses HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: 1000000000\r\n\r\n"
        )  # and not one byte of the body
        answer = b""
        while REQUEST_TOO_LARGE.encode() not in answer and (chunk := raw.recv(65536)):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 413") and REQUEST_TOO_LARGE.encode() in answer


def test_a_small_body_that_decodes_past_the_limit_is_a_413(serve: Serve) -> None:
    server = serve(Script(default=reply("ok")), limits=SMALL)
    bomb = gzip.compress(body_of(4 * SMALL.decoded_body))
    assert len(bomb) < SMALL.body
    with httpx.Client(timeout=30, trust_env=False) as client:
        url = server.http_url + "/responses"
        response = client.post(url, content=bomb, headers={"content-encoding": "gzip"})
        refused_413(response, "decoded-body")
        fits = gzip.compress(body_of(SMALL.decoded_body // 2))
        assert client.post(url, content=fits, headers={"content-encoding": "gzip"}).is_success


def test_a_websocket_message_over_the_limit_closes_the_socket_with_1009(serve: Serve) -> None:
    server = serve(Script(default=reply("ok")), limits=SMALL)
    frame = {"type": "response.create", "model": "m", "input": "x", "metadata": {"pad": "a" * (2 * SMALL.ws_message)}}
    with (
        connect(server.responses_ws_url, proxy=None, open_timeout=30) as socket_,
        pytest.raises(ConnectionClosedError) as closed,
    ):
        socket_.send(json.dumps(frame))
        socket_.recv(timeout=30)
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009
    refused = server.connections[0]  # the server records the close once its handler sees it
    wait_until(lambda: refused.closed_by, what="the refused socket's close recorded")
    assert (refused.closed_by, refused.close_code) == ("server", 1009)
    assert server.state.counts.refused_for_limit["ws-message"] == 1
    with connect(server.responses_ws_url, proxy=None, open_timeout=30) as socket_:
        socket_.send(json.dumps({"type": "response.create", "model": "m", "input": "x"}))
        assert json.loads(socket_.recv(timeout=30))["type"] == "response.created"
    assert post_sse(server).status == 200


def test_the_defaults_take_a_codex_sized_request() -> None:
    limits = FakeServer().state.limits
    assert limits == Limits() and limits.body >= 16 * MiB and limits.ws_message >= 16 * MiB


BOMB = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + n)}: &{chr(98 + n)} [*{chr(97 + n)}, *{chr(97 + n)}, *{chr(97 + n)}, *{chr(97 + n)}, "
    f"*{chr(97 + n)}, *{chr(97 + n)}, *{chr(97 + n)}, *{chr(97 + n)}, *{chr(97 + n)}, *{chr(97 + n)}]\n"
    for n in range(8)
)
"""Nine lines of YAML that stand for 10^9 values once the aliases are expanded."""


def test_a_yaml_alias_bomb_is_refused_as_a_script_file_and_as_a_posted_script(serve: Serve, tmp_path: Path) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(BOMB, encoding="utf-8")
    with pytest.raises(
        ScriptError, match=r"bomb.yaml: line \d+, column \d+: its aliases expand to [\d,]+ values, more than 1,000,000"
    ):
        load_script(path)
    server = serve(Script(default=reply("kept")))
    with httpx.Client(timeout=30, trust_env=False) as client:
        posted = client.post(server.admin_url + "/script", content=BOMB, headers={"content-type": "application/yaml"})
    assert posted.status_code == 400 and "alias bomb" in posted.json()["error"]["message"]
    assert server.script.default is not None and server.script.default.output[0].text == "kept"


def test_a_posted_script_over_the_body_limit_is_a_413(serve: Serve) -> None:
    server = serve(Script(default=reply("kept")), limits=SMALL)
    script = json.dumps({"description": "x" * (2 * SMALL.body), "default": {"output": [{"text": "big"}]}})
    with httpx.Client(timeout=30, trust_env=False) as client:
        refused_413(client.post(server.admin_url + "/script", content=script), "body")
    assert server.script.default is not None and server.script.default.output[0].text == "kept"
