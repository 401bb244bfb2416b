"""The one event type the client consumes, mapped from SSE data and WebSocket frames alike."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NoReturn

from ..protocol import events as ev
from ..protocol.request import Item
from .errors import error_event_error, failed_error, incomplete_error


@dataclass(frozen=True, slots=True)
class Created:
    response_id: str


@dataclass(frozen=True, slots=True)
class _OutputItem:
    output_index: int
    item: Item


class OutputItemAdded(_OutputItem):
    """`response.output_item.added`: an output item begins."""


class OutputItemDone(_OutputItem):
    """One complete output item: what history records."""


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
class Completed:
    """`response.completed`: the only proof of success."""

    response_id: str
    usage: dict[str, Any] | None
    end_turn: bool | None


@dataclass(frozen=True, slots=True)
class Metadata:
    """A `response.metadata` side-channel frame: the headers it carries (a turn state, say)."""

    headers: Mapping[str, str]


ResponseEvent = Created | OutputItemAdded | Delta | OutputItemDone | Completed | Metadata

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
    mapper = _MAPPERS.get(str(event.get("type")))
    return None if mapper is None else mapper(event)


_Mapper = Callable[[Mapping[str, Any]], ResponseEvent | None]


def _created(event: Mapping[str, Any]) -> Created:
    return Created(str(_response(event).get("id") or ""))


def _output_item(kind: type[OutputItemAdded | OutputItemDone]) -> _Mapper:
    def mapped(event: Mapping[str, Any]) -> OutputItemAdded | OutputItemDone:
        return kind(int(event.get("output_index", 0)), dict(event.get("item") or {}))

    return mapped


def _delta(kind: type[Delta]) -> _Mapper:
    def mapped(event: Mapping[str, Any]) -> Delta:
        item_id = event.get("item_id")
        return kind(
            str(item_id) if item_id is not None else None,
            int(event.get("output_index", 0)),
            str(event.get("delta", "")),
        )

    return mapped


def _completed(event: Mapping[str, Any]) -> Completed:
    response = _response(event)
    usage = response.get("usage")
    end_turn = response.get("end_turn")
    return Completed(
        str(response.get("id") or ""),
        dict(usage) if isinstance(usage, Mapping) else None,
        end_turn if isinstance(end_turn, bool) else None,
    )


def _metadata(event: Mapping[str, Any]) -> Metadata:
    headers = event.get("headers")
    texts = headers.items() if isinstance(headers, Mapping) else ()
    return Metadata({str(name).lower(): value for name, value in texts if isinstance(value, str)})


def _failed(event: Mapping[str, Any]) -> NoReturn:
    error = _response(event).get("error") or {}
    raise failed_error(error.get("code"), error.get("message"))


def _incomplete(event: Mapping[str, Any]) -> NoReturn:
    details = _response(event).get("incomplete_details") or {}
    raise incomplete_error(details.get("reason"))


def _error(event: Mapping[str, Any]) -> None:
    error = error_event_error(event)  # a flat or status-less error: ignored, bar two codes
    if error is not None:
        raise error


_MAPPERS: dict[str, _Mapper] = {
    ev.CREATED: _created,
    ev.ITEM_ADDED: _output_item(OutputItemAdded),
    ev.ITEM_DONE: _output_item(OutputItemDone),
    **{kind: _delta(delta_class) for kind, delta_class in DELTA_CLASSES.items()},
    ev.COMPLETED: _completed,
    ev.FAILED: _failed,
    ev.INCOMPLETE: _incomplete,
    ev.ERROR: _error,
    ev.METADATA: _metadata,  # not `codex.response.metadata`: Codex reads neither that name nor this one over SSE
}
"""How each event type the client reads is mapped (by its `type`)."""
