"""rrkit's own framing of the common WebSocket frame: byte for byte what websockets writes, and found where
websockets' parser finds it."""

from __future__ import annotations

import pytest
from websockets.frames import Frame, Opcode

from rrkit.protocol.wsframe import payload_bounds, text_frame

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
