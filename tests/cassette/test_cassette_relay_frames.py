"""The proxy's SSE reader: frames already in rrkit's encoding go out as the bytes that came, and any other form is
read message by message; both ways give the same events, types and bytes for every stream under every chunking."""

from __future__ import annotations

import collections
import itertools
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rrkit.protocol.exceptions import SSEMessageTooLong
from rrkit.protocol.plan import PlannedEvent, StreamCut
from rrkit.protocol.sse import SSEDecoder, encode_event
from rrkit.relay import events as relay_events
from rrkit.relay.events import UpstreamSSE, sse_run

CREATED = encode_event({"type": "response.created", "sequence_number": 0, "response": {"id": "resp_1"}})
DELTA = encode_event({"type": "response.output_text.delta", "sequence_number": 1, "delta": "w\u00f6rd \U0001f389"})
COMPLETED = encode_event({"type": "response.completed", "sequence_number": 2, "response": {"id": "resp_1"}})
PING = b": ping\n\n"

ODD_FRAMES = [
    b'data: {"type":"response.output_text.delta","delta":"no event line"}\n\n',  # gains an `event:` line
    b'event: wrong.name\ndata: {"type":"response.output_text.delta","delta":"x"}\n\n',
    b'event: response.output_text.delta\ndata: {"type":"response.output_text.delta",\ndata: "delta":"two lines"}\n\n',
    b'event: response.output_text.delta\r\ndata: {"type":"response.output_text.delta","delta":"crlf"}\r\n\r\n',
    b'event: response.output_text.delta\ndata:  {"type":"response.output_text.delta","delta":"padded"} \n\n',
    b'event: a\ndata: {"type":"a","type":"response.output_text.delta"}\n\n',  # the last `type` is the event's
    b'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","n":NaN}\n\n',
    b'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","n":123456789012345678901}\n\n',
    b'id: 7\nevent: response.output_text.delta\ndata: {"type":"response.output_text.delta","delta":"id"}\n\n',
    b'event: response.output_text.delta\ndata: {"type":"response.output_text.delta",\n"delta":"a line, no field"}\n\n',
    b'event: a\nb\ndata: {"type":"a\\nb"}\n\n',  # a type with a newline: the `event:` line ends inside it
    b'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","delta":"tail"} \n\n',
    b'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","delta":"\xff"}\n\n',
    b'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","n":1e999}\n\n',
    b'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","s":"\\ud800"}\n\n',
    b'event: rrkit.sse_comment\ndata: {"type":"rrkit.sse_comment","comment":"a type of rrkit\'s own"}\n\n',
    b'event: rrkit.unparsable\ndata: {"type":"rrkit.unparsable","data":"{}"}\n\n',
    b'event: a\\b\ndata: {"type":"a\\\\b"}\n\n',  # a backslash in the type
    b'event: \xe9\ndata: {"type":"\xe9"}\n\n',  # a name that is not UTF-8
    b"event: response.output_text.delta\n\n",  # no data line
    b'event: response.output_text.delta\ndata:{"type":"response.output_text.delta"}\n\n',  # no space
    b": a comment\nthen a line\n\n",
    b"data: [DONE]\n\n",
    b": \xff not utf-8\n\n",
    b"\n",
]
CUTS = [b"data: not json\n\n", b'data: {"no":"type"}\n\n', b"data: [1, 2]\n\n"]


def by_decoder(stream: bytes, chunks: list[bytes]) -> list[tuple[str | bytes, str | None, object]]:
    """What the message-by-message way makes of the stream, read in the same chunks: (wire, type, event) of each
    event up to the end or a cut, and the end (True, False or the cut's reason)."""
    decoder, got = SSEDecoder(keep_comments=True), []
    for chunk in chunks:
        run, end = sse_run(decoder.feed(chunk), "http")
        got += [(one.wire, one.type, one.event) for one in run]
        if end:
            return [*got, ("end", None, end.reason if isinstance(end, StreamCut) else end)]
    return got


def by_reader(chunks: list[bytes]) -> tuple[list[tuple[str | bytes, str | None, object]], list[PlannedEvent]]:
    reader, got, events = UpstreamSSE("http"), [], []
    for chunk in chunks:
        run, end = reader.feed(chunk)
        events += run
        got += [(one.wire, one.type, one.event) for one in run]
        if end:
            return [*got, ("end", None, end.reason if isinstance(end, StreamCut) else end)], events
    return got, events


def runs_of(stream: bytes) -> list[Sequence[PlannedEvent]]:
    """The runs the reader makes of `stream`, read in pieces of one frame and a half."""
    reader, runs = UpstreamSSE("http"), []
    for start in range(0, len(stream), 150):
        run, _ = reader.feed(stream[start : start + 150])
        runs.append(run)
    return runs


