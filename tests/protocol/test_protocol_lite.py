"""Responses Lite (docs/protocol.md: Responses Lite): instructions and tools moved into the input, and back."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rrkit.protocol import from_lite, input_items, is_lite, to_lite
from rrkit.protocol.lite import ALL_TURNS, instructions_in_input, without_lite_settings

TOOLS = [
    {"type": "function", "name": "shell", "parameters": {"type": "object", "properties": {}}},
    {"type": "custom", "name": "apply_patch"},
]
INPUT = [
    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
    {"type": "function_call", "call_id": "c1", "name": "shell", "arguments": "{}"},
]
STANDARD: dict[str, Any] = {
    "model": "gpt-test",
    "instructions": "You are Codex.",
    "tools": TOOLS,
    "input": INPUT,
    "tool_choice": "auto",
    "parallel_tool_calls": True,
    "reasoning": {"effort": "low"},
    "a_future_field": 1,
}
DEVELOPER_INSTRUCTIONS = {
    "type": "message",
    "role": "developer",
    "content": [{"type": "input_text", "text": "You are Codex."}],
}
ADDITIONAL_TOOLS = {"type": "additional_tools", "role": "developer", "tools": TOOLS}


def without_parallel(request: dict[str, Any]) -> dict[str, Any]:
    """The content both encodings carry alike: the instructions leading the input, Lite's own settings left out."""
    return without_lite_settings(instructions_in_input(request))


def test_lite_to_lite_leads_with_the_tools_then_the_instructions_as_codex_sends_them() -> None:
    lite = to_lite(STANDARD)
    assert "instructions" not in lite
    assert "tools" not in lite
    assert lite["input"] == [ADDITIONAL_TOOLS, DEVELOPER_INSTRUCTIONS, *INPUT]  # Codex 0.169.0 and 0.171.0
    assert lite["parallel_tool_calls"] is False


def test_lite_sets_the_reasoning_context_for_all_turns_keeping_the_rest_of_reasoning() -> None:
    assert to_lite(STANDARD)["reasoning"] == {"effort": "low", "context": ALL_TURNS}
    assert to_lite({"model": "m"})["reasoning"] == {"context": ALL_TURNS}
    assert without_lite_settings(to_lite({"model": "m"})) == {"model": "m", "input": [ADDITIONAL_TOOLS | {"tools": []}]}


def test_lite_to_lite_keeps_every_other_field() -> None:
    lite = to_lite(STANDARD)
    others = {
        key for key in STANDARD if key not in ("instructions", "tools", "input", "parallel_tool_calls", "reasoning")
    }
    assert {key: lite[key] for key in others} == {key: STANDARD[key] for key in others}
    assert set(lite) == others | {"input", "parallel_tool_calls", "reasoning"}


def test_lite_to_lite_does_not_modify_the_standard_request() -> None:
    original = copy.deepcopy(STANDARD)
    to_lite(STANDARD)
    assert original == STANDARD


def test_lite_to_lite_without_instructions_leads_with_additional_tools() -> None:
    lite = to_lite(without_parallel({**STANDARD, "instructions": None}))
    assert lite["input"] == [ADDITIONAL_TOOLS, *INPUT]


def test_lite_to_lite_is_recognised_as_lite() -> None:
    assert is_lite(to_lite(STANDARD))
    assert not is_lite(STANDARD)


def test_lite_from_lite_of_to_lite_gives_back_request_except_parallel_tool_calls() -> None:
    back = from_lite(to_lite(STANDARD))
    assert back["parallel_tool_calls"] is False  # Lite forces it off; that is a real difference to the model
    assert back["reasoning"]["context"] == ALL_TURNS
    assert without_parallel(back) == without_parallel(STANDARD)


def test_lite_from_lite_of_string_input_gives_back_input_as_items() -> None:
    standard = {**STANDARD, "input": "hello"}
    back = from_lite(to_lite(standard))
    assert without_parallel(back) == without_parallel({**standard, "input": input_items(standard)})


texts = st.text(min_size=1, max_size=20)
items = st.one_of(
    st.builds(
        lambda role, text: {"type": "message", "role": role, "content": text},
        st.sampled_from(["user", "assistant", "developer", "system"]),
        texts,
    ),
    st.builds(
        lambda role, text: {"type": "message", "role": role, "content": [{"type": "input_text", "text": text}]},
        st.sampled_from(["user", "developer"]),
        texts,
    ),
    st.builds(lambda call: {"type": "function_call_output", "call_id": call, "output": "ok"}, texts),
)
tools = st.lists(st.builds(lambda name: {"type": "function", "name": name}, texts), min_size=1, max_size=3)


