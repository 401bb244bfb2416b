"""The recording proxy's upstream WebSocket client, on websockets' sans-I/O protocol: every message a socket read
completes is ready at once (the relay sends them as one run), where websockets' asyncio client hands out one
message per await. A `Dialer` opens the sockets, on a connection opened ahead when it has one."""

from __future__ import annotations

import asyncio
import collections
import ssl
from collections.abc import Callable, Mapping
from typing import TypeVar, cast

from websockets.client import ClientProtocol
from websockets.exceptions import InvalidMessage
from websockets.extensions.permessage_deflate import enable_client_permessage_deflate
from websockets.frames import CloseCode, Frame, Opcode
from websockets.http11 import Response as WSResponse
from websockets.protocol import State as WSState
from websockets.uri import parse_uri

from ..protocol.wsframe import WHOLE_TEXT, payload_bounds, whole_texts

_P = TypeVar("_P", bound=asyncio.Protocol)

_CLOSE_SECONDS = 2.0  # how long a closing socket waits for the upstream's TCP close before aborting it
_PING_SECONDS = 20.0  # as websockets' client: a ping this often keeps an idle socket open; a late pong ends it
_QUEUE_HIGH = 4096  # messages received and not yet taken past which reading pauses (a slow client)


_HEAD_MAX = 65536  # bytes of an upgrade answer held back at most (past it the protocol reads and refuses it)
SPARE_SECONDS = 20.0  # a spare connection unused this long is closed: under the idle limits servers commonly put on
# a connection that has sent nothing (nginx: 60 s)


