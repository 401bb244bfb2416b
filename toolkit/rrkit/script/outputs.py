"""The output items a scripted reply can hold, one model per kind: the same fields in files and in the builders."""

# No `from __future__ import annotations` here: pydantic would evaluate every field's annotation string at import.
import json
from typing import Annotated, Any, ClassVar, Literal, Self, get_args

from pydantic import BeforeValidator, Discriminator, Field, Tag, WithJsonSchema, model_validator

from .strict import Strict as _Strict

Chunks = Annotated[int, Field(ge=1, description="number of delta events the text is split into")]


class MessageOut(_Strict):
    type: Literal["message"] = "message"
    text: str
    chunks: Chunks = 1
    phase: str | None = None
    annotations: list[dict[str, Any]] = Field(
        [], description="citations, each sent as an output_text.annotation.added event ({type: url_citation, ...})"
    )


class RefusalOut(_Strict):
    type: Literal["refusal"]
    text: str
    chunks: Chunks = 1


class ReasoningOut(_Strict):
    type: Literal["reasoning"]
    summary: list[str] = []
    text: str | None = None
    encrypted_content: str | None = None
    chunks: Chunks = 1


def _json_text(value: Any) -> Any:
    if not isinstance(value, dict | list):
        return value
    try:
        return json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as error:  # YAML's bytes, dates, NaN in a list: a field error, not a crash
        raise ValueError(
            f"the arguments must be JSON (strings, numbers, booleans, null, lists, mappings): {error}"
        ) from None


Arguments = Annotated[
    str,
    BeforeValidator(_json_text),
    WithJsonSchema({"anyOf": [{"type": "string"}, {"type": "object"}, {"type": "array"}], "default": "{}"}),
]
"""A tool call's arguments: a mapping (or list) is sent as its JSON, a string verbatim (JSON or not)."""


class FunctionCallOut(_Strict):
    type: Literal["function_call"]
    name: str
    arguments: Arguments = "{}"
    call_id: str | None = None
    chunks: Chunks = 1
    namespace: str | None = Field(None, description="the tool namespace the function belongs to")


class CustomToolCallOut(_Strict):
    type: Literal["custom_tool_call"]
    name: str
    input: str
    call_id: str | None = None
    chunks: Chunks = 1
    namespace: str | None = Field(None, description="the tool namespace the tool belongs to")


class WebSearchCallOut(_Strict):
    """A hosted web search the service ran: its status events, then the item with its `search` action."""

    type: Literal["web_search_call"]
    query: str


class FileSearchCallOut(_Strict):
    """A hosted file search the service ran for these queries: its status events, then the item."""

    type: Literal["file_search_call"]
    queries: list[str] = Field(min_length=1)


class ImageGenerationCallOut(_Strict):
    """A hosted image generation: a `partial_image` event per partial image, then the item with the final image
    (each base64, as the service sends them)."""

    type: Literal["image_generation_call"]
    result: str
    partial_images: list[str] = []


class CodeInterpreterCallOut(_Strict):
    """Hosted code the service ran: its code in `chunks` deltas, interpreting, completed, then the item."""

    type: Literal["code_interpreter_call"]
    code: str
    chunks: Chunks = 1
    container_id: str = "cntr_rrkit"


class McpCallOut(_Strict):
    """A call of a remote MCP server's tool: its arguments in `chunks` deltas, then the item with `output`; with
    `error`, the call failed with that message."""

    type: Literal["mcp_call"]
    server_label: str
    name: str
    arguments: Arguments = "{}"
    output: str = ""
    chunks: Chunks = 1
    error: str | None = None


class McpListToolsOut(_Strict):
    """The tools a remote MCP server offers (`{name, input_schema, ...}` each), as the service lists them; with
    `error`, the listing failed."""

    type: Literal["mcp_list_tools"]
    server_label: str
    tools: list[dict[str, Any]] = []
    error: str | None = None


class CompactionOut(_Strict):
    """The service's compaction of the conversation: a compacting event, then the item with the opaque
    `encrypted_content` a client sends back in place of what it replaced."""

    type: Literal["compaction"]
    encrypted_content: str


