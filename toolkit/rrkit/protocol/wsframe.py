"""WebSocket framing (RFC 6455 5.2) for the common case only: an unmasked, unfragmented text frame with no
extension bits, made and found without a frame parser; every other frame is websockets' to read or write."""

from __future__ import annotations

WHOLE_TEXT = 0x81
"""A frame's first byte: FIN, no extension bits, opcode text (a whole message in one frame)."""


def text_frame(payload: bytes) -> bytes:
    """A whole text message as one unmasked frame (what a server sends)."""
    length = len(payload)
    if length < 126:
        return bytes((WHOLE_TEXT, length)) + payload
    if length < 65536:
        return bytes((WHOLE_TEXT, 126)) + length.to_bytes(2, "big") + payload
    return bytes((WHOLE_TEXT, 127)) + length.to_bytes(8, "big") + payload


def payload_bounds(buffer: bytes, start: int, max_size: int | None) -> tuple[int, int] | None:
    """Where the payload of the server frame at `start` begins and ends; None while its header is not whole,
    (-1, -1) for a frame that is masked or longer than `max_size` (a client refuses both)."""
    if len(buffer) - start < 2:
        return None
    second = buffer[start + 1]
    length, begin = second & 0x7F, start + 2
    if length >= 126:
        begin += 2 if length == 126 else 8
        if len(buffer) < begin:
            return None
        length = int.from_bytes(buffer[start + 2 : begin], "big")
    if second & 0x80 or (max_size is not None and length > max_size):
        return -1, -1
    return begin, begin + length
