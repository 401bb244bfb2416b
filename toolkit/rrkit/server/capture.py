"""What the fake server saw and did: connections and exchanges, readable from any thread while it runs."""

from __future__ import annotations

import array
import contextvars
import itertools
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..protocol.errors import REQUEST_TOO_LARGE
from ..protocol.events import ENDING_TYPES, ITEM_DONE
from ..protocol.exceptions import SettingError
from ..protocol.jsontext import json_size
from ..protocol.made_on_read import MadeOnRead
from ..protocol.outcome import Outcome, OutcomeKind
from ..protocol.request import is_warmup
from ..protocol.routes import CREATE
from ..protocol.vocabulary import ClosedBy, Transport
from ..protocol.wire_events import event_of_wire, type_of_wire


class SentEvent:
    """One event as sent, `at` seconds after its exchange started. One read from a capture is made from the
    event's wire form, parsed only when `event` is read: a replayed event's JSON text is not parsed as it is sent."""

    __slots__ = ("_event", "_wire", "at")

    def __init__(self, at: float, event: dict[str, Any]) -> None:
        self.at = at
        self._event: dict[str, Any] | None = event
        self._wire: str | bytes = b""

    @classmethod
    def of_wire(cls, at: float, wire: str | bytes) -> SentEvent:
        sent = cls(at, {})
        sent._event, sent._wire = None, wire
        return sent

    @property
    def event(self) -> dict[str, Any]:
        if self._event is None:
            self._event = event_of_wire(self._wire)
        return self._event

    @property
    def type(self) -> object:
        """The event's `type`, read off its wire form where it has one (which is not parsed for it)."""
        kind = type_of_wire(self._wire) if self._event is None else None
        return kind if kind is not None else self.event.get("type")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SentEvent) and (self.at, self.event) == (other.at, other.event)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"SentEvent(at={self.at!r}, event={self.event!r})"