class UpstreamWS(asyncio.Protocol):
    """One upstream WebSocket: `ready()` gives the messages received and not yet taken (the caller takes them),
    `send` one text frame, `close` the closing handshake. Pings are answered by the protocol; once open, the
    socket pings every _PING_SECONDS and fails if the pong has not come by the next one."""

    def __init__(self, protocol: ClientProtocol) -> None:
        self.protocol = protocol
        self.response: WSResponse | None = None  # the upgrade's answer
        self.messages: collections.deque[str] = collections.deque()
        self._fragments: list[bytes] = []  # of a message not yet whole
        self._own_frames = False  # whether whole text frames are read here (`_whole_frames`)
        self._pending = b""  # received, not yet read: the upgrade's answer, or a frame not yet whole
        self.received = False  # whether any byte came
        self._loop = asyncio.get_running_loop()
        self._waiter: asyncio.Future[None] | None = None
        self._lost: asyncio.Future[None] = self._loop.create_future()
        self._paused = False
        self._abort: asyncio.TimerHandle | None = None
        self._ping: asyncio.TimerHandle | None = None
        self._pong_due = False
        self.transport: asyncio.Transport

    # asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)
        self._write()

    def data_received(self, data: bytes) -> None:
        self.received = True
        if self._own_frames:
            data = self._whole_frames(data)
        elif self.response is None:
            data = self._upgrade(data)
        if data:
            self.protocol.receive_data(data)
        self._take_events()
        self._write()
        if len(self.messages) >= _QUEUE_HIGH and not self._paused:
            self._paused = True
            self.transport.pause_reading()
        self._wake()

    def _upgrade(self, data: bytes) -> bytes:
        """The upgrade's answer, held until its head is whole and then given to the protocol alone; on an open
        socket with no extension the frames after it are read here (`_whole_frames`). Returns what the protocol
        is still to be given."""
        self._pending += data
        end = self._pending.find(b"\r\n\r\n")
        if end == -1 and len(self._pending) <= _HEAD_MAX:
            return b""
        head, rest = (self._pending[: end + 4], self._pending[end + 4 :]) if end != -1 else (self._pending, b"")
        self._pending = b""
        self.protocol.receive_data(head)
        self._take_events()
        if self.protocol.state is WSState.OPEN and not self.protocol.extensions:
            self._own_frames = True
            return self._whole_frames(rest)
        return rest

    def _whole_frames(self, data: bytes) -> bytes:
        """Each whole unfragmented text frame taken as its message here (the protocol's frame parser costs more
        than the rest of a relay); any other frame (a ping, a close, a fragment) is given to the protocol whole,
        so that it always stands between two frames. A frame it must refuse (masked, over `max_size`), or a
        closing socket, hands it the rest of the stream, which is returned."""
        buffer = self._pending + data if self._pending else data
        start, max_size = 0, self.protocol.max_message_size
        while self.protocol.state is WSState.OPEN:
            if not self._fragments:
                texts, start = whole_texts(buffer, start, max_size)
                self.messages.extend(texts)
            bounds = payload_bounds(buffer, start, max_size)
            if bounds is None or bounds[1] > len(buffer):
                self._pending = buffer[start:]
                return b""
            begin, end = bounds
            if begin == -1:
                break
            if buffer[start] == WHOLE_TEXT and not self._fragments:
                self.messages.append(buffer[begin:end].decode("utf-8", errors="replace"))
            else:
                self.protocol.receive_data(buffer[start:end])
                self._take_events()
            start = end
        self._own_frames, self._pending = False, b""
        return buffer[start:]

    def _hand_over_pending(self) -> None:
        """At the end of the stream, what was held back goes to the protocol, which judges it as it would have."""
        if self._pending and self.protocol.state is not WSState.CLOSED:
            pending, self._pending, self._own_frames = self._pending, b"", False
            self.protocol.receive_data(pending)
            self._take_events()

    def _take_events(self) -> None:
        for event in self.protocol.events_received():
            if isinstance(event, WSResponse):
                self.response = event
            elif isinstance(event, Frame) and event.opcode in (Opcode.TEXT, Opcode.BINARY, Opcode.CONT):
                self._fragments.append(bytes(event.data))
                if event.fin:
                    self.messages.append(b"".join(self._fragments).decode("utf-8", errors="replace"))
                    self._fragments = []
            elif isinstance(event, Frame) and event.opcode is Opcode.PONG:
                self._pong_due = False

    def eof_received(self) -> None:
        self._hand_over_pending()
        self.protocol.receive_eof()
        self._write()

    def connection_lost(self, exc: Exception | None) -> None:
        self._hand_over_pending()
        self.protocol.receive_eof()
        for timer in (self._abort, self._ping):
            if timer is not None:
                timer.cancel()
        if not self._lost.done():
            self._lost.set_result(None)
        self._wake()

    def _write(self) -> None:
        for data in self.protocol.data_to_send():
            if data:
                self.transport.write(data)
            elif self.transport.can_write_eof():
                self.transport.write_eof()
        if self._abort is None and self.protocol.close_expected():
            self._abort = self._loop.call_later(_CLOSE_SECONDS, self.transport.abort)  # if the upstream never closes

    def _keepalive(self) -> None:
        if self.protocol.state is not WSState.OPEN:
            return
        if self._pong_due:
            self.protocol.fail(CloseCode.INTERNAL_ERROR, "keepalive ping timeout")
        else:
            self._pong_due = True
            self.protocol.send_ping(b"")
            self._ping = self._loop.call_later(_PING_SECONDS, self._keepalive)
        self._write()

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    async def _wait(self) -> None:
        self._waiter = self._loop.create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None

    async def handshake(self) -> None:
        """Wait for the upgrade's answer; the protocol's handshake error if it refused (InvalidStatus)."""
        while self.response is None and not self._lost.done():
            await self._wait()
        if self.protocol.handshake_exc is not None:
            self.transport.close()
            raise self.protocol.handshake_exc
        self._ping = self._loop.call_later(_PING_SECONDS, self._keepalive)

    async def ready(self) -> collections.deque[str]:
        """The messages not yet taken, once there is one; ConnectionClosed when the socket ended with none left."""
        if self._paused and len(self.messages) < _QUEUE_HIGH // 4:
            self._paused = False
            self.transport.resume_reading()
        while not self.messages:
            if self._lost.done():
                raise self.protocol.close_exc
            await self._wait()
        return self.messages

    async def send(self, text: str) -> None:
        if self.protocol.state is not WSState.OPEN:
            await asyncio.shield(self._lost)  # closing: ends within _CLOSE_SECONDS
            raise self.protocol.close_exc
        self.protocol.send_text(text.encode())
        self._write()

    async def close(self) -> None:
        if self.protocol.state is WSState.OPEN:
            self.protocol.send_close()
            self._write()
        await asyncio.shield(self._lost)


