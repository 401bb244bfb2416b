"""The state a server answers from: the default session's, and each named session's (a request naming one with
`x-rrkit-session` gets its own script, journal, store, chaos, key and counters: `Sessions`), and the memory given
back once sessions end or a burst of requests has passed (`AfterBurst`)."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import gc
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from starlette.types import Scope

from ..protocol.exceptions import SettingError
from ..protocol.headers import SESSION_HEADER
from ..protocol.ids import IdGenerator
from ..protocol.jsontext import json_size
from ..protocol.limits import Limits
from ..protocol.plan import Chaos
from ..protocol.vocabulary import Transport
from ..script.select import NoMatch, ReplySource
from .admin_guard import AdminPolicy
from .capture import Capture, ExchangeCounts
from .sessions import IDLE_SECONDS, MAX_SESSIONS, SessionRefused, check_name
from .store import WS_STORE_SIZE, ResponseStore

UNMATCHED_KEPT = 100
"""Requests nothing answered whose near-miss reports a server keeps (the most recent ones) for `/__rrkit/unmatched`."""


@dataclass(frozen=True)
class Unmatched:
    """A request nothing answered: which exchange carried it, and the source's near-miss report (`NoMatch`)."""

    exchange_id: int
    transport: Transport
    connection_id: int | None
    at: float  # when it was refused (seconds since the epoch)
    report: NoMatch
    wire_request: dict[str, Any]


class UnmatchedLog:
    """The most recent `Unmatched` requests, readable from any thread while the server answers."""

    def __init__(self, size: int = UNMATCHED_KEPT, max_bytes: int | None = None) -> None:
        self.size = size
        self.max_bytes = max_bytes  # None: bounded by `size` alone
        self.kept_bytes = 0
        self._recent: deque[tuple[Unmatched, int]] = deque()
        self._lock = threading.Lock()
        self.total = 0  # requests nothing answered since the start (or the last reset), evicted ones included

    def add(self, unmatched: Unmatched) -> None:
        size = json_size(unmatched.wire_request) if self.max_bytes is not None else 0
        with self._lock:
            self._recent.append((unmatched, size))
            self.kept_bytes += size
            self.total += 1
            while len(self._recent) > self.size or (
                self.max_bytes is not None and self.kept_bytes > self.max_bytes and len(self._recent) > 1
            ):
                self.kept_bytes -= self._recent.popleft()[1]

    def recent(self) -> list[Unmatched]:
        with self._lock:
            return [unmatched for unmatched, _ in self._recent]

    def clear(self) -> None:
        with self._lock:
            self._recent.clear()
            self.kept_bytes = self.total = 0


@dataclass
class ServerState:
    source: ReplySource
    capture: Capture = field(default_factory=Capture)
    ids: IdGenerator = field(default_factory=IdGenerator)
    http_store: ResponseStore = field(default_factory=ResponseStore)
    ws_store_size: int = WS_STORE_SIZE  # each WebSocket connection's own ResponseStore
    stopping: asyncio.Event | None = None  # set by the runner on shutdown; ends stalls and pauses
    lenient: bool = False  # accept coercible field types (`stream: "yes"`), as `check_request` says
    unmatched: UnmatchedLog = field(default_factory=UnmatchedLog)  # recent near-miss reports
    admin: AdminPolicy = field(default_factory=AdminPolicy)  # who may call the admin API
    limits: Limits = field(default_factory=Limits)  # the sizes of what it reads
    counts: ExchangeCounts = field(default_factory=ExchangeCounts)  # exchanges ended, for /__rrkit/metrics
    chaos: Chaos | None = None  # drawn on every stream whose plan has no chaos (nor cut) of its own
    require_key: str | None = None  # the API key every request must bear (None: any key, or none)
    sessions: Sessions | None = None  # the server's named sessions, each a state of its own
    session: str | None = None  # this state's session name (None: the default session)


STATE_KEY = "rrkit.state"
"""Scope key: the state of the server a request reached (one app serves every server of the process)."""


def state_of(scope: Scope) -> ServerState:
    state: ServerState = scope[STATE_KEY]
    return state


