"""The events of tool calls: a function's or custom tool's call, a hosted tool's (web and file search, image
generation, code interpreter, a remote MCP server's tool and tool list), a shell call and what it printed."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple, TypedDict, Unpack

from .chunks import split_chunks
from .event_builder import Event, EventBuilder
from .event_names import (
    ARGUMENTS_DELTA,
    ARGUMENTS_DONE,
    CODE_DELTA,
    CODE_DONE,
    CODE_INTERPRETER_COMPLETED,
    CODE_INTERPRETER_IN_PROGRESS,
    CODE_INTERPRETER_INTERPRETING,
    CUSTOM_INPUT_DELTA,
    CUSTOM_INPUT_DONE,
    FILE_SEARCH_COMPLETED,
    FILE_SEARCH_IN_PROGRESS,
    FILE_SEARCH_SEARCHING,
    IMAGE_GEN_COMPLETED,
    IMAGE_GEN_GENERATING,
    IMAGE_GEN_IN_PROGRESS,
    IMAGE_GEN_PARTIAL_IMAGE,
    MCP_ARGUMENTS_DELTA,
    MCP_ARGUMENTS_DONE,
    MCP_CALL_COMPLETED,
    MCP_CALL_FAILED,
    MCP_CALL_IN_PROGRESS,
    MCP_LIST_TOOLS_COMPLETED,
    MCP_LIST_TOOLS_FAILED,
    MCP_LIST_TOOLS_IN_PROGRESS,
    SHELL_COMMAND_ADDED,
    SHELL_COMMAND_DELTA,
    SHELL_COMMAND_DONE,
    SHELL_OUTPUT_DELTA,
    SHELL_OUTPUT_DONE,
    WEB_SEARCH_COMPLETED,
    WEB_SEARCH_IN_PROGRESS,
    WEB_SEARCH_SEARCHING,
)
from .request import Item


def _bare(*kinds: str) -> list[tuple[str, dict[str, Any]]]:
    """Events of a hosted tool that carry nothing but where they belong (item_id, output_index)."""
    return [(kind, {}) for kind in kinds]


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


SHELL_ACTION_LIMITS: Item = {"timeout_ms": None, "max_output_length": None}
"""A shell call's action limits the service states even when none is set."""

_FUNCTION_CALL = _ToolCall("function_call", "arguments", ARGUMENTS_DELTA, ARGUMENTS_DONE, done_names=True)
_CUSTOM_TOOL_CALL = _ToolCall("custom_tool_call", "input", CUSTOM_INPUT_DELTA, CUSTOM_INPUT_DONE)


class _CallPlace(TypedDict, total=False):
    """Where a tool call belongs: its `call_id`, its item's id, the tool `namespace` it names."""

    call_id: str | None
    item_id: str | None
    namespace: str | None


class ToolCallEvents(EventBuilder):
    """The tool calls' output items of a response, each made one event at a time (`ResponseEvents`, in
    rrkit.protocol.events, makes them all at once too)."""

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
        yield from self._deltas(
            call.delta, {"item_id": item_id, "output_index": index}, split_chunks(value, chunks), {}
        )
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
        deltas = [(CODE_DELTA, {"delta": piece}) for piece in split_chunks(code, chunks)]
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
        deltas = [(MCP_ARGUMENTS_DELTA, {"delta": piece}) for piece in split_chunks(arguments, chunks)]
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
        call: Item = {"call_id": call_id or self.ids.new("call"), "environment": environment}
        limits = {**SHELL_ACTION_LIMITS, **(action or {})}
        base: Item = {"id": item_id, "type": "shell_call", **call, "action": {**limits, "commands": []}}
        index, added = self._add_item(base)
        yield added
        for number, command in enumerate(commands):
            where = {"output_index": index, "command_index": number}
            yield self._emit(SHELL_COMMAND_ADDED, **where, command="")
            yield self._emit(SHELL_COMMAND_DELTA, **where, delta=command)
            yield self._emit(SHELL_COMMAND_DONE, **where, command=command)
        done_action = {**limits, "commands": list(commands)}
        yield self._done_item(index, {**base, "action": done_action, "status": "completed"})

    def iter_shell_call_output(
        self, call_id: str, outputs: list[Item], *, max_output_length: int | None = None, item_id: str | None = None
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
        fields: Item = {"call_id": call_id, "output": [], "max_output_length": max_output_length}
        return self._iter_hosted("shell_call_output", fields, deltas, {"output": outputs}, item_id=item_id)
