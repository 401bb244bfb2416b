"""Every use of uvicorn's internals, in one place: the connection's transport behind `send`, the handshake flag of
its websockets-sansio protocol, its live connections and tasks, its lifespan and signal handling, its 400 to a
request it cannot parse. The version
range in pyproject.toml is the one these were checked against."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import sys
from collections.abc import Awaitable, Callable, Iterator, Sequence
from http import HTTPStatus
from types import FrameType
from typing import Any, Protocol

import uvicorn
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.exceptions import InvalidState
from websockets.protocol import State

from ..protocol import errors
from ..protocol.headers import MAX_HEADER_FIELDS, MAX_HEADER_LINE, MAX_REQUEST_HEAD
from ..protocol.plan import RUN_BYTES
from ..protocol.sse import encode_json
from ..protocol.wsframe import text_frames
from .capture import track_begun
from .timeouts import KEEP_ALIVE_SECONDS

RAW_SEND = "rrkit.raw_send"  # scope key: the server's own `send`, kept by the app's outermost layer


class KeepRawSend:
    """Outermost middleware: remembers the server's `send`, through which a fault reaches the TCP connection;
    tracks the exchanges each call begins (an error escaping the handler is recorded on them); answers an error
    that escapes an HTTP handler before it sent anything with the API's 500, then raises it for uvicorn to log (as
    Starlette's error middleware does: a handler may be called without it); and cuts the connection of an HTTP
    answer the handler left unfinished (a stall or a pause ended by the server stopping), so that the client sees
    a cut stream and uvicorn no error."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        scope[RAW_SEND] = send
        track_begun()
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = finished = False

        async def watched_send(message: Message) -> None:
            nonlocal started, finished
            started = True
            finished = finished or (message["type"] == "http.response.body" and not message.get("more_body", False))
            await send(message)

        try:
            await self.app(scope, receive, watched_send)
        except Exception as error:
            if not started:
                await _send_json(send, 500, errors.unexpected_error_body(scope["method"], scope["path"], error))
            raise
        if not finished:
            transport = connection_transport(scope)
            if transport is not None and not transport.is_closing():
                transport.abort()
                await asyncio.sleep(0)  # uvicorn sees the connection lost before it sees the handler return


async def _send_json(send: Send, status: int, body: dict[str, Any]) -> None:
    content = encode_json(body)
    length = str(len(content)).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", length)]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": content})


def _protocol(scope: Scope) -> Any:
    """uvicorn's protocol object for this connection (the owner of its `send`)."""
    return getattr(scope.get(RAW_SEND), "__self__", None)


def connection_transport(scope: Scope) -> asyncio.Transport | None:
    """The connection's transport: what a scripted cut closes."""
    transport = getattr(_protocol(scope), "transport", None)
    return transport if isinstance(transport, asyncio.BaseTransport) else None  # type: ignore[return-value]


class _StandIn(Protocol):
    def release(self) -> None:
        """Send what was held, once the transport is back in place."""


@contextlib.contextmanager
def _standing_in(scope: Scope, stand_in: Callable[[asyncio.Transport], _StandIn]) -> Iterator[None]:
    """The writes uvicorn makes for this answer go to `stand_in(transport)` inside, which is released once the
    transport is back in place. Outside uvicorn's own protocol, as is."""
    owner = _protocol(scope)
    transport = getattr(owner, "transport", None)
    if not isinstance(transport, asyncio.Transport):
        yield
        return
    held = owner.transport = stand_in(transport)
    try:
        yield
    finally:
        owner.transport = transport
        held.release()


class _Gathering:
    """A connection's transport while its writes are gathered: each write is kept, a close waits for them; every
    other call goes to the transport."""

    def __init__(self, transport: asyncio.Transport) -> None:
        self.transport = transport
        self.written: list[bytes] = []
        self.closing = False

    def write(self, data: bytes) -> None:
        self.written.append(data)

    def close(self) -> None:
        self.closing = True

    def release(self) -> None:
        if self.written and not self.transport.is_closing():
            self.transport.write(b"".join(self.written))
        if self.closing:
            self.transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.transport, name)


def one_write(scope: Scope) -> contextlib.AbstractContextManager[None]:
    """The writes uvicorn makes for the ASGI sends inside, as one write to the connection (a response's head with
    its first events: one segment, one wake-up of the client, not two). Outside uvicorn's own protocol, as is."""
    return _standing_in(scope, _Gathering)


