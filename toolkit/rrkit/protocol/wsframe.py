"""WebSocket framing (RFC 6455 5.2) for the common case only: an unmasked, unfragmented text frame with no
extension bits, made and found without a frame parser; every other frame is websockets' to read or write."""

from __future__ import annotations

import struct
from collections.abc import Iterable

WHOLE_TEXT = 0x81
"""A frame's first byte: FIN, no extension bits, opcode text (a whole message in one frame)."""

_SHORT = [bytes((WHOLE_TEXT, length)) for length in range(126)]
_MEDIUM = struct.Struct("!BBH").pack
_LONG = struct.Struct("!BBQ").pack


def text_frames(payloads: Iterable[bytes]) -> bytes:
    """Whole text messages as unmasked frames (what a server sends), one after another."""
    parts: list[bytes] = []
    add = parts.append
    for payload in payloads:
        length = len(payload)
        if length < 126:
            add(_SHORT[length])
        elif length < 65536:
            add(_MEDIUM(WHOLE_TEXT, 126, length))
        else:
            add(_LONG(WHOLE_TEXT, 127, length))
        add(payload)
    return b"".join(parts)


def text_frame(payload: bytes) -> bytes:
    """A whole text message as one unmasked frame."""
    return text_frames((payload,))


def whole_texts(buffer: bytes, start: int, max_size: int | None) -> tuple[list[str], int]:
    """The messages of the whole unmasked text frames (none over `max_size`) that follow one another from
    `start`, as text (bytes that are not UTF-8 replaced), and where they stop: at a frame of another kind, or
    one not yet whole, which `payload_bounds` reads."""
    texts: list[str] = []
    add = texts.append
    size = len(buffer)
    while size - start >= 2 and buffer[start] == WHOLE_TEXT:
        length = buffer[start + 1]  # with the mask bit: a masked frame is not read here
        if length < 126:
            begin = start + 2
        else:
            begin = start + (4 if length == 126 else 10)
            if length > 127 or begin > size:
                break
            length = int.from_bytes(buffer[start + 2 : begin], "big")
        end = begin + length
        if end > size or (max_size is not None and length > max_size):
            break
        add(buffer[begin:end].decode("utf-8", "replace"))
        start = end
    return texts, start


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
