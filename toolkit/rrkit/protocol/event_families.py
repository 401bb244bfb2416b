"""What the event-order checker (`order`) knows of each event family, as data: a family's streamed content
(`FAMILIES`), the parts its events open and close (`PARTS`), a hosted tool call's status events (`STATUS_FLOWS`), the
events that count themselves (`COUNTED`) or belong to an item of one type (`ITEM_EVENTS`): a new family is a row."""

from __future__ import annotations

from typing import NamedTuple

from . import events as ev
from .consistency import PART


class Family(NamedTuple):
    """The streamed content of one kind of output item: its `delta` events, then a `done` event whose `field`
    repeats the joined deltas; `opened_by`, the event that must open the part (at the same part index) first;
    `in_item`, where the item's output_item.done holds the done event's field again (`PART`: the part index)."""

    item_type: str
    delta: str
    done: str
    field: str
    opened_by: str | None = None
    in_item: tuple[str, ...] | None = None


FAMILIES: tuple[Family, ...] = (
    Family("message", ev.TEXT_DELTA, ev.TEXT_DONE, "text", ev.PART_ADDED, ("content", PART, "text")),
    Family("message", ev.REFUSAL_DELTA, ev.REFUSAL_DONE, "refusal", ev.PART_ADDED, ("content", PART, "refusal")),
    Family(
        "reasoning",
        ev.SUMMARY_TEXT_DELTA,
        ev.SUMMARY_TEXT_DONE,
        "text",
        ev.SUMMARY_PART_ADDED,
        ("summary", PART, "text"),
    ),
    Family("reasoning", ev.REASONING_TEXT_DELTA, ev.REASONING_TEXT_DONE, "text"),
    Family("function_call", ev.ARGUMENTS_DELTA, ev.ARGUMENTS_DONE, "arguments", in_item=("arguments",)),
    Family("custom_tool_call", ev.CUSTOM_INPUT_DELTA, ev.CUSTOM_INPUT_DONE, "input", in_item=("input",)),
    Family("code_interpreter_call", ev.CODE_DELTA, ev.CODE_DONE, "code", in_item=("code",)),
    Family("mcp_call", ev.MCP_ARGUMENTS_DELTA, ev.MCP_ARGUMENTS_DONE, "arguments", in_item=("arguments",)),
    Family("shell_call", ev.SHELL_COMMAND_DELTA, ev.SHELL_COMMAND_DONE, "command", ev.SHELL_COMMAND_ADDED),
)
"""Raw reasoning text and shell commands are not held against the done item: a done reasoning item may leave its
raw text out, and where a shell call's done item keeps each command the SDK's types do not say."""


class PartFlow(NamedTuple):
    """A part of an item (a message's content, a reasoning item's summary: its item type is the events',
    `ITEM_EVENTS`) that its own events open and close (`opened_by`, `closed_by`, at the same part index, named by
    `index_field`); `contents`: by the part's type (`part.type` of the opening event), the done event its
    content ends with, which comes before the part is closed."""

    opened_by: str
    closed_by: str
    index_field: str
    contents: dict[str, str]


PARTS: tuple[PartFlow, ...] = (
    PartFlow(ev.PART_ADDED, ev.PART_DONE, "content_index", {"output_text": ev.TEXT_DONE, "refusal": ev.REFUSAL_DONE}),
    PartFlow(ev.SUMMARY_PART_ADDED, ev.SUMMARY_PART_DONE, "summary_index", {"summary_text": ev.SUMMARY_TEXT_DONE}),
)


class StatusFlow(NamedTuple):
    """The status events of a hosted tool call, in the order they go: `opening` once, then any of `working`, then
    exactly one of `ends`, all before the item's output_item.done."""

    item_type: str
    opening: str
    working: tuple[str, ...]
    ends: tuple[str, ...]


