"""Upstream events on their way to the client: each checked (a JSON object with a string `type`, parsed exactly
only if read), an SSE read's messages as one run up to a terminal event, and how a stream that breaks is cut."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator

import httpx
import orjson
from websockets.exceptions import ConnectionClosed

from ..protocol.events import ENDING_TYPES, SSE_COMMENT
from ..protocol.exceptions import SSEMessageTooLong
from ..protocol.plan import EventRuns, PlannedEvent, StreamCut, as_sent, sse_comment, verbatim_of_type
from ..protocol.sse import SSEDecoder, SSEMessage, encode_comment, encode_sse
from ..protocol.vocabulary import Transport

_DRAIN_SECONDS = 1.0


def planned_event(raw: str, transport: Transport) -> tuple[PlannedEvent, str]:
    """One upstream event made ready for the client's transport, and its type; anything but a JSON object with
    a string `type` is a protocol error, which cuts the stream. The text is checked now (orjson) and parsed
    exactly only if the event is read (a recording); only an SSE event whose data spans lines is re-encoded to
    one line."""
    text = raw if raw.startswith("{") and raw.endswith("}") else raw.strip()  # no copy in the common case
    if not text.startswith("{"):
        raise StreamCut("tcp", reason="upstream sent an event that is not a JSON object")
    try:
        if transport != "ws" and ("\n" in text or "\r" in text):
            text = json.dumps(json.loads(text), ensure_ascii=False, separators=(",", ":"))  # SSE data: one line
        try:
            kind = orjson.loads(text).get("type")
        except orjson.JSONDecodeError:  # NaN, a lone surrogate: what only the standard library reads
            kind = json.loads(text).get("type")
    except ValueError:
        raise StreamCut("tcp", reason="upstream sent an event that is not valid JSON") from None
    if not isinstance(kind, str):
        raise StreamCut("tcp", reason="upstream sent an event without a `type`")
    return verbatim_of_type(text, kind, transport), kind


def sse_run(messages: list[SSEMessage], transport: Transport) -> tuple[list[PlannedEvent], bool | StreamCut]:
    """The events of one read's SSE messages (comments included, `[DONE]` left out), up to a terminal event
    (then True) or one that cuts the stream (then that cut, raised once the events before it went out)."""
    run: list[PlannedEvent] = []
    for message in messages:
        if message.comment is not None:
            run.append(sse_comment(message.comment))
        elif message.data != "[DONE]":
            try:
                planned, kind = planned_event(message.data, transport)
            except StreamCut as cut:
                return run, cut
            run.append(planned)
            if kind in ENDING_TYPES:
                return run, True
    return run, False


class UpstreamSSE:
    """An upstream's SSE body, read by read, made ready for the client: the events of each read as one run, up to
    a terminal event (then True) or one that cuts the stream (then that cut, once the events before it went out).

    While every frame is in rrkit's own encoding (`event: <its type>` then one `data:` line of a JSON object, or
    a comment), each goes out as the bytes that came, parsed once to be checked; the first read holding any other
    form hands itself and the rest of the stream to an `SSEDecoder`, message by message. Both ways give the same
    events and the same bytes: a frame passes as it came only if it is exactly what the decoder's way makes."""

    def __init__(self, transport: Transport, max_message: int | None = None) -> None:
        self.transport = transport
        self.max_message = max_message
        self._tail = b""
        self._decoder: SSEDecoder | None = None

    def feed(self, chunk: bytes) -> tuple[list[PlannedEvent], bool | StreamCut]:
        buffer = self._tail + chunk if self._tail else chunk
        if self._decoder is None and self.transport != "ws" and b"\r" not in buffer:
            end = buffer.rfind(b"\n\n")
            found = _as_they_came(buffer, end) if end != -1 else ([], False)
            if found is not None:
                self._tail = buffer[end + 2 :] if end != -1 else buffer
                if self.max_message is not None and len(self._tail) > self.max_message:
                    raise SSEMessageTooLong(
                        f"an SSE line or message longer than {self.max_message} bytes, still unfinished"
                    )
                return found
        if self._decoder is None:
            self._decoder = SSEDecoder(keep_comments=True, max_message=self.max_message)
            self._tail = b""
        return sse_run(self._decoder.feed(buffer), self.transport)


def _as_they_came(buffer: bytes, end: int) -> tuple[list[PlannedEvent], bool] | None:
    """The whole frames of `buffer` (up to the blank line at `end`) as they came, up to a terminal event; None
    if any is not in rrkit's encoding of its own event."""
    run: list[PlannedEvent] = []
    find, loads = buffer.find, orjson.loads
    start = 0
    while start < end:
        stop = find(b"\n\n", start)
        frame = buffer[start : stop + 2]
        start = stop + 2
        if frame.startswith(b":"):
            try:
                comment = frame[1:-2].decode()
            except UnicodeDecodeError:
                return None
            if "\n" in comment or encode_comment(comment) != frame:  # one line, or a decoder reads two
                return None
            run.append(as_sent(frame, SSE_COMMENT))
            continue
        data = frame[frame.find(b"\ndata: ") + 7 : -2]
        if b"\n" in data:  # JSON over two lines: the second is no `data:` line to a decoder
            return None
        try:
            kind = loads(data).get("type") if data.startswith(b"{") else None
        except orjson.JSONDecodeError:
            return None
        if not isinstance(kind, str) or encode_sse(kind, data) != frame:
            return None
        run.append(as_sent(frame, kind))
        if kind in ENDING_TYPES:
            return run, True
    return run, False


async def drain(chunks: AsyncIterator[bytes]) -> None:
    """Read what follows the terminal event (`[DONE]`, the end of the body) for a moment: a body read to its
    end keeps its connection for the next request, and leaves none of httpx's nested stream generators to be
    finalized later (when the loop may be gone)."""
    with contextlib.suppress(httpx.HTTPError, TimeoutError):
        async with asyncio.timeout(_DRAIN_SECONDS):
            async for _ in chunks:
                pass


def cut_of(closed: ConnectionClosed) -> StreamCut:
    """The upstream closed its socket: a close frame with a code is passed on as such, else a bare TCP close."""
    received = closed.rcvd
    if received is not None and 1000 <= received.code <= 4999 and received.code not in (1005, 1006, 1015):
        return StreamCut("frame", received.code, received.reason)
    return StreamCut("tcp", reason="upstream closed the socket without a close frame")


async def cut_at_once(cut: StreamCut) -> EventRuns:
    raise cut
    yield  # an async generator that never yields
