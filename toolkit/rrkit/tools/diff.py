"""`rrkit diff`: a semantic diff of two cassettes, exchanges aligned in order, volatile values normalized, each
difference named by kind, place and both values (the JSON shape is `DiffReport.to_dict`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import orjson

from ..cassette.format import Cassette, RecordedConnection, RecordedExchange
from ..cassette.match import MatchConfig
from ..protocol.exceptions import SettingError
from ..protocol.jsondiff import MISSING, Change, align, pairs_of
from ..protocol.jsondiff_text import shown
from ..protocol.jsonpath import JsonPath, Place, covered, place_text
from ..protocol.request import INPUT_FIELD
from ..report import Finding
from .diff_exchange import (
    EventStream,
    aligned_exchanges,
    body_value,
    describe_connection,
    describe_exchange,
    event_shown,
    exchange_signature,
    header_map,
    route_request,
    unused_connections,
    wire_form,
)
from .diff_report import DIFF_FORMAT, VIEWS, CassetteSummary, Difference, DiffReport, Kind, Side, View
from .diff_values import Comparer
from .validate import validate_cassette

__all__ = [
    "DIFF_FORMAT",
    "VIEWS",
    "CassetteSummary",
    "DiffReport",
    "Difference",
    "Kind",
    "Side",
    "View",
    "diff_cassettes",
]

WIRE_STEERING = ("previous_response_id", INPUT_FIELD)
ECHOED_PREVIOUS = ("response", "previous_response_id")
"""Where an event's response echoes the previous response its request named."""
"""What a delta and a full request carry differently; the rest of two such wire requests is still compared."""


def diff_cassettes(
    a: Cassette,
    b: Cassette,
    *,
    strict: bool = False,
    ignore: Sequence[str] = (),
    view: View = "both",
    names: tuple[str, str] | None = None,
    presets: Sequence[str] = (),
) -> DiffReport:
    """How B differs from A. Raises ValueError for an invalid ignore path or view.

    Unless `strict`, what changes from run to run is not compared: ids (paired by use), timestamps, token counts,
    `client_metadata`, `prompt_cache_key`, per-run and SDK platform headers, start times and event offsets, SSE
    keep-alive comments, and what the matching `presets` leave out or normalize (a replay's: Codex's working
    directory, its session headers). `ignore` paths are left out: request paths as in matching
    (`input[*].output`), the rest rooted as reported (`events[*].delta`, `outcome.message`,
    `response_headers.retry-after`).
    """
    if view not in VIEWS:
        raise SettingError(f"invalid view {view!r}: it is one of {', '.join(VIEWS)}")
    if presets and not strict:
        through = MatchConfig(ignore=(), item_keys=(), presets=tuple(presets))
        a, b = _through(a, through), _through(b, through)
    ignore = (ignore,) if isinstance(ignore, str) else tuple(ignore)
    paths = tuple(JsonPath.parse(text, "ignore path") for text in ignore)
    name_a, name_b = names or (a.name or "A", b.name or "B")
    differ = _Differ(a, b, Comparer(strict=strict, ignore=paths), view)
    pairs = differ.run()
    return DiffReport(
        CassetteSummary(name_a, len(a.exchanges), a.event_count),
        CassetteSummary(name_b, len(b.exchanges), b.event_count),
        strict,
        tuple(ignore),
        view,
        pairs,
        differ.found,
    )


def _through(cassette: Cassette, config: MatchConfig) -> Cassette:
    """The cassette with each request as matching under `config` sees it, and its headers without those `config`
    leaves out."""

    def seen(exchange: RecordedExchange) -> RecordedExchange:
        requests = {name: getattr(exchange, name) for name in ("logical_request", "wire_request")}
        update: dict[str, Any] = {name: config.view(value) for name, value in requests.items() if value is not None}
        headers = {name: value for name, value in exchange.request_headers.items() if not config.header_ignored(name)}
        return exchange.model_copy(update={**update, "request_headers": headers})

    return cassette.model_copy(update={"exchanges": [seen(exchange) for exchange in cassette.exchanges]})


