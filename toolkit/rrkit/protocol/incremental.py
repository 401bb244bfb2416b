"""Full vs incremental requests (docs/protocol.md: When a request may be incremental) and rebuilding the logical
request from a delta."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .request import COMPARED_FIELDS, IGNORED_FIELDS, INPUT_FIELD, RESPONSE_CREATE, WIRE_ONLY_FIELDS, Item, input_items

_NOT_COMPARED = frozenset((*IGNORED_FIELDS, *WIRE_ONLY_FIELDS, INPUT_FIELD))


@dataclass(frozen=True, slots=True)
class LastResponse:
    """A response that completed on a connection: its id and its `output_item.done` items."""

    response_id: str
    items_added: tuple[Item, ...]


@dataclass(frozen=True, slots=True)
class Incremental:
    previous_response_id: str
    items: list[Item]


@dataclass(frozen=True, slots=True)
class Decision:
    """The outcome of the rule: the delta to send, or None with the reason a full request is needed."""

    incremental: Incremental | None
    reason: str


def strip_internal(item: Item) -> Item:
    """An item without client-internal metadata (keys starting with `_`), which is never model context."""
    return {key: value for key, value in item.items() if not key.startswith("_")}


def changed_properties(previous: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    """Non-input fields that differ. Fields unknown to the model are compared too: that is the safe side."""
    names = [*COMPARED_FIELDS]
    names += sorted((set(previous) | set(current)) - set(COMPARED_FIELDS) - _NOT_COMPARED)
    return [name for name in names if previous.get(name) != current.get(name)]


def decide(
    current: Mapping[str, Any], last_request: Mapping[str, Any] | None, last_response: LastResponse | None
) -> Decision:
    """Pure: may `current` (a full logical request) be sent as `previous_response_id` + input suffix?"""
    if last_request is None:
        return Decision(None, "no previous request on this connection")
    if last_response is None:
        return Decision(None, "the previous request did not complete")
    if not last_response.response_id:
        return Decision(None, "the previous response has no id")
    changed = changed_properties(last_request, current)
    if changed:
        return Decision(None, "changed: " + ", ".join(changed))
    baseline = [*input_items(dict(last_request)), *last_response.items_added]
    items = input_items(dict(current))
    if len(items) < len(baseline):
        return Decision(None, f"input is shorter than the baseline ({len(items)} < {len(baseline)} items)")
    for position, (old, new) in enumerate(zip(baseline, items, strict=False)):
        if strip_internal(old) != strip_internal(new):
            return Decision(None, f"input item {position} differs from the baseline")
    return Decision(Incremental(last_response.response_id, items[len(baseline) :]), "strict prefix")


def logical_from_wire(wire: Mapping[str, Any]) -> dict[str, Any]:
    """The logical request of a full wire request: the body less the fields that steer one wire request."""
    return {key: value for key, value in wire.items() if key not in WIRE_ONLY_FIELDS}


def rebuild_logical(
    wire: Mapping[str, Any], stored_input: Sequence[Item], stored_output: Sequence[Item]
) -> dict[str, Any]:
    """`logical == stored_logical(previous).input + stored_output(previous) + wire.input`."""
    logical = logical_from_wire(wire)
    logical[INPUT_FIELD] = [*stored_input, *stored_output, *input_items(dict(wire))]
    return logical


def response_create(logical: Mapping[str, Any], delta: Incremental | None = None, **extra: Any) -> dict[str, Any]:
    """The WebSocket frame for a logical request: full, or `previous_response_id` + the input suffix."""
    frame: dict[str, Any] = {"type": RESPONSE_CREATE, **logical, **extra}
    if delta is not None:
        frame["previous_response_id"] = delta.previous_response_id
        frame[INPUT_FIELD] = list(delta.items)
    return frame
