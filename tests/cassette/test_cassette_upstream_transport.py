"""The proxy's upstream HTTP leg (`relay.h11transport.H11Transport`) against scripted loopback upstreams:
keep-alive reuse, a kept connection closed unseen, framing and encodings, timeouts, errors as httpx's own."""

from __future__ import annotations

import asyncio
import gzip
import socket
from collections.abc import AsyncIterator, Awaitable, Callable

import httpx
import pytest

from rrkit.relay.h11transport import H11Transport

Handler = Callable[[int, asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
OK = b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 2\r\n\r\nok"


class Upstream:
    """A loopback server whose every connection is handled by `handler(number, reader, writer)`."""

    def __init__(self, handler: Handler) -> None:
        self.handler, self.connections, self.requests = handler, 0, 0

    async def __aenter__(self) -> Upstream:
        self.server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}/v1/responses"
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.server.close()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            await self.handler(self.connections, reader, writer)
        except asyncio.CancelledError:  # the loop ending under a handler still waiting: not an error
            pass
        finally:
            writer.close()

    async def request(self, reader: asyncio.StreamReader) -> bytes:
        """One whole request (head and its content-length body); b"" at EOF."""
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, ConnectionError):
            return b""
        self.requests += 1
        length = next(
            (int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")),
            0,
        )
        return head + await reader.readexactly(length)


async def post(transport: H11Transport, url: str, **timeouts: float) -> httpx.Response:
    request = httpx.Request("POST", url, content=b'{"model":"m"}', extensions={"timeout": timeouts})
    return await transport.handle_async_request(request)


async def body_of(response: httpx.Response) -> bytes:
    try:
        return await response.aread()
    finally:
        await response.aclose()


async def answered(
    upstream: Upstream, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> AsyncIterator[bytes]:
    """Each request on the connection, answered OK after it is yielded."""
    while request := await upstream.request(reader):
        yield request
        writer.write(OK)
        await writer.drain()


async def test_keep_alive_connection_is_reused_for_the_next_request() -> None:
    async def handler(number: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        async for _ in answered(upstream, reader, writer):
            pass

    async with Upstream(handler) as upstream:
        transport = H11Transport()
        bodies = [await body_of(await post(transport, upstream.url)) for _ in range(3)]
        await transport.aclose()
    assert bodies == [b"ok"] * 3
    assert (upstream.connections, upstream.requests) == (1, 3)


async def test_request_goes_out_with_host_length_and_body_in_one_piece() -> None:
    seen: list[bytes] = []

    async def handler(number: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        async for request in answered(upstream, reader, writer):
            seen.append(request)

    async with Upstream(handler) as upstream:
        transport = H11Transport()
        await body_of(await post(transport, upstream.url + "?api-version=1"))
        await transport.aclose()
    head, _, body = seen[0].partition(b"\r\n\r\n")
    assert head.startswith(b"POST /v1/responses?api-version=1 HTTP/1.1\r\n")
    assert b"\r\nhost: 127.0.0.1:" in head.lower() and b"\r\ncontent-length: 13" in head.lower()
    assert body == b'{"model":"m"}'


async def test_kept_connection_closed_while_idle_is_replaced() -> None:
    async def handler(number: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await upstream.request(reader)
        writer.write(OK)  # keep-alive, yet closed right after
        await writer.drain()

    async with Upstream(handler) as upstream:
        transport = H11Transport()
        first = await body_of(await post(transport, upstream.url))
        await asyncio.sleep(0.05)  # the close reaches the idle connection
        second = await body_of(await post(transport, upstream.url))
        await transport.aclose()
    assert (first, second) == (b"ok", b"ok")
    assert (upstream.connections, upstream.requests) == (2, 2)


async def test_kept_connection_the_upstream_timed_out_is_not_read_as_the_next_answer() -> None:
    """An upstream that times a kept connection out may say so (a 408) before it closes: that is no answer to
    the next request, which goes out on a new connection."""

    async def handler(number: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        async for _ in answered(upstream, reader, writer):
            if number == 1:
                writer.write(OK)
                writer.write(b"HTTP/1.1 408 Request Timeout\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                await writer.drain()
                return

    async with Upstream(handler) as upstream:
        transport = H11Transport()
        await body_of(await post(transport, upstream.url))
        await asyncio.sleep(0.05)  # the 408 reaches the idle connection
        second = await post(transport, upstream.url)
        await body_of(second)
        await transport.aclose()
    assert second.status_code == 200
    assert upstream.connections == 2


async def test_kept_connection_closed_unseen_sends_the_request_again_on_a_new_one() -> None:
    """The keep-alive race: the upstream closes a kept connection as the next request goes out, answering
    nothing; the request is sent once more, on a new connection."""

    async def handler(number: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        async for _ in answered(upstream, reader, writer):
            if number == 1 and upstream.requests == 2:
                writer.transport.abort()  # read the second request, then gone without a byte
                return

    async with Upstream(handler) as upstream:
        transport = H11Transport()
        await body_of(await post(transport, upstream.url))
        again = await body_of(await post(transport, upstream.url))
        await transport.aclose()
    assert again == b"ok"
    assert (upstream.connections, upstream.requests) == (2, 3)


async def test_new_connection_closed_without_an_answer_is_not_sent_again() -> None:
    async def handler(number: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await upstream.request(reader)

    async with Upstream(handler) as upstream:
        transport = H11Transport()
        with pytest.raises(httpx.RemoteProtocolError):
            await post(transport, upstream.url)
        await transport.aclose()
    assert (upstream.connections, upstream.requests) == (1, 1)


async def test_answer_that_broke_off_is_not_sent_again_even_on_a_kept_connection() -> None:
    async def handler(number: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        async for _ in answered(upstream, reader, writer):
            if upstream.requests == 2:
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-le")
                await writer.drain()
                writer.transport.abort()
                return

    async with Upstream(handler) as upstream:
        transport = H11Transport()
        await body_of(await post(transport, upstream.url))
        with pytest.raises(httpx.HTTPError):
            await post(transport, upstream.url)
        await transport.aclose()
    assert upstream.requests == 2


async def test_chunked_gzip_body_is_read_raw_and_decoded_by_httpx() -> None:
    packed = gzip.compress(b"data: {}\n\n" * 100)

    async def handler(number: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await upstream.request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-encoding: gzip\r\ntransfer-encoding: chunked\r\n\r\n")
        for start in range(0, len(packed), 100):
            piece = packed[start : start + 100]
            writer.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            await writer.drain()
        writer.write(b"0\r\n\r\n")
        await upstream.request(reader)

    async with Upstream(handler) as upstream:
        transport = H11Transport()
        raw = await post(transport, upstream.url)
        assert b"".join([chunk async for chunk in raw.aiter_raw()]) == packed
        await raw.aclose()
        await transport.aclose()
    async with Upstream(handler) as upstream:
        transport = H11Transport()
        assert await body_of(await post(transport, upstream.url)) == b"data: {}\n\n" * 100
        await transport.aclose()


async def test_body_shorter_than_its_length_is_a_protocol_error() -> None:
    async def handler(number: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await upstream.request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nonly ten..")
        await writer.drain()

    async with Upstream(handler) as upstream:
        transport = H11Transport()
        response = await post(transport, upstream.url)
        with pytest.raises(httpx.RemoteProtocolError):
            await body_of(response)
        await transport.aclose()


async def test_body_left_unread_closes_its_connection() -> None:
    async def handler(number: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await upstream.request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n")
        await writer.drain()
        await upstream.request(reader)  # EOF once the transport closes the connection

    async with Upstream(handler) as upstream:
        transport = H11Transport()
        for _ in range(2):
            response = await post(transport, upstream.url)
            assert response.status_code == 200
            await response.aclose()
        await transport.aclose()
    assert (upstream.connections, upstream.requests) == (2, 2)


async def test_silent_upstream_is_a_read_timeout() -> None:
    async def handler(number: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await upstream.request(reader)
        await asyncio.sleep(30)

    async with Upstream(handler) as upstream:
        transport = H11Transport()
        with pytest.raises(httpx.ReadTimeout):
            await post(transport, upstream.url, read=0.2)
        await transport.aclose()


async def test_refused_connection_is_a_connect_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, never listening: refused
        transport = H11Transport()
        with pytest.raises(httpx.ConnectError):
            await post(transport, f"http://127.0.0.1:{port}/v1/responses", connect=5)
        await transport.aclose()


async def test_cancelled_request_closes_its_connection() -> None:
    async def handler(number: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        async for _ in answered(upstream, reader, writer):
            if number == 1:
                await asyncio.sleep(30)

    async with Upstream(handler) as upstream:
        transport = H11Transport()
        waiting = asyncio.create_task(post(transport, upstream.url))
        while upstream.requests < 1:
            await asyncio.sleep(0.01)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        assert await body_of(await post(transport, upstream.url)) == b"ok"
        await transport.aclose()
    assert upstream.connections == 2
