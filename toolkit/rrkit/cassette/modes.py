"""`CassetteDeck`: plays one cassette and records onto it in one record mode (`recordmode`): what the server
answers from, and what gets written."""

from __future__ import annotations

import asyncio
import concurrent.futures
import time
import warnings
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..protocol.events import Event
from ..protocol.exceptions import CassetteError
from ..protocol.ids import IdGenerator
from ..protocol.plan import ResponsePlan
from ..script.models import Handshake, Script
from ..script.select import NoMatch, ReplySource, RequestView, ScriptState
from ..server.capture import Capture, Connection, Exchange
from .file import ANY_HINT, CassetteFile
from .format import Cassette, CassetteWarning, RecordedExchange
from .journal import Journal, exchange_line
from .match import MatchConfig
from .record import append, cassette_from_capture, recorded_connection, recorded_exchange
from .recordmode import RecordMode, parse_record_mode
from .redact import Redactor
from .replay import CassetteSource


@dataclass
class FallbackSource(ReplySource):
    """Answers from `first` (a cassette) and sends what it cannot answer to `then` (the upstream)."""

    first: ReplySource
    then: ReplySource

    async def select(self, request: RequestView) -> ResponsePlan | NoMatch:
        answer = await self.first.select(request)
        return await self.then.select(request) if isinstance(answer, NoMatch) else answer

    async def select_route(self, request: RequestView) -> ResponsePlan | NoMatch | None:
        answer = await self.first.select_route(request)
        return await self.then.select_route(request) if isinstance(answer, NoMatch) else answer

    async def select_handshake(
        self, headers: Mapping[str, str], *, connection_id: int | None = None, query: str = ""
    ) -> Handshake | None:
        handshake = await self.first.select_handshake(headers, connection_id=connection_id, query=query)
        if handshake is not None:
            return handshake
        return await self.then.select_handshake(headers, connection_id=connection_id, query=query)

    async def steer(
        self, frame: Mapping[str, Any], *, connection_id: int | None, ids: IdGenerator
    ) -> list[Event] | None:
        answer = await self.first.steer(frame, connection_id=connection_id, ids=ids)
        return answer if answer is not None else await self.then.steer(frame, connection_id=connection_id, ids=ids)

    async def connection_closed(self, connection_id: int) -> None:
        await self.first.connection_closed(connection_id)
        await self.then.connection_closed(connection_id)

    def unused(self) -> list[str]:
        return self.then.unused()

    def reset(self) -> None:
        self.first.reset()
        self.then.reset()

    def __post_init__(self) -> None:  # what `then` (the upstream) relays, this relays
        self.relays_unknown_ids = self.then.relays_unknown_ids
        self.relays_frames = self.then.relays_frames
        self.answers_every_route = self.then.answers_every_route

    def relay_frame(self, connection_id: int | None, text: str) -> AsyncGenerator[str, None]:
        return self.then.relay_frame(connection_id, text)

    def unplayed(self) -> list[str]:
        return self.first.unplayed()

    async def aclose(self) -> None:
        for source in (self.first, self.then):
            await source.aclose()


