"""The one event type the client consumes, mapped from SSE data and WebSocket frames alike."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..protocol import events as ev
from ..protocol.request import Item
from .errors import error_event_error, failed_error, incomplete_error


@dataclass(frozen=True, slots=True)
class Created:
    response_id: str


@dataclass(frozen=True, slots=True)
class OutputItemAdded:
    output_index: int
    item: Item


@dataclass(frozen=True, slots=True)
class Delta:
    """A transient piece of an output item: for display only, never history."""

    item_id: str | None
    output_index: int
    delta: str


class TextDelta(Delta):
    """`response.output_text.delta`."""


class RefusalDelta(Delta):
    """`response.refusal.delta`."""


class ReasoningSummaryDelta(Delta):
    """`response.reasoning_summary_text.delta`."""


class ReasoningTextDelta(Delta):
    """`response.reasoning_text.delta`."""


class ToolInputDelta(Delta):
    """`response.function_call_arguments.delta` or `response.custom_tool_call_input.delta`."""


@dataclass(frozen=True, slots=True)
class OutputItemDone:
    """One complete output item: what history records."""

    output_index: int
    item: Item


@dataclass(frozen=True, slots=True)
class Completed:
    """`response.completed`: the only proof of success."""

    response_id: str
    usage: dict[str, Any] | None
    end_turn: bool | None


ResponseEvent = Created | OutputItemAdded | Delta | OutputItemDone | Completed

DELTA_CLASSES: dict[str, type[Delta]] = {
    ev.TEXT_DELTA: TextDelta,
    ev.REFUSAL_DELTA: RefusalDelta,
    ev.SUMMARY_TEXT_DELTA: ReasoningSummaryDelta,
    ev.REASONING_TEXT_DELTA: ReasoningTextDelta,
    ev.ARGUMENTS_DELTA: ToolInputDelta,
    ev.CUSTOM_INPUT_DELTA: ToolInputDelta,
}
assert set(DELTA_CLASSES) == ev.DELTA_TYPES, "every delta type of the protocol maps to a client delta"


def _response(event: Mapping[str, Any]) -> dict[str, Any]:
    response = event.get("response")
    return dict(response) if isinstance(response, Mapping) else {}


def map_event(event: Mapping[str, Any]) -> ResponseEvent | None:
    """Map one decoded wire event; raise the typed error of a failed or incomplete ending.

    Event types the client does not know are ignored (None), as the protocol requires, and so is an `error`
    event without status (Codex 0.169), unless its code asks for a new socket and the full request.
    """
    kind = event.get("type")
    if kind == ev.CREATED:
        return Created(str(_response(event).get("id") or ""))
    if kind == ev.ITEM_ADDED:
        return OutputItemAdded(int(event.get("output_index", 0)), dict(event.get("item") or {}))
    if kind == ev.ITEM_DONE:
        return OutputItemDone(int(event.get("output_index", 0)), dict(event.get("item") or {}))
    delta_class = DELTA_CLASSES.get(str(kind))
    if delta_class is not None:
        item_id = event.get("item_id")
        return delta_class(
            str(item_id) if item_id is not None else None,
            int(event.get("output_index", 0)),
            str(event.get("delta", "")),
        )
    if kind == ev.COMPLETED:
        response = _response(event)
        usage = response.get("usage")
        end_turn = response.get("end_turn")
        return Completed(
            str(response.get("id") or ""),
            dict(usage) if isinstance(usage, Mapping) else None,
            end_turn if isinstance(end_turn, bool) else None,
        )
    if kind == ev.FAILED:
        error = _response(event).get("error") or {}
        raise failed_error(error.get("code"), error.get("message"))
    if kind == ev.INCOMPLETE:
        details = _response(event).get("incomplete_details") or {}
        raise incomplete_error(details.get("reason"))
    if kind == ev.ERROR:
        error = error_event_error(event)  # a flat or status-less error: ignored, bar two codes
        if error is not None:
            raise error
    return None