@dataclass
class Session:
    name: str
    state: ServerState
    created_at: float = field(default_factory=time.time)
    used: float = field(default_factory=time.monotonic)  # last request (monotonic seconds)

    def busy(self) -> bool:
        """Answering a request or holding a socket, or with an exchange still running: never dropped then."""
        capture = self.state.capture
        return capture.answering > 0 or not capture.settled()

    def kept_bytes(self) -> int:
        state = self.state
        return state.capture.kept_bytes + state.http_store.kept_bytes + state.unmatched.kept_bytes

    def summary(self, now: float) -> dict[str, Any]:
        capture = self.state.capture
        return {
            "name": self.name,
            "created_at": round(self.created_at, 6),
            "idle_seconds": round(max(0.0, now - self.used), 3),
            "busy": self.busy(),
            "exchanges": len(capture.exchanges),
            "connections": len(capture.connections),
            "kept_bytes": self.kept_bytes(),
            "chaos": self.state.chaos.to_json() if self.state.chaos is not None else None,
            "key_required": self.state.require_key is not None,
        }


class Sessions:
    """The named sessions of one server (`base`, the default session, holds none of their state). Thread-safe:
    tests read it from their own threads while the server's loop answers."""

    def __init__(
        self,
        base: ServerState,
        *,
        idle: float = IDLE_SECONDS,
        limit: int = MAX_SESSIONS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if idle <= 0:
            raise SettingError(f"session idle time: give seconds above 0, got {idle}")
        if limit < 1:
            raise SettingError(f"session limit: give 1 or more sessions, got {limit}")
        self.base, self.idle, self.limit, self._clock = base, idle, limit, clock
        self._sessions: dict[str, Session] = {}
        self._lock = threading.Lock()
        self._sweep: asyncio.TimerHandle | None = None
        self.ended = {"expired": 0, "evicted": 0, "deleted": 0}
        self._returned = True  # no ended session's memory waits to go back to the system
        self.created = 0

    def __len__(self) -> int:
        return len(self._sessions)

    def state_of(self, name: str) -> ServerState:
        """The state of session `name`, made now if it is new (SessionRefused: not a name, or no room for it)."""
        now = self._clock()
        with self._lock:
            session = self._sessions.get(name)
            if session is None:
                check_name(name)
                self._make_room(now)
                session = self._sessions[name] = Session(name, self._new_state(name))
                self.created += 1
            session.used = now
        self._schedule_sweep()
        return session.state

    def _new_state(self, name: str) -> ServerState:
        base = self.base
        source = base.source.for_session()
        if source is None:
            raise SessionRefused(
                400,
                f"This server answers from a {type(base.source).__name__}, which sessions cannot share: sessions need "
                f"a script or a cassette server. Send the request without {SESSION_HEADER}.",
                "sessions_not_supported",
            )
        limits = base.limits
        state = ServerState(
            source,
            capture=Capture(base.capture.keep, max_bytes=limits.share("exchanges"), session=name),
            ids=base.ids,
            http_store=ResponseStore(max_bytes=limits.share("responses")),
            ws_store_size=base.ws_store_size,
            stopping=base.stopping,
            lenient=base.lenient,
            unmatched=UnmatchedLog(max_bytes=limits.share("unmatched")),
            admin=base.admin,
            limits=limits,
            chaos=base.chaos,
            require_key=base.require_key,
            sessions=self,
            session=name,
        )
        shared = [listener for listener in base.capture.listeners if listener is not base.counts]
        state.capture.listeners[:] = [state.counts, *shared]  # a journal and a log line see every session
        return state

    def _make_room(self, now: float) -> None:
        """Under the lock: drop idle sessions, then the least recently used ones not busy while there are `limit`
        of them or their stores keep more than the memory budget."""
        self._expire(now)
        budget = self.base.limits.memory
        idle_first = sorted((s for s in self._sessions.values() if not s.busy()), key=lambda s: s.used)
        kept = sum(session.kept_bytes() for session in self._sessions.values())
        for session in idle_first:
            if len(self._sessions) < self.limit and kept <= budget:
                break
            kept -= session.kept_bytes()
            self._end(session, "evicted")
        if len(self._sessions) >= self.limit:
            raise SessionRefused(
                503,
                f"All {self.limit} sessions are busy: none can be dropped for a new one. Raise --max-sessions, or "
                "end sessions when done (DELETE /__rrkit/session).",
                "too_many_sessions",
            )

    def _expire(self, now: float) -> None:
        for session in list(self._sessions.values()):
            if now - session.used >= self.idle and not session.busy():
                self._end(session, "expired")

    def _end(self, session: Session, why: str) -> None:
        del self._sessions[session.name]
        self.ended[why] += 1
        self._returned = False  # what it held goes back to the system at the next sweep
        _release_later(session.state)

    def drop(self, name: str) -> bool:
        """End session `name` now (its background responses stop); False when there is none."""
        with self._lock:
            session = self._sessions.get(name)
            if session is None:
                return False
            self._end(session, "deleted")
        self._schedule_sweep()
        return True

    def sweep(self) -> None:
        """Drop the sessions idle for `idle` seconds (none busy), and sweep again later while any is left."""
        with self._lock:
            self._sweep = None
            self._expire(self._clock())
            give_back, self._returned = not self._returned, True
        if give_back:
            return_memory()
        self._schedule_sweep()

    def _schedule_sweep(self) -> None:
        """A sweep on the server's loop while sessions live, so that idle ones go even when no request comes."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # a test thread making a session: the next request on the loop schedules it
            return
        with self._lock:
            if self._sweep is None and (self._sessions or not self._returned):
                self._sweep = loop.call_later(max(0.05, self.idle / 4), self.sweep)

    def sessions(self) -> list[Session]:
        with self._lock:
            return list(self._sessions.values())

    def summary(self) -> dict[str, Any]:
        now = self._clock()
        live = self.sessions()
        return {
            "live": len(live),
            "max": self.limit,
            "idle_seconds": self.idle,
            "created": self.created,
            "ended": dict(self.ended),
            "kept_bytes": sum(session.kept_bytes() for session in live),
            "data": [session.summary(now) for session in live],
        }

    async def aclose(self) -> None:
        """The server stopped: every session's background responses stop and its source is released."""
        with self._lock:
            ended, self._sessions = list(self._sessions.values()), {}
            if self._sweep is not None:
                self._sweep.cancel()
                self._sweep = None
        for session in ended:
            await _release(session.state)


async def _release(state: ServerState) -> None:
    await state.http_store.aclose()
    await state.source.aclose()


def return_memory() -> None:
    """Give what ended sessions held back to the system: their cycles collected (an exchange and its capture refer
    to each other), then the C heap's free pages returned (glibc's `malloc_trim`; elsewhere only the collection)."""
    gc.collect()
    if _TRIM is not None:
        _TRIM(0)


BURST = 500
"""Requests answered since the heap was last given back that make a return worth its full collection."""
QUIET_SECONDS = 2.0
"""How long no request may be in progress before the heap is given back."""


class AfterBurst:
    """Counts the requests in progress (every session's, WebSocket connections as one each) and, when `burst` of
    them have ended since the last return and none has begun or ended for `quiet` seconds, gives the heap back
    (a server under load is often between requests for an instant: that is no quiet moment)."""

    def __init__(
        self, quiet: float = QUIET_SECONDS, burst: int = BURST, give_back: Callable[[], None] = return_memory
    ) -> None:
        self.quiet, self.burst, self.give_back = quiet, burst, give_back
        self.active = 0
        self.ended = 0  # since the last return
        self.returns = 0
        self._moves = 0  # requests begun or ended, ever: unchanged over the quiet moment if it was quiet
        self._timer: asyncio.TimerHandle | None = None

    def begin(self) -> None:
        self.active += 1
        self._moves += 1

    def end(self) -> None:
        self.active -= 1
        self.ended += 1
        self._moves += 1
        if self.active == 0 and self.ended >= self.burst and self._timer is None:
            self._wait(asyncio.get_running_loop())

    def _wait(self, loop: asyncio.AbstractEventLoop) -> None:
        self._timer = loop.call_later(self.quiet, self._quiet, self._moves)

    def _quiet(self, moves: int) -> None:
        self._timer = None
        if self.active:  # busy again: the next request to end brings the server back here
            return
        if moves != self._moves:  # requests came and went meanwhile: wait for a moment that is quiet throughout
            self._wait(asyncio.get_running_loop())
            return
        self.ended = 0
        self.returns += 1
        self.give_back()


def _malloc_trim() -> Callable[[int], int] | None:
    try:
        trim: Callable[[int], int] = ctypes.CDLL(None).malloc_trim
    except (AttributeError, OSError):  # not glibc
        return None
    return trim


_TRIM = _malloc_trim() if sys.platform.startswith("linux") else None

_RELEASING: set[asyncio.Task[None]] = set()  # held until done: the loop keeps only weak references to tasks


def _release_later(state: ServerState) -> None:
    """Release a dropped session's state on the running loop (from a thread with none: forgotten as it is)."""
    with contextlib.suppress(RuntimeError):
        task = asyncio.get_running_loop().create_task(_release(state))
        _RELEASING.add(task)
        task.add_done_callback(_RELEASING.discard)
