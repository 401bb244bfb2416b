"""The remote-server driver: requests sent to a live Responses server over HTTP (a stream, or one body) and on
WebSockets, each answer read to its end, bounded in bytes and time, and kept as the cassette keeps an exchange.
`rrkit conform --server` and `rrkit replay --against` both send through it."""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus, WebSocketException
from websockets.http11 import USER_AGENT

from ..cassette.format import RecordedBody, RecordedEvent, RecordedExchange
from ..protocol import events as ev
from ..protocol.exceptions import SSEMessageTooLong
from ..protocol.outcome import Outcome, OutcomeKind, outcome_of_body, outcome_of_events
from ..protocol.sse import SSEDecoder
from ..protocol.steer import STEER, STEER_ACCEPTED, STEER_ANSWERS, STEER_PENDING
from ..protocol.wire_events import event_of_data
from ..relay.settings import endpoints
from .ending import Ending

MAX_BODY = 16 * 1024 * 1024
"""Bytes of one answer read at most (a server that never stops is cut there)."""
MAX_EVENTS = 200_000
"""Events (comments included) kept of one answer: a flood of tiny events costs the referee memory per event, far
more than its bytes; twice the largest answers users stream."""


@dataclass
class Sent:
    """One request and its answer as the cassette records an exchange; how the answer ended, and what broke."""

    exchange: RecordedExchange
    ending: Ending = Ending.WHOLE
    error: str | None = None
    late: list[dict[str, Any]] = field(default_factory=list)  # frames of the previous response, after its end
    closed_code: int | None = None  # a WebSocket the server closed: its close code (None: no close frame)
    closed: bool = False  # the WebSocket is gone
    not_utf8: str | None = None  # where a stream's bytes stopped being UTF-8 text, as the official SDKs read it


@dataclass
class Socket:
    """A WebSocket opened (or refused): the upgrade's status and headers, and what went wrong."""

    connection: ClientConnection | None
    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    error: str | None = None


