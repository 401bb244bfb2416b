"""What a Responses stream says twice must agree: an event's `item_id` and the item at its output index, a done
item and the done events of its content, `response.completed` and the done items, the usage figures. Each check
is a pure function that returns what disagrees (None: nothing); `order.check_order` names the rule it breaks."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

PART = "#"
"""In a path into a done item (`Family.in_item`): the part index of the event (content, summary or command)."""

PART_INDEX_FIELDS = ("content_index", "summary_index", "command_index")
"""The fields an item's event may name its part by, in the order they are looked for."""

USAGE_COUNTS = ("input_tokens", "output_tokens", "total_tokens")

_MISSING = object()


def part_index(event: Mapping[str, Any]) -> Any:
    """The part of its item an event is about (content, summary or command index; 0 when it names none)."""
    return next((event[field] for field in PART_INDEX_FIELDS if field in event), 0)


def part_named(event: Mapping[str, Any]) -> str:
    """The part an event is about, as its field names it: `content_index 0`, `summary_index 1`, ..."""
    name = next((field for field in PART_INDEX_FIELDS if field in event), PART_INDEX_FIELDS[0])
    return f"{name} {event.get(name, 0)}"


def value_at(item: Any, path: Sequence[str], index: Any) -> Any:
    """The value at `path` in a done item (`PART` standing for `index`); where there is none, a marker that
    equals no JSON value."""
    value = item
    for step in path:
        key: Any = index if step == PART else step
        if isinstance(value, Mapping) and isinstance(key, str):
            value = value.get(key, _MISSING)
        elif isinstance(value, list) and type(key) is int and 0 <= key < len(value):
            value = value[key]
        else:
            return _MISSING
        if value is _MISSING:
            return _MISSING
    return value


def item_id_problem(kind: object, event: Mapping[str, Any], added_id: object) -> str | None:
    """An event naming an item other than the one added at its output index (an item added without an id, or
    an event naming none, is let be); an output_item.done names its item by the item's own id."""
    item = event.get("item")
    named = (item.get("id") if isinstance(item, Mapping) else None) if "item" in event else event.get("item_id")
    if added_id is None or named is None or named == added_id:
        return None
    return f"{kind} names item {named!r}, the item added at output_index {event.get('output_index')} is {added_id!r}"


def repeat_problem(done_type: str, field: str, path: Sequence[str], index: Any, given: Any, item: Any) -> str | None:
    """A done item that does not hold what its done event gave (at `path`, `PART` standing for `index`)."""
    held = value_at(item, path, index)
    if held == given:
        return None
    where = ".".join(str(index) if step == PART else step for step in path)
    shown = "nothing" if held is _MISSING else repr(held)
    return f"item.{where} is {shown}, its {done_type}.{field} gave {given!r}"


def _summary(item: Any) -> tuple[Any, ...]:
    """What an item in `response.output` is compared by: its type and id, and a message's text per part."""
    if not isinstance(item, Mapping):
        return (item,)
    texts: tuple[Any, ...] = ()
    if item.get("type") == "message" and isinstance(item.get("content"), list):
        texts = tuple(
            part.get("text", part.get("refusal")) if isinstance(part, Mapping) else part for part in item["content"]
        )
    return (item.get("type"), item.get("id"), texts)


def output_problem(output: Any, done_items: Sequence[Any]) -> str | None:
    """A `response.completed` whose `response.output` is not the stream's done items, in output_index order."""
    if not isinstance(output, list):
        return f"response.output is {output!r}, not the list of the {len(done_items)} done items"
    if len(output) != len(done_items):
        return f"response.output has {len(output)} items, the stream's output_item.done events {len(done_items)}"
    for index, (listed, done) in enumerate(zip(output, done_items, strict=True)):
        if _summary(listed) != _summary(done):
            return f"response.output[{index}] is {_summary(listed)!r}, its output_item.done {_summary(done)!r}"
    return None


def usage_problem(response: Any) -> str | None:
    """A `response.completed` without integer usage counts whose total is input + output."""
    usage = response.get("usage") if isinstance(response, Mapping) else None
    if not isinstance(usage, Mapping):
        return f"response.usage is {usage!r}"
    for name in USAGE_COUNTS:
        if type(usage.get(name)) is not int:
            return f"usage.{name} is {usage.get(name)!r}, not an integer"
    inputs, outputs, total = (usage[name] for name in USAGE_COUNTS)
    if total != inputs + outputs:
        return f"usage.total_tokens {total} is not input_tokens {inputs} + output_tokens {outputs}"
    return None


def terminal_problem(kind: str, status: str, response: Mapping[str, Any]) -> str | None:
    """A terminal event (`kind`, ending the response as `status`) whose response says otherwise: another status,
    a failure without its error, an incomplete response without its details, or either one where it does not
    belong. A field the response leaves out says nothing, except the error of a failure and the details of an
    incomplete response, which are what a client acts on."""
    stated = response.get("status", status)
    if stated != status:
        return f"{kind} with response.status {stated!r}"
    error, details = response.get("error"), response.get("incomplete_details")
    if status == "failed" and not isinstance(error, Mapping):
        return f"{kind} with response.error {error!r}: nothing says why it failed"
    if status == "incomplete" and not isinstance(details, Mapping):
        return f"{kind} with response.incomplete_details {details!r}: nothing says why it stopped"
    if status != "failed" and error is not None:
        return f"{kind} with response.error {error!r}"
    if status != "incomplete" and details is not None:
        return f"{kind} with response.incomplete_details {details!r}"
    return None