@given(
    instructions=st.one_of(st.none(), texts),
    tool_list=tools,
    input_list=st.lists(items, max_size=4),
    extra=st.dictionaries(st.sampled_from(["store", "text", "include", "unknown_field"]), st.integers(), max_size=2),
    parallel=st.sampled_from([None, True, False]),
)
def test_lite_from_lite_of_to_lite_round_trips_any_request_with_tools(
    instructions: str | None,
    tool_list: list[dict[str, Any]],
    input_list: list[dict[str, Any]],
    extra: dict[str, int],
    parallel: bool | None,
) -> None:
    standard: dict[str, Any] = {"model": "m", "tools": tool_list, "input": input_list, **extra}
    if instructions is not None:
        standard["instructions"] = instructions
    if parallel is not None:
        standard["parallel_tool_calls"] = parallel
    lite = to_lite(standard)
    assert is_lite(lite)
    assert lite["parallel_tool_calls"] is False
    assert without_parallel(from_lite(lite)) == without_parallel(standard)


def test_lite_from_lite_of_to_lite_round_trips_request_with_empty_tools() -> None:
    standard = {**STANDARD, "tools": []}
    assert without_parallel(from_lite(to_lite(standard))) == without_parallel(standard)


@pytest.mark.parametrize(
    "request_",
    [
        STANDARD,
        {"model": "m", "input": "hello"},
        {"model": "m"},
        {"model": "m", "input": [DEVELOPER_INSTRUCTIONS, *INPUT]},
        {"model": "m", "input": [*INPUT, ADDITIONAL_TOOLS]},  # an additional_tools item later in the history
    ],
    ids=["standard", "string-input", "no-input", "developer-message-first", "additional-tools-late"],
)
def test_lite_from_lite_leaves_non_lite_request_unchanged(request_: dict[str, Any]) -> None:
    assert not is_lite(request_)
    original = copy.deepcopy(request_)
    back = from_lite(request_)
    assert back == original
    assert back is not request_


@pytest.mark.parametrize(
    ("leading", "lite"),
    [
        ([ADDITIONAL_TOOLS], True),
        ([DEVELOPER_INSTRUCTIONS, ADDITIONAL_TOOLS], True),
        ([ADDITIONAL_TOOLS, DEVELOPER_INSTRUCTIONS], True),
        ([DEVELOPER_INSTRUCTIONS, DEVELOPER_INSTRUCTIONS, ADDITIONAL_TOOLS], False),
        ([DEVELOPER_INSTRUCTIONS], False),
        ([], False),
    ],
)
def test_lite_is_lite_looks_for_additional_tools_in_the_first_two_items(
    leading: list[dict[str, Any]], lite: bool
) -> None:
    assert is_lite({"input": [*leading, *INPUT]}) is lite


def test_lite_from_lite_leaves_the_instructions_message_in_the_input_on_either_side_of_the_tools_item() -> None:
    for leading in ([ADDITIONAL_TOOLS, DEVELOPER_INSTRUCTIONS], [DEVELOPER_INSTRUCTIONS, ADDITIONAL_TOOLS]):
        back = from_lite({"input": [*leading, *INPUT]})
        assert back == {"tools": TOOLS, "input": [DEVELOPER_INSTRUCTIONS, *INPUT]}
        assert back == instructions_in_input({"instructions": "You are Codex.", "tools": TOOLS, "input": INPUT})


def test_lite_from_lite_keeps_explicit_instructions_and_developer_message() -> None:
    request = {"instructions": "top level", "input": [DEVELOPER_INSTRUCTIONS, ADDITIONAL_TOOLS, *INPUT]}
    back = from_lite(request)
    assert back["instructions"] == "top level"
    assert back["tools"] == TOOLS
    assert back["input"] == [DEVELOPER_INSTRUCTIONS, *INPUT]


@pytest.mark.parametrize(
    "first",
    [INPUT[0], {"type": "message", "role": "developer", "content": [{"type": "input_image", "image_url": "x"}]}],
    ids=["user-message", "developer-message-without-text"],
)
def test_lite_from_lite_takes_tools_item_from_second_place_when_first_is_not_instructions(
    first: dict[str, Any],
) -> None:
    back = from_lite({"input": [first, ADDITIONAL_TOOLS, *INPUT]})
    assert "instructions" not in back
    assert back["tools"] == TOOLS
    assert back["input"] == [first, *INPUT]


def test_lite_from_lite_does_not_modify_the_lite_request() -> None:
    lite = to_lite(STANDARD)
    original = copy.deepcopy(lite)
    from_lite(lite)
    assert lite == original
