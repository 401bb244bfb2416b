"""How a stream's bytes go out: an SSE body in pieces of N bytes (each its own HTTP chunk, split inside UTF-8
characters and inside CRLF), with LF, CRLF or CR line endings; a cut inside an event. Read off the raw socket
(the chunked framing itself), and by real SSE parsers, which must get the same events as from whole frames."""

from __future__ import annotations

import json
import socket
from typing import Any

import openai
import pytest
from websockets.exceptions import ConnectionClosed

from rrkit.cassette import cassette_from_capture
from rrkit.cassette.replay import CassetteSource
from rrkit.protocol.events import UNPARSABLE
from rrkit.protocol.ids import IdGenerator
from rrkit.protocol.sse import SSEDecoder, iter_events
from rrkit.script import Reply, Script, reply, text
from rrkit.tools.validate import validate_cassette

from .faultclient import BODY, Serve, port_of, post_sse, sdk, ws_connect, ws_request

WORDS = "Grüße, 世界! Ça va? 🙂"  # two-, three- and four-byte UTF-8 characters
WHOLE = reply(text(WORDS, chunks=4))


def pieces(fault: dict[str, Any]) -> Reply:
    return WHOLE.model_copy(update={"fault": WHOLE.fault.model_validate(fault)})


def raw_chunks(port: int) -> list[bytes]:
    """POST the default body over a bare socket; the chunks of the chunked response body, in order."""
    payload = json.dumps(BODY).encode()
    request = (
        b"POST /v1/responses HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
        + f"content-length: {len(payload)}\r\nconnection: close\r\n\r\n".encode()
        + payload
    )
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(request)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    assert b"transfer-encoding: chunked" in head.lower()
    chunks = []
    while True:
        size_line, _, rest = rest.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            return chunks
        chunks.append(rest[:size])
        assert rest[size : size + 2] == b"\r\n"
        rest = rest[size + 2 :]


def cut_body(port: int) -> bytes:
    """POST the default body over a bare socket to a server that cuts it: the body's bytes as they came, from
    chunks of which the last is cut short, with no final chunk."""
    payload = json.dumps(BODY).encode()
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(
            b"POST /v1/responses HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
            + f"content-length: {len(payload)}\r\n\r\n".encode()
            + payload
        )
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    assert not data.endswith(b"0\r\n\r\n")  # no final chunk
    body, rest = b"", data.partition(b"\r\n\r\n")[2]
    while rest:
        size_line, _, rest = rest.partition(b"\r\n")
        body, rest = body + rest[: int(size_line, 16)], rest[int(size_line, 16) + 2 :]
    return body


def frames_until_cut(server: Any) -> list[str]:
    """The frames a WebSocket request gets from a server that cuts the connection."""
    frames: list[str] = []
    with ws_connect(server) as websocket:
        websocket.send(json.dumps({"type": "response.create", **{k: v for k, v in BODY.items() if k != "stream"}}))
        with pytest.raises(ConnectionClosed):
            while True:
                frames.append(str(websocket.recv(timeout=30)))
    return frames


