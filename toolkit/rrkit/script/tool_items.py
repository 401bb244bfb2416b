"""Builders for the calls a client runs and the outputs it sends back, and the service's own items (compaction,
audio, approvals): each makes the model a file's `output:` entry of that `type` makes, with the same fields."""

from __future__ import annotations

from typing import Any, Literal

from .outputs import (
    AdditionalToolsOut,
    ApplyPatchCallOut,
    ApplyPatchCallOutputOut,
    AudioOut,
    CompactionOut,
    ComputerCallOut,
    ComputerCallOutputOut,
    CustomToolCallOutputOut,
    FunctionCallOutputOut,
    LocalShellCallOut,
    LocalShellCallOutputOut,
    McpApprovalRequestOut,
    McpApprovalResponseOut,
    ProgramOut,
    ProgramOutputOut,
    ShellCallOut,
    ShellCallOutputOut,
    ShellCommandOutput,
    ToolSearchCallOut,
    ToolSearchOutputOut,
)

Execution = Literal["server", "client"]


def _given(**fields: Any) -> dict[str, Any]:
    """The fields a builder was given (None: left to the model's default)."""
    return {name: value for name, value in fields.items() if value is not None}


def function_call_output(call_id: str, output: str | list[dict[str, Any]] = "") -> FunctionCallOutputOut:
    """What a function call returned, as a conversation's items hold it."""
    return FunctionCallOutputOut(type="function_call_output", call_id=call_id, output=output)


def custom_tool_call_output(call_id: str, output: str | list[dict[str, Any]] = "") -> CustomToolCallOutputOut:
    return CustomToolCallOutputOut(type="custom_tool_call_output", call_id=call_id, output=output)


def local_shell_call(
    *command: str,
    env: dict[str, str] | None = None,
    working_directory: str | None = None,
    timeout_ms: int | None = None,
    call_id: str | None = None,
) -> LocalShellCallOut:
    """A command (its argv) for the client to run on its own machine: `local_shell_call("ls", "-l")`."""
    fields = _given(env=env, working_directory=working_directory, timeout_ms=timeout_ms, call_id=call_id)
    return LocalShellCallOut.model_validate({"type": "local_shell_call", "command": list(command), **fields})


def local_shell_call_output(output: str, call_id: str | None = None) -> LocalShellCallOutputOut:
    return LocalShellCallOutputOut(type="local_shell_call_output", output=output, call_id=call_id)


def shell_call(
    *commands: str,
    timeout_ms: int | None = None,
    max_output_length: int | None = None,
    environment: dict[str, Any] | None = None,
    call_id: str | None = None,
) -> ShellCallOut:
    """Shell commands for the client to run, each streamed as its own shell_call_command events."""
    fields = _given(
        timeout_ms=timeout_ms, max_output_length=max_output_length, environment=environment, call_id=call_id
    )
    return ShellCallOut.model_validate({"type": "shell_call", "commands": list(commands), **fields})


def shell_output(stdout: str = "", stderr: str = "", exit_code: int | None = 0) -> ShellCommandOutput:
    """What one command printed; `exit_code=None`: it timed out."""
    return ShellCommandOutput(stdout=stdout, stderr=stderr, exit_code=exit_code)


def shell_call_output(call_id: str, *outputs: ShellCommandOutput) -> ShellCallOutputOut:
    """What each command of a shell call printed, in command order (`shell_output(...)` each)."""
    return ShellCallOutputOut(type="shell_call_output", call_id=call_id, output=list(outputs))


def computer_call(
    action: dict[str, Any], *, pending_safety_checks: list[dict[str, Any]] | None = None, call_id: str | None = None
) -> ComputerCallOut:
    """A computer-use action for the client: `computer_call({"type": "click", "button": "left", "x": 1, "y": 2})`."""
    fields = _given(pending_safety_checks=pending_safety_checks, call_id=call_id)
    return ComputerCallOut.model_validate({"type": "computer_call", "action": action, **fields})


def computer_call_output(
    call_id: str, *, image_url: str | None = None, file_id: str | None = None
) -> ComputerCallOutputOut:
    """The screenshot a computer call answered with."""
    return ComputerCallOutputOut(type="computer_call_output", call_id=call_id, image_url=image_url, file_id=file_id)


def apply_patch_call(
    operation: Literal["create_file", "update_file", "delete_file"],
    path: str,
    diff: str | None = None,
    *,
    call_id: str | None = None,
) -> ApplyPatchCallOut:
    """A file change for the client to apply: `apply_patch_call("update_file", "app.py", "@@ ...")`."""
    fields = _given(diff=diff, call_id=call_id)
    return ApplyPatchCallOut.model_validate(
        {"type": "apply_patch_call", "operation": operation, "path": path, **fields}
    )


def apply_patch_call_output(
    call_id: str, status: Literal["completed", "failed"] = "completed", output: str | None = None
) -> ApplyPatchCallOutputOut:
    return ApplyPatchCallOutputOut(type="apply_patch_call_output", call_id=call_id, status=status, output=output)


def mcp_approval_request(server_label: str, name: str, arguments: str | dict[str, Any] = "{}") -> McpApprovalRequestOut:
    """The service asks the client to approve this call of a remote MCP server's tool."""
    fields = {"server_label": server_label, "name": name, "arguments": arguments}
    return McpApprovalRequestOut.model_validate({"type": "mcp_approval_request", **fields})


def mcp_approval_response(approval_request_id: str, approve: bool, reason: str | None = None) -> McpApprovalResponseOut:
    fields = {"approval_request_id": approval_request_id, "approve": approve, "reason": reason}
    return McpApprovalResponseOut(type="mcp_approval_response", **fields)


def program(code: str, *, fingerprint: str = "", call_id: str | None = None) -> ProgramOut:
    """JavaScript run by programmatic tool calling, with the fingerprint a client must send back."""
    return ProgramOut(type="program", code=code, fingerprint=fingerprint, call_id=call_id)


def program_output(
    call_id: str, result: str, status: Literal["completed", "incomplete"] = "completed"
) -> ProgramOutputOut:
    return ProgramOutputOut(type="program_output", call_id=call_id, result=result, status=status)


def tool_search_call(
    arguments: Any = None, *, execution: Execution = "server", call_id: str | None = None
) -> ToolSearchCallOut:
    """A search for tools, run by the service or (`execution="client"`) asked of the client."""
    fields = _given(arguments=arguments, call_id=call_id)
    return ToolSearchCallOut.model_validate({"type": "tool_search_call", "execution": execution, **fields})


def tool_search_output(
    *tools: dict[str, Any], execution: Execution = "server", call_id: str | None = None
) -> ToolSearchOutputOut:
    """The tools a tool search found (tool definitions)."""
    return ToolSearchOutputOut(type="tool_search_output", tools=list(tools), execution=execution, call_id=call_id)


def additional_tools(*tools: dict[str, Any], role: str = "developer") -> AdditionalToolsOut:
    """Tool definitions made available from this item on."""
    return AdditionalToolsOut.model_validate({"type": "additional_tools", "tools": list(tools), "role": role})


def compaction(encrypted_content: str) -> CompactionOut:
    """The service's compaction of the conversation: a compacting event, then the opaque item."""
    return CompactionOut(type="compaction", encrypted_content=encrypted_content)


def audio(transcript: str, *audio: str, chunks: int = 1) -> AudioOut:
    """Spoken output: the transcript in `chunks` deltas, then each piece of audio (base64)."""
    return AudioOut(type="audio", transcript=transcript, audio=list(audio), chunks=chunks)
