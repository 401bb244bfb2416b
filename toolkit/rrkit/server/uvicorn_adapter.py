"""Every use of uvicorn's internals, in one place: the connection's transport behind `send`, the handshake flag of
its websockets-sansio protocol, its live connections and tasks, its lifespan and signal handling. The version
range in pyproject.toml is the one these were checked against."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable
from types import FrameType
from typing import Any

import uvicorn
from starlette.types import ASGIApp, Receive, Scope, Send

RAW_SEND = "rrkit.raw_send"  # scope key: the server's own `send`, kept by the app's outermost layer


class KeepRawSend:
    """Outermost middleware: remembers the server's `send`, through which a fault reaches the TCP connection."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        scope[RAW_SEND] = send
        await self.app(scope, receive, send)


def _protocol(scope: Scope) -> Any:
    """uvicorn's protocol object for this connection (the owner of its `send`)."""
    return getattr(scope.get(RAW_SEND), "__self__", None)


def connection_transport(scope: Scope) -> asyncio.Transport | None:
    """The connection's transport: what a scripted cut closes."""
    transport = getattr(_protocol(scope), "transport", None)
    return transport if isinstance(transport, asyncio.BaseTransport) else None  # type: ignore[return-value]


def mark_denial_sent(scope: Scope) -> None:
    """uvicorn's websockets-sansio protocol does not count a denial response as a finished handshake and
    logs a spurious "ASGI callable returned without completing handshake" error (Kludex/uvicorn#3138)."""
    owner = _protocol(scope)
    if owner is not None and getattr(owner, "handshake_complete", None) is False:
        owner.handshake_complete = True


def config(app: ASGIApp, log_level: str) -> uvicorn.Config:
    """The one configuration rrkit runs uvicorn with (loaded, ready to serve)."""
    loaded = uvicorn.Config(
        app,
        log_level=log_level,
        lifespan="off",
        http="h11",
        ws="websockets-sansio",
        ws_per_message_deflate=True,
        access_log=False,
    )
    loaded.load()
    return loaded


async def start(server: uvicorn.Server, sock: socket.socket) -> None:
    """Start serving on a bound socket without `serve()` (which would install signal handlers)."""
    server.lifespan = server.config.lifespan_class(server.config)
    await server.startup(sockets=[sock])


async def stop(server: uvicorn.Server, grace: float) -> None:
    """Close the listeners, ask open connections to finish, give them `grace` seconds, then cut them and
    cancel what they still run."""
    for listener in server.servers:
        listener.close()
    connections = server.server_state.connections
    for connection in list(connections):
        connection.shutdown()
    loop = asyncio.get_running_loop()
    deadline = loop.time() + grace
    while connections and loop.time() < deadline:
        await asyncio.sleep(0.005)
    for connection in list(connections):
        transport: Any = getattr(connection, "transport", None)
        if transport is not None:
            transport.abort()
    for task in list(server.server_state.tasks):
        task.cancel()


class ForegroundServer(uvicorn.Server):
    """uvicorn in the foreground, stopped by SIGINT or SIGTERM alike without raising the signal again once it
    stopped (uvicorn's default, which makes SIGTERM kill the process): the caller still writes its cassette."""

    def __init__(self, config: uvicorn.Config, on_started: Callable[[], None] | None = None) -> None:
        super().__init__(config)
        self.on_started = on_started

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        """Started (and its signal handlers in place, so a stop signal from now on is handled): say so."""
        await super().startup(sockets)
        if self.on_started is not None and not self.should_exit:
            self.on_started()

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        super().handle_exit(sig, frame)
        self._captured_signals.clear()