class RemoteServer:
    """A live server under `base_url` (…/v1): HTTP requests on one client, WebSockets opened on demand."""

    def __init__(self, base_url: str, *, timeout: float, max_body: int = MAX_BODY, what: str = "server URL") -> None:
        self.http_url, self.ws_url = endpoints(base_url, what)
        self.base_url = self.http_url.removesuffix("/responses")
        self.timeout, self.max_body = timeout, max_body
        self.start = time.monotonic()
        self._client: httpx.AsyncClient | None = None

    async def __aenter__(self) -> RemoteServer:
        self._client = httpx.AsyncClient(timeout=httpx.Timeout(self.timeout), trust_env=False)
        return self

    async def __aexit__(self, *_: object) -> None:
        if self._client is not None:
            await self._client.aclose()

    def _begun(self, request: RecordedExchange) -> RecordedExchange:
        return request.model_copy(update={"started_at": round(time.monotonic() - self.start, 6)})

    # -- HTTP -------------------------------------------------------------------------------------------------

    async def http(
        self, request: RecordedExchange, headers: Mapping[str, str], *, idle: float, deadline: float | None = None
    ) -> Sent:
        """Send `request` (its method, path, query and body) and read the answer: a stream event by event until it
        ends, goes silent for `idle` seconds or passes `deadline` (loop time), or a whole body."""
        assert self._client is not None, "use RemoteServer in `async with`"
        exchange = self._begun(request)
        url = self.base_url + request.path + (f"?{request.query}" if request.query else "")
        content = _content(request)
        try:
            async with self._client.stream(request.method, url, content=content, headers=dict(headers)) as response:
                head = {
                    "response_status": response.status_code,
                    "response_headers": {name.lower(): value for name, value in response.headers.items()},
                }
                exchange = exchange.model_copy(update=head)
                if response.headers.get("content-type", "").startswith("text/event-stream"):
                    return await self._stream(response, exchange, idle, deadline)
                return await self._body(response, exchange, idle, deadline)
        except httpx.TransportError as error:
            return _broken(exchange, Ending.CUT, f"{type(error).__name__}: {error}")

    async def _stream(
        self, response: httpx.Response, exchange: RecordedExchange, idle: float, deadline: float | None
    ) -> Sent:
        decoder, read, events = SSEDecoder(keep_comments=True, max_message=self.max_body), 0, list[RecordedEvent]()
        text, not_utf8 = codecs.getincrementaldecoder("utf-8")(), None
        started = time.monotonic()
        chunks = response.aiter_bytes()
        while True:
            try:
                chunk = await asyncio.wait_for(anext(chunks), _wait(idle, deadline))
                not_utf8 = not_utf8 or _not_utf8(text, chunk, read)
                read += len(chunk)
                messages = decoder.feed(chunk)
            except StopAsyncIteration:
                messages = decoder.close()
                events += (_recorded(started, message.data, message.event, message.comment) for message in messages)
                ended = _ended(exchange, events)
                ended.not_utf8 = not_utf8 or _not_utf8(text, b"", read, final=True)
                return ended
            except TimeoutError:
                return _broken(exchange, Ending.TIMEOUT, f"no end within {_waited(idle, deadline)}", events)
            except httpx.TransportError as error:
                return _broken(exchange, Ending.CUT, f"{type(error).__name__}: {error}", events)
            except SSEMessageTooLong:
                too_long = f"one event went past {self.max_body} bytes, the most read of one answer"
                return _broken(exchange, Ending.TOO_LARGE, too_long, events)
            events += (_recorded(started, message.data, message.event, message.comment) for message in messages)
            if read > self.max_body:
                return _broken(exchange, Ending.TOO_LARGE, f"the stream went past {self.max_body} bytes", events)
            if len(events) > MAX_EVENTS:
                return _broken(exchange, Ending.TOO_LARGE, f"the stream went past {MAX_EVENTS} events", events)

    async def _body(
        self, response: httpx.Response, exchange: RecordedExchange, idle: float, deadline: float | None
    ) -> Sent:
        data = bytearray()
        chunks = response.aiter_bytes()
        try:
            while True:
                data += await asyncio.wait_for(anext(chunks), _wait(idle, deadline))
                if len(data) > self.max_body:
                    return _broken(exchange, Ending.TOO_LARGE, f"the body went past {self.max_body} bytes")
        except StopAsyncIteration:
            pass
        except TimeoutError:
            return _broken(exchange, Ending.TIMEOUT, f"no end within {_waited(idle, deadline)}")
        except httpx.TransportError as error:
            return _broken(exchange, Ending.CUT, f"{type(error).__name__}: {error}")
        status = exchange.response_status or 0
        body = RecordedBody.of(bytes(data), exchange.response_headers.get("content-type", ""))
        value = body.json_value
        response_id = value.get("id") if isinstance(value, dict) and value.get("object") == "response" else None
        update = {"response_body": body, "response_id": response_id, "outcome": outcome_of_body(status, bytes(data))}
        return Sent(exchange.model_copy(update=update))

    # -- WebSocket --------------------------------------------------------------------------------------------

    async def open_socket(self, headers: Mapping[str, str], *, user_agent: str | None = USER_AGENT) -> Socket:
        """A WebSocket to `…/responses` with `headers` on its upgrade (and `user_agent`, None: none); refused, the
        status and headers it was refused with."""
        try:
            opening = connect(
                self.ws_url,
                additional_headers=dict(headers),
                user_agent_header=user_agent,
                proxy=None,
                open_timeout=None,
                max_size=self.max_body,
                close_timeout=min(self.timeout, 10.0),
                create_connection=_Bounded,
            )
            connection = await asyncio.wait_for(opening, self.timeout)
        except InvalidStatus as refused:
            heads = {name.lower(): value for name, value in refused.response.headers.raw_items()}
            return Socket(None, refused.response.status_code, heads, f"the upgrade failed: InvalidStatus: {refused}")
        except (OSError, TimeoutError, WebSocketException) as error:
            return Socket(None, None, {}, f"the upgrade failed: {type(error).__name__}: {error}")
        answered = connection.response.headers.raw_items() if connection.response is not None else []
        return Socket(connection, 101, {name.lower(): value for name, value in answered})

    async def on_socket(
        self,
        connection: ClientConnection,
        request: RecordedExchange,
        *,
        idle: float,
        deadline: float | None = None,
        late: Callable[[dict[str, Any]], bool] | None = None,
        steer: str | None = None,
    ) -> Sent:
        """Send `request`'s frame and read frames until one ends the response (a terminal event or an error
        frame); a frame `late` says is the previous response's, before this one's first, goes to `Sent.late`.
        With `steer`, a `response.steer` frame with that input goes out once the response is created, naming it,
        and the reading goes on until the steer is answered and, accepted, until its successor ended too
        (`SteerWatch`)."""
        exchange = self._begun(request)
        sent, events, started = Sent(exchange), list[RecordedEvent](), time.monotonic()
        watch = SteerWatch(steer) if steer is not None else None
        try:
            await connection.send(_frame(request))
            while True:
                message = await asyncio.wait_for(connection.recv(), _wait(idle, deadline))
                text = message if isinstance(message, str) else message.decode("utf-8", "replace")
                event = _event(text)
                if not events and late is not None and late(event):
                    sent.late.append(event)
                    continue
                events.append(RecordedEvent.of(time.monotonic() - started, event))
                if watch is not None:
                    if (frame := watch.frame_after(event)) is not None:
                        # a server that closed meanwhile fails the send: what it sent before is still read
                        with contextlib.suppress(ConnectionClosed):
                            await connection.send(json.dumps(frame))
                    if watch.done:
                        break
                elif event.get("type") in ev.ENDING_TYPES:
                    break
                if len(events) > MAX_EVENTS:
                    return _broken(exchange, Ending.TOO_LARGE, f"the answer went past {MAX_EVENTS} frames", events)
        except TimeoutError:
            waited = f"no terminal event or error frame within {_waited(idle, deadline)}"
            return _broken(exchange, Ending.TIMEOUT, waited, events, sent.late)
        except ConnectionClosed as closed:
            broken = _broken(exchange, Ending.CLOSED, f"the socket closed ({closed})", events, sent.late)
            broken.closed, broken.closed_code = True, closed.rcvd.code if closed.rcvd is not None else None
            return broken
        sent.exchange = _ended(exchange, events).exchange
        return sent

    @staticmethod
    async def drain(connection: ClientConnection) -> list[dict[str, Any]]:
        """Close, and what the server sent after the last answer's end (the close handshake delivers frames already
        on their way)."""
        await connection.close()
        frames: list[dict[str, Any]] = []
        with contextlib.suppress(ConnectionClosed):
            while True:
                message = await connection.recv()
                frames.append(_event(message if isinstance(message, str) else message.decode("utf-8", "replace")))
        return frames