class ShellCallOut(_Strict):
    """Shell commands for the client to run (the shell tool): each streamed as shell_call_command events, then
    the item with `action.commands`."""

    type: Literal["shell_call"]
    commands: list[str] = Field(min_length=1)
    call_id: str | None = None
    timeout_ms: Annotated[int, Field(ge=0)] | None = None
    max_output_length: Annotated[int, Field(ge=0)] | None = None
    environment: dict[str, Any] | None = Field(None, description="where to run them: {type: local}, a container")

    @property
    def action(self) -> dict[str, Any]:
        """The action's fields besides its commands."""
        return self.model_dump(include={"timeout_ms", "max_output_length"}, exclude_none=True)


class ShellCommandOutput(_Strict):
    """What one command of a shell call printed, and how it ended."""

    stdout: str = ""
    stderr: str = ""
    exit_code: int | None = Field(0, description="null: the command timed out")

    @property
    def sent(self) -> dict[str, Any]:
        """As the item holds it: `outcome` an exit with its code, or a timeout."""
        outcome = {"type": "timeout"} if self.exit_code is None else {"type": "exit", "exit_code": self.exit_code}
        return {"stdout": self.stdout, "stderr": self.stderr, "outcome": outcome}


class ShellCallOutputOut(_Strict):
    """What the commands of a shell call printed, in command order: a content delta and done per command."""

    type: Literal["shell_call_output"]
    call_id: str
    output: list[ShellCommandOutput] = Field(min_length=1)


class AudioOut(_Strict):
    """Spoken output, which belongs to no output item: the transcript in `chunks` deltas, then the audio, one
    delta per piece (base64)."""

    type: Literal["audio"]
    transcript: str = ""
    audio: list[str] = []
    chunks: Chunks = 1


ItemStatus = Literal["in_progress", "completed", "incomplete"]


class WholeItemOut(_Strict):
    """An item that streams nothing of its own: the service sends it whole, added then done."""

    type: str
    added_status: ClassVar[str | None] = "in_progress"  # None: the item type knows no in_progress, added as done
    makes_call_id: ClassVar[bool] = False  # a call_id is made where none is given (a call, an output that states one)

    def asks_client(self) -> bool:
        """A call the client must run and answer (a call_id is made for it where none is given)."""
        return self.makes_call_id

    def item_fields(self) -> dict[str, Any]:
        """The item's own fields as sent (all but its id and type)."""
        return self.model_dump(exclude={"type"}, exclude_none=True)


class FunctionCallOutputOut(WholeItemOut):
    """What a function call (its `call_id`) returned, as a conversation holds it: text, or input content parts."""

    type: Literal["function_call_output"]
    call_id: str
    output: str | list[dict[str, Any]] = ""
    status: ItemStatus = "completed"


class CustomToolCallOutputOut(WholeItemOut):
    """What a custom tool call (its `call_id`) returned: text, or input content parts."""

    type: Literal["custom_tool_call_output"]
    call_id: str
    output: str | list[dict[str, Any]] = ""
    status: ItemStatus = "completed"


class LocalShellCallOut(WholeItemOut):
    """A command for the client to run on its own machine (the local_shell tool): its argv and environment."""

    makes_call_id = True
    type: Literal["local_shell_call"]
    command: list[str] = Field(min_length=1)
    env: dict[str, str] = {}
    working_directory: str | None = None
    timeout_ms: Annotated[int, Field(ge=0)] | None = None
    user: str | None = None
    call_id: str | None = None
    status: ItemStatus = "completed"

    def item_fields(self) -> dict[str, Any]:
        exec_fields = self.model_dump(include={"command", "env", "working_directory", "timeout_ms", "user"})
        action = {"type": "exec", **{name: value for name, value in exec_fields.items() if value is not None}}
        return {"call_id": self.call_id, "action": action, "status": self.status}


