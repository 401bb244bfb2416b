"""Running the fake server: in the background on a free loopback port (sync or async), or in the foreground."""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import socket
import threading
from collections.abc import Callable, Coroutine, Iterable
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self, TypeVar

import uvicorn
from starlette.types import ASGIApp

from ..protocol.exceptions import SettingError
from ..protocol.ids import IdGenerator
from ..protocol.limits import Limits
from ..protocol.plan import Chaos
from ..script.select import ReplySource, ScriptState
from . import uvicorn_adapter
from .admin import ADMIN_PREFIX, reset_state
from .admin_guard import AdminPolicy, is_loopback, new_token
from .app import ServerState, create_app
from .capture import Capture, Connection, Exchange
from .respond import ResponseStore, Unmatched, UnmatchedLog
from .sessions import IDLE_SECONDS, MAX_SESSIONS
from .state import Sessions
from .timeouts import KEEP_ALIVE_SECONDS
from .uvicorn_adapter import ForegroundServer

if TYPE_CHECKING:
    from ..script.models import Script

_GRACE = 0.5  # seconds open connections get to finish when the server stops


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto=IPPROTO_TCP matters: asyncio sets TCP_NODELAY on accepted sockets only when their proto says TCP,
    # and without it Nagle holds every event after the first until the client's delayed ACK (~40 ms).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    sock.setblocking(False)
    return sock


_T = TypeVar("_T")


class _ServerLoop:
    """The event loop every background server of the process runs on, in one daemon thread started on first use:
    a server starts and stops on it in a fraction of a millisecond, without a thread and a loop of its own."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    def loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                self._thread = threading.Thread(target=loop.run_forever, name="rrkit-server", daemon=True)
                self._thread.start()
                self._loop = loop
            return self._loop

    def run(self, coroutine: Coroutine[Any, Any, _T]) -> _T:
        """Run `coroutine` on the loop and wait for its result (from any thread but the loop's own)."""
        return self.submit(coroutine).result()

    def submit(self, coroutine: Coroutine[Any, Any, _T]) -> concurrent.futures.Future[_T]:
        """Run `coroutine` on the loop (from any thread but the loop's own); its result will be in the future."""
        try:
            self.refuse_own_thread()
        except RuntimeError:
            coroutine.close()
            raise
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop())

    def refuse_own_thread(self) -> None:
        """A RuntimeError in the loop's own thread, which would wait on itself."""
        self.loop()
        if threading.current_thread() is self._thread:
            raise RuntimeError(
                "start_in_thread() and stop_in_thread() would wait on the very loop that runs them: "
                "await start() and stop() there instead"
            )

    def forget(self) -> None:
        """In a forked child, which has the loop but not the thread running it: the next server starts another."""
        self._lock = threading.Lock()
        self._loop = self._thread = None


_SERVER_LOOP = _ServerLoop()
os.register_at_fork(after_in_child=_SERVER_LOOP.forget)