class _Spare(asyncio.Protocol):
    """A connected socket kept for an upgrade to come: closed if unused after SPARE_SECONDS, or if the upstream
    sends anything on it."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)
        self._expiry = asyncio.get_running_loop().call_later(SPARE_SECONDS, self.transport.abort)

    def data_received(self, data: bytes) -> None:
        self.transport.abort()  # nothing is due before an upgrade: a server's "408" or worse

    def connection_lost(self, exc: Exception | None) -> None:
        self._expiry.cancel()

    def take(self) -> asyncio.Transport | None:
        """Its transport, no longer timed, for an upgrade; None when it is closed or closing."""
        self._expiry.cancel()
        return None if self.transport.is_closing() else self.transport


class Dialer:
    """Opens the upstream WebSockets of the host of `url` (no environment proxy, no redirect followed), each
    within `timeout` seconds: a frame over `max_size` bytes fails its socket (1009). `keep_spare()` opens a
    connection in the background for the next upgrade, whose TCP (and TLS) is then done ahead. `aclose()` on
    its loop."""

    def __init__(self, url: str, timeout: float, max_size: int | None = None) -> None:
        uri = parse_uri(url)
        self.host, self.port, self.secure = uri.host, uri.port, uri.secure
        self.timeout, self.max_size = timeout, max_size
        self._tls: ssl.SSLContext | None = None  # made once, when first needed: it loads the CA certificates
        self._spare: _Spare | None = None
        self._sparing: asyncio.Task[None] | None = None
        self._closed = False

    async def _connection(self, protocol: Callable[[], _P]) -> _P:
        if self.secure and self._tls is None:
            self._tls = ssl.create_default_context()
        hostname = self.host if self.secure else None
        _, made = await asyncio.get_running_loop().create_connection(
            protocol, self.host, self.port, ssl=self._tls, server_hostname=hostname
        )
        return made

    async def connect(self, url: str, headers: Mapping[str, str], user_agent: str | None, deflate: bool) -> UpstreamWS:
        """The upstream WebSocket of `url` (whose host is this dialer's), on the spare connection if one is
        usable (one being opened is waited for: it began first); InvalidStatus if refused. A spare the upstream
        closed before it answered a byte (it timed the idle socket out as the upgrade went out) is replaced by a
        new connection: the upstream never read that upgrade."""
        uri = parse_uri(url)

        def upgrade() -> UpstreamWS:
            protocol = ClientProtocol(
                uri, extensions=enable_client_permessage_deflate(None) if deflate else None, max_size=self.max_size
            )
            request = protocol.connect()
            request.headers.update(headers)
            if user_agent is not None:
                request.headers["User-Agent"] = user_agent
            protocol.send_request(request)
            return UpstreamWS(protocol)

        async with asyncio.timeout(self.timeout):
            if self._spare is None and self._sparing is not None:
                await asyncio.wait([self._sparing])
            spare, self._spare = self._spare, None
            transport = spare.take() if spare is not None else None
            if transport is not None:
                socket = upgrade()
                transport.set_protocol(socket)
                socket.connection_made(transport)
                try:
                    await _handshake(socket)
                    return socket
                except InvalidMessage:
                    if socket.received:
                        raise
            socket = await self._connection(upgrade)
            await _handshake(socket)
        return socket

    def keep_spare(self) -> None:
        """Open a connection for the next upgrade, in the background, unless one is kept or opening."""
        if self._spare is None and self._sparing is None and not self._closed:
            self._sparing = asyncio.get_running_loop().create_task(self._open_spare())

    async def _open_spare(self) -> None:
        try:
            async with asyncio.timeout(self.timeout):
                spare = await self._connection(_Spare)
        except (OSError, TimeoutError):
            return  # the next upgrade connects as it would have, and says why it could not
        finally:
            self._sparing = None
        if self._closed or self._spare is not None:
            spare.transport.abort()
        else:
            self._spare = spare

    async def aclose(self) -> None:
        """Close the spare connection, or stop opening it; none is opened after this."""
        self._closed = True
        sparing, spare, self._spare = self._sparing, self._spare, None
        if spare is not None:
            spare.transport.abort()
        if sparing is not None:
            sparing.cancel()
            await asyncio.wait([sparing])


async def _handshake(socket: UpstreamWS) -> None:
    try:
        await socket.handshake()
    except BaseException:
        socket.transport.abort()
        raise
