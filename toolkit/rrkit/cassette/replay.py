"""Replaying a cassette: the fake server answers each request with the recorded events of the matching exchange, on
every route (a create by its request's view, any other route by its method, path, query and body)."""

from __future__ import annotations

import functools
import heapq
import itertools
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..protocol.events import Event
from ..protocol.headers import TURN_STATE_HEADER, replayable_headers
from ..protocol.ids import IdGenerator
from ..protocol.outcome import STATED_KINDS
from ..protocol.plan import ResponsePlan
from ..protocol.request import INPUT_FIELD, input_items, is_warmup
from ..protocol.steer import is_steer, retarget
from ..protocol.vocabulary import CloseKind
from ..script.models import Handshake
from ..script.select import NoMatch, ReplySource, RequestView, _item_text
from .format import Cassette, RecordedConnection, RecordedExchange
from .match import MatchConfig, MatchResult, canonical, compare, digest, shown
from .playback import plan_recording
from .presets import presets_named
from .routematch import RouteRequest, incoming_request, recorded_request


@dataclass
class CassetteSource(ReplySource):
    """A reply source over a cassette: each recorded exchange answers one matching request, the first one not
    played yet in cassette order. With `match.allow_repeats`, once every match has played, the last of them
    (the state the recording ended in) answers again.

    Candidates are looked up by the digest of their request's view under `match`, indexed once; the
    closest-match report of a request that matches nothing is made only when it is reported (`NoMatch.deferred`),
    off the event loop: a miss an upstream answers (record mode `new_episodes`) makes none. A request on any other
    route (`select_route`) is matched by its method, path, query and body (`routematch`), the response ids this
    replay issued read as the recorded ones: repeated identical requests (the polls of a background response)
    get their recorded answers in recorded order.
    """

    answers_every_route = True  # every route's answer is the recorded one: the server keeps no state of its own

    cassette: Cassette
    match: MatchConfig = field(default_factory=MatchConfig)
    time_scale: float = 0.0
    allow_repeats: bool = False  # the same switch as `match.allow_repeats`, kept for existing callers
    ids: IdGenerator = field(default_factory=IdGenerator)

    def __post_init__(self) -> None:
        self._presets_stored = not self.match.presets and bool(self.cassette.match_presets)
        if self._presets_stored:  # what the recording stored, unless told otherwise
            self.match = replace(self.match, presets=tuple(self.cassette.match_presets))
        if self.allow_repeats != self.match.allow_repeats:
            self.match = replace(self.match, allow_repeats=self.allow_repeats or self.match.allow_repeats)
        self.allow_repeats = self.match.allow_repeats
        self._lock = threading.Lock()
        self._handshakes = itertools.count()
        self._renames: dict[tuple[int | None, str], str] = {}
        self._answered: dict[int, int] = {}  # live connection -> the recorded connection its handshake replayed
        self._recorded_ids: dict[tuple[int | None, str], str] = {}  # (connection, id sent) -> recorded id
        self._recorded_of: dict[str, str] = {}  # id sent -> recorded id, whichever connection issued it
        self._sent_of: dict[str, str] = {}  # recorded id -> the id sent for it last
        self._exchanges = [e for e in self.cassette.exchanges if e.wire_request is not None and e.is_create]
        self._steers = [e for e in self.cassette.exchanges if e.transport == "ws" and is_steer(e.raw_body)]
        self._steers_played = 0  # recorded steer answers play in cassette order, whichever response they name
        self._steered = {e.successor_of for e in self.cassette.exchanges if e.successor_of}
        self._connections = {c.id: c for c in self.cassette.connections}
        self._index: dict[bytes, list[int]] = {}
        for position, exchange in enumerate(self._exchanges):
            self._index.setdefault(digest(self.match.view(self._request_of(exchange))), []).append(position)
        self._played: dict[bytes, int] = {}  # per key, how many of its exchanges played: always its first ones
        self._used: set[int] = set()  # positions in `_exchanges`
        self._features: list[tuple[frozenset[int], int]] | None = None
        self._features_lock = threading.Lock()
        self._routes = [e for e in self.cassette.exchanges if not e.is_create]
        self._route_requests = [recorded_request(exchange, self.match) for exchange in self._routes]
        self._route_index: dict[bytes, list[int]] = {}
        for position, request in enumerate(self._route_requests):
            self._route_index.setdefault(request.key(), []).append(position)
        self._route_played: dict[bytes, int] = {}
        self._route_used: set[int] = set()  # positions in `_routes`

    @property
    def matching(self) -> str:
        """How requests are matched, for a headline: `preset codex (stored in the cassette)`, `preset codex
        (given)`; "" with the defaults."""
        presets = [preset.name for preset in presets_named(self.match.presets)]
        if not presets:
            return ""
        said = f"preset{'s' if len(presets) > 1 else ''} {', '.join(presets)}"
        return f"{said} ({'stored in the cassette' if self._presets_stored else 'given'})"

    def for_session(self) -> CassetteSource:
        return replace(self)  # the same cassette and settings, every recording available

    def reset(self) -> None:
        with self._lock:
            self._used.clear()
            self._played.clear()
            self._handshakes = itertools.count()
            self._renames.clear()
            self._answered.clear()
            self._recorded_ids.clear()
            self._recorded_of.clear()
            self._sent_of.clear()
            self._route_played.clear()
            self._route_used.clear()
            self._steers_played = 0

    def _request_of(self, exchange: RecordedExchange) -> Mapping[str, object] | None:
        return exchange.logical_request if self.match.on == "logical" else exchange.wire_request

    async def select(self, request: RequestView) -> ResponsePlan | NoMatch:
        incoming = request.logical if self.match.on == "logical" else request.wire
        key = digest(self.match.view(incoming))
        with self._lock:
            position = self._take(key, self._index, self._played, self._used)
        if position is None:
            return NoMatch.deferred(functools.partial(self._no_match, request, key))
        return self._plan(self._exchanges[position], request)

    def _take(self, key: bytes, index: dict[bytes, list[int]], played: dict[bytes, int], used: set[int]) -> int | None:
        """(Under the lock.) The exchange that answers a request with this key (its first not played yet, in
        recorded order), marked as played."""
        bucket = index.get(key)
        if not bucket:
            return None
        count = played.get(key, 0)
        if count < len(bucket):
            played[key] = count + 1
            used.add(bucket[count])
            return bucket[count]
        return bucket[-1] if self.match.allow_repeats else None

    async def select_route(self, request: RequestView) -> ResponsePlan | NoMatch:
        incoming = incoming_request(request, self.match, self.cassette.redaction, self._recorded_id_of)
        key = incoming.key()
        with self._lock:
            position = self._take(key, self._route_index, self._route_played, self._route_used)
        if position is None:
            return NoMatch.deferred(functools.partial(self._route_no_match, request, incoming, key))
        exchange = self._routes[position]
        plan = plan_recording(exchange, transport="http", time_scale=self.time_scale, rename=self._sent_id_of)
        if plan.body is not None and self._sent_of:  # the ids this replay renamed, wherever the body names them
            content = _ID_WORD.sub(self._renamed_word, plan.body.content)
            plan = replace(plan, body=replace(plan.body, content=content))
        return plan

    def _recorded_id_of(self, sent: str) -> str:
        """The recorded id behind an id this replay sent (any other value as it is)."""
        return self._recorded_of.get(sent, sent)

    def _sent_id_of(self, recorded: str) -> str:
        """The id this replay sent for a recorded one (a recorded id it never renamed, as it is)."""
        return self._sent_of.get(recorded, recorded)

    def _renamed_word(self, match: re.Match[bytes]) -> bytes:
        sent = self._sent_of.get(match.group(0).decode("ascii"))
        return match.group(0) if sent is None else sent.encode()

    def _plan(self, exchange: RecordedExchange, request: RequestView) -> ResponsePlan:
        connection = self._connections.get(exchange.connection) if exchange.connection is not None else None
        by_frame = connection is not None and connection.closed_by == "server" and connection.close_code
        close: CloseKind = "frame" if connection is not None and by_frame else "tcp"
        code = (connection.close_code or 1011) if connection is not None and by_frame else 1011
        connection_id = request.connection_id

        def rename(recorded_id: str) -> str:
            key = (connection_id, recorded_id)
            if key not in self._renames:
                sent = self._renames[key] = self.ids.new("response")
                self._recorded_ids[(connection_id, sent)] = recorded_id
                self._recorded_of[sent], self._sent_of[recorded_id] = recorded_id, sent
            return self._renames[key]

        def renamed(recorded_id: str) -> str:
            return self._renames.get((connection_id, recorded_id)) or self._sent_id_of(recorded_id)

        scale = self.time_scale
        plan = plan_recording(
            exchange,
            transport=request.transport,
            close=close,
            close_code=code,
            time_scale=scale,
            rename=rename,
            renamed=renamed,
            steerable=bool(self._steers),
        )
        if plan.steer is not None and exchange.response_id in self._steered:
            plan.steer.awaited = True  # played at once, it ends before the client steers: its successor waits
        return plan

    async def steer(
        self, frame: Mapping[str, Any], *, connection_id: int | None, ids: IdGenerator
    ) -> list[Event] | None:
        with self._lock:
            if self._steers_played >= len(self._steers):
                return None
            recorded = self._steers[self._steers_played]
            self._steers_played += 1
        return [retarget(entry.event, frame) for entry in recorded.events]

    def _feature_table(self) -> list[tuple[frozenset[int], int]]:
        """Per exchange, its (field, value) hashes and input length: what ranks the closest ones cheaply."""
        with self._features_lock:
            if self._features is None:
                self._features = [_features(self.match.view(self._request_of(e))) for e in self._exchanges]
            return self._features

    def _no_match(self, request: RequestView, key: bytes) -> NoMatch:
        """(When reported, in a worker thread.) The report on a request nothing answers: the closest exchanges
        (those that match but were played, then unplayed ones by how many fields match, then by the nearest input
        length), with a field diff of the closest."""
        with self._lock:
            played = frozenset(self._used)
        same = frozenset(self._index.get(key, ()))
        incoming = request.logical if self.match.on == "logical" else request.wire
        wanted, size = _features(self.match.view(incoming))
        table = self._feature_table()

        def available(position: int) -> bool:
            return self.match.allow_repeats or position not in played

        def rank(position: int) -> tuple[bool, bool, int, int, int]:
            fields, length = table[position]
            score = 3 * len(wanted & fields) - len(wanted) - len(fields)  # passed - failed
            return position in same, available(position), score, -abs(length - size), -position

        closest = [
            (
                f"recorded exchange {self._exchanges[position].id}",
                available(position),
                functools.partial(compare, self._request_of(self._exchanges[position]), incoming, self.match),
            )
            for position in heapq.nlargest(3, range(len(self._exchanges)), key=rank)
        ]
        return _near_miss(request, closest, bool(same))

    def _route_no_match(self, request: RequestView, incoming: RouteRequest, key: bytes) -> NoMatch:
        """(When reported, in a worker thread.) The report on a request on a route nothing answers: the closest
        recorded exchanges on any route but the create (those that match but were played, then those of the same
        route, then by how many of method, path, query and body match)."""
        with self._lock:
            played = frozenset(self._route_used)
        same = frozenset(self._route_index.get(key, ()))
        results = [recorded.compare(incoming, explain=False) for recorded in self._route_requests]

        def available(position: int) -> bool:
            return self.match.allow_repeats or position not in played

        def rank(position: int) -> tuple[bool, bool, bool, int, int]:
            route = self._route_requests[position].route == incoming.route
            return position in same, available(position), route, len(results[position].passed), -position

        def compared(position: int, explain: bool) -> MatchResult:
            return self._route_requests[position].compare(incoming) if explain else results[position]

        closest = [
            (
                f"recorded exchange {self._routes[position].id} ({self._routes[position].request_line}, "
                f"{self._routes[position].route})",
                available(position),
                functools.partial(compared, position),
            )
            for position in heapq.nlargest(3, range(len(self._routes)), key=rank)
        ]
        return _near_miss(request, closest, bool(same))

    async def select_handshake(
        self, headers: Mapping[str, str], *, connection_id: int | None = None, query: str = ""
    ) -> Handshake | None:
        with self._lock:
            index = next(self._handshakes)
        if index >= len(self.cassette.connections):
            return None
        if connection_id is not None:
            self._answered[connection_id] = self.cassette.connections[index].id
        connection = self.cassette.connections[index]
        recorded = connection.handshake
        headers = replayable_headers(recorded.response_headers)
        turn_state = recorded.response_headers.get(TURN_STATE_HEADER)
        if recorded.status is not None and recorded.status != 101:
            turn = {TURN_STATE_HEADER: turn_state} if turn_state else {}
            return Handshake(refuse=recorded.status, refuse_headers={**headers, **turn})
        return Handshake(turn_state=turn_state, headers=headers, **self._closing(connection))

    def _closing(self, connection: RecordedConnection) -> dict[str, Any]:
        """A connection the server closed between requests (after its last one ended) closes the same way, after
        as many requests; a close in the middle of a stream is that exchange's own fault."""
        carried = [e for e in self.cassette.exchanges if e.connection == connection.id]
        last = carried[-1].outcome if carried else None
        if connection.closed_by not in ("server", "tcp") or last is None or last.kind not in STATED_KINDS:
            return {}
        if connection.closed_by == "tcp":
            return {"close_after": len(carried), "close": "tcp"}
        code = connection.close_code if connection.close_code and 1000 <= connection.close_code <= 4999 else 1000
        return {"close_after": len(carried), "close": "frame", "close_code": code}

    def recorded_connection(self, connection_id: int) -> int | None:
        """The recorded connection whose handshake answered the live connection `connection_id`, if one did."""
        return self._answered.get(connection_id)

    def recorded_id(self, connection_id: int | None, sent_id: str) -> str | None:
        """The recorded response id behind `sent_id`, an id this replay issued on that connection."""
        with self._lock:
            return self._recorded_ids.get((connection_id, sent_id))

    def unplayed(self) -> list[str]:
        """The recorded exchanges no request has played, described briefly (id, transport, connection, model,
        last input item)."""
        with self._lock:
            positions = [p for p in range(len(self._exchanges)) if p not in self._used]
            routes = [e for p, e in enumerate(self._routes) if p not in self._route_used]
            steers = self._steers[self._steers_played :]
        left = {id(self._exchanges[p]) for p in positions} | {id(e) for e in routes}
        unplayed = [e for e in self.cassette.exchanges if id(e) in left]  # in cassette order
        return [describe_exchange(e) for e in unplayed] + [describe_exchange(e) for e in steers]

    def unused(self) -> list[str]:
        return self.unplayed()


