"""A hand-written upstream for proxy tests: answers what no Responses server would (HTML pages, keep-alive
comments, silence) and keeps every request exactly as it arrived, bytes included."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route, WebSocketRoute
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.websockets import WebSocket, WebSocketDisconnect

from rrkit.server.runner import LoopbackServer


@dataclass
class Seen:
    """One request as the upstream received it."""

    path: str
    query: str
    headers: dict[str, str]
    body: bytes


class RawUpstream(LoopbackServer):
    """`handler(scope, receive, send)` answers `POST .../responses`; `on_frame(text) -> [replies]` answers
    WebSocket frames. `seen` has the requests, `disconnects` counts the clients seen leaving mid-answer."""

    def __init__(
        self,
        handler: Callable[[Scope, Receive, Send], Awaitable[None]] | None = None,
        on_frame: Callable[[str], list[str]] | None = None,
    ) -> None:
        super().__init__()
        self.handler, self.on_frame = handler, on_frame
        self.seen: list[Seen] = []
        self.frames: list[str] = []
        self.disconnects = 0

    def app(self) -> ASGIApp:
        async def http(request: Request) -> Response:
            body = await request.body()
            headers = {k.lower(): v for k, v in request.headers.items()}
            self.seen.append(Seen(request.url.path, request.url.query, headers, body))
            return _Handled(self)

        async def websocket(ws: WebSocket) -> None:
            await ws.accept()
            try:
                while True:
                    text = await ws.receive_text()
                    self.frames.append(text)
                    for reply in self.on_frame(text) if self.on_frame else []:
                        await ws.send_text(reply)
            except WebSocketDisconnect:
                self.disconnects += 1

        routes = [Route("/v1/responses", http, methods=["POST"]), WebSocketRoute("/v1/responses", websocket)]
        return Starlette(routes=routes)

    def wait_disconnects(self, count: int = 1, timeout: float = 10.0) -> bool:
        """Wait (from the test's thread) until `count` clients were seen leaving."""
        import time

        deadline = time.monotonic() + timeout
        while self.disconnects < count:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.01)
        return True


class _Handled(Response):
    def __init__(self, upstream: RawUpstream) -> None:
        self.upstream = upstream
        self.background = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Run the handler until it ends, or until its client leaves (a handler that waits for ever is then
        ended here, as a real server ends a request whose client is gone)."""
        assert self.upstream.handler is not None
        watcher = asyncio.create_task(_count_disconnect(receive, self.upstream))
        handling = asyncio.create_task(self.upstream.handler(scope, receive, send))
        try:
            await asyncio.wait((watcher, handling), return_when=asyncio.FIRST_COMPLETED)
        finally:
            watcher.cancel()
            if not handling.done():
                handling.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await handling


async def _count_disconnect(receive: Receive, upstream: RawUpstream) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
    upstream.disconnects += 1


Handler = Callable[[Scope, Receive, Send], Awaitable[None]]


def whole(status: int, body: bytes, content_type: str, **headers: str) -> Handler:
    """A handler answering one whole body (header names in `headers` with `_` for `-`)."""

    async def handler(scope: Scope, receive: Receive, send: Send) -> None:
        raw = [(b"content-type", content_type.encode())]
        raw += [(k.replace("_", "-").encode(), v.encode()) for k, v in headers.items()]
        await send({"type": "http.response.start", "status": status, "headers": raw})
        await send({"type": "http.response.body", "body": body})

    return handler


def sse(*chunks: bytes, then_wait: bool = False) -> Handler:
    """A handler streaming these raw SSE chunks; with `then_wait`, it then sends nothing more, for ever."""

    async def handler(scope: Scope, receive: Receive, send: Send) -> None:
        headers = [(b"content-type", b"text/event-stream")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        for chunk in chunks:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        if then_wait:
            await asyncio.Event().wait()
        await send({"type": "http.response.body", "body": b""})

    return handler


async def silent(scope: Scope, receive: Receive, send: Send) -> None:
    """A handler that never answers (an upstream still thinking)."""
    await asyncio.Event().wait()
