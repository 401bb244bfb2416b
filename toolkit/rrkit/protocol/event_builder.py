"""The plumbing every event builder writes through: one response's ids, sequence numbers, output items and
response object, and how an output item is added, streamed and done."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from .event_names import ITEM_ADDED, ITEM_DONE
from .ids import IdGenerator
from .request import Item
from .response_object import response_object

Event = dict[str, Any]
"""One event (or a frame kept in its place) as its JSON object."""


class DeltaSeries:
    """Delta events that differ only in their sequence number and delta, numbered on from `first`: each is
    `{type, sequence_number, **where, delta, **extra}`, the order `EventBuilder._emit` writes."""

    __slots__ = ("extra", "first", "pieces", "type", "where")

    def __init__(
        self, type_: str, first: int, where: Mapping[str, Any], pieces: list[str], extra: Mapping[str, Any]
    ) -> None:
        self.type, self.first, self.where, self.pieces, self.extra = type_, first, where, pieces, extra

    def events(self, start: int = 0, stop: int | None = None) -> Iterator[Event]:
        """Each event (of those from `start` to `stop`), a copy of one template (most events of a stream are
        deltas: a copy costs a fraction of building the dict)."""
        template: Event = {"type": self.type, "sequence_number": 0, **self.where, "delta": "", **self.extra}
        for number, piece in enumerate(self.pieces[start:stop], self.first + start):
            event = template.copy()
            event["sequence_number"] = number
            event["delta"] = piece
            yield event


DeltasTaker = Callable[[DeltaSeries], None]
"""Takes a builder's series of deltas whole, in place of their events (`EventBuilder(take_deltas=...)`)."""


def _with_status(item: Item, status: str | None) -> Item:
    return {**item, "status": status} if status is not None else {k: v for k, v in item.items() if k != "status"}


class EventBuilder:
    """Numbers the events of one response and keeps its output items: the base `ResponseEvents`
    (rrkit.protocol.events) builds every family of events on."""

    def __init__(
        self,
        request: Mapping[str, Any] | None = None,
        *,
        response_id: str | None = None,
        ids: IdGenerator | None = None,
        created_at: int | None = None,
        model: str | None = None,
        keep_events: bool = True,
        take_deltas: DeltasTaker | None = None,
    ) -> None:
        self.ids = ids or IdGenerator()
        self.request = dict(request or {})
        self.response_id = response_id or self.ids.new("response")
        self.created_at = int(time.time()) if created_at is None else created_at
        self._clock = created_at is None  # a given creation time: the response completes in that same second
        self.model = model or self.request.get("model") or "gpt-rrkit"
        self.sequence_number = 0
        self.output: list[Item] = []
        self.events: list[Event] = []  # every event made, unless `keep_events` is False (events streamed lazily)
        self._keep = keep_events
        self._take_deltas = take_deltas if not keep_events else None

    # -- plumbing ---------------------------------------------------------------------------
    def _emit(self, type_: str, **fields: Any) -> Event:
        event = {"type": type_, "sequence_number": self.sequence_number, **fields}
        self.sequence_number += 1
        if self._keep:
            self.events.append(event)
        return event

    def _deltas(
        self, type_: str, where: Mapping[str, Any], pieces: list[str], extra: Mapping[str, Any]
    ) -> Iterator[Event]:
        """`_emit(type_, **where, delta=piece, **extra)` for each piece; with `take_deltas`, none: the series is
        handed over whole, in their place (the taker holds the stream in order: it is asked for the next event)."""
        series = DeltaSeries(type_, self.sequence_number, where, pieces, extra)
        if self._take_deltas is not None:
            self.sequence_number += len(series.pieces)
            self._take_deltas(series)
            return
        for event in series.events():
            self.sequence_number += 1  # as each is made: a stream left part way numbers on from where it stopped
            if self._keep:
                self.events.append(event)
            yield event

    def response_object(self, status: str, **extra: Any) -> dict[str, Any]:
        """The response as it stands at `status` (`protocol.response_object`): its output once it is not in progress,
        completed at the moment it says so."""
        return response_object(
            self.request,
            response_id=self.response_id,
            created_at=self.created_at,
            model=self.model,
            status=status,
            output=self.output if status != "in_progress" else (),
            completed_at=self._completed_at() if status == "completed" else None,
            **extra,
        )

    def _completed_at(self) -> int:
        return max(self.created_at, int(time.time())) if self._clock else self.created_at

    # -- output items -----------------------------------------------------------------------
    def _add_item(self, item: Item) -> tuple[int, Event]:
        index = len(self.output)
        self.output.append(item)
        added = dict(item, status="in_progress")
        return index, self._emit(ITEM_ADDED, output_index=index, item=added)

    def _done_item(self, index: int, item: Item) -> Event:
        self.output[index] = item
        return self._emit(ITEM_DONE, output_index=index, item=item)

    def _iter_hosted(
        self,
        kind: str,
        fields: Item,
        steps: Iterable[tuple[str, dict[str, Any]]],
        done_fields: Item | None = None,
        *,
        item_id: str | None,
        added_status: str | None = "in_progress",
        done_status: str | None = "completed",
    ) -> Iterator[Event]:
        """A hosted tool's item: added (`added_status`), its own events in order, then done (`done_status`); an
        item type without a status (a compaction) gets neither."""
        item_id = item_id or self.ids.new(kind)
        base: Item = {"id": item_id, "type": kind, **fields}
        index = len(self.output)
        self.output.append(base)
        yield self._emit(ITEM_ADDED, output_index=index, item=_with_status(base, added_status))
        for event_type, extra in steps:
            yield self._emit(event_type, item_id=item_id, output_index=index, **extra)
        yield self._done_item(index, _with_status({**base, **(done_fields or {})}, done_status))
