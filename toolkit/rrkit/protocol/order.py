"""The event-order checker: which rule of a Responses stream, if any, a sequence of events breaks."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

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


@dataclass(frozen=True, slots=True)
class Violation:
    index: int
    rule: Rule
    detail: str

    def __str__(self) -> str:
        return f"event {self.index}: breaks '{self.rule.value}': {self.detail}"


_ITEM_TYPES_FOR = {
    ev.TEXT_DELTA: "message",
    ev.TEXT_DONE: "message",
    ev.REFUSAL_DELTA: "message",
    ev.REFUSAL_DONE: "message",
    ev.PART_ADDED: "message",
    ev.PART_DONE: "message",
    ev.SUMMARY_PART_ADDED: "reasoning",
    ev.SUMMARY_PART_DONE: "reasoning",
    ev.SUMMARY_TEXT_DELTA: "reasoning",
    ev.SUMMARY_TEXT_DONE: "reasoning",
    ev.REASONING_TEXT_DELTA: "reasoning",
    ev.REASONING_TEXT_DONE: "reasoning",
    ev.ARGUMENTS_DELTA: "function_call",
    ev.ARGUMENTS_DONE: "function_call",
    ev.CUSTOM_INPUT_DELTA: "custom_tool_call",
    ev.CUSTOM_INPUT_DONE: "custom_tool_call",
}
_DONE_OF_DELTA = {
    ev.TEXT_DONE: (ev.TEXT_DELTA, "text"),
    ev.REFUSAL_DONE: (ev.REFUSAL_DELTA, "refusal"),
    ev.SUMMARY_TEXT_DONE: (ev.SUMMARY_TEXT_DELTA, "text"),
    ev.REASONING_TEXT_DONE: (ev.REASONING_TEXT_DELTA, "text"),
    ev.ARGUMENTS_DONE: (ev.ARGUMENTS_DELTA, "arguments"),
    ev.CUSTOM_INPUT_DONE: (ev.CUSTOM_INPUT_DELTA, "input"),
}


def check_order(events: Iterable[dict[str, Any]], *, complete: bool = True) -> list[Violation]:
    """Every rule the stream breaks, in stream order. `complete=False` checks a prefix (no terminal needed)."""
    violations: list[Violation] = []
    items: dict[int, dict[str, Any]] = {}  # output_index -> {"type", "id", "done"}
    parts: set[tuple[int, int]] = set()
    deltas: dict[tuple[str, int, int], list[str]] = {}
    response_id: str | None = None
    terminal_at: int | None = None
    count = 0

    def flag(index: int, rule: Rule, detail: str) -> None:
        violations.append(Violation(index, rule, detail))

    relayed_comments_left_out = (event for event in events if event.get("type") != ev.SSE_COMMENT)
    for index, event in enumerate(relayed_comments_left_out):
        count += 1
        kind = event.get("type")
        sequence = event.get("sequence_number")
        if sequence != index:
            flag(index, Rule.SEQUENCE, f"expected sequence_number {index}, got {sequence!r}")
        if index == 0 and kind != ev.CREATED:
            flag(index, Rule.CREATED_FIRST, f"first event is {kind!r}")
        if terminal_at is not None:
            flag(index, Rule.ONE_TERMINAL, f"{kind!r} after the terminal event at {terminal_at}")
        if kind in ev.ENDING_TYPES:
            terminal_at = index if terminal_at is None else terminal_at
        if kind in ev.LIFECYCLE_TYPES:
            rid = (event.get("response") or {}).get("id")
            if response_id is None:
                response_id = rid
            elif rid != response_id:
                flag(index, Rule.ONE_RESPONSE_ID, f"response.id {rid!r} after {response_id!r}")
            continue
        output_index = event.get("output_index")
        if kind == ev.ITEM_ADDED:
            if output_index != len(items):
                flag(index, Rule.OUTPUT_INDEX, f"item added at output_index {output_index}, expected {len(items)}")
            item = event.get("item") or {}
            items[output_index if isinstance(output_index, int) else len(items)] = {
                "type": item.get("type"),
                "id": item.get("id"),
                "done": False,
            }
            continue
        if not isinstance(output_index, int):
            continue
        state = items.get(output_index)
        if state is None:
            flag(index, Rule.ITEM_ADDED_FIRST, f"{kind} refers to output_index {output_index}, never added")
            continue
        if state["done"]:
            flag(index, Rule.ITEM_OPEN, f"{kind} for output_index {output_index} after its output_item.done")
        if kind == ev.ITEM_DONE:
            state["done"] = True
            continue
        expected_type = _ITEM_TYPES_FOR.get(str(kind))
        if expected_type is not None and state["type"] != expected_type:
            flag(index, Rule.ITEM_TYPE, f"{kind} on a {state['type']!r} item")
        content_index = event.get("content_index", event.get("summary_index", 0))
        if kind == ev.PART_ADDED:
            parts.add((output_index, content_index))
        elif kind in (ev.TEXT_DELTA, ev.REFUSAL_DELTA) and (output_index, content_index) not in parts:
            flag(index, Rule.PART_ADDED_FIRST, f"{kind} at content_index {content_index} before content_part.added")
        if kind in ev.DELTA_TYPES:
            deltas.setdefault((str(kind), output_index, content_index), []).append(str(event.get("delta", "")))
        elif kind in _DONE_OF_DELTA:
            delta_type, field = _DONE_OF_DELTA[str(kind)]
            seen = deltas.pop((delta_type, output_index, content_index), None)
            if seen is not None and "".join(seen) != event.get(field):
                flag(index, Rule.DONE_MATCHES_DELTAS, f"{kind}.{field} differs from the joined deltas")

    if complete and terminal_at is None:
        flag(max(count - 1, 0), Rule.TERMINAL_REQUIRED, "no terminal event")
    return violations
