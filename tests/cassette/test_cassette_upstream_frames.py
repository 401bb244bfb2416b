"""The proxy's upstream WebSocket client reads whole text frames itself and gives every other frame to websockets'
protocol whole: for any stream of server frames in any chunking it gets the messages, the answers (pongs, the
close) and the close code that the protocol alone gets."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from websockets.client import ClientProtocol
from websockets.frames import Frame, Opcode
from websockets.protocol import State
from websockets.server import ServerProtocol
from websockets.streams import StreamReader
from websockets.uri import parse_uri

from rrkit.relay.wsclient import UpstreamWS

MAX_SIZE = 300


class Transport:
    """What the client writes, and nothing else of a socket."""

    def __init__(self) -> None:
        self.written: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        self.written.append(data)

    def can_write_eof(self) -> bool:
        return True

    def write_eof(self) -> None:
        self.written.append(b"<eof>")

    def pause_reading(self) -> None: ...

    def resume_reading(self) -> None: ...

    def abort(self) -> None:
        self.closed = True

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed


def client() -> ClientProtocol:
    """A client protocol that has sent its upgrade request, always with the same key."""
    protocol = ClientProtocol(parse_uri("ws://127.0.0.1:9/v1/responses"), max_size=MAX_SIZE)
    protocol.key = "dGhlIHNhbXBsZSBub25jZQ=="
    protocol.send_request(protocol.connect())
    return protocol


def server_bytes(frames: list[tuple[str, Any]]) -> bytes:
    """A server's answer to `client()`'s upgrade request, followed by `frames`."""
    server = ServerProtocol()
    server.receive_data(b"".join(client().data_to_send()))
    (handshake,) = server.events_received()
    server.send_response(server.accept(handshake))
    for kind, value in frames:
        if kind == "text":
            server.send_text(value.encode())
        elif kind == "fragments":
            server.send_text(value[0].encode(), fin=False)
            for piece in value[1:-1]:
                server.send_continuation(piece.encode(), fin=False)
            server.send_continuation(value[-1].encode(), fin=True)
        elif kind == "ping":
            server.send_ping(value.encode())
        elif kind == "raw":
            server.send_frame(value)  # a masked frame, bytes that are not UTF-8
    wire = b"".join(server.data_to_send())
    if ("close", None) in frames:
        wire += Frame(Opcode.CLOSE, b"\x03\xe8bye").serialize(mask=False)
    return wire


def client_frames(data: bytes) -> list[tuple[Opcode, bytes] | str]:
    """The frames a client wrote (masked, each with its own mask), as opcode and payload; its EOF as `<eof>`."""
    eof = data.endswith(b"<eof>")
    reader = StreamReader()
    reader.feed_data(data.removesuffix(b"<eof>"))
    reader.feed_eof()
    frames: list[tuple[Opcode, bytes] | str] = []
    while not reader.at_eof():
        parser = Frame.parse(reader.read_exact, mask=True)
        try:
            while True:
                next(parser)
        except StopIteration as done:
            frames.append((done.value.opcode, bytes(done.value.data)))
    return [*frames, "<eof>"] if eof else frames


def read(chunks: list[bytes], own_frames: bool) -> tuple[list[str], list[bytes], object, object]:
    async def run() -> tuple[list[str], list[bytes], object, object]:
        protocol = client()
        socket = UpstreamWS(protocol)
        transport = Transport()
        socket.connection_made(transport)  # type: ignore[arg-type]
        if not own_frames:
            socket._whole_frames = lambda data: (setattr(socket, "_own_frames", False), data)[1]  # type: ignore[method-assign]
        for chunk in chunks:
            socket.data_received(chunk)
        socket.eof_received()
        socket.connection_lost(None)
        close = protocol.close_exc if protocol.state is State.CLOSED else None
        code = getattr(getattr(close, "rcvd", None), "code", None)
        return list(socket.messages), client_frames(b"".join(transport.written[1:])), protocol.state, code

    return asyncio.run(run())


TEXTS = st.text(alphabet=st.characters(codec="utf-8"), max_size=200)
FRAMES = st.one_of(
    st.tuples(st.just("text"), TEXTS),
    st.tuples(st.just("fragments"), st.lists(TEXTS, min_size=2, max_size=4)),
    st.tuples(st.just("ping"), st.text(alphabet="abc", max_size=10)),
    st.tuples(st.just("text"), st.just("x" * (MAX_SIZE + 1))),  # over the limit: the protocol fails the socket
    st.tuples(st.just("raw"), st.just(Frame(Opcode.TEXT, b"\xff\xfe not utf-8"))),
    st.just(("close", None)),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(FRAMES, max_size=8), st.lists(st.integers(0, 3000), max_size=6))
def test_the_client_gets_what_the_protocol_alone_gets_for_any_frames_in_any_chunking(
    frames: list[tuple[str, Any]], cuts: list[int]
) -> None:
    wire = server_bytes(frames)
    points = sorted({0, len(wire), *(cut % (len(wire) + 1) for cut in cuts)})
    chunks = [wire[a:b] for a, b in itertools.pairwise(points)]
    got = read(chunks, own_frames=True)
    assert got == read(chunks, own_frames=False)
    assert got[2] is State.CLOSED  # the upgrade was accepted: the stream's end closed an open socket


def test_whole_text_frames_are_read_without_the_protocols_frame_parser() -> None:
    wire = server_bytes([("text", "one"), ("ping", "p"), ("text", "two")])
    parsed: list[bytes] = []

    async def run() -> list[str]:
        protocol = client()
        given_to_protocol = protocol.receive_data
        protocol.receive_data = lambda data: (parsed.append(data), given_to_protocol(data))[1]  # type: ignore[method-assign]
        socket = UpstreamWS(protocol)
        socket.connection_made(Transport())  # type: ignore[arg-type]
        socket.data_received(wire)
        return list(socket.messages)

    assert asyncio.run(run()) == ["one", "two"]
    assert len(parsed) == 2 and parsed[0].startswith(b"HTTP/1.1 101") and parsed[1] == b"\x89\x01p"  # head, ping