class _Corked(asyncio.Transport):
    """An HTTP answer's transport whose writes after the first wait for the loop's next turn (or for RUN_BYTES of
    them) and then go out as one: the runs of a stream that are ready at once (a script's) are one write, not one
    each, while a stream that waits (a relay, a pause) sends what it has as it waits. A close or an abort sends
    what waits first; every other call is the transport's."""

    def __init__(self, transport: asyncio.Transport) -> None:
        super().__init__()
        self.transport = transport
        self._first = True
        self._waiting: list[bytes] = []
        self._size = 0

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if self._first:  # a response's head (with its first events): out at once
            self._first = False
            self.transport.write(data)
            return
        if not self._waiting:
            asyncio.get_running_loop().call_soon(self.flush)
        self._waiting.append(bytes(data))
        self._size += len(data)
        if self._size >= RUN_BYTES:
            self.flush()

    def release(self) -> None:
        self.flush()

    def flush(self) -> None:
        if self._waiting:
            data, self._waiting, self._size = b"".join(self._waiting), [], 0
            if not self.transport.is_closing():
                self.transport.write(data)

    def close(self) -> None:
        self.flush()
        self.transport.close()

    def abort(self) -> None:
        self.flush()
        self.transport.abort()

    def is_closing(self) -> bool:
        return self.transport.is_closing()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self.transport.get_extra_info(name, default)

    def pause_reading(self) -> None:
        self.transport.pause_reading()

    def resume_reading(self) -> None:
        self.transport.resume_reading()

    def is_reading(self) -> bool:
        return self.transport.is_reading()

    def get_write_buffer_size(self) -> int:
        return self.transport.get_write_buffer_size() + self._size

    def can_write_eof(self) -> bool:
        return self.transport.can_write_eof()

    def write_eof(self) -> None:
        self.flush()
        self.transport.write_eof()


def corked(scope: Scope) -> contextlib.AbstractContextManager[None]:
    """The writes uvicorn makes for this HTTP answer after its first, gathered until the loop's next turn (see
    `_Corked`), all sent before this returns. Outside uvicorn's own protocol, as is."""
    return _standing_in(scope, _Corked)


FramesWriter = Callable[[Sequence[str | bytes]], Awaitable[None]]


def text_frames_writer(scope: Scope) -> FramesWriter | None:
    """A writer of many text frames in one transport write, through uvicorn's websockets-sansio protocol (whose
    ASGI `send` makes one write per frame), with its back-pressure; None under another protocol, where each
    frame is an ASGI send. A gone client is an OSError, as from a transport."""
    owner = _protocol(scope)
    if not isinstance(owner, WebSocketsSansIOProtocol):
        return None

    async def write(texts: Sequence[str | bytes]) -> None:
        await owner.writable.wait()
        if owner.disconnected or owner.close_sent or owner.transport.is_closing():
            raise ConnectionResetError("rrkit: the WebSocket client is gone")
        if not owner.conn.extensions:  # framed here: websockets' frame writer costs more than the rest of a send
            if owner.conn.state is not State.OPEN:
                raise ConnectionResetError("rrkit: the WebSocket is closing")
            owner.transport.write(text_frames([text.encode() if isinstance(text, str) else text for text in texts]))
            return
        try:
            for text in texts:
                owner.conn.send_text(text.encode() if isinstance(text, str) else text)
        except InvalidState as error:
            raise ConnectionResetError("rrkit: the WebSocket is closing") from error
        owner.transport.write(b"".join(owner.conn.data_to_send()))

    return write


def mark_denial_sent(scope: Scope) -> None:
    """uvicorn's websockets-sansio protocol does not count a denial response as a finished handshake and
    logs a spurious "ASGI callable returned without completing handshake" error (Kludex/uvicorn#3138)."""
    owner = _protocol(scope)
    if owner is not None and getattr(owner, "handshake_complete", None) is False:
        owner.handshake_complete = True


class _PeersFault(logging.Filter):
    """A client's own fault that uvicorn logs with its traceback (text frames that are not UTF-8: it closes the
    socket with 1007, as it should) is a line, not a traceback: a peer's bad bytes are no server error."""

    LINES = ("Invalid UTF-8 sequence received from client.",)

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and record.getMessage() in self.LINES:
            record.exc_info, record.exc_text, record.levelno, record.levelname = None, None, logging.INFO, "INFO"
        return True


UNPARSABLE_REQUEST = (
    "The HTTP request could not be parsed: its request line, a header or its framing is malformed (a method "
    "httptools does not know, a path with spaces or bytes beyond ASCII: percent-encode them). Send a well-formed "
    "HTTP/1.1 request."
)


def _refusal(status: int, message: str, default_headers: Sequence[tuple[bytes, bytes]]) -> bytes:
    """A whole answer refusing a request before any app saw it: the API's JSON error, then the connection closes."""
    code = errors.REQUEST_TOO_LARGE if status in (HTTPStatus.REQUEST_URI_TOO_LONG, _HEADERS_TOO_LARGE) else None
    body = encode_json(errors.error_body(message, code=code))
    head = [b"HTTP/1.1 %d %s\r\n" % (status, HTTPStatus(status).phrase.encode())]
    head.extend(name + b": " + value + b"\r\n" for name, value in default_headers)
    head.append(b"content-type: application/json\r\ncontent-length: %d\r\nconnection: close\r\n\r\n" % len(body))
    return b"".join(head) + body