class LoopbackServer:
    """Runs an ASGI app with uvicorn on a pre-bound socket: started and stopped in a fraction of a millisecond,
    in the background (`with`: on the event loop thread all background servers share) or on the current event
    loop (`async with`), or in the foreground."""

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        log_level: str = "warning",
        keep_alive: float = KEEP_ALIVE_SECONDS,
    ) -> None:
        if not keep_alive > 0:
            raise SettingError(f"keep_alive must be a number of seconds above 0, got {keep_alive!r}")
        self.host, self.port = host, port
        self.log_level = log_level
        self.keep_alive = keep_alive
        self.ws_max_size = Limits().ws_message
        self.stopping: asyncio.Event | None = None  # set on stop; long waits (stalls) end with it
        self._server: uvicorn.Server | None = None
        self._socket: socket.socket | None = None
        self._loop: asyncio.AbstractEventLoop | None = None  # the shared loop, while running in the background
        self._starting: concurrent.futures.Future[None] | None = None  # a background start, until the stop

    def app(self) -> ASGIApp:
        raise NotImplementedError

    def _new_stopping_event(self) -> None:
        self.stopping = asyncio.Event()

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
    def admin_url(self) -> str:
        """The admin API's base URL, `http://host:port/__rrkit` (docs/guide/serve.md: Admin API)."""
        return f"http://{self._authority()}{ADMIN_PREFIX}"

    def _authority(self) -> str:
        if self._socket is None:
            raise RuntimeError(
                f"the server is not running: start it first (with {type(self).__name__}(...) as server:)"
            )
        host, port = self._socket.getsockname()[:2]
        return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"

    # -- async life cycle ---------------------------------------------------------------------
    async def start(self) -> Self:
        await uvicorn_adapter.start(*self._prepared())
        return self

    def _prepared(self) -> tuple[uvicorn.Server, socket.socket]:
        """The listening socket and the server that is to serve it: all of a start that needs no event loop."""
        self._new_stopping_event()
        sock = self._socket = _bind(self.host, self.port)
        server = self._server = uvicorn.Server(
            uvicorn_adapter.config(self.app(), self.log_level, self.ws_max_size, self.keep_alive)
        )
        return server, sock

    async def stop(self) -> None:
        """Stop at once: close the listener, end stalls, give open connections a moment, then cut them."""
        server = self._server
        if server is None:
            return
        self._server = None
        await uvicorn_adapter.stop(server, _GRACE, self.stopping)
        if self._socket is not None:
            self._socket.close()
        await self._release()

    async def _release(self) -> None:
        """After the server stopped: release what answering held (a proxy's upstream connections)."""

    async def __aenter__(self) -> Self:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # -- sync life cycle (background thread) --------------------------------------------------
    def start_in_thread(self) -> Self:
        """Start on the background servers' event loop thread (itself started with the first such server). The
        socket listens when this returns: a client may connect at once (the kernel holds its connection until
        the loop accepts it), and the loop begins serving without this thread waiting for it; the stop raises
        what that beginning raised, if anything. A subclass that overrides `start` is started by it, waited for."""
        if type(self).start is not LoopbackServer.start:  # a subclass's own start runs whole, as it was written
            _SERVER_LOOP.run(self.start())
        else:
            _SERVER_LOOP.refuse_own_thread()
            server, sock = self._prepared()
            self._starting = _SERVER_LOOP.submit(uvicorn_adapter.start(server, sock))
        self._loop = _SERVER_LOOP.loop()
        return self

    def stop_in_thread(self) -> None:
        if self._loop is None:
            return
        self._loop = None
        _SERVER_LOOP.run(self._stop_once_started())

    async def _stop_once_started(self) -> None:
        try:
            starting = self._starting
            if starting is not None and starting.done():
                starting.result()  # what the beginning raised, without waking the loop once more for it
            elif starting is not None:
                await asyncio.wrap_future(starting)
        finally:
            self._starting = None
            await self.stop()

    def __enter__(self) -> Self:
        return self.start_in_thread()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop_in_thread()

    # -- foreground (the CLI) -----------------------------------------------------------------
    def serve_forever(self, on_ready: Callable[[Self], None] | None = None) -> None:
        """Run until Ctrl-C or SIGTERM, then return promptly (streams stalled or open are cut, idle connections
        closed); `on_ready` is called once the server listens and stop signals are handled. A further signal while
        stopping is absorbed: the stop is already under way."""
        self._socket = _bind(self.host, self.port)
        started = (lambda: on_ready(self)) if on_ready else None
        server = ForegroundServer(
            uvicorn_adapter.config(self.app(), self.log_level, self.ws_max_size, self.keep_alive),
            on_started=started,
            grace=_GRACE,
        )
        self._server = server

        async def main() -> None:
            self._new_stopping_event()
            server.stopping = self.stopping
            with server.capture_signals():  # also while releasing below, after uvicorn restored its handlers
                try:
                    await server.serve(sockets=[self._socket] if self._socket else None)
                finally:
                    if self.stopping is not None:
                        self.stopping.set()
                    await self._release()

        asyncio.run(main())