_ID_WORD = re.compile(rb"(?<![A-Za-z0-9_-])[A-Za-z0-9_-]{3,200}(?![A-Za-z0-9_-])")
"""A word that may be an id (of a response this replay renamed): a JSON string, or in one (`'resp_1' not found`)."""


def _features(view: Mapping[str, Any]) -> tuple[frozenset[int], int]:
    value = view.get(INPUT_FIELD)
    size = len(value) if isinstance(value, list) else int(value is not None)
    return frozenset(hash((name, canonical(item))) for name, item in view.items()), size


def describe_exchange(exchange: RecordedExchange) -> str:
    """`exchange 3 (ws, connection 1, model 'gpt-5', last input: function_call_output "Chunk ID: ...")`; on any
    other route `exchange 4 (http, GET /responses/resp_1, responses.retrieve)`."""
    if not exchange.is_create:
        return f"exchange {exchange.id} ({exchange.transport}, {exchange.request_line}, {exchange.route})"
    request = exchange.logical_request or exchange.wire_request or {}
    items = input_items(dict(request))
    where = (
        exchange.transport if exchange.connection is None else f"{exchange.transport}, connection {exchange.connection}"
    )
    if is_steer(exchange.raw_body):
        return f"exchange {exchange.id} ({where}, a response.steer frame)"
    if is_warmup(exchange.wire_request or {}):
        where += ", warmup"
    if items:
        last = items[-1]
        kind = last.get("type", "message")
        kind = f"{last['role']} {kind}" if kind == "message" and "role" in last else kind
        summary = f"last input: {kind} {shown(_item_text(last), limit=60)}"
    else:
        summary = "no input"
    return f"exchange {exchange.id} ({where}, model {request.get('model')!r}, {summary})"


def _near_miss(
    request: RequestView, closest: Sequence[tuple[str, bool, Callable[..., MatchResult]]], repeated: bool
) -> NoMatch:
    """The report on a request nothing recorded answers: the closest recorded exchanges, best first, each as (where,
    still available, its comparison with `explain`), the first with what each failed matcher saw; `repeated`:
    one that matches was replayed already."""
    lines = []
    for place, (where, available, compared) in enumerate(closest):
        result = compared(explain=place == 0)
        if place == 0:
            state = "" if available else " (already replayed)"
            lines.append(
                f"{where}{state}: matchers passed: {', '.join(result.passed) or 'none'}; "
                f"failed: {', '.join(result.failed) or 'none'}"
            )
            for name in result.failed:
                lines += [f"  {line}" for line in result.diffs.get(name, [])[:8]]
        else:
            lines.append(f"{where}: failed: {', '.join(result.failed) or 'none (used up)'}")
    record = "run with record mode `new_episodes` (or `all`) and an upstream"
    hint = f"To record it, {record}."
    if repeated:
        hint = f"Every recorded exchange that matches it was replayed already: allow repeats, or {record}."
    return NoMatch(request.describe(), lines, what="recorded exchange", hint=hint)
