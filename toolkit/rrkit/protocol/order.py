"""The event-order checker: which rule of a Responses stream, if any, a sequence of events breaks. What it knows
of each event family is data (`FAMILIES`, `ITEM_EVENTS`): a new family is a row, not a branch."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, NamedTuple

from . import events as ev


class Rule(StrEnum):
    SEQUENCE = "sequence_number starts at 0 and increases by 1"
    CREATED_FIRST = "response.created comes first"
    ONE_RESPONSE_ID = "one stable response.id"
    ONE_TERMINAL = "exactly one terminal event, and it is the last"
    TERMINAL_REQUIRED = "the stream ends with response.completed, response.failed or response.incomplete"
    ITEM_ADDED_FIRST = "an output item is added before events that refer to it"
    ITEM_OPEN = "no event for an output item after its output_item.done"
    OUTPUT_INDEX = "output items are added at output_index 0, 1, 2, ..."
    PART_ADDED_FIRST = "a content part is added before its text deltas"
    DONE_MATCHES_DELTAS = "a done event carries the concatenation of its deltas"
    ITEM_TYPE = "a delta event's type fits its item's type"


# -- what the checker knows of each event family ----------------------------------------------------------------


class Family(NamedTuple):
    """The streamed content of one kind of output item: its `delta` events, then a `done` event whose `field`
    repeats the joined deltas; `opened_by`, the event that must open the part (at the same content index) first."""

    item_type: str
    delta: str
    done: str
    field: str
    opened_by: str | None = None


FAMILIES: tuple[Family, ...] = (
    Family("message", ev.TEXT_DELTA, ev.TEXT_DONE, "text", opened_by=ev.PART_ADDED),
    Family("message", ev.REFUSAL_DELTA, ev.REFUSAL_DONE, "refusal", opened_by=ev.PART_ADDED),
    Family("reasoning", ev.SUMMARY_TEXT_DELTA, ev.SUMMARY_TEXT_DONE, "text"),
    Family("reasoning", ev.REASONING_TEXT_DELTA, ev.REASONING_TEXT_DONE, "text"),
    Family("function_call", ev.ARGUMENTS_DELTA, ev.ARGUMENTS_DONE, "arguments"),
    Family("custom_tool_call", ev.CUSTOM_INPUT_DELTA, ev.CUSTOM_INPUT_DONE, "input"),
)
ITEM_EVENTS: dict[str, str] = {
    ev.PART_ADDED: "message",
    ev.PART_DONE: "message",
    ev.SUMMARY_PART_ADDED: "reasoning",
    ev.SUMMARY_PART_DONE: "reasoning",
}
"""The other events that belong to an output item of one type (by event type: the item type)."""

_FAMILY_OF_DELTA = {family.delta: family for family in FAMILIES}
_FAMILY_OF_DONE = {family.done: family for family in FAMILIES}
_ITEM_TYPE_OF = {
    **ITEM_EVENTS,
    **{family.delta: family.item_type for family in FAMILIES},
    **{family.done: family.item_type for family in FAMILIES},
}
_OPENERS = frozenset(family.opened_by for family in FAMILIES if family.opened_by is not None)


# -- the checker ------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Violation:
    """One rule broken, at the event `index` (relayed comments left out of the count), with what is wrong."""

    index: int
    rule: Rule
    detail: str

    def __str__(self) -> str:
        return f"event {self.index}: breaks '{self.rule.value}': {self.detail}"


@dataclass(slots=True)
class _Item:
    type: object  # as the item states it (any JSON value)
    done: bool = False


class _Check:
    """One stream's check: what it has opened so far and the rules it broke."""

    def __init__(self) -> None:
        self.violations: list[Violation] = []
        self.items: dict[int, _Item] = {}  # by output_index
        self.parts: set[tuple[str, int, Any]] = set()  # (opening event type, output_index, content_index)
        self.deltas: dict[tuple[str, int, Any], list[str]] = {}  # (delta type, output_index, content_index)
        self.response_id: str | None = None
        self.terminal_at: int | None = None

    def flag(self, index: int, rule: Rule, detail: str) -> None:
        self.violations.append(Violation(index, rule, detail))

    def event(self, index: int, event: dict[str, Any]) -> None:
        kind = event.get("type")
        self.stream_rules(index, kind, event)
        _HANDLERS.get(str(kind), _Check.item_event)(self, index, kind, event)

    def stream_rules(self, index: int, kind: object, event: dict[str, Any]) -> None:
        """The rules every event is held to, whatever its family."""
        sequence = event.get("sequence_number")
        if sequence != index:
            self.flag(index, Rule.SEQUENCE, f"expected sequence_number {index}, got {sequence!r}")
        if index == 0 and kind != ev.CREATED:
            self.flag(index, Rule.CREATED_FIRST, f"first event is {kind!r}")
        if self.terminal_at is not None:
            self.flag(index, Rule.ONE_TERMINAL, f"{kind!r} after the terminal event at {self.terminal_at}")
        elif kind in ev.ENDING_TYPES:
            self.terminal_at = index

    def lifecycle(self, index: int, kind: object, event: dict[str, Any]) -> None:
        rid = (event.get("response") or {}).get("id")
        if self.response_id is None:
            self.response_id = rid
        elif rid != self.response_id:
            self.flag(index, Rule.ONE_RESPONSE_ID, f"response.id {rid!r} after {self.response_id!r}")

    def item_added(self, index: int, kind: object, event: dict[str, Any]) -> None:
        output_index = event.get("output_index")
        if output_index != len(self.items):
            expected = len(self.items)
            self.flag(index, Rule.OUTPUT_INDEX, f"item added at output_index {output_index}, expected {expected}")
        item = event.get("item") or {}
        self.items[output_index if isinstance(output_index, int) else len(self.items)] = _Item(item.get("type"))

    def item_event(self, index: int, kind: object, event: dict[str, Any]) -> None:
        """An event that refers to an output item by its `output_index` (an event that names none is let be)."""
        output_index = event.get("output_index")
        if not isinstance(output_index, int):
            return
        item = self.items.get(output_index)
        if item is None:
            self.flag(index, Rule.ITEM_ADDED_FIRST, f"{kind} refers to output_index {output_index}, never added")
            return
        if item.done:
            self.flag(index, Rule.ITEM_OPEN, f"{kind} for output_index {output_index} after its output_item.done")
        if kind == ev.ITEM_DONE:
            item.done = True
        else:
            self.content(index, str(kind), event, output_index, item)

    def content(self, index: int, kind: str, event: dict[str, Any], output_index: int, item: _Item) -> None:
        expected_type = _ITEM_TYPE_OF.get(kind)
        if expected_type is not None and item.type != expected_type:
            self.flag(index, Rule.ITEM_TYPE, f"{kind} on a {item.type!r} item")
        content_index = event.get("content_index", event.get("summary_index", 0))
        if kind in _OPENERS:
            self.parts.add((kind, output_index, content_index))
        if (family := _FAMILY_OF_DELTA.get(kind)) is not None:
            self.delta(index, family, event, output_index, content_index)
        elif (family := _FAMILY_OF_DONE.get(kind)) is not None:
            seen = self.deltas.pop((family.delta, output_index, content_index), None)
            if seen is not None and "".join(seen) != event.get(family.field):
                self.flag(index, Rule.DONE_MATCHES_DELTAS, f"{kind}.{family.field} differs from the joined deltas")

    def delta(self, index: int, family: Family, event: dict[str, Any], output_index: int, content_index: Any) -> None:
        opener = family.opened_by
        if opener is not None and (opener, output_index, content_index) not in self.parts:
            opened = opener.removeprefix("response.")
            self.flag(index, Rule.PART_ADDED_FIRST, f"{family.delta} at content_index {content_index} before {opened}")
        self.deltas.setdefault((family.delta, output_index, content_index), []).append(str(event.get("delta", "")))


_Handler = Callable[[_Check, int, object, dict[str, Any]], None]
_HANDLERS: dict[str, _Handler] = {
    **{kind: _Check.lifecycle for kind in ev.LIFECYCLE_TYPES},
    ev.ITEM_ADDED: _Check.item_added,
}
"""How an event is checked beyond the stream-wide rules, by its type (any other: as an output item's event)."""


def check_order(events: Iterable[dict[str, Any]], *, complete: bool = True) -> list[Violation]:
    """Every rule the stream breaks, in stream order. `complete=False` checks a prefix (no terminal needed)."""
    check = _Check()
    index = -1
    relayed_comments_left_out = (event for event in events if event.get("type") != ev.SSE_COMMENT)
    for index, event in enumerate(relayed_comments_left_out):
        check.event(index, event)
    if complete and check.terminal_at is None:
        check.flag(max(index, 0), Rule.TERMINAL_REQUIRED, "no terminal event")
    return check.violations