class SteerWatch:
    """Steering one response from outside: the steer frame to send once it is created, and whether the reading is
    done (the steer answered, its response ended, and, when accepted, its successor ended too)."""

    def __init__(self, steer: str) -> None:
        self.steer = steer
        self.target: str | None = None
        self.answer: str | None = None  # the type of the steer's answer: accepted, pending, failed, or an error frame
        self.ends = 0  # terminal events read

    def frame_after(self, event: dict[str, Any]) -> dict[str, Any] | None:
        """The steer frame to send after this event (the first `response.created`), else None."""
        kind = event.get("type")
        if self.target is None and kind == ev.CREATED:
            response = event.get("response")
            self.target = str(response.get("id")) if isinstance(response, dict) else ""
            return {"type": STEER, "previous_response_id": self.target, "input": self.steer}
        if self.target is not None and self.answer is None and (kind in STEER_ANSWERS or kind == ev.ERROR):
            self.answer = str(kind)
        elif kind in ev.TERMINAL_TYPES or kind == ev.ERROR:  # an error frame ends what it refuses
            self.ends += 1
        return None

    @property
    def done(self) -> bool:
        if self.target is None:
            return self.ends > 0
        if self.answer is None or self.ends == 0:
            return False
        return self.answer not in (STEER_ACCEPTED, STEER_PENDING) or self.ends >= 2