class FakeServer(LoopbackServer):
    """The fake Responses server. `with FakeServer(script) as server:` runs it in a background thread;
        `async with FakeServer(script) as server:` runs it on the current event loop. Request fields must have the
        types the API requires (`stream` a boolean, ...); `lenient=True` accepts what coerces (`stream: "yes"`).
        `limits` bounds what it reads (rrkit.protocol.limits). `chaos` (a `Chaos`, or `"drop=0.02,stall=0.01,seed=7"`)
        cuts streams at random, the same ones on every run with the same seed. The admin API answers callers on
        loopback only, unless `admin_token` is given (then every call needs it); a server bound to another address
        makes up a token when none is given (`admin_token` holds it). `require_key` answers a request without that API
    key with the service's 401. A request naming a session (`x-rrkit-session`) is answered by that session's own
    script, journal, store, chaos and key (`sessions`), made on first use and dropped after `session_idle` idle
    seconds, at most `max_sessions` at once. An idle HTTP connection stays open `keep_alive` seconds for its next
    request (server.timeouts)."""

    def __init__(
        self,
        script: Script | None = None,
        *,
        source: ReplySource | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        ids: IdGenerator | None = None,
        log_level: str = "warning",
        lenient: bool = False,
        keep: int | None = None,
        admin_token: str | None = None,
        admin_hosts: Iterable[str] = (),
        limits: Limits | None = None,
        chaos: Chaos | str | None = None,
        require_key: str | None = None,
        session_idle: float = IDLE_SECONDS,
        max_sessions: int = MAX_SESSIONS,
        keep_alive: float = KEEP_ALIVE_SECONDS,
    ) -> None:
        if script is not None and source is not None:
            raise SettingError("give a script or a reply source (such as a cassette replay), not both")
        _check_source(source)
        super().__init__(host=host, port=port, log_level=log_level, keep_alive=keep_alive)
        self.state = ServerState(
            source or ScriptState(script),  # without a script, the default one (built when asked for)
            ids=ids or IdGenerator(),
            lenient=lenient,
            chaos=Chaos.parse(chaos) if isinstance(chaos, str) else chaos,
            require_key=require_key or None,
        )
        self.state.sessions = Sessions(self.state, idle=session_idle, limit=max_sessions)
        self.admin_token_made = not admin_token and not is_loopback(host)
        token = new_token() if self.admin_token_made else admin_token
        self.state.admin = AdminPolicy.of(token, [*admin_hosts, host])
        limits = self.state.limits = limits or Limits()
        self.ws_max_size = limits.ws_message
        # Every exchange is kept for `exchanges` (keep=None, the default), or only the `keep` most recent ones that
        # fit in the memory budget's share, as are the stored responses and the near misses.
        self.state.capture = Capture(keep, max_bytes=limits.share("exchanges"))
        self.state.capture.listeners.append(self.state.counts)
        self.state.http_store = ResponseStore(max_bytes=limits.share("responses"))
        self.state.unmatched = UnmatchedLog(max_bytes=limits.share("unmatched"))

    @property
    def admin_token(self) -> str | None:
        """The token admin calls need (`Authorization: Bearer ...`), None when loopback callers need none."""
        return self.state.admin.token

    def app(self) -> ASGIApp:
        return create_app(self.state)

    def _new_stopping_event(self) -> None:
        super()._new_stopping_event()
        self.state.stopping = self.stopping

    async def _release(self) -> None:
        """A source that holds connections (an upstream's, also behind a cassette) closes them; background
        responses still being made stop."""
        await self.state.http_store.aclose()
        await self.state.source.aclose()
        if self.state.sessions is not None:
            await self.state.sessions.aclose()

    # -- what tests read ----------------------------------------------------------------------
    @property
    def script(self) -> Script:
        """The script being played (a replaying server has none)."""
        source = self.state.source
        if not isinstance(source, ScriptState):
            raise AttributeError("this server replays a cassette; it plays no script")
        return source.script

    @property
    def exchanges(self) -> list[Exchange]:
        return self.state.capture.exchanges

    @property
    def sessions(self) -> Sessions:
        """The isolated sessions requests named (`x-rrkit-session`): `server.sessions.state_of(name).capture`."""
        assert self.state.sessions is not None
        return self.state.sessions

    @property
    def connections(self) -> list[Connection]:
        return self.state.capture.connections

    @property
    def unmatched(self) -> list[Unmatched]:
        """The most recent requests nothing answered, with their near-miss reports (`GET /__rrkit/unmatched`)."""
        return self.state.unmatched.recent()

    def settle(self, timeout: float = 5.0) -> Self:
        """Wait until every exchange has its outcome (call from the client's thread, not the server's loop)."""
        if not self.state.capture.wait_settled(timeout):
            running = [e.id for e in self.state.capture.exchanges if e.outcome is None]
            raise TimeoutError(f"exchanges {running} still streaming after {timeout}s")
        return self

    async def settle_async(self, timeout: float = 5.0) -> Self:
        """`settle` for a server running on the current event loop."""
        deadline = asyncio.get_running_loop().time() + timeout
        while not self.state.capture.settled():
            if asyncio.get_running_loop().time() >= deadline:
                raise TimeoutError(f"exchanges still streaming after {timeout}s")
            await asyncio.sleep(0.002)
        return self

    def use(self, script: Script | ReplySource) -> None:
        """Answer from another script (or source) from now on; exchanges captured so far are kept."""
        from ..script.models import Script  # loaded already: `script` is one, or a source

        _check_source(None if isinstance(script, Script) else script)
        self.state.source = ScriptState(script) if isinstance(script, Script) else script

    def reset(self, script: Script | ReplySource | None = None) -> None:
        """Forget captured exchanges, near misses and stored responses; answer from `script` (or the current source)
        afresh (`POST /__rrkit/reset` does the same)."""
        if script is not None:
            self.use(script)
        reset_state(self.state)


def _check_source(source: object) -> None:
    if source is not None and not isinstance(source, ReplySource):
        raise TypeError(
            f"source={type(source).__name__}: a reply source subclasses rrkit.script.ReplySource (write its `select`; "
            "every other capability has a default there)"
        )
