"""Every output item type and every stream event type of the official SDK's unions, held to what a script writes
without raw `events:`: a script makes each of them, and the SDK parses every event strictly. A type the SDK adds
fails here until rrkit can script it."""

from __future__ import annotations

from typing import Any, get_args

import pytest
from openai.types.responses.response_output_item import ResponseOutputItem
from openai.types.responses.response_stream_event import ResponseStreamEvent

from rrkit.protocol import check_order
from rrkit.script import (
    Reply,
    Script,
    additional_tools,
    apply_patch_call,
    apply_patch_call_output,
    audio,
    code_interpreter_call,
    compaction,
    computer_call,
    computer_call_output,
    custom_tool_call,
    custom_tool_call_output,
    error_event,
    failed,
    file_search_call,
    function_call,
    function_call_output,
    image_generation_call,
    incomplete,
    local_shell_call,
    local_shell_call_output,
    mcp_approval_request,
    mcp_approval_response,
    mcp_call,
    mcp_list_tools,
    program,
    program_output,
    reasoning,
    refusal,
    reply,
    shell_call,
    shell_call_output,
    shell_output,
    text,
    tool_search_call,
    tool_search_output,
    web_search_call,
)
from rrkit.script.outputs import OUTPUT_TYPES

from ..sdk_strict import assert_sdk_accepts
from ..server.faultclient import Serve, sdk, stream

FUNCTION_TOOL = {"type": "function", "name": "get_weather", "parameters": {"type": "object"}, "strict": True}
CITATION = {"type": "url_citation", "url": "https://example.com/", "title": "Example", "start_index": 0, "end_index": 4}

EVERY_OUTPUT: list[Any] = [
    text("Here it is.", chunks=2, annotations=[CITATION]),
    refusal("No.", chunks=2),
    reasoning("Think.", text="Raw thought.", chunks=2),
    function_call("get_weather", {"city": "Paris"}, namespace="weather", chunks=2),
    function_call_output("call_a", "18 C"),
    custom_tool_call("apply_patch", "*** Begin Patch", namespace="edits", chunks=2),
    custom_tool_call_output("call_b", "Done."),
    web_search_call("rrkit"),
    file_search_call("rrkit"),
    image_generation_call("aW1hZ2U=", "cGFydA=="),
    code_interpreter_call("print(42)", chunks=2),
    mcp_call("docs", "search", {"q": "rrkit"}, "3 results", chunks=2),
    mcp_call("docs", "search", error="the server went away"),
    mcp_list_tools("docs", {"name": "search", "input_schema": {"type": "object"}}),
    mcp_list_tools("tickets", error="unreachable"),
    mcp_approval_request("docs", "delete", {"id": 7}),
    mcp_approval_response("mcpr_1", approve=False, reason="too risky"),
    local_shell_call("ls", "-l", env={"LANG": "C"}, working_directory="/tmp"),
    local_shell_call_output("a\nb\n"),
    shell_call("ls", "pwd", timeout_ms=10_000, environment={"type": "local"}),
    shell_call_output("call_c", shell_output("a\n"), shell_output(stderr="slow", exit_code=None)),
    apply_patch_call("update_file", "app.py", "@@\n-a\n+b\n"),
    apply_patch_call("delete_file", "old.py"),
    apply_patch_call_output("call_d", "failed", "no such file"),
    computer_call({"type": "click", "button": "left", "x": 10, "y": 20}),
    computer_call_output("call_e", image_url="data:image/png;base64,AA=="),
    program("return 1 + 1", fingerprint="fp_1"),
    program_output("call_f", "2"),
    tool_search_call({"query": "weather"}, execution="client"),
    tool_search_output(FUNCTION_TOOL),
    additional_tools(FUNCTION_TOOL, role="developer"),
    compaction("gAAAA-opaque"),
    audio("Hello there.", "UklGRg==", "AAAA", chunks=2),
]
"""One of every kind of output a script writes (some twice: a call that fails, a patch that deletes)."""

ENDINGS: dict[str, Reply] = {
    "completed": reply(*EVERY_OUTPUT),
    "failed": failed("server_error", None, text("Partial.")),  # a code inside the SDK's ResponseError literal
    "incomplete": incomplete("max_output_tokens", text("Cut.")),
    "error": error_event("Something broke.", "server_error"),
    "queued": Reply(output=[text("Waited.")], queued=True),
}


def _types(union: object) -> set[str]:
    found: set[str] = set()
    for model in get_args(union):
        found |= {str(literal) for literal in get_args(model.model_fields["type"].annotation)}
    return found


SDK_ITEM_TYPES = _types(get_args(ResponseOutputItem)[0])
SDK_EVENT_TYPES = _types(get_args(ResponseStreamEvent)[0])
SCRIPTABLE = set(OUTPUT_TYPES)
NOT_ITEMS = {"refusal", "audio"}  # a message's refusal part and the response's audio, written in the output list


def test_every_sdk_output_item_type_is_scriptable() -> None:
    assert not SDK_ITEM_TYPES - SCRIPTABLE, (
        f"SDK output item types a script cannot write: {SDK_ITEM_TYPES - SCRIPTABLE}"
    )
    assert SCRIPTABLE - NOT_ITEMS <= SDK_ITEM_TYPES


def test_the_catalogue_writes_every_kind_of_output() -> None:
    assert {output.type for output in EVERY_OUTPUT} == SCRIPTABLE


@pytest.mark.parametrize("transport", ["http", "ws"])
def test_every_sdk_event_type_is_scripted_and_parses_strictly(serve: Serve, transport: str) -> None:
    seen: set[str] = set()
    for ending, answer in ENDINGS.items():
        events = stream(serve(Script(default=answer)), transport)
        assert check_order(events) == [], ending
        for event in events:
            assert_sdk_accepts(event)
        seen |= {event["type"] for event in events}
    assert not SDK_EVENT_TYPES - seen, f"SDK event types no script makes: {sorted(SDK_EVENT_TYPES - seen)}"


def test_every_done_item_is_the_sdk_s_item_type(serve: Serve) -> None:
    events = stream(serve(Script(default=ENDINGS["completed"])), "http")
    done = [event["item"]["type"] for event in events if event["type"] == "response.output_item.done"]
    assert set(done) == SDK_ITEM_TYPES | {"message"}  # refusals are messages; audio is no item
    assert events[-1]["type"] == "response.completed"
    assert [item["type"] for item in events[-1]["response"]["output"]] == done


def test_the_sdk_s_own_stream_reads_every_kind_to_its_final_response(serve: Serve) -> None:
    server = serve(Script(default=ENDINGS["completed"]))
    with sdk(server).responses.stream(model="gpt-test", input="Hi") as sdk_stream:
        final = sdk_stream.get_final_response()
    assert len(final.output) == len([o for o in EVERY_OUTPUT if o.type != "audio"])
    assert final.output_text == "Here it is."
