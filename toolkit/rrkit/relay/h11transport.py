"""The HTTP relay's upstream leg: an httpx transport on asyncio streams and h11, keeping connections alive, without
httpcore's pool and anyio layers (which cost 0.9 to 1.4 ms of each proxied request's time to the first event)."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator
from typing import Any

import h11
import httpx

READ_SIZE = 64 * 1024
MAX_IDLE = 16
"""Idle keep-alive connections kept per upstream origin at most (one per request in flight, at the busiest)."""

Origin = tuple[str, str, int]


class _Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.h11 = h11.Connection(h11.CLIENT)
        self.answered = False  # bytes came back in this exchange

    def usable(self) -> bool:
        """Idle and still open: the upstream has neither closed it nor sent anything unasked."""
        return not self.writer.is_closing() and not self.reader.at_eof() and not _buffered(self.reader)

    async def next_event(self, timeout: float | None) -> Any:
        while True:
            event = self.h11.next_event()
            if event is not h11.NEED_DATA:
                return event
            async with asyncio.timeout(timeout):
                data = await self.reader.read(READ_SIZE)
            self.answered = self.answered or bool(data)
            self.h11.receive_data(data)

    def close(self) -> None:
        self.writer.close()


def _buffered(reader: asyncio.StreamReader) -> bool:
    return bool(getattr(reader, "_buffer", b""))


class H11Transport(httpx.AsyncBaseTransport):
    """HTTP/1.1 to any origin, plain or TLS (the system's trust store, as the WebSocket leg); the timeouts of a
    request's `timeout` extension (`connect`, `read`); errors raised as httpx's own (ConnectError, ReadTimeout,
    RemoteProtocolError, ...). A reused connection the upstream closed unseen is replaced once."""

    def __init__(self) -> None:
        self._idle: dict[Origin, list[_Connection]] = {}
        self._tls: ssl.SSLContext | None = None

    async def aclose(self) -> None:
        idle, self._idle = self._idle, {}
        for connections in idle.values():
            for connection in connections:
                connection.close()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        origin: Origin = (url.scheme, url.host, url.port or (443 if url.scheme == "https" else 80))
        timeouts = request.extensions.get("timeout", {})
        try:
            body = request.content  # a body given as bytes, as the relay's, is read already
        except httpx.RequestNotRead:
            body = b"".join([part async for part in request.stream])  # type: ignore[union-attr]
        head = h11.Request(method=request.method, target=url.raw_path, headers=request.headers.raw)
        connection = self._reused(origin)
        if connection is not None:
            with contextlib.suppress(_Stale):
                return await self._exchange(connection, origin, head, body, timeouts, reused=True)
        connection = await self._connect(origin, timeouts.get("connect"))
        return await self._exchange(connection, origin, head, body, timeouts, reused=False)

    def _reused(self, origin: Origin) -> _Connection | None:
        idle = self._idle.get(origin, [])
        while idle:
            connection = idle.pop()
            if connection.usable():
                return connection
            connection.close()
        return None

    async def _connect(self, origin: Origin, timeout: float | None) -> _Connection:
        scheme, host, port = origin
        tls = self._tls_context() if scheme == "https" else None
        try:
            async with asyncio.timeout(timeout):
                reader, writer = await asyncio.open_connection(
                    host, port, ssl=tls, server_hostname=host if tls else None, limit=READ_SIZE
                )
        except TimeoutError:
            raise httpx.ConnectTimeout(f"no connection to {host}:{port} within {timeout} s") from None
        except OSError as error:  # ssl.SSLError is one
            raise httpx.ConnectError(str(error) or type(error).__name__) from None
        return _Connection(reader, writer)

    def _tls_context(self) -> ssl.SSLContext:
        if self._tls is None:
            self._tls = ssl.create_default_context()
        return self._tls

    async def _exchange(
        self,
        connection: _Connection,
        origin: Origin,
        head: h11.Request,
        body: bytes,
        timeouts: dict[str, float | None],
        *,
        reused: bool,
    ) -> httpx.Response:
        """The request (head and body in one write) and the head of its answer; the connection is closed on any
        error, and its body read by the response's stream."""
        read_timeout = timeouts.get("read")
        try:
            wire = connection.h11.send(head) + connection.h11.send(h11.Data(data=body))
            wire += connection.h11.send(h11.EndOfMessage())
            connection.writer.write(wire)
            async with asyncio.timeout(timeouts.get("write")):
                await connection.writer.drain()
            answer = await connection.next_event(read_timeout)
            while isinstance(answer, h11.InformationalResponse):
                answer = await connection.next_event(read_timeout)
        except BaseException as error:
            connection.close()
            if reused and not connection.answered and not isinstance(error, TimeoutError | asyncio.CancelledError):
                raise _Stale from None
            raise _as_httpx(error) from None
        if not isinstance(answer, h11.Response):
            connection.close()
            if reused and not connection.answered:
                raise _Stale
            raise httpx.RemoteProtocolError("the upstream closed the connection without sending a response")
        return httpx.Response(
            answer.status_code,
            headers=answer.headers.raw_items(),
            stream=H11Body(self, connection, origin, read_timeout),
            extensions={"http_version": b"HTTP/1.1", "reason_phrase": answer.reason},
        )

    def _release(self, origin: Origin, connection: _Connection) -> None:
        """A connection whose exchange ended cleanly, kept for the next request (or closed, if it can't be)."""
        if connection.h11.our_state is h11.DONE and connection.h11.their_state is h11.DONE:
            connection.h11.start_next_cycle()
            connection.answered = False
            idle = self._idle.setdefault(origin, [])
            if len(idle) < MAX_IDLE:
                idle.append(connection)
                return
        connection.close()


class H11Body(httpx.AsyncByteStream):
    """An answer's body, read as it arrives; its connection goes back to the transport once the body is whole,
    or is closed when the body is left unread."""

    def __init__(self, transport: H11Transport, connection: _Connection, origin: Origin, timeout: float | None):
        self._transport, self._connection, self._origin, self._timeout = transport, connection, origin, timeout
        self._done = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        connection = self._connection
        while not self._done:
            try:
                event = await connection.next_event(self._timeout)
            except BaseException as error:
                self._finish(reuse=False)
                raise _as_httpx(error) from None
            if isinstance(event, h11.Data):
                yield bytes(event.data)
            elif isinstance(event, h11.EndOfMessage):
                self._finish(reuse=True)
            elif isinstance(event, h11.ConnectionClosed):
                self._finish(reuse=False)

    def _finish(self, *, reuse: bool) -> None:
        if self._done:
            return
        self._done = True
        if reuse:
            self._transport._release(self._origin, self._connection)
        else:
            self._connection.close()

    async def aclose(self) -> None:
        self._finish(reuse=False)


class _Stale(Exception):
    """A kept connection the upstream had closed unseen: the request is sent again on a new one."""


def _as_httpx(error: BaseException) -> BaseException:
    """An error of the upstream leg as the httpx error the relay handles (a cancellation stays one)."""
    if isinstance(error, TimeoutError):
        return httpx.ReadTimeout("the upstream sent nothing within the read timeout")
    if isinstance(error, h11.RemoteProtocolError):
        return httpx.RemoteProtocolError(str(error))
    if isinstance(error, h11.LocalProtocolError):
        return httpx.LocalProtocolError(str(error))
    if isinstance(error, OSError):  # ssl.SSLError is one
        return httpx.ReadError(str(error) or type(error).__name__)
    return error