class SentEvents(MadeOnRead[SentEvent]):
    """An exchange's events as sent, kept compact: the wire forms each send carried, joined (bytes or text, which
    the garbage collector never walks, and one allocation a send: thousands of small ones, kept while a burst
    comes and goes, would leave the heap in pieces it cannot give back), and for each event its offset, its send
    and where it ends in it, in arrays; a SentEvent (and its wire) is made as one is read."""

    __slots__ = ("_at", "_bytes", "_done", "_ending", "_ends", "_kept", "_sends")

    def __init__(self, events: Iterable[SentEvent] = ()) -> None:
        self._bytes = 0  # `size()`, counted as events are added
        self._at = array.array("d")
        self._kept: list[str | bytes | dict[str, Any]] = []  # each send's wires joined, or an event given whole
        self._ends = array.array("Q")  # where each event's wire ends in its send's
        self._sends = array.array("L")  # each event's send: its place in `_kept` (`len(self)` counts these)
        self._done: list[int] = []  # positions of the output_item.done events (`done_items`)
        self._ending: tuple[int, int | None] = (0, None)  # where `last_ending` is among the first N events
        self.extend(events)

    def sent(self, at: float, wires: Sequence[str | bytes], types: Sequence[object]) -> None:
        """Events the engine sent together, at `at`: their wire forms (all text or all bytes), and their types."""
        if not wires:
            return
        start = len(self._sends)
        joined = wires[0] if len(wires) == 1 else (b"" if isinstance(wires[0], bytes) else "").join(wires)  # type: ignore[arg-type]
        ends = list(itertools.accumulate(map(len, wires)))
        self._at.extend(itertools.repeat(at, len(wires)))  # each before the count: a reader on another thread
        self._kept.append(joined)  # counts the events, and reads those it counts
        self._ends.extend(ends)
        self._sends.extend(itertools.repeat(len(self._kept) - 1, len(wires)))
        self._bytes += ends[-1]
        if ITEM_DONE in types:
            self._done.extend([start + index for index, kind in enumerate(types) if kind == ITEM_DONE])

    def append(self, sent: SentEvent) -> None:
        kept = sent._event if sent._event is not None else sent._wire
        self._at.append(sent.at)
        self._kept.append(kept)
        self._ends.append(len(sent._wire))
        self._sends.append(len(self._kept) - 1)
        self._bytes += len(sent._wire) if sent._event is None else json_size(sent._event)
        if sent.type == ITEM_DONE:
            self._done.append(len(self._sends) - 1)

    def extend(self, events: Iterable[SentEvent]) -> None:
        for sent in events:
            self.append(sent)

    def size(self) -> int:
        """About how many bytes the events take (their wire forms)."""
        return self._bytes

    def last_ending(self) -> SentEvent | None:
        """The last event after which nothing more belongs to the response (a terminal or `error` event), read
        from the end, parsing none of the events after it; found once for the events so far (the engine, the
        store and the journal each ask), its place kept, not the event: made (and parsed, if read) for each."""
        count, found = self._ending
        now = len(self._sends)  # once: another thread may be adding events
        if count != now:
            for index in range(now - 1, count - 1, -1):  # the events since it was last asked
                if self._made_at(index).type in ENDING_TYPES:
                    found = index
                    break
            self._ending = (now, found)
        return self._made_at(found) if found is not None else None

    def done_items(self) -> list[SentEvent]:
        """The `response.output_item.done` events, in order, found by the positions noted as they were sent:
        no other event is made or parsed for it (a stream of 100k deltas states a handful of items)."""
        return [self._made_at(index) for index in self._done]

    def parsed(self, positions: Iterable[int] | None = None) -> Iterator[dict[str, Any]]:
        """The events (those at `positions`, else every one, in order), each parsed from its wire form as it is
        read: no SentEvent is made."""
        kept, ends, sends = self._kept, self._ends, self._sends
        for index in range(len(sends)) if positions is None else positions:  # `_one`, inline: read event by event
            send = sends[index]
            one = kept[send]
            if isinstance(one, dict):
                yield one
                continue
            start = ends[index - 1] if index and sends[index - 1] == send else 0
            yield event_of_wire(one if start == 0 and ends[index] == len(one) else one[start : ends[index]])

    def done_events(self) -> list[dict[str, Any]]:
        """`done_items`, parsed."""
        return list(self.parsed(self._done))

    def timed(self) -> Iterator[tuple[float, dict[str, Any]]]:
        """Each event's offset and the event (parsed from its wire form), in order, made into no SentEvent."""
        return zip(self._at, self.parsed(), strict=False)  # an offset is noted before its event: zip stops at it

    def _one(self, index: int) -> str | bytes | dict[str, Any]:
        """The event at `index` as kept: given whole, or its wire, cut from its send's."""
        send = self._sends[index]
        kept = self._kept[send]
        if isinstance(kept, dict):
            return kept
        start = self._ends[index - 1] if index and self._sends[index - 1] == send else 0
        end = self._ends[index]
        return kept if start == 0 and end == len(kept) else kept[start:end]

    def _made_at(self, index: int) -> SentEvent:
        at, kept = self._at[index], self._one(index)
        return SentEvent(at, kept) if isinstance(kept, dict) else SentEvent.of_wire(at, kept)

    def __len__(self) -> int:
        return len(self._sends)

    def __iter__(self) -> Iterator[SentEvent]:
        return (self._made_at(index) for index in range(len(self._sends)))

    def __repr__(self) -> str:
        return f"SentEvents({list(self)!r})"


