"""Request bodies: every named field parsed, unknown fields kept, string input, warmups; the fast check takes only
what the models take."""

from __future__ import annotations

from typing import Any

import pydantic
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from rrkit.protocol import ResponseCreateFrame, ResponsesRequest, input_items, is_warmup
from rrkit.protocol import request_check as request_module
from rrkit.protocol.exceptions import BadRequest
from rrkit.protocol.request import (
    RESPONSE_CREATE,
    TYPED_FIELDS,
    compacted_history,
    item_key,
    retained_by_compaction,
)
from rrkit.protocol.request_check import check_request
from rrkit.protocol.request_model import SamplingFields, validated

CODEX_BODY = {
    "model": "gpt-test",
    "instructions": "You are Codex.",
    "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}],
    "tools": [],
    "tool_choice": "auto",
    "parallel_tool_calls": False,
    "reasoning": None,
    "store": False,
    "stream": True,
    "include": [],
    "service_tier": "auto",
    "prompt_cache_key": "thread-1",
    "text": {"verbosity": "low"},
    "client_metadata": {"x": "y"},
    "stream_options": {"include_obfuscation": False},
    "a_future_field": {"nested": [1, 2]},
}


def test_request_model_keeps_unknown_fields_on_round_trip() -> None:
    request = ResponsesRequest.model_validate(CODEX_BODY)
    assert request.model_extra == {"a_future_field": {"nested": [1, 2]}}
    assert request.model_dump(exclude_unset=True) == CODEX_BODY


def test_request_model_accepts_plain_string_input_and_absent_fields() -> None:
    request = ResponsesRequest.model_validate({"model": "m", "input": "Hello"})
    assert request.input == "Hello"
    assert request.instructions is None
    assert request.tools is None
    assert request.model_dump(exclude_unset=True) == {"model": "m", "input": "Hello"}


def test_response_create_frame_requires_its_type() -> None:
    frame = ResponseCreateFrame.model_validate({"type": RESPONSE_CREATE, **CODEX_BODY, "previous_response_id": "r"})
    assert frame.previous_response_id == "r"
    assert frame.model_extra == {"a_future_field": {"nested": [1, 2]}}
    with pytest.raises(pydantic.ValidationError):
        ResponseCreateFrame.model_validate(CODEX_BODY)
    with pytest.raises(pydantic.ValidationError):
        ResponseCreateFrame.model_validate({**CODEX_BODY, "type": "response.steer"})


def test_request_input_items_of_string_is_one_user_message() -> None:
    assert input_items({"input": "Hello"}) == [{"type": "message", "role": "user", "content": "Hello"}]


def test_request_input_items_of_missing_or_null_input_is_empty() -> None:
    assert input_items({}) == []
    assert input_items({"input": None}) == []


def test_request_input_items_returns_a_copy_of_the_list() -> None:
    items = [{"type": "message", "role": "user", "content": "a"}]
    body = {"input": items}
    result = input_items(body)
    assert result == items
    result.append({"type": "message"})
    assert len(items) == 1


@pytest.mark.parametrize(
    ("body", "warmup"),
    [
        ({"generate": False}, True),
        ({"generate": True}, False),
        ({}, False),
        ({"generate": None}, False),
        ({"generate": 0}, False),
    ],
)
def test_request_is_warmup_only_for_generate_false(body: dict[str, object], warmup: bool) -> None:
    assert is_warmup(body) is warmup


_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0, 1, 2, 3, -1, 0.5, 1.5, 2.0000001, -0.0, 10**400]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=4),
    st.sampled_from(["\ud800", "response.create", "auto"]),
)
_JSON = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=8,
)
_FIELDS = sorted({*ResponsesRequest.model_fields, *SamplingFields.model_fields, "type"})
_TAKEN = st.sampled_from(
    [None, "s", True, False, {}, {"k": [1]}, [], [{}], ["x"], -1, 0, 1, 2, 3, 0.5, 1.5, 2.5, 2**64, RESPONSE_CREATE]
)
"""Values some field takes: the body is made of those its fields take, so that the one odd value is what decides."""


def _taken(field: str, value: object) -> bool:
    try:
        validated({"model": "m", "type": RESPONSE_CREATE, field: value}, frame=True, lenient=False)
    except BadRequest:
        return False
    return True