class _Differ:
    def __init__(self, a: Cassette, b: Cassette, comparer: Comparer, view: View) -> None:
        self.cassettes = (a, b)
        self.comparer = comparer
        self.view = view
        self.found: list[Difference] = []
        self.connections: tuple[dict[int, int], dict[int, int]] = ({}, {})  # A -> B and B -> A connection ids
        self.where: tuple[Side, Side] = (Side(), Side())
        self._incrementality_differs = False  # in the exchange pair being compared

    # -- the whole ---------------------------------------------------------------------------------------------
    def run(self) -> list[tuple[int | None, int | None]]:
        a, b = self.cassettes
        signatures_a = [exchange_signature(exchange, self.comparer, self.view) for exchange in a.exchanges]
        signatures_b = [exchange_signature(exchange, self.comparer, self.view) for exchange in b.exchanges]
        positions = aligned_exchanges(signatures_a, signatures_b)
        findings = (_by_exchange(validate_cassette(a)), _by_exchange(validate_cassette(b)))
        pairs: list[tuple[int | None, int | None]] = []
        for i, j in positions:
            ea = a.exchanges[i] if i is not None else None
            eb = b.exchanges[j] if j is not None else None
            pairs.append((ea.id if ea else None, eb.id if eb else None))
            self.where = (self._side(ea), self._side(eb))
            if ea is not None and eb is not None:
                self._exchange(ea, eb)
            elif ea is not None:
                self._add(Kind.EXCHANGE_MISSING, (), describe_exchange(ea), MISSING, "B has no exchange here")
            elif eb is not None:
                self._add(Kind.EXCHANGE_EXTRA, (), MISSING, describe_exchange(eb), "A has no exchange here")
            for side, exchange in ((0, ea), (1, eb)):
                if exchange is not None:
                    for finding in findings[side].get(exchange.id, []):
                        self._finding(side, finding)
        self._unused_connections()
        return pairs

    @staticmethod
    def _side(exchange: RecordedExchange | None) -> Side:
        return Side(exchange.connection, exchange.id) if exchange is not None else Side()

    # -- adding differences ------------------------------------------------------------------------------------
    def _add(
        self,
        kind: Kind,
        path: Place,
        a: Any,
        b: Any,
        detail: str = "",
        *,
        events: tuple[int | None, int | None] | None = None,
        literal: bool = True,
    ) -> None:
        """A difference at `path`; `a`/`b` are values (MISSING where absent), or display strings when `literal`."""
        if self.comparer.ignore and covered(path, self.comparer.ignore):
            return
        where_a, where_b = self.where
        value_a = None if a is MISSING else (a if literal and isinstance(a, str) else shown(a))
        value_b = None if b is MISSING else (b if literal and isinstance(b, str) else shown(b))
        text_a, text_b = place_text(path, 0), place_text(path, 1)
        side_a = Side(where_a.connection, where_a.exchange, events[0] if events else None, text_a, value_a)
        side_b = Side(where_b.connection, where_b.exchange, events[1] if events else None, text_b, value_b)
        self.found.append(
            Difference(kind, text_a if a is not MISSING or b is MISSING else text_b, side_a, side_b, detail)
        )

    def _changes(
        self, kind: Kind, changes: Iterable[Change], *, events: tuple[int | None, int | None] | None = None
    ) -> int:
        count = 0
        for change in changes:
            self._add(kind, change.path, change.a, change.b, change.note, events=events, literal=False)
            count += 1
        return count

    def _finding(self, side: int, finding: Finding) -> None:
        place = finding.place
        path = f"events[{place.event}]" if place.event is not None else ""
        mine = Side(place.connection, place.exchange, place.event, path, finding.reason)
        other = replace(self.where[1 - side], path=path)
        a, b = (mine, other) if side == 0 else (other, mine)
        self.found.append(Difference(Kind.PROTOCOL, path, a, b, finding.evidence, finding.rule))

    # -- one exchange pair -------------------------------------------------------------------------------------
    def _exchange(self, ea: RecordedExchange, eb: RecordedExchange) -> None:
        compare = self.comparer.changes
        if ea.transport != eb.transport:
            self._add(Kind.CONNECTION, ("transport",), ea.transport, eb.transport, "another transport")
        elif ea.connection is not None and eb.connection is not None:
            self._connection_pair(ea.connection, eb.connection)
        routes = not (ea.is_create and eb.is_create)
        if routes:  # what was asked: in every view
            route_a, route_b = route_request(ea), route_request(eb)
            for name in ("method", "route", "path"):
                self._changes(Kind.ROUTE, compare(route_a[name], route_b[name], (name,)))
        self._requests(ea, eb)
        if self.view != "logical" or routes:
            self._changes(Kind.WIRE, compare(ea.query, eb.query, ("query",)))
            self._changes(Kind.WIRE, compare(ea.raw_body, eb.raw_body, ("raw_body",)))
        strict = self.comparer.strict
        headers = (header_map(ea.request_headers, strict), header_map(eb.request_headers, strict))
        self._changes(Kind.HEADERS, compare(*headers, ("request_headers",)))
        self._changes(Kind.STATUS, compare(ea.response_status, eb.response_status, ("response_status",)))
        headers = (header_map(ea.response_headers, strict), header_map(eb.response_headers, strict))
        self._changes(Kind.HEADERS, compare(*headers, ("response_headers",)))
        stream_a, stream_b = EventStream(ea, strict), EventStream(eb, strict)
        self._incrementality_differs = ea.incremental != eb.incremental
        self._events(stream_a, stream_b)
        self._changes(
            Kind.BODY, compare(body_value(ea.response_body), body_value(eb.response_body), ("response_body",))
        )
        self._changes(Kind.OUTCOME, compare(ea.response_id, eb.response_id, ("response_id",)))
        self._outcome(ea, eb, same_count=len(stream_a.raws) == len(stream_b.raws))
        if strict:
            self._timing(ea, eb, stream_a, stream_b)

    def _requests(self, ea: RecordedExchange, eb: RecordedExchange) -> None:
        compare = self.comparer.changes
        if not (ea.is_create and eb.is_create):  # no logical request: the body as sent, in every view
            self._changes(Kind.WIRE, compare(ea.wire_request, eb.wire_request))
            return
        content = 0
        if self.view != "wire":
            content = self._changes(Kind.CONTENT, compare(ea.logical_request, eb.logical_request))
            if self.view == "logical":
                return
        if ea.incremental != eb.incremental:
            if ea.incremental:
                detail = "B sends the full request where A sent a delta (previous_response_id + new input)"
            else:
                detail = "B sends a delta (previous_response_id + new input) where A sent the full request"
            if content:
                detail += "; their logical requests differ too"
            self._add(Kind.INCREMENTALITY, ("previous_response_id",), wire_form(ea), wire_form(eb), detail)
            if content == 0:
                rest = [_without(request, WIRE_STEERING) for request in (ea.wire_request, eb.wire_request)]
                self._changes(Kind.WIRE, compare(rest[0], rest[1]))
        elif content == 0:
            self._changes(Kind.WIRE, compare(ea.wire_request, eb.wire_request))

    def _outcome(self, ea: RecordedExchange, eb: RecordedExchange, *, same_count: bool) -> None:
        outcome_a = ea.outcome.to_dict() if ea.outcome is not None else None
        outcome_b = eb.outcome.to_dict() if eb.outcome is not None else None
        if not same_count and outcome_a is not None and outcome_b is not None:
            # the events' difference already says it; what the count means (dropped after N) stays compared
            outcome_a.pop("events_sent")
            outcome_b.pop("events_sent")
        self._changes(Kind.OUTCOME, self.comparer.changes(outcome_a, outcome_b, ("outcome",)))

    # -- events ------------------------------------------------------------------------------------------------
    def _events(self, a: EventStream, b: EventStream) -> None:
        positions = self._event_positions(a, b)
        shifted = len(a.types) != len(b.types) or any(i is None or j is None for i, j in positions)
        for i, j in positions:
            if i is not None and j is not None:
                self._event_pair(a, b, i, j, shifted=shifted)
            elif i is not None:
                index = a.indices[i]
                shown_a = event_shown(a.raws[i])
                self._add(Kind.EVENTS, ("events", index), shown_a, MISSING, "B does not send it", events=(index, None))
            elif j is not None:
                index = b.indices[j]
                shown_b = event_shown(b.raws[j])
                self._add(Kind.EVENTS, ("events", index), MISSING, shown_b, "A does not send it", events=(None, index))

    def _event_pair(self, a: EventStream, b: EventStream, i: int, j: int, *, shifted: bool) -> None:
        """Two aligned events: of another type, or their fields compared (`shifted`: an event is missing or extra
        somewhere in the exchange)."""
        at = (a.indices[i], b.indices[j])
        step = ("events", at[0] if at[0] == at[1] else at)
        if a.types[i] != b.types[j]:
            self._add(Kind.EVENTS, step, a.types[i], b.types[j], "an event of another type", events=at)
            return
        if self.comparer.same_text(a.raws[i], b.raws[j]):
            return
        # the same but for sequence_number (see below) or a volatile value: only the ids to pair
        if shifted and a.said and a.said[i] == b.said[j] and self.comparer.same_ids(a.raws[i], b.raws[j]):
            return
        changes = self.comparer.changes(orjson.loads(a.raws[i]), orjson.loads(b.raws[j]), step)
        if shifted and not self.comparer.strict:
            # with an event missing or extra, every later sequence_number is off by as much: validation
            # checks each side's numbering, the diff does not repeat it per event
            changes = [change for change in changes if change.path[2:] != ("sequence_number",)]
        if self._incrementality_differs:  # the response echoes what the request's incrementality difference says
            changes = [change for change in changes if change.path[2:] != ECHOED_PREVIOUS]
        self._changes(Kind.EVENT_FIELD, changes, events=at)

    def _event_positions(self, a: EventStream, b: EventStream) -> list[tuple[int | None, int | None]]:
        """Events aligned: one to one when both sent the same types; else on what each event says (so the
        missing one of three deltas is the one missing), stretches that differ aligned again on their types."""
        if a.types == b.types:
            return list(zip(range(len(a.types)), range(len(b.types)), strict=True))
        signature = self.comparer.signature_of_text
        a.said, b.said = [signature(raw) for raw in a.raws], [signature(raw) for raw in b.raws]
        positions: list[tuple[int | None, int | None]] = []
        for code in align(a.said, b.said):
            tag, i1, i2, j1, j2 = code
            if tag != "replace":
                positions += pairs_of([code])
                continue
            by_type = align(a.types[i1:i2], b.types[j1:j2])
            positions += [(None if i is None else i + i1, None if j is None else j + j1) for i, j in pairs_of(by_type)]
        return positions

    def _timing(self, ea: RecordedExchange, eb: RecordedExchange, a: EventStream, b: EventStream) -> None:
        if ea.started_at != eb.started_at:
            self._add(Kind.TIMING, ("started_at",), ea.started_at, eb.started_at, "another start time", literal=False)
        late = [(i, j) for i, j in self._event_positions(a, b) if i is not None and j is not None]
        late = [(i, j) for i, j in late if a.ats[i] != b.ats[j]]
        if late:
            i, j = late[0]
            at = (a.indices[i], b.indices[j])
            step = ("events", at[0] if at[0] == at[1] else at, "at")
            detail = f"{len(late)} of {min(len(a.ats), len(b.ats))} events at other offsets; the first shown"
            self._add(Kind.TIMING, step, a.ats[i], b.ats[j], detail, events=at, literal=False)

    # -- connections -------------------------------------------------------------------------------------------
    def _connection_pair(self, ca: int, cb: int) -> None:
        a_to_b, b_to_a = self.connections
        if a_to_b.get(ca, cb) != cb or b_to_a.get(cb, ca) != ca:
            detail = "the exchanges are spread over connections differently"
            if ca in a_to_b:
                detail += f": A's connection {ca} is B's connection {a_to_b[ca]}"
            elif cb in b_to_a:
                detail += f": B's connection {cb} is A's connection {b_to_a[cb]}"
            self._add(Kind.CONNECTION, ("connection",), ca, cb, detail, literal=False)
            return
        if ca in a_to_b:
            return
        a_to_b[ca], b_to_a[cb] = cb, ca
        first, second = self.cassettes[0].connection(ca), self.cassettes[1].connection(cb)
        if first is not None and second is not None:
            self._compare_connections(first, second)

    def _compare_connections(self, first: RecordedConnection, second: RecordedConnection) -> None:
        strict = self.comparer.strict

        def view(connection: RecordedConnection) -> dict[str, Any]:
            handshake = connection.handshake
            return {
                "handshake": {
                    "query": handshake.query,
                    "request_headers": header_map(handshake.request_headers, strict),
                    "status": handshake.status,
                    "response_headers": header_map(handshake.response_headers, strict),
                },
                "closed_by": connection.closed_by,
                "close_code": connection.close_code,
            }

        saved = self.where
        self.where = (Side(first.id, saved[0].exchange), Side(second.id, saved[1].exchange))
        self._changes(Kind.CONNECTION, self.comparer.changes(view(first), view(second), ("connection",)))
        self.where = saved

    def _unused_connections(self) -> None:
        """Connections no exchange used (a refused upgrade, say), aligned in order by how they went."""
        left = [unused_connections(cassette) for cassette in self.cassettes]
        signatures = [[(c.handshake.status, c.closed_by, c.close_code) for c in connections] for connections in left]
        for i, j in pairs_of(align(*signatures)):
            first = left[0][i] if i is not None else None
            second = left[1][j] if j is not None else None
            self.where = (Side(first.id if first else None), Side(second.id if second else None))
            if first is not None and second is not None:
                self._compare_connections(first, second)
            elif first is not None:
                self._add(Kind.CONNECTION, ("connection",), describe_connection(first), MISSING, "B has no such one")
            elif second is not None:
                self._add(Kind.CONNECTION, ("connection",), MISSING, describe_connection(second), "A has no such one")


def _without(request: Mapping[str, Any] | None, names: Sequence[str]) -> dict[str, Any] | None:
    return None if request is None else {key: value for key, value in request.items() if key not in names}


def _by_exchange(findings: Sequence[Finding]) -> dict[int, list[Finding]]:
    grouped: dict[int, list[Finding]] = {}
    for finding in findings:
        grouped.setdefault(finding.place.exchange or 0, []).append(finding)
    return grouped