class LocalShellCallOutputOut(WholeItemOut):
    """What a local shell call (its `call_id`, made where none is given) printed."""

    makes_call_id = True
    type: Literal["local_shell_call_output"]
    output: str
    call_id: str | None = None
    status: ItemStatus = "completed"

    def asks_client(self) -> bool:
        return False


class ComputerCallOut(WholeItemOut):
    """A computer-use action for the client to perform: `{type: click, button, x, y}`, `{type: screenshot}`, ..."""

    makes_call_id = True
    type: Literal["computer_call"]
    action: dict[str, Any]
    call_id: str | None = None
    pending_safety_checks: list[dict[str, Any]] = []
    status: ItemStatus = "completed"


class ComputerCallOutputOut(WholeItemOut):
    """The screenshot a computer call (its `call_id`) answered with: an image URL or a file id."""

    added_status = None
    type: Literal["computer_call_output"]
    call_id: str
    image_url: str | None = None
    file_id: str | None = None
    acknowledged_safety_checks: list[dict[str, Any]] = []
    status: Literal["in_progress", "completed", "incomplete", "failed"] = "completed"

    def item_fields(self) -> dict[str, Any]:
        shot = self.model_dump(include={"image_url", "file_id"}, exclude_none=True)
        fields = self.model_dump(include={"call_id", "acknowledged_safety_checks", "status"})
        return {**fields, "output": {"type": "computer_screenshot", **shot}}


class ApplyPatchCallOut(WholeItemOut):
    """A file change for the client to apply (the apply_patch tool): create or update `path` with `diff`, or
    delete it."""

    makes_call_id = True
    type: Literal["apply_patch_call"]
    operation: Literal["create_file", "update_file", "delete_file"]
    path: str
    diff: str | None = Field(None, description="the change (a V4A diff); not for delete_file")
    call_id: str | None = None
    status: Literal["in_progress", "completed"] = "completed"

    @model_validator(mode="after")
    def _diff_fits(self) -> Self:
        if (self.diff is None) != (self.operation == "delete_file"):
            raise ValueError(f"{self.operation} {'takes no' if self.diff is not None else 'needs a'} diff")
        return self

    def item_fields(self) -> dict[str, Any]:
        operation = self.model_dump(include={"path", "diff"}, exclude_none=True)
        return {"call_id": self.call_id, "operation": {"type": self.operation, **operation}, "status": self.status}


class ApplyPatchCallOutputOut(WholeItemOut):
    """How applying a patch (its `call_id`) went: completed or failed, with what the client said."""

    added_status = None
    type: Literal["apply_patch_call_output"]
    call_id: str
    status: Literal["completed", "failed"] = "completed"
    output: str | None = None


class McpApprovalRequestOut(WholeItemOut):
    """The service asks the client to approve a call of a remote MCP server's tool."""

    type: Literal["mcp_approval_request"]
    server_label: str
    name: str
    arguments: Arguments = "{}"


class McpApprovalResponseOut(WholeItemOut):
    """The answer to an MCP approval request (its `approval_request_id`)."""

    type: Literal["mcp_approval_response"]
    approval_request_id: str
    approve: bool
    reason: str | None = None


class ProgramOut(WholeItemOut):
    """JavaScript run by programmatic tool calling, with the opaque `fingerprint` a client must send back."""

    makes_call_id = True
    type: Literal["program"]
    code: str
    fingerprint: str = ""
    call_id: str | None = None


class ProgramOutputOut(WholeItemOut):
    """What a program (its `call_id`) produced."""

    added_status = None
    type: Literal["program_output"]
    call_id: str
    result: str
    status: Literal["completed", "incomplete"] = "completed"


class _ToolSearchItem(WholeItemOut):
    execution: Literal["server", "client"] = "server"
    call_id: str | None = None
    status: ItemStatus = "completed"


class ToolSearchCallOut(_ToolSearchItem):
    """A search for tools, run by the service (`execution: server`) or asked of the client (`client`)."""

    type: Literal["tool_search_call"]
    arguments: Any = {}

    def asks_client(self) -> bool:
        return self.execution == "client"