@settings(max_examples=1000, deadline=None)
@given(
    fields=st.dictionaries(st.sampled_from(_FIELDS), _TAKEN, max_size=8),
    odd=st.tuples(st.sampled_from(_FIELDS), _TAKEN | _JSON),
    frame=st.booleans(),
)
@example(fields={}, odd=("temperature", 2.5), frame=False)
@example(fields={}, odd=("temperature", -0.5), frame=False)
@example(fields={}, odd=("top_p", 1.5), frame=False)
@example(fields={}, odd=("max_output_tokens", 0), frame=False)
@example(fields={}, odd=("include", [1]), frame=False)
def test_a_body_the_fast_check_passes_is_one_the_models_pass(
    fields: dict[str, Any], odd: tuple[str, Any], frame: bool
) -> None:
    body = {"model": "m", **{field: value for field, value in fields.items() if _taken(field, value)}}
    body[odd[0]] = odd[1]
    if request_module._plainly_valid(body, frame):
        assert validated(body, frame=frame, lenient=False) is body


@pytest.mark.parametrize(
    "body",
    [
        CODEX_BODY,
        {"model": "m", "input": "hi", "temperature": 1, "top_p": 0.5, "max_output_tokens": 2**80},
        {"model": "m", "tool_choice": {"type": "function", "name": "f"}, "generate": False, "include": ["x"]},
    ],
)
def test_the_bodies_clients_send_pass_the_fast_check_as_they_are(body: dict[str, Any]) -> None:
    assert request_module._plainly_valid(body, frame=False)
    assert request_module._plainly_valid({**body, "type": RESPONSE_CREATE}, frame=True)
    assert check_request(body) is body


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("stream", "yes", "Invalid type for 'stream': expected a boolean, but got a string instead."),
        ("temperature", float("nan"), "Invalid 'temperature': expected a finite number."),
        ("max_output_tokens", 0, "Invalid 'max_output_tokens': integer below minimum value."),
        ("input", [1], "Invalid type for 'input[0]': expected an input item, but got an integer instead."),  # its item
    ],
)
def test_a_body_the_fast_check_cannot_vouch_for_is_judged_and_worded_by_the_models(
    field: str, value: object, message: str
) -> None:
    with pytest.raises(BadRequest) as raised:
        check_request({"model": "m", field: value})
    assert str(raised.value).startswith(message)


def test_the_fast_check_covers_every_field_the_models_check() -> None:
    assert set(request_module._PLAIN) == {*ResponsesRequest.model_fields, *SamplingFields.model_fields}
    assert set(SamplingFields.model_fields) <= set(TYPED_FIELDS)


def test_an_item_is_the_same_item_with_or_without_its_id_and_whatever_form_its_content_takes() -> None:
    said = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}], "id": "msg_1"}
    assert item_key(said) == item_key({"role": "user", "content": "hi"})
    assert item_key(said) != item_key({"role": "assistant", "content": "hi"})
    call = {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}", "id": "fc_1", "status": "done"}
    assert item_key(call) == item_key({"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"})
    assert item_key(call) != item_key({"type": "function_call_output", "call_id": "c1", "output": "x"})
    compacted = {"type": "compaction", "encrypted_content": "abc", "id": "cmp_1"}
    assert item_key(compacted) == item_key({"type": "compaction", "encrypted_content": "abc"})
    assert item_key(compacted) != item_key({"type": "compaction", "encrypted_content": "abd"})


@pytest.mark.parametrize(
    ("item", "kept"),
    [
        ({"role": "user", "content": "hi"}, True),
        ({"type": "message", "role": "developer", "content": "rules"}, True),
        ({"type": "message", "role": "assistant", "content": "hello"}, False),
        ({"type": "function_call", "call_id": "c1"}, False),
        ({"type": "reasoning", "summary": []}, False),
        ({"type": "compaction", "encrypted_content": "old"}, False),
    ],
)
def test_a_compaction_keeps_the_context_and_the_users_words_only(item: dict[str, Any], kept: bool) -> None:
    assert retained_by_compaction(item) is kept
    assert (item in compacted_history([item], {"type": "compaction"})) is kept
