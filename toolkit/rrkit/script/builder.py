"""The Python way to write a script: small functions that build the same models as the file format."""

from __future__ import annotations

from typing import Any, TypedDict, Unpack

from ..protocol.errors import UPGRADE_REQUIRED, failure_message
from ..protocol.vocabulary import CloseKind
from .models import ErrorEvent, ErrorFrame, Failure, Handshake, Reject, Reply, SideFrame, UsageSpec
from .outputs import (
    CodeInterpreterCallOut,
    CustomToolCallOut,
    FileSearchCallOut,
    FunctionCallOut,
    ImageGenerationCallOut,
    McpCallOut,
    McpListToolsOut,
    MessageOut,
    Output,
    ReasoningOut,
    RefusalOut,
    WebSearchCallOut,
)


def text(
    value: str, chunks: int = 1, *, phase: str | None = None, annotations: list[dict[str, Any]] | None = None
) -> MessageOut:
    """A message; `phase` (`commentary`, `final_answer`) as newer models tag their messages; `annotations`
    (`{"type": "url_citation", "url": ..., "title": ..., "start_index": 0, "end_index": 5}`) each sent as an
    annotation.added event."""
    return MessageOut(text=value, chunks=chunks, phase=phase, annotations=annotations or [])


def refusal(value: str, chunks: int = 1) -> RefusalOut:
    return RefusalOut(type="refusal", text=value, chunks=chunks)


def reasoning(
    *summary: str, text: str | None = None, chunks: int = 1, encrypted_content: str | None = None
) -> ReasoningOut:
    """A reasoning item: summary parts, its text, and the `encrypted_content` a stateless client sends back."""
    return ReasoningOut(
        type="reasoning", summary=list(summary), text=text, chunks=chunks, encrypted_content=encrypted_content
    )


def function_call(
    name: str,
    arguments: str | dict[str, Any] = "{}",
    *,
    call_id: str | None = None,
    chunks: int = 1,
    namespace: str | None = None,
) -> FunctionCallOut:
    """A function call; `namespace`: the tool namespace the function belongs to."""
    fields = {"name": name, "arguments": arguments, "call_id": call_id, "chunks": chunks, "namespace": namespace}
    return FunctionCallOut.model_validate({"type": "function_call", **fields})


def web_search_call(query: str) -> WebSearchCallOut:
    """A hosted web search for `query`: in_progress, searching, completed, then the item."""
    return WebSearchCallOut(type="web_search_call", query=query)


def file_search_call(*queries: str) -> FileSearchCallOut:
    """A hosted file search for these queries: in_progress, searching, completed, then the item."""
    return FileSearchCallOut(type="file_search_call", queries=list(queries))


def image_generation_call(result: str, *partial_images: str) -> ImageGenerationCallOut:
    """A hosted image generation: a partial_image event per partial image, then the item with `result` (each a
    base64 image)."""
    return ImageGenerationCallOut(type="image_generation_call", result=result, partial_images=list(partial_images))


def code_interpreter_call(code: str, *, chunks: int = 1, container_id: str = "cntr_rrkit") -> CodeInterpreterCallOut:
    """Hosted code the service ran: its code in `chunks` deltas, interpreting, completed, then the item."""
    return CodeInterpreterCallOut(type="code_interpreter_call", code=code, chunks=chunks, container_id=container_id)


def mcp_call(
    server_label: str,
    name: str,
    arguments: str | dict[str, Any] = "{}",
    output: str = "",
    *,
    chunks: int = 1,
    error: str | None = None,
) -> McpCallOut:
    """A call of a remote MCP server's tool: its arguments in `chunks` deltas, then the item with `output`; with
    `error`, the call fails (mcp_call.failed)."""
    fields = {"server_label": server_label, "name": name, "arguments": arguments, "output": output}
    return McpCallOut.model_validate({"type": "mcp_call", **fields, "chunks": chunks, "error": error})


def mcp_list_tools(server_label: str, *tools: dict[str, Any], error: str | None = None) -> McpListToolsOut:
    """The tools a remote MCP server offers: `{"name": ..., "input_schema": {...}}` each; with `error`, the
    listing fails (mcp_list_tools.failed)."""
    return McpListToolsOut(type="mcp_list_tools", server_label=server_label, tools=list(tools), error=error)


def custom_tool_call(
    name: str, input: str, *, call_id: str | None = None, chunks: int = 1, namespace: str | None = None
) -> CustomToolCallOut:
    fields = {"name": name, "input": input, "call_id": call_id, "chunks": chunks, "namespace": namespace}
    return CustomToolCallOut(type="custom_tool_call", **fields)


