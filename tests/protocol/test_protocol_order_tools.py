"""Streams of the hosted tools and the other item families the SDK defines (web and file search, image generation,
code interpreter, MCP calls and tool lists, shell calls and their output, compaction, text annotations), each
event one the official SDK parses: a well-formed stream of each passes, and one broken one way breaks that rule."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from openai._models import validate_type
from openai.types.responses.response_stream_event import ResponseStreamEvent

from rrkit.protocol import IdGenerator, ResponseEvents, Rule, Violation, check_order
from rrkit.protocol import events as ev
from rrkit.protocol.event_families import FAMILIES, ITEM_EVENTS, PARTS, STATUS_FLOWS

Event = dict[str, Any]
UNNAMED = {ev.SHELL_COMMAND_ADDED, ev.SHELL_COMMAND_DELTA, ev.SHELL_COMMAND_DONE}
"""The item events whose SDK model names the item by output_index alone (no item_id)."""


def stream(item: Event, middle: list[tuple[str, dict[str, Any]]], done: dict[str, Any]) -> list[Event]:
    """A response whose one output item is `item`: added, the `middle` events (type, fields), done as `item`
    updated with `done`; response.completed lists the done item."""
    r = ResponseEvents({"model": "gpt-test"}, ids=IdGenerator.counting(), created_at=1)
    where = {"output_index": 0}
    named = {**where, "item_id": item["id"]}
    done_item = {**item, **done}
    events = [
        *r.start(),
        {"type": ev.ITEM_ADDED, **where, "item": item},
        *({"type": kind, **(where if kind in UNNAMED else named), **fields} for kind, fields in middle),
        {"type": ev.ITEM_DONE, **where, "item": done_item},
    ]
    r.output = [done_item]
    events += r.completed()
    return [{**event, "sequence_number": number} for number, event in enumerate(events)]


def web_search() -> list[Event]:
    action = {"type": "search", "query": "q"}
    item = {"id": "ws_1", "type": "web_search_call", "status": "in_progress", "action": action}
    kinds = [ev.WEB_SEARCH_IN_PROGRESS, ev.WEB_SEARCH_SEARCHING, ev.WEB_SEARCH_COMPLETED]
    return stream(item, [(kind, {}) for kind in kinds], {"status": "completed"})


def file_search() -> list[Event]:
    item = {"id": "fs_1", "type": "file_search_call", "status": "in_progress", "queries": ["q"]}
    kinds = [ev.FILE_SEARCH_IN_PROGRESS, ev.FILE_SEARCH_SEARCHING, ev.FILE_SEARCH_COMPLETED]
    return stream(item, [(kind, {}) for kind in kinds], {"status": "completed", "results": []})


def image_generation() -> list[Event]:
    item = {"id": "ig_1", "type": "image_generation_call", "status": "in_progress"}
    partial = {"partial_image_b64": "aGk=", "partial_image_index": 0}
    middle = [
        (ev.IMAGE_GEN_IN_PROGRESS, {}),
        (ev.IMAGE_GEN_GENERATING, {}),
        (ev.IMAGE_GEN_PARTIAL_IMAGE, partial),
        (ev.IMAGE_GEN_COMPLETED, {}),
    ]
    return stream(item, middle, {"status": "completed", "result": "aGk="})


def code_interpreter() -> list[Event]:
    item = {"id": "ci_1", "type": "code_interpreter_call", "status": "in_progress", "container_id": "cntr_1"}
    middle = [
        (ev.CODE_INTERPRETER_IN_PROGRESS, {}),
        (ev.CODE_DELTA, {"delta": "print("}),
        (ev.CODE_DELTA, {"delta": "1)"}),
        (ev.CODE_DONE, {"code": "print(1)"}),
        (ev.CODE_INTERPRETER_INTERPRETING, {}),
        (ev.CODE_INTERPRETER_COMPLETED, {}),
    ]
    return stream(item, middle, {"status": "completed", "code": "print(1)", "outputs": []})


def mcp_call(ending: str = ev.MCP_CALL_COMPLETED) -> list[Event]:
    item = {"id": "mcp_1", "type": "mcp_call", "name": "lookup", "server_label": "docs", "arguments": ""}
    middle = [
        (ev.MCP_CALL_IN_PROGRESS, {}),
        (ev.MCP_ARGUMENTS_DELTA, {"delta": '{"q":'}),
        (ev.MCP_ARGUMENTS_DELTA, {"delta": ' "x"}'}),
        (ev.MCP_ARGUMENTS_DONE, {"arguments": '{"q": "x"}'}),
        (ending, {}),
    ]
    return stream(item, middle, {"arguments": '{"q": "x"}', "status": "completed", "output": "found"})


def mcp_list_tools(ending: str = ev.MCP_LIST_TOOLS_COMPLETED) -> list[Event]:
    item = {"id": "mcpl_1", "type": "mcp_list_tools", "server_label": "docs", "tools": []}
    tools = [{"name": "lookup", "input_schema": {"type": "object"}}]
    return stream(item, [(ev.MCP_LIST_TOOLS_IN_PROGRESS, {}), (ending, {})], {"tools": tools})


def shell_call() -> list[Event]:
    action = {"commands": []}
    item = {"id": "sh_1", "type": "shell_call", "call_id": "call_1", "status": "in_progress", "action": action}
    at = {"command_index": 0}
    middle = [
        (ev.SHELL_COMMAND_ADDED, {**at, "command": ""}),
        (ev.SHELL_COMMAND_DELTA, {**at, "delta": "ls"}),
        (ev.SHELL_COMMAND_DELTA, {**at, "delta": " -la"}),
        (ev.SHELL_COMMAND_DONE, {**at, "command": "ls -la"}),
    ]
    return stream(item, middle, {"status": "completed", "action": {"commands": ["ls -la"]}})


def shell_call_output() -> list[Event]:
    item = {"id": "sho_1", "type": "shell_call_output", "call_id": "call_1", "status": "in_progress", "output": []}
    output = [{"stdout": "hi\n", "stderr": "", "outcome": {"type": "exit", "exit_code": 0}}]
    middle = [
        (ev.SHELL_OUTPUT_DELTA, {"command_index": 0, "delta": {"stdout": "hi\n"}}),
        (ev.SHELL_OUTPUT_DONE, {"command_index": 0, "output": output}),
    ]
    return stream(item, middle, {"status": "completed", "output": output})


def compaction() -> list[Event]:
    item = {"id": "cmp_1", "type": "compaction", "encrypted_content": "enc"}
    return stream(item, [(ev.COMPACTING, {})], {})


def annotated_message() -> list[Event]:
    item = {"id": "msg_1", "type": "message", "role": "assistant", "status": "in_progress", "content": []}
    citation = {"type": "url_citation", "url": "https://a.example", "title": "A", "start_index": 0, "end_index": 2}
    text = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
    full = {**text, "text": "Hi", "annotations": [citation]}
    at = {"content_index": 0}
    middle = [
        (ev.PART_ADDED, {**at, "part": text}),
        (ev.TEXT_DELTA, {**at, "delta": "Hi", "logprobs": []}),
        (ev.TEXT_DONE, {**at, "text": "Hi", "logprobs": []}),
        (ev.ANNOTATION_ADDED, {**at, "annotation_index": 0, "annotation": citation}),
        (ev.PART_DONE, {**at, "part": full}),
    ]
    return stream(item, middle, {"status": "completed", "content": [full]})


STREAMS: dict[str, Callable[[], list[Event]]] = {
    "web-search": web_search,
    "file-search": file_search,
    "image-generation": image_generation,
    "code-interpreter": code_interpreter,
    "mcp-call": mcp_call,
    "mcp-call-failed": lambda: mcp_call(ev.MCP_CALL_FAILED),
    "mcp-list-tools": mcp_list_tools,
    "mcp-list-tools-failed": lambda: mcp_list_tools(ev.MCP_LIST_TOOLS_FAILED),
    "shell-call": shell_call,
    "shell-call-output": shell_call_output,
    "compaction": compaction,
    "annotated-message": annotated_message,
}
NAMES = list(STREAMS)


def rules_of(violations: list[Violation]) -> set[Rule]:
    return {violation.rule for violation in violations}


def item_position(events: list[Event], kind: str) -> int:
    return next(index for index, event in enumerate(events) if event["type"] == kind)


def renumbered(events: list[Event]) -> list[Event]:
    return [{**event, "sequence_number": number} for number, event in enumerate(events)]


@pytest.mark.parametrize("name", NAMES)
def test_order_tool_stream_is_one_the_sdk_parses(name: str) -> None:
    for event in STREAMS[name]():
        parsed = validate_type(type_=ResponseStreamEvent, value=event)  # type: ignore[arg-type]
        assert parsed.type == event["type"]


def test_order_tool_streams_cover_every_item_event_row_and_family_the_builder_does_not_stream() -> None:
    r = ResponseEvents({"model": "gpt-test"}, ids=IdGenerator.counting(), created_at=1)
    r.reasoning(["a"], text="b")
    r.message("c")
    r.refusal("d")
    r.function_call("f", "{}")
    r.custom_tool_call("g", "")
    kinds = {event["type"] for build in STREAMS.values() for event in build()} | {event["type"] for event in r.events}
    assert set(ITEM_EVENTS) | {family.delta for family in FAMILIES} <= kinds


@pytest.mark.parametrize("name", NAMES)
def test_order_well_formed_tool_stream_passes(name: str) -> None:
    events = STREAMS[name]()
    assert check_order(events) == []
    for end in range(len(events) + 1):
        assert check_order(events[:end], complete=False) == [], f"prefix of {end} events"


def left_unfinished(kind: str) -> list[Rule]:
    """The rule an item done without its event of type `kind` breaks: its status flow, its part or its streamed
    content not ended."""
    if any(kind in flow.ends for flow in STATUS_FLOWS):
        return [Rule.STATUS_ORDER]
    if any(kind == part.closed_by for part in PARTS):
        return [Rule.PART_CLOSED]
    return [Rule.CONTENT_DONE] if any(kind == family.done for family in FAMILIES) else []


@pytest.mark.parametrize("name", NAMES)
def test_order_tool_event_before_its_item_is_added_breaks_the_item_added_rule(name: str) -> None:
    events = STREAMS[name]()
    last = events.pop(item_position(events, ev.ITEM_DONE) - 1)
    events.insert(item_position(events, ev.ITEM_ADDED), last)
    violations = check_order(renumbered(events))
    done = item_position(events, ev.ITEM_DONE)  # the item is done without its last event, which came too early
    expected = [(Rule.ITEM_ADDED_FIRST, 2), *((rule, done) for rule in left_unfinished(last["type"]))]
    assert [(v.rule, v.index) for v in violations] == expected


@pytest.mark.parametrize("name", NAMES)
def test_order_tool_event_after_its_item_is_done_breaks_the_item_open_rule(name: str) -> None:
    events = STREAMS[name]()
    done = item_position(events, ev.ITEM_DONE)
    events[done - 1], events[done] = events[done], events[done - 1]
    violations = check_order(renumbered(events))
    expected = [*((rule, done - 1) for rule in left_unfinished(events[done]["type"])), (Rule.ITEM_OPEN, done)]
    assert [(v.rule, v.index) for v in violations] == expected


@pytest.mark.parametrize("name", NAMES)
def test_order_tool_events_on_an_item_of_another_type_break_the_item_type_rule(name: str) -> None:
    events = STREAMS[name]()
    added = events[item_position(events, ev.ITEM_ADDED)]["item"]
    added["type"] = "function_call" if added["type"] != "function_call" else "message"
    violations = check_order(events)
    assert rules_of(violations) == {Rule.ITEM_TYPE}
    assert len(violations) == item_position(events, ev.ITEM_DONE) - item_position(events, ev.ITEM_ADDED) - 1


@pytest.mark.parametrize("name", [name for name in NAMES if name != "shell-call"])  # its events name no item_id
def test_order_tool_event_naming_another_item_breaks_the_item_id_rule(name: str) -> None:
    events = STREAMS[name]()
    events[item_position(events, ev.ITEM_DONE) - 1]["item_id"] = "other_1"
    assert [v.rule for v in check_order(events)] == [Rule.ITEM_ID]


DELTA_STREAMS = {
    "code-interpreter": ev.CODE_DONE,
    "mcp-call": ev.MCP_ARGUMENTS_DONE,
    "shell-call": ev.SHELL_COMMAND_DONE,
}


@pytest.mark.parametrize(("name", "done_type"), list(DELTA_STREAMS.items()))
def test_order_tool_done_event_differing_from_its_deltas_breaks_the_done_rule(name: str, done_type: str) -> None:
    events = STREAMS[name]()
    family = next(family for family in FAMILIES if family.done == done_type)
    at = item_position(events, done_type)
    events[at][family.field] += " "
    kept = events[item_position(events, ev.ITEM_DONE)]["item"]
    if family.in_item is not None:
        kept[family.in_item[0]] = events[at][family.field]  # the done item says what the done event says
    assert [(v.rule, v.index) for v in check_order(events)] == [(Rule.DONE_MATCHES_DELTAS, at)]


@pytest.mark.parametrize("name", ["code-interpreter", "mcp-call"])
def test_order_tool_done_item_not_holding_its_done_events_value_breaks_the_repeat_rule(name: str) -> None:
    events = STREAMS[name]()
    done = item_position(events, ev.ITEM_DONE)
    item = events[done]["item"]
    field = "code" if "code" in item else "arguments"
    item[field] = "changed"
    assert [(v.rule, v.index) for v in check_order(events)] == [(Rule.DONE_ITEM_REPEATS, done)]


def test_order_annotation_before_its_content_part_breaks_the_part_rule() -> None:
    events = annotated_message()
    annotation = events.pop(item_position(events, ev.ANNOTATION_ADDED))
    events.insert(item_position(events, ev.PART_ADDED), annotation)
    violations = check_order(renumbered(events))
    assert [v.rule for v in violations] == [Rule.PART_ADDED_FIRST]
    assert violations[0].detail.startswith(f"{ev.ANNOTATION_ADDED} at content_index 0 before")


def test_order_shell_command_delta_before_its_command_is_added_breaks_the_part_rule() -> None:
    events = shell_call()
    events[item_position(events, ev.SHELL_COMMAND_ADDED)]["command_index"] = 1  # opens command 1, not 0
    violations = check_order(events)
    assert [v.rule for v in violations] == [Rule.PART_ADDED_FIRST] * 2
    assert violations[0].detail == f"{ev.SHELL_COMMAND_DELTA} at command_index 0 before shell_call_command.added"


def test_order_shell_output_content_is_not_held_to_a_join_of_its_deltas() -> None:
    events = shell_call_output()
    done = events[item_position(events, ev.SHELL_OUTPUT_DONE)]
    done["output"] = [*copy.deepcopy(done["output"]), {"stdout": "…", "stderr": "", "outcome": {"type": "timeout"}}]
    assert check_order(events) == []  # {stdout, stderr} deltas: no text to join
