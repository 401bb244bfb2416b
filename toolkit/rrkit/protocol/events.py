"""Builders for every event family of a Responses stream, with ids and `sequence_number` kept right."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Concatenate, NamedTuple, ParamSpec, TypedDict, Unpack

from .errors import failure_message
from .ids import IdGenerator
from .request import Item

Event = dict[str, Any]

# Event type names, written once.
CREATED = "response.created"
IN_PROGRESS = "response.in_progress"
COMPLETED = "response.completed"
FAILED = "response.failed"
INCOMPLETE = "response.incomplete"
ERROR = "error"
ITEM_ADDED = "response.output_item.added"
ITEM_DONE = "response.output_item.done"
PART_ADDED = "response.content_part.added"
PART_DONE = "response.content_part.done"
TEXT_DELTA = "response.output_text.delta"
TEXT_DONE = "response.output_text.done"
REFUSAL_DELTA = "response.refusal.delta"
REFUSAL_DONE = "response.refusal.done"
SUMMARY_PART_ADDED = "response.reasoning_summary_part.added"
SUMMARY_PART_DONE = "response.reasoning_summary_part.done"
SUMMARY_TEXT_DELTA = "response.reasoning_summary_text.delta"
SUMMARY_TEXT_DONE = "response.reasoning_summary_text.done"
REASONING_TEXT_DELTA = "response.reasoning_text.delta"
REASONING_TEXT_DONE = "response.reasoning_text.done"
ARGUMENTS_DELTA = "response.function_call_arguments.delta"
ARGUMENTS_DONE = "response.function_call_arguments.done"
CUSTOM_INPUT_DELTA = "response.custom_tool_call_input.delta"
CUSTOM_INPUT_DONE = "response.custom_tool_call_input.done"
QUEUED = "response.queued"
ANNOTATION_ADDED = "response.output_text.annotation.added"
AUDIO_DELTA = "response.audio.delta"
AUDIO_DONE = "response.audio.done"
AUDIO_TRANSCRIPT_DELTA = "response.audio.transcript.delta"
AUDIO_TRANSCRIPT_DONE = "response.audio.transcript.done"
WEB_SEARCH_IN_PROGRESS = "response.web_search_call.in_progress"
WEB_SEARCH_SEARCHING = "response.web_search_call.searching"
WEB_SEARCH_COMPLETED = "response.web_search_call.completed"
FILE_SEARCH_IN_PROGRESS = "response.file_search_call.in_progress"
FILE_SEARCH_SEARCHING = "response.file_search_call.searching"
FILE_SEARCH_COMPLETED = "response.file_search_call.completed"
IMAGE_GEN_IN_PROGRESS = "response.image_generation_call.in_progress"
IMAGE_GEN_GENERATING = "response.image_generation_call.generating"
IMAGE_GEN_PARTIAL_IMAGE = "response.image_generation_call.partial_image"
IMAGE_GEN_COMPLETED = "response.image_generation_call.completed"
CODE_INTERPRETER_IN_PROGRESS = "response.code_interpreter_call.in_progress"
CODE_INTERPRETER_INTERPRETING = "response.code_interpreter_call.interpreting"
CODE_INTERPRETER_COMPLETED = "response.code_interpreter_call.completed"
CODE_DELTA = "response.code_interpreter_call_code.delta"
CODE_DONE = "response.code_interpreter_call_code.done"
MCP_CALL_IN_PROGRESS = "response.mcp_call.in_progress"
MCP_CALL_COMPLETED = "response.mcp_call.completed"
MCP_CALL_FAILED = "response.mcp_call.failed"
MCP_ARGUMENTS_DELTA = "response.mcp_call_arguments.delta"
MCP_ARGUMENTS_DONE = "response.mcp_call_arguments.done"
MCP_LIST_TOOLS_IN_PROGRESS = "response.mcp_list_tools.in_progress"
MCP_LIST_TOOLS_COMPLETED = "response.mcp_list_tools.completed"
MCP_LIST_TOOLS_FAILED = "response.mcp_list_tools.failed"
SHELL_COMMAND_ADDED = "response.shell_call_command.added"
SHELL_COMMAND_DELTA = "response.shell_call_command.delta"
SHELL_COMMAND_DONE = "response.shell_call_command.done"
SHELL_OUTPUT_DELTA = "response.shell_call_output_content.delta"
SHELL_OUTPUT_DONE = "response.shell_call_output_content.done"
COMPACTING = "response.compaction.compacting"

SSE_COMMENT = "rrkit.sse_comment"
"""Not a Responses event: an SSE comment line (a keep-alive) kept in a relay or a recording in its place, as
`{"type": SSE_COMMENT, "comment": text}`; sent as the comment again over SSE, never over a WebSocket."""

UNPARSABLE = "rrkit.unparsable"
"""Not a Responses event: data a server sent in an event's place that is not JSON (a fault), kept as `{"type":
UNPARSABLE, "data": text, "event": SSE event name}` and sent again as that same data. The order checker counts it
as the event it stands for, whose content is unknown."""

RRKIT_TYPES = frozenset({SSE_COMMENT, UNPARSABLE})
"""The types rrkit gives what is kept in an event's place: an event stating one of them is read as such a place
holder, not passed on as it came."""

METADATA = "response.metadata"
"""A server frame about a response, not one of its events: `{type, headers: {x-codex-turn-state, ...}, metadata}`.
Codex 0.169.0 and 0.171.0 read a WebSocket turn state from it (observed: the turn's next request carries the
token in `client_metadata`); over HTTP SSE they read neither this frame nor `CODEX_METADATA`."""

CODEX_METADATA = "codex.response.metadata"
"""The same frame under the name some gateways give it: neither Codex release reads it (observed)."""

RATE_LIMITS = "codex.rate_limits"
"""A server frame Codex reads its rate-limit windows from (not a response event)."""

SIDE_FRAMES = (METADATA, CODEX_METADATA, RATE_LIMITS)
"""The side-channel frames a server sends of its own (a script's `frames`): metadata and rate limits."""
SIDE_CHANNELS = frozenset({SSE_COMMENT, *SIDE_FRAMES})
"""Frames that travel with a response's events but are none of them: no rule of a stream counts or checks them
(validation, replay, diff and show leave them out alike)."""

TERMINAL_TYPES = frozenset({COMPLETED, FAILED, INCOMPLETE})
ENDING_TYPES = TERMINAL_TYPES | {ERROR}
"""Events after which a server sends nothing more for this response (the flat `error` event included)."""
LIFECYCLE_TYPES = frozenset({CREATED, IN_PROGRESS, COMPLETED, FAILED, INCOMPLETE})
DELTA_TYPES = frozenset(
    {TEXT_DELTA, REFUSAL_DELTA, SUMMARY_TEXT_DELTA, REASONING_TEXT_DELTA, ARGUMENTS_DELTA, CUSTOM_INPUT_DELTA}
)


def split_chunks(text: str, chunks: int) -> list[str]:
    """Split `text` into `chunks` contiguous pieces as even as possible (fewer if the text is shorter)."""
    return list(iter_chunks(text, chunks))


def iter_chunks(text: str, chunks: int) -> Iterator[str]:
    """The pieces of `split_chunks`, one at a time."""
    if chunks < 1:
        raise ValueError(f"chunks must be at least 1, got {chunks}")
    if not text:
        yield ""
        return
    chunks = min(chunks, len(text))
    size, extra = divmod(len(text), chunks)
    start = 0
    for i in range(chunks):
        end = start + size + (1 if i < extra else 0)
        yield text[start:end]
        start = end


def estimate_tokens(value: Any) -> int:
    """A stable, cheap token estimate (about 4 characters a token) for default usage figures."""
    return max(1, len(str(value)) // 4) if value else 0


def usage(
    input_tokens: int = 0,
    output_tokens: int = 0,
    *,
    cached_tokens: int = 0,
    reasoning_tokens: int = 0,
    cache_write_tokens: int = 0,
) -> dict[str, Any]:
    """A `usage` object with every field the official SDK requires."""
    return {
        "input_tokens": input_tokens,
        "input_tokens_details": {"cached_tokens": cached_tokens, "cache_write_tokens": cache_write_tokens},
        "output_tokens": output_tokens,
        "output_tokens_details": {"reasoning_tokens": reasoning_tokens},
        "total_tokens": input_tokens + output_tokens,
    }


_P = ParamSpec("_P")


def _all_at_once(
    one_at_a_time: Callable[Concatenate[ResponseEvents, _P], Iterator[Event]],
) -> Callable[Concatenate[ResponseEvents, _P], list[Event]]:
    """A builder method that returns every event of an output item at once, from the one that makes them lazily."""

    def all_at_once(self: ResponseEvents, /, *args: _P.args, **kwargs: _P.kwargs) -> list[Event]:
        return list(one_at_a_time(self, *args, **kwargs))

    all_at_once.__doc__ = f"The events of `{one_at_a_time.__name__}`, all at once."
    return all_at_once


def _bare(*kinds: str) -> list[tuple[str, dict[str, Any]]]:
    """Events of a hosted tool that carry nothing but where they belong (item_id, output_index)."""
    return [(kind, {}) for kind in kinds]


def _with_status(item: Item, status: str | None) -> Item:
    return {**item, "status": status} if status is not None else {k: v for k, v in item.items() if k != "status"}


def _printed(output: Mapping[str, Any]) -> dict[str, str]:
    """What a shell output content delta streams of one command's output: its stdout and stderr."""
    return {"stdout": str(output.get("stdout", "")), "stderr": str(output.get("stderr", ""))}


class _ToolCall(NamedTuple):
    """How a kind of tool call streams: its item type, the field its deltas build, its delta and done events, and
    whether the done event names the tool."""

    item_type: str
    field: str
    delta: str
    done: str
    done_names: bool = False


_FUNCTION_CALL = _ToolCall("function_call", "arguments", ARGUMENTS_DELTA, ARGUMENTS_DONE, done_names=True)
_CUSTOM_TOOL_CALL = _ToolCall("custom_tool_call", "input", CUSTOM_INPUT_DELTA, CUSTOM_INPUT_DONE)


class _CallPlace(TypedDict, total=False):
    """Where a tool call belongs: its `call_id`, its item's id, the tool `namespace` it names."""

    call_id: str | None
    item_id: str | None
    namespace: str | None


class ResponseEvents:
    """Builds the events of one response in order: every call returns the events it adds.

    `request` is the logical request being answered; the response object echoes its
    `model`, `instructions`, `tools`, `tool_choice` and `parallel_tool_calls` as the real service does.
    """

    def __init__(
        self,
        request: Mapping[str, Any] | None = None,
        *,
        response_id: str | None = None,
        ids: IdGenerator | None = None,
        created_at: int | None = None,
        model: str | None = None,
        keep_events: bool = True,
    ) -> None:
        self.ids = ids or IdGenerator()
        self.request = dict(request or {})
        self.response_id = response_id or self.ids.new("response")
        self.created_at = int(time.time()) if created_at is None else created_at
        self.model = model or self.request.get("model") or "gpt-rrkit"
        self.sequence_number = 0
        self.output: list[Item] = []
        self.events: list[Event] = []  # every event made, unless `keep_events` is False (events streamed lazily)
        self._keep = keep_events

    # -- plumbing ---------------------------------------------------------------------------
    def _emit(self, type_: str, **fields: Any) -> Event:
        event = {"type": type_, "sequence_number": self.sequence_number, **fields}
        self.sequence_number += 1
        if self._keep:
            self.events.append(event)
        return event

    def response_object(self, status: str, **extra: Any) -> dict[str, Any]:
        request = self.request
        tool_choice = request.get("tool_choice")
        return {
            "id": self.response_id,
            "object": "response",
            "created_at": self.created_at,
            "status": status,
            "model": self.model,
            "instructions": request.get("instructions"),
            "output": [dict(item) for item in self.output] if status != "in_progress" else [],
            "parallel_tool_calls": bool(request.get("parallel_tool_calls", False)),
            "tool_choice": tool_choice if tool_choice is not None else "auto",
            "tools": list(request.get("tools") or []),
            "error": None,
            "incomplete_details": None,
            "usage": None,
            **extra,
        }

    # -- lifecycle --------------------------------------------------------------------------
    def start(self) -> list[Event]:
        """`response.created` then `response.in_progress`."""
        return [
            self._emit(CREATED, response=self.response_object("in_progress")),
            self._emit(IN_PROGRESS, response=self.response_object("in_progress")),
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

    def failed(self, code: str | None, message: str | None = None) -> list[Event]:
        """`response.failed`; without a message, the error catalogue's message for the code."""
        error = {"code": code, "message": message or failure_message(code)}
        return [self._emit(FAILED, response=self.response_object("failed", error=error))]

    def incomplete(self, reason: str) -> list[Event]:
        details = {"reason": reason}
        return [self._emit(INCOMPLETE, response=self.response_object("incomplete", incomplete_details=details))]

    def error(self, message: str, code: str | None = None, param: str | None = None) -> list[Event]:
        """The flat SSE `error` event."""
        return [self._emit(ERROR, message=message, code=code, param=param)]

    # -- output items -----------------------------------------------------------------------
    def _add_item(self, item: Item) -> tuple[int, Event]:
        index = len(self.output)
        self.output.append(item)
        added = dict(item, status="in_progress")
        return index, self._emit(ITEM_ADDED, output_index=index, item=added)

    def _done_item(self, index: int, item: Item) -> Event:
        self.output[index] = item
        return self._emit(ITEM_DONE, output_index=index, item=item)

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
        for piece in iter_chunks(text, chunks):
            yield self._emit(delta_type, **where, delta=piece, **extra)
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
            for piece in iter_chunks(part_text, chunks):
                yield self._emit(SUMMARY_TEXT_DELTA, **where, summary_index=summary_index, delta=piece)
            yield self._emit(SUMMARY_TEXT_DONE, **where, summary_index=summary_index, text=part_text)
            part = {"type": "summary_text", "text": part_text}
            yield self._emit(SUMMARY_PART_DONE, **where, summary_index=summary_index, part=part)
            parts.append(part)
        done: Item = dict(base, summary=parts)
        if text is not None:
            for piece in iter_chunks(text, chunks):
                yield self._emit(REASONING_TEXT_DELTA, **where, content_index=0, delta=piece)
            yield self._emit(REASONING_TEXT_DONE, **where, content_index=0, text=text)
            done["content"] = [{"type": "reasoning_text", "text": text}]
        yield self._done_item(index, done)

    def iter_function_call(
        self, name: str, arguments: str, chunks: int = 1, **where: Unpack[_CallPlace]
    ) -> Iterator[Event]:
        """A function call: added, `chunks` argument deltas, arguments done, item done; `namespace`: the tool
        namespace the function belongs to (an MCP server's, say)."""
        return self._iter_tool_call(_FUNCTION_CALL, name, arguments, chunks, where)

    def iter_custom_tool_call(
        self, name: str, input_: str, chunks: int = 1, **where: Unpack[_CallPlace]
    ) -> Iterator[Event]:
        return self._iter_tool_call(_CUSTOM_TOOL_CALL, name, input_, chunks, where)

    def _iter_tool_call(
        self, call: _ToolCall, name: str, value: str, chunks: int, where: _CallPlace
    ) -> Iterator[Event]:
        item_id = where.get("item_id") or self.ids.new(call.item_type)
        call_id = where.get("call_id") or self.ids.new("call")
        base: Item = {"id": item_id, "type": call.item_type, "call_id": call_id, "name": name, call.field: ""}
        if where.get("namespace") is not None:
            base["namespace"] = where["namespace"]
        index, added = self._add_item(base)
        yield added
        for piece in iter_chunks(value, chunks):
            yield self._emit(call.delta, item_id=item_id, output_index=index, delta=piece)
        named = {"name": name} if call.done_names else {}
        yield self._emit(call.done, item_id=item_id, output_index=index, **{call.field: value}, **named)
        yield self._done_item(index, dict(base, **{call.field: value}, status="completed"))

    def iter_web_search_call(self, query: str, *, item_id: str | None = None) -> Iterator[Event]:
        """A hosted web search: added, in_progress, searching, completed, item done with its `search` action."""
        steps = _bare(WEB_SEARCH_IN_PROGRESS, WEB_SEARCH_SEARCHING, WEB_SEARCH_COMPLETED)
        action = {"type": "search", "query": query}
        return self._iter_hosted("web_search_call", {"action": action}, steps, item_id=item_id)

    def iter_file_search_call(self, *queries: str, item_id: str | None = None) -> Iterator[Event]:
        """A hosted file search: added, in_progress, searching, completed, item done with its queries."""
        steps = _bare(FILE_SEARCH_IN_PROGRESS, FILE_SEARCH_SEARCHING, FILE_SEARCH_COMPLETED)
        return self._iter_hosted("file_search_call", {"queries": list(queries)}, steps, item_id=item_id)

    def iter_image_generation_call(
        self, result: str, *partial_images: str, item_id: str | None = None
    ) -> Iterator[Event]:
        """A hosted image generation: added, in_progress, generating, one `partial_image` event per partial
        image (base64), completed, item done with the final image (`result`, base64)."""
        partials = [
            (IMAGE_GEN_PARTIAL_IMAGE, {"partial_image_b64": image, "partial_image_index": number})
            for number, image in enumerate(partial_images)
        ]
        steps = [*_bare(IMAGE_GEN_IN_PROGRESS, IMAGE_GEN_GENERATING), *partials, *_bare(IMAGE_GEN_COMPLETED)]
        return self._iter_hosted("image_generation_call", {"result": None}, steps, {"result": result}, item_id=item_id)

    def iter_code_interpreter_call(
        self, code: str, chunks: int = 1, *, container_id: str = "cntr_rrkit", item_id: str | None = None
    ) -> Iterator[Event]:
        """Hosted code: added, in_progress, `chunks` code deltas, code done, interpreting, completed, item done."""
        deltas = [(CODE_DELTA, {"delta": piece}) for piece in iter_chunks(code, chunks)]
        steps = [*_bare(CODE_INTERPRETER_IN_PROGRESS), *deltas, (CODE_DONE, {"code": code})]
        steps += _bare(CODE_INTERPRETER_INTERPRETING, CODE_INTERPRETER_COMPLETED)
        fields: Item = {"code": "", "container_id": container_id, "outputs": []}
        return self._iter_hosted("code_interpreter_call", fields, steps, {"code": code}, item_id=item_id)

    def iter_mcp_call(
        self,
        server_label: str,
        name: str,
        arguments: str,
        output: str,
        chunks: int = 1,
        *,
        error: str | None = None,
        item_id: str | None = None,
    ) -> Iterator[Event]:
        """A call of a remote MCP server's tool: added, in_progress, `chunks` argument deltas, arguments done,
        completed, item done with the tool's `output`; with `error`, failed, and the item holds the tool's error."""
        deltas = [(MCP_ARGUMENTS_DELTA, {"delta": piece}) for piece in iter_chunks(arguments, chunks)]
        steps = [*_bare(MCP_CALL_IN_PROGRESS), *deltas, (MCP_ARGUMENTS_DONE, {"arguments": arguments})]
        steps += _bare(MCP_CALL_COMPLETED if error is None else MCP_CALL_FAILED)
        fields: Item = {"server_label": server_label, "name": name, "arguments": ""}
        done: Item = {"arguments": arguments, "output": output}
        if error is not None:
            done["error"] = {"type": "mcp_tool_execution_error", "content": [{"type": "text", "text": error}]}
        status = "completed" if error is None else "failed"
        return self._iter_hosted("mcp_call", fields, steps, done, item_id=item_id, done_status=status)

    def iter_mcp_list_tools(
        self,
        server_label: str,
        tools: list[dict[str, Any]],
        *,
        error: str | None = None,
        item_id: str | None = None,
    ) -> Iterator[Event]:
        """The tools a remote MCP server offers: added, in_progress, completed, item done with `tools`; with
        `error` (the server could not be listed), failed, and the item holds it."""
        steps = _bare(MCP_LIST_TOOLS_IN_PROGRESS, MCP_LIST_TOOLS_COMPLETED if error is None else MCP_LIST_TOOLS_FAILED)
        fields: Item = {"server_label": server_label, "tools": []}
        done: Item = {"tools": tools} if error is None else {"error": error}
        status = "completed" if error is None else "failed"
        return self._iter_hosted("mcp_list_tools", fields, steps, done, item_id=item_id, done_status=status)

    def iter_shell_call(
        self,
        commands: list[str],
        *,
        action: Item | None = None,
        environment: Item | None = None,
        call_id: str | None = None,
        item_id: str | None = None,
    ) -> Iterator[Event]:
        """A shell call for the client to run: added, then per command `shell_call_command` added, delta and
        done, then the item done with `action.commands`; `action`: its other fields (`timeout_ms`,
        `max_output_length`); `environment`: where to run them (`{"type": "local"}`)."""
        item_id = item_id or self.ids.new("shell_call")
        call: Item = {"call_id": call_id or self.ids.new("call")}
        if environment is not None:
            call["environment"] = environment
        base: Item = {"id": item_id, "type": "shell_call", **call, "action": {**(action or {}), "commands": []}}
        index, added = self._add_item(base)
        yield added
        for number, command in enumerate(commands):
            where = {"output_index": index, "command_index": number}
            yield self._emit(SHELL_COMMAND_ADDED, **where, command="")
            yield self._emit(SHELL_COMMAND_DELTA, **where, delta=command)
            yield self._emit(SHELL_COMMAND_DONE, **where, command=command)
        done_action = {**(action or {}), "commands": list(commands)}
        yield self._done_item(index, {**base, "action": done_action, "status": "completed"})

    def iter_shell_call_output(
        self, call_id: str, outputs: list[Item], *, item_id: str | None = None
    ) -> Iterator[Event]:
        """What the client's shell commands printed (`{stdout, stderr, outcome}` each, in command order): added,
        per command a content delta and done, then the item done with every output."""
        deltas = [
            step
            for number, output in enumerate(outputs)
            for step in (
                (SHELL_OUTPUT_DELTA, {"command_index": number, "delta": _printed(output)}),
                (SHELL_OUTPUT_DONE, {"command_index": number, "output": [output]}),
            )
        ]
        fields: Item = {"call_id": call_id, "output": []}
        return self._iter_hosted("shell_call_output", fields, deltas, {"output": outputs}, item_id=item_id)

    def iter_compaction(self, encrypted_content: str, *, item_id: str | None = None) -> Iterator[Event]:
        """The service's compaction of the conversation: added, compacting, item done with the opaque
        `encrypted_content` a client sends back in place of what it replaced."""
        steps = _bare(COMPACTING)
        fields: Item = {"encrypted_content": encrypted_content}
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
        for piece in iter_chunks(transcript, chunks):
            yield self._emit(AUDIO_TRANSCRIPT_DELTA, delta=piece)
        yield self._emit(AUDIO_TRANSCRIPT_DONE)
        for piece in audio:
            yield self._emit(AUDIO_DELTA, delta=piece)
        yield self._emit(AUDIO_DONE)

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

    # -- output items, made all at once (the same arguments) -------------------------------------------------
    message = _all_at_once(iter_message)
    refusal = _all_at_once(iter_refusal)
    reasoning = _all_at_once(iter_reasoning)
    function_call = _all_at_once(iter_function_call)
    custom_tool_call = _all_at_once(iter_custom_tool_call)
    web_search_call = _all_at_once(iter_web_search_call)
    file_search_call = _all_at_once(iter_file_search_call)
    image_generation_call = _all_at_once(iter_image_generation_call)
    code_interpreter_call = _all_at_once(iter_code_interpreter_call)
    mcp_call = _all_at_once(iter_mcp_call)
    mcp_list_tools = _all_at_once(iter_mcp_list_tools)
    shell_call = _all_at_once(iter_shell_call)
    shell_call_output = _all_at_once(iter_shell_call_output)
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
