"""Every kind of call a client runs is answered with the input item the protocol defines (issue 48): the table of
kinds is held to the newest SDK's item unions, each answer the reference client sends is an input item the SDK's
types accept and names its call by the right field, the fake server takes it (its input check is the API's), and a
result that cannot answer a call ends the turn with an error naming the call's kind."""

from __future__ import annotations

import re
import typing
from collections.abc import Callable
from typing import Any

import pydantic
import pytest
from openai.types.responses import response_input_item_param, response_output_item

from rrkit.client import UnanswerableCall
from rrkit.conform.seen import calls_sent, outputs_sent
from rrkit.protocol import Item
from rrkit.protocol.calls import ANSWERS, CLIENT_CALLS, CallResult, answer_to, client_call
from rrkit.script import Script, reply, text
from rrkit.script.builder import custom_tool_call, function_call
from rrkit.script.tool_items import (
    apply_patch_call,
    computer_call,
    local_shell_call,
    mcp_approval_request,
    shell_call,
    tool_search_call,
)

from ..errortrap import Serve
from .client_support import TRANSPORTS, served, wire_inputs


def _annotations(shape: Any) -> dict[str, str]:
    """A TypedDict's fields and their annotations as written (the SDK's modules defer them)."""
    annotations: dict[str, Any] = {}
    for klass in reversed(shape.__mro__):
        annotations.update(getattr(klass, "__annotations__", {}))
    return {name: getattr(value, "__forward_arg__", str(value)) for name, value in annotations.items()}


def _kind(shape: Any) -> str:
    """The `type` literal of an SDK item shape: a TypedDict (input) or a pydantic model (output)."""
    if hasattr(shape, "model_fields"):
        return str(typing.get_args(shape.model_fields["type"].annotation)[0])
    return re.findall(r"Literal\['([^']+)'\]", _annotations(shape)["type"])[0]


def required(kind: str) -> set[str]:
    """The fields the SDK's input item of that type requires."""
    return {name for name, text in _annotations(INPUT_SHAPES[kind]).items() if text.startswith("Required[")}


def _members(union: Any) -> list[Any]:
    args = typing.get_args(union)
    return list(typing.get_args(args[0]) if args and typing.get_origin(args[0]) is typing.Union else args)


INPUT_SHAPES: dict[str, Any] = {}
for _shape in _members(response_input_item_param.ResponseInputItemParam):
    INPUT_SHAPES.setdefault(_kind(_shape), _shape)
OUTPUT_TYPES = {_kind(shape) for shape in _members(response_output_item.ResponseOutputItem)}


def assert_sdk_input_item(item: Item) -> None:
    """The SDK's input item type of that name takes the item, every field it requires present."""
    shape = INPUT_SHAPES[str(item["type"])]
    pydantic.TypeAdapter(shape).validate_python(item)
    needed = required(str(item["type"]))
    assert needed <= set(item), f"{item['type']} lacks {sorted(needed - set(item))}"


def test_every_call_kind_is_an_sdk_output_item_answered_by_an_sdk_input_item_with_its_link_field() -> None:
    assert len(CLIENT_CALLS) == 8
    for kind in CLIENT_CALLS.values():
        assert kind.call_type in OUTPUT_TYPES and kind.call_type in INPUT_SHAPES
        assert kind.answer_type in INPUT_SHAPES
        assert kind.link in _annotations(INPUT_SHAPES[kind.answer_type]), kind


def test_every_answer_type_of_the_sdk_is_in_the_table() -> None:
    """The input items that answer something a client ran: named `..._output` or `..._response`, bar the
    outputs the service itself makes (a program's)."""
    answers = {name for name in INPUT_SHAPES if name.endswith(("_call_output", "_response", "tool_search_output"))}
    assert answers == set(ANSWERS)


CALLS: dict[str, tuple[Any, CallResult]] = {
    "function_call": (function_call("get_weather", {"city": "Paris"}, call_id="call_fn"), "sunny"),
    "custom_tool_call": (custom_tool_call("grep", "needle", call_id="call_custom"), "3 matches"),
    "local_shell_call": (local_shell_call("ls", "-l", call_id="call_local"), '{"stdout": "a.txt"}'),
    "shell_call": (shell_call("echo hi", call_id="call_shell"), "hi\n"),
    "apply_patch_call": (apply_patch_call("delete_file", "old.py", call_id="call_patch"), "deleted old.py"),
    "computer_call": (computer_call({"type": "screenshot"}, call_id="call_computer"), "data:image/png;base64,AA=="),
    "mcp_approval_request": (mcp_approval_request("deepwiki", "ask_question", {"q": "why"}), True),
    "tool_search_call": (
        tool_search_call({"query": "weather"}, execution="client", call_id="call_search"),
        [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}, "strict": False}],
    ),
}