class ToolSearchOutputOut(_ToolSearchItem):
    """The tools a tool search found (tool definitions, `{type: function, name, parameters, strict}` each); its
    `call_id` stated, null for a search the service ran."""

    type: Literal["tool_search_output"]
    tools: list[dict[str, Any]] = []

    def item_fields(self) -> dict[str, Any]:
        return {**super().item_fields(), "call_id": self.call_id}


class AdditionalToolsOut(WholeItemOut):
    """Tool definitions made available from this item on, and the role that provided them."""

    type: Literal["additional_tools"]
    tools: list[dict[str, Any]] = []
    role: Literal["unknown", "user", "assistant", "system", "critic", "discriminator", "developer", "tool"] = (
        "developer"
    )


WHOLE_ITEMS: tuple[type[WholeItemOut], ...] = (
    FunctionCallOutputOut,
    CustomToolCallOutputOut,
    LocalShellCallOut,
    LocalShellCallOutputOut,
    ComputerCallOut,
    ComputerCallOutputOut,
    ApplyPatchCallOut,
    ApplyPatchCallOutputOut,
    McpApprovalRequestOut,
    McpApprovalResponseOut,
    ProgramOut,
    ProgramOutputOut,
    ToolSearchCallOut,
    ToolSearchOutputOut,
    AdditionalToolsOut,
)
"""The output item kinds sent whole (added, then done), written by one writer."""


def _output_type(value: Any) -> str:
    """An output item without `type` is a text message: `- text: Hello` is enough in a file."""
    if isinstance(value, dict):
        return str(value.get("type", "message"))
    return str(getattr(value, "type", "message"))


Output = Annotated[
    Annotated[MessageOut, Tag("message")]
    | Annotated[RefusalOut, Tag("refusal")]
    | Annotated[ReasoningOut, Tag("reasoning")]
    | Annotated[FunctionCallOut, Tag("function_call")]
    | Annotated[CustomToolCallOut, Tag("custom_tool_call")]
    | Annotated[WebSearchCallOut, Tag("web_search_call")]
    | Annotated[FileSearchCallOut, Tag("file_search_call")]
    | Annotated[ImageGenerationCallOut, Tag("image_generation_call")]
    | Annotated[CodeInterpreterCallOut, Tag("code_interpreter_call")]
    | Annotated[McpCallOut, Tag("mcp_call")]
    | Annotated[McpListToolsOut, Tag("mcp_list_tools")]
    | Annotated[CompactionOut, Tag("compaction")]
    | Annotated[ShellCallOut, Tag("shell_call")]
    | Annotated[ShellCallOutputOut, Tag("shell_call_output")]
    | Annotated[AudioOut, Tag("audio")]
    | Annotated[FunctionCallOutputOut, Tag("function_call_output")]
    | Annotated[CustomToolCallOutputOut, Tag("custom_tool_call_output")]
    | Annotated[LocalShellCallOut, Tag("local_shell_call")]
    | Annotated[LocalShellCallOutputOut, Tag("local_shell_call_output")]
    | Annotated[ComputerCallOut, Tag("computer_call")]
    | Annotated[ComputerCallOutputOut, Tag("computer_call_output")]
    | Annotated[ApplyPatchCallOut, Tag("apply_patch_call")]
    | Annotated[ApplyPatchCallOutputOut, Tag("apply_patch_call_output")]
    | Annotated[McpApprovalRequestOut, Tag("mcp_approval_request")]
    | Annotated[McpApprovalResponseOut, Tag("mcp_approval_response")]
    | Annotated[ProgramOut, Tag("program")]
    | Annotated[ProgramOutputOut, Tag("program_output")]
    | Annotated[ToolSearchCallOut, Tag("tool_search_call")]
    | Annotated[ToolSearchOutputOut, Tag("tool_search_output")]
    | Annotated[AdditionalToolsOut, Tag("additional_tools")],
    Discriminator(_output_type),
]

OUTPUT_TYPES: tuple[str, ...] = tuple(get_args(tagged)[1].tag for tagged in get_args(get_args(Output)[0]))
"""Every `type` an output entry may have, in the union's order."""
