"""Request bodies: every named field parsed, unknown fields kept, string input, warmups."""

from __future__ import annotations

import pydantic
import pytest

from rrkit.protocol import ResponseCreateFrame, ResponsesRequest, input_items, is_warmup
from rrkit.protocol.request import RESPONSE_CREATE

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
