"""What the fake server saw and did: connections and exchanges, readable from any thread while it runs."""

from __future__ import annotations

import contextvars
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..protocol.outcome import Outcome
from ..protocol.plan import PlannedEvent
from ..protocol.vocabulary import ClosedBy, Transport


class SentEvent:
    """One event as sent, `at` seconds after its exchange started. Made with `of` from the plan's event, its
    `event` is read from that only when asked: a replayed event's JSON text is not parsed as it is sent."""

    __slots__ = ("_event", "_planned", "at")

    def __init__(self, at: float, event: dict[str, Any]) -> None:
        self.at = at
        self._event: dict[str, Any] | None = event
        self._planned: PlannedEvent | None = None

    @classmethod
    def of(cls, at: float, planned: PlannedEvent) -> SentEvent:
        sent = cls(at, {})
        sent._event, sent._planned = None, planned
        return sent

    @property
    def event(self) -> dict[str, Any]:
        if self._event is None:
            assert self._planned is not None
            self._event, self._planned = self._planned.event, None
        return self._event

    @event.setter
    def event(self, value: dict[str, Any]) -> None:
        self._event, self._planned = value, None

    @property
    def type(self) -> object:
        """The event's `type`; a replayed event's is read off its text, which is not parsed for it."""
        kind = getattr(self._planned, "type", None)
        return kind if kind is not None else self.event.get("type")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SentEvent) and (self.at, self.event) == (other.at, other.event)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"SentEvent(at={self.at!r}, event={self.event!r})"


@dataclass
class Exchange:
    """One request and the server's answer to it."""

    id: int
    transport: Transport
    connection_id: int | None
    request_headers: dict[str, str]
    wire_request: dict[str, Any] | None
    logical_request: dict[str, Any] | None = None
    response_id: str | None = None
    response_status: int | None = None
    response_headers: dict[str, str] = field(default_factory=dict)
    events: list[SentEvent] = field(default_factory=list)
    outcome: Outcome | None = None  # None while the exchange is running
    started_at: float = field(default_factory=time.time)
    raw_body: str | None = None  # the body as received, when it was not a JSON object
    replayed: bool = False  # answered from a cassette rather than a script or an upstream
    query: str = ""  # the request's query string, as sent (HTTP)
    response_body: bytes | None = None  # the whole body of an answer that was not a stream
    on_outcome: Callable[[Exchange], None] | None = field(default=None, repr=False, compare=False)
    """Called when the exchange gets its outcome: its capture's listeners (a recording's journal, a log line)."""

    ended_at: float | None = None  # when the outcome was known (epoch seconds, as `started_at`)

    def __setattr__(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)
        if name == "outcome" and value is not None:
            if self.__dict__.get("ended_at") is None:
                object.__setattr__(self, "ended_at", time.time())
            if (hook := self.__dict__.get("on_outcome")) is not None:
                hook(self)

    @property
    def duration(self) -> float | None:
        """Seconds from the request to its outcome; None while it runs."""
        return None if self.ended_at is None else self.ended_at - self.started_at

    @property
    def incremental(self) -> bool:
        return bool(self.wire_request and self.wire_request.get("previous_response_id"))

    @property
    def warmup(self) -> bool:
        return bool(self.wire_request and self.wire_request.get("generate") is False)

    @property
    def client_metadata(self) -> dict[str, Any]:
        """The body's `client_metadata` as the client sent it (empty when there was none)."""
        metadata = (self.wire_request or {}).get("client_metadata")
        return dict(metadata) if isinstance(metadata, dict) else {}

    @property
    def event_types(self) -> list[str]:
        return [str(sent.event.get("type")) for sent in self.events]


@dataclass
class Connection:
    """One WebSocket connection: its handshake and the exchanges it carried."""

    id: int
    handshake_headers: dict[str, str]
    status: int | None = None  # 101, or the refusal status
    response_headers: dict[str, str] = field(default_factory=dict)
    exchanges: list[Exchange] = field(default_factory=list)
    close_code: int | None = None
    closed_by: ClosedBy | None = None
    started_at: float = field(default_factory=time.time)
    query: str = ""  # the upgrade request's query string, as sent
    ended_at: float | None = None  # when the server cut the socket or saw the client leave
    requests: int = 0  # exchanges this socket carried (`exchanges` holds only the kept ones in a bounded window)


_BEGUN: contextvars.ContextVar[list[Exchange] | None] = contextvars.ContextVar("rrkit_begun", default=None)
"""The exchanges begun by the current ASGI call (the tasks it starts share the list), so that an error escaping
the handler is recorded on the exchange that carried it."""


def track_begun() -> list[Exchange]:
    """From now on (in this task and those it starts), remember the exchanges begun; returns their list."""
    begun: list[Exchange] = []
    _BEGUN.set(begun)
    return begun


def begun_here() -> list[Exchange]:
    """The exchanges begun by the current ASGI call (empty when nothing tracks them)."""
    return list(_BEGUN.get() or ())


class Capture:
    """All connections and exchanges of a server, in arrival order: every one (`keep=None`, when recording or
    when a test holds the server and reads them), or only the `keep` most recent ones (`rrkit serve` without
    recording, whose memory then stays bounded however long it runs)."""

    def __init__(self, keep: int | None = None) -> None:
        if keep is not None and keep < 0:
            raise ValueError(f"keep must be a number of exchanges (0 or more), got {keep}")
        self.keep = keep
        self._lock = threading.Lock()
        self._exchanges: deque[Exchange] = deque(maxlen=keep)
        self._connections: deque[Connection] = deque(maxlen=keep)
        self._next_exchange = 0
        self._next_connection = 0
        self.listeners: list[Callable[[Exchange], None]] = []  # called as each exchange gets its outcome

    def new_exchange(
        self,
        transport: Transport,
        headers: dict[str, str],
        wire: dict[str, Any] | None,
        connection: Connection | None = None,
        query: str = "",
    ) -> Exchange:
        with self._lock:
            exchange = Exchange(
                self._next_exchange,
                transport,
                connection.id if connection else None,
                headers,
                wire,
                query=query,
                on_outcome=self._ended,
            )
            self._next_exchange += 1
            self._exchanges.append(exchange)
            if connection is not None:
                connection.requests += 1
                connection.exchanges.append(exchange)
                if self.keep is not None and len(connection.exchanges) > self.keep:
                    del connection.exchanges[0]
        begun = _BEGUN.get()
        if begun is not None:
            begun.append(exchange)
        return exchange

    def _ended(self, exchange: Exchange) -> None:
        for listener in list(self.listeners):
            listener(exchange)

    def new_connection(self, headers: dict[str, str], query: str = "") -> Connection:
        with self._lock:
            connection = Connection(self._next_connection, headers, query=query)
            self._next_connection += 1
            self._connections.append(connection)
            return connection

    @property
    def exchanges(self) -> list[Exchange]:
        with self._lock:
            return list(self._exchanges)

    @property
    def connections(self) -> list[Connection]:
        with self._lock:
            return list(self._connections)

    def settled(self) -> bool:
        """True when every exchange has its outcome (none is still streaming)."""
        with self._lock:
            return all(exchange.outcome is not None for exchange in self._exchanges)

    def wait_settled(self, timeout: float = 5.0) -> bool:
        """Wait (from any thread but the server's) until every exchange has its outcome; False on timeout.

        A client stops reading at `response.completed`, a moment before the server records the outcome.
        """
        deadline = time.monotonic() + timeout
        while not self.settled():
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.002)
        return True

    def clear(self) -> None:
        with self._lock:
            self._exchanges.clear()
            self._connections.clear()
            self._next_exchange = self._next_connection = 0