def reply(
    *outputs: Output | str,
    usage: UsageSpec | dict[str, Any] | None = None,
    end_turn: bool | None = None,
    turn_state: str | None = None,
    metadata_turn_state: str | None = None,
    headers: dict[str, str] | None = None,
    frames: list[SideFrame] | None = None,
) -> Reply:
    """A completed response with these output items (a bare string is a one-chunk text message).

    `turn_state` goes in the HTTP response's `x-codex-turn-state`; `metadata_turn_state`, over WebSocket, in a
    `response.metadata` frame sent before the response's events; `frames` (`side_frame`) go with the
    events over either transport."""
    items = [text(item) if isinstance(item, str) else item for item in outputs]
    fields: dict[str, Any] = {"output": items}
    if usage is not None:
        fields["usage"] = UsageSpec.model_validate(usage)
    if end_turn is not None:
        fields["end_turn"] = end_turn
    if turn_state is not None:
        fields["turn_state"] = turn_state
    if metadata_turn_state is not None:
        fields["metadata_turn_state"] = metadata_turn_state
    if headers:
        fields["headers"] = headers
    if frames:
        fields["frames"] = frames
    return Reply.model_validate(fields)


def side_frame(type: str, *, before: int = 0, **fields: Any) -> SideFrame:
    """A side-channel frame (`response.metadata`, `codex.response.metadata`, `codex.rate_limits`) with these
    fields, sent before the response event numbered `before`:
    `side_frame("response.metadata", headers={"x-codex-turn-state": "ts-1"})`."""
    return SideFrame.model_validate({"type": type, "before": before, **fields})


def failed(
    code: str | None,
    message: str | None = None,
    *outputs: Output,
    param: str | None = None,
    type: str | None = None,
) -> Reply:
    """`response.failed` with this code (after any output items); the message defaults from the catalogue;
    `param` and `type` go in its error when given."""
    failure = Failure(code=code, message=message or failure_message(code), param=param, type=type)
    return Reply(output=list(outputs), fail=failure)


def incomplete(reason: str = "max_output_tokens", *outputs: Output) -> Reply:
    return Reply(output=list(outputs), incomplete=reason)


def error_event(message: str, code: str | None = None, param: str | None = None) -> Reply:
    return Reply(error_event=ErrorEvent(message=message, code=code, param=param))


class ErrorDetails(TypedDict, total=False):
    """What a rejection and an error frame may say alike besides the code and message: the error's `type`, the
    headers that go with it, and `retry_after` (seconds) / `retry_after_ms` as those headers."""

    type: str | None
    headers: dict[str, str] | None
    retry_after: float | None
    retry_after_ms: int | None


def reject(status: int, code: str | None = None, message: str | None = None, **details: Unpack[ErrorDetails]) -> Reply:
    """An error before the stream: HTTP status + JSON body, or a WebSocket `error` frame with that status.

    `retry_after` (seconds) and `retry_after_ms` add those headers (in the frame's `headers` over WebSocket)."""
    fields = _error_fields(code, message, details)
    return Reply(reject=Reject.model_validate({"status": status, **fields}))


def error_frame(
    code: str | None = None,
    message: str | None = None,
    *outputs: Output,
    status: int | None = None,
    error_fields: dict[str, Any] | None = None,
    **details: Unpack[ErrorDetails],
) -> Reply:
    """A WebSocket `error` frame inside the stream (after any output items), with `status` only when given;
    the message defaults from the catalogue; `error_fields` go into its error object as they are
    (`{"plan_type": "plus", "resets_at": 1767225600}`). Over HTTP the same JSON is an SSE `error` event."""
    fields = {**_error_fields(code, message, details), "status": status, "error_fields": error_fields or {}}
    return Reply(output=list(outputs), error_frame=ErrorFrame.model_validate(fields))


def _error_fields(code: str | None, message: str | None, details: ErrorDetails) -> dict[str, Any]:
    return {"code": code, "message": message, **details, "headers": details.get("headers") or {}}


def refuse_upgrade(
    status: int = UPGRADE_REQUIRED,
    *,
    headers: dict[str, str] | None = None,
    retry_after: float | None = None,
    retry_after_ms: int | None = None,
    times: int = 1,
    repeat: bool = False,
) -> Handshake:
    """Answer a WebSocket upgrade with this status instead of 101 (with `retry-after` / `retry-after-ms`)."""
    return Handshake(
        refuse=status,
        refuse_headers=headers or {},
        retry_after=retry_after,
        retry_after_ms=retry_after_ms,
        times=times,
        repeat=repeat,
    )


def accept_upgrade(
    *,
    turn_state: str | None = None,
    headers: dict[str, str] | None = None,
    delay: float = 0.0,
    close_after: int | None = None,
    close: CloseKind = "frame",
    close_code: int = 1000,
    times: int = 1,
    repeat: bool = False,
) -> Handshake:
    """Accept a WebSocket upgrade: a 101 carrying `turn_state` and `headers`, after `delay` seconds; with
    `close_after`, the server closes the socket after that many requests."""
    return Handshake.model_validate(
        {
            "turn_state": turn_state,
            "headers": headers or {},
            "delay": delay,
            "close_after": close_after,
            "close": close,
            "close_code": close_code,
            "times": times,
            "repeat": repeat,
        }
    )
