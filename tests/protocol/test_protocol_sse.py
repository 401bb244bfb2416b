"""The SSE codec: the encoder's frame format and the incremental decoder under every chunking and line ending."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rrkit.protocol import SSEDecoder, SSEMessage, encode_event, iter_events
from rrkit.protocol.sse import KEEPALIVE, encode_json, encode_sse

EVENTS: list[dict[str, Any]] = [
    {"type": "response.created", "sequence_number": 0, "response": {"id": "resp_1", "output": []}},
    {"type": "response.output_text.delta", "sequence_number": 1, "delta": "héllo, wörld ✓ 🎉"},
    {"type": "response.output_text.delta", "sequence_number": 2, "delta": "line one\nline two\r\n\tand: colons"},
    {"type": "response.output_text.delta", "sequence_number": 3, "delta": ""},
    {"type": "response.completed", "sequence_number": 4, "response": {"id": "resp_1", "usage": None}},
]


def multi_event_stream() -> bytes:
    """Several events with keep-alives between them and a `[DONE]` at the end, as a server may send them."""
    frames: list[bytes] = []
    for event in EVENTS:
        frames.append(encode_event(event))
        frames.append(KEEPALIVE)
    frames.append(b"data: [DONE]\n\n")
    return b"".join(frames)


def decode_chunks(chunks: list[bytes]) -> tuple[list[SSEMessage], SSEDecoder]:
    decoder = SSEDecoder()
    messages: list[SSEMessage] = []
    for chunk in chunks:
        messages.extend(decoder.feed(chunk))
    return messages, decoder


def with_line_ending(stream: bytes, ending: bytes) -> bytes:
    # Compact JSON escapes CR and LF inside strings, so every raw LF in an encoded stream is a line end.
    return stream.replace(b"\n", ending)


# -- encoder -----------------------------------------------------------------------------------


def test_sse_encode_event_writes_event_line_data_line_and_blank_line() -> None:
    event = {"type": "response.output_text.delta", "sequence_number": 7, "delta": "a\nb é"}
    frame = encode_event(event)
    assert frame == (
        b"event: response.output_text.delta\n"
        b'data: {"type":"response.output_text.delta","sequence_number":7,"delta":"a\\nb \xc3\xa9"}\n\n'
    )


def test_sse_encode_event_data_is_one_line_of_compact_json_that_round_trips() -> None:
    for event in EVENTS:
        frame = encode_event(event)
        assert frame.endswith(b"\n\n")
        lines = frame[:-2].split(b"\n")
        assert lines == [b"event: " + event["type"].encode(), b"data: " + encode_json(event)]
        assert b"\r" not in frame
        assert json.loads(lines[1].removeprefix(b"data: ")) == event


def test_sse_encode_json_is_compact_and_keeps_non_ascii_as_utf8() -> None:
    assert encode_json({"a": [1, 2], "b": "ü"}) == '{"a":[1,2],"b":"ü"}'.encode()


def test_sse_encode_sse_frames_raw_data_under_given_event_name() -> None:
    assert encode_sse("error", b'{"x":1}') == b'event: error\ndata: {"x":1}\n\n'


def test_sse_keepalive_is_a_comment_not_an_event_block() -> None:
    assert KEEPALIVE.startswith(b":")
    assert b"event:" not in KEEPALIVE
    assert b"data:" not in KEEPALIVE
    decoder = SSEDecoder()
    assert decoder.feed(KEEPALIVE) == []
    assert not decoder.has_partial


# -- decoder: chunking -------------------------------------------------------------------------


def test_sse_decoder_decodes_whole_stream_in_one_chunk() -> None:
    messages, decoder = decode_chunks([multi_event_stream()])
    assert [message.event for message in messages] == [event["type"] for event in EVENTS] + ["message"]
    assert iter_events(messages) == EVENTS
    assert not decoder.has_partial


def test_sse_decoder_yields_same_events_when_split_at_every_byte_offset() -> None:
    stream = multi_event_stream()
    assert any(byte >= 0x80 for byte in stream), "the stream must hold multi-byte UTF-8 to test split characters"
    expected, _ = decode_chunks([stream])
    for offset in range(len(stream) + 1):
        messages, decoder = decode_chunks([stream[:offset], stream[offset:]])
        assert messages == expected, f"split at byte {offset}"
        assert not decoder.has_partial


def test_sse_decoder_yields_same_events_when_fed_one_byte_at_a_time() -> None:
    stream = multi_event_stream()
    expected, _ = decode_chunks([stream])
    messages, decoder = decode_chunks([stream[i : i + 1] for i in range(len(stream))])
    assert messages == expected
    assert iter_events(messages) == EVENTS
    assert not decoder.has_partial


@pytest.mark.parametrize("ending", [b"\r\n", b"\r"], ids=["crlf", "cr"])
def test_sse_decoder_yields_same_events_for_crlf_and_cr_at_every_split(ending: bytes) -> None:
    stream = with_line_ending(multi_event_stream(), ending)
    for offset in range(len(stream) + 1):
        messages, decoder = decode_chunks([stream[:offset], stream[offset:]])
        assert iter_events(messages) == EVENTS, f"split at byte {offset}"
        assert not decoder.has_partial


@pytest.mark.parametrize("ending", [b"\r\n", b"\r"], ids=["crlf", "cr"])
def test_sse_decoder_yields_same_events_for_crlf_and_cr_one_byte_at_a_time(ending: bytes) -> None:
    stream = with_line_ending(multi_event_stream(), ending)
    messages, _ = decode_chunks([stream[i : i + 1] for i in range(len(stream))])
    assert iter_events(messages) == EVENTS


def test_sse_decoder_pairs_cr_at_end_of_chunk_with_lf_at_start_of_next() -> None:
    # One message with two data lines: the CRLF between them is split across chunks.
    messages, _ = decode_chunks([b"data: a\r", b"\ndata: b\r\n\r\n"])
    assert [message.data for message in messages] == ["a\nb"]


def test_sse_decoder_pairs_cr_and_lf_across_an_empty_chunk() -> None:
    messages, _ = decode_chunks([b"data: a\r", b"", b"\ndata: b\r\n\r\n"])
    assert [message.data for message in messages] == ["a\nb"]


def test_sse_decoder_treats_cr_then_cr_across_chunks_as_two_line_ends() -> None:
    messages, _ = decode_chunks([b"data: a\r", b"\rdata: b\r\r"])
    assert [message.data for message in messages] == ["a", "b"]


def test_sse_decoder_accepts_mixed_line_endings_in_one_stream() -> None:
    stream = b"event: one\r\ndata: 1\n\r\nevent: two\rdata: 2\r\r: ping\n\ndata: 3\r\n\n"
    messages, _ = decode_chunks([stream])
    assert [(message.event, message.data) for message in messages] == [("one", "1"), ("two", "2"), ("message", "3")]


@st.composite
def encoded_streams(draw: st.DrawFn) -> tuple[list[dict[str, Any]], bytes]:
    texts = draw(st.lists(st.text(max_size=40), min_size=1, max_size=6))
    events = [
        {"type": "response.output_text.delta", "sequence_number": number, "delta": text}
        for number, text in enumerate(texts)
    ]
    frames: list[bytes] = []
    for event in events:
        if draw(st.booleans()):
            frames.append(KEEPALIVE)
        frames.append(encode_event(event))
    if draw(st.booleans()):
        frames.append(b"data: [DONE]\n\n")
    ending = draw(st.sampled_from([b"\n", b"\r\n", b"\r"]))
    return events, with_line_ending(b"".join(frames), ending)


@settings(deadline=None, max_examples=200)
@given(encoded=encoded_streams(), data=st.data())
def test_sse_decoder_yields_same_events_for_any_chunking(
    encoded: tuple[list[dict[str, Any]], bytes], data: st.DataObject
) -> None:
    events, stream = encoded
    # Cut anywhere, and often right after a line end; a repeated cut makes an empty read there.
    after_line_end = [index + 1 for index, byte in enumerate(stream) if byte in b"\r\n"]
    offsets = st.one_of(st.integers(0, len(stream)), st.sampled_from(after_line_end))
    cuts = sorted(data.draw(st.lists(offsets, max_size=12), label="cuts"))
    bounds = [0, *cuts, len(stream)]
    chunks = [stream[start:end] for start, end in itertools.pairwise(bounds)]
    assert b"".join(chunks) == stream
    messages, decoder = decode_chunks(chunks)
    assert iter_events(messages) == events
    assert [message.event for message in messages if message.data != "[DONE]"] == [event["type"] for event in events]
    assert not decoder.has_partial


# -- decoder: fields, comments, multi-line data ------------------------------------------------


def test_sse_decoder_ignores_comment_lines_and_keepalives() -> None:
    messages, decoder = decode_chunks([b": ping\n\n: another comment\n\n"])
    assert messages == []
    assert not decoder.has_partial


def test_sse_decoder_comment_inside_a_message_does_not_end_it() -> None:
    messages, _ = decode_chunks([b"event: x\ndata: 1\n: ping\ndata: 2\n\n"])
    assert messages == [SSEMessage(data="1\n2", event="x")]


def test_sse_decoder_joins_multi_line_data_with_newlines() -> None:
    messages, _ = decode_chunks([b'data: {"a":\ndata: 1}\n\n'])
    assert [message.data for message in messages] == ['{"a":\n1}']
    assert messages[0].json() == {"a": 1}


def test_sse_decoder_strips_exactly_one_space_after_the_colon() -> None:
    messages, _ = decode_chunks([b"data:x\n\ndata:  y\n\ndata\n\ndata:\n\n"])
    assert [message.data for message in messages] == ["x", " y", "", ""]


def test_sse_decoder_uses_event_field_and_defaults_to_message() -> None:
    messages, _ = decode_chunks([b"event: response.created\ndata: {}\n\ndata: {}\n\n"])
    assert [message.event for message in messages] == ["response.created", "message"]


def test_sse_decoder_does_not_dispatch_an_event_block_without_data() -> None:
    messages, decoder = decode_chunks([b"event: keepalive\n\ndata: 1\n\n"])
    # The event name of the data-less block must not leak into the next message.
    assert messages == [SSEMessage(data="1", event="message")]
    assert not decoder.has_partial


def test_sse_decoder_keeps_last_event_id_and_numeric_retry() -> None:
    messages, _ = decode_chunks([b"id: 7\nretry: 1500\ndata: a\n\ndata: b\n\nretry: soon\nid: x\0y\ndata: c\n\n"])
    assert [(message.data, message.id, message.retry) for message in messages] == [
        ("a", "7", 1500),
        ("b", "7", 1500),
        ("c", "7", 1500),
    ]


def test_sse_decoder_ignores_unknown_fields() -> None:
    messages, _ = decode_chunks([b"foo: bar\ndata: 1\nbaz\n\n"])
    assert [message.data for message in messages] == ["1"]


def test_sse_iter_events_skips_done_and_decodes_json() -> None:
    messages, _ = decode_chunks([encode_event(EVENTS[0]), b"data: [DONE]\n\n"])
    assert len(messages) == 2
    assert messages[1].data == "[DONE]"
    assert iter_events(messages) == [EVENTS[0]]


# -- decoder: end of stream --------------------------------------------------------------------


def test_sse_decoder_does_not_dispatch_trailing_message_without_blank_line() -> None:
    stream = encode_event(EVENTS[0]) + encode_event(EVENTS[1])[:-1]  # the last blank line never arrives
    messages, decoder = decode_chunks([stream])
    assert iter_events(messages) == [EVENTS[0]]
    assert decoder.has_partial
    assert decoder.close() == []
    assert not decoder.has_partial


@pytest.mark.parametrize(
    "tail",
    [b"data: {", b"data: 1\n", b"event: response.completed\n", b"event: response.completed"],
    ids=["unterminated-line", "data-without-blank-line", "event-line-only", "partial-event-line"],
)
def test_sse_decoder_has_partial_for_a_cut_message(tail: bytes) -> None:
    messages, decoder = decode_chunks([encode_event(EVENTS[0]), tail])
    assert iter_events(messages) == [EVENTS[0]]
    assert decoder.has_partial


@pytest.mark.parametrize("ending", [b"\n", b"\r\n", b"\r"], ids=["lf", "crlf", "cr"])
def test_sse_decoder_has_no_partial_after_complete_messages(ending: bytes) -> None:
    _, decoder = decode_chunks([with_line_ending(encode_event(EVENTS[0]) + KEEPALIVE, ending)])
    assert not decoder.has_partial