def shape(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """What must not change with the bytes' cut: each event's type and text (ids are new per response)."""
    return [(event["type"], str(event.get("delta", event.get("text", "")))) for event in events]


def test_one_byte_pieces_are_each_their_own_chunk_cut_inside_characters_and_crlf(serve: Serve) -> None:
    server = serve(Script(default=pieces({"chunk_bytes": 1, "line_ending": "crlf"})))
    chunks = raw_chunks(port_of(server))
    body = b"".join(chunks)
    assert {len(chunk) for chunk in chunks} == {1}
    assert body.count(b"\r\n\r\n") == body.count(b"data: ") and b"\n\n" not in body.replace(b"\r\n", b"")
    assert any(chunk[0] >= 0x80 for chunk in chunks)  # a byte of a multi-byte character, alone in its chunk
    assert "世界" in "".join(json.loads(line[6:]).get("delta", "") for line in body.decode().split("\r\n")[1::3])


@pytest.mark.parametrize("ending", ["lf", "crlf", "cr"])
@pytest.mark.parametrize("size", [1, 7])
def test_the_sdk_and_rrkit_s_parser_get_the_same_events_from_pieces_as_from_whole_frames(
    serve: Serve, size: int, ending: str
) -> None:
    server = serve(Script().add(WHOLE).add(pieces({"chunk_bytes": size, "line_ending": ending})).add(WHOLE))
    whole = shape(post_sse(server).events)
    cut = shape(post_sse(server).events)
    with sdk(server).responses.create(model="gpt-test", input="Hi", stream=True) as stream:
        by_sdk = shape([event.model_dump() for event in stream])
    assert cut == whole and len(whole) == 12
    assert by_sdk == whole


def test_rrkit_s_decoder_fed_one_byte_at_a_time_gets_the_events_of_the_whole_body(serve: Serve) -> None:
    server = serve(Script(default=pieces({"chunk_bytes": 3, "line_ending": "crlf"})))
    body = b"".join(raw_chunks(port_of(server)))
    decoder = SSEDecoder()
    one_by_one = [event for byte in body for event in iter_events(decoder.feed(bytes([byte])))]
    assert shape(one_by_one) == shape(list(iter_events(SSEDecoder().feed(body))))
    assert "".join(event.get("delta", "") for event in one_by_one) == WORDS


def test_a_websocket_message_arrives_whole_whatever_the_pieces(serve: Serve) -> None:
    server = serve(Script(default=pieces({"chunk_bytes": 1, "line_ending": "crlf"})))
    with ws_connect(server) as websocket:
        result = ws_request(websocket)
    assert "".join(event.get("delta", "") for event in result.events) == WORDS


def test_a_chunk_delay_paces_the_pieces(serve: Serve) -> None:
    server = serve(Script(default=pieces({"chunk_bytes": 64, "chunk_delay": 0.01})))
    result = post_sse(server)
    assert result.events[-1]["type"] == "response.completed"
    assert result.elapsed >= 0.1  # 12 events of over 100 bytes: 18 pieces or more, 10 ms apart (a lower bound only)


# -- a cut inside an event ------------------------------------------------------------------------


def test_a_cut_inside_an_event_leaves_half_a_frame_then_no_final_chunk(serve: Serve) -> None:
    server = serve(Script(default=pieces({"drop_after": 4, "cut_inside": True})))
    result = post_sse(server)
    assert len(result.events) == 4 and result.error is not None  # httpx: the chunked body never ended
    with pytest.raises(ValueError):
        raw_chunks(port_of(server))  # the bare socket sees the chunked body end with no final chunk
    exchange = server.settle().exchanges[0]
    assert exchange.outcome is not None and (exchange.outcome.kind.value, exchange.outcome.events_sent) == (
        "dropped",
        4,
    )


def test_half_a_frame_is_what_the_sse_parser_holds_when_the_cut_comes(serve: Serve) -> None:
    server = serve(Script(default=pieces({"drop_after": 4, "cut_inside": True})))
    body = cut_body(port_of(server))
    messages = body.split(b"\n\n")
    assert len(iter_events(SSEDecoder().feed(b"\n\n".join(messages[:-1]) + b"\n\n"))) == 4  # four whole events
    half = messages[-1].split(b"\n")[-1]
    assert half.startswith(b"data: {") and not half.endswith(b"}")  # and half of the fifth, never ended


@pytest.mark.parametrize("cut_bytes", [1, 7, 10_000])
def test_a_cut_inside_an_event_falls_after_the_bytes_it_names_all_but_the_last_at_most(
    serve: Serve, cut_bytes: int
) -> None:
    whole = raw_chunks(port_of(serve(Script(default=WHOLE), ids=IdGenerator.counting())))
    frames = b"".join(whole).split(b"\n\n")
    fifth = frames[4] + b"\n\n"  # the event cut: its frame as it goes out whole
    cut = pieces({"drop_after": 4, "cut_inside": True, "cut_bytes": cut_bytes})
    server = serve(Script(default=cut), ids=IdGenerator.counting())  # the same ids as the whole one's
    body = cut_body(port_of(server))
    sent = body.split(b"\n\n")[4]  # what went out of the fifth frame
    assert len(sent) == min(cut_bytes, len(fifth) - 1) and fifth.startswith(sent)


def test_over_websocket_a_cut_at_a_byte_sends_that_much_of_the_events_json(serve: Serve) -> None:
    server = serve(Script(default=pieces({"drop_after": 4, "cut_inside": True, "cut_bytes": 9})))
    frames = frames_until_cut(server)
    assert len(frames) == 5 and frames[4] == '{"type":"'


def test_cut_bytes_without_cut_inside_is_refused_at_load() -> None:
    with pytest.raises(ValueError, match="give cut_inside: true too"):
        WHOLE.fault.model_validate({"drop_after": 2, "cut_bytes": 3})


def test_the_sdk_raises_on_a_cut_inside_an_event(serve: Serve) -> None:
    server = serve(Script(default=pieces({"drop_after": 4, "cut_inside": True})))
    with pytest.raises(openai.APIConnectionError):
        list(sdk(server).responses.create(model="gpt-test", input="Hi", stream=True))


def test_over_websocket_half_a_frame_arrives_then_the_connection_dies(serve: Serve) -> None:
    server = serve(Script(default=pieces({"drop_after": 4, "cut_inside": True})))
    frames = frames_until_cut(server)
    assert len(frames) == 5 and json.loads(frames[0])["type"] == "response.created"
    with pytest.raises(json.JSONDecodeError):
        json.loads(frames[4])


def test_cut_inside_without_drop_after_is_refused_at_load() -> None:
    with pytest.raises(ValueError, match="give drop_after too"):
        WHOLE.fault.model_validate({"cut_inside": True})


# -- data that is not JSON --------------------------------------------------------------------------


def test_an_sse_data_line_that_is_not_json_is_sent_and_the_stream_goes_on(serve: Serve) -> None:
    server = serve(Script(default=pieces({"not_json_at": 4})))
    body = b"".join(raw_chunks(port_of(server))).decode()
    data = [line[6:] for line in body.split("\n") if line.startswith("data: ")]
    with pytest.raises(json.JSONDecodeError):
        json.loads(data[4])
    assert data[4].startswith('{"type":"response.output_text.delta"')
    assert json.loads(data[-1])["type"] == "response.completed" and len(data) == 12
    with pytest.raises(json.JSONDecodeError):
        list(sdk(server).responses.create(model="gpt-test", input="Hi", stream=True))  # the SDK stops at it


def test_over_websocket_a_frame_that_is_not_json_comes_and_the_rest_follows(serve: Serve) -> None:
    server = serve(Script(default=pieces({"not_json_at": 4})))
    with ws_connect(server) as websocket:
        result = ws_request(websocket)
    assert len(result.unreadable) == 1 and result.unreadable[0].startswith('{"type":"response.output_text.delta"')
    assert result.types[-1] == "response.completed" and len(result.events) == 11


def test_data_that_is_not_json_is_recorded_as_it_went_and_replayed_the_same(serve: Serve) -> None:
    server = serve(Script(default=pieces({"not_json_at": 4})))
    first = b"".join(raw_chunks(port_of(server))).decode()
    cassette = cassette_from_capture(server.settle().exchanges, server.connections)
    kept = cassette.exchanges[0].events[4].event
    assert kept["type"] == UNPARSABLE and kept["event"] == "response.output_text.delta"
    assert validate_cassette(cassette) == []  # the unread event holds its place; what it carried is not judged
    with serve.running(source=CassetteSource(cassette)) as replay:
        again = b"".join(raw_chunks(port_of(replay))).decode()
    bad = [line for line in first.split("\n") if line.startswith("data: ")][4]
    assert bad in again.split("\n")
