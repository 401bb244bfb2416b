"""Running the fake server: in the background on a free loopback port (sync or async), or in the foreground."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Callable
from types import TracebackType
from typing import Any, Self

import uvicorn

from ..protocol.ids import IdGenerator
from ..script.loader import default_script
from ..script.models import Script
from ..script.select import ScriptState
from .app import ServerState, create_app
from .capture import Connection, Exchange

_GRACE = 0.5  # seconds open connections get to finish when the server stops


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    sock.setblocking(False)
    return sock


class FakeServer:
    """The fake Responses server. `with FakeServer(script) as server:` runs it in a background thread;
    `async with FakeServer(script) as server:` runs it on the current event loop."""

    def __init__(
        self,
        script: Script | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        ids: IdGenerator | None = None,
        log_level: str = "warning",
    ) -> None:
        self.state = ServerState(ScriptState(script or default_script()), ids=ids or IdGenerator())
        self.host, self.port = host, port
        self.log_level = log_level
        self._server: uvicorn.Server | None = None
        self._socket: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    # -- what tests read ----------------------------------------------------------------------
    @property
    def script(self) -> Script:
        return self.state.script.script

    @property
    def http_url(self) -> str:
        """Base URL for HTTP clients, e.g. `OpenAI(base_url=server.http_url)`."""
        return f"http://{self._authority()}/v1"

    @property
    def ws_url(self) -> str:
        return f"ws://{self._authority()}/v1"

    @property
    def responses_ws_url(self) -> str:
        """The full WebSocket endpoint, `ws://host:port/v1/responses`."""
        return self.ws_url + "/responses"

    @property
    def exchanges(self) -> list[Exchange]:
        return self.state.capture.exchanges

    @property
    def connections(self) -> list[Connection]:
        return self.state.capture.connections

    def use(self, script: Script) -> None:
        """Play another script from now on (exchanges captured so far are kept)."""
        self.state.script.reset(script)

    def reset(self, script: Script | None = None) -> None:
        """Forget captured exchanges and stored responses; play `script` (or the current one) afresh."""
        self.state.script.reset(script)
        self.state.capture.clear()
        self.state.http_store.clear()

    def _authority(self) -> str:
        if self._socket is None:
            raise RuntimeError("the server is not running: start it first (with FakeServer(...) as server: ...)")
        host, port = self._socket.getsockname()[:2]
        return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"

    # -- async life cycle ---------------------------------------------------------------------
    def _config(self) -> uvicorn.Config:
        config = uvicorn.Config(
            create_app(self.state),
            log_level=self.log_level,
            lifespan="off",
            http="h11",
            ws="websockets-sansio",
            ws_per_message_deflate=True,
            access_log=False,
        )
        config.load()
        return config

    async def start(self) -> Self:
        self.state.stopping = asyncio.Event()
        self._socket = _bind(self.host, self.port)
        server = self._server = uvicorn.Server(self._config())
        server.lifespan = server.config.lifespan_class(server.config)
        await server.startup(sockets=[self._socket])
        return self

    async def stop(self) -> None:
        """Stop at once: close the listener, end stalls, give open connections a moment, then cut them."""
        server = self._server
        if server is None:
            return
        self._server = None
        if self.state.stopping is not None:
            self.state.stopping.set()
        for listener in server.servers:
            listener.close()
        for connection in list(server.server_state.connections):
            connection.shutdown()
        deadline = asyncio.get_running_loop().time() + _GRACE
        while server.server_state.connections and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.005)
        for connection in list(server.server_state.connections):
            transport: Any = getattr(connection, "transport", None)
            if transport is not None:
                transport.abort()
        for task in list(server.server_state.tasks):
            task.cancel()
        if self._socket is not None:
            self._socket.close()

    async def __aenter__(self) -> Self:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # -- sync life cycle (background thread) --------------------------------------------------
    def start_in_thread(self) -> Self:
        started = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            try:
                loop.run_until_complete(self.start())
            except BaseException as error:  # reported to the starting thread
                failure.append(error)
                started.set()
                loop.close()
                return
            started.set()
            loop.run_forever()
            loop.run_until_complete(self.stop())
            loop.close()

        self._thread = threading.Thread(target=run, name="rrkit-server", daemon=True)
        self._thread.start()
        started.wait()
        if failure:
            raise failure[0]
        return self

    def stop_in_thread(self) -> None:
        if self._thread is None or self._loop is None:
            return
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._thread = None

    def call_in_loop(self, function: Callable[[], Any]) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(function)

    def __enter__(self) -> Self:
        return self.start_in_thread()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop_in_thread()

    # -- foreground (the CLI) -----------------------------------------------------------------
    def serve_forever(self, on_ready: Callable[[FakeServer], None] | None = None) -> None:
        """Run until Ctrl-C (uvicorn handles the signals)."""
        self._socket = _bind(self.host, self.port)
        self._server = uvicorn.Server(self._config())
        if on_ready is not None:
            on_ready(self)

        async def main() -> None:
            self.state.stopping = asyncio.Event()
            assert self._server is not None
            await self._server.serve(sockets=[self._socket] if self._socket else None)
            self.state.stopping.set()

        asyncio.run(main())
