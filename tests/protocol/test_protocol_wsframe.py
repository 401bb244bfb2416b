"""rrkit's own framing of the common WebSocket frame: byte for byte what websockets writes, and found where
websockets' parser finds it."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from websockets.frames import Frame, Opcode

from rrkit.protocol.wsframe import payload_bounds, text_frame, text_frames, whole_texts

LENGTHS = [0, 1, 125, 126, 127, 65535, 65536, 70000]


@pytest.mark.parametrize("length", LENGTHS)
def test_a_text_frame_is_what_websockets_writes_for_the_same_text(length: int) -> None:
    payload = b"x" * length
    assert text_frame(payload) == Frame(Opcode.TEXT, payload).serialize(mask=False)


@pytest.mark.parametrize("length", LENGTHS)
def test_a_frames_payload_is_found_whole_and_not_before_its_header_is(length: int) -> None:
    frame = b"junk" + text_frame(b"y" * length)
    begin, end = payload_bounds(frame, 4, None) or (0, 0)
    assert frame[begin:end] == b"y" * length and end == len(frame)
    header = begin - 4
    assert all(payload_bounds(frame[: 4 + cut], 4, None) is None for cut in range(header))


def test_a_masked_frame_or_one_over_the_limit_is_refused() -> None:
    masked = Frame(Opcode.TEXT, b"hello").serialize(mask=True)
    assert payload_bounds(masked, 0, None) == (-1, -1)
    assert payload_bounds(text_frame(b"z" * 200), 0, 199) == (-1, -1)
    assert payload_bounds(text_frame(b"z" * 200), 0, 200) is not None


def test_text_frames_are_the_frames_of_each_message_one_after_another() -> None:
    payloads = [b"x" * length for length in LENGTHS]
    assert text_frames(payloads) == b"".join(Frame(Opcode.TEXT, one).serialize(mask=False) for one in payloads)


OTHER_FRAMES = [
    Frame(Opcode.TEXT, b"masked").serialize(mask=True),
    Frame(Opcode.TEXT, b"m" * 70000).serialize(mask=True),  # the length byte 127 with the mask bit
    Frame(Opcode.PING, b"").serialize(mask=False),
    Frame(Opcode.TEXT, b"first half", fin=False).serialize(mask=False),
    Frame(Opcode.BINARY, b"\x00").serialize(mask=False),
]


@settings(max_examples=300, deadline=None)
@given(
    texts=st.lists(st.sampled_from([b"", b"{}", b"x" * 125, b"y" * 126, b"z" * 65536, "\u00e9".encode(), b"\xff"])),
    other=st.sampled_from([b"", *OTHER_FRAMES]),
    cut=st.one_of(st.just(-1), st.integers(0, 200_000)),  # -1: the whole stream
    limit=st.sampled_from([None, 300]),
)
def test_whole_texts_reads_the_whole_text_frames_up_to_any_other_or_unfinished_one(
    texts: list[bytes], other: bytes, cut: int, limit: int | None
) -> None:
    stream = b"junk" + text_frames(texts) + other
    buffer = stream if cut < 0 else stream[: 4 + cut % (len(stream) - 3)]
    found, stop = whole_texts(buffer, 4, limit)
    whole, at = [], 4
    for payload in texts:  # each frame read whole, up to one over the limit or cut short
        if (limit is not None and len(payload) > limit) or at + len(text_frame(payload)) > len(buffer):
            break
        whole.append(payload.decode("utf-8", "replace"))
        at += len(text_frame(payload))
    assert (found, stop) == (whole, at)
