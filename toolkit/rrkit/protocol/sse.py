"""Server-sent events: an encoder and an incremental decoder (bytes in, events out, any chunking)."""

from __future__ import annotations

import functools
import json
from typing import Any, NamedTuple

import orjson

from .exceptions import SSEMessageTooLong
from .jsontext import parse_peer_json

KEEPALIVE = b": ping\n\n"
"""Keep-alives are comment lines: an `event:` block without `data:` crashes the official SDK."""


def encode_json(payload: Any) -> bytes:
    """Compact UTF-8 JSON, the one encoding of an event on the wire. orjson in the common case; what it refuses
    (integers beyond 64 bits, nesting beyond 255, non-string keys) goes through the standard library, so that a
    big integer a request carried comes back exactly (a lone surrogate, if one got this far, is escaped)."""
    try:
        return orjson.dumps(payload)
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return _encode_json_exactly(payload)


def _encode_json_exactly(payload: Any) -> bytes:
    try:
        return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()
    except UnicodeEncodeError:
        return json.dumps(payload, separators=(",", ":")).encode()


def encode_sse(event_type: str, data: bytes) -> bytes:
    """One SSE frame, `event: <type>` then `data: <json>`; `data` must be one line (compact JSON is). A type no
    UTF-8 can carry (a lone surrogate) is named with backslash escapes; the data states it exactly."""
    return sse_head(event_type) + data + b"\n\n"


@functools.lru_cache(maxsize=512)  # a stream names a handful of types, each in every one of its events
def sse_head(event_type: str) -> bytes:
    """An SSE frame's bytes before its data: `event: <type>` then `data: `."""
    return b"event: " + event_type.encode("utf-8", "backslashreplace") + b"\ndata: "


def encode_event(event: dict[str, Any]) -> bytes:
    return encode_sse(str(event["type"]), encode_json(event))


def encode_comment(text: str) -> bytes:
    """An SSE comment line (`: text`), what servers send as a keep-alive; `text` must be one line."""
    return b":" + text.encode() + b"\n\n"


class SSEMessage(NamedTuple):
    """One dispatched SSE message (WHATWG semantics: `data` lines joined with newlines). A named tuple: a relay
    makes one per event, and a frozen dataclass costs several times as much to make."""

    data: str
    event: str = "message"
    id: str | None = None
    retry: int | None = None
    comment: str | None = None  # a comment line (`: ping`), only from a decoder made with keep_comments=True

    def json(self) -> Any:
        """The data's JSON value; UnsafeJSON (a ValueError) when it is not JSON or nests too deep to read."""
        return parse_peer_json(self.data, what="SSE event")


