"""The incremental rule (docs/protocol.md: When a request may be incremental): when a request may be sent as
`previous_response_id` + suffix."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rrkit.protocol import (
    Decision,
    Incremental,
    Item,
    LastResponse,
    ResponseCreateFrame,
    ResponsesRequest,
    decide,
    rebuild_logical,
    response_create,
)
from rrkit.protocol.incremental import changed_properties, logical_from_wire, strip_internal
from rrkit.protocol.request import COMPARED_FIELDS, IGNORED_FIELDS, RESPONSE_CREATE, WIRE_ONLY_FIELDS

# Section 6, rule 2, word for word.
PROTOCOL_COMPARED = {
    "model",
    "instructions",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "reasoning",
    "store",
    "stream",
    "include",
    "service_tier",
    "prompt_cache_key",
    "text",
}
PROTOCOL_IGNORED = {"stream_options", "client_metadata", "generate", "previous_response_id"}


def user(text: str) -> Item:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def assistant(text: str, item_id: str = "msg_1") -> Item:
    return {
        "id": item_id,
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


CALL: Item = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "shell", "arguments": '{"cmd":"ls"}'}
CALL_OUTPUT: Item = {"type": "function_call_output", "call_id": "call_1", "output": "a.txt"}

BASE: dict[str, Any] = {
    "model": "gpt-test",
    "instructions": "You are a test.",
    "input": [user("You are in a test."), user("hello")],
    "tools": [{"type": "function", "name": "shell", "parameters": {"type": "object", "properties": {}}}],
    "tool_choice": "auto",
    "parallel_tool_calls": False,
    "reasoning": {"effort": "medium", "summary": "auto"},
    "store": False,
    "stream": True,
    "include": ["reasoning.encrypted_content"],
    "service_tier": "auto",
    "prompt_cache_key": "thread-1",
    "text": {"verbosity": "low"},
    "client_metadata": {"turn": "1"},
    "stream_options": {"include_obfuscation": False},
}
OUTPUT: tuple[Item, ...] = (CALL,)
LAST = LastResponse("resp_1", OUTPUT)

# A different value for every compared field; the test below keeps this in step with COMPARED_FIELDS.
CHANGED: dict[str, Any] = {
    "model": "gpt-other",
    "instructions": "You are another test.",
    "tools": [],
    "tool_choice": "required",
    "parallel_tool_calls": True,
    "reasoning": {"effort": "high", "summary": "auto"},
    "store": True,
    "stream": False,
    "include": [],
    "service_tier": "priority",
    "prompt_cache_key": "thread-2",
    "text": {"verbosity": "high"},
}


def base() -> dict[str, Any]:
    return copy.deepcopy(BASE)


def next_request(*new_items: Item, **changes: Any) -> dict[str, Any]:
    """The follow-up request: the previous input, the previous output, then new items."""
    request = base()
    request["input"] = [*BASE["input"], *OUTPUT, *new_items]
    request.update(changes)
    return request


# -- the field classification ------------------------------------------------------------------


def test_incremental_field_classification_is_exhaustive() -> None:
    """Adding a field to ResponsesRequest without deciding whether it is compared must fail here."""
    assert set(ResponsesRequest.model_fields) == set(COMPARED_FIELDS) | set(IGNORED_FIELDS) | {"input"}


def test_incremental_field_classification_has_no_overlap_or_duplicates() -> None:
    assert not set(COMPARED_FIELDS) & set(IGNORED_FIELDS)
    assert "input" not in (*COMPARED_FIELDS, *IGNORED_FIELDS)
    assert len(COMPARED_FIELDS) == len(set(COMPARED_FIELDS))
    assert len(IGNORED_FIELDS) == len(set(IGNORED_FIELDS))


def test_incremental_field_classification_matches_protocol_section_6() -> None:
    assert set(COMPARED_FIELDS) == PROTOCOL_COMPARED
    assert set(IGNORED_FIELDS) == PROTOCOL_IGNORED


def test_incremental_response_create_frame_adds_only_wire_fields() -> None:
    extra = set(ResponseCreateFrame.model_fields) - set(ResponsesRequest.model_fields)
    assert extra == {"type"}
    assert extra <= set(WIRE_ONLY_FIELDS)


def test_incremental_changed_values_cover_every_compared_field() -> None:
    assert set(CHANGED) == set(COMPARED_FIELDS)
    assert all(CHANGED[name] != BASE[name] for name in COMPARED_FIELDS)


# -- decide: strict prefix ---------------------------------------------------------------------


def test_incremental_decide_returns_suffix_after_previous_input_and_output() -> None:
    decision = decide(next_request(CALL_OUTPUT, user("next")), base(), LAST)
    assert decision.incremental == Incremental("resp_1", [CALL_OUTPUT, user("next")])
    assert decision.reason == "strict prefix"


def test_incremental_decide_returns_empty_suffix_when_input_equals_baseline() -> None:
    decision = decide(next_request(), base(), LAST)
    assert decision.incremental == Incremental("resp_1", [])


def test_incremental_decide_after_warmup_with_empty_output() -> None:
    """Codex: a warmup (`generate: false`) with the context items, then the real request on top of it."""
    warmup = dict(base(), generate=False)
    current = dict(base(), input=[*BASE["input"], user("now")])
    decision = decide(current, warmup, LastResponse("resp_warm", ()))
    assert decision.incremental == Incremental("resp_warm", [user("now")])


@given(
    previous=st.lists(st.sampled_from(["a", "b", "c"]), max_size=4),
    output=st.lists(st.sampled_from(["x", "y"]), max_size=3),
    new=st.lists(st.sampled_from(["a", "z"]), max_size=4),
)
def test_incremental_decide_suffix_rebuilds_current_input(
    previous: list[str], output: list[str], new: list[str]
) -> None:
    last_request = dict(base(), input=[user(text) for text in previous])
    last = LastResponse("resp_9", tuple(assistant(text, f"msg_{text}") for text in output))
    current = dict(base(), input=[*last_request["input"], *last.items_added, *(user(text) for text in new)])
    delta = decide(current, last_request, last).incremental
    assert delta is not None
    assert delta.previous_response_id == "resp_9"
    assert [*last_request["input"], *last.items_added, *delta.items] == current["input"]
    assert len(delta.items) == len(new)


# -- decide: full requests ---------------------------------------------------------------------


@pytest.mark.parametrize("field", COMPARED_FIELDS)
def test_incremental_decide_changed_compared_field_gives_full_request_naming_it(field: str) -> None:
    decision = decide(next_request(CALL_OUTPUT, **{field: CHANGED[field]}), base(), LAST)
    assert decision.incremental is None
    assert decision.reason == f"changed: {field}"


@pytest.mark.parametrize("field", COMPARED_FIELDS)
def test_incremental_decide_compared_field_added_or_removed_gives_full_request(field: str) -> None:
    removed = next_request(CALL_OUTPUT)
    del removed[field]
    assert decide(removed, base(), LAST) == Decision(None, f"changed: {field}")
    previous = base()
    del previous[field]
    assert decide(next_request(CALL_OUTPUT), previous, LAST) == Decision(None, f"changed: {field}")


def test_incremental_decide_names_every_changed_field() -> None:
    decision = decide(next_request(model="gpt-other", store=True), base(), LAST)
    assert decision.incremental is None
    assert decision.reason == "changed: model, store"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("client_metadata", {"turn": "2"}),
        ("client_metadata", None),
        ("stream_options", {"include_obfuscation": True}),
        ("stream_options", None),
        ("generate", True),
        ("previous_response_id", "resp_0"),
    ],
)
def test_incremental_decide_ignores_delivery_and_wire_fields(field: str, value: Any) -> None:
    decision = decide(next_request(CALL_OUTPUT, **{field: value}), base(), LAST)
    assert decision.incremental == Incremental("resp_1", [CALL_OUTPUT])


def test_incremental_changed_properties_lists_compared_then_unknown_fields() -> None:
    previous = dict(base(), zeta=1, alpha=1)
    current = dict(base(), model="m2", alpha=2, zeta=2, client_metadata={}, input=[], type="response.create")
    assert changed_properties(previous, current) == ["model", "alpha", "zeta"]


@pytest.mark.parametrize(
    ("previous_extra", "current_extra"),
    [({"truncation": "auto"}, {"truncation": "disabled"}), ({}, {"max_output_tokens": 100}), ({"top_p": 1}, {})],
    ids=["changed", "added", "removed"],
)
def test_incremental_decide_unknown_field_change_prevents_incremental(
    previous_extra: dict[str, Any], current_extra: dict[str, Any]
) -> None:
    decision = decide(next_request(CALL_OUTPUT, **current_extra), dict(base(), **previous_extra), LAST)
    assert decision.incremental is None
    (name,) = {*previous_extra, *current_extra}
    assert decision.reason == f"changed: {name}"


def test_incremental_decide_unknown_field_unchanged_allows_incremental() -> None:
    decision = decide(next_request(CALL_OUTPUT, truncation="auto"), dict(base(), truncation="auto"), LAST)
    assert decision.incremental == Incremental("resp_1", [CALL_OUTPUT])


def test_incremental_decide_without_previous_request_gives_full_request() -> None:
    decision = decide(next_request(), None, LAST)
    assert decision.incremental is None
    assert "no previous request" in decision.reason


def test_incremental_decide_without_completed_response_gives_full_request() -> None:
    decision = decide(next_request(), base(), None)
    assert decision.incremental is None
    assert "did not complete" in decision.reason


def test_incremental_decide_with_empty_response_id_gives_full_request() -> None:
    decision = decide(next_request(CALL_OUTPUT), base(), LastResponse("", OUTPUT))
    assert decision.incremental is None
    assert "no id" in decision.reason


def test_incremental_decide_shorter_input_gives_full_request() -> None:
    current = dict(base(), input=[*BASE["input"]])  # the previous output is missing
    decision = decide(current, base(), LAST)
    assert decision.incremental is None
    assert decision.reason == "input is shorter than the baseline (2 < 3 items)"


@pytest.mark.parametrize("position", [0, 1, 2])
def test_incremental_decide_edited_item_gives_full_request(position: int) -> None:
    current = next_request(CALL_OUTPUT)
    current["input"][position] = dict(current["input"][position], status="edited")
    decision = decide(current, base(), LAST)
    assert decision.incremental is None
    assert decision.reason == f"input item {position} differs from the baseline"


def test_incremental_decide_reordered_items_give_full_request() -> None:
    current = next_request(CALL_OUTPUT)
    current["input"][0], current["input"][1] = current["input"][1], current["input"][0]
    decision = decide(current, base(), LAST)
    assert decision.incremental is None
    assert decision.reason == "input item 0 differs from the baseline"


def test_incremental_decide_compacted_history_gives_full_request() -> None:
    current = dict(base(), input=[user("summary of earlier turns"), user("a"), user("b"), user("c")])
    assert decide(current, base(), LAST).incremental is None


# -- internal metadata -------------------------------------------------------------------------


def test_incremental_strip_internal_drops_only_top_level_underscore_keys() -> None:
    item = {"type": "message", "_id": 3, "_meta": {"x": 1}, "content": [{"_keep": True}]}
    assert strip_internal(item) == {"type": "message", "content": [{"_keep": True}]}
    assert item["_id"] == 3  # the input is not modified


def test_incremental_decide_ignores_internal_keys_on_baseline_and_current_items() -> None:
    current = next_request(CALL_OUTPUT)
    current["input"][0] = dict(current["input"][0], _recorded_at="12:00")
    current["input"][2] = dict(current["input"][2], _source="stream")
    last_request = base()
    last_request["input"][1] = dict(last_request["input"][1], _token_count=3)
    last = LastResponse("resp_1", (dict(CALL, _latency_ms=10),))
    decision = decide(current, last_request, last)
    assert decision.incremental == Incremental("resp_1", [CALL_OUTPUT])


def test_incremental_decide_does_not_ignore_non_underscore_item_fields() -> None:
    current = next_request(CALL_OUTPUT)
    current["input"][2] = dict(current["input"][2], status="completed")
    assert decide(current, base(), LAST).incremental is None


# -- string input ------------------------------------------------------------------------------


def test_incremental_decide_accepts_plain_string_input_as_one_user_message() -> None:
    last_request = dict(base(), input="hello")
    message = {"type": "message", "role": "user", "content": "hello"}
    current = dict(base(), input=[message, *OUTPUT, user("next")])
    assert decide(current, last_request, LAST).incremental == Incremental("resp_1", [user("next")])


# -- wire frames and rebuilding the logical request --------------------------------------------


def test_incremental_response_create_full_frame_is_type_plus_logical() -> None:
    logical = next_request(CALL_OUTPUT)
    frame = response_create(logical)
    assert frame == {"type": RESPONSE_CREATE, **logical}
    assert "previous_response_id" not in frame
    ResponseCreateFrame.model_validate(frame)


def test_incremental_response_create_incremental_frame_carries_previous_id_and_suffix() -> None:
    logical = next_request(CALL_OUTPUT, user("next"))
    delta = decide(logical, base(), LAST).incremental
    assert delta is not None
    frame = response_create(logical, delta)
    assert frame["type"] == RESPONSE_CREATE
    assert frame["previous_response_id"] == "resp_1"
    assert frame["input"] == [CALL_OUTPUT, user("next")]
    assert {key: value for key, value in frame.items() if key not in ("type", "previous_response_id", "input")} == {
        key: value for key, value in logical.items() if key != "input"
    }
    assert logical["input"] == next_request(CALL_OUTPUT, user("next"))["input"]  # not modified
    ResponseCreateFrame.model_validate(frame)


def test_incremental_response_create_passes_extra_fields_such_as_generate() -> None:
    frame = response_create(base(), generate=False)
    assert frame["generate"] is False
    assert frame["input"] == BASE["input"]


def test_incremental_response_create_with_empty_delta_sends_empty_input() -> None:
    frame = response_create(next_request(), Incremental("resp_1", []))
    assert frame["input"] == []
    assert frame["previous_response_id"] == "resp_1"


def test_incremental_logical_from_wire_drops_only_wire_fields() -> None:
    wire = dict(base(), type=RESPONSE_CREATE, previous_response_id="resp_1", generate=False, truncation="auto")
    assert logical_from_wire(wire) == dict(base(), truncation="auto")


def test_incremental_rebuild_logical_from_incremental_wire_equals_full_logical_request() -> None:
    logical = next_request(CALL_OUTPUT, user("next"))
    delta = decide(logical, base(), LAST).incremental
    assert delta is not None
    wire = response_create(logical, delta)
    assert rebuild_logical(wire, BASE["input"], OUTPUT) == logical


def test_incremental_rebuild_logical_with_empty_delta_is_previous_input_plus_output() -> None:
    wire = response_create(next_request(), Incremental("resp_1", []))
    assert rebuild_logical(wire, BASE["input"], OUTPUT) == next_request()


def test_incremental_rebuild_logical_over_a_chain_of_turns() -> None:
    """Three turns on one connection: each wire frame is a delta on the last, and each rebuild is exact."""
    stored_input: list[Item] = []
    last_request: dict[str, Any] | None = None
    last: LastResponse | None = None
    history: list[Item] = [user("context")]
    for turn in range(3):
        history = [*history, user(f"turn {turn}")]
        logical = dict(base(), input=list(history))
        delta = decide(logical, last_request, last).incremental
        assert (delta is None) == (turn == 0)
        wire = response_create(logical, delta)
        rebuilt = logical_from_wire(wire) if delta is None else rebuild_logical(wire, stored_input, last.items_added)  # type: ignore[union-attr]
        assert rebuilt == logical
        output = (assistant(f"reply {turn}", f"msg_{turn}"),)
        stored_input, last_request, last = rebuilt["input"], logical, LastResponse(f"resp_{turn}", output)
        history = [*history, *output]