@dataclass
class CassetteDeck:
    """One cassette played in one record mode, and recorded onto: what the server answers from, and what gets
    written. `CassetteDeck.open(path, mode, ...)` opens the cassette's file (`CassetteFile`: its lock, journals,
    saves) and reads it; the constructor does no I/O.

    `existing` is what the cassette held when opened (None: no such file yet, or a mode that starts afresh).
    `upstream` answers whatever is recorded: a script (played by the fake server) or a reply source such as a
    proxy's upstream.
    """

    file: CassetteFile
    mode: RecordMode
    existing: Cassette | None
    upstream: Script | ReplySource | None = None
    match: MatchConfig = field(default_factory=MatchConfig)
    redactor: Redactor = field(default_factory=Redactor)
    time_scale: float = 0.0
    name: str = ""
    source_name: str = "fake-server"  # what records: the fake server, or a proxy ("proxy")
    replay: CassetteSource | None = field(default=None, init=False)  # what replays the cassette, once `source()` ran
    _capture: Capture | None = field(default=None, init=False, repr=False)
    _journaled_connections: set[int] = field(default_factory=set, init=False, repr=False)
    _journaling: concurrent.futures.ThreadPoolExecutor | None = field(default=None, init=False, repr=False)
    _pending: list[concurrent.futures.Future[None]] = field(default_factory=list, init=False, repr=False)
    journaled: int = field(default=0, init=False)
    """Exchanges the journal holds (each written whole as it ended)."""
    unjournaled: int = field(default=0, init=False)
    """Exchanges the journal could not take (a full disk): kept in memory only, until a clean stop."""

    def __post_init__(self) -> None:
        if self.mode is RecordMode.NONE and self.existing is None:
            raise CassetteError(
                f"{self.path}: no such cassette, and record mode 'none' only replays. "
                "Record it first with record mode 'once' (or 'new_episodes') and an upstream."
            )
        if self.records and self._upstream() is None:
            raise CassetteError(
                f"{self.path}: record mode {self.mode.value!r} needs an upstream to record from "
                "(a URL to proxy, or a script for the fake server)."
            )

    @classmethod
    def open(
        cls,
        path: Path | str,
        mode: RecordMode | str = RecordMode.NONE,
        *,
        upstream: Script | ReplySource | None = None,
        match: MatchConfig | None = None,
        redactor: Redactor | None = None,
        time_scale: float = 0.0,
        name: str = "",
        source_name: str = "fake-server",
        hint: str = ANY_HINT,
    ) -> CassetteDeck:
        """The deck of the cassette at `path` (read unless `mode` is `rewrite`); CassetteError naming the file
        when it cannot be read, or cannot serve this mode (a script named as one, with `hint`: what to give
        instead). A journal a crashed recording left next to it is recovered into it first (a CassetteWarning)."""
        mode = parse_record_mode(mode)
        file = CassetteFile(Path(path), hint)
        return cls(
            file,
            mode,
            file.open(read=mode is not RecordMode.REWRITE),
            upstream=upstream,
            match=match if match is not None else MatchConfig(),
            redactor=redactor if redactor is not None else Redactor(),
            time_scale=time_scale,
            name=name,
            source_name=source_name,
        )

    @property
    def path(self) -> Path:
        return self.file.path

    @property
    def journal(self) -> Journal | None:
        """The recording's journal, from `journal_to` until `save`."""
        return self.file.journal

    @property
    def lock_timeout(self) -> float:
        """How long `save` waits for another process writing in the folder."""
        return self.file.lock_timeout

    @lock_timeout.setter
    def lock_timeout(self, seconds: float) -> None:
        self.file.lock_timeout = seconds

    @property
    def records(self) -> bool:
        """Whether this deck adds exchanges to the cassette."""
        if self.mode is RecordMode.ONCE:
            return self.existing is None
        return self.mode is not RecordMode.NONE

    @property
    def _appends(self) -> bool:
        """Whether what this deck records goes after what the cassette holds (else it replaces it)."""
        return self.mode in (RecordMode.NEW_EPISODES, RecordMode.ALL)

    def _upstream(self) -> ReplySource | None:
        if isinstance(self.upstream, Script):
            self.upstream = ScriptState(self.upstream)
        return self.upstream

    def source(self) -> ReplySource:
        """What the server should answer from in this mode."""
        replay = self.replay = CassetteSource(self.existing, self.match, self.time_scale) if self.existing else None
        upstream = self._upstream()
        if not self.records:
            assert replay is not None
            return replay
        assert upstream is not None
        if self.mode is RecordMode.NEW_EPISODES and replay is not None:
            return FallbackSource(replay, upstream)
        return upstream

    def recorded(self, exchanges: Sequence[Exchange], connections: Sequence[Connection]) -> Cassette | None:
        """The cassette to write after serving these exchanges (onto the file as it is now, in a mode that
        appends), or None when nothing is to be written."""
        build = self._recording(exchanges, connections)
        if build is None:
            return None
        return build(self.file.current() if self._appends else None)

    def save(self, exchanges: Sequence[Exchange], connections: Sequence[Connection]) -> Path | None:
        """Write the cassette when this deck records (`CassetteFile.save_onto`: atomically, under the folder's
        lock, onto the file as it is then), then remove the recording's journal."""
        self.settle_journal()
        build = self._recording(exchanges, connections)
        if build is None:
            return None
        written = self.file.save_onto(build) if self._appends else self.file.save(build(None))
        if self._capture is not None and self._exchange_ended in self._capture.listeners:
            self._capture.listeners.remove(self._exchange_ended)
        if self._journaling is not None:
            self._journaling.shutdown()
            self._journaling = None
        return written

    def _recording(
        self, exchanges: Sequence[Exchange], connections: Sequence[Connection]
    ) -> Callable[[Cassette | None], Cassette] | None:
        """What makes the cassette to write from the file as it is then (None: no such file), or None when this
        deck records nothing. The new exchanges become a cassette now; they go after the file's in a mode that
        appends."""
        if not self.records:
            return None
        new = [exchange for exchange in exchanges if not exchange.replayed]
        replayed_on = self._replayed_connections(new)
        used = {exchange.connection_id for exchange in new if exchange.connection_id not in replayed_on}
        new_connections = [c for c in connections if c.id in used or (not c.exchanges and self._all_new())]
        fresh = cassette_from_capture(
            new,
            new_connections,
            name=self.name or self.path.stem,
            source=self.source_name,
            redactor=self.redactor,
            presets=self.match.presets or None,
        )

        def build(on_disk: Cassette | None) -> Cassette:
            keep = on_disk if on_disk is not None else self.existing
            if not self._appends or keep is None:
                return fresh
            merged = append(keep, fresh)
            self._onto_recorded_connections(new, merged.exchanges[len(merged.exchanges) - len(new) :], replayed_on)
            return merged

        return build

    def _replayed_connections(self, new: Sequence[Exchange]) -> dict[int | None, int]:
        """The live connections, among those of `new`, whose handshake a recorded connection answered: a new
        exchange on one belongs to that recorded connection."""
        if self.replay is None:
            return {}
        live = {e.connection_id for e in new if e.connection_id is not None}
        found = {connection: self.replay.recorded_connection(connection) for connection in live}
        return {connection: recorded for connection, recorded in found.items() if recorded is not None}

    def _onto_recorded_connections(
        self, live: Sequence[Exchange], appended: Sequence[RecordedExchange], replayed_on: Mapping[int | None, int]
    ) -> None:
        """Put new exchanges made on a replayed connection on its recorded connection, and name the responses
        they build on (issued by the replay) by their recorded ids, so the cassette stays consistent."""
        for exchange, recorded in zip(live, appended, strict=True):
            if exchange.connection_id not in replayed_on:
                continue
            assert self.replay is not None
            recorded.connection = replayed_on[exchange.connection_id]
            previous = (recorded.wire_request or {}).get("previous_response_id")
            original = self.replay.recorded_id(exchange.connection_id, previous) if previous else None
            if original is not None and recorded.wire_request is not None:
                recorded.wire_request = {**recorded.wire_request, "previous_response_id": original}

    def _all_new(self) -> bool:
        return self.mode is not RecordMode.NEW_EPISODES or self.existing is None

    # -- the journal: each exchange on disk as it ends -----------------------------------------------------
    def journal_to(self, capture: Capture) -> Journal | None:
        """When this deck records: journal each exchange of `capture` as it gets its outcome (`journal` module),
        until `save` writes the cassette and removes the journal. Call it before the server answers."""
        if not self.records or self.journal is not None:
            return self.journal
        journal = self.file.start_journal(
            replaces=not self._appends,
            name=self.name or self.path.stem,
            source=self.source_name,
            redaction=self.redactor.apply(Cassette()).redaction,
        )
        self._capture = capture
        capture.listeners.append(self._exchange_ended)
        return journal

    def _exchange_ended(self, exchange: Exchange) -> None:
        # On the server's loop the outcome is set a moment before the last fields (a collected body): journal it
        # on the loop's next turn, once the handler has run on to its next await.
        try:
            asyncio.get_running_loop().call_soon(self._journal_aside, exchange)
        except RuntimeError:
            self._journal_exchange(exchange)

    def _journal_aside(self, exchange: Exchange) -> None:
        """Journal a finished exchange on the journal's own thread, in the order they ended: writing down one of
        100,000 events takes a second, which the loop spends forwarding the next stream instead."""
        if self._journaling is None:
            self._journaling = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="rrkit-journal")
        self._pending = [future for future in self._pending if not future.done()]
        capture = self._capture
        assert capture is not None  # an exchange journaled is one of its own
        between = GiveWay(lambda: capture.answering > 0)
        self._pending.append(self._journaling.submit(self._journal_exchange, exchange, between))

    def settle_journal(self) -> None:
        """Wait until every exchange that ended is in the journal (or known not to be)."""
        for future in list(self._pending):
            future.result()
        self._pending.clear()

    def _journal_exchange(self, exchange: Exchange, between: Callable[[], None] | None = None) -> None:
        journal, capture = self.journal, self._capture
        if journal is None or capture is None or exchange.replayed:
            return
        try:
            journal.append(*self._journal_records(exchange, capture, between))
            self.journaled += 1
        except Exception as error:  # never fail the server; the exchange is still written at a clean stop
            self.unjournaled += 1
            warnings.warn(
                f"{journal.path}: exchange {exchange.id} could not be journaled ({type(error).__name__}: {error}); "
                "it is written to the cassette at a clean stop only",
                CassetteWarning,
                stacklevel=1,
            )

    def _journal_records(
        self, exchange: Exchange, capture: Capture, between: Callable[[], None] | None
    ) -> list[dict[str, Any]]:
        connection_id = exchange.connection_id
        onto = self._replayed_connections([exchange]).get(connection_id)
        records: list[dict[str, Any]] = []
        live = None
        if connection_id is not None and onto is None and connection_id not in self._journaled_connections:
            live = next((c for c in capture.connections if c.id == connection_id), None)
        single = Cassette(
            connections=[recorded_connection(live)] if live is not None else [],
            exchanges=[recorded_exchange(exchange, 0.0, between)],  # absolute start times: rebased on recovery
        )
        single = self.redactor.apply(single)
        recorded = single.exchanges[0]
        if onto is not None:
            self._onto_recorded_connections([exchange], [recorded], {connection_id: onto})
        if live is not None:
            self._journaled_connections.add(live.id)
            records.append({"connection": single.connections[0].model_dump(mode="json"), "started_at": live.started_at})
        records.append({"exchange": exchange_line(recorded, between), **({"onto": onto} if onto is not None else {})})
        return records