CALLS_INDEX = {kind: index for index, kind in enumerate(CALLS)}


def test_the_table_covers_every_kind_this_test_runs() -> None:
    assert set(CALLS) == set(CLIENT_CALLS)


def every_kind_then_text() -> Script:
    return Script().queue(reply(*(output for output, _ in CALLS.values())), reply(text("All done.")))


def run_each(call: Item) -> CallResult:
    return CALLS[str(call["type"])][1]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_the_reference_client_answers_every_call_kind_with_the_protocols_input_item(
    serve: Serve, transport: str
) -> None:
    async with served(serve, every_kind_then_text(), transport=transport) as h:
        result = await h.conversation().run_turn("Do everything.", run_each)
        assert result.text == "All done."
        calls = [item for item in result.samples[0].items if client_call(item)]
        assert [item["type"] for item in calls] == list(CALLS)
        follow_up = wire_inputs(h.exchanges)[1]
        answers = [item for item in follow_up if item.get("type") in ANSWERS]
        assert [item["type"] for item in answers] == [CLIENT_CALLS[kind].answer_type for kind in CALLS]
        for call, answer in zip(calls, answers, strict=True):
            assert_sdk_input_item(answer)
            kind = CLIENT_CALLS[call["type"]]
            assert answer[kind.link] == call[kind.names]
        assert answers[CALLS_INDEX["mcp_approval_request"]]["approval_request_id"].startswith("mcpr_")
        assert len(h.exchanges) == 2  # the server's input check (the API's) took every answer at once
        assert set(calls_sent(h.exchanges)) == set(outputs_sent(h.exchanges)) and len(calls_sent(h.exchanges)) == 8


def test_a_tool_search_the_service_runs_is_no_call_for_the_client() -> None:
    assert client_call({"type": "tool_search_call", "execution": "server"}) is None
    assert client_call({"type": "tool_search_call", "execution": "client"}) is CLIENT_CALLS["tool_search_call"]
    assert client_call({"type": "web_search_call"}) is None


ANSWER_FIELDS: list[tuple[Item, Callable[[Item], CallResult], dict[str, Any]]] = [
    (
        {"type": "shell_call", "call_id": "c1"},
        lambda call: {"output": [{"stdout": "", "stderr": "boom", "outcome": {"type": "timeout"}}]},
        {"output": [{"stdout": "", "stderr": "boom", "outcome": {"type": "timeout"}}]},
    ),
    ({"type": "apply_patch_call", "call_id": "c2"}, lambda call: {"status": "failed"}, {"status": "failed"}),
    ({"type": "mcp_approval_request", "id": "mcpr_1"}, lambda call: False, {"approve": False}),
    (
        {"type": "computer_call", "call_id": "c3"},
        lambda call: {"output": {"type": "computer_screenshot", "file_id": "file_1"}, "acknowledged_safety_checks": []},
        {"output": {"type": "computer_screenshot", "file_id": "file_1"}, "acknowledged_safety_checks": []},
    ),
]


@pytest.mark.parametrize(
    ("call", "handler", "fields"), ANSWER_FIELDS, ids=[call["type"] for call, _, _ in ANSWER_FIELDS]
)
def test_a_handler_may_give_the_answers_own_fields(
    call: Item, handler: Callable[[Item], CallResult], fields: dict[str, Any]
) -> None:
    answer = answer_to(call, handler(call))
    kind = CLIENT_CALLS[call["type"]]
    assert answer == {**fields, "type": kind.answer_type, kind.link: call[kind.names]}
    assert_sdk_input_item(answer)


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_result_that_cannot_answer_its_call_ends_the_turn_naming_the_calls_kind(
    serve: Serve, transport: str
) -> None:
    script = Script().queue(reply(mcp_approval_request("deepwiki", "ask_question")), reply(text("never")))
    async with served(serve, script, transport=transport) as h:
        conversation = h.conversation()
        with pytest.raises(UnanswerableCall, match=r"a mcp_approval_request \(id mcpr_\w+\) is answered with True or"):
            await conversation.run_turn("Ask the wiki.", lambda call: "yes please")
        assert len(h.exchanges) == 1  # nothing was sent for an answer it could not make
        assert [item.get("type") for item in conversation.history] == ["message", "mcp_approval_request"]


def test_a_shell_call_in_a_container_the_service_runs_is_no_call_for_the_client() -> None:
    hosted = {"type": "shell_call", "call_id": "c", "environment": {"type": "container_reference", "container_id": "x"}}
    assert client_call(hosted) is None
    assert client_call({**hosted, "environment": {"type": "local"}}) is CLIENT_CALLS["shell_call"]
    assert client_call({**hosted, "environment": None}) is CLIENT_CALLS["shell_call"]
