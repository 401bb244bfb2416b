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

from ..protocol.events import ENDING_TYPES
from ..protocol.plan import EventRuns, PlannedEvent, StreamCut, sse_comment, verbatim
from ..protocol.sse import SSEMessage
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
    planned = verbatim(text, transport, lazy=True)
    if planned.type != kind:  # `type` stated twice: the last is the event's (as parsed)
        planned = verbatim(text, transport)
    return planned, kind


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
