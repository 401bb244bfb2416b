"""WebSocket lanes: the creates naming a `stream_id` (the SDK's `ResponseCreate.stream_id`), answered side by side on
one socket, each lane's events tagged with it."""

from __future__ import annotations

import json
from collections.abc import Sequence

from ..protocol.jsontext import parse_json
from ..protocol.vocabulary import CloseKind
from .stream import Channel


def lane_of(text: str) -> str | None:
    """The `stream_id` a create frame names (its lane), else None."""
    if '"stream_id"' not in text:
        return None
    try:
        body = parse_json(text, what="frame")  # the frame reader: bounded nesting (it is read again, and refused)
    except ValueError:
        return None
    if not isinstance(body, dict) or body.get("type") != "response.create":
        return None
    lane = body.get("stream_id")
    return lane if isinstance(lane, str) and lane else None


class LaneChannel:
    """A lane's way to deliver its responses on the socket: every event tagged with the lane's `stream_id` (the
    capture keeps the events as the response made them)."""

    def __init__(self, socket: Channel, lane: str) -> None:
        self.socket = socket
        self.prefix = '{"stream_id":' + json.dumps(lane) + ","

    def _tagged(self, wire: str | bytes) -> str | bytes:
        text = wire.decode("utf-8") if isinstance(wire, bytes) else wire
        if not text.startswith("{") or text.lstrip("{").lstrip().startswith("}"):
            return wire  # not an object's text (a scripted broken frame): sent as it is
        return self.prefix + text[1:]

    async def send(self, wires: Sequence[str | bytes]) -> None:
        await self.socket.send([self._tagged(wire) for wire in wires])

    async def pause(self, seconds: float) -> bool:
        return await self.socket.pause(seconds)

    async def stall(self) -> None:
        await self.socket.stall()

    async def cut(self, close: CloseKind, code: int, reason: str) -> None:
        await self.socket.cut(close, code, reason)

    async def finish(self) -> None:
        await self.socket.finish()
