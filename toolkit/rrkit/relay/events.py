"""Upstream events on their way to the client: each checked (a JSON object with a string `type`, read without
building it; parsed exactly only if read), the events of one read (SSE) or of the frames received (WebSocket) as
one run up to a terminal event, and how a stream that breaks is cut."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import itertools
import json
import operator
import re
from collections.abc import AsyncIterator, Iterable, Sequence
from typing import cast

import httpx
import msgspec
from websockets.exceptions import ConnectionClosed

from ..protocol.events import ENDING_TYPES, RRKIT_TYPES, SSE_COMMENT
from ..protocol.exceptions import SSEMessageTooLong
from ..protocol.jsontext import PEER_DEPTH, UnsafeJSON, check_peer_depth, parse_peer_json
from ..protocol.plan import RUN_EVENTS, EventRuns, PlannedEvent, StreamCut
from ..protocol.sse import SSEDecoder, SSEMessage, encode_comment
from ..protocol.vocabulary import Transport
from ..protocol.wire_events import WireRun, sse_comment, verbatim_of_type

_DRAIN_SECONDS = 1.0
_MAY_NEST_TOO_DEEP = 2 * PEER_DEPTH


class _Typed(msgspec.Struct):
    type: str


_decode = msgspec.json.Decoder(_Typed).decode
_type_of = operator.attrgetter("type")


def checked_type(text: str | bytes) -> str | None:
    """The string `type` (the last one stated) of `text` when it is one valid JSON object (UTF-8, if bytes),
    else None: every value is read, none is built. None also for what only the standard library reads (NaN, a
    lone surrogate) and for nesting too deep to read: the caller reads those its own slower way."""
    try:
        if isinstance(text, bytes) and not text.isascii():
            text.decode()  # msgspec passes over the bytes of strings it does not keep
        return _decode(text).type
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
        return None


def checked_types(texts: Iterable[str | bytes]) -> list[str] | None:
    """`checked_type` of many texts in one pass, bytes known to be UTF-8 (the caller checked): their types, or None
    when any is not one valid JSON object with a string `type` (check those one by one)."""
    try:
        return list(map(_type_of, map(_decode, texts)))
    except (msgspec.DecodeError, RecursionError):
        return None


def checked_event(raw: str, transport: Transport) -> tuple[str, str]:
    """One upstream event's JSON text made ready for the client's transport, and its type; anything but a JSON
    object with a string `type` is a protocol error, which cuts the stream. Only an SSE event whose data spans
    lines is re-encoded to one line."""
    # the common case, with no copy: one object, on one line over SSE
    plain = raw[:1] == "{" and raw[-1:] == "}" and (transport == "ws" or ("\n" not in raw and "\r" not in raw))
    text = raw if plain else raw.strip()
    if not text.startswith("{"):
        raise StreamCut("tcp", reason="upstream sent an event that is not a JSON object")
    if not plain and transport != "ws" and ("\n" in text or "\r" in text):
        text = _one_line(text)
    try:
        if len(text) > _MAY_NEST_TOO_DEEP:  # only then can it (each level takes two characters): a call saved
            check_peer_depth(text, what="upstream event")  # what is recorded is read and written again: bounded
        kind = checked_type(text)
        if kind is not None:
            return text, kind
        kind = parse_peer_json(text, what="upstream event").get("type")  # NaN, a lone surrogate, or no event
    except UnsafeJSON as error:
        raise StreamCut("tcp", reason=f"upstream sent an event that cannot be read: {error}") from None
    if not isinstance(kind, str):
        raise StreamCut("tcp", reason="upstream sent an event without a `type`")
    return text, kind


def _one_line(text: str) -> str:
    try:
        return json.dumps(parse_peer_json(text, what="upstream event"), ensure_ascii=False, separators=(",", ":"))
    except UnsafeJSON as error:
        raise StreamCut("tcp", reason=f"upstream sent an event that cannot be read: {error}") from None


def planned_event(raw: str, transport: Transport) -> tuple[PlannedEvent, str]:
    """`checked_event` as a planned event, parsed exactly only if it is read (a recording)."""
    text, kind = checked_event(raw, transport)
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


def ws_run(messages: collections.deque[str], transport: Transport) -> tuple[WireRun, bool | StreamCut]:
    """The upstream frames received and not yet taken as one run (at most RUN_EVENTS), up to a terminal event
    (then True) or one that cuts the stream (then that cut, raised once the frames before it went out)."""
    return (transport == "ws" and _whole_ws_run(messages)) or _ws_frame_by_frame(messages, transport)


def _ws_frame_by_frame(messages: collections.deque[str], transport: Transport) -> tuple[WireRun, bool | StreamCut]:
    run = WireRun()
    wires, types = run.wires, run.types
    while messages and len(wires) < RUN_EVENTS:
        try:
            text, kind = checked_event(messages.popleft(), transport)
        except StreamCut as cut:
            return run, cut
        if kind in RRKIT_TYPES:
            run.add(verbatim_of_type(text, kind, transport))
        else:
            wires.append(text)
            types.append(kind)
        if kind in ENDING_TYPES:
            return run, True
    return run, False


def _whole_ws_run(messages: collections.deque[str]) -> tuple[WireRun, bool] | None:
    """`ws_run` of frames that are all one JSON object each, none of rrkit's own types, in a few passes over all
    of them (no step per frame in Python); None, with nothing taken, when any is otherwise (a cut, an object
    padded with spaces): then they go one by one."""
    texts = list(itertools.islice(messages, RUN_EVENTS))
    if not all(map(_OPENS, texts)) or not all(map(_CLOSES, texts)):
        return None
    types = checked_types(texts)
    if types is None or not RRKIT_TYPES.isdisjoint(types):
        return None
    run, ends = _checked_run(texts, types)
    if len(run) == len(messages):
        messages.clear()
    else:
        for _ in range(len(run)):
            messages.popleft()
    return run, ends


def _checked_run(wires: Sequence[str | bytes], types: list[str]) -> tuple[WireRun, bool]:
    """The run of checked events (`wires` of `types`), up to the first terminal one (then True)."""
    ends = not ENDING_TYPES.isdisjoint(types)
    if ends:
        count = next(index for index, kind in enumerate(types) if kind in ENDING_TYPES) + 1
        wires, types = wires[:count], types[:count]
    run = WireRun()
    run.wires.extend(wires)
    run.types.extend(types)
    return run, ends


_OPENS, _CLOSES = operator.methodcaller("startswith", "{"), operator.methodcaller("endswith", "}")


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

    def feed(self, chunk: bytes) -> tuple[Sequence[PlannedEvent], bool | StreamCut]:
        buffer = self._tail + chunk if self._tail else chunk
        if self._decoder is None and self.transport != "ws" and b"\r" not in buffer:
            end = buffer.rfind(b"\n\n")
            found: tuple[Sequence[PlannedEvent], bool] | None = _as_they_came(buffer, end) if end != -1 else ([], False)
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


def _as_they_came(buffer: bytes, end: int) -> tuple[WireRun, bool] | None:
    """The whole frames of `buffer` (up to the blank line at `end`) as they came, up to a terminal event; None
    if any is not exactly what `encode_sse` or `encode_comment` makes of its own event: `event: <its type>`, then
    its JSON object on one `data:` line."""
    return _tiled(buffer, end) or _frame_by_frame(buffer, end)


_FRAME = re.compile(rb"((event: [^\n]*\ndata: )(\{[^\n]*\})\n\n)")
"""A frame as `encode_sse` makes it: the frame, its `event:` line with the `data: ` after it, and its JSON."""


def _tiled(buffer: bytes, end: int) -> tuple[WireRun, bool] | None:
    """`_as_they_came` of a read made only of frames of known names, none a comment, in a few passes over all of
    them (no step per frame in Python); None when it is not (the frame-by-frame way decides then)."""
    whole = buffer if len(buffer) == end + 2 else buffer[: end + 2]
    found = _FRAME.findall(whole)
    if not found:
        return None
    frames, heads, texts = zip(*found, strict=True)
    if sum(map(len, frames)) != len(whole):  # something between the frames (a comment, another form)
        return None
    types = list(map(_NAMES.get, heads))
    if None in types or not (whole.isascii() or _utf8(whole)) or checked_types(texts) != types:
        return None
    return _checked_run(frames, cast(list[str], types))


def _utf8(data: bytes) -> bool:
    try:
        data.decode()
    except UnicodeDecodeError:
        return False
    return True


def _frame_by_frame(buffer: bytes, end: int) -> tuple[WireRun, bool] | None:
    """`_as_they_came` one frame after another: a read with a comment, a name not met before, or a frame that is
    not rrkit's form."""
    run = WireRun()
    wires, types, find = run.wires, run.types, buffer.find
    start = 0
    while start < end:
        stop = find(b"\n\n", start) + 2
        if buffer[start] == _COLON:
            comment = _comment(buffer[start:stop])
            if comment is None:
                return None
            wires.append(comment)
            types.append(SSE_COMMENT)
            start = stop
            continue
        data = find(b"\n", start) + 7  # where the data line's JSON starts, after the `event:` line
        head = buffer[start:data]
        name = _NAMES.get(head) or _name_of(head)
        if (
            name is None
            or find(b"\n", data) != stop - 2  # JSON over two lines: the second is no `data:` line to a decoder
            or buffer[data] != _OPEN
            or buffer[stop - 3] != _CLOSE
            or checked_type(buffer[data : stop - 2]) != name
        ):
            return None
        wires.append(buffer[start:stop])
        types.append(name)
        start = stop
        if name in ENDING_TYPES:
            return run, True
    return run, False


_COLON, _OPEN, _CLOSE = b":{}"
_NAMES: dict[bytes, str] = {}
"""The event types named by the `event: <type>` line and `data: ` of the frames seen so far (at most
`_NAMES_KEPT`), each read once."""
_NAMES_KEPT = 256


def _name_of(head: bytes) -> str | None:
    """The event type `head` (`event: <type>` then `data: `) names, if it is how `encode_sse` names it (one not
    UTF-8, or one rrkit gives, goes to the decoder)."""
    if not (head.startswith(b"event: ") and head.endswith(b"\ndata: ")):
        return None
    try:
        name = head[7:-7].decode()
    except UnicodeDecodeError:
        return None
    if name in RRKIT_TYPES or "\\" in name:  # escaped: only the data states the type
        return None
    if len(_NAMES) < _NAMES_KEPT:
        _NAMES[head] = name
    return name


def _comment(frame: bytes) -> bytes | None:
    """A comment frame, if it is one line as `encode_comment` makes it (else a decoder may read two)."""
    try:
        comment = frame[1:-2].decode()
    except UnicodeDecodeError:
        return None
    return frame if "\n" not in comment and encode_comment(comment) == frame else None


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