# -- the journal's thread gives way ------------------------------------------------------------------------

SLICE_SECONDS = 0.0002
"""Work done at most between two turns given to the loop: what a request that arrives waits, each time it needs
the interpreter (a thread that computes holds it for 5 ms at a time, each time another thread asks for it)."""
IDLE_PAUSE = 0.00005
"""Seconds left to the loop between two slices while it answers nothing: enough for it to take the interpreter."""
BUSY_PAUSE = 0.002
"""Seconds left to the loop between two slices while it answers a request or a WebSocket: the journal still moves on
(a slice in every 10), the answer hardly meets it."""


class GiveWay:
    """How the journal's thread leaves the interpreter to the server's loop, called between small pieces of work
    (`between`): once SLICE_SECONDS of work went by since the last turn, it pauses for BUSY_PAUSE if `busy()` (the
    server answers something) else IDLE_PAUSE, so that no answer waits on a recording being written down."""

    def __init__(
        self,
        busy: Callable[[], bool],
        clock: Callable[[], float] = time.perf_counter,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.busy, self.clock, self.sleep = busy, clock, sleep
        self._since = clock()

    def __call__(self) -> None:
        if self.clock() - self._since < SLICE_SECONDS:
            return
        self.sleep(BUSY_PAUSE if self.busy() else IDLE_PAUSE)
        self._since = self.clock()