_HEADERS_TOO_LARGE = HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE


_HEAD_TOO_LARGE = (
    f"The request's head (its request line and headers) is over {MAX_REQUEST_HEAD} bytes, the most this server "
    "reads: send shorter headers."
)


class _HeadTooLarge(Exception):
    """Raised in a parser callback to stop reading a request whose head is over a bound (the parser then fails)."""


class _JSONErrorsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, its 400 to a request it cannot parse (sent before any app sees it) in the API's
    JSON shape, as every other error of the server; and a request whose head is over the bounds of
    rrkit.protocol.headers (a header line, the number of lines, the whole head, counted as it arrives) answered
    with 431 and closed, before it is read further: the same for a WebSocket upgrade, whose head is read here."""

    _too_large: str | None = None  # why the request's head was refused
    _head_bytes = 0  # bytes received since the request began, while its head is incomplete
    _head_lines = 0
    _header_bytes = 0  # the header lines' bytes read so far (a head that arrived in one piece is counted here)
    _reading_head = False

    def data_received(self, data: bytes) -> None:
        if self._reading_head:
            self._head_bytes += len(data)
        super().data_received(data)
        if self._reading_head and self._head_bytes > MAX_REQUEST_HEAD and not self.transport.is_closing():
            self._refuse(_HEAD_TOO_LARGE)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._reading_head, self._head_bytes, self._head_lines, self._header_bytes = True, 0, 0, 0

    def on_header(self, name: bytes, value: bytes) -> None:
        self._head_lines += 1
        line = len(name) + len(value) + 4  # `name: value` and CRLF, as a WebSocket upgrade's line is counted
        self._header_bytes += line
        if line > MAX_HEADER_LINE:
            self._too_large = (
                f"The request's {name.decode('latin-1')[:64]!r} header line is {line} bytes, over the "
                f"{MAX_HEADER_LINE} bytes of a header line this server reads: send a shorter value (a token, "
                "cookie or metadata that long?)."
            )
            raise _HeadTooLarge
        if self._head_lines > MAX_HEADER_FIELDS:
            self._too_large = (
                f"The request has over {MAX_HEADER_FIELDS} header lines, the most this server reads: send fewer."
            )
            raise _HeadTooLarge
        if self._header_bytes > MAX_REQUEST_HEAD:
            self._too_large = _HEAD_TOO_LARGE
            raise _HeadTooLarge
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._reading_head = False
        super().on_headers_complete()

    def send_400_response(self, msg: str) -> None:
        if self._too_large is not None:
            self._refuse(self._too_large)
            return
        self.transport.write(_refusal(400, UNPARSABLE_REQUEST, self.server_state.default_headers))
        self.transport.close()

    def _refuse(self, message: str) -> None:
        self.transport.write(_refusal(_HEADERS_TOO_LARGE, message, self.server_state.default_headers))
        self.transport.close()


_HANDSHAKE_REFUSALS = {"RequestLineTooLong": 414, "HeaderLineTooLong": 431, "TooManyHeaders": 431}
"""websockets' refusals of an upgrade request it cannot read (by name: the classes are those of websockets >= 15)."""


class _AnsweredUpgrades(WebSocketsSansIOProtocol):
    """uvicorn's websockets-sansio protocol, answering an upgrade request websockets refuses to read (a line over its
    bound, a malformed header): uvicorn leaves websockets' answer unsent and the socket open (for a minute and more);
    here the answer is the API's JSON error, and the connection is closed."""

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        refused = self.conn.handshake_exc
        if self.handshake_initiated or refused is None or self.transport.is_closing():
            return
        self.conn.data_to_send()  # websockets' own answer in plain text (or only its end): the JSON one instead
        status = _HANDSHAKE_REFUSALS.get(type(refused).__name__, 400)
        cause = refused.__cause__ or refused
        message = f"The WebSocket upgrade request could not be read: {cause}. Send a well-formed, shorter request."
        self.handshake_initiated = self.handshake_complete = self.close_sent = True
        self.transport.write(_refusal(status, message, self.default_headers))
        self.transport.close()


