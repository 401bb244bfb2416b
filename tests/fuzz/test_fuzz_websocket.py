"""WebSocket frames to a real fake server on loopback: any text and binary frames, `response.create` frames valid
and not. Each frame is answered with an `error` frame (status 400, the socket kept open) or a stream that ends in
a terminal event; the server never closes the socket (the script plays no close), never logs an error, and the
same socket answers a normal request afterwards. Every receive has a timeout."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import event, given
from hypothesis import strategies as st
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from . import fuzz, json_text, to_bytes
from .conftest import GuardedServer
from .requests import FRAMES, NORMAL, TERMINAL, Payload

TIMEOUT = 10.0
"""Every receive's bound: a frame left unanswered fails the example."""

pytestmark = pytest.mark.filterwarnings("ignore:Generating overly large repr")

Frame = tuple[str, "str | bytes"]


class Socket:
    """One client socket per module, opened again only if a test failed with it closed."""

    def __init__(self, guarded: GuardedServer) -> None:
        self.guarded = guarded
        self.connection: ClientConnection | None = None

    def get(self) -> ClientConnection:
        if self.connection is None:
            self.connection = connect(
                self.guarded.server.responses_ws_url, open_timeout=TIMEOUT, close_timeout=2, max_size=None
            )
        return self.connection

    def close(self) -> None:
        if self.connection is not None:
            self.connection.close()
            self.connection = None


@pytest.fixture(scope="module")
def socket(guarded: GuardedServer) -> Iterator[Socket]:
    holder = Socket(guarded)
    yield holder
    holder.close()


def answer(connection: ClientConnection, frame: Frame) -> list[dict[str, Any]]:
    """Send one frame; read its answer: one `error` frame, or events up to a terminal one."""
    kind, data = frame
    connection.send(data, text=kind == "text")
    frames: list[dict[str, Any]] = []
    while True:
        try:
            received = connection.recv(timeout=TIMEOUT)
        except ConnectionClosed as closed:
            raise AssertionError(f"the server closed the socket ({closed.rcvd}) after {frames[-3:]}") from None
        assert isinstance(received, str), f"a binary frame from the server: {received[:200]!r}"
        message = json.loads(received)
        assert isinstance(message, dict) and isinstance(message.get("type"), str), message
        frames.append(message)
        if message["type"] == "error":
            assert len(frames) == 1 or "status" not in message, frames  # an error frame answers, or ends a stream
            if "status" in message:
                assert message["status"] == 400, message
                error = message["error"]
                assert isinstance(error, dict) and isinstance(error.get("message"), str) and error["message"]
            return frames
        if message["type"] in TERMINAL:
            return frames


@st.composite
def frames(draw: st.DrawFn) -> Frame:
    """A frame a client may send: JSON (escaped or raw surrogates) as text or bytes, or any text or bytes."""
    shape = draw(st.sampled_from(["json-text", "json-raw", "json-binary", "text", "binary"]))
    if shape == "text":
        return "text", draw(st.text(st.characters(exclude_categories=("Cs",)), max_size=200))
    if shape == "binary":
        return "binary", Payload(draw(st.binary(max_size=200)))
    value = draw(FRAMES)
    if shape == "json-text":
        return "text", json_text(value, ascii_only=True)
    text = json_text(value, ascii_only=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a text frame must be UTF-8: the raw surrogate goes as the bytes of a binary frame
        shape = "json-binary"
    if shape == "json-raw":
        return "text", text
    return "binary", Payload(to_bytes(text, draw(st.sampled_from(["utf-8", "utf-16", "latin-1"]))))


@fuzz(300)
@given(frame=frames())
def test_any_frame_gets_an_error_frame_or_a_stream_and_the_same_socket_answers_on(
    guarded: GuardedServer, socket: Socket, frame: Frame
) -> None:
    guarded.attach()
    connection = socket.get()
    try:
        got = answer(connection, frame)
        event(f"answer {got[-1]['type']}")
        normal = answer(connection, ("text", json.dumps({"type": "response.create", **NORMAL})))
    except BaseException:
        socket.close()  # the next example starts on a new socket
        raise
    assert normal[-1]["type"] == "response.completed", normal[-1]
    guarded.check()


@fuzz(50)
@given(batch=st.lists(frames(), min_size=1, max_size=8))
def test_a_new_socket_after_any_frames_and_a_client_that_leaves_answers_a_normal_request(
    guarded: GuardedServer, batch: list[Frame]
) -> None:
    """Frames sent without reading their answers, then the client leaves: a new socket is served as usual."""
    guarded.attach()
    with connect(guarded.server.responses_ws_url, open_timeout=TIMEOUT, close_timeout=2) as rude:
        for kind, data in batch:
            rude.send(data, text=kind == "text")
    with connect(guarded.server.responses_ws_url, open_timeout=TIMEOUT, close_timeout=2) as fresh:
        normal = answer(fresh, ("text", json.dumps({"type": "response.create", **NORMAL})))
    assert normal[-1]["type"] == "response.completed", normal[-1]
    guarded.check()