class _OnOutcome:
    """Runs when an exchange's `outcome` is set: an outcome given notes when the exchange ended (unless it has that
    already) and calls the exchange's `on_outcome`. A data descriptor without `__get__`: the field is read (and
    every other field set) as a plain attribute, with no call."""

    def __set__(self, exchange: Exchange, outcome: Outcome | None) -> None:
        exchange.__dict__["outcome"] = outcome
        if outcome is not None:
            if exchange.__dict__.get("ended_at") is None:
                exchange.ended_at = time.time()
            if (hook := exchange.__dict__.get("on_outcome")) is not None:
                hook(exchange)


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
    events: SentEvents = field(default_factory=SentEvents)
    outcome: Outcome | None = None  # None while the exchange is running; setting one runs `_OnOutcome`
    started_at: float = field(default_factory=time.time)
    raw_body: str | None = None  # the body as received, when it was not a JSON object
    replayed: bool = False  # answered from a cassette rather than a script or an upstream
    successor_of: str | None = None  # a steered response's automatic successor: no client sent its request
    query: str = ""  # the request's query string, as sent (HTTP)
    response_body: bytes | None = None  # the whole body of an answer that was not a stream
    method: str = "POST"  # the HTTP method (a WebSocket request is a `response.create` frame: POST's route)
    path: str = "/responses"  # the path under the API base (protocol.routes.api_path)
    route: str = CREATE  # the route's name (protocol.routes)
    session: str | None = None  # the session it belongs to (the `x-rrkit-session` header); None: the default one
    on_outcome: Callable[[Exchange], None] | None = field(default=None, repr=False, compare=False)
    """Called when the exchange gets its outcome: its capture's listeners (a recording's journal, a log line)."""

    ended_at: float | None = None  # when the outcome was known (epoch seconds, as `started_at`)
    ending: Outcome | None = None
    """How the server is ending the exchange itself (a cut, a stall), known before it awaits the end: what the
    outcome is if the client's leaving cancels the answer meanwhile (`left`)."""

    def left(self) -> Outcome:
        """The outcome of an exchange whose answer was cancelled because its client left: the server's own ending
        when it had begun one (the client left because the server cut or stalled it), else `disconnected`."""
        return self.ending or Outcome(OutcomeKind.DISCONNECTED, len(self.events))

    @property
    def duration(self) -> float | None:
        """Seconds from the request to its outcome; None while it runs."""
        return None if self.ended_at is None else self.ended_at - self.started_at

    @property
    def incremental(self) -> bool:
        return bool(self.wire_request and self.wire_request.get("previous_response_id"))

    @property
    def warmup(self) -> bool:
        return bool(self.wire_request and is_warmup(self.wire_request))

    @property
    def client_metadata(self) -> dict[str, Any]:
        """The body's `client_metadata` as the client sent it (empty when there was none)."""
        metadata = (self.wire_request or {}).get("client_metadata")
        return dict(metadata) if isinstance(metadata, dict) else {}

    @property
    def event_types(self) -> list[str]:
        return [str(sent.type) for sent in self.events]


# Set once the dataclass has made `__init__`, which takes the field's default (None) from the class.
Exchange.outcome = _OnOutcome()  # type: ignore[assignment]


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


class ExchangeCounts:
    """Exchanges ended since the start (or the last reset), by transport and outcome kind, and those refused for
    a limit; a Capture listener keeps them (`/__rrkit/metrics`)."""

    def __init__(self) -> None:
        self.outcomes: Counter[tuple[str, str]] = Counter()
        self.refused_for_limit: Counter[str] = Counter()

    def __call__(self, exchange: Exchange) -> None:
        outcome = exchange.outcome
        if outcome is None:
            return
        self.outcomes[exchange.transport, outcome.kind.value] += 1
        if outcome.code == REQUEST_TOO_LARGE:
            self.refused_for_limit[outcome.reason or "body"] += 1

    def clear(self) -> None:
        self.outcomes.clear()
        self.refused_for_limit.clear()


def exchange_size(exchange: Exchange) -> int:
    """About how many bytes an ended exchange keeps: its requests (the logical one when it is not the wire one),
    its events, the bodies it kept."""
    size = json_size(exchange.wire_request) + exchange.events.size() + len(exchange.raw_body or "")
    if exchange.logical_request is not None and exchange.logical_request is not exchange.wire_request:
        size += json_size(exchange.logical_request)
    return size + len(exchange.response_body or b"")


def _stalling(exchange: Exchange) -> bool:
    return exchange.ending is not None and exchange.ending.kind is OutcomeKind.STALLED


