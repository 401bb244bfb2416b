"""The SSE decoder's `max_message`: a line or message still unfinished past it raises, whatever the chunking,
while messages under it pass as they always did."""

from __future__ import annotations

import pytest

from rrkit.protocol.exceptions import SSEMessageTooLong
from rrkit.protocol.sse import SSEDecoder


def test_messages_under_the_limit_pass_and_an_endless_line_raises_past_it() -> None:
    decoder = SSEDecoder(max_message=1024)
    assert [m.data for m in decoder.feed(b"event: a\ndata: " + b"x" * 900 + b"\n\n")] == ["x" * 900]
    decoder.feed(b"data: " + b"y" * 500)
    with pytest.raises(SSEMessageTooLong, match="longer than 1024 bytes"):
        decoder.feed(b"y" * 600)


@pytest.mark.parametrize("ending", [b"\n", b"\r\n"])
def test_a_message_of_many_short_lines_counts_as_a_whole(ending: bytes) -> None:
    decoder = SSEDecoder(max_message=1024)
    with pytest.raises(SSEMessageTooLong):
        for _ in range(200):
            decoder.feed(b"data: " + b"z" * 10 + ending)


def test_without_a_limit_any_length_is_read() -> None:
    decoder = SSEDecoder()
    decoder.feed(b"data: " + b"x" * 5_000_000)
    assert [len(m.data) for m in decoder.feed(b"\n\n")] == [5_000_000]
