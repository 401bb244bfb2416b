"""The event-order checker: which rule of a Responses stream (`order_rules`), if any, a sequence of events breaks.
What it knows of each event family is data (`event_families`): a new family is a row, not a branch. Frames that
are no response event (`events.SIDE_CHANNELS`) are left out of every rule, and what a stream says twice must agree
(`consistency`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from . import consistency as cs
from . import events as ev
from .event_families import (
    COUNTED,
    FAMILIES,
    ITEM_BOUND,
    ITEM_TYPE_OF,
    LIFECYCLE,
    NEEDS_PART,
    NOT_ITEM_BOUND,
    PARTS,
    STATUS_FLOWS,
    Family,
    PartFlow,
    StatusFlow,
)
from .order_rules import ANSWER_RULES, HEAD_RULES, ITEM_RULES, Rule
from .resources import ENDED_STATUSES

_FAMILY_OF_DELTA = {family.delta: family for family in FAMILIES}
_FAMILY_OF_DONE = {family.done: family for family in FAMILIES}
_OPENERS = frozenset(family.opened_by for family in FAMILIES if family.opened_by is not None)
_OPENED_BY = {**{f.delta: f.opened_by for f in FAMILIES if f.opened_by is not None}, **NEEDS_PART}
_PART_CLOSING = {flow.closed_by: flow for flow in PARTS}
_PART_OPENING = {flow.opened_by: flow for flow in PARTS}
_FLOW_OF = {kind: flow for flow in STATUS_FLOWS for kind in (flow.opening, *flow.working, *flow.ends)}
TERMINAL_STATUS = {ev.COMPLETED: "completed", ev.FAILED: "failed", ev.INCOMPLETE: "incomplete"}
"""The status each terminal event's response holds."""

_STATUS_FLOW_OF_ITEM = {flow.item_type: flow for flow in STATUS_FLOWS}


# -- the checker ------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Violation:
    """One rule broken, at the event `index` (side-channel frames left out of the count), with what is wrong."""

    index: int
    rule: Rule
    detail: str

    def __str__(self) -> str:
        return f"event {self.index}: breaks '{self.rule.value}': {self.detail}"


class _Given(NamedTuple):
    """What a done event gave, to be found again in its item's output_item.done."""

    family: Family
    part: Any
    value: Any


@dataclass(slots=True)
class _Item:
    type: object  # as the item states it (any JSON value)
    id: object = None
    done: bool = False
    given: list[_Given] = field(default_factory=list)
    status: str | None = None  # the last status event of its flow (`STATUS_FLOWS`), None before the first
    ended: str | None = None  # the end of its status flow, once one came
    counts: dict[str, int] = field(default_factory=dict)  # by event type (`COUNTED`): how many came


@dataclass(slots=True)
class _Part:
    type: object  # the opening event's `part.type`
    done: set[str] = field(default_factory=set)  # the done events of its content seen
    closed: bool = False


