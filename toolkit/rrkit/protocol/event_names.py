"""The `type` of every event a Responses stream carries and of the frames rrkit keeps beside them, written once,
and the families they form (terminal, ending, lifecycle, delta)."""

__all__ = [
    "ANNOTATION_ADDED",
    "ARGUMENTS_DELTA",
    "ARGUMENTS_DONE",
    "AUDIO_DELTA",
    "AUDIO_DONE",
    "AUDIO_TRANSCRIPT_DELTA",
    "AUDIO_TRANSCRIPT_DONE",
    "CODEX_METADATA",
    "CODE_DELTA",
    "CODE_DONE",
    "CODE_INTERPRETER_COMPLETED",
    "CODE_INTERPRETER_INTERPRETING",
    "CODE_INTERPRETER_IN_PROGRESS",
    "COMPACTING",
    "COMPLETED",
    "CREATED",
    "CUSTOM_INPUT_DELTA",
    "CUSTOM_INPUT_DONE",
    "DELTA_TYPES",
    "ENDING_TYPES",
    "ERROR",
    "FAILED",
    "FILE_SEARCH_COMPLETED",
    "FILE_SEARCH_IN_PROGRESS",
    "FILE_SEARCH_SEARCHING",
    "IMAGE_GEN_COMPLETED",
    "IMAGE_GEN_GENERATING",
    "IMAGE_GEN_IN_PROGRESS",
    "IMAGE_GEN_PARTIAL_IMAGE",
    "INCOMPLETE",
    "IN_PROGRESS",
    "ITEM_ADDED",
    "ITEM_DONE",
    "LIFECYCLE_TYPES",
    "MCP_ARGUMENTS_DELTA",
    "MCP_ARGUMENTS_DONE",
    "MCP_CALL_COMPLETED",
    "MCP_CALL_FAILED",
    "MCP_CALL_IN_PROGRESS",
    "MCP_LIST_TOOLS_COMPLETED",
    "MCP_LIST_TOOLS_FAILED",
    "MCP_LIST_TOOLS_IN_PROGRESS",
    "METADATA",
    "PART_ADDED",
    "PART_DONE",
    "QUEUED",
    "RATE_LIMITS",
    "REASONING_TEXT_DELTA",
    "REASONING_TEXT_DONE",
    "REFUSAL_DELTA",
    "REFUSAL_DONE",
    "RRKIT_TYPES",
    "SHELL_COMMAND_ADDED",
    "SHELL_COMMAND_DELTA",
    "SHELL_COMMAND_DONE",
    "SHELL_OUTPUT_DELTA",
    "SHELL_OUTPUT_DONE",
    "SIDE_CHANNELS",
    "SIDE_FRAMES",
    "SSE_COMMENT",
    "SUMMARY_PART_ADDED",
    "SUMMARY_PART_DONE",
    "SUMMARY_TEXT_DELTA",
    "SUMMARY_TEXT_DONE",
    "TERMINAL_TYPES",
    "TEXT_DELTA",
    "TEXT_DONE",
    "UNPARSABLE",
    "WEB_SEARCH_COMPLETED",
    "WEB_SEARCH_IN_PROGRESS",
    "WEB_SEARCH_SEARCHING",
]


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