class SSEDecoder:
    """Feed bytes as they arrive, in any chunking; get back the complete messages so far.

    With `keep_comments`, each comment line comes back too, as a message whose `comment` is its text (what a
    relay needs to pass keep-alives on); clients leave it off, as the spec says."""

    def __init__(self, *, keep_comments: bool = False, max_message: int | None = None) -> None:
        self.keep_comments = keep_comments
        self.max_message = max_message  # bytes an unfinished line or message may reach (None: any)
        self._buffer = b""
        self._held: list[bytes] = []  # chunks without a line end, after the unfinished line: joined once, later
        self._held_size = 0
        self._data: list[str] = []
        self._event = ""
        self._id: str | None = None
        self._retry: int | None = None
        self._pending_cr = False

    def feed(self, chunk: bytes) -> list[SSEMessage]:
        if not chunk:
            return []  # an empty read must not forget a CR that may pair with the next chunk's LF
        if self._pending_cr and chunk.startswith(b"\n"):
            chunk = chunk[1:]
        self._pending_cr = False
        if (self._buffer or self._held) and b"\n" not in chunk and b"\r" not in chunk:
            # no line can end in this chunk: keep it aside, so that a long unfinished line costs linear work
            self._held.append(chunk)
            self._held_size += len(chunk)
            self._check_size()
            return []
        if self._held:
            buffer = b"".join([self._buffer, *self._held, chunk])
            self._held, self._held_size = [], 0
        else:
            buffer = self._buffer + chunk if self._buffer else chunk
        messages: list[SSEMessage] = []
        start = 0 if b"\r" in buffer else self._frames(buffer, messages)
        self._buffer = buffer[self._lines(buffer, start, len(buffer), messages) :]
        self._check_size()
        return messages

    def _check_size(self) -> None:
        unfinished = len(self._buffer) + self._held_size + sum(map(len, self._data))
        if self.max_message is not None and unfinished > self.max_message:
            raise SSEMessageTooLong(f"an SSE line or message longer than {self.max_message} bytes, still unfinished")

    def _frames(self, buffer: bytes, messages: list[SSEMessage]) -> int:
        """Whole messages of LF-only bytes in the common forms (`event: X` then `data: Y`, a lone `data: Y`, a
        comment), each cut out as its lines are found; a message of any other form, or not finished yet, is left to
        the search for its blank line below. Returns where the unfinished message begins."""
        find, starts = buffer.find, buffer.startswith
        start, length = 0, len(buffer)
        while start < length:
            if not (self._data or self._event):  # else a message begun in an earlier read: line by line
                event, line = "message", start
                if starts(b"event: ", start):
                    newline = find(b"\n", start + 7)
                    if newline == -1:
                        return start
                    event = buffer[start + 7 : newline].decode("utf-8", "replace") or "message"
                    line = newline + 1
                elif starts(b":", start):
                    newline = find(b"\n", start)
                    if -1 < newline < length - 1 and buffer[newline + 1] == 0x0A:  # else unfinished, or more lines
                        if self.keep_comments:
                            comment = buffer[start + 1 : newline].decode("utf-8", "replace")
                            messages.append(SSEMessage("", "", comment=comment))
                        start = newline + 2
                        continue
                if starts(b"data: ", line):
                    newline = find(b"\n", line + 6)
                    if -1 < newline < length - 1 and buffer[newline + 1] == 0x0A:  # likewise
                        data = buffer[line + 6 : newline].decode("utf-8", "replace")
                        messages.append(SSEMessage(data, event, self._id, self._retry))
                        start = newline + 2
                        continue
            end = find(b"\n\n", start)
            if end == -1:
                return start
            self._lines(buffer, start, end + 2, messages)
            start = end + 2
        return start

    def _lines(self, buffer: bytes, start: int, stop: int, messages: list[SSEMessage]) -> int:
        """The whole lines of `buffer[start:stop]`, one by one; returns where the unfinished line begins."""
        cr = buffer.find(b"\r", start, stop)
        lf = buffer.find(b"\n", start, stop)
        while start < stop:
            if -1 < cr < start:  # each line end is searched for once, not once per line
                cr = buffer.find(b"\r", start, stop)
            if -1 < lf < start:
                lf = buffer.find(b"\n", start, stop)
            if cr == -1 and lf == -1:
                break
            if cr == -1 or (lf != -1 and lf < cr):
                end, next_start = lf, lf + 1
            else:
                end = cr
                if cr + 1 < stop:
                    next_start = cr + 2 if buffer[cr + 1 : cr + 2] == b"\n" else cr + 1
                else:
                    next_start = cr + 1
                    self._pending_cr = True
            message = self._line(buffer[start:end].decode("utf-8", errors="replace"))
            if message is not None:
                messages.append(message)
            start = next_start
        return start

    def close(self) -> list[SSEMessage]:
        """End of stream: a message without its terminating blank line is discarded (per spec)."""
        self._buffer, self._held, self._held_size = b"", [], 0
        self._data, self._event = [], ""
        return []

    @property
    def has_partial(self) -> bool:
        """True if bytes of an unfinished message are buffered (the stream was cut mid-message)."""
        return bool(self._buffer or self._held or self._data or self._event)

    def _line(self, line: str) -> SSEMessage | None:
        if not line:
            if not self._data:
                self._event = ""
                return None
            message = SSEMessage(
                data="\n".join(self._data), event=self._event or "message", id=self._id, retry=self._retry
            )
            self._data, self._event = [], ""
            return message
        if line.startswith(":"):
            return SSEMessage(data="", event="", comment=line[1:]) if self.keep_comments else None
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id" and "\0" not in value:
            self._id = value
        elif name == "retry" and value.isascii() and value.isdigit():  # ASCII digits only: '²' is a digit to
            self._retry = int(value)  # str.isdigit() but not to int(), and the spec takes no other digits
        return None


def iter_events(messages: list[SSEMessage]) -> list[dict[str, Any]]:
    """Decode SSE messages into event dicts, skipping `[DONE]` (clients dispatch on the JSON `type`)."""
    return [message.json() for message in messages if message.data != "[DONE]"]
