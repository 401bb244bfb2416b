"""A scripted stream's events encoded straight into runs (`EncodedRuns`): the runs `events_of` makes of `planned`
events, with no object made per event, and a builder's series of deltas encoded from one template."""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterable, Iterator
from typing import Any

import orjson

from .event_builder import DeltaSeries
from .events import Event
from .plan import RUN_BYTES, RUN_EVENTS, EventRuns
from .sse import sse_head
from .vocabulary import Transport
from .wire_events import EventRun, wire_of


class _SeriesWires:
    """The wire `wire_of` makes of each event of a series, a slice at a time, each joined from the encoding of the
    fields the events share (compact JSON is the same text whether a field is encoded alone or in its object) and
    of its own number and delta. What orjson refuses (an integer beyond 64 bits, a lone surrogate) goes the
    events' own way."""

    def __init__(self, series: DeltaSeries, ws: bool) -> None:
        self.series, self.ws = series, ws
        self._encoded: dict[str, Any] = {}  # each piece's JSON: a stream's pieces repeat (a text cut evenly)
        try:
            where, extra = orjson.dumps(series.where)[1:-1], orjson.dumps(series.extra)[1:-1]
            head = b'{"type":' + orjson.dumps(series.type) + b',"sequence_number":'
        except TypeError:  # orjson.JSONEncodeError
            self._template: tuple[Any, Any, Any] | None = None
            return
        middle = (b"," + where if where else b"") + b',"delta":'
        tail = (b"," + extra if extra else b"") + b"}"
        if ws:  # joined as text: a third cheaper than decoding joined bytes
            self._template = (head.decode(), middle.decode(), tail.decode())
        else:
            self._template = (sse_head(series.type) + head, middle, tail + b"\n\n")

    def __len__(self) -> int:
        return len(self.series.pieces)

    def wires(self, start: int, stop: int) -> list[str | bytes]:
        series = self.series
        try:
            deltas = self._deltas(series.pieces[start:stop])
        except TypeError:
            deltas = None
        if self._template is None or deltas is None:
            return [wire_of(event, self.ws) for event in series.events(start, stop)]
        head, middle, tail = self._template
        numbered = enumerate(deltas, series.first + start)
        if self.ws:
            return [f"{head}{number}{middle}{delta}{tail}" for number, delta in numbered]
        return [b"%b%d%b%b%b" % (head, number, middle, delta, tail) for number, delta in numbered]

    def _deltas(self, pieces: list[str]) -> list[Any]:
        encoded, dump = self._encoded, _text_of if self.ws else orjson.dumps
        return [encoded.get(piece) or encoded.setdefault(piece, dump(piece)) for piece in pieces]


def _text_of(value: str) -> str:
    return orjson.dumps(value).decode()


def series_wires(series: DeltaSeries, ws: bool) -> list[str | bytes]:
    """The wire `wire_of` makes of each event of `series`, made from one template."""
    return _SeriesWires(series, ws).wires(0, len(series.pieces))


class EncodedRuns:
    """The runs of a scripted stream, each event encoded when its run is asked for (`of`); a builder made with
    `take_deltas=runs.take` hands its series of deltas over whole while `of` asks it for the next event, and they
    are encoded in their place, a run's room at a time. The runs are cut where `events_of` cuts them: the first is
    one event, each next at most RUN_EVENTS events or RUN_BYTES of wire."""

    def __init__(self, transport: Transport) -> None:
        self._ws = transport == "ws"
        self._run, self._size, self._limit = EventRun(), 0, 1
        self._full: list[EventRun] = []
        self._taken: list[_SeriesWires] = []

    def take(self, series: DeltaSeries) -> None:
        self._taken.append(_SeriesWires(series, self._ws))

    async def of(self, events: Iterable[Event]) -> EventRuns:
        for event in events:
            for run in self._series_runs():  # handed over while this event was made: they come before it
                yield run
            kind, wire, run = event["type"], wire_of(event, self._ws), self._run
            run.events.append(event)
            run.wires.append(wire)
            run.types.append(kind if isinstance(kind, str) else None)
            self._size += len(wire)
            self._cut_if_full()
            for run in self._full_runs():
                yield run
        for run in self._series_runs():
            yield run
        if self._run.wires:
            yield self._run

    def _series_runs(self) -> Iterator[EventRun]:
        taken, self._taken = self._taken, []
        for series in taken:
            start = 0
            while start < len(series):
                stop = start + self._limit - len(self._run.wires)  # the current run's room
                self._add(series.wires(start, stop), series.series.type)
                start = stop
                yield from self._full_runs()

    def _add(self, wires: list[str | bytes], kind: str) -> None:
        """Wires of one type, in the runs they fall in: up to each run's room, or to the wire that brings it to
        RUN_BYTES."""
        ends = list(itertools.accumulate(map(len, wires)))  # the bytes up to and with each wire
        start, before = 0, 0
        while start < len(wires):
            run = self._run
            at_bytes = bisect.bisect_left(ends, RUN_BYTES - self._size + before, start)
            end = min(start + self._limit - len(run.wires), at_bytes + 1, len(wires))
            run.wires += wires[start:end]
            run.types += [kind] * (end - start)
            run.events += [None] * (end - start)
            self._size += ends[end - 1] - before
            self._cut_if_full()
            start, before = end, ends[end - 1]

    def _cut_if_full(self) -> None:
        if len(self._run.wires) >= self._limit or self._size >= RUN_BYTES:
            self._full.append(self._run)
            self._run, self._size, self._limit = EventRun(), 0, RUN_EVENTS

    def _full_runs(self) -> Iterator[EventRun]:
        full, self._full = self._full, []
        return iter(full)


def encoded_runs(events: Iterable[Event], transport: Transport) -> EventRuns:
    """The runs `events_of` makes of `planned(event, transport)` for each event (none waits)."""
    return EncodedRuns(transport).of(events)