class Capture:
    """All connections and exchanges of a server, in arrival order: every one (`keep=None`, when recording or
    when a test holds the server and reads them), or only the `keep` most recent ones that fit in `max_bytes`
    (`rrkit serve` without recording, whose memory then stays bounded however long it runs and however large its
    requests)."""

    def __init__(self, keep: int | None = None, max_bytes: int | None = None, session: str | None = None) -> None:
        if keep is not None and keep < 0:
            raise SettingError(f"keep must be a number of exchanges (0 or more), got {keep}")
        self.keep = keep
        self.session = session  # the session whose exchanges these are (None: the default one)
        self.max_bytes = max_bytes if keep is not None else None  # a capture that keeps every one has no budget
        self.kept_bytes = 0  # of the ended exchanges still kept, when there is a budget
        self.evicted = 0  # exchanges dropped for the budget (the oldest first)
        self._sizes: dict[int, int] = {}
        self._lock = threading.Lock()
        self._ending = threading.Condition(self._lock)  # notified as each exchange gets its outcome
        self._exchanges: deque[Exchange] = deque(maxlen=keep)
        self._connections: deque[Connection] = deque(maxlen=keep)
        self._next_exchange = 0
        self._next_connection = 0
        self.answering = 0  # requests and WebSocket connections being answered (the app counts them; any thread reads)
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
                session=self.session,
            )
            self._next_exchange += 1
            if self.keep is not None and len(self._exchanges) >= self.keep > 0:
                self._forget(self._exchanges.popleft())
            self._exchanges.append(exchange)
            if connection is not None:
                connection.requests += 1
                connection.exchanges.append(exchange)
                if self.keep is not None and len(connection.exchanges) > self.keep:
                    del connection.exchanges[0]
        begun = _BEGUN.get()
        if begun is not None:
            # one ASGI call carries a WebSocket connection's every exchange: only the unended ones are kept
            begun[:] = [kept for kept in begun if kept.outcome is None]
            begun.append(exchange)
        return exchange

    def _ended(self, exchange: Exchange) -> None:
        if self.max_bytes is not None:
            size = exchange_size(exchange)
            with self._lock:
                if any(kept is exchange for kept in reversed(self._exchanges)):
                    self._sizes[exchange.id] = size
                    self.kept_bytes += size
                    self._fit()
        for listener in list(self.listeners):
            listener(exchange)
        with self._ending:
            self._ending.notify_all()

    def _fit(self) -> None:
        """Drop the oldest ended exchanges while the kept ones take more than the budget (the newest stays)."""
        assert self.max_bytes is not None
        while self.kept_bytes > self.max_bytes and len(self._exchanges) > 1 and self._exchanges[0].outcome:
            self._forget(self._exchanges.popleft())
            self.evicted += 1

    def _forget(self, exchange: Exchange) -> None:
        self.kept_bytes -= self._sizes.pop(exchange.id, 0)
        connection = next((c for c in self._connections if c.id == exchange.connection_id), None)
        if connection is not None and exchange in connection.exchanges:
            connection.exchanges.remove(exchange)

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
            return self._settled()

    def _settled(self, except_stalls: bool = False) -> bool:
        return all(
            exchange.outcome is not None or (except_stalls and _stalling(exchange)) for exchange in self._exchanges
        )

    def wait_settled(self, timeout: float = 5.0, *, except_stalls: bool = False) -> bool:
        """Wait (from any thread but the server's) until every exchange has its outcome (but those the server is
        stalling on purpose, with `except_stalls`: they end only when their client leaves); False on timeout.

        A client stops reading at `response.completed`, or sees a stream cut, a moment before the server records
        the outcome.
        """
        with self._ending:
            return self._ending.wait_for(lambda: self._settled(except_stalls), timeout)

    def clear(self) -> None:
        with self._lock:
            self._exchanges.clear()
            self._connections.clear()
            self._sizes.clear()
            self.kept_bytes = 0
            self._next_exchange = self._next_connection = 0