class _Check:
    """One stream's check: what it has opened so far and the rules it broke."""

    def __init__(self, *, complete: bool) -> None:
        self.complete = complete
        self.violations: list[Violation] = []
        self.items: dict[int, _Item] = {}  # by output_index
        self.done_items: dict[int, Any] = {}  # the output_item.done items, by output_index
        self.parts: dict[tuple[str, int, Any], _Part] = {}  # by (opening event type, output_index, part index)
        self.deltas: dict[tuple[str, int, Any], list[str]] = {}  # (delta type, output_index, part index): all seen
        self.pending: dict[tuple[str, int, Any], None] = {}  # the keys with deltas since their last done event
        self.response_id: str | None = None
        self.opened = False  # response.created (or the event that came in its place) seen
        self.terminal_at: int | None = None
        self.terminal_kind: object = None
        self.unread = False  # an event that could not be read came: what it carried is unknown
        self.in_progress = False  # response.in_progress seen
        self.output_began = False  # an output item's event seen

    def flag(self, index: int, rule: Rule, detail: str | None) -> None:
        if detail is not None and not (self.unread and rule in ITEM_RULES):
            self.violations.append(Violation(index, rule, detail))

    def event(self, index: int, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == ev.UNPARSABLE:  # it holds its place; its sequence_number and content are unknown
            self.unread = True
            return
        self.stream_rules(index, kind, event)
        self.progress(index, kind)
        _HANDLERS.get(str(kind), _Check.item_event)(self, index, kind, event)

    def progress(self, index: int, kind: object) -> None:
        """response.in_progress comes before the output (a warmup's created + completed has neither)."""
        if kind == ev.IN_PROGRESS:
            if self.output_began:
                self.flag(index, Rule.IN_PROGRESS, "response.in_progress after the output began")
            self.in_progress = True
        elif kind in ITEM_BOUND and not self.output_began:
            self.output_began = True
            if not self.in_progress:
                self.flag(index, Rule.IN_PROGRESS, f"{kind} before response.in_progress")

    def stream_rules(self, index: int, kind: object, event: dict[str, Any]) -> None:
        """The rules every event is held to, whatever its family."""
        sequence = event.get("sequence_number")
        if sequence != index:
            self.flag(index, Rule.SEQUENCE, f"expected sequence_number {index}, got {sequence!r}")
        self.opening(index, kind)
        if self.terminal_at is not None and not self.failure_after_error(index, kind):
            self.flag(index, Rule.ONE_TERMINAL, f"{kind!r} after the terminal event at {self.terminal_at}")
        elif kind in ev.ENDING_TYPES:
            self.terminal_at, self.terminal_kind = index, kind

    def failure_after_error(self, index: int, kind: object) -> bool:
        """An `error` event directly followed by the response.failed it announces: one ending told twice, as some
        gateways end a failed stream (a client stops at either)."""
        after = self.terminal_at is not None and index == self.terminal_at + 1
        return after and self.terminal_kind == ev.ERROR and kind == ev.FAILED

    def opening(self, index: int, kind: object) -> None:
        """response.created opens the stream; only response.queued may come before it."""
        if self.opened or kind == ev.QUEUED:
            return
        self.opened = True
        if kind != ev.CREATED:
            first = "first event" if index == 0 else "first event after response.queued"
            self.flag(index, Rule.CREATED_FIRST, f"{first} is {kind!r}")

    def lifecycle(self, index: int, kind: object, event: dict[str, Any]) -> None:
        response = event.get("response")
        response = response if isinstance(response, dict) else {}
        rid = response.get("id")
        if self.response_id is None:
            self.response_id = rid
        elif rid != self.response_id:
            self.flag(index, Rule.ONE_RESPONSE_ID, f"response.id {rid!r} after {self.response_id!r}")
        if (status := TERMINAL_STATUS.get(str(kind))) is not None:
            self.flag(index, Rule.TERMINAL_STATE, cs.terminal_problem(str(kind), status, response))
        elif (stated := response.get("status")) in ENDED_STATUSES:
            self.flag(index, Rule.OPENING_STATE, f"{kind} with response.status {stated!r}: it has already ended")
        if kind == ev.COMPLETED:
            self.completed(index, response)

    def completed(self, index: int, response: dict[str, Any]) -> None:
        """What response.completed says again: the done items (a complete stream's; a null output the client
        recovers from the done items, as the SDK does) and the usage."""
        output = response.get("output")
        if self.complete and output is not None:
            done = [self.done_items[at] for at in sorted(self.done_items)]
            self.flag(index, Rule.COMPLETED_OUTPUT, cs.output_problem(output, done))
        self.flag(index, Rule.USAGE, cs.usage_problem(response))

    def item_added(self, index: int, kind: object, event: dict[str, Any]) -> None:
        output_index = event.get("output_index")
        if output_index != len(self.items):
            expected = len(self.items)
            self.flag(index, Rule.OUTPUT_INDEX, f"item added at output_index {output_index}, expected {expected}")
        item = event.get("item")
        item = item if isinstance(item, dict) else {}
        self.items[output_index if isinstance(output_index, int) else len(self.items)] = _Item(
            item.get("type"), item.get("id")
        )

    def item_event(self, index: int, kind: object, event: dict[str, Any]) -> None:
        """An event that refers to an output item by its `output_index` (an event that names none is let be)."""
        output_index = event.get("output_index")
        if not isinstance(output_index, int):
            return
        if kind == ev.ITEM_DONE:
            self.done_items[output_index] = event.get("item")  # what a client puts in its history, added or not
        item = self.items.get(output_index)
        if item is None:
            self.flag(index, Rule.ITEM_ADDED_FIRST, f"{kind} refers to output_index {output_index}, never added")
            if (family := _FAMILY_OF_DELTA.get(str(kind))) is not None:
                self.keep_delta(family, event, output_index)  # still a piece of what its done event joins
            elif (family := _FAMILY_OF_DONE.get(str(kind))) is not None:  # what it joins is not judged: the item
                self.pending.pop((family.delta, output_index, cs.part_index(event)), None)  # may predate a resume
            return
        if item.done:
            self.flag(index, Rule.ITEM_OPEN, f"{kind} for output_index {output_index} after its output_item.done")
        self.flag(index, Rule.ITEM_ID, cs.item_id_problem(kind, event, item.id))
        if kind == ev.ITEM_DONE:
            self.item_done(index, event, item)
        else:
            self.content(index, str(kind), event, output_index, item)

    def item_done(self, index: int, event: dict[str, Any], item: _Item) -> None:
        item.done = True
        output_index = event.get("output_index")
        for (opener, at, part), state in self.parts.items():
            flow = _PART_OPENING.get(opener)
            if flow is not None and at == output_index and not state.closed:
                where = f"{flow.index_field} {part}"
                self.flag(
                    index, Rule.PART_CLOSED, f"output_item.done with the part at {where} not closed ({flow.closed_by})"
                )
        for key in [key for key in self.pending if key[1] == output_index]:
            delta = key[0]
            self.flag(
                index, Rule.CONTENT_DONE, f"output_item.done after {delta} without {_FAMILY_OF_DELTA[delta].done}"
            )
            del self.pending[key]
        status_flow = _STATUS_FLOW_OF_ITEM.get(str(item.type))
        if status_flow is not None and item.status is not None and item.ended is None:
            self.flag(index, Rule.STATUS_ORDER, f"output_item.done before {' or '.join(status_flow.ends)}")
        done = event.get("item")
        for given in item.given:
            family = given.family
            path = family.in_item or ()
            problem = cs.repeat_problem(family.done, family.field, path, given.part, given.value, done)
            self.flag(index, Rule.DONE_ITEM_REPEATS, problem)

    def content(self, index: int, kind: str, event: dict[str, Any], output_index: int, item: _Item) -> None:
        expected_type = ITEM_TYPE_OF.get(kind)
        if expected_type is not None and item.type != expected_type:
            self.flag(index, Rule.ITEM_TYPE, f"{kind} on a {item.type!r} item")
        part = cs.part_index(event)
        if kind in _OPENERS:
            opened_part = event.get("part")
            self.parts[(kind, output_index, part)] = _Part(
                opened_part.get("type") if isinstance(opened_part, dict) else None
            )
        opener = _OPENED_BY.get(kind)
        if opener is not None and (opener, output_index, part) not in self.parts:
            opened = opener.removeprefix("response.")
            self.flag(index, Rule.PART_ADDED_FIRST, f"{kind} at {cs.part_named(event)} before {opened}")
        if (family := _FAMILY_OF_DELTA.get(kind)) is not None:
            self.keep_delta(family, event, output_index)
        elif (family := _FAMILY_OF_DONE.get(kind)) is not None:
            self.done_event(index, family, event, output_index, part, item)
            if family.opened_by is not None and (state := self.parts.get((family.opened_by, output_index, part))):
                state.done.add(kind)
        elif (closing := _PART_CLOSING.get(kind)) is not None:
            self.part_closed(index, kind, event, closing, output_index, part)
        if (flow := _FLOW_OF.get(kind)) is not None:
            self.flag(index, Rule.STATUS_ORDER, self.status(kind, flow, item))
        if (counted := COUNTED.get(kind)) is not None:
            expected = item.counts.get(kind, 0)
            item.counts[kind] = expected + 1
            if event.get(counted) != expected:
                self.flag(
                    index, Rule.INDEX_COUNTS, f"{kind} with {counted} {event.get(counted)!r}, expected {expected}"
                )

    def part_closed(
        self, index: int, kind: str, event: dict[str, Any], flow: PartFlow, output_index: int, part: Any
    ) -> None:
        """A part's closing event: after its opening one, once, and after the done event of its content."""
        state = self.parts.get((flow.opened_by, output_index, part))
        where = cs.part_named(event)
        if state is None:
            opened = flow.opened_by.removeprefix("response.")
            self.flag(index, Rule.PART_ADDED_FIRST, f"{kind} at {where} before {opened}")
            return
        if state.closed:
            self.flag(index, Rule.PART_CLOSED, f"{kind} at {where} again")
            return
        state.closed = True
        required = flow.contents.get(str(state.type))
        pending = [
            key
            for key in self.pending
            if key[1:] == (output_index, part) and _FAMILY_OF_DELTA[key[0]].opened_by == flow.opened_by
        ]
        if required is not None and required not in state.done:
            self.flag(index, Rule.CONTENT_DONE, f"{kind} at {where} before {required}")
        elif pending:
            self.flag(index, Rule.CONTENT_DONE, f"{kind} at {where} before {_FAMILY_OF_DELTA[pending[0][0]].done}")
        for key in pending:
            del self.pending[key]

    @staticmethod
    def status(kind: str, flow: StatusFlow, item: _Item) -> str | None:
        """A hosted tool call's status event out of its flow, if it is (the flow moves on either way)."""
        before, ended = item.status, item.ended
        item.status = kind
        if kind in flow.ends:
            item.ended = item.ended or kind
        if ended is not None:
            return f"{kind} after {ended}"
        if kind == flow.opening and before is not None:
            return f"{kind} again, after {before}"
        if kind != flow.opening and before is None:
            return f"{kind} before {flow.opening}"
        return None

    def keep_delta(self, family: Family, event: dict[str, Any], output_index: int) -> None:
        """A piece of what the family's done event (at the same output and part index) must join to."""
        key = (family.delta, output_index, cs.part_index(event))
        self.deltas.setdefault(key, []).append(str(event.get("delta", "")))
        self.pending[key] = None

    def done_event(
        self, index: int, family: Family, event: dict[str, Any], output_index: int, part: Any, item: _Item
    ) -> None:
        """A done event of an item added in this stream is held to every delta of its part before it, none
        included, whatever came between them (the part closed, the item done, the same done event before)."""
        value = event.get(family.field)
        key = (family.delta, output_index, part)
        self.pending.pop(key, None)
        seen = self.deltas.get(key, [])
        if "".join(seen) != value:  # no delta joins to ""
            self.flag(index, Rule.DONE_MATCHES_DELTAS, f"{family.done}.{family.field} differs from the joined deltas")
        if family.in_item is not None:
            item.given.append(_Given(family, part, value))


def _not_item_bound(check: _Check, index: int, kind: object, event: dict[str, Any]) -> None:
    """An event of the response as a whole (audio, the flat error): no item rule applies."""


_Handler = Callable[[_Check, int, object, dict[str, Any]], None]
_HANDLERS: dict[str, _Handler] = {
    **{kind: _Check.lifecycle for kind in LIFECYCLE},
    **{kind: _not_item_bound for kind in NOT_ITEM_BOUND},
    ev.ITEM_ADDED: _Check.item_added,
}
"""How an event is checked beyond the stream-wide rules, by its type (any other: as an output item's event)."""


def check_order(
    events: Iterable[dict[str, Any]], *, complete: bool = True, starting_after: int | None = None
) -> list[Violation]:
    """Every rule the stream breaks, in stream order, side-channel frames left out (`events.SIDE_CHANNELS`).
    `complete=False` checks a prefix (no terminal needed, response.output not held to the done items).
    `starting_after=N`: a resumed stream (`GET /responses/{id}?stream=true&starting_after=N`), held to the rules its
    tail can be (not `HEAD_RULES`) and numbered on from N + 1, with no gap and no repeat."""
    check = _Check(complete=complete)
    index = -1
    response_events = [event for event in events if event.get("type") not in ev.SIDE_CHANNELS]
    for index, event in enumerate(response_events):
        check.event(index, event)
    if complete and check.terminal_at is None:
        check.flag(max(index, 0), Rule.TERMINAL_REQUIRED, "no terminal event")
    if starting_after is None:
        return check.violations
    kept = [violation for violation in check.violations if violation.rule not in HEAD_RULES]
    start = starting_after + 1
    for place, event in enumerate(response_events):
        if event.get("type") == ev.UNPARSABLE:  # it holds its place; its number is unknown
            continue
        number = event.get("sequence_number")
        if number != start + place:
            detail = f"expected sequence_number {start + place} (resumed after {starting_after}), got {number!r}"
            kept.append(Violation(place, Rule.SEQUENCE, detail))
    return sorted(kept, key=lambda violation: violation.index)


def answer_output(events: Iterable[dict[str, Any]]) -> list[Any]:
    """The output a client takes from a stream read to its response.completed: the response's `output`, or, where it
    states none (absent or null), the output_item.done items in output_index order, as the SDK recovers them (and
    `Rule.COMPLETED_OUTPUT` judges only an output stated)."""
    done_items: dict[int, Any] = {}
    for event in events:
        kind, output_index = event.get("type"), event.get("output_index")
        if kind == ev.ITEM_DONE and isinstance(output_index, int):
            done_items[output_index] = event.get("item")
        elif kind == ev.COMPLETED:
            response = event.get("response")
            output = response.get("output") if isinstance(response, dict) else None
            return list(output) if isinstance(output, list) else [done_items[at] for at in sorted(done_items)]
    return []


def answer_breaks(events: Iterable[dict[str, Any]], *, starting_after: int | None = None) -> Violation | None:
    """The first rule of `ANSWER_RULES` a stream read up to its first terminal event breaks (None: none does): what
    makes a stream no answer a client can trust. `starting_after=N`: a resumed stream's tail (see `check_order`)."""
    violations = check_order(events, starting_after=starting_after)
    return next((violation for violation in violations if violation.rule in ANSWER_RULES), None)