def config(
    app: ASGIApp, log_level: str, ws_max_size: int = 16 * 1024 * 1024, keep_alive: float = KEEP_ALIVE_SECONDS
) -> uvicorn.Config:
    """The one configuration rrkit runs uvicorn with (loaded, ready to serve). uvicorn's logging configuration is
    installed once, again only when its stderr handler is gone or writes to a stderr since swapped (pytest's
    `capsys`), and a logger's level is set only when it changes: dictConfig, and setLevel (which clears every
    logger's cache), cost more than the rest of a server's start. A WebSocket message over `ws_max_size` bytes
    closes its socket with 1009. An idle connection is closed `keep_alive` seconds after the last response."""
    handlers = logging.getLogger("uvicorn").handlers  # pytest's log capture adds its own (StreamHandler subclasses)
    in_place = any(type(handler) is logging.StreamHandler and handler.stream is sys.stderr for handler in handlers)
    loaded = uvicorn.Config(
        app,
        log_level=None if in_place else log_level,
        log_config=None if in_place else uvicorn.config.LOGGING_CONFIG,
        lifespan="off",
        http=_JSONErrorsProtocol,
        ws=_AnsweredUpgrades,
        ws_per_message_deflate=True,
        ws_max_size=ws_max_size,
        access_log=False,
        timeout_keep_alive=keep_alive,  # type: ignore[arg-type]  # typed int, used as call_later's float
    )
    error_log = logging.getLogger("uvicorn.error")
    if not any(isinstance(one, _PeersFault) for one in error_log.filters):
        error_log.addFilter(_PeersFault())
    if in_place:
        level = uvicorn.config.LOG_LEVELS[log_level.lower()]
        for name in ("uvicorn.error", "uvicorn.access", "uvicorn.asgi"):
            logger = logging.getLogger(name)
            if logger.level != level:
                logger.setLevel(level)
    loaded.load()
    return loaded


async def start(server: uvicorn.Server, sock: socket.socket) -> None:
    """Start serving on a bound socket without `serve()` (which would install signal handlers)."""
    server.lifespan = server.config.lifespan_class(server.config)
    await server.startup(sockets=[sock])


async def stop(server: uvicorn.Server, grace: float, stopping: asyncio.Event | None = None) -> None:
    """Stop at once, quietly: close the listeners; close idle connections (a socket gets close 1012) and cut those
    still sending their request (no answer has begun); set `stopping`, which ends stalls and pauses (their streams
    are cut); give answers still running `grace` seconds (an upstream relay), then cut their connections, which
    ends them; cancel only what still runs after that. Nothing is polled: it returns as soon as the last answer
    ended (at once when none was running)."""
    for listener in getattr(server, "servers", ()):
        listener.close()
    state = server.server_state
    for connection in list(state.connections):
        if _receiving_request(connection):
            connection.transport.abort()
        else:
            connection.shutdown()
    if stopping is not None:
        stopping.set()
    await _ended(state.tasks, grace)
    for connection in list(state.connections):
        transport: Any = getattr(connection, "transport", None)
        if transport is not None:
            transport.abort()
    await _ended(state.tasks, grace)
    for task in list(state.tasks):  # a handler that ignored its client leaving: the last resort
        task.cancel()
    await _ended(state.tasks, grace)
    await asyncio.sleep(0)  # the connections closed above are released (connection_lost) before returning


def _receiving_request(connection: Any) -> bool:
    """An HTTP connection whose request body is still arriving and whose answer has not begun (uvicorn's cycle)."""
    cycle = getattr(connection, "cycle", None)
    return cycle is not None and cycle.more_body and not cycle.response_started


async def _ended(tasks: set[asyncio.Task[None]], timeout: float) -> None:
    """Wait until the connections' tasks have ended (they remove themselves from `tasks`), at most `timeout`."""
    running = {task for task in tasks if not task.done()}
    if running:
        await asyncio.wait(running, timeout=timeout)


class ForegroundServer(uvicorn.Server):
    """uvicorn in the foreground, stopped by SIGINT or SIGTERM alike without raising the signal again once it
    stopped (uvicorn's default, which makes SIGTERM kill the process): the caller still writes its cassette."""

    def __init__(
        self, config: uvicorn.Config, on_started: Callable[[], None] | None = None, grace: float = 0.5
    ) -> None:
        super().__init__(config)
        self.on_started = on_started
        self.grace = grace
        self.stopping: asyncio.Event | None = None  # set when the stop begins: stalls and pauses end at once

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        """Started (and its signal handlers in place, so a stop signal from now on is handled): say so."""
        await super().startup(sockets)
        if self.on_started is not None and not self.should_exit:
            self.on_started()

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        """uvicorn's own shutdown waits for every connection to close by itself (a stalled stream: until its
        client leaves); rrkit's ends them at once, and leaves no task for asyncio.run to cancel (a traceback)."""
        await stop(self, self.grace, self.stopping)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        """Every stop signal (a second Ctrl-C too) asks for the same prompt stop; none is raised again after it."""
        super().handle_exit(sig, frame)
        self._captured_signals.clear()