def chunked(stream: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({0, len(stream), *(cut % (len(stream) + 1) for cut in cuts)})
    return [stream[a:b] for a, b in itertools.pairwise(points)]


FRAMES = st.sampled_from([CREATED, DELTA, PING, *ODD_FRAMES, *CUTS])


@settings(max_examples=300, deadline=None)
@given(
    st.lists(FRAMES, max_size=8),
    st.sampled_from([b"", COMPLETED, COMPLETED + b"data: [DONE]\n\n"]),
    st.lists(st.integers(0, 4000), max_size=6),
)
def test_the_reader_gives_what_the_decoder_gives_for_any_stream_in_any_chunking(
    frames: list[bytes], ending: bytes, cuts: list[int]
) -> None:
    stream = CREATED + b"".join(frames) + ending
    chunks = chunked(stream, cuts)
    assert by_reader(chunks)[0] == by_decoder(stream, chunks)


def test_frames_in_rrkits_encoding_go_out_as_the_bytes_that_came() -> None:
    stream = CREATED + PING + DELTA + COMPLETED
    got, events = by_reader([stream])
    assert [one.wire for one in events] == [CREATED, PING, DELTA, COMPLETED]
    assert {type(one).__name__ for one in events} == {"_WireOnly"}  # made from the bytes, parsed only when read
    assert all(type(run).__name__ == "WireRun" for run in runs_of(stream))  # no event made until one is read
    assert got[-1] == ("end", None, True)
    assert events[2].event["delta"] == "w\u00f6rd \U0001f389"


def test_a_frame_in_another_form_hands_the_rest_of_the_stream_to_the_decoder() -> None:
    reader = UpstreamSSE("http")
    first, _ = reader.feed(CREATED)
    odd, _ = reader.feed(ODD_FRAMES[0])
    after, end = reader.feed(DELTA + COMPLETED)
    assert type(first[0]).__name__ == "_WireOnly" and type(odd[0]).__name__ != "_WireOnly"
    assert odd[0].wire == b"event: response.output_text.delta\n" + ODD_FRAMES[0]
    assert [one.wire for one in after] == [DELTA, COMPLETED] and end is True


def test_an_unfinished_frame_past_the_limit_raises_in_either_way() -> None:
    with pytest.raises(SSEMessageTooLong):
        UpstreamSSE("http", max_message=64).feed(CREATED + b"data: " + b"x" * 100)
    reader = UpstreamSSE("http", max_message=64)
    reader.feed(b"data: [1]\n\n")  # not rrkit's form: the decoder reads on
    with pytest.raises(SSEMessageTooLong):
        reader.feed(b"data: " + b"x" * 100)


def test_the_event_names_the_reader_keeps_are_bounded() -> None:
    reader = UpstreamSSE("http")
    for index in range(2_000):
        run, _ = reader.feed(encode_event({"type": f"made.up.{index}"}))
        assert [one.type for one in run] == [f"made.up.{index}"]
    assert len(relay_events._NAMES) <= relay_events._NAMES_KEPT


@settings(max_examples=300, deadline=None)
@given(st.lists(FRAMES, min_size=1, max_size=8), st.sampled_from([b"", COMPLETED, COMPLETED + DELTA]))
def test_a_read_taken_whole_gives_what_it_gives_frame_by_frame(frames: list[bytes], ending: bytes) -> None:
    buffer = CREATED + b"".join(frames) + ending
    end = buffer.rfind(b"\n\n")
    relay_events._frame_by_frame(buffer, end)  # the names of its frames met once
    whole = relay_events._tiled(buffer, end)
    if whole is not None:
        one_by_one = relay_events._frame_by_frame(buffer, end)
        assert one_by_one is not None
        assert (list(whole[0].wires), list(whole[0].types), whole[1]) == (
            list(one_by_one[0].wires),
            list(one_by_one[0].types),
            one_by_one[1],
        )


def test_a_read_of_known_frames_is_taken_whole_up_to_its_terminal_event() -> None:
    buffer = CREATED + DELTA + COMPLETED + DELTA
    relay_events._frame_by_frame(buffer, len(buffer) - 2)
    run, ends = relay_events._tiled(buffer, len(buffer) - 2) or (None, None)
    assert run is not None and ends is True
    assert list(run.wires) == [CREATED, DELTA, COMPLETED]
    assert relay_events._tiled(CREATED + PING + DELTA, len(CREATED + PING + DELTA) - 2) is None  # a comment


WS_MESSAGES = [
    '{"type":"response.created","response":{"id":"resp_1"}}',
    '{"type":"response.output_text.delta","delta":"w\u00f6rd"}',
    ' {"type":"response.output_text.delta","delta":"padded"} ',
    '{"type":"response.output_text.delta","delta":"tail"} ',
    '{"type":"response.output_text.delta","n":NaN}',
    '{"type":"rrkit.sse_comment","comment":"a type of rrkit\'s own"}',
    '{"type":"a","type":"response.output_text.delta"}',
    '{"no":"type"}',
    "[1, 2]",
    "not json",
    '{"type":"error","error":{"code":"server_error"}}',
    '{"type":"response.completed","response":{"id":"resp_1"}}',
]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(WS_MESSAGES), max_size=12))
def test_websocket_frames_taken_whole_give_what_they_give_one_by_one(messages: list[str]) -> None:
    whole_left, one_left = collections.deque(messages), collections.deque(messages)
    whole = relay_events._whole_ws_run(whole_left)
    if whole is None:
        assert list(whole_left) == messages  # nothing taken: they go one by one
        return
    one_by_one = relay_events._ws_frame_by_frame(one_left, "ws")
    assert (list(whole[0].wires), list(whole[0].types), whole[1]) == (
        list(one_by_one[0].wires),
        list(one_by_one[0].types),
        one_by_one[1],
    )
    assert [type(event).__name__ for event in whole[0]] == [type(event).__name__ for event in one_by_one[0]]
    assert whole_left == one_left
