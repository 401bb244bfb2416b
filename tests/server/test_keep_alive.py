"""An idle HTTP connection stays open for the next request as long as the server's keep-alive says (75 s by
default, `--keep-alive` on the command line): past uvicorn's own 5 s, which a client busy reading other streams
often passes before it reuses the connection, and closed by the server once it has passed."""

from __future__ import annotations

import json
import socket
import time

import h11
import pytest
from click.testing import CliRunner

from rrkit.cli import main as cli
from rrkit.protocol.exceptions import SettingError
from rrkit.server import FakeServer
from rrkit.server.timeouts import KEEP_ALIVE_SECONDS

from .faultclient import WAIT, Serve, port_of

REQUEST = json.dumps({"model": "m", "input": "hi"}).encode()


def ask(sock: socket.socket) -> bytes:
    """One non-streamed create on `sock`, its whole answer read; returns the status line."""
    sock.sendall(b"POST /v1/responses HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n")
    sock.sendall(b"content-length: %d\r\n\r\n" % len(REQUEST) + REQUEST)
    parser = h11.Connection(h11.CLIENT)
    parser.send(h11.Request(method="POST", target="/", headers=[("host", "x")]))  # the parser's own request
    status = b""
    while True:
        event = parser.next_event()
        if event is h11.NEED_DATA:
            parser.receive_data(sock.recv(65536))
        elif isinstance(event, h11.Response):
            status = b"HTTP/1.1 %d %s" % (event.status_code, event.reason)
        elif isinstance(event, h11.EndOfMessage):
            return status


def test_a_connection_idle_past_uvicorns_5_seconds_still_carries_the_next_request(serve: Serve) -> None:
    server = serve()
    with socket.create_connection(("127.0.0.1", port_of(server)), timeout=WAIT) as sock:
        assert ask(sock) == b"HTTP/1.1 200 OK"
        time.sleep(6)  # past uvicorn's default; well under the server's 75 s
        assert ask(sock) == b"HTTP/1.1 200 OK"


def test_the_server_closes_a_connection_idle_past_its_keep_alive(serve: Serve) -> None:
    server = serve(keep_alive=0.2)
    with socket.create_connection(("127.0.0.1", port_of(server)), timeout=WAIT) as sock:
        assert ask(sock) == b"HTTP/1.1 200 OK"
        assert sock.recv(1) == b""  # the server's close (the recv waits up to WAIT seconds for it)


def test_keep_alive_defaults_to_nginx_s_75_seconds_and_must_be_above_0() -> None:
    assert KEEP_ALIVE_SECONDS == FakeServer().keep_alive == 75.0
    with pytest.raises(SettingError, match="keep_alive"):
        FakeServer(keep_alive=0)


def test_rrkit_serve_refuses_a_keep_alive_that_is_no_positive_number() -> None:
    for bad in ("0", "-1", "nan", "soon"):
        result = CliRunner().invoke(cli, ["serve", "--keep-alive", bad])
        assert result.exit_code == 2, (bad, result.output)
        assert "--keep-alive" in result.output
