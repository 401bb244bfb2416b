"""The events of a Responses stream: `ResponseEvents`, which builds them with ids and `sequence_number` kept
right, and what a stream's events say (its items, its response id, its end). Every type name is here too, from
`event_names`, read as `events.NAME`."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Concatenate, ParamSpec

from . import event_names
from .chunks import split_chunks
from .errors import failure_message
from .event_builder import Event
from .event_names import *  # noqa: F403  (the type names, read as `events.NAME`)
from .event_names import (
    ANNOTATION_ADDED,
    AUDIO_DELTA,
    AUDIO_DONE,
    AUDIO_TRANSCRIPT_DELTA,
    AUDIO_TRANSCRIPT_DONE,
    COMPACTING,
    COMPLETED,
    CREATED,
    ENDING_TYPES,
    ERROR,
    FAILED,
    IN_PROGRESS,
    INCOMPLETE,
    ITEM_DONE,
    PART_ADDED,
    PART_DONE,
    QUEUED,
    REASONING_TEXT_DELTA,
    REASONING_TEXT_DONE,
    REFUSAL_DELTA,
    REFUSAL_DONE,
    SUMMARY_PART_ADDED,
    SUMMARY_PART_DONE,
    SUMMARY_TEXT_DELTA,
    SUMMARY_TEXT_DONE,
    TEXT_DELTA,
    TEXT_DONE,
)
from .request import Item
from .token_usage import estimate_tokens, usage
from .tool_call_events import ToolCallEvents

__all__ = [
    "Event",
    "ResponseEvents",
    "done_items",
    "estimate_tokens",
    "response_id_of",
    "split_chunks",
    "terminal_event",
    "usage",
]
__all__ += event_names.__all__

_P = ParamSpec("_P")


def _all_at_once(
    one_at_a_time: Callable[Concatenate[ResponseEvents, _P], Iterator[Event]],
) -> Callable[Concatenate[ResponseEvents, _P], list[Event]]:
    """A builder method that returns every event of an output item at once, from the one that makes them lazily."""

    def all_at_once(self: ResponseEvents, /, *args: _P.args, **kwargs: _P.kwargs) -> list[Event]:
        return list(one_at_a_time(self, *args, **kwargs))

    all_at_once.__doc__ = f"The events of `{one_at_a_time.__name__}`, all at once."
    return all_at_once


class ResponseEvents(ToolCallEvents):
    """Builds the events of one response in order: every call returns the events it adds.

    `request` is the logical request being answered; the response object echoes its
    `model`, `instructions`, `tools`, `tool_choice` and `parallel_tool_calls` as the real service does.
    """

    # -- lifecycle --------------------------------------------------------------------------
    def start(self) -> list[Event]:
        """`response.created` then `response.in_progress`."""
        return [
            self._emit(CREATED, response=(begun := self.response_object("in_progress"))),
            self._emit(IN_PROGRESS, response=dict(begun)),
        ]

    def created(self) -> list[Event]:
        return [self._emit(CREATED, response=self.response_object("in_progress"))]

    def queued(self) -> list[Event]:
        """`response.queued`: the response waits for capacity (before `response.created`)."""
        return [self._emit(QUEUED, response=self.response_object("queued"))]

    def default_usage(self) -> dict[str, Any]:
        return usage(estimate_tokens(self.request.get("input")), estimate_tokens(self.output))

    def completed(self, usage_: Mapping[str, Any] | None = None, *, end_turn: bool | None = None) -> list[Event]:
        extra: dict[str, Any] = {"usage": dict(usage_) if usage_ is not None else self.default_usage()}
        if end_turn is not None:
            extra["end_turn"] = end_turn
        return [self._emit(COMPLETED, response=self.response_object("completed", **extra))]

    def failed(
        self, code: str | None, message: str | None = None, *, param: str | None = None, type: str | None = None
    ) -> list[Event]:
        """`response.failed`; without a message, the error catalogue's message for the code; `param` and `type`
        in its error when given."""
        error = {"code": code, "message": message or failure_message(code)}
        error |= {name: value for name, value in (("param", param), ("type", type)) if value is not None}
        return [self._emit(FAILED, response=self.response_object("failed", error=error, usage=self.default_usage()))]

    def incomplete(self, reason: str) -> list[Event]:
        stated = {"incomplete_details": {"reason": reason}, "usage": self.default_usage()}
        return [self._emit(INCOMPLETE, response=self.response_object("incomplete", **stated))]

    def error(self, message: str, code: str | None = None, param: str | None = None) -> list[Event]:
        """The flat SSE `error` event."""
        return [self._emit(ERROR, message=message, code=code, param=param)]

    # -- output items, one event at a time (the events are made as they are asked for) --------------
    def iter_message(
        self,
        text: str,
        chunks: int = 1,
        *,
        item_id: str | None = None,
        phase: str | None = None,
        annotations: Iterable[Mapping[str, Any]] = (),
    ) -> Iterator[Event]:
        """An assistant message: added, part added, `chunks` text deltas, an `annotation.added` event per
        annotation (a url_citation, file_citation, ...), text done, part done, item done."""
        return self._iter_content_message(
            "output_text", text, chunks, item_id=item_id, phase=phase, annotations=[dict(a) for a in annotations]
        )

    def iter_refusal(self, text: str, chunks: int = 1, *, item_id: str | None = None) -> Iterator[Event]:
        return self._iter_content_message("refusal", text, chunks, item_id=item_id)

    def _iter_content_message(
        self,
        part_type: str,
        text: str,
        chunks: int,
        *,
        item_id: str | None,
        phase: str | None = None,
        annotations: list[dict[str, Any]] | None = None,
    ) -> Iterator[Event]:
        item_id = item_id or self.ids.new("message")
        base: Item = {"id": item_id, "type": "message", "role": "assistant", "status": "in_progress", "content": []}
        if phase is not None:
            base["phase"] = phase
        index, added = self._add_item(base)
        yield added
        if part_type == "output_text":
            empty: dict[str, Any] = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
            full = {"type": "output_text", "text": text, "annotations": annotations or [], "logprobs": []}
            delta_type, done_type, done_key = TEXT_DELTA, TEXT_DONE, "text"
            extra: dict[str, Any] = {"logprobs": []}
        else:
            empty = {"type": "refusal", "refusal": ""}
            full = {"type": "refusal", "refusal": text}
            delta_type, done_type, done_key = REFUSAL_DELTA, REFUSAL_DONE, "refusal"
            extra = {}
        where = {"item_id": item_id, "output_index": index, "content_index": 0}
        yield self._emit(PART_ADDED, **where, part=empty)
        yield from self._deltas(delta_type, where, split_chunks(text, chunks), extra)
        for number, annotation in enumerate(annotations or []):
            yield self._emit(ANNOTATION_ADDED, **where, annotation_index=number, annotation=annotation)
        yield self._emit(done_type, **where, **{done_key: text}, **extra)
        yield self._emit(PART_DONE, **where, part=full)
        yield self._done_item(index, dict(base, status="completed", content=[full]))

    def iter_reasoning(
        self,
        summary: list[str] | None = None,
        chunks: int = 1,
        *,
        text: str | None = None,
        encrypted_content: str | None = None,
        item_id: str | None = None,
    ) -> Iterator[Event]:
        """A reasoning item: summary parts with their text deltas, then optional raw reasoning text."""
        item_id = item_id or self.ids.new("reasoning")
        base: Item = {"id": item_id, "type": "reasoning", "summary": []}
        if encrypted_content is not None:
            base["encrypted_content"] = encrypted_content
        index, added = self._add_item(base)
        yield added
        where = {"item_id": item_id, "output_index": index}
        parts: list[dict[str, Any]] = []
        for summary_index, part_text in enumerate(summary or []):
            yield self._emit(
                SUMMARY_PART_ADDED, **where, summary_index=summary_index, part={"type": "summary_text", "text": ""}
            )
            part_where = {**where, "summary_index": summary_index}
            yield from self._deltas(SUMMARY_TEXT_DELTA, part_where, split_chunks(part_text, chunks), {})
            yield self._emit(SUMMARY_TEXT_DONE, **where, summary_index=summary_index, text=part_text)
            part = {"type": "summary_text", "text": part_text}
            yield self._emit(SUMMARY_PART_DONE, **where, summary_index=summary_index, part=part)
            parts.append(part)
        done: Item = dict(base, summary=parts)
        if text is not None:
            yield from self._deltas(REASONING_TEXT_DELTA, {**where, "content_index": 0}, split_chunks(text, chunks), {})
            yield self._emit(REASONING_TEXT_DONE, **where, content_index=0, text=text)
            done["content"] = [{"type": "reasoning_text", "text": text}]
        yield self._done_item(index, done)

    def iter_compaction(self, encrypted_content: str, *, item_id: str | None = None) -> Iterator[Event]:
        """The service's compaction of the conversation: added, compacting, item done with the opaque
        `encrypted_content` a client sends back in place of what it replaced."""
        fields: Item = {"encrypted_content": encrypted_content}
        steps: list[tuple[str, dict[str, Any]]] = [(COMPACTING, {})]  # nothing but its place (item, output index)
        return self._iter_hosted("compaction", fields, steps, item_id=item_id, added_status=None, done_status=None)

    def iter_item(
        self,
        kind: str,
        fields: Item,
        *,
        added_status: str | None = "in_progress",
        item_id: str | None = None,
    ) -> Iterator[Event]:
        """An item that streams nothing of its own, added and done whole (a call for the client to run, a tool's
        output): the done item holds `fields` as given (their `status`, if any); the added one `added_status` (None:
        the done one, where the item type knows no `in_progress`)."""
        done_status = fields.get("status")
        added = (added_status or done_status) if done_status is not None else None
        return self._iter_hosted(kind, fields, (), item_id=item_id, added_status=added, done_status=done_status)

    def iter_audio(self, transcript: str, *audio: str, chunks: int = 1) -> Iterator[Event]:
        """Spoken output, which belongs to no output item: its transcript in `chunks` deltas, transcript done, one
        `audio.delta` per piece of audio (base64), audio done."""
        owner = {"response_id": self.response_id}
        yield from self._deltas(AUDIO_TRANSCRIPT_DELTA, owner, split_chunks(transcript, chunks), {})
        yield self._emit(AUDIO_TRANSCRIPT_DONE, **owner)
        for piece in audio:
            yield self._emit(AUDIO_DELTA, **owner, delta=piece)
        yield self._emit(AUDIO_DONE, **owner)

    # -- output items, made all at once (the same arguments) -------------------------------------------------
    message = _all_at_once(iter_message)
    refusal = _all_at_once(iter_refusal)
    reasoning = _all_at_once(iter_reasoning)
    function_call = _all_at_once(ToolCallEvents.iter_function_call)
    custom_tool_call = _all_at_once(ToolCallEvents.iter_custom_tool_call)
    web_search_call = _all_at_once(ToolCallEvents.iter_web_search_call)
    file_search_call = _all_at_once(ToolCallEvents.iter_file_search_call)
    image_generation_call = _all_at_once(ToolCallEvents.iter_image_generation_call)
    code_interpreter_call = _all_at_once(ToolCallEvents.iter_code_interpreter_call)
    mcp_call = _all_at_once(ToolCallEvents.iter_mcp_call)
    mcp_list_tools = _all_at_once(ToolCallEvents.iter_mcp_list_tools)
    shell_call = _all_at_once(ToolCallEvents.iter_shell_call)
    shell_call_output = _all_at_once(ToolCallEvents.iter_shell_call_output)
    compaction = _all_at_once(iter_compaction)
    item = _all_at_once(iter_item)
    audio = _all_at_once(iter_audio)


def done_items(events: list[Event]) -> list[Item]:
    """The complete output items of a stream: what a client records into history."""
    return [event["item"] for event in events if event.get("type") == ITEM_DONE]


def response_id_of(events: Iterable[Event]) -> str | None:
    """The `response.id` stated by the first lifecycle event of a stream."""
    for event in events:
        response = event.get("response")
        if isinstance(response, dict) and response.get("id"):
            return str(response["id"])
    return None


def terminal_event(events: list[Event]) -> Event | None:
    for event in reversed(events):
        if event.get("type") in ENDING_TYPES:
            return event
    return None