STATUS_FLOWS: tuple[StatusFlow, ...] = (
    StatusFlow("web_search_call", ev.WEB_SEARCH_IN_PROGRESS, (ev.WEB_SEARCH_SEARCHING,), (ev.WEB_SEARCH_COMPLETED,)),
    StatusFlow(
        "file_search_call", ev.FILE_SEARCH_IN_PROGRESS, (ev.FILE_SEARCH_SEARCHING,), (ev.FILE_SEARCH_COMPLETED,)
    ),
    StatusFlow(
        "code_interpreter_call",
        ev.CODE_INTERPRETER_IN_PROGRESS,
        (ev.CODE_INTERPRETER_INTERPRETING,),
        (ev.CODE_INTERPRETER_COMPLETED,),
    ),
    StatusFlow(
        "image_generation_call",
        ev.IMAGE_GEN_IN_PROGRESS,
        (ev.IMAGE_GEN_GENERATING, ev.IMAGE_GEN_PARTIAL_IMAGE),
        (ev.IMAGE_GEN_COMPLETED,),
    ),
    StatusFlow("mcp_call", ev.MCP_CALL_IN_PROGRESS, (), (ev.MCP_CALL_COMPLETED, ev.MCP_CALL_FAILED)),
    StatusFlow(
        "mcp_list_tools", ev.MCP_LIST_TOOLS_IN_PROGRESS, (), (ev.MCP_LIST_TOOLS_COMPLETED, ev.MCP_LIST_TOOLS_FAILED)
    ),
)
"""A call whose status events never began (an item added and done bare) is let be; one that began is held to
its flow to the end."""

COUNTED: dict[str, str] = {ev.IMAGE_GEN_PARTIAL_IMAGE: "partial_image_index"}
"""Events that number themselves within their item (by event type: the field), 0, 1, 2, ..."""


ITEM_EVENTS: dict[str, str] = {
    ev.PART_ADDED: "message",
    ev.PART_DONE: "message",
    ev.ANNOTATION_ADDED: "message",
    ev.SUMMARY_PART_ADDED: "reasoning",
    ev.SUMMARY_PART_DONE: "reasoning",
    ev.WEB_SEARCH_IN_PROGRESS: "web_search_call",
    ev.WEB_SEARCH_SEARCHING: "web_search_call",
    ev.WEB_SEARCH_COMPLETED: "web_search_call",
    ev.FILE_SEARCH_IN_PROGRESS: "file_search_call",
    ev.FILE_SEARCH_SEARCHING: "file_search_call",
    ev.FILE_SEARCH_COMPLETED: "file_search_call",
    ev.IMAGE_GEN_IN_PROGRESS: "image_generation_call",
    ev.IMAGE_GEN_GENERATING: "image_generation_call",
    ev.IMAGE_GEN_PARTIAL_IMAGE: "image_generation_call",
    ev.IMAGE_GEN_COMPLETED: "image_generation_call",
    ev.CODE_INTERPRETER_IN_PROGRESS: "code_interpreter_call",
    ev.CODE_INTERPRETER_INTERPRETING: "code_interpreter_call",
    ev.CODE_INTERPRETER_COMPLETED: "code_interpreter_call",
    ev.MCP_CALL_IN_PROGRESS: "mcp_call",
    ev.MCP_CALL_COMPLETED: "mcp_call",
    ev.MCP_CALL_FAILED: "mcp_call",
    ev.MCP_LIST_TOOLS_IN_PROGRESS: "mcp_list_tools",
    ev.MCP_LIST_TOOLS_COMPLETED: "mcp_list_tools",
    ev.MCP_LIST_TOOLS_FAILED: "mcp_list_tools",
    ev.SHELL_COMMAND_ADDED: "shell_call",
    ev.SHELL_OUTPUT_DELTA: "shell_call_output",
    ev.SHELL_OUTPUT_DONE: "shell_call_output",
    ev.COMPACTING: "compaction",
}
"""The other events that belong to an output item of one type (by event type: the item type). The shell output
content events stream a `{stdout, stderr}` object, not text: they are held to their item, not to a join."""

NEEDS_PART: dict[str, str] = {ev.ANNOTATION_ADDED: ev.PART_ADDED}
"""Events other than deltas that come after the event opening their part (by event type: the opening event)."""

NOT_ITEM_BOUND = frozenset(
    {ev.AUDIO_DELTA, ev.AUDIO_DONE, ev.AUDIO_TRANSCRIPT_DELTA, ev.AUDIO_TRANSCRIPT_DONE, ev.ERROR}
)
"""Response events that belong to no output item: never read as referring to one."""

LIFECYCLE = ev.LIFECYCLE_TYPES | {ev.QUEUED}
"""The events that carry the whole response object (its id held to one)."""

ITEM_TYPE_OF = {
    **ITEM_EVENTS,
    **{family.delta: family.item_type for family in FAMILIES},
    **{family.done: family.item_type for family in FAMILIES},
}
"""The type of the output item each event of an item's content belongs to (by event type)."""

ITEM_BOUND = frozenset({ev.ITEM_ADDED, ev.ITEM_DONE, *ITEM_TYPE_OF})
"""Every event type the checker holds to an output item: the item's own added and done events, and its content."""