class _Bounded(ClientConnection):
    """A connection a server cannot hold the referee on. It stops reading while what it must send waits unread
    (websockets answers each ping with a pong, queued without bound): a server that floods pings and never reads
    gets its pings left unread. Its close gives up after `close_timeout` even when the close frame cannot be sent
    (websockets waits for that without a bound), and drops the connection."""

    def pause_writing(self) -> None:
        super().pause_writing()
        self.transport.pause_reading()

    def resume_writing(self) -> None:
        super().resume_writing()
        if not self.recv_messages.paused:  # the message queue's own flow control keeps reading paused
            self.transport.resume_reading()

    async def close(self, code: int = 1000, reason: str = "") -> None:
        try:
            await asyncio.wait_for(super().close(code, reason), self.close_timeout)
        except TimeoutError:
            self.transport.abort()


def _not_utf8(text: codecs.IncrementalDecoder, chunk: bytes, read: int, *, final: bool = False) -> str | None:
    """Where `chunk` (at byte `read` of the stream) stops being UTF-8, or None."""
    try:
        text.decode(chunk, final=final)
    except UnicodeDecodeError as error:
        return f"byte {read + error.start}: {error.reason}"
    return None


def _content(request: RecordedExchange) -> bytes | None:
    if request.wire_request is not None:
        return json.dumps(request.wire_request).encode()
    return request.raw_body.encode() if request.raw_body is not None else None


def _frame(request: RecordedExchange) -> str:
    return json.dumps(request.wire_request) if request.wire_request is not None else request.raw_body or ""


def _event(text: str) -> dict[str, Any]:
    """A frame's (or data line's) event; what is not a JSON object is kept as the recording keeps it."""
    event = event_of_data(text)
    return event if isinstance(event, dict) else {"type": ev.UNPARSABLE, "data": text}


def _recorded(started: float, data: str, name: str, comment: str | None) -> RecordedEvent:
    event = {"type": ev.SSE_COMMENT, "comment": comment} if comment is not None else _event(data)
    if name and event.get("type") == ev.UNPARSABLE:
        event["event"] = name
    return RecordedEvent.of(time.monotonic() - started, event)


def _wait(idle: float, deadline: float | None) -> float:
    if deadline is None:
        return idle
    return max(0.0, min(idle, deadline - asyncio.get_running_loop().time()))


def _waited(idle: float, deadline: float | None) -> str:
    return f"{idle:g} s of silence" if deadline is None else "the time given"


def _stated(events: list[RecordedEvent]) -> Outcome | None:
    return outcome_of_events([e.event for e in events if e.type not in ev.SIDE_CHANNELS and e.type != ev.UNPARSABLE])


def _ended(exchange: RecordedExchange, events: list[RecordedEvent]) -> Sent:
    outcome = _stated(events) or Outcome(OutcomeKind.DROPPED, len(events))
    update = {"events": events, "outcome": outcome, "response_id": ev.response_id_of([e.event for e in events])}
    return Sent(exchange.model_copy(update=update))


def _broken(
    exchange: RecordedExchange,
    ending: Ending,
    error: str,
    events: list[RecordedEvent] | None = None,
    late: list[dict[str, Any]] | None = None,
) -> Sent:
    kind = OutcomeKind.STALLED if ending is Ending.TIMEOUT else OutcomeKind.DROPPED
    events = events or []
    outcome = Outcome(kind, len(events), message=error)
    update = {"events": events, "outcome": outcome, "response_id": ev.response_id_of([e.event for e in events])}
    return Sent(exchange.model_copy(update=update), ending, error, list(late or ()))
