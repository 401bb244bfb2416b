"""The `Response` object carries every field the service always returns: the request's value echoed, else the
service's default (protocol.response_object)."""

from __future__ import annotations

from typing import Any

import pytest

from rrkit.protocol.events import ResponseEvents
from rrkit.protocol.response_object import DEFAULTS, echoed_request, response_object

ALWAYS = [
    "id",
    "object",
    "created_at",
    "status",
    "background",
    "completed_at",
    "error",
    "incomplete_details",
    "instructions",
    "max_output_tokens",
    "max_tool_calls",
    "model",
    "output",
    "parallel_tool_calls",
    "previous_response_id",
    "prompt_cache_key",
    "reasoning",
    "safety_identifier",
    "service_tier",
    "store",
    "temperature",
    "text",
    "tool_choice",
    "tools",
    "top_logprobs",
    "top_p",
    "presence_penalty",
    "frequency_penalty",
    "truncation",
    "usage",
    "metadata",
]
"""The fields of the OpenAPI `Response` and the OpenResponses `ResponseResource` the service always sends."""


def _response(request: dict[str, Any], status: str = "completed", **extra: Any) -> dict[str, Any]:
    return response_object(
        request, response_id="resp_1", created_at=1, model="m", status=status, completed_at=2, **extra
    )


@pytest.mark.parametrize("status", ["queued", "in_progress", "completed", "failed", "incomplete", "cancelled"])
def test_every_status_carries_every_field(status: str) -> None:
    assert set(ALWAYS) <= set(_response({}, status))


def test_fields_left_out_take_the_service_defaults() -> None:
    response = _response({})
    assert {name: response[name] for name in DEFAULTS} == dict(DEFAULTS)
    assert response["text"] == {"format": {"type": "text"}, "verbosity": "medium"}
    assert response["reasoning"] == {"effort": None, "summary": None}
    assert response["metadata"] == {}
    assert response["parallel_tool_calls"] is True
    assert "user" not in response and "conversation" not in response


def test_fields_the_request_sets_are_echoed() -> None:
    request = {
        "temperature": 0.2,
        "top_p": 0.5,
        "max_output_tokens": 100,
        "metadata": {"k": "v"},
        "store": False,
        "background": True,
        "truncation": "auto",
        "prompt_cache_key": "key",
        "safety_identifier": "user-1",
        "parallel_tool_calls": False,
        "text": {"verbosity": "low"},
        "reasoning": {"effort": "high"},
        "conversation": "conv_1",
        "user": "someone",
    }
    response = _response(request)
    assert {name: response[name] for name in ("temperature", "top_p", "max_output_tokens", "store")} == {
        "temperature": 0.2,
        "top_p": 0.5,
        "max_output_tokens": 100,
        "store": False,
    }
    assert response["metadata"] == {"k": "v"} and response["background"] is True
    assert response["truncation"] == "auto" and response["parallel_tool_calls"] is False
    assert response["text"] == {"format": {"type": "text"}, "verbosity": "low"}
    assert response["reasoning"] == {"effort": "high", "summary": None}
    assert response["conversation"] == {"id": "conv_1"} and response["user"] == "someone"


def test_a_null_field_is_answered_with_the_default() -> None:
    assert _response({"temperature": None, "store": None})["temperature"] == 1.0
    assert _response({"store": None})["store"] is True


def test_auto_service_tier_reports_the_tier_used() -> None:
    assert _response({"service_tier": "auto"})["service_tier"] == "default"
    assert _response({"service_tier": "flex"})["service_tier"] == "flex"


def test_a_function_tool_is_echoed_with_its_strict_default() -> None:
    tools = [{"type": "function", "name": "f"}, {"type": "function", "name": "g", "strict": False}, {"type": "x"}]
    echoed = _response({"tools": tools})["tools"]
    assert echoed[0] == {"type": "function", "name": "f", "description": None, "parameters": None, "strict": True}
    assert echoed[1]["strict"] is False
    assert echoed[2] == {"type": "x"}


def test_completed_at_only_when_completed() -> None:
    assert _response({})["completed_at"] == 2
    assert _response({}, "in_progress")["completed_at"] is None
    builder = ResponseEvents({}, created_at=100)
    created, *_ = builder.start()
    assert created["response"]["completed_at"] is None
    assert builder.completed()[0]["response"]["completed_at"] >= 100


def test_previous_response_id_is_echoed_from_the_wire() -> None:
    logical = {"model": "m", "input": [{"role": "user", "content": "a"}]}
    assert echoed_request({"previous_response_id": "resp_0"}, logical)["previous_response_id"] == "resp_0"
    assert "previous_response_id" not in echoed_request({}, logical)


def test_failed_and_incomplete_state_their_usage() -> None:
    assert ResponseEvents({}).failed("server_error")[0]["response"]["usage"]["total_tokens"] >= 0
    assert ResponseEvents({}).incomplete("max_output_tokens")[0]["response"]["usage"] is not None


def test_prompt_cache_options_are_stated_whole_and_moderation_settings_not_echoed() -> None:
    response = _response({"prompt_cache_options": {"mode": "explicit"}, "moderation": {"model": "omni"}})
    assert response["prompt_cache_options"] == {"ttl": "30m", "mode": "explicit"}
    assert "moderation" not in response
